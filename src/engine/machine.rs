//! Machine definitions: the JSON subset of XState's configuration that idem
//! accepts (atomic, compound, parallel, final and history states; `on`, `always`,
//! `after`, `onDone`, `entry`, `exit`, a final state's `output`; `target`, one or
//! several, `guard`, `actions`, `reenter`; targets by sibling key, `.child`,
//! `#id`, `#machine.path`), validated once on load (`build`) into a flat arena of
//! [`StateNode`]s, root = 0.
//!
//! The arena is in document order: a state's index is its place in a pre-order
//! walk of the definition, read in the order its members were written
//! (`json::Order`; a `Value`'s map keeps its members sorted), so comparing indices
//! compares document order, and sibling states, regions, transitions and delays
//! are taken in the order written.
//!
//! `onDone` becomes a transition on the state's done event
//! (`xstate.done.state.<xstate id>`: its declared `id`, else `<machine>.<path>`),
//! whose payload is `{"output": ...}` when the final child entered declares
//! `output` (evaluated after that state's entry actions), else `{}`; `output`
//! anywhere but on a final state below the machine is refused. Several targets
//! must lie in different regions of a parallel state; `initial` may name a
//! history state that has a default target. Unguarded `always` cycles are refused
//! on load (`always_loop`); any other endless loop is bounded at run time by
//! `limits.maxMicrosteps` (`MAX_MICROSTEPS`).
//!
//! `Machine::initial_config`, `value_of_config` and `config_of_value` convert
//! between configurations (the active states, in document order) and XState's
//! state values (`{"open": {"payment": "paid", "shipping": "packed"}}`; an atomic
//! region's value is `{}`).

use crate::error::{Code, Error, Result};
use crate::expr::{ExprId, Exprs};
use crate::json::{self, Order};
use crate::snapshot::MachineRef;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Index of a state node; the root is `0`.
pub type StateIdx = usize;

/// Reserved event types through which hosts report effect attempts and fire timers.
pub const EFFECT_REPORT_PREFIX: &str = "idem.effect.";
pub const TIMER_EVENT: &str = "idem.after";

/// Largest definition accepted, in bytes of JSON.
pub const MAX_DEFINITION_BYTES: usize = 1 << 20;
/// Most attempts a retry policy may allow.
pub const MAX_ATTEMPTS: u32 = 1_000;
/// Runtime bound on microsteps in one macrostep (a definition may set a lower one).
pub const MAX_MICROSTEPS: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Atomic,
    Compound,
    /// Every child (region) is active at once.
    Parallel,
    Final,
    /// A pseudo-state: entering it restores what its parent held when last
    /// exited (`deep`: every atomic descendant; shallow: the direct child).
    History,
}

/// Prefix of the done event a compound or parallel state raises when it
/// completes (XState's name): `xstate.done.state.<state id>`.
pub const DONE_EVENT_PREFIX: &str = "xstate.done.state.";
/// The event the initial step of a new process sees (XState's name).
pub const INIT_EVENT: &str = "xstate.init";

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
    /// The state's id as XState names it: its declared `id`, else the machine
    /// id and its path (`order.payment.collecting`); done events carry it.
    pub xstate_id: String,
    /// For a history state: deep (every atomic descendant) or shallow.
    pub deep: bool,
    /// For a history state: its default targets, taken when nothing is recorded
    /// (empty: the parent's initial child, or the parent itself if parallel).
    pub history_default: Vec<StateIdx>,
    /// For a final state: its `output`, carried by its parent's done event.
    pub output: Option<ExprId>,
}

#[derive(Debug, Clone)]
pub struct Transition {
    pub source: StateIdx,
    /// Empty for a targetless transition; more than one only into parallel regions.
    pub targets: Vec<StateIdx>,
    pub guard: Option<ExprId>,
    /// A guard given as a function by the host (`guard` is then `None`).
    pub host_guard: Option<crate::host::HostUse>,
    pub actions: Vec<Action>,
    pub reenter: bool,
    pub json_path: String,
}

