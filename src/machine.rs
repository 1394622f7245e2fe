//! Machine definitions: the JSON subset of XState's configuration that idem
//! accepts, validated once on load into a flat tree of state nodes.

use crate::error::{Code, Error, Result};
use crate::expr::{ExprId, Exprs};
use crate::json;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Index of a state node; the root is `0`.
pub type StateIdx = usize;

/// Reserved event types through which hosts report effect attempts and fire timers.
pub const EFFECT_REPORT_PREFIX: &str = "idem.effect.";
pub const TIMER_EVENT: &str = "idem.after";

/// Largest definition accepted, in bytes of JSON.
pub const MAX_DEFINITION_BYTES: usize = 1 << 20;
/// Most attempts a retry policy may allow.
pub const MAX_ATTEMPTS: u32 = 1_000;
/// Runtime bound on microsteps in one macrostep.
pub const MAX_MICROSTEPS: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Atomic,
    Compound,
    Final,
}

#[derive(Debug)]
pub struct StateNode {
    pub key: String,
    /// Dotted path from the root (`pending.awaiting`); empty for the root.
    pub path: String,
    /// The JSON path of this node in the definition (`states.pending.states.awaiting`).
    pub json_path: String,
    pub declared_id: Option<String>,
    pub parent: Option<StateIdx>,
    pub children: Vec<StateIdx>,
    pub initial: Option<StateIdx>,
    pub kind: Kind,
    pub entry: Vec<Action>,
    pub exit: Vec<Action>,
    pub on: Vec<(String, Vec<Transition>)>,
    pub always: Vec<Transition>,
    pub after: Vec<(u64, Vec<Transition>)>,
    pub depth: usize,
}

#[derive(Debug, Clone)]
pub struct Transition {
    pub source: StateIdx,
    pub target: Option<StateIdx>,
    pub guard: Option<ExprId>,
    pub actions: Vec<Action>,
    pub reenter: bool,
    pub json_path: String,
}

#[derive(Debug, Clone)]
pub enum Action {
    Assign(Vec<(String, ExprId)>),
    Effect(EffectDef),
    Respond(ExprId),
}

#[derive(Debug, Clone)]
pub struct EffectDef {
    pub effect_type: String,
    pub payload: Option<ExprId>,
    pub key: Option<ExprId>,
    pub idempotent: bool,
    pub retry: RetryPolicy,
    pub json_path: String,
}

/// Exponential backoff with a cap and deterministic jitter (also its wire form
/// in the snapshot's outbox).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub base_ms: u64,
    pub factor: u32,
    pub max_delay_ms: u64,
    /// Jitter as a fraction of the delay, in percent (0–100).
    pub jitter_pct: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_attempts: 5, base_ms: 1_000, factor: 2, max_delay_ms: 60_000, jitter_pct: 20 }
    }
}

/// How long event ids are remembered.
#[derive(Debug, Clone)]
pub struct Retention {
    pub default_ms: u64,
    pub per_type: BTreeMap<String, u64>,
    pub max_entries: usize,
}

impl Default for Retention {
    fn default() -> Self {
        Retention { default_ms: 7 * 24 * 3_600_000, per_type: BTreeMap::new(), max_entries: 1_000 }
    }
}

impl Retention {
    pub fn window_for(&self, event_type: &str) -> u64 {
        self.per_type.get(event_type).copied().unwrap_or(self.default_ms)
    }
}

/// Bounds on events, checked before anything else.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_id_bytes: usize,
    pub max_payload_bytes: usize,
    pub max_snapshot_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_id_bytes: 256, max_payload_bytes: 64 * 1024, max_snapshot_bytes: 16 << 20 }
    }
}

