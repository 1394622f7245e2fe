//! Hazard analysis: find the places where a machine's free protection against
//! duplicate delivery disappears, before production does.
//!
//! # What the ledger already covers, and what it does not
//!
//! `reduce` remembers every applied event id for the retention window of its
//! type (`retention.defaultMs`, `retention.perType`, at most
//! `retention.maxEntries` ids). A repeat inside that window is a `duplicate`
//! whatever the machine looks like. The hazards reported here are about what
//! happens *outside* that protection:
//!
//! - **a late duplicate**: the same event, same id, delivered after its ledger
//!   entry was forgotten (a queue that redelivers three weeks later, a replayed
//!   backup, an outbox that retries after the window);
//! - **a re-sent copy with a fresh id**: an originator that makes a new id on
//!   every retry (a form posted twice, a client library without stable ids).
//!
//! Past the ledger only the graph protects: an event that finds no transition
//! is ignored. The analysis looks for the cases where it does find one.
//!
//! # How it works, and why it is sound on what it claims
//!
//! The analysis is a bounded search over real runs. It drives the machine with
//! [`Machine::reduce`] itself — every event type with a few synthesised
//! payloads (values taken from the constants and context fields the guards
//! compare them with), firing timers and completing effects — and, after each
//! applied event, delivers that same event again: late (same id, just past its
//! retention), with a fresh id, and late again after a cycle of other events.
//! When a repeat is applied *and* changes the context, emits effects or moves
//! the process, the finding is reported with the exact event sequence that
//! shows it (its [`Witness`]); replaying that sequence through `reduce` shows
//! the change happening a second time. No hazard is reported without one.
//!
//! A node of the search is a configuration: one active state per region of
//! every active parallel state, and the history each history state recorded.
//! Raised events and done events are never sent from outside: `reduce`
//! follows them inside the macrostep of the event that raised them.
//!
//! Static reading of the definition adds what a search cannot prove alone:
//! which transitions are protected by topology (their event is never accepted
//! again — info), which re-acceptances are guarded by an identified set (info),
//! and which accumulating assigns are latent (they accumulate, but no repeat
//! reaches them — info). The search is bounded ([`Bounds`]): a hazard that
//! needs a longer prefix than the bound is missed, never invented.
//!
//! # Codes
//!
//! | code | severity | what |
//! |---|---|---|
//! | `reaccept` | error (warning when the repeat only moves the state) | the target (or an ancestor, or a state reached through `always`) accepts the event again |
//! | `reenter_reruns` | error | a `reenter` transition re-runs exit/entry actions on a repeat |
//! | `cycle_reaccept` | warning | after a cycle the event is legal again: a duplicate older than its retention is applied |
//! | `accumulating_assign` | error / warning (info when latent) | `x = x + …` or a list append with no identified-set guard, doubled by a repeat |
//! | `unverified_effect` | error / warning (info when no repeat emits it) | an `idempotent: false` effect emitted again: the provider cannot recognise it and verification only covers one emission |
//! | `unstable_effect_key` | error / warning | a custom effect key that changes between deliveries of the same event |
//! | `topology_protected` | info | the event is never accepted again after this transition |
//! | `identity_guarded` | info | the event is accepted again, but only through transitions guarded by an identified set |
//! | `reaccept_unconfirmed` | info | the event is accepted again, yet no repeat within the bounds changes anything |
//! | `unrepresentable` | warning / info | (XState import) something that cannot be expressed as data |
//! | `unvalidated_payload` | warning | an assign does arithmetic on a payload field no schema declares numeric (src/analysis/unvalidated.rs) |

use crate::expr::Data;
use crate::interpreter::{Run, Start};
use crate::machine::{Action, Kind, Machine, StateIdx, Transition, DONE_EVENT_PREFIX, EFFECT_REPORT_PREFIX, INIT_EVENT, TIMER_EVENT};
use crate::outbox;
use crate::reduce::{Event, Outcome, Status};
use crate::snapshot::{self, EffectState};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

/// Every code the analysis (and the XState import) can report, with its
/// highest severity and a one-line description. The strings are a public contract.
pub const CODES: &[(&str, Severity, &str)] = &[
    ("reaccept", Severity::Error, "the state reached accepts the same event again"),
    ("reenter_reruns", Severity::Error, "a reenter transition re-runs exit/entry actions on a repeated event"),
    ("cycle_reaccept", Severity::Warning, "after a cycle the event is legal again; a duplicate older than its retention is applied"),
    ("accumulating_assign", Severity::Error, "an assign accumulates from its own previous value without an identified-set guard"),
    ("unverified_effect", Severity::Error, "a non-idempotent effect can be emitted a second time"),
    ("unstable_effect_key", Severity::Error, "an effect key that changes between deliveries of the same event"),
    ("topology_protected", Severity::Info, "the event is never accepted again after this transition"),
    ("identity_guarded", Severity::Info, "the event is accepted again only through identified-set guards"),
    ("reaccept_unconfirmed", Severity::Info, "the event is accepted again but no repeat within the bounds changes anything"),
    ("unrepresentable", Severity::Warning, "part of an imported XState machine that cannot be expressed as data"),
    ("unvalidated_payload", Severity::Warning, "an assign does arithmetic on a payload field no schema declares numeric"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One finding: a hazard (error/warning) with the event sequence that shows it,
/// or a piece of information about what is safe and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub code: String,
    pub severity: Severity,
    /// Dotted path of the state concerned (`pending`, `active.paid`); empty for the root.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// JSON paths of the transitions involved, in the order they are taken.
    pub transitions: Vec<String>,
    /// JSON path of the action concerned, for findings about one action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    pub message: String,
    pub fix: String,
    /// The retention window (ms) of the event's type, where it is what guards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention_ms: Option<u64>,
    /// For `cycle_reaccept`: the steps of the cycle, `state --EVENT--> state`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cycle: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<Witness>,
}

/// How the repeat in a witness arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Same id, delivered after the ledger forgot it (past the retention window).
    LateDuplicate,
    /// Same type and payload under a new id, as an originator without stable ids sends it.
    FreshId,
}

/// A concrete event sequence: replaying `steps` through `reduce` (each at its
/// `now`) applies every step, and the last one (the repeat of step `original`)
/// changes what `shows` lists a second time.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Witness {
    pub mode: Mode,
    pub steps: Vec<Step>,
    pub original: usize,
    pub duplicate: usize,
    pub shows: Shows,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// `{ id, type, payload }`, exactly as it is reduced.
    pub event: Value,
    pub now: u64,
    /// `prefix`, `original`, `cycle`, `effect`, `timer` or `duplicate`.
    pub role: &'static str,
}

/// What the repeat changed (relative to the snapshot it was applied to).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Shows {
    /// Context fields the repeat changed, with their values before and after it.
    pub changes: Vec<Change>,
    /// Effects the repeat emitted (type and key).
    pub effects: Vec<ShownEffect>,
    /// The state value after the repeat, when the repeat moved the process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub field: String,
    pub before: Value,
    pub after: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShownEffect {
    #[serde(rename = "type")]
    pub effect_type: String,
    pub key: String,
    pub idempotent: bool,
}

impl Shows {
    fn is_doubling(&self) -> bool {
        !self.changes.is_empty() || !self.effects.is_empty()
    }
    fn weight(&self) -> usize {
        self.changes.len() + 2 * self.effects.len()
    }
    fn summary(&self) -> String {
        let mut parts = Vec::new();
        for c in &self.changes {
            parts.push(format!("context.{} changes again ({} -> {})", c.field, short(&c.before), short(&c.after)));
        }
        for e in &self.effects {
            parts.push(format!("effect `{}` is emitted again (key \"{}\")", e.effect_type, e.key));
        }
        if let Some(v) = &self.moved_to {
            parts.push(format!("the process moves to {}", short(v)));
        }
        parts.join("; ")
    }
}

/// Bounds of the search.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Longest prefix of events before the original event.
    pub depth: usize,
    /// Most distinct configurations visited by the prefix search.
    pub nodes: usize,
    /// Longest cycle (events between the original and its late duplicate).
    pub cycle_depth: usize,
    /// Most configurations visited looking for one cycle.
    pub cycle_nodes: usize,
    /// Hard cap on `reduce` calls for one analysis.
    pub reduces: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds { depth: 5, nodes: 300, cycle_depth: 4, cycle_nodes: 80, reduces: 60_000 }
    }
}

/// Analyze a machine with the default bounds. Findings are sorted: errors
/// first, then warnings, then information; each group by state and code.
///
/// ```
/// use idem::{analyze, Machine};
/// let m = Machine::from_json(r#"{ "id": "tab", "initial": "open", "context": { "total": 0 },
///   "states": { "open": { "on": { "ADD": { "actions": [
///     { "assign": { "total": { "+": [{ "var": "context.total" }, { "var": "event.payload.amount" }] } } } ] } } } } }"#).unwrap();
/// let findings = analyze::analyze(&m);
/// assert!(findings.iter().any(|f| f.code == "accumulating_assign" && f.severity == analyze::Severity::Error));
/// ```
pub fn analyze(m: &Machine) -> Vec<Finding> {
    analyze_with(m, Bounds::default())
}

