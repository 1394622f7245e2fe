//! The search: a bounded walk over real runs of the machine through
//! `reduce`, which delivers each applied event again and keeps the repeats
//! that change something as candidates for findings (`report.rs`).

use super::findings::{Change, Mode, ShownEffect, Shows, Step, Witness};
use super::graph::{accepting, action_lists, closure, domain, macrostep_owners, select, settled_start, sites, Config, Owner};
use super::payloads::{payload_specs, payloads, FieldSpec};
use super::Bounds;
use crate::machine::{Action, Machine, StateIdx, Transition, DONE_EVENT_PREFIX, EFFECT_REPORT_PREFIX, TIMER_EVENT};
use crate::outbox;
use crate::outcome::{Outcome, Status};
use crate::snapshot::{self, EffectState};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

/// Time between steps of a witness (ms).
const STEP_MS: u64 = 1_000;
/// Host time of the first step.
pub(super) const START_MS: u64 = 1_000_000;

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
pub(super) enum RepeatKind {
    Immediate,
    Cycle,
}

pub(super) struct Candidate {
    pub(super) kind: RepeatKind,
    pub(super) event: String,
    pub(super) t1: Option<String>,
    /// Every transition the original took (one per region that moved).
    pub(super) originals: Vec<String>,
    pub(super) t2: String,
    pub(super) reenter: bool,
    /// The active atomic state the repeat was taken from (below `t2`'s source).
    pub(super) leaf: StateIdx,
    pub(super) witness: Witness,
    /// Effects the original application emitted (type, key).
    pub(super) original_effects: Vec<(String, String)>,
    pub(super) cycle: Vec<String>,
    pub(super) footprint: Vec<Owner>,
}

#[derive(Default)]
pub(super) struct Taken {
    checks: usize,
    cycle_checked: bool,
    pub(super) repeat_applied_harmless: bool,
}

pub(super) struct Search<'m> {
    pub(super) m: &'m Machine,
    pub(super) b: Bounds,
    specs: BTreeMap<String, BTreeMap<String, FieldSpec>>,
    handled: BTreeSet<String>,
    pub(super) raised: BTreeSet<String>,
    ids: usize,
    reduces: usize,
    pub(super) candidates: Vec<Candidate>,
    pub(super) taken: HashMap<String, Taken>,
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
    pub(super) fn new(m: &'m Machine, b: Bounds) -> Self {
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
                    Action::Respond(_) | Action::Host(_) => {}
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
            Some(l) => Config { states: l.config, context: l.snap.state.context, value: l.snap.state.value, done: l.snap.state.done },
            None => self.start.clone(),
        }
    }

    fn node_key(&self, snap: &str) -> String {
        match self.loaded(Some(snap)) {
            Some(l) => {
                let timers: Vec<(String, u64)> = l.snap.state.timers.iter().map(|t| (t.state.clone(), t.delay)).collect();
                let outbox: Vec<(String, &str)> =
                    l.snap.state.outbox.iter().filter(|e| !e.state.is_done()).map(|e| (e.effect_type.clone(), e.state.as_str())).collect();
                json!([l.snap.state.value, l.snap.state.context, timers, outbox, l.snap.state.done, l.snap.state.history]).to_string()
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
        for t in &l.snap.state.timers {
            let step = Step {
                event: json!({ "id": t.id, "type": TIMER_EVENT, "payload": {} }),
                now: t.due_at.max(node.now.saturating_add(STEP_MS)),
                role: "timer",
            };
            if let Some((snap, outcome)) = self.apply(node.snap.as_deref(), std::slice::from_ref(&step)) {
                out.push(Move { steps: vec![step], snap, outcome, event: None });
            }
        }
        for e in &l.snap.state.outbox {
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
            // What the work reports: a plain result or error, or, where guards on its
            // completion read flags from them (an imported invoke's), a few of each.
            let reported = |suffix: &str, part: &str, plain: Value| -> Vec<Value> {
                let specs = self.specs.get(&format!("{}.{suffix}", e.effect_type));
                let below = format!("{part}.");
                match specs {
                    Some(specs) if specs.keys().any(|f| f.starts_with(&below)) => {
                        let mut all: Vec<Value> = Vec::new();
                        for p in payloads(specs, &context) {
                            let v = p.get(part).cloned().unwrap_or_else(|| plain.clone());
                            if !all.contains(&v) {
                                all.push(v);
                            }
                        }
                        all
                    }
                    _ => vec![plain],
                }
            };
            let mut results = Vec::new();
            for result in reported("succeeded", "result", json!({})) {
                results.push(json!({ "id": format!("{}#{n}:result", e.key), "type": outbox::SUCCEEDED, "payload": { "key": e.key, "attempt": n, "result": result } }));
            }
            for error in reported("failed", "error", json!("declined")) {
                results.push(json!({ "id": format!("{}#{n}:result", e.key), "type": outbox::FAILED, "payload": { "key": e.key, "attempt": n, "retryable": false, "error": error } }));
            }
            for r in results {
                let steps = vec![started.clone(), Step { event: r, now: at.saturating_add(1), role: "effect" }];
                if let Some((snap, outcome)) = self.apply(node.snap.as_deref(), &steps) {
                    out.push(Move { steps, snap, outcome, event: None });
                }
            }
        }
        out
    }

    pub(super) fn run(&mut self) {
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
                let inside = |c: &Config| c.states.iter().copied().filter(|&s| m.within(s, dom)).collect::<Vec<_>>();
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
