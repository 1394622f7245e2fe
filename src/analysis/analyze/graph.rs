//! The graph, read statically.
//!
//! A configuration has one atomic state per active region. What is read here
//! without running the machine is an over-approximation: the atomic states a
//! process may reach, the action lists a macrostep may run. It decides only
//! where the search looks for a witness, which actions a witness is said to
//! have run, and the information findings (a state "no reachable state
//! accepts" is claimed only when none of the over-approximated states does).

use super::exprs::{accumulates, identity_guard};
use super::search::START_MS;
use crate::expr::Data;
use crate::interpreter::{Run, Start};
use crate::machine::{Action, Kind, Machine, StateIdx, Transition, DONE_EVENT_PREFIX, EFFECT_REPORT_PREFIX, INIT_EVENT, TIMER_EVENT};
use crate::reduce::Event;
use crate::snapshot::ProcessState;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::{BTreeSet, VecDeque};

pub(super) fn is_external(m: &Machine, event: &str) -> bool {
    m.event_types.contains(event) && !event.starts_with(EFFECT_REPORT_PREFIX) && event != TIMER_EVENT
}

fn is_done_leaf(m: &Machine, leaf: StateIdx) -> bool {
    let s = &m.states[leaf];
    s.kind == Kind::Final && s.parent == Some(m.root())
}

/// The atomic states below `idx` (itself when it is one); history states aside.
fn leaves_under(m: &Machine, idx: StateIdx) -> Vec<StateIdx> {
    if m.states[idx].kind == Kind::History {
        return Vec::new();
    }
    if m.states[idx].children.is_empty() {
        return vec![idx];
    }
    m.states[idx].children.iter().flat_map(|&c| leaves_under(m, c)).collect()
}

fn push_new(out: &mut Vec<StateIdx>, s: StateIdx) {
    if !out.contains(&s) {
        out.push(s);
    }
}

/// Atomic states entering `target` may leave the process in: its default
/// configuration, or for a history state anything below its parent it may
/// restore; and the other regions of every parallel state above it, which
/// are entered by default or stay where they are.
fn landing_of(m: &Machine, target: StateIdx) -> Vec<StateIdx> {
    let mut out = Vec::new();
    if m.states[target].kind == Kind::History {
        let parent = m.states[target].parent.unwrap_or(0);
        for l in leaves_under(m, parent) {
            push_new(&mut out, l);
        }
    } else {
        for s in m.initial_config(target) {
            if m.is_atomic(s) && (s == target || m.is_descendant(s, target)) {
                push_new(&mut out, s);
            }
        }
    }
    let mut child = target;
    for a in m.ancestors(target).skip(1) {
        if m.states[a].kind == Kind::Parallel {
            for r in m.regions(a).filter(|&r| r != child) {
                for l in leaves_under(m, r) {
                    push_new(&mut out, l);
                }
            }
        }
        child = a;
    }
    out
}

/// Atomic states a transition may leave the process in (before `always` steps).
pub(super) fn landing(m: &Machine, t: &Transition) -> Vec<StateIdx> {
    if t.targets.is_empty() {
        let mut out = leaves_under(m, t.source);
        let mut child = t.source;
        for a in m.ancestors(t.source).skip(1) {
            if m.states[a].kind == Kind::Parallel {
                for r in m.regions(a).filter(|&r| r != child) {
                    for l in leaves_under(m, r) {
                        push_new(&mut out, l);
                    }
                }
            }
            child = a;
        }
        return out;
    }
    let mut out = Vec::new();
    for &tg in &t.targets {
        for l in landing_of(m, tg) {
            push_new(&mut out, l);
        }
    }
    out
}

/// Every transition that can fire in `leaf` (events, `always`, `after`).
fn outgoing(m: &Machine, leaf: StateIdx, always_only: bool) -> Vec<&Transition> {
    if is_done_leaf(m, leaf) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for s in m.ancestors_inclusive(leaf) {
        let n = &m.states[s];
        out.extend(n.always.iter());
        if !always_only {
            out.extend(n.on.iter().flat_map(|(_, ts)| ts.iter()));
            out.extend(n.after.iter().flat_map(|(_, ts)| ts.iter()));
        }
    }
    out
}

pub(super) fn closure(m: &Machine, start: &[StateIdx], always_only: bool) -> BTreeSet<StateIdx> {
    let mut seen: BTreeSet<StateIdx> = start.iter().copied().collect();
    let mut queue: VecDeque<StateIdx> = start.iter().copied().collect();
    while let Some(l) = queue.pop_front() {
        for t in outgoing(m, l, always_only) {
            let next = if t.targets.is_empty() { vec![l] } else { landing(m, t) };
            for n in next {
                if seen.insert(n) {
                    queue.push_back(n);
                }
            }
        }
    }
    seen
}