/// Analyze with explicit bounds.
pub fn analyze_with(m: &Machine, bounds: Bounds) -> Vec<Finding> {
    let mut s = Search::new(m, bounds);
    s.run();
    let mut findings = s.findings();
    findings.extend(crate::unvalidated::findings(m));
    sort(&mut findings);
    findings
}

/// Sort findings: errors first, then warnings, then information; each group
/// by state, code and path.
pub fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        (a.severity, &a.state, &a.code, &a.transitions, &a.site).cmp(&(b.severity, &b.state, &b.code, &b.transitions, &b.site))
    });
}

/// Counts by severity: `(errors, warnings, info)`.
pub fn counts(findings: &[Finding]) -> (usize, usize, usize) {
    let n = |s| findings.iter().filter(|f| f.severity == s).count();
    (n(Severity::Error), n(Severity::Warning), n(Severity::Info))
}

/// The findings as one JSON document: `{ machine, findings, summary }`.
pub fn to_json(machine_id: &str, findings: &[Finding]) -> Value {
    let (e, w, i) = counts(findings);
    json!({
        "machine": machine_id,
        "findings": findings,
        "summary": { "errors": e, "warnings": w, "info": i },
    })
}

/// The findings as text for a terminal or a CI log.
pub fn to_text(machine_id: &str, findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let state = if f.state.is_empty() { "(machine)" } else { f.state.as_str() };
        let event = f.event.as_deref().map(|e| format!(" on {e}")).unwrap_or_default();
        out.push_str(&format!("{}[{}] {}{}: {}\n", f.severity.as_str(), f.code, state, event, f.message));
        for t in &f.transitions {
            out.push_str(&format!("  --> {t}\n"));
        }
        if let Some(site) = &f.site {
            out.push_str(&format!("  at  {site}\n"));
        }
        for c in &f.cycle {
            out.push_str(&format!("  cycle: {c}\n"));
        }
        if let Some(w) = &f.witness {
            let mode = match w.mode {
                Mode::LateDuplicate => "late duplicate",
                Mode::FreshId => "re-sent with a fresh id",
            };
            out.push_str(&format!("  witness ({mode}):\n"));
            for (i, s) in w.steps.iter().enumerate() {
                let e = &s.event;
                out.push_str(&format!(
                    "    {:>2}. now={} {:<9} {} id={} {}\n",
                    i + 1,
                    s.now,
                    s.role,
                    e["type"].as_str().unwrap_or(""),
                    e["id"].as_str().unwrap_or(""),
                    e["payload"]
                ));
            }
            out.push_str(&format!("    shows: {}\n", w.shows.summary()));
        }
        if !f.fix.is_empty() {
            out.push_str(&format!("  fix: {}\n", f.fix));
        }
        out.push('\n');
    }
    let (e, w, i) = counts(findings);
    out.push_str(&format!("{machine_id}: {e} error(s), {w} warning(s), {i} info\n"));
    out
}

// ---------------------------------------------------------------------------
// Reading expressions

fn var_path(v: &Value) -> Option<&str> {
    let o = v.as_object()?;
    if o.len() != 1 {
        return None;
    }
    match o.get("var")? {
        Value::String(s) => Some(s),
        Value::Array(a) => a.first()?.as_str(),
        _ => None,
    }
}

/// Every `var` path read by an expression.
fn vars(v: &Value, out: &mut Vec<String>) {
    if let Some(p) = var_path(v) {
        out.push(p.to_string());
        return;
    }
    match v {
        Value::Array(a) => a.iter().for_each(|x| vars(x, out)),
        Value::Object(o) => o.values().for_each(|x| vars(x, out)),
        _ => {}
    }
}

fn reads(v: &Value, prefix: &str) -> bool {
    let mut vs = Vec::new();
    vars(v, &mut vs);
    vs.iter().any(|p| p == prefix || p.starts_with(&format!("{prefix}.")))
}