/// A validated machine definition, ready to reduce events.
#[derive(Debug)]
pub struct Machine {
    pub id: String,
    pub version: String,
    /// 128-bit content hash of the canonical definition, hex.
    pub hash: String,
    pub states: Vec<StateNode>,
    pub initial_context: Value,
    pub retention: Retention,
    pub record_ignored: bool,
    pub limits: Limits,
    /// Event types some state accepts (external events).
    pub event_types: BTreeSet<String>,
    /// `<effect>.succeeded` / `<effect>.failed` for every effect type the machine
    /// emits: raised by the outbox only, never accepted from outside.
    pub outcome_types: BTreeSet<String>,
    pub exprs: Exprs,
    pub definition: Value,
    /// Declared state ids. The index is stored as a u64 so that the map shares
    /// its code with [`Retention::per_type`] (no hash map in the module).
    by_id: BTreeMap<String, u64>,
    /// [`Machine::state_value`] of every state, built once.
    state_values: Vec<Value>,
}

const STATE_KEYS: &[&str] = &[
    "id", "initial", "states", "type", "on", "always", "after", "entry", "exit", "description", "meta", "tags",
];
const MACHINE_KEYS: &[&str] = &[
    "id", "version", "initial", "context", "states", "retention", "recordIgnored", "limits", "description",
    "meta", "on", "entry", "exit", "always", "after", "type", "tags",
];
const TRANSITION_KEYS: &[&str] = &["target", "guard", "actions", "reenter", "description", "meta"];

impl Machine {
    /// Parse and validate a definition from JSON text.
    pub fn from_json(text: &str) -> Result<Machine> {
        if text.len() > MAX_DEFINITION_BYTES {
            return Err(Error::new(
                Code::DefinitionTooLarge,
                format!("definition is {} bytes, more than the {} allowed", text.len(), MAX_DEFINITION_BYTES),
            ));
        }
        let value = json::parse(text, Code::InvalidJson, "definition")?;
        Machine::from_value(value)
    }