/// Transitions for `event` enabled (guards aside) in `leaf`, deepest state first.
pub(super) fn accepting<'m>(m: &'m Machine, leaf: StateIdx, event: &str) -> Vec<&'m Transition> {
    if is_done_leaf(m, leaf) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for s in m.ancestors_inclusive(leaf) {
        if let Some((_, ts)) = m.states[s].on.iter().find(|(e, _)| e == event) {
            out.extend(ts.iter());
        }
    }
    out
}

/// A configuration: the active states in document order, the context and
/// the state value, and whether the process is finished.
#[derive(Debug, Clone)]
pub(super) struct Config {
    pub(super) states: Vec<StateIdx>,
    pub(super) context: Value,
    pub(super) value: Value,
    pub(super) done: bool,
}

impl Config {
    fn active(&self, s: StateIdx) -> bool {
        self.states.binary_search(&s).is_ok()
    }
    pub(super) fn leaves(&self, m: &Machine) -> Vec<StateIdx> {
        self.states.iter().copied().filter(|&s| m.is_atomic(s)).collect()
    }
    /// Does any active state have a transition for `event` (guards aside)?
    pub(super) fn accepts(&self, m: &Machine, event: &str) -> bool {
        !self.done && self.states.iter().any(|&s| m.states[s].on.iter().any(|(e, _)| e == event))
    }
    /// The active atomic state a transition of `source` is taken from (the
    /// first below it in document order).
    pub(super) fn leaf_under(&self, m: &Machine, source: StateIdx) -> StateIdx {
        self.states.iter().copied().find(|&s| m.is_atomic(s) && (s == source || m.is_descendant(s, source))).unwrap_or(source)
    }
}

/// Where a new process stands when its first event is judged: its initial
/// step settled (entry actions, eventless transitions, raised and done
/// events), by the interpreter itself.
pub(super) fn settled_start(m: &Machine) -> Config {
    let init = Event { id: Cow::Borrowed("analysis"), event_type: Cow::Borrowed(INIT_EVENT), payload: Cow::Owned(json!({})) };
    let fallback = || {
        let states = m.initial_config(m.root());
        Config { value: m.value_of_config(&states), states, context: m.initial_context.clone(), done: false }
    };
    let mut run = Run::new(
        m,
        Start {
            config: Vec::new(),
            state: ProcessState { context: m.initial_context.clone(), revision: 1, ..ProcessState::default() },
            origin: &init,
            process: "analysis",
            now: START_MS,
        },
    );
    match run.start() {
        Ok(()) => {
            let ProcessState { context, value, done, .. } = run.state;
            Config { states: run.config, context, value, done }
        }
        Err(_) => fallback(),
    }
}

/// The transitions `reduce` selects for `event` in a configuration: in every
/// active region the deepest state with an enabled transition, conflicts
/// removed (SCXML's optimal enabled transition set, as the interpreter takes it).
pub(super) fn select<'m>(m: &'m Machine, cfg: &Config, event: &Value) -> Vec<&'m Transition> {
    if cfg.done {
        return Vec::new();
    }
    let scope = json!({ "context": cfg.context, "event": event, "state": cfg.value });
    let ty = event["type"].as_str().unwrap_or("");
    fn select_in<'m>(m: &'m Machine, cfg: &Config, s: StateIdx, ty: &str, scope: &Value, out: &mut Vec<&'m Transition>) {
        let before = out.len();
        match m.states[s].kind {
            Kind::Compound => {
                if let Some(&c) = m.states[s].children.iter().find(|&&c| cfg.active(c)) {
                    select_in(m, cfg, c, ty, scope, out);
                }
            }
            Kind::Parallel => {
                for c in m.regions(s) {
                    if cfg.active(c) {
                        select_in(m, cfg, c, ty, scope, out);
                    }
                }
            }
            _ => {}
        }
        if out.len() == before {
            if let Some((_, ts)) = m.states[s].on.iter().find(|(e, _)| e == ty) {
                let enabled = ts.iter().find(|t| match t.guard {
                    None => true,
                    Some(g) => m.exprs.test(g, Data::Value(scope)).unwrap_or(false),
                });
                out.extend(enabled);
            }
        }
    }
    let mut found = Vec::new();
    select_in(m, cfg, m.root(), ty, &scope, &mut found);
    // Of two that exit a common state, the descendant's wins, else the first.
    crate::interpreter::remove_conflicting_transitions(m, &found, |t| exit_set(m, t, &cfg.states))
}