fn op(v: &Value) -> Option<(&str, Vec<&Value>)> {
    let o = v.as_object()?;
    if o.len() != 1 {
        return None;
    }
    let (k, args) = o.iter().next()?;
    let args = match args {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    Some((k.as_str(), args))
}

const ACCUMULATING_OPS: &[&str] = &["+", "-", "*", "merge", "cat"];

/// Does `expr` compute a new value of `context.<field>` from its previous one
/// (`+`, `-`, `*`, `merge`, `cat` with the field as an operand)?
fn accumulates(expr: &Value, field: &str) -> bool {
    let target = format!("context.{field}");
    fn walk(v: &Value, target: &str) -> bool {
        if let Some((name, args)) = op(v) {
            if ACCUMULATING_OPS.contains(&name) && args.iter().any(|a| var_path(a) == Some(target) || operand_chain(a, target)) {
                return true;
            }
            return args.iter().any(|a| walk(a, target));
        }
        match v {
            Value::Array(a) => a.iter().any(|x| walk(x, target)),
            _ => false,
        }
    }
    fn operand_chain(v: &Value, target: &str) -> bool {
        match op(v) {
            Some((name, args)) if ACCUMULATING_OPS.contains(&name) => {
                args.iter().any(|a| var_path(a) == Some(target) || operand_chain(a, target))
            }
            _ => false,
        }
    }
    walk(expr, &target)
}

/// Conjuncts of a guard (`and` is flattened).
fn conjuncts(g: &Value) -> Vec<&Value> {
    match op(g) {
        Some(("and", args)) => args.into_iter().flat_map(conjuncts).collect(),
        _ => vec![g],
    }
}

/// Sets named by `!(event.… in context.S)` conjuncts of a guard.
fn negated_memberships(g: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for c in conjuncts(g) {
        let inner = match op(c) {
            Some(("!", args)) if args.len() == 1 => args[0],
            _ => continue,
        };
        if let Some(("in", args)) = op(inner) {
            if args.len() == 2 && reads(args[0], "event") {
                if let Some(p) = var_path(args[1]).and_then(|p| p.strip_prefix("context.")) {
                    out.push(p.to_string());
                }
            }
        }
    }
    out
}

/// Context fields compared for equality with something the event carries
/// (a generation or version check): `event.payload.round == context.round`.
fn generation_checks(g: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for c in conjuncts(g) {
        if let Some((name, args)) = op(c) {
            if (name == "==" || name == "===") && args.len() == 2 {
                for (a, b) in [(args[0], args[1]), (args[1], args[0])] {
                    let ev = var_path(a).is_some_and(|p| p.starts_with("event."));
                    if let (true, Some(f)) = (ev, var_path(b).and_then(|p| p.strip_prefix("context."))) {
                        out.push(f.to_string());
                    }
                }
            }
        }
    }
    out
}

fn assigned_fields(m: &Machine, actions: &[Action]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for a in actions {
        if let Action::Assign(fields) = a {
            for (f, e) in fields {
                out.push((f.clone(), m.exprs.source(*e).clone()));
            }
        }
    }
    out
}

/// The identified set (or generation field) that makes a transition refuse its
/// own repeat: its guard checks the event against `context.S`, and its actions
/// record the event in `S` (or advance it).
fn identity_guard(m: &Machine, t: &Transition) -> Option<String> {
    let g = m.exprs.source(t.guard?);
    let assigned = assigned_fields(m, &t.actions);
    for s in negated_memberships(g) {
        if assigned.iter().any(|(f, e)| *f == s && reads(e, &format!("context.{s}")) && reads(e, "event")) {
            return Some(s);
        }
    }
    // A round (generation) check: the event must carry the current round, and
    // some transition of the machine advances it, so an old round is refused.
    let advanced = |f: &str| {
        assigned.iter().any(|(a, _)| a == f)
            || action_lists(m).iter().any(|(actions, ..)| assigned_fields(m, actions).iter().any(|(a, _)| a == f))
    };
    generation_checks(g).into_iter().find(|f| advanced(f))
}

// ---------------------------------------------------------------------------
// The graph, read statically
//
// A configuration has one atomic state per active region. What is read here
// without running the machine is an over-approximation: the atomic states a
// process may reach, the action lists a macrostep may run. It decides only
// where the search looks for a witness, which actions a witness is said to
// have run, and the information findings (a state "no reachable state
// accepts" is claimed only when none of the over-approximated states does).

fn is_external(m: &Machine, event: &str) -> bool {
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
fn landing(m: &Machine, t: &Transition) -> Vec<StateIdx> {
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

fn closure(m: &Machine, start: &[StateIdx], always_only: bool) -> BTreeSet<StateIdx> {
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
fn accepting<'m>(m: &'m Machine, leaf: StateIdx, event: &str) -> Vec<&'m Transition> {
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
struct Config {
    states: Vec<StateIdx>,
    context: Value,
    value: Value,
    done: bool,
}

impl Config {
    fn active(&self, s: StateIdx) -> bool {
        self.states.binary_search(&s).is_ok()
    }
    fn leaves(&self, m: &Machine) -> Vec<StateIdx> {
        self.states.iter().copied().filter(|&s| m.is_atomic(s)).collect()
    }
    /// Does any active state have a transition for `event` (guards aside)?
    fn accepts(&self, m: &Machine, event: &str) -> bool {
        !self.done && self.states.iter().any(|&s| m.states[s].on.iter().any(|(e, _)| e == event))
    }
    /// The active atomic state a transition of `source` is taken from (the
    /// first below it in document order).
    fn leaf_under(&self, m: &Machine, source: StateIdx) -> StateIdx {
        self.states.iter().copied().find(|&s| m.is_atomic(s) && (s == source || m.is_descendant(s, source))).unwrap_or(source)
    }
}

/// Where a new process stands when its first event is judged: its initial
/// step settled (entry actions, eventless transitions, raised and done
/// events), by the interpreter itself.
fn settled_start(m: &Machine) -> Config {
    let init = Event { id: Cow::Borrowed("analysis"), event_type: Cow::Borrowed(INIT_EVENT), payload: Cow::Owned(json!({})) };
    let fallback = || {
        let states = m.initial_config(m.root());
        Config { value: m.value_of_config(&states), states, context: m.initial_context.clone(), done: false }
    };
    let mut run = Run::new(
        m,
        Start {
            config: Vec::new(),
            context: m.initial_context.clone(),
            value: Value::Null,
            history: Map::new(),
            timers: Vec::new(),
            outbox: Vec::new(),
            origin: &init,
            process: "analysis",
            now: START_MS,
            revision: 1,
            done: false,
        },
    );
    match run.start() {
        Ok(()) => Config { states: run.config, context: run.context, value: run.value, done: run.done },
        Err(_) => fallback(),
    }
}

/// The transitions `reduce` selects for `event` in a configuration: in every
/// active region the deepest state with an enabled transition, conflicts
/// removed (SCXML's optimal enabled transition set, as the interpreter takes it).
fn select<'m>(m: &'m Machine, cfg: &Config, event: &Value) -> Vec<&'m Transition> {
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

/// The state whose active descendants a transition exits (`None`: the machine
/// itself is exited, a `reenter` transition of the machine), as `reduce` computes it.
fn domain(m: &Machine, t: &Transition) -> Option<StateIdx> {
    let targets: Vec<StateIdx> = t.targets.iter().map(|&s| domain_target(m, s)).collect();
    let Some((&head, rest)) = targets.split_first() else { return Some(t.source) };
    let inside = |x: StateIdx| x == t.source || m.is_descendant(x, t.source);
    if !t.reenter && targets.iter().all(|&x| inside(x)) {
        return Some(t.source);
    }
    let lca = m.ancestors(head).skip(1).find(|&a| rest.iter().chain([&t.source]).all(|&x| m.is_descendant(x, a)));
    match lca {
        Some(a) => Some(a),
        None if t.reenter => None,
        None => Some(m.root()),
    }
}

fn within(m: &Machine, s: StateIdx, dom: Option<StateIdx>) -> bool {
    dom.is_none_or(|d| m.is_descendant(s, d))
}

/// The active states a transition leaves, innermost first (reverse document order).
fn exit_set(m: &Machine, t: &Transition, config: &[StateIdx]) -> Vec<StateIdx> {
    if t.targets.is_empty() {
        return Vec::new();
    }
    let dom = domain(m, t);
    let mut out: Vec<StateIdx> = config.iter().copied().filter(|&s| within(m, s, dom)).collect();
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
                if m.states[a].kind == Kind::Parallel && (within(m, a, dom) || Some(a) == dom) {
                    for r in m.regions(a).filter(|&r| r != child) {
                        v.extend(m.initial_config(r));
                    }
                }
                child = a;
            }
            v
        };
        for s in from {
            if within(m, s, dom) {
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
fn macrostep_owners(m: &Machine, t: &Transition, before: &[StateIdx], after: &[StateIdx]) -> Vec<Owner> {
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
enum Owner {
    Transition(String),
    Entry(StateIdx),
    Exit(StateIdx),
}

/// An assign that accumulates, or an effect: the actions findings point at.
struct AccSite {
    field: String,
    path: String,
    owner: Owner,
    state: StateIdx,
    guarded_by: Option<String>,
}

struct EffectSite {
    effect_type: String,
    path: String,
    owner: Owner,
    state: StateIdx,
    idempotent: bool,
    custom_key: Option<Value>,
}

fn action_lists(m: &Machine) -> Vec<(&[Action], Owner, StateIdx, Option<&Transition>)> {
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

fn sites(m: &Machine) -> (Vec<AccSite>, Vec<EffectSite>) {
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
                Action::Respond(_) | Action::Raise(_) => {}
            }
        }
    }
    (acc, eff)
}

// ---------------------------------------------------------------------------
// Payloads: a few values per field, from what the expressions compare them with

#[derive(Debug, Default, Clone)]
struct FieldSpec {
    numeric: bool,
    consts: Vec<Value>,
    peers: Vec<String>,
    member_of: Vec<String>,
}

const NUMERIC_OPS: &[&str] = &["+", "-", "*", "/", "%", "<", ">", "<=", ">=", "min", "max"];
const COMPARE_OPS: &[&str] = &["==", "===", "!=", "!==", "<", ">", "<=", ">="];

fn payload_field(v: &Value) -> Option<String> {
    var_path(v).and_then(|p| p.strip_prefix("event.payload.")).map(str::to_string)
}

fn collect_specs(v: &Value, specs: &mut BTreeMap<String, FieldSpec>) {
    if let Some(f) = payload_field(v) {
        specs.entry(f).or_default();
        return;
    }
    if let Some((name, args)) = op(v) {
        if NUMERIC_OPS.contains(&name) {
            for a in &args {
                if let Some(f) = payload_field(a) {
                    specs.entry(f).or_default().numeric = true;
                }
            }
        }
        if COMPARE_OPS.contains(&name) && args.len() >= 2 {
            for (a, b) in [(args[0], args[1]), (args[1], args[0])] {
                let Some(f) = payload_field(a) else { continue };
                let spec = specs.entry(f).or_default();
                if let Some(c) = var_path(b).and_then(|p| p.strip_prefix("context.")) {
                    spec.peers.push(c.to_string());
                } else if !b.is_object() && !b.is_array() && !spec.consts.contains(b) {
                    spec.consts.push(b.clone());
                }
            }
        }
        if name == "in" && args.len() == 2 {
            if let (Some(f), Some(s)) = (payload_field(args[0]), var_path(args[1]).and_then(|p| p.strip_prefix("context."))) {
                specs.entry(f).or_default().member_of.push(s.to_string());
            }
        }
        for a in args {
            collect_specs(a, specs);
        }
        return;
    }
    match v {
        Value::Array(a) => a.iter().for_each(|x| collect_specs(x, specs)),
        Value::Object(o) => o.values().for_each(|x| collect_specs(x, specs)),
        _ => {}
    }
}

fn expressions_of(m: &Machine, actions: &[Action], out: &mut Vec<Value>) {
    for a in actions {
        match a {
            Action::Assign(fields) => out.extend(fields.iter().map(|(_, e)| m.exprs.source(*e).clone())),
            Action::Respond(e) => out.push(m.exprs.source(*e).clone()),
            Action::Raise(r) => out.extend(r.payload.iter().map(|e| m.exprs.source(*e).clone())),
            Action::Effect(d) => {
                out.extend(d.payload.iter().chain(d.key.iter()).map(|e| m.exprs.source(*e).clone()));
            }
        }
    }
}

fn payload_specs(m: &Machine) -> BTreeMap<String, BTreeMap<String, FieldSpec>> {
    // Expressions any event can reach: entry/exit actions and eventless transitions.
    let mut shared = Vec::new();
    for s in &m.states {
        expressions_of(m, &s.entry, &mut shared);
        expressions_of(m, &s.exit, &mut shared);
        for t in s.always.iter().chain(s.after.iter().flat_map(|(_, ts)| ts.iter())) {
            shared.extend(t.guard.map(|g| m.exprs.source(g).clone()));
            expressions_of(m, &t.actions, &mut shared);
        }
    }
    let mut out = BTreeMap::new();
    for e in &m.event_types {
        let mut exprs = shared.clone();
        for s in &m.states {
            for (ev, ts) in &s.on {
                if ev == e {
                    for t in ts {
                        exprs.extend(t.guard.map(|g| m.exprs.source(g).clone()));
                        expressions_of(m, &t.actions, &mut exprs);
                    }
                }
            }
        }
        let mut specs = BTreeMap::new();
        for x in &exprs {
            collect_specs(x, &mut specs);
        }
        // What the event's payload schema requires, and the numbers it declares.
        if let Some(schema) = m.schemas.get(e) {
            for f in crate::schema::required_fields(schema) {
                specs.entry(f).or_default();
            }
            for f in crate::schema::numeric_fields(schema) {
                specs.entry(f).or_default().numeric = true;
            }
        }
        // A field read as `event.payload.a.b` also makes `a` appear; keep the leaves.
        let keys: Vec<String> = specs.keys().cloned().collect();
        for k in &keys {
            if keys.iter().any(|o| o.starts_with(&format!("{k}."))) {
                specs.remove(k);
            }
        }
        out.insert(e.clone(), specs);
    }
    out
}

fn get_path<'a>(v: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted.split('.').try_fold(v, |cur, k| match cur {
        Value::Object(o) => o.get(k),
        Value::Array(a) => k.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

fn set_path(v: &mut Value, dotted: &str, x: Value) {
    let parts: Vec<&str> = dotted.split('.').collect();
    let mut cur = v;
    for (i, p) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let o = cur.as_object_mut().expect("made an object");
        if i + 1 == parts.len() {
            o.insert(p.to_string(), x);
            return;
        }
        cur = o.entry(p.to_string()).or_insert_with(|| Value::Object(Map::new()));
    }
}

fn generic(spec: &FieldSpec, variant: usize) -> Value {
    if let Some(Value::Bool(b)) = spec.consts.first() {
        return Value::Bool(!b);
    }
    if spec.numeric {
        json!([40, 60, 100][variant % 3])
    } else {
        json!(["a1", "b2", "c3"][variant % 3])
    }
}

/// A few payloads for one event type in one context.
fn payloads(specs: &BTreeMap<String, FieldSpec>, context: &Value) -> Vec<Value> {
    if specs.is_empty() {
        return vec![json!({})];
    }
    let mut out: Vec<Value> = Vec::new();
    for variant in 0..4 {
        let mut p = json!({});
        for (f, spec) in specs {
            let peer = spec.peers.iter().find_map(|c| get_path(context, c)).filter(|v| !v.is_null()).cloned();
            let member =
                spec.member_of.iter().find_map(|s| get_path(context, s).and_then(Value::as_array).and_then(|a| a.first())).cloned();
            let v = match variant {
                0 => peer.or_else(|| spec.consts.first().cloned()).unwrap_or_else(|| generic(spec, 0)),
                1 => peer.or_else(|| spec.consts.get(1).cloned()).unwrap_or_else(|| generic(spec, 1)),
                2 => generic(spec, 2),
                _ => match member {
                    Some(m) => m,
                    None => continue,
                },
            };
            set_path(&mut p, f, v);
        }
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 60 {
        let mut cut = 57;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}...", &s[..cut])
    } else {
        s
    }
}

// ---------------------------------------------------------------------------
// The search

/// Time between steps of a witness (ms).
const STEP_MS: u64 = 1_000;
/// Host time of the first step.
const START_MS: u64 = 1_000_000;

#[derive(Clone)]
struct Node {
    snap: Option<String>,
    now: u64,
    steps: Vec<Step>,
}

struct Move {
    steps: Vec<Step>,
    snap: String,
    outcome: Outcome,
    /// The external event this move delivered, if it is one.
    event: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum RepeatKind {
    Immediate,
    Cycle,
}

struct Candidate {
    kind: RepeatKind,
    event: String,
    t1: Option<String>,
    /// Every transition the original took (one per region that moved).
    originals: Vec<String>,
    t2: String,
    reenter: bool,
    /// The active atomic state the repeat was taken from (below `t2`'s source).
    leaf: StateIdx,
    witness: Witness,
    /// Effects the original application emitted (type, key).
    original_effects: Vec<(String, String)>,
    cycle: Vec<String>,
    footprint: Vec<Owner>,
}

#[derive(Default)]
struct Taken {
    checks: usize,
    cycle_checked: bool,
    repeat_applied_harmless: bool,
}

struct Search<'m> {
    m: &'m Machine,
    b: Bounds,
    specs: BTreeMap<String, BTreeMap<String, FieldSpec>>,
    handled: BTreeSet<String>,
    raised: BTreeSet<String>,
    ids: usize,
    reduces: usize,
    candidates: Vec<Candidate>,
    taken: HashMap<String, Taken>,
    seen_candidates: HashSet<(RepeatKind, Option<String>, String, Mode)>,
    /// Where a new process stands when its first event is judged.
    start: Config,
    /// Context fields each action list assigns, and effect types it emits.
    assigns: Vec<(Owner, String)>,
    emits: Vec<(Owner, String)>,
}

/// One transition a repeat took: the leaf it was taken from and the action
/// lists its macrostep may have run.
struct Repeated<'m> {
    t: &'m Transition,
    leaf: StateIdx,
    owners: Vec<Owner>,
}