    /// Validate a definition already parsed.
    pub fn from_value(def: Value) -> Result<Machine> {
        json::check_depth(&def, "definition")?;
        let obj = def
            .as_object()
            .ok_or_else(|| Error::at(Code::InvalidDefinition, "", "definition must be an object"))?;
        check_keys(obj, MACHINE_KEYS, "")?;
        let id = match obj.get("id") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err(Error::at(Code::InvalidDefinition, "id", "machine id must be a non-empty string")),
        };
        let version = match obj.get("version") {
            None => "1".to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(_) => return Err(Error::at(Code::InvalidDefinition, "version", "version must be a string or number")),
        };
        let initial_context = obj.get("context").cloned().unwrap_or_else(|| Value::Object(Map::new()));
        if !initial_context.is_object() {
            return Err(Error::at(Code::InvalidDefinition, "context", "context must be an object"));
        }
        let record_ignored = match obj.get("recordIgnored") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(Error::at(Code::InvalidDefinition, "recordIgnored", "recordIgnored must be a boolean")),
        };
        let retention = parse_retention(obj.get("retention"))?;
        let limits = parse_limits(obj.get("limits"))?;
        let mut canon = String::new();
        json::canonical(&def, &mut canon);
        let hash = json::hex128(xxhash_rust::xxh3::xxh3_128(canon.as_bytes()));

        let mut b = Builder { states: Vec::new(), exprs: Exprs::default(), raw: Vec::new() };
        b.add_state(&id, None, &def, "")?;
        let mut m = Machine {
            id,
            version,
            hash,
            states: b.states,
            initial_context,
            retention,
            record_ignored,
            limits,
            event_types: BTreeSet::new(),
            outcome_types: BTreeSet::new(),
            exprs: b.exprs,
            definition: Value::Null,
            by_id: BTreeMap::new(),
            state_values: Vec::new(),
        };
        for (i, s) in m.states.iter().enumerate() {
            if let Some(did) = &s.declared_id {
                if m.by_id.insert(did.clone(), i as u64).is_some() {
                    return Err(Error::at(
                        Code::DuplicateStateId,
                        format!("{}.id", s.json_path).trim_start_matches('.').to_string(),
                        format!("duplicate state id \"{did}\""),
                    ));
                }
            }
        }
        // Second pass: transitions, now that every state can be resolved.
        let mut events = Vec::new();
        for (idx, raw) in std::mem::take(&mut b.raw) {
            m.attach_transitions(idx, raw, &mut events)?;
        }
        m.check_always_loops()?;
        // One at a time rather than collected, and the event types filled only
        // once the outcome types are known: no sort and no removal in the module.
        let mut outcomes = BTreeSet::new();
        for e in m.effects() {
            for outcome in ["succeeded", "failed"] {
                outcomes.insert(format!("{}.{outcome}", e.effect_type));
            }
        }
        m.outcome_types = outcomes;
        for event in events {
            if !m.outcome_types.contains(&event) {
                m.event_types.insert(event);
            }
        }
        m.definition = def;
        m.state_values = (0..m.states.len()).map(|i| m.build_state_value(i)).collect();
        Ok(m)
    }

    /// Every effect type some action emits.
    pub fn effect_types(&self) -> impl Iterator<Item = &str> {
        let mut types = BTreeSet::new();
        for e in self.effects() {
            types.insert(e.effect_type.as_str());
        }
        types.into_iter()
    }

    /// Every effect action: entry, exit and transition actions of every state.
    fn effects(&self) -> impl Iterator<Item = &EffectDef> {
        self.states.iter().flat_map(|s| {
            let transitions = s.on.iter().flat_map(|(_, ts)| ts).chain(&s.always).chain(s.after.iter().flat_map(|(_, ts)| ts));
            s.entry.iter().chain(&s.exit).chain(transitions.flat_map(|t| &t.actions)).filter_map(|a| match a {
                Action::Effect(e) => Some(e),
                _ => None,
            })
        })
    }

    pub fn root(&self) -> StateIdx {
        0
    }

    pub fn state(&self, idx: StateIdx) -> &StateNode {
        &self.states[idx]
    }

    /// Find a state by its dotted path (`pending.awaiting`).
    pub fn state_by_path(&self, path: &str) -> Option<StateIdx> {
        if path.is_empty() {
            return Some(self.root());
        }
        self.descend(self.root(), path)
    }

    /// The leaf reached by entering `idx` and following initial states down.
    pub fn initial_leaf(&self, mut idx: StateIdx) -> StateIdx {
        while let Some(i) = self.states[idx].initial {
            idx = i;
        }
        idx
    }

    /// `idx` and its ancestors, innermost first, without collecting them.
    pub fn ancestors(&self, idx: StateIdx) -> impl Iterator<Item = StateIdx> + '_ {
        std::iter::successors(Some(idx), move |&i| self.states[i].parent)
    }

    /// `idx` and its ancestors, innermost first.
    pub fn ancestors_inclusive(&self, idx: StateIdx) -> Vec<StateIdx> {
        let mut out = vec![idx];
        let mut cur = idx;
        while let Some(p) = self.states[cur].parent {
            out.push(p);
            cur = p;
        }
        out
    }

    pub fn is_descendant(&self, idx: StateIdx, ancestor: StateIdx) -> bool {
        let mut cur = self.states[idx].parent;
        while let Some(p) = cur {
            if p == ancestor {
                return true;
            }
            cur = self.states[p].parent;
        }
        false
    }

    /// The XState-style state value of a leaf: `"paid"` or `{ "pending": "awaiting" }`.
    pub fn state_value(&self, leaf: StateIdx) -> Value {
        match self.state_values.get(leaf) {
            Some(v) => v.clone(),
            None => self.build_state_value(leaf),
        }
    }

    fn build_state_value(&self, leaf: StateIdx) -> Value {
        let chain: Vec<StateIdx> = self.ancestors_inclusive(leaf).into_iter().rev().skip(1).collect();
        let mut value = Value::Null;
        for &i in chain.iter().rev() {
            let key = self.states[i].key.clone();
            value = if value.is_null() {
                Value::String(key)
            } else {
                let mut m = Map::new();
                m.insert(key, value);
                Value::Object(m)
            };
        }
        value
    }

    /// The leaf named by a state value, if this machine has it.
    pub fn leaf_of_value(&self, value: &Value) -> Option<StateIdx> {
        let mut cur = self.root();
        let mut v = value;
        loop {
            match v {
                Value::String(k) => {
                    let c = self.child(cur, k)?;
                    return (self.states[c].initial.is_none()).then_some(c);
                }
                Value::Object(m) if m.len() == 1 => {
                    let (k, inner) = m.iter().next()?;
                    cur = self.child(cur, k)?;
                    v = inner;
                }
                _ => return None,
            }
        }
    }

    /// Does a value name a path, even if it is not a leaf here (for error messages)?
    pub fn value_path(value: &Value) -> String {
        let mut parts = Vec::new();
        let mut v = value;
        loop {
            match v {
                Value::String(k) => {
                    parts.push(k.clone());
                    break;
                }
                Value::Object(m) if m.len() == 1 => {
                    let (k, inner) = m.iter().next().expect("len checked");
                    parts.push(k.clone());
                    v = inner;
                }
                _ => break,
            }
        }
        parts.join(".")
    }

    fn child(&self, parent: StateIdx, key: &str) -> Option<StateIdx> {
        self.states[parent].children.iter().copied().find(|&c| self.states[c].key == key)
    }

    /// Retention window for an event type, in ms.
    pub fn retention_for(&self, event_type: &str) -> u64 {
        self.retention.window_for(event_type)
    }

    fn resolve_target(&self, source: StateIdx, target: &str, path: &str) -> Result<StateIdx> {
        let unknown = || Error::at(Code::UnknownTarget, path, format!("unknown transition target \"{target}\""));
        if let Some(rest) = target.strip_prefix('#') {
            if let Some(&i) = self.by_id.get(rest) {
                return Ok(i as StateIdx);
            }
            // `#machineId.path.to.state`
            let machine_prefix = format!("{}.", self.id);
            if let Some(p) = rest.strip_prefix(&machine_prefix) {
                return self.state_by_path(p).ok_or_else(unknown);
            }
            // `#declaredId.child.path`
            if let Some((head, tail)) = rest.split_once('.') {
                if let Some(&base) = self.by_id.get(head) {
                    return self.descend(base as StateIdx, tail).ok_or_else(unknown);
                }
            }
            return Err(unknown());
        }
        if let Some(rest) = target.strip_prefix('.') {
            return self.descend(source, rest).ok_or_else(unknown);
        }
        let parent = self.states[source].parent.ok_or_else(unknown)?;
        self.descend(parent, target).ok_or_else(unknown)
    }

    fn descend(&self, mut from: StateIdx, dotted: &str) -> Option<StateIdx> {
        for part in dotted.split('.') {
            from = self.child(from, part)?;
        }
        Some(from)
    }

    /// Attach a state's transitions, adding the external event types it
    /// accepts to `events`.
    fn attach_transitions(&mut self, idx: StateIdx, raw: RawTransitions, events: &mut Vec<String>) -> Result<()> {
        let mut on = Vec::new();
        for (event, list) in raw.on {
            let mut ts = Vec::new();
            for (v, p) in list {
                ts.push(self.transition(idx, &v, &p)?);
            }
            if !event.starts_with(EFFECT_REPORT_PREFIX) && event != TIMER_EVENT {
                events.push(event.clone());
            }
            on.push((event, ts));
        }
        let mut always = Vec::new();
        for (v, p) in raw.always {
            always.push(self.transition(idx, &v, &p)?);
        }
        let mut after = Vec::new();
        for (delay, list) in raw.after {
            let mut ts = Vec::new();
            for (v, p) in list {
                ts.push(self.transition(idx, &v, &p)?);
            }
            after.push((delay, ts));
        }
        let node = &mut self.states[idx];
        node.on = on;
        node.always = always;
        node.after = after;
        Ok(())
    }

    fn transition(&mut self, source: StateIdx, v: &Value, path: &str) -> Result<Transition> {
        let mut t = Transition {
            source,
            target: None,
            guard: None,
            actions: Vec::new(),
            reenter: false,
            json_path: path.to_string(),
        };
        match v {
            Value::String(s) => t.target = Some(self.resolve_target(source, s, path)?),
            Value::Object(o) => {
                check_keys(o, TRANSITION_KEYS, path)?;
                match o.get("target") {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) => {
                        t.target = Some(self.resolve_target(source, s, &format!("{path}.target"))?)
                    }
                    Some(Value::Array(a)) if a.len() == 1 && a[0].is_string() => {
                        let s = a[0].as_str().expect("checked");
                        t.target = Some(self.resolve_target(source, s, &format!("{path}.target"))?)
                    }
                    Some(_) => {
                        return Err(Error::at(
                            Code::InvalidDefinition,
                            format!("{path}.target"),
                            "target must be a state name (parallel targets are not supported)",
                        ))
                    }
                }
                if let Some(g) = o.get("guard") {
                    t.guard = Some(self.exprs.compile_guard(g, &format!("{path}.guard"))?);
                }
                if let Some(a) = o.get("actions") {
                    t.actions = parse_actions(&mut self.exprs, a, &format!("{path}.actions"))?;
                }
                match o.get("reenter") {
                    None => {}
                    Some(Value::Bool(b)) => t.reenter = *b,
                    Some(_) => {
                        return Err(Error::at(Code::InvalidDefinition, format!("{path}.reenter"), "reenter must be a boolean"))
                    }
                }
            }
            _ => {
                return Err(Error::at(
                    Code::InvalidDefinition,
                    path,
                    "a transition must be a target string or an object",
                ))
            }
        }
        Ok(t)
    }

    /// An unguarded cycle of `always` transitions never settles: refuse it on load.
    /// Only transitions that are certainly taken are followed (the first candidate
    /// of the deepest state that has any, when it has no guard).
    fn check_always_loops(&self) -> Result<()> {
        for start in 0..self.states.len() {
            if !self.states[start].children.is_empty() {
                continue;
            }
            let mut seen = vec![start];
            let mut leaf = start;
            while let Some(t) = self.certain_always(leaf) {
                let next = match t.target {
                    None => {
                        return Err(Error::at(
                            Code::AlwaysLoop,
                            t.json_path.clone(),
                            "unguarded targetless always transition never settles",
                        ))
                    }
                    Some(tg) => self.initial_leaf(tg),
                };
                if seen.contains(&next) {
                    let cycle: Vec<&str> = seen.iter().map(|&i| self.states[i].path.as_str()).collect();
                    return Err(Error::at(
                        Code::AlwaysLoop,
                        t.json_path.clone(),
                        format!("always transitions loop without a guard ({} -> {})", cycle.join(" -> "), self.states[next].path),
                    ));
                }
                seen.push(next);
                leaf = next;
            }
        }
        Ok(())
    }

    fn certain_always(&self, leaf: StateIdx) -> Option<&Transition> {
        for s in self.ancestors_inclusive(leaf) {
            if let Some(first) = self.states[s].always.first() {
                return first.guard.is_none().then_some(first);
            }
        }
        None
    }
}