#[derive(Debug, Clone)]
pub enum Action {
    Assign(Vec<(String, ExprId)>),
    Effect(EffectDef),
    Respond(ExprId),
    /// Queue an internal event, handled within the same macrostep.
    Raise(RaiseDef),
    /// An action given as a function by the host: its answer is a context
    /// patch or a list of idem actions as data.
    Host(crate::host::HostUse),
}

#[derive(Debug, Clone)]
pub struct RaiseDef {
    pub event_type: String,
    pub payload: Option<ExprId>,
}

impl Transition {
    /// The first target (the only one unless the transition enters parallel regions).
    pub fn target(&self) -> Option<StateIdx> {
        self.targets.first().copied()
    }
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

/// A set of names (event types, outcome types), kept as the keys of a
/// `serde_json::Map`: the B-tree JSON objects are made of, so that the wasm
/// module carries that one B-tree's code, not one more per key and value type.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NameSet(Map<String, Value>);

impl NameSet {
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// Add `name`; whether it was not there yet.
    pub fn insert(&mut self, name: String) -> bool {
        self.0.insert(name, Value::Null).is_none()
    }

    /// The names in order.
    pub fn iter(&self) -> serde_json::map::Keys<'_> {
        self.0.keys()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a NameSet {
    type Item = &'a String;
    type IntoIter = serde_json::map::Keys<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.keys()
    }
}

/// Names mapped to integers (retention windows, state ids), kept as a
/// `serde_json::Map` of numbers for the reason [`NameSet`] gives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NameMap(Map<String, Value>);

impl NameMap {
    pub fn get(&self, name: &str) -> Option<u64> {
        self.0.get(name).and_then(Value::as_u64)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// Set `name` to `value`; the value it had, if any.
    pub fn insert(&mut self, name: String, value: u64) -> Option<u64> {
        self.0.insert(name, Value::from(value)).and_then(|old| old.as_u64())
    }

    /// The names and their values in order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, u64)> {
        self.0.iter().map(|(k, v)| (k, v.as_u64().unwrap_or(0)))
    }