impl<'m> Search<'m> {
    fn new(m: &'m Machine, b: Bounds) -> Self {
        let mut handled = BTreeSet::new();
        for s in &m.states {
            for (e, _) in &s.on {
                for suffix in [".succeeded", ".failed"] {
                    if let Some(t) = e.strip_suffix(suffix) {
                        handled.insert(t.to_string());
                    }
                }
            }
        }
        // `<effect>.succeeded` / `<effect>.failed` are raised by the outbox with
        // ids the engine chooses; the search reaches them by completing effects.
        let mut raised = BTreeSet::new();
        for e in sites(m).1 {
            raised.insert(format!("{}.succeeded", e.effect_type));
            raised.insert(format!("{}.failed", e.effect_type));
        }
        // Raised events and done events belong to the macrostep that raises
        // them (the external event's id covers them): the search follows them
        // through `reduce` and never sends them from outside.
        let mut assigns = Vec::new();
        let mut emits = Vec::new();
        for (actions, owner, ..) in action_lists(m) {
            for a in actions {
                match a {
                    Action::Raise(r) => {
                        raised.insert(r.event_type.clone());
                    }
                    Action::Assign(fields) => assigns.extend(fields.iter().map(|(f, _)| (owner.clone(), f.clone()))),
                    Action::Effect(d) => emits.push((owner.clone(), d.effect_type.clone())),
                    Action::Respond(_) => {}
                }
            }
        }
        for e in m.event_types.iter() {
            if e.starts_with(DONE_EVENT_PREFIX) {
                raised.insert(e.clone());
            }
        }
        Search {
            m,
            b,
            specs: payload_specs(m),
            handled,
            raised,
            ids: 0,
            reduces: 0,
            candidates: Vec::new(),
            taken: HashMap::new(),
            seen_candidates: HashSet::new(),
            start: settled_start(m),
            assigns,
            emits,
        }
    }

    fn fresh_id(&mut self) -> String {
        self.ids += 1;
        format!("evt-{}", self.ids)
    }

    fn reduce(&mut self, snap: Option<&str>, event: &Value, now: u64) -> Option<Outcome> {
        if self.reduces >= self.b.reduces {
            return None;
        }
        self.reduces += 1;
        Some(self.m.reduce(snap, event, now))
    }

    /// Apply steps in order; `Some` only when every one is applied.
    fn apply(&mut self, snap: Option<&str>, steps: &[Step]) -> Option<(String, Outcome)> {
        let mut cur = snap.map(str::to_string);
        let mut last = None;
        for s in steps {
            let o = self.reduce(cur.as_deref(), &s.event, s.now)?;
            if o.status != Status::Applied {
                return None;
            }
            cur = o.snapshot.clone();
            last = Some(o);
        }
        Some((cur?, last?))
    }

    fn loaded(&self, snap: Option<&str>) -> Option<snapshot::Loaded> {
        snapshot::load(self.m, snap?).ok()
    }

    /// The configuration of a node (a new process: its initial step settled).
    fn config(&self, snap: Option<&str>) -> Config {
        match self.loaded(snap) {
            Some(l) => Config { states: l.config, context: l.snap.context, value: l.snap.value, done: l.snap.done },
            None => self.start.clone(),
        }
    }

    fn node_key(&self, snap: &str) -> String {
        match self.loaded(Some(snap)) {
            Some(l) => {
                let timers: Vec<(String, u64)> = l.snap.timers.iter().map(|t| (t.state.clone(), t.delay)).collect();
                let outbox: Vec<(String, &str)> =
                    l.snap.outbox.iter().filter(|e| !e.state.is_done()).map(|e| (e.effect_type.clone(), e.state.as_str())).collect();
                json!([l.snap.value, l.snap.context, timers, outbox, l.snap.done, l.snap.history]).to_string()
            }
            None => snap.to_string(),
        }
    }

