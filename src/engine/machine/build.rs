//! From a definition's JSON to a [`Machine`]: every key checked, every
//! target resolved, every expression compiled, each error at its JSON path.

use super::implementations::{named, Implementations};
use super::*;

/// The keys a state may have. A state's members are found by their index here
/// (`K_ID`...), and the machine's keys start with the same ones.
const STATE_KEYS: &[&str] = &[
    "id", "initial", "states", "type", "on", "always", "after", "entry", "exit", "description", "meta", "tags", "history",
    "target", "onDone", "output",
];
const MACHINE_KEYS: &[&str] = &[
    "id", "initial", "states", "type", "on", "always", "after", "entry", "exit", "description", "meta", "tags", "history",
    "target", "onDone", "output", "version", "context", "retention", "recordIgnored", "limits", "events",
    "implementations",
];
const K_ID: usize = 0;
const K_INITIAL: usize = 1;
const K_STATES: usize = 2;
const K_TYPE: usize = 3;
const K_ON: usize = 4;
const K_ALWAYS: usize = 5;
const K_AFTER: usize = 6;
const K_ENTRY: usize = 7;
const K_EXIT: usize = 8;
const K_HISTORY: usize = 12;
const K_TARGET: usize = 13;
const K_ON_DONE: usize = 14;
const K_OUTPUT: usize = 15;
const K_VERSION: usize = 16;
const K_CONTEXT: usize = 17;
const K_RETENTION: usize = 18;
const K_RECORD_IGNORED: usize = 19;
const K_LIMITS: usize = 20;
const K_EVENTS: usize = 21;
const K_IMPLEMENTATIONS: usize = 22;
const TRANSITION_KEYS: &[&str] = &["target", "guard", "actions", "reenter", "description", "meta"];
const EFFECT_KEYS: &[&str] = &["type", "payload", "key", "idempotent", "retry"];
const RAISE_KEYS: &[&str] = &["type", "payload"];
const RETRY_KEYS: &[&str] = &["maxAttempts", "baseMs", "factor", "maxDelayMs", "jitter"];
const RETENTION_KEYS: &[&str] = &["defaultMs", "perType", "maxEntries"];
const LIMITS_KEYS: &[&str] = &["maxPayloadBytes", "maxSnapshotBytes", "maxMicrosteps"];

/// The members of a definition object by their index in its list of keys.
type Fields<'a> = [Option<&'a Value>; MAX_KEYS];
const NO_FIELDS: Fields<'static> = [None; MAX_KEYS];
const MAX_KEYS: usize = 23;
const _: () = assert!(MACHINE_KEYS.len() == MAX_KEYS && STATE_KEYS.len() < MAX_KEYS && TRANSITION_KEYS.len() < MAX_KEYS);
const _: () = assert!(EFFECT_KEYS.len() < MAX_KEYS && RETRY_KEYS.len() < MAX_KEYS);
const _: () = assert!(RETENTION_KEYS.len() < MAX_KEYS && LIMITS_KEYS.len() < MAX_KEYS);

impl Machine {
    /// Parse and validate a definition from JSON text, its states, regions,
    /// transitions and delays in the order they are written.
    pub fn from_json(text: &str) -> Result<Machine> {
        Self::from_json_hosted(text, "")
    }

    /// As [`Machine::from_json`], the host implementing as functions the
    /// guards and actions `hosted` names (`guards.NAME`, `actions.NAME`, one a line; see
    /// [`crate::host`]).
    pub fn from_json_hosted(text: &str, hosted: &str) -> Result<Machine> {
        if text.len() > MAX_DEFINITION_BYTES {
            return Err(unreadable(text));
        }
        // Read as the event path reads its JSON (`parse_prefix`), so that a
        // cold start compiles one parser entry, not two. Text that is not one
        // JSON value goes to `json::parse`, called only then, for the error it
        // has always had; too deep a value gets that error from `from_value`.
        let value = match json::parse_prefix(text) {
            Ok((v, end, _)) if only_whitespace(text.as_bytes().get(end..)) => v,
            _ => return Err(unreadable(text)),
        };
        json::check_depth(&value, "definition")?;
        Machine::build(value, &Order::of_text(text), hosted)
    }

    /// Validate a definition already parsed, its states, regions, transitions
    /// and delays in the order its maps keep them (sorted by name unless
    /// serde_json's `preserve_order` is on, as it is with the `analysis`
    /// feature): [`Machine::from_json`] keeps the order of the text.
    pub fn from_value(def: Value) -> Result<Machine> {
        json::check_depth(&def, "definition")?;
        let order = Order::of_value(&def);
        Machine::build(def, &order, "")
    }