/// A target as far as the transition domain is concerned: a history state
/// restores states inside its parent.
fn domain_target(m: &Machine, s: StateIdx) -> StateIdx {
    match m.states[s].kind {
        Kind::History => m.states[s].parent.unwrap_or(0),
        _ => s,
    }
}

/// The state whose active descendants a transition exits, as `reduce`
/// computes it ([`Machine::transition_domain`]), a history target taken as its parent.
pub(super) fn domain(m: &Machine, t: &Transition) -> Option<StateIdx> {
    let targets: Vec<StateIdx> = t.targets.iter().map(|&s| domain_target(m, s)).collect();
    m.transition_domain(t, &targets)
}

/// The active states a transition leaves, innermost first (reverse document order).
fn exit_set(m: &Machine, t: &Transition, config: &[StateIdx]) -> Vec<StateIdx> {
    if t.targets.is_empty() {
        return Vec::new();
    }
    let dom = domain(m, t);
    let mut out: Vec<StateIdx> = config.iter().copied().filter(|&s| m.within(s, dom)).collect();
    if t.reenter && dom == Some(t.source) {
        push_new(&mut out, t.source);
    }
    out.sort_unstable_by(|a, b| b.cmp(a));
    out
}

/// The states a transition enters, outermost first (document order); a
/// history target enters what `after` (the configuration the macrostep ended
/// in) holds below its parent.
fn entry_set(m: &Machine, t: &Transition, after: &[StateIdx]) -> Vec<StateIdx> {
    let dom = domain(m, t);
    let mut out = Vec::new();
    for &tg in &t.targets {
        let from = if m.states[tg].kind == Kind::History {
            let parent = m.states[tg].parent.unwrap_or(0);
            let mut v: Vec<StateIdx> = m.ancestors(parent).collect();
            v.extend(after.iter().copied().filter(|&s| m.is_descendant(s, parent)));
            v
        } else {
            let mut v = m.initial_config(tg);
            let mut child = tg;
            for a in m.ancestors(tg).skip(1) {
                if m.states[a].kind == Kind::Parallel && (m.within(a, dom) || Some(a) == dom) {
                    for r in m.regions(a).filter(|&r| r != child) {
                        v.extend(m.initial_config(r));
                    }
                }
                child = a;
            }
            v
        };
        for s in from {
            if m.within(s, dom) {
                push_new(&mut out, s);
            }
        }
    }
    if t.reenter && dom == Some(t.source) {
        push_new(&mut out, t.source);
    }
    out.sort_unstable();
    out
}

/// Action lists a transition runs from a configuration: exits (innermost
/// first), its own, entries (outermost first).
fn footprint<'m>(m: &'m Machine, t: &'m Transition, before: &[StateIdx], after: &[StateIdx]) -> Vec<(&'m [Action], Owner)> {
    let mut out: Vec<(&[Action], Owner)> = Vec::new();
    if t.targets.is_empty() {
        out.push((&t.actions, Owner::Transition(t.json_path.clone())));
        return out;
    }
    for s in exit_set(m, t, before) {
        out.push((&m.states[s].exit, Owner::Exit(s)));
    }
    out.push((&t.actions, Owner::Transition(t.json_path.clone())));
    for s in entry_set(m, t, after) {
        out.push((&m.states[s].entry, Owner::Entry(s)));
    }
    out
}

fn chain_config(m: &Machine, leaf: StateIdx) -> Vec<StateIdx> {
    let mut c = m.ancestors_inclusive(leaf);
    c.reverse();
    c
}