    /// As a JSON object (the numbers as they are).
    pub fn to_json(&self) -> Value {
        Value::Object(self.0.clone())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// How long event ids are remembered.
#[derive(Debug, Clone)]
pub struct Retention {
    pub default_ms: u64,
    pub per_type: NameMap,
    pub max_entries: usize,
}

impl Default for Retention {
    fn default() -> Self {
        Retention { default_ms: 7 * 24 * 3_600_000, per_type: NameMap::default(), max_entries: 1_000 }
    }
}

impl Retention {
    pub fn window_for(&self, event_type: &str) -> u64 {
        self.per_type.get(event_type).unwrap_or(self.default_ms)
    }
}

/// Bounds on events, checked before anything else.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_id_bytes: usize,
    pub max_payload_bytes: usize,
    pub max_snapshot_bytes: usize,
    /// Microsteps one event may take before it is an error (`microstep_limit`).
    pub max_microsteps: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_id_bytes: 256, max_payload_bytes: 64 * 1024, max_snapshot_bytes: 16 << 20, max_microsteps: MAX_MICROSTEPS }
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
    pub event_types: NameSet,
    /// `<effect>.succeeded` / `<effect>.failed` for every effect type the machine
    /// emits: raised by the outbox only, never accepted from outside.
    pub outcome_types: NameSet,
    /// Declared event payload schemas (`events`), checked before any transition.
    pub schemas: crate::schema::Schemas,
    pub exprs: Exprs,
    pub definition: Value,
    /// The order `definition`'s members were written in ([`Machine::definition_json`]).
    pub definition_order: Order,
    /// Declared state ids and their state's index (a [`NameMap`]: no hash map
    /// in the module, and no B-tree of its own).
    by_id: NameMap,
    /// [`Machine::state_value`] of every state, built once.
    state_values: Vec<Value>,
    /// Some state is parallel.
    parallel: bool,
    /// The reference its snapshots name it by, shared by those it loads or
    /// writes: the same pointer then says it names this machine, without a
    /// comparison of the strings.
    pub(crate) reference: Arc<MachineRef>,
}

impl Machine {
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
    /// It stops above an initial history state, whose leaf depends on what it recorded.
    pub fn initial_leaf(&self, mut idx: StateIdx) -> StateIdx {
        while let Some(i) = self.states[idx].initial.filter(|&i| self.states[i].kind != Kind::History) {
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

    /// Whether any state is parallel (configurations are then more than one chain).
    pub fn has_parallel(&self) -> bool {
        self.parallel
    }

    /// Atomic states are the leaves of a configuration: `atomic` and `final`.
    pub fn is_atomic(&self, idx: StateIdx) -> bool {
        matches!(self.states[idx].kind, Kind::Atomic | Kind::Final)
    }

    /// The child states that can be active (not history states), in document order.
    pub fn regions(&self, idx: StateIdx) -> impl Iterator<Item = StateIdx> + '_ {
        self.states[idx].children.iter().copied().filter(move |&c| self.states[c].kind != Kind::History)
    }

    /// The configuration entering `idx` by default gives in a process that
    /// recorded no history: `idx`'s ancestors, `idx`, and below it each compound
    /// state's initial child (for an initial history state, its default target)
    /// and every region of a parallel state, in document order.
    pub fn initial_config(&self, idx: StateIdx) -> Vec<StateIdx> {
        let mut out: Vec<StateIdx> = self.ancestors(idx).skip(1).collect();
        if self.states[idx].kind != Kind::History {
            out.push(idx);
        }
        let nothing = Map::new();
        crate::interpreter::Entry { m: self, history: &nothing }.add_descendant_states_to_enter(idx, &mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether `config` (active states, in document order) is one a process may
    /// be in, and `value` its state value: the machine is active, every other
    /// active state's parent is active, no history state is active, an active
    /// compound state has exactly one active child and an active parallel state
    /// all its regions. What breaks this is a fault of the engine, never of its
    /// input (`internal_error`): `reduce` checks it before it encodes a
    /// snapshot, so a configuration it could not read back is never written.
    pub fn check_configuration(&self, config: &[StateIdx], value: &Value) -> Result<()> {
        let fault = |s: StateIdx, what: &str| {
            let name = if s == self.root() { "the machine" } else { &self.states[s].path };
            Err(Error::new(Code::InternalError, format!("the engine reached a configuration it cannot write: {name} {what} (the event was not applied)")))
        };
        if let Some((s, what)) = self.misfit(config, self.root()) {
            return fault(s, what);
        }
        if self.config_of_value(value).as_deref() != Some(config) {
            return fault(self.root(), "has a state value that does not name its configuration");
        }
        Ok(())
    }

    /// What keeps `states` (in document order) from being the active states at
    /// and below `top` (the whole configuration when `top` is the machine): a
    /// state and what is wrong with it, or `None`.
    pub(crate) fn misfit(&self, states: &[StateIdx], top: StateIdx) -> Option<(StateIdx, &'static str)> {
        let active = |s: StateIdx| states.binary_search(&s).is_ok();
        if states.first() != Some(&top) {
            return Some((top, "is not active"));
        }
        // Sorted first: `active` searches it.
        if let Some(w) = states.windows(2).find(|w| w[0] >= w[1] || w[1] >= self.states.len()) {
            return Some((w[0], "is followed by a state out of document order"));
        }
        // Closed under parents and free of history states first, then each state's children.
        for &s in &states[1..] {
            if self.states[s].parent.is_none_or(|p| !active(p)) {
                return Some((s, "is active but its parent is not"));
            }
            if self.states[s].kind == Kind::History {
                return Some((s, "is a history state and active"));
            }
        }
        for &s in states {
            match self.states[s].kind {
                Kind::Compound if self.regions(s).filter(|&c| active(c)).count() != 1 => {
                    return Some((s, "is a compound state without exactly one active child"))
                }
                Kind::Parallel if !self.regions(s).all(active) => return Some((s, "is a parallel state with a region that is not active")),
                _ => {}
            }
        }
        None
    }

    /// The XState state value of a configuration (active states in document
    /// order): a compound state's value is its active child's key when that is
    /// atomic, else `{child: value}`; a parallel state's an object of every
    /// region's value (an atomic region's is `{}`).
    pub fn value_of_config(&self, config: &[StateIdx]) -> Value {
        if !self.has_parallel() {
            // One chain: the value of its deepest state, built once per state.
            return config.last().map_or(Value::Null, |&leaf| self.state_value(leaf));
        }
        self.value_below(self.root(), config)
    }

    /// The definition as JSON text, its members in the order they were written.
    pub fn definition_json(&self) -> String {
        let mut out = Vec::new();
        self.definition_order.write(&self.definition, &mut out);
        json::utf8(out)
    }

    /// A state value of this machine as JSON text, a parallel state's
    /// regions in document order as XState writes them, whatever order the
    /// value's maps keep. Members that name no state of this machine (a value
    /// it did not make) follow, in the map's order.
    pub fn write_state_value(&self, value: &Value, out: &mut Vec<u8>) {
        self.write_value_below(Some(self.root()), value, out);
    }

    fn write_value_below(&self, s: Option<StateIdx>, value: &Value, out: &mut Vec<u8>) {
        let Value::Object(m) = value else { return json::write_json(value, out) };
        let children = s.map_or(&[][..], |s| &self.states[s].children[..]);
        let mut first = true;
        let mut member = |key: &String, v: &Value, below: Option<StateIdx>, out: &mut Vec<u8>| {
            out.push(if first { b'{' } else { b',' });
            first = false;
            json::write_str(key, out);
            out.push(b':');
            self.write_value_below(below, v, out);
        };
        for &c in children {
            if let Some((k, v)) = m.get_key_value(&self.states[c].key) {
                member(k, v, Some(c), out);
            }
        }
        for (k, v) in m {
            if !children.iter().any(|&c| self.states[c].key == *k) {
                member(k, v, None, out);
            }
        }
        if first {
            out.push(b'{');
        }
        out.push(b'}');
    }

    fn value_below(&self, s: StateIdx, config: &[StateIdx]) -> Value {
        let active = |c: &StateIdx| config.binary_search(c).is_ok();
        match self.states[s].kind {
            Kind::Compound => match self.states[s].children.iter().find(|c| active(c)) {
                Some(&c) if self.is_atomic(c) => Value::String(self.states[c].key.clone()),
                Some(&c) => {
                    let mut m = Map::new();
                    m.insert(self.states[c].key.clone(), self.value_below(c, config));
                    Value::Object(m)
                }
                None => Value::Object(Map::new()),
            },
            Kind::Parallel => {
                let mut m = Map::new();
                for c in self.regions(s).filter(|c| active(c)) {
                    m.insert(self.states[c].key.clone(), self.value_below(c, config));
                }
                Value::Object(m)
            }
            _ => Value::Object(Map::new()),
        }
    }

    /// The configuration a state value names (every region of a parallel state,
    /// one child of a compound state, down to atomic states), if this machine has it.
    pub fn config_of_value(&self, value: &Value) -> Option<Vec<StateIdx>> {
        if !self.has_parallel() {
            let leaf = self.leaf_of_value(value)?;
            let mut config = self.ancestors_inclusive(leaf);
            config.reverse();
            return Some(config);
        }
        let mut config = vec![self.root()];
        self.config_below(self.root(), value, &mut config)?;
        config.sort_unstable();
        Some(config)
    }

    fn config_below(&self, s: StateIdx, value: &Value, config: &mut Vec<StateIdx>) -> Option<()> {
        match (self.states[s].kind, value) {
            (Kind::Compound, Value::String(k)) => {
                let c = self.child(s, k).filter(|&c| self.is_atomic(c))?;
                config.push(c);
                Some(())
            }
            (Kind::Compound, Value::Object(m)) if m.len() == 1 => {
                let (k, inner) = m.iter().next()?;
                let c = self.child(s, k).filter(|&c| !self.is_atomic(c) && self.states[c].kind != Kind::History)?;
                config.push(c);
                self.config_below(c, inner, config)
            }
            (Kind::Parallel, Value::Object(m)) if m.len() == self.regions(s).count() => {
                for c in self.regions(s) {
                    config.push(c);
                    self.config_below(c, m.get(&self.states[c].key)?, config)?;
                }
                Some(())
            }
            (Kind::Atomic | Kind::Final, Value::Object(m)) if m.is_empty() => Some(()),
            _ => None,
        }
    }

    /// The XState-style state value of a leaf: `"paid"` or `{ "pending": "awaiting" }`.
    pub fn state_value(&self, leaf: StateIdx) -> Value {
        match self.state_values.get(leaf) {
            Some(v) => v.clone(),
            None => self.build_state_value(leaf),
        }
    }

    fn build_state_value(&self, leaf: StateIdx) -> Value {
        // From the leaf out to a child of the root.
        let mut value = Value::Null;
        let mut cur = leaf;
        while let Some(parent) = self.states[cur].parent {
            let key = self.states[cur].key.clone();
            value = if value.is_null() {
                Value::String(key)
            } else {
                let mut m = Map::new();
                m.insert(key, value);
                Value::Object(m)
            };
            cur = parent;
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

    /// SCXML's transition domain: the state whose active descendants
    /// transition `t` exits, its targets resolved to `targets` (a history
    /// state to what it restores, as the caller knows it). `None` is above the
    /// machine: a `reenter` transition of the machine itself.
    pub fn transition_domain(&self, t: &Transition, targets: &[StateIdx]) -> Option<StateIdx> {
        let Some((&head, rest)) = targets.split_first() else { return Some(t.source) };
        if !t.reenter && targets.iter().all(|&x| x == t.source || self.is_descendant(x, t.source)) {
            return Some(t.source);
        }
        // The nearest proper ancestor of the first target that holds the other targets and the source.
        let lca = self.ancestors(head).skip(1).find(|&a| rest.iter().chain([&t.source]).all(|&x| self.is_descendant(x, a)));
        match lca {
            Some(a) => Some(a),
            None if t.reenter => None,
            None => Some(self.root()),
        }
    }

    /// Whether state `s` lies inside `domain` (every state does inside `None`).
    pub fn within(&self, s: StateIdx, domain: Option<StateIdx>) -> bool {
        domain.is_none_or(|d| self.is_descendant(s, d))
    }

    /// The state at dotted `path` below `from`.
    fn descend(&self, mut from: StateIdx, dotted: &str) -> Option<StateIdx> {
        let mut rest = dotted;
        while let Some((part, tail)) = split_dot(rest) {
            from = self.child(from, part)?;
            rest = tail;
        }
        self.child(from, rest)
    }

    fn child(&self, parent: StateIdx, key: &str) -> Option<StateIdx> {
        self.states[parent].children.iter().copied().find(|&c| self.states[c].key == key)
    }

    /// Retention window for an event type, in ms.
    pub fn retention_for(&self, event_type: &str) -> u64 {
        self.retention.window_for(event_type)
    }
}

/// `s` split at its first dot. By hand: `str::split` and `split_once` bring a
/// searcher and memchr, which a cold start compiles for the builder alone.
pub(crate) fn split_dot(s: &str) -> Option<(&str, &str)> {
    let i = s.bytes().position(|b| b == b'.')?;
    // `get`, not indexing: a dot is a char boundary, and no slicing panic's
    // formatting comes along.
    Some((s.get(..i)?, s.get(i + 1..)?))
}

/// The members of a definition object in order, through one out-of-line step
/// of the B-tree's iterator: inlined, that step is a few hundred bytes in each
/// of the builder's loops, all compiled whole on a cold start.
pub(crate) struct Members<'a>(serde_json::map::Iter<'a>);

impl<'a> Iterator for Members<'a> {
    type Item = (&'a String, &'a Value);

    #[inline(never)]
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next()
    }
}

pub(crate) fn members(o: &Map<String, Value>) -> Members<'_> {
    Members(o.iter())
}

/// `s.to_string()`, out of line: inlined, each is an allocation, its failure
/// path and a copy, at every site of the builder.
#[inline(never)]
pub(crate) fn owned(s: &str) -> String {
    s.to_string()
}

mod build;
mod implementations;

/// Idem actions given as data at run time (a function implementation's
/// answer), compiled into expressions of their own.
pub(crate) fn actions_of(v: &Value, path: &str) -> Result<(Exprs, Vec<Action>)> {
    let mut exprs = Exprs::default();
    let actions = build::parse_actions(&mut exprs, &mut NameSet::default(), None, v, path)?;
    Ok((exprs, actions))
}