    /// What can happen next in a node: external events (a few payloads each),
    /// due timers, and the completion of pending effects the machine listens to.
    fn moves(&mut self, node: &Node, skip_type: Option<&str>) -> Vec<Move> {
        let mut out = Vec::new();
        let context = self.config(node.snap.as_deref()).context;
        let types: Vec<String> =
            self.m.event_types.iter().filter(|t| Some(t.as_str()) != skip_type && !self.raised.contains(*t)).cloned().collect();
        for ty in types {
            let variants = payloads(self.specs.get(&ty).unwrap_or(&BTreeMap::new()), &context);
            for payload in variants {
                let id = self.fresh_id();
                let event = json!({ "id": id, "type": ty, "payload": payload });
                let step = Step { event: event.clone(), now: node.now.saturating_add(STEP_MS), role: "prefix" };
                if let Some((snap, outcome)) = self.apply(node.snap.as_deref(), std::slice::from_ref(&step)) {
                    out.push(Move { steps: vec![step], snap, outcome, event: Some(event) });
                }
            }
        }
        let Some(l) = self.loaded(node.snap.as_deref()) else { return out };
        for t in &l.snap.timers {
            let step = Step {
                event: json!({ "id": t.id, "type": TIMER_EVENT, "payload": {} }),
                now: t.due_at.max(node.now.saturating_add(STEP_MS)),
                role: "timer",
            };
            if let Some((snap, outcome)) = self.apply(node.snap.as_deref(), std::slice::from_ref(&step)) {
                out.push(Move { steps: vec![step], snap, outcome, event: None });
            }
        }
        for e in &l.snap.outbox {
            if e.state != EffectState::Pending || !self.handled.contains(&e.effect_type) {
                continue;
            }
            let n = e.attempts + 1;
            let at = e.due_at.unwrap_or(node.now).max(node.now.saturating_add(STEP_MS));
            let started = Step {
                event: json!({ "id": format!("{}#{n}:started", e.key), "type": outbox::STARTED, "payload": { "key": e.key, "attempt": n } }),
                now: at,
                role: "effect",
            };
            let results = [
                json!({ "id": format!("{}#{n}:result", e.key), "type": outbox::SUCCEEDED, "payload": { "key": e.key, "attempt": n, "result": {} } }),
                json!({ "id": format!("{}#{n}:result", e.key), "type": outbox::FAILED, "payload": { "key": e.key, "attempt": n, "retryable": false, "error": "declined" } }),
            ];
            for r in results {
                let steps = vec![started.clone(), Step { event: r, now: at.saturating_add(1), role: "effect" }];
                if let Some((snap, outcome)) = self.apply(node.snap.as_deref(), &steps) {
                    out.push(Move { steps, snap, outcome, event: None });
                }
            }
        }
        out
    }

    fn run(&mut self) {
        let mut queue = VecDeque::new();
        let mut seen = HashSet::new();
        queue.push_back((Node { snap: None, now: START_MS, steps: Vec::new() }, 0usize));
        while let Some((node, depth)) = queue.pop_front() {
            if self.reduces >= self.b.reduces {
                break;
            }
            for mv in self.moves(&node, None) {
                if let Some(ev) = &mv.event {
                    self.check(&node, &mv, ev);
                }
                let key = self.node_key(&mv.snap);
                if depth < self.b.depth && seen.len() < self.b.nodes && seen.insert(key) {
                    let mut steps = node.steps.clone();
                    steps.extend(mv.steps.iter().cloned());
                    let now = steps.last().map(|s| s.now).unwrap_or(node.now);
                    queue.push_back((Node { snap: Some(mv.snap), now, steps }, depth + 1));
                }
            }
        }
    }

    /// Repeat the event a move just applied: late and with a fresh id right
    /// away, then late after a cycle of other events.
    fn check(&mut self, node: &Node, mv: &Move, ev: &Value) {
        let m = self.m;
        let ty = ev["type"].as_str().unwrap_or_default().to_string();
        let cfg0 = self.config(node.snap.as_deref());
        let t1s: Vec<&'m Transition> = select(m, &cfg0, ev);
        let tkey = match t1s.as_slice() {
            [] => format!("(initial) {ty}"),
            ts => ts.iter().map(|t| t.json_path.as_str()).collect::<Vec<_>>().join(" + "),
        };
        {
            let taken = self.taken.entry(tkey.clone()).or_default();
            if taken.checks >= 3 {
                return;
            }
            taken.checks += 1;
        }
        let original_now = mv.steps.last().map(|s| s.now).unwrap_or(node.now);
        let window = m.retention_for(&ty);
        let mut prefix = node.steps.clone();
        let mut orig = mv.steps[0].clone();
        orig.role = "original";
        prefix.push(orig);
        let original = prefix.len() - 1;
        let original_effects: Vec<(String, String)> = mv.outcome.effects.iter().map(|e| (e.effect_type.clone(), e.key.clone())).collect();

        let mut found = false;
        let fresh = format!("{}-again", ev["id"].as_str().unwrap_or("evt"));
        let repeats = [
            (Mode::LateDuplicate, ev.clone(), original_now.saturating_add(window).saturating_add(1)),
            (Mode::FreshId, json!({ "id": fresh, "type": ty, "payload": ev["payload"] }), original_now.saturating_add(STEP_MS)),
        ];
        for (mode, dup, now) in repeats {
            match self.repeat(&mv.snap, &dup, now) {
                Some((shows, reps)) if shows.is_doubling() || shows.moved_to.is_some() => {
                    let mut steps = prefix.clone();
                    steps.push(Step { event: dup, now, role: "duplicate" });
                    let duplicate = steps.len() - 1;
                    for r in reps {
                        self.candidate(Candidate {
                            kind: RepeatKind::Immediate,
                            event: ty.clone(),
                            t1: related(m, &t1s, r.t),
                            originals: t1s.iter().map(|t| t.json_path.clone()).collect(),
                            t2: r.t.json_path.clone(),
                            reenter: r.t.reenter,
                            leaf: r.leaf,
                            witness: Witness { mode, steps: steps.clone(), original, duplicate, shows: shows.clone() },
                            original_effects: original_effects.clone(),
                            cycle: Vec::new(),
                            footprint: r.owners,
                        });
                    }
                    found = true;
                }
                Some(_) => {
                    self.taken.entry(tkey.clone()).or_default().repeat_applied_harmless = true;
                    for t in &t1s {
                        self.taken.entry(t.json_path.clone()).or_default().repeat_applied_harmless = true;
                    }
                }
                None => {}
            }
        }
        if found {
            return;
        }
        // A cycle: can the event become legal again after other events?
        let cfg1 = self.config(Some(&mv.snap));
        if cfg1.done {
            return;
        }
        let later = closure(m, &cfg1.leaves(m), false);
        if !later.iter().any(|&l| !accepting(m, l, &ty).is_empty()) {
            return;
        }
        if std::mem::replace(&mut self.taken.entry(tkey).or_default().cycle_checked, true) {
            return;
        }
        self.find_cycle(prefix, original, original_now, window, mv, ev, &t1s, original_effects);
    }

    #[allow(clippy::too_many_arguments)]
    fn find_cycle(
        &mut self,
        prefix: Vec<Step>,
        original: usize,
        original_now: u64,
        window: u64,
        mv: &Move,
        ev: &Value,
        t1s: &[&'m Transition],
        original_effects: Vec<(String, String)>,
    ) {
        let m = self.m;
        let ty = ev["type"].as_str().unwrap_or_default().to_string();
        let start = Node { snap: Some(mv.snap.clone()), now: original_now, steps: Vec::new() };
        let mut queue = VecDeque::from([(start, 0usize)]);
        let mut seen = HashSet::from([self.node_key(&mv.snap)]);
        while let Some((node, depth)) = queue.pop_front() {
            if depth >= self.b.cycle_depth || self.reduces >= self.b.reduces {
                continue;
            }
            for sub in self.moves(&node, Some(&ty)) {
                let mut steps = node.steps.clone();
                steps.extend(sub.steps.iter().cloned().map(|mut s| {
                    if s.role == "prefix" {
                        s.role = "cycle";
                    }
                    s
                }));
                let now_k = steps.last().map(|s| s.now).unwrap_or(node.now);
                if self.config(Some(&sub.snap)).accepts(m, &ty) {
                    let at = now_k.saturating_add(STEP_MS).max(original_now.saturating_add(window).saturating_add(1));
                    if let Some((shows, reps)) = self.repeat(&sub.snap, ev, at) {
                        if shows.is_doubling() || shows.moved_to.is_some() {
                            let cycle = self.describe_cycle(&mv.snap, &steps);
                            let mut all = prefix.clone();
                            all.extend(steps.iter().cloned());
                            all.push(Step { event: ev.clone(), now: at, role: "duplicate" });
                            let duplicate = all.len() - 1;
                            for r in reps {
                                self.candidate(Candidate {
                                    kind: RepeatKind::Cycle,
                                    event: ty.clone(),
                                    t1: related(m, t1s, r.t),
                                    originals: t1s.iter().map(|t| t.json_path.clone()).collect(),
                                    t2: r.t.json_path.clone(),
                                    reenter: r.t.reenter,
                                    leaf: r.leaf,
                                    witness: Witness { mode: Mode::LateDuplicate, steps: all.clone(), original, duplicate, shows: shows.clone() },
                                    original_effects: original_effects.clone(),
                                    cycle: cycle.clone(),
                                    footprint: r.owners,
                                });
                            }
                            return;
                        }
                    }
                }
                if seen.len() < self.b.cycle_nodes && seen.insert(self.node_key(&sub.snap)) {
                    queue.push_back((Node { snap: Some(sub.snap), now: now_k, steps }, depth + 1));
                }
            }
        }
    }

    /// `state --EVENT--> state` for each step of a cycle.
    fn describe_cycle(&mut self, from: &str, steps: &[Step]) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = from.to_string();
        for s in steps {
            let before = self.config(Some(&cur)).value;
            let Some(o) = self.reduce(Some(&cur), &s.event, s.now) else { break };
            let Some(next) = o.snapshot else { break };
            let after = self.config(Some(&next)).value;
            let ty = s.event["type"].as_str().unwrap_or("");
            if ty != outbox::STARTED {
                let label = match ty {
                    t if t == TIMER_EVENT => "after".to_string(),
                    t if t.starts_with(EFFECT_REPORT_PREFIX) => t.trim_start_matches(EFFECT_REPORT_PREFIX).to_string(),
                    t => t.to_string(),
                };
                out.push(format!("{} --{}--> {}", Machine::value_path(&before), label, Machine::value_path(&after)));
            }
            cur = next;
        }
        out
    }