struct RawTransitions {
    on: Vec<(String, Vec<(Value, String)>)>,
    always: Vec<(Value, String)>,
    after: Vec<(u64, Vec<(Value, String)>)>,
}

struct Builder {
    states: Vec<StateNode>,
    exprs: Exprs,
    raw: Vec<(StateIdx, RawTransitions)>,
}

impl Builder {
    fn add_state(&mut self, key: &str, parent: Option<StateIdx>, v: &Value, json_path: &str) -> Result<StateIdx> {
        let o = v
            .as_object()
            .ok_or_else(|| Error::at(Code::InvalidDefinition, json_path, "a state must be an object"))?;
        if parent.is_some() {
            check_keys(o, STATE_KEYS, json_path)?;
        }
        let jp = |k: &str| if json_path.is_empty() { k.to_string() } else { format!("{json_path}.{k}") };
        let (path, depth) = match parent {
            None => (String::new(), 0),
            Some(p) if self.states[p].path.is_empty() => (key.to_string(), 1),
            Some(p) => (format!("{}.{}", self.states[p].path, key), self.states[p].depth + 1),
        };
        if parent.is_some() && (key.is_empty() || key.contains('.') || key.starts_with('#')) {
            return Err(Error::at(Code::InvalidDefinition, json_path, format!("invalid state name \"{key}\"")));
        }
        let declared_id = match (parent, o.get("id")) {
            (None, _) | (_, None) => None,
            (Some(_), Some(Value::String(s))) if !s.is_empty() => Some(s.clone()),
            (Some(_), Some(_)) => return Err(Error::at(Code::InvalidDefinition, jp("id"), "state id must be a non-empty string")),
        };
        let kind = match o.get("type") {
            None => None,
            Some(Value::String(t)) if t == "final" => Some(Kind::Final),
            Some(Value::String(t)) if t == "atomic" || t == "compound" => None,
            Some(Value::String(t)) if t == "parallel" || t == "history" => {
                return Err(Error::at(Code::InvalidDefinition, jp("type"), format!("{t} states are not supported yet")))
            }
            Some(_) => return Err(Error::at(Code::InvalidDefinition, jp("type"), "unknown state type")),
        };
        let idx = self.states.len();
        self.states.push(StateNode {
            key: key.to_string(),
            path,
            json_path: json_path.to_string(),
            declared_id,
            parent,
            children: Vec::new(),
            initial: None,
            kind: Kind::Atomic,
            entry: Vec::new(),
            exit: Vec::new(),
            on: Vec::new(),
            always: Vec::new(),
            after: Vec::new(),
            depth,
        });
        if let Some(p) = parent {
            self.states[p].children.push(idx);
        }
        let entry = match o.get("entry") {
            Some(a) => parse_actions(&mut self.exprs, a, &jp("entry"))?,
            None => Vec::new(),
        };
        let exit = match o.get("exit") {
            Some(a) => parse_actions(&mut self.exprs, a, &jp("exit"))?,
            None => Vec::new(),
        };
        self.states[idx].entry = entry;
        self.states[idx].exit = exit;

        match o.get("states") {
            None => {}
            Some(Value::Object(children)) => {
                if kind == Some(Kind::Final) && !children.is_empty() {
                    return Err(Error::at(Code::InvalidDefinition, jp("states"), "a final state cannot have child states"));
                }
                for (k, child) in children {
                    let cp = format!("{}.{}", jp("states"), k);
                    self.add_state(k, Some(idx), child, &cp)?;
                }
            }
            Some(_) => return Err(Error::at(Code::InvalidDefinition, jp("states"), "states must be an object")),
        }
        let has_children = !self.states[idx].children.is_empty();
        self.states[idx].kind = match (kind, has_children) {
            (Some(Kind::Final), _) => Kind::Final,
            (_, true) => Kind::Compound,
            (_, false) => Kind::Atomic,
        };
        if parent.is_none() && !has_children {
            return Err(Error::at(Code::InvalidDefinition, "states", "a machine needs at least one state"));
        }
        match (o.get("initial"), has_children) {
            (None, true) => {
                return Err(Error::at(Code::InvalidInitial, jp("initial"), "a state with child states needs an initial state"))
            }
            (None, false) => {}
            (Some(Value::String(s)), true) => {
                let c = self.states[idx].children.iter().copied().find(|&c| self.states[c].key == *s);
                match c {
                    Some(c) => self.states[idx].initial = Some(c),
                    None => {
                        return Err(Error::at(Code::InvalidInitial, jp("initial"), format!("initial state \"{s}\" is not a child state")))
                    }
                }
            }
            (Some(_), true) => return Err(Error::at(Code::InvalidInitial, jp("initial"), "initial must be a child state name")),
            (Some(_), false) => {
                return Err(Error::at(Code::InvalidInitial, jp("initial"), "initial is set but the state has no child states"))
            }
        }

        let mut raw = RawTransitions { on: Vec::new(), always: Vec::new(), after: Vec::new() };
        match o.get("on") {
            None => {}
            Some(Value::Object(on)) => {
                for (event, cands) in on {
                    if event.is_empty() {
                        return Err(Error::at(Code::InvalidDefinition, jp("on"), "event names must not be empty"));
                    }
                    raw.on.push((event.clone(), candidates(cands, &format!("{}.{}", jp("on"), event))));
                }
            }
            Some(_) => return Err(Error::at(Code::InvalidDefinition, jp("on"), "on must be an object")),
        }
        if let Some(a) = o.get("always") {
            raw.always = candidates(a, &jp("always"));
        }
        match o.get("after") {
            None => {}
            Some(Value::Object(after)) => {
                for (delay, cands) in after {
                    let p = format!("{}.{}", jp("after"), delay);
                    let ms: u64 = delay
                        .parse()
                        .map_err(|_| Error::at(Code::InvalidDefinition, p.clone(), "after delays must be whole milliseconds"))?;
                    raw.after.push((ms, candidates(cands, &p)));
                }
            }
            Some(_) => return Err(Error::at(Code::InvalidDefinition, jp("after"), "after must be an object")),
        }
        self.raw.push((idx, raw));
        Ok(idx)
    }
}

