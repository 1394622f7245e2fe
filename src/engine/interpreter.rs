//! The statechart algorithm: one macrostep of a process, as the W3C SCXML
//! recommendation (Appendix D) describes it and XState v5 implements it.
//!
//! A configuration is the set of active states, kept in document order (a
//! state's index is its place in a pre-order walk of the definition). For an
//! event, `select_transitions` finds the optimal enabled transition set (in
//! each active region the deepest state with an enabled transition wins; a
//! parallel state's own transitions are consulted only when none of its
//! regions has one), `remove_conflicting_transitions` keeps one of any two
//! that exit the same state (a descendant's transition preempts its
//! ancestor's, otherwise the first in document order), and `microstep` takes
//! them: exit set innermost first in reverse document order (recording history),
//! transition actions, entry set outermost first in document order. The history
//! lookups live on `Entry`, which `Machine::initial_config` and the snapshot's
//! history check share. Then, until neither is left: eventless (`always`)
//! transitions if any are enabled, else the next internal event (`raise`, done
//! events). The whole macrostep belongs to the external event that started it:
//! raised events are never ledger entries.
//!
//! Entering a final state queues the done event of its parent (carrying the
//! state's `output`) and of every parallel ancestor now complete (carrying
//! nothing, as in XState). A final state of the machine ends the process
//! (`done`): every active state's exit actions run innermost first, and the
//! timers and the internal queue are dropped. A new process enters its initial
//! configuration and settles it (all seeing the event `xstate.init`) before its
//! first event is judged. `in_state` guards read the state value, kept current
//! after every microstep.
//!
//! Where XState v5 and SCXML differ, this follows XState (the oracle of
//! `tests/differential/`):
//!
//! - the transition domain is the nearest proper ancestor of the source and the
//!   targets, compound or parallel (SCXML: compound only), so a transition between
//!   two regions exits and re-enters the regions, not the parallel state;
//! - a `reenter: true` transition declared on the machine exits and enters the
//!   machine itself: its `exit` and `entry` run (SCXML has no transitions on the
//!   root);
//! - after an eventless microstep that changed nothing (no state entered or
//!   exited, no history recorded, no `assign`), eventless transitions are not
//!   selected again until the next internal event.
//!
//! Deliberate differences from XState, each excused by name in
//! `tests/differential/differences.mjs` and nowhere else:
//!
//! - eventless transitions of different regions are considered in document
//!   order; XState takes them in the order the states were entered, so the order
//!   of their actions, and which of two conflicting ones is taken, would depend
//!   on the path that led to the configuration (and change when XState restores
//!   a persisted snapshot);
//! - arithmetic on a value that is not a number rejects the event
//!   (`nan-where-idem-refuses`: `expression_failed`, nothing written) where
//!   XState stores `NaN`;
//! - a transition that enters its source again conflicts with one that exits it
//!   (`history-reentry-conflicts`): a transition to a history state that restores
//!   its own atomic source counts the source among the states it exits when
//!   conflicts are removed; XState takes both and reaches a configuration that is
//!   not one;
//! - a transition enters over the domain it exited (`history-domain-before-exit`):
//!   each domain is computed once, before the exits; XState computes the entry
//!   set's domain again from the history just recorded and may leave a state
//!   never entered.
//!
//! An idem event is `{id, type, payload}`: expressions read `event.payload.x`
//! where XState code reads `event.x`.

use crate::error::{Code, Error, Result};
use crate::expr::Data;
use crate::json;
use crate::machine::{Action, Kind, Machine, RetryPolicy, StateIdx, Transition, DONE_EVENT_PREFIX, EFFECT_REPORT_PREFIX, INIT_EVENT};
use crate::outbox;
use crate::outcome::{EmittedEffect, Event};
use crate::snapshot::{ProcessState, Timer};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::VecDeque;