    fn build(def: Value, order: &Order, hosted: &str) -> Result<Machine> {
        let Some(obj) = def.as_object() else {
            return Err(fail(Code::InvalidDefinition, "", &["definition must be an object"]));
        };
        let mut f = NO_FIELDS;
        fields(obj, MACHINE_KEYS, "", &mut f)?;
        // The machine is filled in place, so that every error below has the
        // same things to drop (`m`, `def`) and shares one cleanup: the builder
        // is compiled whole on a cold start, error paths and all.
        let mut m = Machine {
            id: String::new(),
            version: String::new(),
            hash: String::new(),
            states: Vec::new(),
            initial_context: Value::Null,
            retention: Retention::default(),
            record_ignored: false,
            limits: Limits::default(),
            event_types: NameSet::default(),
            outcome_types: NameSet::default(),
            schemas: crate::schema::Schemas::default(),
            exprs: Exprs::default(),
            definition: Value::Null,
            definition_order: Order::Leaf,
            by_id: NameMap::default(),
            state_values: Vec::new(),
            parallel: false,
            reference: Arc::new(MachineRef { id: String::new(), version: String::new(), hash: String::new() }),
        };
        m.id = match f[K_ID] {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err(fail(Code::InvalidDefinition, "id", &["machine id must be a non-empty string"])),
        };
        m.version = match f[K_VERSION] {
            None => owned("1"),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(_) => return Err(fail(Code::InvalidDefinition, "version", &["version must be a string or number"])),
        };
        m.initial_context = match f[K_CONTEXT] {
            None => Value::Object(Map::new()),
            Some(c @ Value::Object(_)) => crate::expr::cloned(c),
            Some(_) => return Err(fail(Code::InvalidDefinition, "context", &["context must be an object"])),
        };
        m.record_ignored = match f[K_RECORD_IGNORED] {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(fail(Code::InvalidDefinition, "recordIgnored", &["recordIgnored must be a boolean"])),
        };
        parse_retention(f[K_RETENTION], &mut m.retention)?;
        m.limits = parse_limits(f[K_LIMITS])?;
        m.schemas = crate::schema::Schemas::load(f[K_EVENTS])?;
        m.hash = machine_hash(&def);

        let mut imps = Implementations::parse(f[K_IMPLEMENTATIONS], hosted)?;
        let mut b = Builder { states: &mut m.states, exprs: &mut m.exprs, outcomes: &mut m.outcome_types, imps: &mut imps, raw: Vec::new() };
        b.add_state(&m.id, None, &f, order, "")?;
        let raw = b.raw;
        m.parallel = m.states.iter().any(|s| s.kind == Kind::Parallel);
        for (i, s) in m.states.iter().enumerate() {
            if let Some(did) = &s.declared_id {
                if m.by_id.insert(did.clone(), i as u64).is_some() {
                    return Err(fail_in(Code::DuplicateStateId, &s.json_path, "id", &["duplicate state id \"", did, "\""]));
                }
            }
        }
        for i in 0..m.states.len() {
            m.states[i].xstate_id = match (&m.states[i].declared_id, i) {
                (Some(d), _) => d.clone(),
                (None, 0) => m.id.clone(),
                (None, _) => format!("{}.{}", m.id, m.states[i].path),
            };
        }
        for s in &m.states {
            let parent_kind = s.parent.map(|p| m.states[p].kind);
            if s.kind == Kind::History && !matches!(parent_kind, Some(Kind::Compound | Kind::Parallel)) {
                return Err(fail(Code::InvalidDefinition, &s.json_path, &["a history state needs sibling states to restore"]));
            }
        }
        // Second pass: transitions, now that every state can be resolved.
        let mut events = Vec::new();
        for r in raw {
            m.attach_transitions(r, &mut events, &mut imps)?;
        }
        imps.check()?;
        m.check_initial_history()?;
        m.check_always_loops()?;
        // `in_state` names a state as a target does (`#id`, `#machine.path`), or by its path.
        let mut exprs = std::mem::take(&mut m.exprs);
        let found = exprs.resolve_states(|name: &str| {
            let i = if name.starts_with('#') { m.find_target(0, name) } else { m.state_by_path(name) };
            i.filter(|&i| i != 0 && m.states[i].kind != Kind::History).map(|i| m.states[i].path.clone())
        });
        m.exprs = exprs;
        found?;
        // The outcome types were added one at a time as effects were parsed,
        // and the event types are filled only once they are all known: no sort
        // and no removal in the module.
        for event in events {
            if !m.outcome_types.contains(event) {
                m.event_types.insert(owned(event));
            }
        }
        crate::schema::declare(&m.schemas, &mut m.event_types, &m.outcome_types)?;
        m.definition = def;
        m.definition_order = order.clone();
        m.state_values = (0..m.states.len()).map(|i| m.build_state_value(i)).collect();
        m.reference = Arc::new(MachineRef { id: m.id.clone(), version: m.version.clone(), hash: m.hash.clone() });
        Ok(m)
    }

    fn resolve_target(&self, source: StateIdx, target: &str, path: &str, field: &str) -> Result<StateIdx> {
        match self.find_target(source, target) {
            Some(i) => Ok(i),
            None => {
                let message = ["unknown transition target \"", target, "\""];
                Err(match field {
                    "" => fail(Code::UnknownTarget, path, &message),
                    _ => fail_in(Code::UnknownTarget, path, field, &message),
                })
            }
        }
    }

    fn find_target(&self, source: StateIdx, target: &str) -> Option<StateIdx> {
        if let Some(rest) = target.strip_prefix('#') {
            if let Some(i) = self.by_id.get(rest) {
                return Some(i as StateIdx);
            }
            if rest == self.id {
                return Some(self.root());
            }
            // `#machineId.path.to.state`
            if let Some(p) = rest.strip_prefix(self.id.as_str()).and_then(|r| r.strip_prefix('.')) {
                return self.state_by_path(p);
            }
            // `#declaredId.child.path`
            let (head, tail) = split_dot(rest)?;
            let base = self.by_id.get(head)?;
            return self.descend(base as StateIdx, tail);
        }
        if let Some(rest) = target.strip_prefix('.') {
            return self.descend(source, rest);
        }
        self.descend(self.states[source].parent?, target)
    }