    /// Deliver a repeat to a snapshot; when applied, what it changed, and the
    /// transitions it took that account for it (in a parallel state, the
    /// regions whose transitions assign a changed field, emit a shown effect
    /// or move; all of them when none can be told apart).
    fn repeat(&mut self, snap: &str, dup: &Value, now: u64) -> Option<(Shows, Vec<Repeated<'m>>)> {
        let m = self.m;
        let before = self.config(Some(snap));
        let t2s = select(m, &before, dup);
        if t2s.is_empty() {
            return None;
        }
        let o = self.reduce(Some(snap), dup, now)?;
        if o.status != Status::Applied {
            return None;
        }
        let after = self.config(o.snapshot.as_deref());
        let mut changes = Vec::new();
        let empty = Map::new();
        let ctx_before = before.context.as_object().unwrap_or(&empty);
        let ctx_after = after.context.as_object().unwrap_or(&empty);
        let keys: BTreeSet<&String> = ctx_before.keys().chain(ctx_after.keys()).collect();
        for k in keys {
            let b = ctx_before.get(k).cloned().unwrap_or(Value::Null);
            let a = ctx_after.get(k).cloned().unwrap_or(Value::Null);
            if a != b {
                changes.push(Change { field: k.clone(), before: b, after: a });
            }
        }
        let effects: Vec<ShownEffect> = o
            .effects
            .iter()
            .map(|e| ShownEffect { effect_type: e.effect_type.clone(), key: e.key.clone(), idempotent: e.idempotent })
            .collect();
        let moved_to = (after.value != before.value).then(|| after.value.clone());
        let shows = Shows { changes, effects, moved_to };
        let mut reps: Vec<Repeated<'m>> = t2s
            .iter()
            .map(|&t| Repeated { t, leaf: before.leaf_under(m, t.source), owners: macrostep_owners(m, t, &before.states, &after.states) })
            .collect();
        if reps.len() > 1 {
            let explains = |r: &Repeated| {
                let dom = domain(m, r.t);
                let inside = |c: &Config| c.states.iter().copied().filter(|&s| within(m, s, dom)).collect::<Vec<_>>();
                r.owners.iter().any(|o| {
                    self.assigns.iter().any(|(ow, f)| ow == o && shows.changes.iter().any(|c| c.field == *f))
                        || self.emits.iter().any(|(ow, t)| ow == o && shows.effects.iter().any(|e| e.effect_type == *t))
                }) || (!r.t.targets.is_empty() && inside(&before) != inside(&after))
            };
            if reps.iter().any(explains) {
                reps.retain(explains);
            }
        }
        Some((shows, reps))
    }

    fn candidate(&mut self, c: Candidate) {
        let key = (c.kind, c.t1.clone(), c.t2.clone(), c.witness.mode);
        if self.seen_candidates.insert(key) {
            self.candidates.push(c);
        }
    }

    // -----------------------------------------------------------------------
    // From candidates to findings

    fn findings(&self) -> Vec<Finding> {
        let m = self.m;
        let mut out = Vec::new();
        let mut hazard_t1: HashSet<Option<String>> = HashSet::new();

        // Transition findings: one per (kind, first transition, repeat transition),
        // keeping the witness that shows the most.
        let mut best: BTreeMap<(u8, Option<String>, String), &Candidate> = BTreeMap::new();
        for c in &self.candidates {
            let k = (if c.kind == RepeatKind::Immediate { 0 } else { 1 }, c.t1.clone(), c.t2.clone());
            let better = match best.get(&k) {
                None => true,
                Some(b) => {
                    let (cw, bw) = (c.witness.shows.weight(), b.witness.shows.weight());
                    cw > bw || (cw == bw && c.witness.mode == Mode::LateDuplicate && b.witness.mode != Mode::LateDuplicate)
                }
            };
            if better {
                best.insert(k, c);
            }
        }
        let known: HashSet<(u8, String)> = best.keys().filter(|(_, t1, _)| t1.is_some()).map(|(k, _, t2)| (*k, t2.clone())).collect();
        best.retain(|(k, t1, t2), _| t1.is_some() || !known.contains(&(*k, t2.clone())));
        for c in best.values() {
            hazard_t1.insert(c.t1.clone());
            out.push(self.transition_finding(c));
        }

        // Action findings. An accumulating field doubled by a repeat is reported
        // once per repeat, at the sites that repeat ran; sites no repeat reaches
        // are reported once per field as information.
        let (acc, eff) = sites(m);
        let mut fields: Vec<&str> = acc.iter().map(|s| s.field.as_str()).collect();
        fields.sort();
        fields.dedup();
        for field in fields {
            let here: Vec<&AccSite> = acc.iter().filter(|s| s.field == field).collect();
            let mut covered: Vec<&str> = Vec::new();
            for c in best.values() {
                if !c.witness.shows.changes.iter().any(|ch| ch.field == field) {
                    continue;
                }
                // In the order the repeat ran them; unguarded sites first.
                let mut ran: Vec<&AccSite> = c.footprint.iter().flat_map(|o| here.iter().copied().filter(move |s| &s.owner == o)).collect();
                ran.sort_by_key(|s| s.guarded_by.is_some());
                let Some(first) = ran.first() else { continue };
                covered.extend(ran.iter().map(|s| s.path.as_str()));
                let also: Vec<&str> = ran[1..].iter().map(|s| s.path.as_str()).collect();
                out.push(Finding {
                    code: "accumulating_assign".into(),
                    severity: kind_severity(c.kind),
                    state: m.states[first.state].path.clone(),
                    event: Some(c.event.clone()),
                    transitions: chain(&c.t1, &c.t2),
                    site: Some(first.path.clone()),
                    message: format!(
                        "context.{field} is computed from its own previous value with no guard checking an identified set: a counter \
                         cannot tell whether it already counted this event{also}. {how}, and {shows}",
                        also = if also.is_empty() { String::new() } else { format!(" (the repeat also runs {})", also.join(", ")) },
                        how = mode_text(c, m),
                        shows = c.witness.shows.summary()
                    ),
                    fix: format!(
                        "Record identified facts instead of a running total: keep the ids in a set and guard the transition with \
                         {{\"!\": {{\"in\": [{{\"var\": \"event.payload.<id>\"}}, {{\"var\": \"context.<seen>\"}}]}}}}, appending the id with \
                         `merge` in the same assign; then adding to {field} only happens for a new id."
                    ),
                    retention_ms: Some(m.retention_for(&c.event)),
                    cycle: Vec::new(),
                    witness: Some(c.witness.clone()),
                });
            }
            let latent: Vec<&&AccSite> = here.iter().filter(|s| s.guarded_by.is_none() && !covered.contains(&s.path.as_str())).collect();
            if let Some(first) = latent.first() {
                let paths: Vec<&str> = latent.iter().map(|s| s.path.as_str()).collect();
                out.push(Finding {
                    code: "accumulating_assign".into(),
                    severity: Severity::Info,
                    state: m.states[first.state].path.clone(),
                    event: None,
                    transitions: owner_path(&first.owner).into_iter().collect(),
                    site: Some(first.path.clone()),
                    message: format!(
                        "context.{field} accumulates from its previous value without an identified-set guard ({}); no repeat within the \
                         search bounds reaches {}, so the topology protects it today, but it doubles the day its event becomes legal again",
                        paths.join(", "),
                        if paths.len() > 1 { "them" } else { "it" }
                    ),
                    fix: "Prefer a set of identified facts (ids) over a running total, guarded by `!in`.".into(),
                    retention_ms: None,
                    cycle: Vec::new(),
                    witness: None,
                });
            }
        }
        for s in &eff {
            let emitted =
                |c: &Candidate| c.footprint.contains(&s.owner) && c.witness.shows.effects.iter().any(|e| e.effect_type == s.effect_type);
            if !s.idempotent {
                let hit = self.best_candidate(emitted, &s.owner);
                out.push(match hit {
                    Some(c) => Finding {
                        code: "unverified_effect".into(),
                        severity: kind_severity(c.kind),
                        state: m.states[s.state].path.clone(),
                        event: Some(c.event.clone()),
                        transitions: chain(&c.t1, &c.t2),
                        site: Some(s.path.clone()),
                        message: format!(
                            "effect `{}` is declared idempotent: false, and a repeat emits it again. The provider cannot recognise the \
                             second emission, and the outbox's verify step only settles the unknown outcome of one emission, so the \
                             operation happens twice. {}, and {}",
                            s.effect_type,
                            mode_text(c, m),
                            c.witness.shows.summary()
                        ),
                        fix:
                            "Make the emitting transition refuse its repeat (an identified-set guard, or a target that does not accept the \
                              event), or use a provider operation that honours an idempotency key derived from a business id."
                                .into(),
                        retention_ms: Some(m.retention_for(&c.event)),
                        cycle: Vec::new(),
                        witness: Some(c.witness.clone()),
                    },
                    None => Finding {
                        code: "unverified_effect".into(),
                        severity: Severity::Info,
                        state: m.states[s.state].path.clone(),
                        event: None,
                        transitions: owner_path(&s.owner).into_iter().collect(),
                        site: Some(s.path.clone()),
                        message: format!(
                            "effect `{t}` is not idempotent: after an unknown outcome the outbox asks the host's verifier for `{t}` before \
                             any new attempt, and no repeat within the search bounds emits it twice",
                            t = s.effect_type
                        ),
                        fix: format!(
                            "Register a verifier for `{}` in the host (it answers whether the operation with this key exists).",
                            s.effect_type
                        ),
                        retention_ms: None,
                        cycle: Vec::new(),
                        witness: None,
                    },
                });
            }
            if let Some(k) = &s.custom_key {
                // Same event, a different key: the provider cannot recognise it.
                let unstable = |c: &Candidate| {
                    if !c.footprint.contains(&s.owner) {
                        return false;
                    }
                    let same_event = c.witness.mode == Mode::LateDuplicate || !reads(k, "event.id");
                    same_event
                        && c.witness.shows.effects.iter().any(|e| {
                            e.effect_type == s.effect_type && c.original_effects.iter().any(|(t, key)| *t == s.effect_type && *key != e.key)
                        })
                };
                if let Some(c) = self.best_candidate(unstable, &s.owner) {
                    let keys: Vec<&str> = c.original_effects.iter().filter(|(t, _)| *t == s.effect_type).map(|(_, k)| k.as_str()).collect();
                    let new: Vec<&str> =
                        c.witness.shows.effects.iter().filter(|e| e.effect_type == s.effect_type).map(|e| e.key.as_str()).collect();
                    out.push(Finding {
                        code: "unstable_effect_key".into(),
                        severity: kind_severity(c.kind),
                        state: m.states[s.state].path.clone(),
                        event: Some(c.event.clone()),
                        transitions: chain(&c.t1, &c.t2),
                        site: Some(format!("{}.key", s.path)),
                        message: format!(
                            "the key of effect `{}` ({}) changes between deliveries of the same event: the original emitted key {:?}, the \
                             repeat emits {:?}, so neither the outbox nor the provider can tell it is the same operation. {}",
                            s.effect_type,
                            short(k),
                            keys,
                            new,
                            mode_text(c, m)
                        ),
                        fix: "Derive the key from the event's identity ({\"cat\": [\"<type>-\", {\"var\": \"event.id\"}]}) or from a business id \
                              in the payload, never from context that changes."
                            .into(),
                        retention_ms: Some(m.retention_for(&c.event)),
                        cycle: Vec::new(),
                        witness: Some(c.witness.clone()),
                    });
                }
            }
        }

        // Information: every external transition not already shown hazardous.
        for s in &m.states {
            for (ev, ts) in &s.on {
                if !is_external(m, ev) || self.raised.contains(ev) {
                    continue;
                }
                for t in ts {
                    if hazard_t1.contains(&Some(t.json_path.clone())) {
                        continue;
                    }
                    out.push(self.info_finding(t, ev));
                }
            }
        }
        out
    }