/// Every action list a repeat taking `t` from `before` (ending in `after`)
/// may run: its own footprint, that of any `always` transition it may settle
/// through, of the transitions on the events it raises and the done events
/// of the final states it enters, and the entries and exits the
/// configurations show.
pub(super) fn macrostep_owners(m: &Machine, t: &Transition, before: &[StateIdx], after: &[StateIdx]) -> Vec<Owner> {
    let mut out: Vec<Owner> = Vec::new();
    let add = |out: &mut Vec<Owner>, o: Owner| {
        if !out.contains(&o) {
            out.push(o);
        }
    };
    let mut lists: Vec<(&[Action], Owner)> = footprint(m, t, before, after);
    let before_leaves: Vec<StateIdx> = before.iter().copied().filter(|&s| m.is_atomic(s)).collect();
    let start: Vec<StateIdx> = if t.targets.is_empty() {
        before_leaves.iter().copied().filter(|&l| l == t.source || m.is_descendant(l, t.source)).collect()
    } else {
        landing(m, t)
    };
    let reached = closure(m, &start, true);
    for &l in &reached {
        for a in outgoing(m, l, true) {
            lists.extend(footprint(m, a, &chain_config(m, l), after));
        }
    }
    // States that may be active during the macrostep.
    let mut live: BTreeSet<StateIdx> = before.iter().chain(after.iter()).copied().collect();
    for &l in &reached {
        live.extend(m.ancestors(l));
    }
    let mut internal: BTreeSet<String> = BTreeSet::new();
    let mut i = 0;
    while i < lists.len() && i < 4096 {
        let (actions, owner) = lists[i].clone();
        for a in actions {
            if let Action::Raise(r) = a {
                internal.insert(r.event_type.clone());
            }
        }
        if let Owner::Entry(s) = owner {
            if m.states[s].kind == Kind::Final {
                for p in m.ancestors(s).skip(1) {
                    if p != m.root() {
                        internal.insert(format!("{DONE_EVENT_PREFIX}{}", m.states[p].xstate_id));
                    }
                }
            }
        }
        for &s in &live {
            for (e, ts) in &m.states[s].on {
                if internal.contains(e) {
                    for it in ts {
                        let key = Owner::Transition(it.json_path.clone());
                        if !lists.iter().any(|(_, o)| *o == key) {
                            lists.extend(footprint(m, it, before, after));
                        }
                    }
                }
            }
        }
        i += 1;
    }
    for (_, o) in lists {
        add(&mut out, o);
    }
    for &s in before.iter().filter(|s| !after.contains(s)) {
        add(&mut out, Owner::Exit(s));
    }
    for &s in after.iter().filter(|s| !before.contains(s)) {
        add(&mut out, Owner::Entry(s));
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Owner {
    Transition(String),
    Entry(StateIdx),
    Exit(StateIdx),
}

/// An assign that accumulates, or an effect: the actions findings point at.
pub(super) struct AccSite {
    pub(super) field: String,
    pub(super) path: String,
    pub(super) owner: Owner,
    pub(super) state: StateIdx,
    pub(super) guarded_by: Option<String>,
}

pub(super) struct EffectSite {
    pub(super) effect_type: String,
    pub(super) path: String,
    pub(super) owner: Owner,
    pub(super) state: StateIdx,
    pub(super) idempotent: bool,
    pub(super) custom_key: Option<Value>,
}

pub(super) fn action_lists(m: &Machine) -> Vec<(&[Action], Owner, StateIdx, Option<&Transition>)> {
    let mut out: Vec<(&[Action], Owner, StateIdx, Option<&Transition>)> = Vec::new();
    for (i, s) in m.states.iter().enumerate() {
        out.push((&s.entry, Owner::Entry(i), i, None));
        out.push((&s.exit, Owner::Exit(i), i, None));
        let ts = s.on.iter().flat_map(|(_, ts)| ts.iter()).chain(s.always.iter()).chain(s.after.iter().flat_map(|(_, ts)| ts.iter()));
        for t in ts {
            out.push((&t.actions, Owner::Transition(t.json_path.clone()), i, Some(t)));
        }
    }
    out
}

pub(super) fn sites(m: &Machine) -> (Vec<AccSite>, Vec<EffectSite>) {
    let mut acc = Vec::new();
    let mut eff = Vec::new();
    for (actions, owner, state, t) in action_lists(m) {
        let guarded_by = t.and_then(|t| identity_guard(m, t));
        for a in actions {
            match a {
                Action::Assign(fields) => {
                    for (f, e) in fields {
                        if accumulates(m.exprs.source(*e), f) {
                            acc.push(AccSite {
                                field: f.clone(),
                                path: m.exprs.path(*e).to_string(),
                                owner: owner.clone(),
                                state,
                                guarded_by: guarded_by.clone(),
                            });
                        }
                    }
                }
                Action::Effect(d) => eff.push(EffectSite {
                    effect_type: d.effect_type.clone(),
                    path: d.json_path.clone(),
                    owner: owner.clone(),
                    state,
                    idempotent: d.idempotent,
                    custom_key: d.key.map(|k| m.exprs.source(k).clone()),
                }),
                // A function action is the host's: none in a machine built from a definition alone.
                Action::Respond(_) | Action::Raise(_) | Action::Host(_) => {}
            }
        }
    }
    (acc, eff)
}