    /// Attach transitions to their state, adding the external event types
    /// it accepts to `events`.
    fn attach_transitions<'a>(&mut self, raw: Raw<'a>, events: &mut Vec<&'a str>, imps: &mut Implementations) -> Result<()> {
        if let Slot::HistoryDefault = raw.slot {
            // Resolved as the parent's transitions resolve theirs: a plain key is a child of the parent.
            let parent = self.states[raw.source].parent.unwrap_or(0);
            let names: Vec<&Value> = match raw.candidates {
                Value::Array(items) => items.iter().collect(),
                one => vec![one],
            };
            let mut targets = Vec::new();
            for n in names {
                let Value::String(name) = n else {
                    return Err(fail(Code::InvalidDefinition, &raw.path, &["a history target must be a state name"]));
                };
                let found = match name.strip_prefix('.') {
                    Some(rest) => self.descend(parent, rest),
                    None if name.starts_with('#') => self.find_target(raw.source, name),
                    None => self.descend(parent, name),
                };
                match found {
                    Some(t) if self.is_descendant(t, parent) && self.states[t].kind != Kind::History => targets.push(t),
                    _ => return Err(fail(Code::UnknownTarget, &raw.path, &["history target \"", name, "\" is not a state inside the history state's parent"])),
                }
            }
            self.check_targets(&targets, &self.states[raw.source].json_path)?;
            self.states[raw.source].history_default = targets;
            return Ok(());
        }
        let ts = self.transitions(raw.source, raw.candidates, raw.path, imps)?;
        let node = &mut self.states[raw.source];
        match raw.slot {
            Slot::OnDone => {
                let event = format!("{DONE_EVENT_PREFIX}{}", node.xstate_id);
                match node.on.iter_mut().find(|(e, _)| *e == event) {
                    // Written both ways: `on` first, then `onDone` (as XState lists them).
                    Some((_, existing)) => existing.extend(ts),
                    None => node.on.push((event, ts)),
                }
            }
            Slot::HistoryDefault => {}
            Slot::On(event) => {
                if !event.starts_with(EFFECT_REPORT_PREFIX) && event != TIMER_EVENT {
                    events.push(event);
                }
                node.on.push((owned(event), ts));
            }
            Slot::Always => node.always = ts,
            Slot::After(delay) => node.after.push((delay, ts)),
        }
        Ok(())
    }

    /// The transitions of one candidate or an array of them, at `path`.
    fn transitions(&mut self, source: StateIdx, candidates: &Value, mut path: String, imps: &mut Implementations) -> Result<Vec<Transition>> {
        // One loop for both forms, so that `transition` is called (and its
        // result moved) at one place rather than two.
        let (items, listed) = match candidates {
            Value::Array(items) => (items.as_slice(), true),
            other => (std::slice::from_ref(other), false),
        };
        // Grown by `push`, not sized first: `with_capacity` inlines an
        // allocation and its failure path per site (so in the builder's loops).
        let mut ts = Vec::new();
        for (i, v) in items.iter().enumerate() {
            let at = if listed { indexed(&path, i) } else { std::mem::take(&mut path) };
            ts.push(self.transition(source, v, at, imps)?);
        }
        Ok(ts)
    }

    fn transition(&mut self, source: StateIdx, v: &Value, path: String, imps: &mut Implementations) -> Result<Transition> {
        let o = match v {
            Value::String(s) => {
                let targets = vec![self.resolve_target(source, s, &path, "")?];
                return Ok(Transition { source, targets, guard: None, host_guard: None, actions: Vec::new(), reenter: false, json_path: path });
            }
            Value::Object(o) => o,
            _ => return Err(fail(Code::InvalidDefinition, &path, &["a transition must be a target string or an object"])),
        };
        let mut f = NO_FIELDS;
        fields(o, TRANSITION_KEYS, &path, &mut f)?;
        let named: &[Value] = match f[0] {
            None | Some(Value::Null) => &[],
            Some(Value::Array(a)) => a.as_slice(),
            Some(one) => std::slice::from_ref(one),
        };
        let mut targets = Vec::new();
        for n in named {
            let Value::String(s) = n else {
                return Err(fail_in(Code::InvalidDefinition, &path, "target", &["target must be a state name or a list of them"]));
            };
            targets.push(self.resolve_target(source, s, &path, "target")?);
        }
        self.check_targets(&targets, &path)?;
        // Each member made once, none assigned over a default: the drop of
        // that default would be compiled, and called, on a cold start's build.
        let hosted = f[1].and_then(super::implementations::named).and_then(|n| imps.hosted("guards", &n, &join(&path, "guard")));
        let guard = match f[1] {
            Some(g) if hosted.is_none() => self.guard(g, &join(&path, "guard"), imps)?,
            _ => None,
        };
        let actions = match f[2] {
            Some(a) => parse_actions(&mut self.exprs, &mut self.outcome_types, Some(imps), a, &join(&path, "actions"))?,
            None => Vec::new(),
        };
        let reenter = match f[3] {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(fail_in(Code::InvalidDefinition, &path, "reenter", &["reenter must be a boolean"])),
        };
        Ok(Transition { source, targets, guard, host_guard: hosted, actions, reenter, json_path: path })
    }

    /// A transition's guard: an expression, or the name of one in
    /// `implementations.guards` (`None` when it names none: noted as missing).
    fn guard(&mut self, g: &Value, at: &str, imps: &mut Implementations) -> Result<Option<ExprId>> {
        match named(g).filter(|n| !n.name.is_empty()) {
            None => self.exprs.compile_guard(g, at).map(Some),
            Some(n) => match imps.guard(&n, at) {
                Some((bound, path)) => self.exprs.compile_guard(&bound, &path).map(Some),
                None => Ok(None),
            },
        }
    }

    /// Several targets must be states of different regions of a parallel state,
    /// so that together they name one legal configuration.
    fn check_targets(&self, targets: &[StateIdx], path: &str) -> Result<()> {
        for (i, &a) in targets.iter().enumerate() {
            for &b in &targets[..i] {
                let lca = self.ancestors(a).skip(1).find(|&c| b == c || self.is_descendant(b, c));
                let legal = a != b && !self.is_descendant(a, b) && lca.is_some_and(|c| c != b && self.states[c].kind == Kind::Parallel);
                if !legal {
                    let message = ["targets \"", &self.states[b].path, "\" and \"", &self.states[a].path, "\" are not in different regions of a parallel state"];
                    return Err(fail_in(Code::InvalidDefinition, path, "target", &message));
                }
            }
        }
        Ok(())
    }

    /// An initial state may be a history state (SCXML, XState): entering the
    /// parent by default restores what it recorded, else enters its default
    /// target, which it must therefore have (its parent's initial state, the
    /// fallback of a history state without one, would be the history state
    /// itself; XState recurses without end there).
    fn check_initial_history(&self) -> Result<()> {
        for s in &self.states {
            let Some(h) = s.initial.filter(|&i| self.states[i].kind == Kind::History) else { continue };
            if self.states[h].history_default.is_empty() {
                let message = ["initial state \"", &self.states[h].key, "\" is a history state without a default target: give it a \"target\" to enter while nothing is recorded"];
                return Err(fail_in(Code::InvalidInitial, &s.json_path, "initial", &message));
            }
        }
        Ok(())
    }

    /// An unguarded cycle of `always` transitions never settles: refuse it on load.
    /// Only transitions that are certainly taken are followed (the first candidate
    /// of the deepest state that has any, when it has no guard).
    fn check_always_loops(&self) -> Result<()> {
        for start in 0..self.states.len() {
            if !self.states[start].children.is_empty() {
                continue;
            }
            // No list of the leaves passed: a walk of more steps than there
            // are states has come back to one, and `always_loop` then walks
            // again to name them (out of line, so that a cold start compiles
            // less for definitions without a loop).
            let mut leaf = start;
            let mut steps = 0;
            while let Some(t) = self.certain_always(leaf) {
                let Some(target) = t.target() else {
                    return Err(fail(Code::AlwaysLoop, &t.json_path, &["unguarded targetless always transition never settles"]));
                };
                leaf = self.initial_leaf(target);
                steps += 1;
                if steps > self.states.len() {
                    return Err(self.always_loop(start));
                }
            }
        }
        Ok(())
    }

    /// The error for the loop that the walk of certain `always` transitions
    /// from `start` comes to: the leaves passed, up to the first one passed twice.
    #[cold]
    #[inline(never)]
    fn always_loop(&self, start: StateIdx) -> Error {
        let mut seen = vec![start];
        let mut leaf = start;
        while let Some((t, target)) = self.certain_always(leaf).and_then(|t| Some((t, t.target()?))) {
            let next = self.initial_leaf(target);
            if seen.contains(&next) {
                let mut message = String::from("always transitions loop without a guard (");
                for &i in &seen {
                    message.push_str(&self.states[i].path);
                    message.push_str(" -> ");
                }
                message.push_str(&self.states[next].path);
                message.push(')');
                return Error::at(Code::AlwaysLoop, t.json_path.clone(), message);
            }
            seen.push(next);
            leaf = next;
        }
        // Not reached: `check_always_loops` calls this only for a walk that loops.
        fail(Code::AlwaysLoop, "", &["always transitions loop without a guard"])
    }

    fn certain_always(&self, leaf: StateIdx) -> Option<&Transition> {
        // Above an initial history state the leaf depends on what it recorded: not certain.
        if self.states[leaf].initial.is_some() {
            return None;
        }
        for s in self.ancestors(leaf) {
            if let Some(first) = self.states[s].always.first() {
                return first.guard.is_none().then_some(first);
            }
        }
        None
    }
}