    fn best_candidate(&self, pred: impl Fn(&Candidate) -> bool, owner: &Owner) -> Option<&Candidate> {
        let matching: Vec<&Candidate> = self.candidates.iter().filter(|c| pred(c)).collect();
        let rank = |c: &&Candidate| (c.kind != RepeatKind::Immediate, !c.footprint.contains(owner), c.witness.steps.len());
        matching.into_iter().min_by_key(rank)
    }

    fn transition_finding(&self, c: &Candidate) -> Finding {
        let m = self.m;
        let window = m.retention_for(&c.event);
        let shows = &c.witness.shows;
        let doubling = shows.is_doubling();
        let leaf = &m.states[c.leaf].path;
        let t2 = find_transition(m, &c.t2);
        let t2_source = t2.map(|t| m.states[t.source].path.clone()).unwrap_or_default();
        let t2_target_is_source = t2.is_some_and(|t| t.target().is_some_and(|tg| tg == t.source || m.is_descendant(tg, t.source)));
        let reenter = c.reenter && t2_target_is_source;
        let how = mode_text(c, m);
        let mut transitions = chain(&c.t1, &c.t2);
        if c.kind == RepeatKind::Cycle {
            let code = "cycle_reaccept";
            return Finding {
                code: code.into(),
                severity: Severity::Warning,
                state: leaf.clone(),
                event: Some(c.event.clone()),
                transitions,
                site: None,
                message: format!(
                    "after the cycle {} the process is back in `{leaf}`, where {ev} is legal again. The ledger remembers {ev} ids for {window} ms \
                     (retention{per}), so inside that window a repeat is a duplicate; a duplicate older than that is applied as new. {how}, and {}",
                    c.cycle.join(", "),
                    shows.summary(),
                    ev = c.event,
                    per = if m.retention.per_type.contains_key(&c.event) { format!(".perType.{}", c.event) } else { ".defaultMs".into() },
                ),
                fix: format!(
                    "Make each round identifiable: carry a round (generation) number in the event and guard {ev} with \
                     {{\"==\": [{{\"var\": \"event.payload.round\"}}, {{\"var\": \"context.round\"}}]}}, advancing context.round when the cycle \
                     closes; or keep {ev} ids longer than the longest time a sender may still redeliver (retention.perType.{ev}).",
                    ev = c.event
                ),
                retention_ms: Some(window),
                cycle: c.cycle.clone(),
                witness: Some(c.witness.clone()),
            };
        }
        let code = if reenter { "reenter_reruns" } else { "reaccept" };
        let severity = if doubling { Severity::Error } else { Severity::Warning };
        let t1 = c.t1.as_deref().and_then(|p| find_transition(m, p));
        let orig_target = t1.and_then(|t| t.target());
        let landed = orig_target.map(|tg| m.initial_leaf(tg));
        let history = t1.and_then(|t| t.targets.iter().copied().find(|&h| m.states[h].kind == Kind::History));
        // Another region that the original moved on, while this one stays.
        let regions = t2.and_then(|b| {
            c.originals.iter().filter(|p| **p != c.t2).filter_map(|p| find_transition(m, p)).find_map(|a| {
                let moved = !a.targets.is_empty();
                other_regions(m, a.source, b.source).filter(|_| moved).map(|r| (r, a.json_path.clone()))
            })
        });
        let where_ = if reenter {
            format!("`{}` re-enters `{t2_source}` (reenter: true), re-running its exit and entry actions", c.t2)
        } else if let Some(((moved, stayed), by)) = regions {
            format!(
                "the original {ev} moved region `{}` on (`{by}`), but region `{}` stays in `{leaf}` and accepts {ev} again",
                m.states[moved].path,
                m.states[stayed].path,
                ev = c.event
            )
        } else if c.t1.as_deref() == Some(c.t2.as_str()) && t2.is_some_and(|t| t.target().is_none()) {
            format!("the targetless transition stays in `{leaf}` and accepts {} again", c.event)
        } else if let Some(h) = history {
            format!(
                "`{}` enters history state `{}`, which restores `{leaf}`, and `{leaf}` accepts {} again",
                c.t1.as_deref().unwrap_or(""),
                m.states[h].path,
                c.event
            )
        } else if t2_source != *leaf && !t2_source.is_empty() {
            format!("`{leaf}` accepts {} again through its ancestor `{t2_source}`", c.event)
        } else if t2_source.is_empty() {
            format!("`{leaf}` accepts {} again through a machine-level transition", c.event)
        } else if landed.is_some_and(|l| l != c.leaf) {
            format!(
                "the process lands in `{}` and `always` steps take it to `{leaf}`, which accepts {} again",
                landed.map(|l| m.states[l].path.as_str()).unwrap_or(""),
                c.event
            )
        } else {
            format!("`{leaf}` accepts {} again", c.event)
        };
        let message = if doubling {
            format!("{where_}. {how}, and {}", shows.summary())
        } else {
            format!(
                "{where_}. {how}, and {} (it changes no context and emits nothing, but the repeat still advances the process)",
                shows.summary()
            )
        };
        let fix = if reenter {
            format!(
                "Drop `reenter: true` from `{}` (a transition to the state itself then runs only its own actions), or move the entry \
                 work onto the transition that first enters `{t2_source}`, or guard it with an identified set.",
                c.t2
            )
        } else {
            format!(
                "Make the repeat find nothing to do: remove {ev} from `{leaf}` if it only repeats the first step, or guard `{}` with an \
                 identified set ({{\"!\": {{\"in\": [{{\"var\": \"event.payload.<id>\"}}, {{\"var\": \"context.<seen>\"}}]}}}}) and record \
                 the id in the same assign; keep {ev} ids at least as long as senders may redeliver (retention.perType.{ev}).",
                c.t2,
                ev = c.event
            )
        };
        transitions.dedup();
        Finding {
            code: code.into(),
            severity,
            state: leaf.clone(),
            event: Some(c.event.clone()),
            transitions,
            site: None,
            message,
            fix,
            retention_ms: Some(window),
            cycle: Vec::new(),
            witness: Some(c.witness.clone()),
        }
    }