/// The working state of one macrostep.
pub(crate) struct Run<'a> {
    pub m: &'a Machine,
    /// The active states, in document order.
    pub config: Vec<StateIdx>,
    /// The process's state, changed in place; `state.value` is the state value
    /// of `config` (what `state` reads in expressions), `state.revision` the
    /// revision this macrostep commits.
    pub state: ProcessState,
    pub response: Option<Value>,
    /// Emitted effects with their retry policy.
    pub effects: Vec<(EmittedEffect, RetryPolicy)>,
    /// The external event this macrostep belongs to: its id keys effects.
    pub origin: &'a Event<'a>,
    pub process: &'a str,
    pub now: u64,
    pub microsteps: usize,
    /// Raised and done events, handled one at a time after eventless transitions.
    internal: VecDeque<Event<'static>>,
    /// An `assign` ran in the current microstep.
    assigned: bool,
}

/// What a run starts from.
pub(crate) struct Start<'a> {
    pub config: Vec<StateIdx>,
    /// The process's state, its revision already the one this run commits.
    pub state: ProcessState,
    pub origin: &'a Event<'a>,
    pub process: &'a str,
    pub now: u64,
}

impl<'a> Run<'a> {
    pub fn new(m: &'a Machine, s: Start<'a>) -> Run<'a> {
        Run {
            m,
            config: s.config,
            state: s.state,
            response: None,
            effects: Vec::new(),
            origin: s.origin,
            process: s.process,
            now: s.now,
            microsteps: 0,
            internal: VecDeque::new(),
            assigned: false,
        }
    }

    fn data<'e>(&'e self, event: &'e Event) -> Data<'e> {
        Data::Process {
            context: &self.state.context,
            event_id: &event.id,
            event_type: &event.event_type,
            payload: &event.payload,
            state: &self.state.value,
        }
    }

    fn active(&self, s: StateIdx) -> bool {
        self.config.binary_search(&s).is_ok()
    }

    /// An event of the engine's own within this macrostep (`xstate.init`, a
    /// done event, a raised one): it carries the external event's id.
    fn internal_event(&self, event_type: String, payload: Value) -> Event<'static> {
        Event { id: Cow::Owned(self.origin.id.to_string()), event_type: Cow::Owned(event_type), payload: Cow::Owned(payload) }
    }

    /// Enter the initial configuration of a new process (entry actions run
    /// once, here), then settle it: eventless transitions, raised and done
    /// events, all before the first event is judged. They see `xstate.init`.
    pub fn start(&mut self) -> Result<()> {
        let init = self.internal_event(INIT_EVENT.to_string(), Value::Object(Map::new()));
        self.microsteps += 1;
        let states = self.m.initial_config(self.m.root());
        self.enter_states(&states, &init)?;
        self.settle(&init)?;
        Ok(())
    }

    /// One external event: the transitions it enables, then whatever follows
    /// (eventless transitions, raised and done events). Whether any transition
    /// was taken: an event that enables none may still let an eventless
    /// transition be taken, whose guard reads it (SCXML's main loop).
    pub fn macrostep(&mut self, event: &Event) -> Result<bool> {
        if self.state.done {
            return Ok(false);
        }
        let ts = self.select_transitions(event)?;
        let mut taken = !ts.is_empty();
        if taken {
            self.microstep(&ts, event)?;
        }
        taken |= self.settle(event)?;
        Ok(taken)
    }

    /// An event the engine raises itself: an effect's attempt report (which
    /// may raise the effect's outcome event) or a timer's firing. Whether it
    /// changed anything.
    pub fn engine_event(&mut self, event: &Event) -> Result<bool> {
        if event.event_type.starts_with(EFFECT_REPORT_PREFIX) {
            return match outbox::report(&mut self.state.outbox, event, self.now)? {
                outbox::Report::Stale => Ok(false),
                outbox::Report::Updated => Ok(true),
                outbox::Report::Raise(raised) => {
                    self.macrostep(&raised)?;
                    Ok(true)
                }
            };
        }
        let Some(i) = self.state.timers.iter().position(|t| t.id == event.id) else { return Ok(false) };
        let timer = self.state.timers.remove(i);
        let m = self.m;
        let state = m
            .state_by_path(&timer.state)
            .ok_or_else(|| Error::new(Code::InvalidSnapshot, format!("timer names unknown state \"{}\"", timer.state)))?;
        if self.state.done || !self.active(state) {
            return Ok(true);
        }
        let cands: &'a [Transition] = m.states[state].after.iter().find(|(d, _)| *d == timer.delay).map_or(&[], |(_, ts)| ts);
        for t in cands {
            if self.enabled(t, event)? {
                self.microstep(&[t], event)?;
                break;
            }
        }
        self.settle(event)?;
        Ok(true)
    }

    /// Eventless transitions while any is enabled, else the next internal
    /// event, until neither is left (XState's `macrostep` loop: after an
    /// eventless microstep that changed nothing, only internal events remain).
    fn settle(&mut self, external: &Event) -> Result<bool> {
        let mut taken = false;
        let mut current: Option<Event<'static>> = None;
        let mut eventless = true;
        while !self.state.done {
            let mut ts = if eventless { self.select_eventless(current.as_ref().unwrap_or(external))? } else { Vec::new() };
            let from_eventless = !ts.is_empty();
            if ts.is_empty() {
                let Some(next) = self.internal.pop_front() else { break };
                ts = self.select_transitions(&next)?;
                current = Some(next);
            }
            let event = current.as_ref().unwrap_or(external);
            let changed = if ts.is_empty() {
                false
            } else {
                taken = true;
                self.microstep(&ts, event)?
            };
            eventless = !from_eventless || changed;
        }
        Ok(taken)
    }

    fn enabled(&self, t: &Transition, event: &Event) -> Result<bool> {
        match (t.guard, &t.host_guard) {
            (_, Some(h)) => self.host_guard(h, event),
            (None, None) => Ok(true),
            (Some(g), None) => self.m.exprs.test(g, self.data(event)),
        }
    }

    /// A function guard's answer (see [`crate::host`]).
    #[inline(never)]
    fn host_guard(&self, h: &crate::host::HostUse, event: &Event) -> Result<bool> {
        match h.call(&self.state.context, &event.id, &event.event_type, &event.payload)? {
            Value::Bool(b) => Ok(b),
            other => Err(h.failed(&["a guard must answer a boolean, got ", &json::to_text(&other)].concat())),
        }
    }

    /// The first candidate of state `s` for the event whose guard holds.
    fn first_enabled(&self, s: StateIdx, event: &Event) -> Result<Option<&'a Transition>> {
        let m = self.m;
        if let Some((_, cands)) = m.states[s].on.iter().find(|(e, _)| *e == event.event_type) {
            for t in cands {
                if self.enabled(t, event)? {
                    return Ok(Some(t));
                }
            }
        }
        Ok(None)
    }

    /// The enabled transitions for an event, before conflicts are removed.
    fn select_transitions(&self, event: &Event) -> Result<Vec<&'a Transition>> {
        let mut out = Vec::new();
        self.select_in(self.m.root(), event, &mut out)?;
        Ok(out)
    }

    /// Below `s` first: the active child of a compound state, every active
    /// region of a parallel one; `s`'s own transition only if none was found.
    fn select_in(&self, s: StateIdx, event: &Event, out: &mut Vec<&'a Transition>) -> Result<()> {
        let m = self.m;
        let before = out.len();
        match m.states[s].kind {
            Kind::Compound => {
                if let Some(&c) = m.states[s].children.iter().find(|&&c| self.active(c)) {
                    self.select_in(c, event, out)?;
                }
            }
            Kind::Parallel => {
                for c in m.regions(s) {
                    if self.active(c) {
                        self.select_in(c, event, out)?;
                    }
                }
            }
            _ => {}
        }
        if out.len() == before {
            if let Some(t) = self.first_enabled(s, event)? {
                out.push(t);
            }
        }
        Ok(())
    }

    /// For each active atomic state, the first enabled `always` transition of
    /// it or its nearest ancestor that has one; conflicts removed.
    fn select_eventless(&self, event: &Event) -> Result<Vec<&'a Transition>> {
        let m = self.m;
        let mut found: Vec<&'a Transition> = Vec::new();
        for &s in &self.config {
            if !m.is_atomic(s) {
                continue;
            }
            'up: for a in m.ancestors(s) {
                for t in &m.states[a].always {
                    if self.enabled(t, event)? {
                        if !found.iter().any(|f| std::ptr::eq(*f, t)) {
                            found.push(t);
                        }
                        break 'up;
                    }
                }
            }
        }
        Ok(found)
    }

    /// Of two transitions that would exit a common state, the one whose source
    /// is a descendant of the other's wins; otherwise the first (SCXML 3.13).
    /// What a transition exits counts the active states it enters again
    /// without exiting them: a transition to a history state that restores its
    /// own atomic source has that source as its domain (XState's rule), so it
    /// exits nothing, yet it enters its source again, which a transition that
    /// exits the source must not leave behind (issue 38; XState takes both and
    /// keeps the source, alone or beside what the other entered:
    /// `history-reentry-conflicts` in `tests/differential/differences.mjs`).
    fn remove_conflicting_transitions(&self, ts: &[&'a Transition]) -> Vec<&'a Transition> {
        if ts.len() < 2 {
            return ts.to_vec();
        }
        remove_conflicting_transitions(self.m, ts, |t| {
            let mut out = self.compute_exit_set(&[t]);
            let mut entry = Vec::new();
            self.compute_entry_set(t, self.transition_domain(t), &mut entry);
            for s in entry {
                if self.active(s) && !out.contains(&s) {
                    out.push(s);
                }
            }
            out
        })
    }

    /// Take a set of transitions: exit, transition actions, entry. Whether the
    /// process changed (states, history or context), which XState's loop uses
    /// to stop selecting eventless transitions that change nothing.
    fn microstep(&mut self, ts: &[&'a Transition], event: &Event) -> Result<bool> {
        self.microsteps += 1;
        let limit = self.m.limits.max_microsteps;
        if self.microsteps > limit {
            return Err(Error::at(
                Code::MicrostepLimit,
                ts[0].json_path.clone(),
                format!("more than {limit} microsteps for one event: the machine does not settle"),
            ));
        }
        let ts = self.remove_conflicting_transitions(ts);
        let before = self.config.clone();
        self.assigned = false;
        // The domains the exit set is computed over, before the exits record
        // history: entering a history state restores what was just recorded,
        // which may lie elsewhere than what it named before (a parallel parent's
        // default is the parent, its record the regions), and the states between
        // it and the domain that was exited must be entered again all the same.
        let domains: Vec<Option<StateIdx>> = ts.iter().map(|t| self.transition_domain(t)).collect();
        let recorded = self.exit_states(&ts, event)?;
        for t in &ts {
            self.run_actions(&t.actions, event)?;
        }
        let mut entry = Vec::new();
        for (t, &domain) in ts.iter().zip(&domains) {
            self.compute_entry_set(t, domain, &mut entry);
        }
        entry.sort_unstable();
        entry.dedup();
        self.enter_states(&entry, event)?;
        Ok(recorded || self.assigned || self.config != before)
    }

    /// The entry-set questions over this machine and what its history states recorded.
    fn entry(&self) -> Entry<'a, '_> {
        Entry { m: self.m, history: &self.state.history }
    }

    /// The targets with each history state replaced by the states it names.
    fn effective_targets(&self, targets: &[StateIdx], out: &mut Vec<StateIdx>) {
        self.entry().effective_targets(targets, out);
    }

    /// The transition's domain ([`Machine::transition_domain`]), its history
    /// targets resolved to what they restore now.
    fn transition_domain(&self, t: &Transition) -> Option<StateIdx> {
        let mut targets = Vec::new();
        self.effective_targets(&t.targets, &mut targets);
        self.m.transition_domain(t, &targets)
    }

    /// The active states the transitions leave, in no particular order.
    fn compute_exit_set(&self, ts: &[&Transition]) -> Vec<StateIdx> {
        let mut out = Vec::new();
        for t in ts {
            if t.targets.is_empty() {
                continue;
            }
            let domain = self.transition_domain(t);
            if t.reenter && domain == Some(t.source) && !out.contains(&t.source) {
                out.push(t.source);
            }
            for &s in &self.config {
                if self.m.within(s, domain) && !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// Exit innermost first, in reverse document order, after recording the
    /// history of every exited state that has history states. Whether some
    /// history was recorded.
    fn exit_states(&mut self, ts: &[&'a Transition], event: &Event) -> Result<bool> {
        let m = self.m;
        let mut exit = self.compute_exit_set(ts);
        exit.sort_unstable_by(|a, b| b.cmp(a));
        let mut recorded = false;
        for &s in &exit {
            for &h in &m.states[s].children {
                if m.states[h].kind != Kind::History {
                    continue;
                }
                let deep = m.states[h].deep;
                let kept = self
                    .config
                    .iter()
                    .filter(|&&c| if deep { m.is_atomic(c) && m.is_descendant(c, s) } else { m.states[c].parent == Some(s) })
                    .map(|&c| Value::String(m.states[c].path.clone()))
                    .collect();
                self.state.history.insert(m.states[h].path.clone(), Value::Array(kept));
                recorded = true;
            }
        }
        for s in exit {
            let path = &m.states[s].path;
            self.state.timers.retain(|t| &t.state != path);
            self.run_actions(&m.states[s].exit, event)?;
            if let Ok(i) = self.config.binary_search(&s) {
                self.config.remove(i);
            }
        }
        Ok(recorded)
    }

    /// The states a transition enters: its targets (unless it stays in its
    /// source), their default descendants, and the ancestors between them
    /// and the transition domain `domain` (with every region of a parallel one).
    fn compute_entry_set(&self, t: &Transition, domain: Option<StateIdx>, out: &mut Vec<StateIdx>) {
        let m = self.m;
        if t.targets.is_empty() {
            return;
        }
        for &s in &t.targets {
            if m.states[s].kind != Kind::History && (t.source != s || domain != Some(t.source) || t.reenter) {
                add(out, s);
            }
            self.entry().add_descendant_states_to_enter(s, out);
        }
        let mut targets = Vec::new();
        self.effective_targets(&t.targets, &mut targets);
        let reentrancy = if t.source == m.root() && t.reenter { None } else { domain };
        for s in targets {
            let mut ancestors = proper_ancestors(m, s, domain);
            if let Some(d) = domain.filter(|&d| m.states[d].kind == Kind::Parallel) {
                ancestors.push(d);
            }
            self.entry().add_ancestor_states_to_enter(&ancestors, reentrancy, out);
        }
    }

    /// Enter `states` (sorted) outermost first: timers, entry actions, and for a
    /// final state the done events of its parent and of every parallel
    /// ancestor now complete; a final state of the machine ends the process
    /// and runs the exit actions of every active state, innermost first.
    fn enter_states(&mut self, states: &[StateIdx], event: &Event) -> Result<()> {
        let m = self.m;
        if states.is_empty() {
            return Ok(());
        }
        // Entry actions see the state they enter.
        let mut next = self.config.clone();
        next.extend_from_slice(states);
        next.sort_unstable();
        next.dedup();
        self.state.value = m.value_of_config(&next);
        let mut completed: Vec<StateIdx> = Vec::new();
        for &s in states {
            if let Err(i) = self.config.binary_search(&s) {
                self.config.insert(i, s);
            }
            let node = &m.states[s];
            for (delay, _) in &node.after {
                self.state.timers.push(Timer {
                    id: format!("after:{}:{}:{}", node.path, delay, self.state.revision),
                    state: node.path.clone(),
                    delay: *delay,
                    due_at: self.now.saturating_add(*delay),
                });
            }
            self.run_actions(&node.entry, event)?;
            if node.kind != Kind::Final {
                continue;
            }
            let Some(parent) = node.parent else { continue };
            if m.states[parent].kind == Kind::Compound {
                let data = self.done_data(node, event)?;
                self.internal.push_back(self.internal_event(format!("{DONE_EVENT_PREFIX}{}", m.states[parent].xstate_id), data));
            }
            let mut marker = if m.states[parent].kind == Kind::Parallel { Some(parent) } else { m.states[parent].parent };
            while let Some(a) = marker {
                if m.states[a].kind != Kind::Parallel || completed.contains(&a) || !self.in_final_state(a) {
                    break;
                }
                completed.push(a);
                self.internal.push_back(self.internal_event(format!("{DONE_EVENT_PREFIX}{}", m.states[a].xstate_id), Value::Object(Map::new())));
                marker = m.states[a].parent;
            }
            if marker.is_none() {
                self.state.done = true;
            }
        }
        if self.state.done {
            self.internal.clear();
            self.state.timers.clear();
            for s in self.config.clone().into_iter().rev() {
                self.run_actions(&m.states[s].exit, event)?;
            }
        }
        Ok(())
    }

    /// The payload of the done event a final state raises for its parent:
    /// `{"output": ...}` when it declares an output (XState 5's `event.output`).
    fn done_data(&self, node: &crate::machine::StateNode, event: &Event) -> Result<Value> {
        let mut data = Map::new();
        if let Some(e) = node.output {
            data.insert("output".into(), self.m.exprs.eval(e, self.data(event))?);
        }
        Ok(Value::Object(data))
    }

    fn in_final_state(&self, s: StateIdx) -> bool {
        let m = self.m;
        match m.states[s].kind {
            Kind::Compound => m.states[s].children.iter().any(|&c| m.states[c].kind == Kind::Final && self.active(c)),
            Kind::Parallel => m.regions(s).all(|c| self.in_final_state(c)),
            Kind::Final => true,
            _ => false,
        }
    }

    fn run_actions(&mut self, actions: &[Action], event: &Event) -> Result<()> {
        self.run_actions_in(&self.m.exprs, actions, event)
    }

    /// A function action: its answer, a context patch or idem actions as data, run in its place.
    #[inline(never)]
    fn run_host_action(&mut self, h: &crate::host::HostUse, event: &Event) -> Result<()> {
        let answer = match h.call(&self.state.context, &event.id, &event.event_type, &event.payload)? {
            Value::Object(patch) => return self.patch(patch, &h.path),
            list @ Value::Array(_) => list,
            _ => return Err(h.failed("an action must answer a context patch (an object) or a list of idem actions")),
        };
        let (exprs, actions) = crate::machine::actions_of(&answer, &h.path).map_err(|e| h.failed(&e.message))?;
        self.run_actions_in(&exprs, &actions, event)
    }

    /// Merge `patch` into the context, as an `assign` of its members would.
    fn patch(&mut self, patch: Map<String, Value>, path: &str) -> Result<()> {
        if let Some((field, _)) = patch.iter().find(|(_, v)| !json::within_depth(v, 3)) {
            let message = ["a patch of \"", field, "\" would nest the context deeper than the limit"].concat();
            return Err(Error::at(Code::NestingTooDeep, path, message));
        }
        let ctx = self.state.context.as_object_mut().expect("context is an object");
        for (field, v) in patch {
            ctx.insert(field, v);
        }
        self.assigned = true;
        Ok(())
    }

    #[inline(never)]
    fn run_actions_in(&mut self, exprs: &crate::expr::Exprs, actions: &[Action], event: &Event) -> Result<()> {
        for a in actions {
            match a {
                Action::Host(h) => self.run_host_action(h, event)?,
                Action::Assign(fields) => {
                    let mut values = Vec::with_capacity(fields.len());
                    for (field, e) in fields {
                        let v = exprs.eval(*e, self.data(event))?;
                        // A context member is read back at level 3 of the snapshot's head: one
                        // level more on every event (`[context.x]`) must stop here, not be written.
                        if !json::within_depth(&v, 3) {
                            return Err(Error::at(
                                Code::NestingTooDeep,
                                exprs.path(*e),
                                format!("assign of \"{field}\" would nest the context deeper than {} levels", json::MAX_DEPTH),
                            ));
                        }
                        values.push((field, v));
                    }
                    let ctx = self.state.context.as_object_mut().expect("context is an object");
                    for (field, v) in values {
                        match ctx.get_mut(field.as_str()) {
                            Some(slot) => *slot = v,
                            None => {
                                ctx.insert(field.clone(), v);
                            }
                        }
                    }
                    self.assigned = true;
                }
                Action::Respond(e) => {
                    self.response = Some(exprs.eval(*e, self.data(event))?);
                }
                Action::Raise(def) => {
                    let payload = match def.payload {
                        Some(p) => exprs.eval(p, self.data(event))?,
                        None => Value::Object(Map::new()),
                    };
                    let raised = self.internal_event(def.event_type.clone(), payload);
                    self.internal.push_back(raised);
                }
                Action::Effect(def) => {
                    let mut payload = match def.payload {
                        Some(p) => exprs.eval(p, self.data(event))?,
                        None => Value::Object(Map::new()),
                    };
                    let position = self.effects.len();
                    let key = match def.key {
                        Some(k) => match exprs.eval(k, self.data(event))? {
                            Value::String(s) if !s.is_empty() => s,
                            Value::Number(n) => n.to_string(),
                            other => {
                                return Err(Error::at(
                                    Code::ExpressionFailed,
                                    format!("{}.key", def.json_path),
                                    format!("effect key must be a non-empty string, got {}", json::to_text(&other)),
                                ))
                            }
                        },
                        None => outbox::default_key(self.process, &self.origin.id, position),
                    };
                    if self.state.outbox.iter().any(|e| e.key == key) || self.effects.iter().any(|(e, _)| e.key == key) {
                        // Same key, same operation: the outbox already has it.
                        continue;
                    }
                    // Members in key order, as the outbox writes them: the payload this outcome
                    // hands the host and the one `due` reads back later are the same bytes.
                    payload.sort_all_objects();
                    self.effects.push((
                        EmittedEffect { key, effect_type: def.effect_type.clone(), payload, idempotent: def.idempotent },
                        def.retry,
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The questions of SCXML's entry set, over a machine and what its history
/// states recorded (`Run::history`; empty for a process that recorded nothing,
/// as when a new process enters its initial configuration).
pub(crate) struct Entry<'m, 'h> {
    pub m: &'m Machine,
    pub history: &'h Map<String, Value>,
}

impl Entry<'_, '_> {
    /// The states a history state names, none of them a history state: what it
    /// recorded, else its default target, else its parent's default entry (the
    /// parent itself if parallel, else the parent's initial child, resolved in
    /// turn when that is another history state).
    fn history_targets(&self, h: StateIdx) -> Vec<StateIdx> {
        let m = self.m;
        if let Some(Value::Array(paths)) = self.history.get(&m.states[h].path) {
            return paths.iter().filter_map(|p| p.as_str().and_then(|p| m.state_by_path(p))).collect();
        }
        let node = &m.states[h];
        if !node.history_default.is_empty() {
            return node.history_default.clone();
        }
        let parent = node.parent.unwrap_or(0);
        match (m.states[parent].kind, m.states[parent].initial) {
            (Kind::Parallel, _) => vec![parent],
            // The builder refuses a history state that is its parent's initial
            // state without a default target, so `i != h` holds; checked here
            // all the same, so that no definition can make this recurse forever.
            (_, Some(i)) if m.states[i].kind == Kind::History => if i == h { Vec::new() } else { self.history_targets(i) },
            (_, i) => i.into_iter().collect(),
        }
    }

    /// The targets with each history state replaced by the states it names.
    pub fn effective_targets(&self, targets: &[StateIdx], out: &mut Vec<StateIdx>) {
        for &s in targets {
            if self.m.states[s].kind == Kind::History {
                for r in self.history_targets(s) {
                    add(out, r);
                }
            } else {
                add(out, s);
            }
        }
    }

    /// What entering `s` enters below it: a compound state's initial child (or
    /// what the history state named as initial restores), every region of a
    /// parallel state, what a history state restores and the states between it
    /// and the history's parent; each of them entered by default in turn.
    pub fn add_descendant_states_to_enter(&self, s: StateIdx, out: &mut Vec<StateIdx>) {
        let m = self.m;
        match m.states[s].kind {
            Kind::History => {
                let named = self.history_targets(s);
                for &r in &named {
                    add(out, r);
                    self.add_descendant_states_to_enter(r, out);
                }
                let parent = m.states[s].parent;
                for &r in &named {
                    self.add_ancestor_states_to_enter(&proper_ancestors(m, r, parent), None, out);
                }
            }
            Kind::Compound => {
                if let Some(init) = m.states[s].initial {
                    // An initial history state is never entered itself (SCXML, XState).
                    if m.states[init].kind != Kind::History {
                        add(out, init);
                    }
                    self.add_descendant_states_to_enter(init, out);
                }
            }
            Kind::Parallel => self.enter_missing_regions(s, out),
            _ => {}
        }
    }

    /// The regions of parallel state `p` that nothing entered yet, by default.
    pub fn enter_missing_regions(&self, p: StateIdx, out: &mut Vec<StateIdx>) {
        let m = self.m;
        for c in m.regions(p) {
            if !out.iter().any(|&e| m.is_descendant(e, c)) {
                add(out, c);
                self.add_descendant_states_to_enter(c, out);
            }
        }
    }

    pub fn add_ancestor_states_to_enter(&self, ancestors: &[StateIdx], reentrancy: Option<StateIdx>, out: &mut Vec<StateIdx>) {
        let m = self.m;
        for &a in ancestors {
            if reentrancy.is_none_or(|d| m.is_descendant(a, d)) {
                add(out, a);
            }
            if m.states[a].kind == Kind::Parallel {
                self.enter_missing_regions(a, out);
            }
        }
    }
}

/// Of two transitions that would exit a common state (by `exit_set`), the one
/// whose source is a descendant of the other's wins; otherwise the first
/// (SCXML 3.13). Shared with the hazard analysis, which gives its own exit sets.
pub(crate) fn remove_conflicting_transitions<'t>(
    m: &Machine,
    ts: &[&'t Transition],
    exit_set: impl Fn(&Transition) -> Vec<StateIdx>,
) -> Vec<&'t Transition> {
    let mut kept: Vec<(&'t Transition, Vec<StateIdx>)> = Vec::new();
    for &t1 in ts {
        let exit1 = exit_set(t1);
        let mut preempted = false;
        let mut beaten = Vec::new();
        for (i, (t2, exit2)) in kept.iter().enumerate() {
            if exit1.iter().any(|s| exit2.contains(s)) {
                if m.is_descendant(t1.source, t2.source) {
                    beaten.push(i);
                } else {
                    preempted = true;
                    break;
                }
            }
        }
        if !preempted {
            for i in beaten.into_iter().rev() {
                kept.remove(i);
            }
            kept.push((t1, exit1));
        }
    }
    kept.into_iter().map(|(t, _)| t).collect()
}

/// `s`'s ancestors from its parent up to, not including, `to` (`None`: up to
/// and including the machine).
fn proper_ancestors(m: &Machine, s: StateIdx, to: Option<StateIdx>) -> Vec<StateIdx> {
    if Some(s) == to {
        return Vec::new();
    }
    m.ancestors(s).skip(1).take_while(|&a| Some(a) != to).collect()
}

fn add(out: &mut Vec<StateIdx>, s: StateIdx) {
    if !out.contains(&s) {
        out.push(s);
    }
}