/// Why definition text is not read: too large, or (for `json::parse`) not one
/// JSON value. Out of line and cold, one function for both (two callers, so
/// that wasm-opt leaves it out of line).
#[cold]
#[inline(never)]
fn unreadable(text: &str) -> Error {
    if text.len() > MAX_DEFINITION_BYTES {
        return Error::new(
            Code::DefinitionTooLarge,
            format!("definition is {} bytes, more than the {} allowed", text.len(), MAX_DEFINITION_BYTES),
        );
    }
    match json::parse(text, Code::InvalidJson, "definition") {
        Err(e) => e,
        // Not reached: what `parse_prefix` refuses, or leaves more than
        // whitespace after, `json::parse` refuses too.
        Ok(_) => Error::new(Code::InvalidJson, "definition is not valid json"),
    }
}

/// Whether `rest` is JSON whitespace alone (as `json::parse` allows after a value).
fn only_whitespace(rest: Option<&[u8]>) -> bool {
    rest.is_some_and(|r| r.iter().all(|b| matches!(b, b' ' | b'\n' | b'\t' | b'\r')))
}

/// The machine's hash: xxh3-128 of the canonical definition, hex.
fn machine_hash(def: &Value) -> String {
    // The canonical bytes, not `json::canonical`'s String: hashing needs no
    // UTF-8 check of them (nor its code on the build).
    let mut canon = Vec::new();
    json::write_canonical(def, &mut canon);
    json::hex128(xxhash_rust::xxh3::xxh3_128(&canon))
}

/// A definition error at `path`. Every error of the builder is made by this
/// function or [`fail_in`], out of line, its message joined from static pieces
/// and names: one copy of that work in the module, not one per site.
#[cold]
#[inline(never)]
pub(super) fn fail(code: Code, path: &str, message: &[&str]) -> Error {
    Error::at(code, path.to_string(), message.concat())
}

/// A definition error at `path.field` (at `field` when `path` is empty).
#[cold]
#[inline(never)]
fn fail_in(code: Code, path: &str, field: &str, message: &[&str]) -> Error {
    Error::at(code, join(path, field), message.concat())
}

/// `path.key`, or `key` when `path` is empty (the root).
#[inline(never)]
pub(super) fn join(path: &str, key: &str) -> String {
    let mut out = String::with_capacity(path.len() + 1 + key.len());
    if !path.is_empty() {
        out.push_str(path);
        out.push('.');
    }
    out.push_str(key);
    out
}

/// The expression `e`, compiled with `path.key` as its path.
#[inline(never)]
fn compile_at(exprs: &mut Exprs, e: &Value, path: &str, key: &str) -> Result<ExprId> {
    exprs.compile(e, &join(path, key))
}

/// `path[i]`, its digits written by the JSON writer's `push_u64`, which the
/// event path compiles too, rather than by code of its own.
#[inline(never)]
fn indexed(path: &str, i: usize) -> String {
    let mut out = Vec::with_capacity(path.len() + 8);
    out.extend_from_slice(path.as_bytes());
    out.push(b'[');
    json::push_u64(i as u64, &mut out);
    out.push(b']');
    json::utf8(out)
}