    fn info_finding(&self, t: &Transition, ev: &str) -> Finding {
        let m = self.m;
        let state = m.states[t.source].path.clone();
        let reached = closure(m, &landing(m, t), false);
        let again: Vec<&Transition> = reached.iter().flat_map(|&l| accepting(m, l, ev)).collect();
        let base = |code: &str, message: String, fix: &str| Finding {
            code: code.into(),
            severity: Severity::Info,
            state: state.clone(),
            event: Some(ev.to_string()),
            transitions: vec![t.json_path.clone()],
            site: None,
            message,
            fix: fix.into(),
            retention_ms: None,
            cycle: Vec::new(),
            witness: None,
        };
        if again.is_empty() {
            let names: Vec<&str> = reached.iter().map(|&l| m.states[l].path.as_str()).collect();
            return base(
                "topology_protected",
                format!(
                    "protected by topology alone: after `{}` no reachable state ({}) accepts {ev}, so a repeat of any age, with any id, is ignored",
                    t.json_path,
                    names.join(", ")
                ),
                "",
            );
        }
        let mut guards: Vec<String> = Vec::new();
        let all_guarded = again.iter().all(|a| match identity_guard(m, a) {
            Some(s) => {
                if !guards.contains(&s) {
                    guards.push(s);
                }
                true
            }
            None => false,
        });
        if all_guarded {
            return base(
                "identity_guarded",
                format!(
                    "{ev} is accepted again after `{}`, but only by transitions that check the event against an identified set or round \
                     (context.{}) and record it: a repeat is refused by the guard, however old it is",
                    t.json_path,
                    guards.join(", context.")
                ),
                "",
            );
        }
        let taken = self.taken.get(&t.json_path);
        let detail = match taken {
            None => format!(
                "the search (depth {}, {} configurations) never took this transition with the payloads it tried, so nothing is claimed",
                self.b.depth, self.b.nodes
            ),
            Some(tk) if tk.repeat_applied_harmless => {
                "a repeat was applied in the search but changed no context, emitted nothing and did not move the process".to_string()
            }
            Some(_) => "every repeat tried in the search was refused by a guard or ignored".to_string(),
        };
        let places: BTreeSet<&str> = again.iter().map(|a| a.json_path.as_str()).collect();
        base(
            "reaccept_unconfirmed",
            format!(
                "{ev} can be accepted again after `{}` (by {}), yet no repeat within the search bounds changes anything: {detail}",
                t.json_path,
                places.into_iter().collect::<Vec<_>>().join(", ")
            ),
            "If the guards are what protects it, consider checking an identified set explicitly so the protection is visible.",
        )
    }
}

/// The transition of the original's set that a repeat's transition repeats:
/// itself, else the one in the same region (the deepest common ancestor),
/// else the first.
fn related(m: &Machine, t1s: &[&Transition], t2: &Transition) -> Option<String> {
    let depth = |t: &Transition| {
        m.ancestors(t.source).find(|&a| t2.source == a || m.is_descendant(t2.source, a)).map_or(0, |a| m.states[a].depth + 1)
    };
    if let Some(same) = t1s.iter().find(|t| t.json_path == t2.json_path) {
        return Some(same.json_path.clone());
    }
    let best = t1s.iter().enumerate().max_by_key(|(i, t)| (depth(t), usize::MAX - i))?;
    Some(best.1.json_path.clone())
}

/// When `a` and `b` lie in different regions of one parallel state: those regions.
fn other_regions(m: &Machine, a: StateIdx, b: StateIdx) -> Option<(StateIdx, StateIdx)> {
    let p = m.ancestors(a).skip(1).find(|&p| m.is_descendant(b, p))?;
    if m.states[p].kind != Kind::Parallel {
        return None;
    }
    let region = |s: StateIdx| m.ancestors(s).find(|&r| m.states[r].parent == Some(p));
    let (ra, rb) = (region(a)?, region(b)?);
    (ra != rb).then_some((ra, rb))
}

fn kind_severity(k: RepeatKind) -> Severity {
    match k {
        RepeatKind::Immediate => Severity::Error,
        RepeatKind::Cycle => Severity::Warning,
    }
}

fn chain(t1: &Option<String>, t2: &str) -> Vec<String> {
    let mut v: Vec<String> = t1.iter().cloned().collect();
    if v.last().map(String::as_str) != Some(t2) {
        v.push(t2.to_string());
    }
    v
}

fn owner_path(o: &Owner) -> Option<String> {
    match o {
        Owner::Transition(p) => Some(p.clone()),
        _ => None,
    }
}

fn find_transition<'m>(m: &'m Machine, path: &str) -> Option<&'m Transition> {
    m.states.iter().find_map(|s| {
        s.on.iter()
            .flat_map(|(_, ts)| ts.iter())
            .chain(s.always.iter())
            .chain(s.after.iter().flat_map(|(_, ts)| ts.iter()))
            .find(|t| t.json_path == path)
    })
}

/// How the witness's repeat arrives, in words.
fn mode_text(c: &Candidate, m: &Machine) -> String {
    let w = &c.witness;
    let orig = &w.steps[w.original];
    let dup = &w.steps[w.duplicate];
    let window = m.retention_for(&c.event);
    match w.mode {
        Mode::LateDuplicate => format!(
            "The witness redelivers {} with the same id \"{}\" {} ms after the original, past its {} ms retention (the ledger has \
             forgotten it)",
            c.event,
            orig.event["id"].as_str().unwrap_or(""),
            dup.now.saturating_sub(orig.now),
            window
        ),
        Mode::FreshId => format!(
            "The witness re-sends {} with the same payload under a new id \"{}\" (an originator without a stable id), {} ms later, well \
             inside the retention window",
            c.event,
            dup.event["id"].as_str().unwrap_or(""),
            dup.now.saturating_sub(orig.now)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accumulation_is_read_from_the_expression() {
        let plus = json!({ "+": [{ "var": "context.paid" }, { "var": "event.payload.amount" }] });
        assert!(accumulates(&plus, "paid"));
        assert!(!accumulates(&plus, "total"));
        let append = json!({ "merge": [{ "var": "context.ids" }, [{ "var": "event.payload.id" }]] });
        assert!(accumulates(&append, "ids"));
        let set = json!({ "var": "event.payload.amount" });
        assert!(!accumulates(&set, "paid"));
        let nested = json!({ "if": [true, { "+": [1, { "-": [{ "var": ["context.n", 0] }, 2] }] }, 0] });
        assert!(accumulates(&nested, "n"));
        let max = json!({ "max": [{ "var": "context.n" }, { "var": "event.payload.n" }] });
        assert!(!accumulates(&max, "n"));
    }

    #[test]
    fn membership_and_generation_guards_are_recognised() {
        let g = json!({ "and": [{ "!": { "in": [{ "var": "event.payload.id" }, { "var": "context.seen" }] } }, { ">": [1, 0] }] });
        assert_eq!(negated_memberships(&g), vec!["seen".to_string()]);
        let g2 = json!({ "==": [{ "var": "context.round" }, { "var": "event.payload.round" }] });
        assert_eq!(generation_checks(&g2), vec!["round".to_string()]);
        assert!(negated_memberships(&json!({ "in": [{ "var": "event.payload.id" }, { "var": "context.seen" }] })).is_empty());
    }

    #[test]
    fn payloads_follow_what_guards_compare() {
        let mut specs = BTreeMap::new();
        collect_specs(&json!({ "==": [{ "var": "event.payload.round" }, { "var": "context.round" }] }), &mut specs);
        collect_specs(&json!({ "+": [{ "var": "context.paid" }, { "var": "event.payload.amount" }] }), &mut specs);
        collect_specs(&json!({ "==": [{ "var": "event.payload.kind" }, "refund"] }), &mut specs);
        let ps = payloads(&specs, &json!({ "round": 7 }));
        assert_eq!(ps[0], json!({ "amount": 40, "kind": "refund", "round": 7 }));
        assert!(ps.iter().any(|p| p["amount"] == json!(60)));
        assert!(ps.iter().any(|p| p["round"] != json!(7)));
    }
}