fn candidates(v: &Value, path: &str) -> Vec<(Value, String)> {
    match v {
        Value::Array(items) => items.iter().enumerate().map(|(i, c)| (c.clone(), format!("{path}[{i}]"))).collect(),
        other => vec![(other.clone(), path.to_string())],
    }
}

fn check_keys(o: &Map<String, Value>, allowed: &[&str], path: &str) -> Result<()> {
    for k in o.keys() {
        if !allowed.contains(&k.as_str()) {
            let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
            return Err(Error::at(Code::InvalidDefinition, p, format!("unknown key \"{k}\"")));
        }
    }
    Ok(())
}

fn parse_actions(exprs: &mut Exprs, v: &Value, path: &str) -> Result<Vec<Action>> {
    let list: Vec<(&Value, String)> = match v {
        Value::Array(items) => items.iter().enumerate().map(|(i, a)| (a, format!("{path}[{i}]"))).collect(),
        other => vec![(other, path.to_string())],
    };
    let mut out = Vec::new();
    for (a, p) in list {
        let o = match a {
            Value::Object(o) if o.len() == 1 => o,
            Value::String(name) => {
                return Err(Error::at(
                    Code::UnknownAction,
                    p,
                    format!("unknown action \"{name}\" (actions are data: assign, effect or respond)"),
                ))
            }
            _ => return Err(Error::at(Code::UnknownAction, p, "an action must be an object with one key: assign, effect or respond")),
        };
        let (kind, body) = o.iter().next().expect("len checked");
        let action = match kind.as_str() {
            "assign" => {
                let fields = body
                    .as_object()
                    .ok_or_else(|| Error::at(Code::InvalidDefinition, format!("{p}.assign"), "assign must be an object of field expressions"))?;
                let mut assigns = Vec::new();
                for (field, e) in fields {
                    assigns.push((field.clone(), exprs.compile(e, &format!("{p}.assign.{field}"))?));
                }
                Action::Assign(assigns)
            }
            "respond" => Action::Respond(exprs.compile(body, &format!("{p}.respond"))?),
            "effect" => Action::Effect(parse_effect(exprs, body, &format!("{p}.effect"))?),
            other => return Err(Error::at(Code::UnknownAction, p, format!("unknown action \"{other}\""))),
        };
        out.push(action);
    }
    Ok(out)
}