/// The members of `o` by their index in `allowed`, put in `f` (empty), in one
/// pass over it; a key that is not allowed is an error at `path.key`, the
/// first such key by name when there are several. Filled in place rather than
/// returned: a returned array is copied at every call, in code a cold start compiles.
#[inline(never)]
fn fields<'a>(o: &'a Map<String, Value>, allowed: &[&str], path: &str, f: &mut Fields<'a>) -> Result<()> {
    let mut unknown: Option<&String> = None;
    for (k, v) in members(o) {
        match allowed.iter().position(|a| *a == k) {
            Some(i) => {
                if let Some(slot) = f.get_mut(i) {
                    *slot = Some(v);
                }
            }
            None => unknown = Some(unknown.map_or(k, |u| u.min(k))),
        }
    }
    match unknown {
        Some(k) => Err(fail_in(Code::InvalidDefinition, path, k, &["unknown key \"", k, "\""])),
        None => Ok(()),
    }
}

/// Transitions as written (the candidates of one event, delay or `always` of
/// a state, and their JSON path), kept until every state exists and targets
/// can be resolved.
struct Raw<'a> {
    source: StateIdx,
    slot: Slot<'a>,
    candidates: &'a Value,
    path: String,
}

enum Slot<'a> {
    On(&'a str),
    Always,
    After(u64),
    /// `onDone`: a transition on the state's done event.
    OnDone,
    /// A history state's default `target`.
    HistoryDefault,
}

struct Builder<'a, 'm> {
    states: &'m mut Vec<StateNode>,
    exprs: &'m mut Exprs,
    /// `<effect>.succeeded` and `<effect>.failed` of every effect parsed.
    outcomes: &'m mut NameSet,
    imps: &'m mut Implementations<'a>,
    /// In document order within a state: `on`, `always`, `after`.
    raw: Vec<Raw<'a>>,
}

impl<'a> Builder<'a, '_> {
    /// The actions of a state's `entry` or `exit` (`key`), if it has them.
    fn actions_at(&mut self, v: Option<&Value>, path: &str, key: &str) -> Result<Vec<Action>> {
        match v {
            None => Ok(Vec::new()),
            Some(a) => parse_actions(self.exprs, self.outcomes, Some(&mut *self.imps), a, &join(path, key)),
        }
    }

    /// Add a state whose members are `f` (checked against [`STATE_KEYS`], or
    /// for the root against [`MACHINE_KEYS`]), then its child states.
    /// `order` is the shape of the state's object, for the order of its
    /// child states, transitions and delays.
    fn add_state(&mut self, key: &str, parent: Option<StateIdx>, f: &Fields<'a>, order: &Order, json_path: &str) -> Result<StateIdx> {
        let (path, depth) = match parent {
            None => (String::new(), 0),
            Some(p) => (join(&self.states[p].path, key), self.states[p].depth + 1),
        };
        if parent.is_some() && (key.is_empty() || key.bytes().any(|b| b == b'.') || key.starts_with('#')) {
            return Err(fail(Code::InvalidDefinition, json_path, &["invalid state name \"", key, "\""]));
        }
        let declared_id = match (parent, f[K_ID]) {
            (None, _) | (_, None) => None,
            (Some(_), Some(Value::String(s))) if !s.is_empty() => Some(s.clone()),
            (Some(_), Some(_)) => return Err(fail_in(Code::InvalidDefinition, json_path, "id", &["state id must be a non-empty string"])),
        };
        let kind = match f[K_TYPE] {
            None => None,
            Some(Value::String(t)) if t == "final" => Some(Kind::Final),
            Some(Value::String(t)) if t == "parallel" => Some(Kind::Parallel),
            Some(Value::String(t)) if t == "history" => Some(Kind::History),
            Some(Value::String(t)) if t == "atomic" || t == "compound" => None,
            Some(_) => return Err(fail_in(Code::InvalidDefinition, json_path, "type", &["unknown state type"])),
        };
        if parent.is_none() && matches!(kind, Some(Kind::Final | Kind::History)) {
            return Err(fail_in(Code::InvalidDefinition, json_path, "type", &["the machine must be a compound or parallel state"]));
        }
        let deep = self.history_mode(kind, f, json_path)?;
        let output = self.final_output(kind, parent, f, json_path)?;
        let entry = self.actions_at(f[K_ENTRY], json_path, "entry")?;
        let exit = self.actions_at(f[K_EXIT], json_path, "exit")?;
        let idx = self.states.len();
        self.states.push(StateNode {
            key: owned(key),
            path,
            json_path: owned(json_path),
            declared_id,
            parent,
            children: Vec::new(),
            initial: None,
            kind: Kind::Atomic,
            entry,
            exit,
            on: Vec::new(),
            always: Vec::new(),
            after: Vec::new(),
            depth,
            xstate_id: String::new(),
            deep,
            history_default: Vec::new(),
            output,
        });
        if let Some(p) = parent {
            self.states[p].children.push(idx);
        }

        match f[K_STATES] {
            None => {}
            Some(Value::Object(children)) => {
                if kind == Some(Kind::Final) && !children.is_empty() {
                    return Err(fail_in(Code::InvalidDefinition, json_path, "states", &["a final state cannot have child states"]));
                }
                let base = join(json_path, "states");
                for (k, child, child_order) in order.member("states").members(children) {
                    let cp = join(&base, k);
                    let Some(o) = child.as_object() else {
                        return Err(fail(Code::InvalidDefinition, &cp, &["a state must be an object"]));
                    };
                    let mut cf = NO_FIELDS;
                    fields(o, STATE_KEYS, &cp, &mut cf)?;
                    self.add_state(k, Some(idx), &cf, child_order, &cp)?;
                }
            }
            Some(_) => return Err(fail_in(Code::InvalidDefinition, json_path, "states", &["states must be an object"])),
        }
        // History states are not children that can be active.
        let has_children = self.states[idx].children.iter().any(|&c| self.states[c].kind != Kind::History);
        self.states[idx].kind = match (kind, has_children) {
            (Some(Kind::Final), _) => Kind::Final,
            (Some(Kind::History), _) => Kind::History,
            (Some(Kind::Parallel), _) => Kind::Parallel,
            (_, true) => Kind::Compound,
            (_, false) => Kind::Atomic,
        };
        if parent.is_none() && !has_children {
            return Err(fail(Code::InvalidDefinition, "states", &["a machine needs at least one state"]));
        }
        // Entered, it would be a leaf that is not atomic: a deep history would
        // record nothing of it, and restoring that record would enter nothing.
        if kind == Some(Kind::Parallel) && !has_children {
            return Err(fail_in(Code::InvalidDefinition, json_path, "states", &["a parallel state needs at least one region (a child state)"]));
        }
        if self.states[idx].kind == Kind::History {
            return self.history_state(idx, f, json_path);
        }
        if self.states[idx].kind == Kind::Parallel {
            if f[K_INITIAL].is_some() {
                return Err(fail_in(Code::InvalidInitial, json_path, "initial", &["a parallel state has no initial state: every region is entered"]));
            }
        } else if let Some(t) = f[K_TARGET] {
            let _ = t;
            return Err(fail_in(Code::InvalidDefinition, json_path, "target", &["target is only for history states (a transition's target goes in on, always or after)"]));
        }
        let initial = match (f[K_INITIAL], has_children && self.states[idx].kind != Kind::Parallel) {
            (None, true) => Err("a state with child states needs an initial state"),
            (None, false) => Ok(None),
            (Some(Value::String(s)), true) => {
                let c = self.states[idx].children.iter().copied().find(|&c| self.states[c].key == *s);
                match c {
                    Some(c) => Ok(Some(c)),
                    None => {
                        let message = ["initial state \"", s, "\" is not a child state"];
                        return Err(fail_in(Code::InvalidInitial, json_path, "initial", &message));
                    }
                }
            }
            (Some(_), true) => Err("initial must be a child state name"),
            (Some(_), false) => Err("initial is set but the state has no child states"),
        };
        match initial {
            Ok(c) => self.states[idx].initial = c,
            Err(message) => return Err(fail_in(Code::InvalidInitial, json_path, "initial", &[message])),
        }

        match f[K_ON] {
            None => {}
            Some(Value::Object(on)) => {
                let base = join(json_path, "on");
                for (event, cands, _) in order.member("on").members(on) {
                    if event.is_empty() {
                        return Err(fail(Code::InvalidDefinition, &base, &["event names must not be empty"]));
                    }
                    self.raw.push(Raw { source: idx, slot: Slot::On(event), candidates: cands, path: join(&base, event) });
                }
            }
            Some(_) => return Err(fail_in(Code::InvalidDefinition, json_path, "on", &["on must be an object"])),
        }
        if let Some(a) = f[K_ALWAYS] {
            self.raw.push(Raw { source: idx, slot: Slot::Always, candidates: a, path: join(json_path, "always") });
        }
        if let Some(after) = f[K_AFTER] {
            self.add_delays(idx, after, order.member("after"), json_path)?;
        }
        if let Some(done) = f[K_ON_DONE] {
            if !matches!(self.states[idx].kind, Kind::Compound | Kind::Parallel) || parent.is_none() {
                let message = "onDone is for compound and parallel states below the machine (a final state of the machine ends the process)";
                return Err(fail_in(Code::InvalidDefinition, json_path, "onDone", &[message]));
            }
            self.raw.push(Raw { source: idx, slot: Slot::OnDone, candidates: done, path: join(json_path, "onDone") });
        }
        Ok(idx)
    }

    /// `history` is `"shallow"` (the default) or `"deep"`, and only on a history state.
    fn history_mode(&self, kind: Option<Kind>, f: &Fields<'a>, json_path: &str) -> Result<bool> {
        match (kind, f[K_HISTORY]) {
            (Some(Kind::History), None) => Ok(false),
            (Some(Kind::History), Some(Value::String(m))) if m == "shallow" => Ok(false),
            (Some(Kind::History), Some(Value::String(m))) if m == "deep" => Ok(true),
            (Some(Kind::History), Some(_)) => {
                Err(fail_in(Code::InvalidDefinition, json_path, "history", &["history must be \"shallow\" or \"deep\""]))
            }
            (_, None) => Ok(false),
            (_, Some(_)) => Err(fail_in(Code::InvalidDefinition, json_path, "history", &["history is only for states of type \"history\""])),
        }
    }

    /// A final state's `output` (XState 5's done data): an expression evaluated
    /// when the state is entered, after its entry actions, over the context
    /// and the event that entered it, and carried by its parent's done event as
    /// `event.payload.output` (XState: `event.output`). Only a final state
    /// below the machine has one: a final state of the machine ends the process.
    fn final_output(&mut self, kind: Option<Kind>, parent: Option<StateIdx>, f: &Fields<'a>, json_path: &str) -> Result<Option<ExprId>> {
        let Some(v) = f[K_OUTPUT] else { return Ok(None) };
        if kind != Some(Kind::Final) {
            return Err(fail_in(Code::InvalidDefinition, json_path, "output", &["output is for final states (the data their parent's done event carries)"]));
        }
        if parent == Some(0) {
            let message = "a final state of the machine ends the process: no done event carries its output";
            return Err(fail_in(Code::InvalidDefinition, json_path, "output", &[message]));
        }
        compile_at(self.exprs, v, json_path, "output").map(Some)
    }

    /// A history state: no child states, transitions or actions of its own;
    /// its default `target` is resolved with the transitions.
    fn history_state(&mut self, idx: StateIdx, f: &Fields<'a>, json_path: &str) -> Result<StateIdx> {
        for (key, k) in [("states", K_STATES), ("initial", K_INITIAL), ("on", K_ON), ("always", K_ALWAYS), ("after", K_AFTER), ("entry", K_ENTRY), ("exit", K_EXIT), ("onDone", K_ON_DONE)] {
            if f[k].is_some() {
                return Err(fail_in(Code::InvalidDefinition, json_path, key, &["a history state has no ", key]));
            }
        }
        if let Some(t) = f[K_TARGET] {
            self.raw.push(Raw { source: idx, slot: Slot::HistoryDefault, candidates: t, path: join(json_path, "target") });
        }
        Ok(idx)
    }

    /// The delayed transitions of state `idx` (`after`), kept for the second pass.
    #[inline(never)]
    fn add_delays(&mut self, idx: StateIdx, after: &'a Value, order: &Order, json_path: &str) -> Result<()> {
        let Value::Object(after) = after else {
            return Err(fail_in(Code::InvalidDefinition, json_path, "after", &["after must be an object"]));
        };
        let base = join(json_path, "after");
        for (delay, cands, _) in order.members(after) {
            let p = join(&base, delay);
            // A key that is not a number names a delay in `implementations.delays`.
            let ms = match delay.parse::<u64>() {
                Ok(ms) => ms,
                Err(_) if delay.is_empty() || delay.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.' || c == '+') => {
                    return Err(fail(Code::InvalidDefinition, &p, &["after delays must be whole milliseconds or the name of a delay"]));
                }
                Err(_) => self.imps.delay(delay, &p)?.unwrap_or(0),
            };
            self.raw.push(Raw { source: idx, slot: Slot::After(ms), candidates: cands, path: p });
        }
        Ok(())
    }
}