fn parse_effect(exprs: &mut Exprs, v: &Value, path: &str) -> Result<EffectDef> {
    let o = v.as_object().ok_or_else(|| Error::at(Code::InvalidDefinition, path, "effect must be an object"))?;
    check_keys(o, &["type", "payload", "key", "idempotent", "retry"], path)?;
    let effect_type = match o.get("type") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(Error::at(Code::InvalidDefinition, format!("{path}.type"), "effect type must be a non-empty string")),
    };
    let payload = o.get("payload").map(|e| exprs.compile(e, &format!("{path}.payload"))).transpose()?;
    let key = o.get("key").map(|e| exprs.compile(e, &format!("{path}.key"))).transpose()?;
    let idempotent = match o.get("idempotent") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(Error::at(Code::InvalidDefinition, format!("{path}.idempotent"), "idempotent must be a boolean")),
    };
    let retry = parse_retry(o.get("retry"), &format!("{path}.retry"))?;
    Ok(EffectDef { effect_type, payload, key, idempotent, retry, json_path: path.to_string() })
}

fn parse_retry(v: Option<&Value>, path: &str) -> Result<RetryPolicy> {
    let mut r = RetryPolicy::default();
    let Some(v) = v else { return Ok(r) };
    let o = v.as_object().ok_or_else(|| Error::at(Code::InvalidDefinition, path, "retry must be an object"))?;
    check_keys(o, &["maxAttempts", "baseMs", "factor", "maxDelayMs", "jitter"], path)?;
    let num = |k: &str, lo: u64, hi: u64| -> Result<Option<u64>> {
        match o.get(k) {
            None => Ok(None),
            Some(x) => match x.as_u64() {
                Some(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
                _ => Err(Error::at(Code::InvalidDefinition, format!("{path}.{k}"), format!("{k} must be an integer from {lo} to {hi}"))),
            },
        }
    };
    if let Some(n) = num("maxAttempts", 1, MAX_ATTEMPTS as u64)? {
        r.max_attempts = n as u32;
    }
    if let Some(n) = num("baseMs", 0, 86_400_000)? {
        r.base_ms = n;
    }
    if let Some(n) = num("factor", 1, 10)? {
        r.factor = n as u32;
    }
    if let Some(n) = num("maxDelayMs", 0, 7 * 86_400_000)? {
        r.max_delay_ms = n;
    }
    if let Some(x) = o.get("jitter") {
        match x.as_f64() {
            Some(f) if (0.0..=1.0).contains(&f) => r.jitter_pct = (f * 100.0).round() as u32,
            _ => return Err(Error::at(Code::InvalidDefinition, format!("{path}.jitter"), "jitter must be a fraction from 0 to 1")),
        }
    }
    Ok(r)
}

fn parse_retention(v: Option<&Value>) -> Result<Retention> {
    let mut r = Retention::default();
    let Some(v) = v else { return Ok(r) };
    let o = v.as_object().ok_or_else(|| Error::at(Code::InvalidDefinition, "retention", "retention must be an object"))?;
    check_keys(o, &["defaultMs", "perType", "maxEntries"], "retention")?;
    if let Some(x) = o.get("defaultMs") {
        r.default_ms = x
            .as_u64()
            .ok_or_else(|| Error::at(Code::InvalidDefinition, "retention.defaultMs", "defaultMs must be a non-negative integer"))?;
    }
    if let Some(x) = o.get("maxEntries") {
        match x.as_u64() {
            Some(n) if (1..=1_000_000).contains(&n) => r.max_entries = n as usize,
            _ => return Err(Error::at(Code::InvalidDefinition, "retention.maxEntries", "maxEntries must be an integer from 1 to 1000000")),
        }
    }
    if let Some(x) = o.get("perType") {
        let m = x.as_object().ok_or_else(|| Error::at(Code::InvalidDefinition, "retention.perType", "perType must be an object"))?;
        for (k, ms) in m {
            let ms = ms.as_u64().ok_or_else(|| {
                Error::at(Code::InvalidDefinition, format!("retention.perType.{k}"), "a retention window must be a non-negative integer of ms")
            })?;
            r.per_type.insert(k.clone(), ms);
        }
    }
    Ok(r)
}

fn parse_limits(v: Option<&Value>) -> Result<Limits> {
    let mut l = Limits::default();
    let Some(v) = v else { return Ok(l) };
    let o = v.as_object().ok_or_else(|| Error::at(Code::InvalidDefinition, "limits", "limits must be an object"))?;
    check_keys(o, &["maxPayloadBytes", "maxSnapshotBytes"], "limits")?;
    if let Some(x) = o.get("maxPayloadBytes") {
        match x.as_u64() {
            Some(n) if (1..=(1 << 20)).contains(&n) => l.max_payload_bytes = n as usize,
            _ => return Err(Error::at(Code::InvalidDefinition, "limits.maxPayloadBytes", "maxPayloadBytes must be from 1 to 1048576")),
        }
    }
    if let Some(x) = o.get("maxSnapshotBytes") {
        match x.as_u64() {
            Some(n) if (1024..=(64 << 20)).contains(&n) => l.max_snapshot_bytes = n as usize,
            _ => return Err(Error::at(Code::InvalidDefinition, "limits.maxSnapshotBytes", "maxSnapshotBytes must be from 1024 to 67108864")),
        }
    }
    Ok(l)
}