/// The actions at `path`, adding the outcome types of their effects to
/// `outcomes`. A named action is replaced by the actions `imps` has for it;
/// without `imps` (the actions of an implementation) a name is refused.
pub(super) fn parse_actions(exprs: &mut Exprs, outcomes: &mut NameSet, mut imps: Option<&mut Implementations>, v: &Value, path: &str) -> Result<Vec<Action>> {
    // One loop for both forms, as in `Machine::transitions`.
    let (items, listed) = match v {
        Value::Array(items) => (items.as_slice(), true),
        other => (std::slice::from_ref(other), false),
    };
    let mut out = Vec::new();
    for (i, a) in items.iter().enumerate() {
        let at = if listed { indexed(path, i) } else { owned(path) };
        match (named(a).filter(|n| !n.name.is_empty()), imps.as_deref_mut()) {
            (None, _) => out.push(parse_action(exprs, outcomes, a, &at)?),
            (Some(n), Some(imps)) => {
                if let Some(h) = imps.hosted("actions", &n, &at) {
                    out.push(Action::Host(h));
                } else if let Some((bound, at)) = imps.action(&n, &at) {
                    out.extend(parse_actions(exprs, outcomes, None, &bound, &at)?);
                }
            }
            (Some(n), None) => {
                let message = ["an implementation's actions are idem actions, not the name \"", n.name, "\" of another"];
                return Err(fail(Code::InvalidDefinition, &at, &message));
            }
        }
    }
    Ok(out)
}

fn parse_action(exprs: &mut Exprs, outcomes: &mut NameSet, a: &Value, p: &str) -> Result<Action> {
    let member = match a {
        Value::Object(o) if o.len() == 1 => members(o).next(),
        Value::String(name) => {
            let message = ["unknown action \"", name, "\" (actions are data: assign, effect, respond or raise)"];
            return Err(fail(Code::UnknownAction, p, &message));
        }
        _ => None,
    };
    let Some((kind, body)) = member else {
        return Err(fail(Code::UnknownAction, p, &["an action must be an object with one key: assign, effect, respond or raise"]));
    };
    Ok(match kind.as_str() {
        "assign" => {
            let Some(fields) = body.as_object() else {
                return Err(fail_in(Code::InvalidDefinition, p, "assign", &["assign must be an object of field expressions"]));
            };
            let base = join(p, "assign");
            let mut assigns = Vec::new();
            for (field, e) in members(fields) {
                assigns.push((field.clone(), compile_at(exprs, e, &base, field)?));
            }
            Action::Assign(assigns)
        }
        "respond" => Action::Respond(compile_at(exprs, body, p, "respond")?),
        "raise" => Action::Raise(parse_raise(exprs, body, &join(p, "raise"))?),
        "effect" => {
            let effect = parse_effect(exprs, body, join(p, "effect"))?;
            // `<effect>.succeeded` and `<effect>.failed`, made by the builder's
            // path joiner (the type is not empty): no code of their own.
            outcomes.insert(join(&effect.effect_type, "succeeded"));
            outcomes.insert(join(&effect.effect_type, "failed"));
            Action::Effect(effect)
        }
        other => return Err(fail(Code::UnknownAction, p, &["unknown action \"", other, "\""])),
    })
}

/// `{"type": "X", "payload": <expression>}`: an internal event.
fn parse_raise(exprs: &mut Exprs, v: &Value, path: &str) -> Result<RaiseDef> {
    let Some(o) = v.as_object() else { return Err(fail(Code::InvalidDefinition, path, &["raise must be an object with a type"])) };
    let mut f = NO_FIELDS;
    fields(o, RAISE_KEYS, path, &mut f)?;
    let event_type = match f[0] {
        Some(Value::String(s)) if !s.is_empty() && !s.starts_with(EFFECT_REPORT_PREFIX) && s != TIMER_EVENT => s.clone(),
        _ => return Err(fail_in(Code::InvalidDefinition, path, "type", &["a raised event's type must be a non-empty string, not one of the engine's own"])),
    };
    let payload = match f[1] {
        Some(e) => Some(compile_at(exprs, e, path, "payload")?),
        None => None,
    };
    Ok(RaiseDef { event_type, payload })
}

fn parse_effect(exprs: &mut Exprs, v: &Value, path: String) -> Result<EffectDef> {
    let Some(o) = v.as_object() else { return Err(fail(Code::InvalidDefinition, &path, &["effect must be an object"])) };
    let mut f = NO_FIELDS;
    fields(o, EFFECT_KEYS, &path, &mut f)?;
    let effect_type = match f[0] {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(fail_in(Code::InvalidDefinition, &path, "type", &["effect type must be a non-empty string"])),
    };
    let payload = match f[1] {
        Some(e) => Some(compile_at(exprs, e, &path, "payload")?),
        None => None,
    };
    let key = match f[2] {
        Some(e) => Some(compile_at(exprs, e, &path, "key")?),
        None => None,
    };
    let idempotent = match f[3] {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(fail_in(Code::InvalidDefinition, &path, "idempotent", &["idempotent must be a boolean"])),
    };
    let retry = match f[4] {
        None => RetryPolicy::default(),
        Some(r) => parse_retry(r, &join(&path, "retry"))?,
    };
    Ok(EffectDef { effect_type, payload, key, idempotent, retry, json_path: path })
}

/// A whole number from `lo` to `hi` (`message` says so), if the member is there.
fn bounded(v: Option<&Value>, lo: u64, hi: u64, path: &str, key: &str, message: &str) -> Result<Option<u64>> {
    match v {
        None => Ok(None),
        Some(x) => match x.as_u64() {
            Some(n) if (lo..=hi).contains(&n) => Ok(Some(n)),
            _ => Err(fail_in(Code::InvalidDefinition, path, key, &[message])),
        },
    }
}

const _: () = assert!(MAX_ATTEMPTS == 1_000, "the message for maxAttempts names it");

// Out of line, as are delayed transitions: the builder is compiled whole on
// a cold start, and these are then compiled only for definitions that have them.
#[inline(never)]
fn parse_retry(v: &Value, path: &str) -> Result<RetryPolicy> {
    let mut r = RetryPolicy::default();
    let Some(o) = v.as_object() else { return Err(fail(Code::InvalidDefinition, path, &["retry must be an object"])) };
    let mut f = NO_FIELDS;
    fields(o, RETRY_KEYS, path, &mut f)?;
    if let Some(n) = bounded(f[0], 1, MAX_ATTEMPTS as u64, path, "maxAttempts", "maxAttempts must be an integer from 1 to 1000")? {
        r.max_attempts = n as u32;
    }
    if let Some(n) = bounded(f[1], 0, 86_400_000, path, "baseMs", "baseMs must be an integer from 0 to 86400000")? {
        r.base_ms = n;
    }
    if let Some(n) = bounded(f[2], 1, 10, path, "factor", "factor must be an integer from 1 to 10")? {
        r.factor = n as u32;
    }
    if let Some(n) = bounded(f[3], 0, 7 * 86_400_000, path, "maxDelayMs", "maxDelayMs must be an integer from 0 to 604800000")? {
        r.max_delay_ms = n;
    }
    if let Some(x) = f[4] {
        match x.as_f64() {
            Some(f) if (0.0..=1.0).contains(&f) => r.jitter_pct = (f * 100.0).round() as u32,
            _ => return Err(fail_in(Code::InvalidDefinition, path, "jitter", &["jitter must be a fraction from 0 to 1"])),
        }
    }
    Ok(r)
}

/// Fill `r` (the defaults) from the definition's `retention`: in place, as
/// dropping the default's map would bring a B-tree's teardown to the build.
fn parse_retention(v: Option<&Value>, r: &mut Retention) -> Result<()> {
    let Some(v) = v else { return Ok(()) };
    let Some(o) = v.as_object() else { return Err(fail(Code::InvalidDefinition, "retention", &["retention must be an object"])) };
    let mut f = NO_FIELDS;
    fields(o, RETENTION_KEYS, "retention", &mut f)?;
    if let Some(x) = f[0] {
        match x.as_u64() {
            Some(ms) => r.default_ms = ms,
            None => return Err(fail(Code::InvalidDefinition, "retention.defaultMs", &["defaultMs must be a non-negative integer"])),
        }
    }
    if let Some(n) = bounded(f[2], 1, 1_000_000, "retention", "maxEntries", "maxEntries must be an integer from 1 to 1000000")? {
        r.max_entries = n as usize;
    }
    if let Some(x) = f[1] {
        let Some(m) = x.as_object() else { return Err(fail(Code::InvalidDefinition, "retention.perType", &["perType must be an object"])) };
        for (k, ms) in members(m) {
            let Some(ms) = ms.as_u64() else {
                let message = "a retention window must be a non-negative integer of ms";
                return Err(fail_in(Code::InvalidDefinition, "retention.perType", k, &[message]));
            };
            r.per_type.insert(k.clone(), ms);
        }
    }
    Ok(())
}

fn parse_limits(v: Option<&Value>) -> Result<Limits> {
    let mut l = Limits::default();
    let Some(v) = v else { return Ok(l) };
    let Some(o) = v.as_object() else { return Err(fail(Code::InvalidDefinition, "limits", &["limits must be an object"])) };
    let mut f = NO_FIELDS;
    fields(o, LIMITS_KEYS, "limits", &mut f)?;
    let message = "maxPayloadBytes must be from 1 to 1048576";
    if let Some(n) = bounded(f[0], 1, 1 << 20, "limits", "maxPayloadBytes", message)? {
        l.max_payload_bytes = n as usize;
    }
    let message = "maxSnapshotBytes must be from 1024 to 67108864";
    if let Some(n) = bounded(f[1], 1024, 64 << 20, "limits", "maxSnapshotBytes", message)? {
        l.max_snapshot_bytes = n as usize;
    }
    let message = "maxMicrosteps must be from 1 to 10000";
    if let Some(n) = bounded(f[2], 1, MAX_MICROSTEPS as u64, "limits", "maxMicrosteps", message)? {
        l.max_microsteps = n as usize;
    }
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_keys_start_with_the_state_keys() {
        assert_eq!(&MACHINE_KEYS[..STATE_KEYS.len()], STATE_KEYS);
        let at = |k: &str| MACHINE_KEYS.iter().position(|m| *m == k);
        let named = [
            (K_ID, "id"),
            (K_INITIAL, "initial"),
            (K_STATES, "states"),
            (K_TYPE, "type"),
            (K_ON, "on"),
            (K_ALWAYS, "always"),
            (K_AFTER, "after"),
            (K_ENTRY, "entry"),
            (K_EXIT, "exit"),
            (K_ON_DONE, "onDone"),
            (K_OUTPUT, "output"),
            (K_VERSION, "version"),
            (K_CONTEXT, "context"),
            (K_RETENTION, "retention"),
            (K_RECORD_IGNORED, "recordIgnored"),
            (K_LIMITS, "limits"),
            (K_EVENTS, "events"),
        ];
        for (i, k) in named {
            assert_eq!(at(k), Some(i), "{k}");
        }
    }
}
