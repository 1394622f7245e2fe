//! The world `idem check` explores: one process's store with compare-and-set,
//! up to N hosts each running `load -> reduce -> commit -> reply` (or a
//! dispatch: claim -> gateway call -> report) one step at a time, a gateway, a
//! logical clock, and beside them the reference: the same schedule with every
//! repeat removed. A [`State`] is everything that decides what can happen
//! next; an [`Action`] is one step of one participant. [`World::step`] applies
//! one and checks the dedup property on the way, so breadth-first search finds
//! the shortest schedule that breaks it.
//!
//! The host rules are the simulator's (`sim::world`): the same planted faults
//! (`Faults`), a dispatcher that only calls the gateway for an attempt its
//! `started` report claimed and while its lease lasts, a background pass that
//! dispatches whatever is due, and every snapshot read back in a fresh machine
//! (`sim::world::read_back`).

use super::scenario::{Line, Scenario};
use super::sim::world::{read_back, Faults};
use crate::{Machine, Status};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::rc::Rc;

/// What a schedule may contain, beyond the scenario's own events.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounds {
    /// `None`: any order; `Some(w)`: an event's first delivery comes at most
    /// `w - 1` places ahead of the earliest undelivered one.
    pub reorder: Option<usize>,
    pub expiries: u8,
    pub crashes: u8,
    pub effect_faults: u8,
    pub hosts: u8,
    pub fresh_resends: u8,
    pub faults: Faults,
}

impl Bounds {
    /// The defaults of `idem check`: any order up to 7 events, a window of 3 beyond.
    pub fn defaults(events: usize) -> Bounds {
        Bounds {
            reorder: if events <= 7 { None } else { Some(3) },
            expiries: 1,
            crashes: 1,
            effect_faults: 1,
            hosts: 2,
            fresh_resends: 0,
            faults: Faults::default(),
        }
    }
}

/// What a gateway call gives back (each but `Succeeded` spends an effect fault).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallResult {
    Succeeded,
    /// Declined by the provider: nothing performed, reported as failed.
    Failed,
    /// Performed, but the answer never came back (reported as unknown).
    Lost,
    /// Performed, and the result reported twice.
    Twice,
}

/// One step of one participant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A copy of scenario event `event` reaches idle host `host`: load + reduce.
    Deliver { event: u8, host: u8 },
    /// The client sends event `event` again under a fresh id (it forgot its key).
    Resend { event: u8, host: u8 },
    /// Idle host `host` takes due item `item` (index in the due list): claim, verify, expire or timer.
    Dispatch { item: u8, host: u8 },
    /// Commit what the host reduced (compare-and-set; on a conflict: load + reduce again).
    Commit { host: u8 },
    /// Call the gateway for the claimed attempt or verification.
    Call { host: u8, result: CallResult },
    /// Load + reduce the result of the call.
    Report { host: u8 },
    /// The host stops between two steps, forgetting its job.
    Crash { host: u8 },
    /// The clock moves to `to` (a scenario advance, the next due time, or past a retention window).
    Advance { to: u64, why: Clock },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Clock {
    Scenario,
    Due,
    Expiry,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Pc {
    #[default]
    Idle,
    /// Reduced; commit next.
    Reduced,
    /// Claimed; call the gateway next.
    Call,
    /// Has a result; load + reduce it next.
    Report,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Job {
    #[default]
    None,
    Client(u8),
    Attempt(u32),
    Verify(u32),
    /// An expiry report or a timer's event.
    Internal,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Host {
    pub pc: Pc,
    pub job: Job,
    /// Event being reduced (interned).
    pub ev: u32,
    pub version: u32,
    /// Outcome (interned reduce result).
    pub out: u32,
    /// When it reduced.
    pub at: u64,
    pub claimed_at: u64,
    /// The event's id had a recorded outcome when it was reduced.
    pub repeat: bool,
    /// The result is reported once more after this one.
    pub twice: bool,
    /// 0: claiming or delivering; 1: reporting a call's result.
    pub phase: u8,
}

/// Everything that decides what happens next; hashed exactly (interned
/// strings stand for their whole text).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct State {
    pub now: u64,
    pub store: u32,
    pub version: u32,
    /// The reference: the schedule so far with repeats removed.
    pub reference: u32,
    /// Scenario events delivered at least once (bit i), fresh re-sends at bit n + i.
    pub delivered: u64,
    pub next_advance: u8,
    pub expiries: u8,
    pub crashes: u8,
    pub effect_faults: u8,
    pub fresh: u8,
    pub hosts: Hosts,
    /// Logical event ids with a recorded outcome in the reference, with their
    /// frozen response, the end of its retention window and the event recorded
    /// (the original or its fresh re-send).
    /// Shared between a state and its successors until a step changes it
    /// (most steps do not): copying a state then allocates nothing.
    pub frozen: Rc<Vec<(u32, u32, u64, u32)>>,
    /// Gateway: (key, times performed, answer: 0 none, 1 succeeded, 2 declined), by key.
    pub gateway: Rc<Vec<(u32, u8, u8)>>,
}

impl Host {
    fn encode(&self, out: &mut Vec<u8>) {
        let job = match self.job {
            Job::None => [0, 0, 0, 0, 0],
            Job::Client(i) => [1, i, 0, 0, 0],
            Job::Attempt(i) => { let b = i.to_le_bytes(); [2, b[0], b[1], b[2], b[3]] }
            Job::Verify(i) => { let b = i.to_le_bytes(); [3, b[0], b[1], b[2], b[3]] }
            Job::Internal => [4, 0, 0, 0, 0],
        };
        out.push(self.pc as u8);
        out.extend_from_slice(&job);
        for n in [self.ev, self.version, self.out] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.extend_from_slice(&self.at.to_le_bytes());
        out.extend_from_slice(&self.claimed_at.to_le_bytes());
        out.extend_from_slice(&[self.repeat as u8, self.twice as u8, self.phase]);
    }
}

/// Most hosts a check runs (`--hosts`).
pub const MAX_HOSTS: usize = 8;

/// The hosts of a state, held inline: a state is copied for every step, and
/// an array copies without an allocation. Reads as a slice of the `n` in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Hosts {
    n: u8,
    all: [Host; MAX_HOSTS],
}

impl Hosts {
    pub fn new(n: usize) -> Hosts {
        Hosts { n: n.clamp(1, MAX_HOSTS) as u8, all: [Host::default(); MAX_HOSTS] }
    }
}

impl std::ops::Deref for Hosts {
    type Target = [Host];
    fn deref(&self) -> &[Host] {
        &self.all[..self.n as usize]
    }
}

impl std::ops::DerefMut for Hosts {
    fn deref_mut(&mut self) -> &mut [Host] {
        &mut self.all[..self.n as usize]
    }
}

impl State {
    /// The exact bytes a fingerprint is taken of: every field, interned
    /// strings by their index (one index, one text), the hosts in sorted order
    /// (hosts are interchangeable: which one holds a job is not part of the state).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.now.to_le_bytes());
        for n in [self.store, self.version, self.reference] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.extend_from_slice(&self.delivered.to_le_bytes());
        out.extend_from_slice(&[self.next_advance, self.expiries, self.crashes, self.effect_faults, self.fresh, self.hosts.len() as u8]);
        if self.hosts.windows(2).all(|w| w[0] <= w[1]) {
            self.hosts.iter().for_each(|h| h.encode(out));
        } else {
            let mut sorted = self.hosts;
            sorted.sort_unstable();
            sorted.iter().for_each(|h| h.encode(out));
        }
        out.extend_from_slice(&(self.frozen.len() as u32).to_le_bytes());
        for &(id, response, until, ev) in self.frozen.iter() {
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(&response.to_le_bytes());
            out.extend_from_slice(&until.to_le_bytes());
            out.extend_from_slice(&ev.to_le_bytes());
        }
        for &(key, times, answer) in self.gateway.iter() {
            out.extend_from_slice(&key.to_le_bytes());
            out.extend_from_slice(&[times, answer]);
        }
    }
}

/// A reduce's result, kept once per (snapshot, event, now).
#[derive(Clone, Debug)]
pub struct Out {
    pub status: Status,
    pub snapshot: u32,
    pub response: u32,
    /// The state value it answered (interned text).
    pub state: u32,
    pub effects: Rc<[(u32, bool)]>,
}

/// What the checker knows of a snapshot, computed once.
#[derive(Clone, Debug, Default)]
pub struct SnapInfo {
    pub value: Value,
    pub context: Value,
    /// Value and context as one text, to compare.
    pub state_text: String,
    pub next_due: Option<u64>,
    pub expiries: Vec<u64>,
    pub outbox_keys: Vec<u32>,
}

/// A breach of the property, in words.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    pub message: String,
}

/// FxHash (rustc's): the memo tables key on small integers, which need no
/// defence against chosen collisions.
#[derive(Default, Clone, Copy)]
pub struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        for &b in chunks.remainder() {
            self.write_u64(b as u64);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// Strings kept once; index 0 is "none".
#[derive(Default)]
pub struct Interner {
    map: FxMap<String, u32>,
    pub all: Vec<String>,
}

impl Interner {
    fn new() -> Interner {
        Interner { map: FxMap::default(), all: vec![String::new()] }
    }

    pub fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.map.get(s) {
            return i;
        }
        let i = self.all.len() as u32;
        self.all.push(s.to_string());
        self.map.insert(s.to_string(), i);
        i
    }
}

/// An event the world can reduce, and the logical id repeats are judged by.
pub struct EventInfo {
    pub value: Value,
    pub logical: u32,
    /// A re-send under a fresh id: a repeat the ledger cannot recognise.
    pub fresh: bool,
}

/// The machine, the scenario and every cache the exploration shares.
pub struct World<'m> {
    pub m: &'m Machine,
    fresh_machine: Machine,
    pub process: String,
    pub bounds: Bounds,
    /// Scenario events (0..n), then their fresh re-sends (n..2n).
    pub client: Vec<u32>,
    pub advances: Vec<u64>,
    pub strings: Interner,
    pub events: Vec<EventInfo>,
    event_ids: FxMap<String, u32>,
    pub items: Vec<Value>,
    item_ids: FxMap<String, u32>,
    pub outs: Vec<Out>,
    /// Per item: the host that takes it (its job and first event).
    item_jobs: Vec<Host>,
    /// Per item: its effect key (interned) and whether the provider honours keys.
    item_keys: Vec<(u32, bool)>,
    /// Result events of calls, per (item, what the gateway said).
    reports: FxMap<(u32, u8), u32>,
    reduced: FxMap<(u32, u32, u64), u32>,
    snaps: FxMap<u32, SnapInfo>,
    /// Snapshots a fresh machine read back, with the state value and revision
    /// it read: the same text written again with the same answer is not read twice.
    read_back: FxMap<u32, (Value, u64)>,
    due_now: FxMap<(u32, u64), Vec<u32>>,
    pub reduces: u64,
    /// The outcome the last step reduced, if it reduced (for traces).
    pub last_out: Option<u32>,
    /// The event (and time) a delivery in the last step answered with nothing to write.
    pub last_answer: Option<(u32, u64)>,
}

const START: u64 = 0;

impl<'m> World<'m> {
    pub fn new(m: &'m Machine, scenario: &Scenario, process: &str, bounds: Bounds) -> World<'m> {
        let mut w = World {
            m,
            fresh_machine: Machine::from_json(&m.definition_json()).expect("a machine's own definition builds again"),
            process: process.to_string(),
            bounds,
            client: Vec::new(),
            advances: scenario.advances().collect(),
            strings: Interner::new(),
            events: vec![EventInfo { value: Value::Null, logical: 0, fresh: false }],
            event_ids: FxMap::default(),
            items: vec![Value::Null],
            item_ids: FxMap::default(),
            outs: vec![Out { status: Status::Ignored, snapshot: 0, response: 0, state: 0, effects: Rc::new([]) }],
            item_jobs: vec![Host::default()],
            item_keys: vec![(0, true)],
            reports: FxMap::default(),
            reduced: FxMap::default(),
            snaps: FxMap::default(),
            read_back: FxMap::default(),
            due_now: FxMap::default(),
            reduces: 0,
            last_out: None,
            last_answer: None,
        };
        let originals: Vec<Value> = scenario.lines.iter().filter_map(|l| if let Line::Event(e) = l { Some(e.clone()) } else { None }).collect();
        let mut logical = Vec::new();
        for e in &originals {
            let id = w.event(e.clone(), None);
            logical.push(w.events[id as usize].logical);
            w.client.push(id);
        }
        for (e, l) in originals.iter().zip(logical) {
            let mut again = e.clone();
            again["id"] = json!(format!("{}~fresh", e["id"].as_str().unwrap_or("")));
            let id = w.event(again, Some(l));
            w.client.push(id);
        }
        w
    }

    pub fn n(&self) -> usize {
        self.client.len() / 2
    }

    pub fn initial(&self) -> State {
        State { now: START, hosts: Hosts::new(self.bounds.hosts as usize), ..State::default() }
    }

    fn event(&mut self, v: Value, logical: Option<u32>) -> u32 {
        let text = crate::json::to_text(&v);
        if let Some(&i) = self.event_ids.get(&text) {
            return i;
        }
        let fresh = logical.is_some();
        let logical = logical.unwrap_or_else(|| self.strings.id(v["id"].as_str().unwrap_or("")));
        let i = self.events.len() as u32;
        self.events.push(EventInfo { value: v, logical, fresh });
        self.event_ids.insert(text, i);
        i
    }

    fn item(&mut self, v: Value) -> u32 {
        let text = crate::json::to_text(&v);
        if let Some(&i) = self.item_ids.get(&text) {
            return i;
        }
        let i = self.items.len() as u32;
        let job = match v["kind"].as_str() {
            Some("attempt") => Host { job: Job::Attempt(i), ev: self.event(v["started"].clone(), None), ..Host::default() },
            Some("verify") => Host { job: Job::Verify(i), pc: Pc::Call, phase: 1, ..Host::default() },
            Some("expire") => Host { job: Job::Internal, ev: self.event(v["report"].clone(), None), ..Host::default() },
            _ => Host { job: Job::Internal, ev: self.event(v["event"].clone(), None), ..Host::default() },
        };
        let key = (self.strings.id(v["key"].as_str().unwrap_or("")), v["idempotent"].as_bool().unwrap_or(true));
        self.items.push(v);
        self.item_jobs.push(job);
        self.item_keys.push(key);
        self.item_ids.insert(text, i);
        i
    }

    /// The snapshot text of an interned id (`None` for 0: no process yet).
    pub fn text(&self, id: u32) -> Option<&str> {
        (id != 0).then(|| self.strings.all[id as usize].as_str())
    }

    /// `reduce` once per (snapshot, event, now); every new snapshot is read back in a fresh machine.
    pub fn reduce(&mut self, snap: u32, ev: u32, now: u64) -> Result<u32, Violation> {
        if let Some(&o) = self.reduced.get(&(snap, ev, now)) {
            return Ok(o);
        }
        self.reduces += 1;
        let o = self.m.reduce_in(&self.process, self.text(snap), &self.events[ev as usize].value, now);
        let written = o.snapshot.as_deref().map_or(0, |s| self.strings.id(s));
        let read_before = self.read_back.get(&written).is_some_and(|(state, revision)| *state == o.state && *revision == o.revision);
        if written != 0 && !read_before {
            let text = self.strings.all[written as usize].as_str();
            read_back(&self.fresh_machine, text, &o).map_err(|e| Violation { message: format!("the snapshot written {e}") })?;
            self.read_back.insert(written, (o.state.clone(), o.revision));
        }
        let out = Out {
            status: o.status,
            snapshot: written,
            response: self.strings.id(&reply_text(&o.response)),
            state: self.strings.id(&crate::json::to_text(&o.state)),
            effects: o.effects.iter().map(|e| (self.strings.id(&e.key), e.idempotent)).collect(),
        };
        let i = self.outs.len() as u32;
        self.outs.push(out);
        self.reduced.insert((snap, ev, now), i);
        Ok(i)
    }

    pub fn info(&mut self, snap: u32) -> &SnapInfo {
        if !self.snaps.contains_key(&snap) {
            let info = match self.text(snap) {
                None => SnapInfo { state_text: "none".into(), ..SnapInfo::default() },
                Some(text) => {
                    // One decode for both: what `inspect` shows and what `outbox::due` lists.
                    let loaded = crate::snapshot::load(self.m, text).ok();
                    let v = loaded.as_ref().filter(|l| l.snap.ledger.validate().is_ok()).map_or(Value::Null, |l| l.snap.to_value());
                    let next_due = loaded
                        .map(|l| crate::outbox::due_items(&l.snap, u64::MAX))
                        .unwrap_or_default()
                        .iter()
                        .filter_map(|i| i["dueAt"].as_u64())
                        .min();
                    let mut expiries: Vec<u64> = v["ledger"].as_array().into_iter().flatten().filter_map(|e| e["exp"].as_u64()).collect();
                    expiries.sort();
                    let keys: Vec<String> = v["outbox"].as_array().into_iter().flatten().filter_map(|e| e["key"].as_str().map(String::from)).collect();
                    let mut outbox_keys: Vec<u32> = keys.iter().map(|k| self.strings.id(k)).collect();
                    outbox_keys.sort();
                    SnapInfo {
                        state_text: crate::json::to_text(&json!([v["value"], v["context"]])),
                        value: v["value"].clone(),
                        context: v["context"].clone(),
                        next_due,
                        expiries,
                        outbox_keys,
                    }
                }
            };
            self.snaps.insert(snap, info);
        }
        &self.snaps[&snap]
    }

    /// Items due at `now` in `snap`.
    pub fn due(&mut self, snap: u32, now: u64) -> Vec<u32> {
        self.due_list(snap, now).to_vec()
    }

    fn due_list(&mut self, snap: u32, now: u64) -> &[u32] {
        if !self.due_now.contains_key(&(snap, now)) {
            let items = match self.text(snap) {
                None => Vec::new(),
                Some(text) => crate::outbox::due(self.m, text, now).unwrap_or_default(),
            };
            let ids: Vec<u32> = items.into_iter().map(|i| self.item(i)).collect();
            self.due_now.insert((snap, now), ids);
        }
        &self.due_now[&(snap, now)]
    }

    /// Every action enabled in `s`, in a fixed order.
    pub fn actions(&mut self, s: &State) -> Vec<Action> {
        let mut out = Vec::new();
        self.actions_into(s, &mut out);
        out
    }

    /// [`World::actions`] into `out` (cleared first), which the search reuses for every state.
    pub fn actions_into(&mut self, s: &State, out: &mut Vec<Action>) {
        out.clear();
        let n = self.n();
        let idle = s.hosts.iter().position(|h| h.pc == Pc::Idle).map(|h| h as u8);
        if let Some(host) = idle {
            let lowest_undelivered = (0..n).find(|&i| s.delivered & (1 << i) == 0).unwrap_or(n);
            for i in 0..n {
                let delivered = s.delivered & (1 << i) != 0;
                let in_window = match self.bounds.reorder {
                    None => true,
                    Some(w) => i < lowest_undelivered + w.max(1),
                };
                if delivered || in_window {
                    out.push(Action::Deliver { event: i as u8, host });
                }
                if s.delivered & (1 << (n + i)) != 0 {
                    out.push(Action::Deliver { event: (n + i) as u8, host });
                } else if delivered && s.fresh < self.bounds.fresh_resends {
                    out.push(Action::Resend { event: i as u8, host });
                }
            }
            for item in 0..self.due_list(s.store, s.now).len() {
                out.push(Action::Dispatch { item: item as u8, host });
            }
        }
        for (i, h) in s.hosts.iter().enumerate() {
            let host = i as u8;
            match h.pc {
                Pc::Idle => continue,
                Pc::Reduced => out.push(Action::Commit { host }),
                Pc::Report => out.push(Action::Report { host }),
                Pc::Call => {
                    out.push(Action::Call { host, result: CallResult::Succeeded });
                    if matches!(h.job, Job::Attempt(_)) && s.effect_faults < self.bounds.effect_faults {
                        for result in [CallResult::Failed, CallResult::Lost, CallResult::Twice] {
                            out.push(Action::Call { host, result });
                        }
                    }
                }
            }
            if s.crashes < self.bounds.crashes {
                out.push(Action::Crash { host });
            }
        }
        // A host step takes no time, and the background pass dispatches what is
        // due before time moves on (the simulator's scheduler does the same): the
        // clock moves only when every host is idle and nothing is due, so a lease
        // never runs out under a live host (a crashed one's does).
        if s.hosts.iter().any(|h| h.pc != Pc::Idle) || !self.due_list(s.store, s.now).is_empty() {
            return;
        }
        if let Some(&ms) = self.advances.get(s.next_advance as usize) {
            out.push(Action::Advance { to: s.now + ms, why: Clock::Scenario });
        }
        let now = s.now;
        let info = self.info(s.store);
        let next_due = info.next_due.filter(|&t| t > now);
        let expiry = info.expiries.iter().copied().find(|&t| t > now);
        if let Some(t) = next_due {
            out.push(Action::Advance { to: t, why: Clock::Due });
        }
        if let Some(t) = expiry {
            if s.expiries < self.bounds.expiries && Some(t) != next_due {
                out.push(Action::Advance { to: t, why: Clock::Expiry });
            }
        }
    }

    /// Apply `a` to `s`: the state after it, and the breach of the property
    /// it made, if any (the state then shows the breach).
    pub fn step(&mut self, s: &State, a: Action) -> (State, Result<(), Violation>) {
        let mut t = s.clone();
        self.last_out = None;
        self.last_answer = None;
        let r = self.apply(s, &mut t, a);
        (t, r)
    }

    fn apply(&mut self, s: &State, t: &mut State, a: Action) -> Result<(), Violation> {
        match a {
            Action::Deliver { event, host } | Action::Resend { event, host } => {
                let idx = if matches!(a, Action::Resend { .. }) { self.n() + event as usize } else { event as usize };
                if matches!(a, Action::Resend { .. }) {
                    t.fresh += 1;
                }
                t.delivered |= 1 << idx;
                let ev = self.client[idx];
                let h = Host { job: Job::Client(idx as u8), ev, ..Host::default() };
                self.load_reduce(t, host, h)?;
            }
            Action::Dispatch { item, host } => {
                let id = self.due_list(s.store, s.now)[item as usize];
                let h = self.item_jobs[id as usize];
                if h.pc == Pc::Call {
                    t.hosts[host as usize] = h;
                } else {
                    self.load_reduce(t, host, h)?;
                }
            }
            Action::Commit { host } => self.commit(t, host)?,
            Action::Call { host, result } => self.call(t, host, result)?,
            Action::Report { host } => {
                let h = t.hosts[host as usize];
                self.load_reduce(t, host, h)?;
            }
            Action::Crash { host } => {
                t.crashes += 1;
                t.hosts[host as usize] = Host::default();
            }
            Action::Advance { to, why } => {
                t.now = to;
                match why {
                    Clock::Scenario => t.next_advance += 1,
                    Clock::Expiry => t.expiries += 1,
                    Clock::Due => {}
                }
            }
        }
        Ok(())
    }

    /// The frozen response of a logical id with a recorded outcome, and the end of its retention window.
    fn seen(t: &State, logical: u32) -> Option<(u32, u64, u32)> {
        t.frozen.binary_search_by_key(&logical, |f| f.0).ok().map(|i| (t.frozen[i].1, t.frozen[i].2, t.frozen[i].3))
    }

    fn load_reduce(&mut self, t: &mut State, host: u8, mut h: Host) -> Result<(), Violation> {
        h.version = t.version;
        h.at = t.now;
        h.out = self.reduce(t.store, h.ev, t.now)?;
        self.last_out = Some(h.out);
        h.repeat = Self::seen(t, self.events[h.ev as usize].logical).is_some();
        h.pc = Pc::Reduced;
        if self.bounds.faults.effects_before_commit && matches!(h.job, Job::Client(_)) {
            for &(key, idempotent) in self.outs[h.out as usize].effects.clone().iter() {
                self.perform(t, key, idempotent, false)?;
            }
        }
        if self.outs[h.out as usize].snapshot == 0 {
            // Nothing to write: the host answers (or moves on) at once; what it
            // answered was true of the version it loaded.
            if matches!(h.job, Job::Client(_)) {
                self.last_answer = Some((h.ev, h.at));
            }
            return self.done(t, host, h);
        }
        t.hosts[host as usize] = h;
        Ok(())
    }

    fn commit(&mut self, t: &mut State, host: u8) -> Result<(), Violation> {
        let h = t.hosts[host as usize];
        let written = self.outs[h.out as usize].snapshot;
        if written != 0 {
            if h.version != t.version && !self.bounds.faults.no_compare_and_set {
                // Conflict: another host committed first; load and reduce again.
                return self.load_reduce(t, host, h);
            }
            t.store = written;
            t.version += 1;
            self.follow(t, &h)?;
        }
        self.done(t, host, h)
    }

    /// After the commit (or with nothing to write): a delivery replies, a claim
    /// that owns its attempt calls the gateway, a result reported twice goes
    /// round once more; anything else ends the job. The reply is checked here:
    /// a crash between commit and reply only loses the answer, and the client's
    /// redelivery is explored anyway.
    fn done(&mut self, t: &mut State, host: u8, mut h: Host) -> Result<(), Violation> {
        let status = self.outs[h.out as usize].status;
        if matches!(h.job, Job::Client(_)) {
            self.reply(t, &h)?;
        }
        h.pc = match (h.job, h.phase) {
            (Job::Attempt(_), 0) if status == Status::Applied || self.bounds.faults.ignore_claim => {
                h.claimed_at = h.at;
                Pc::Call
            }
            (Job::Attempt(_) | Job::Verify(_), 1) if h.twice => {
                h.twice = false;
                Pc::Report
            }
            _ => Pc::Idle,
        };
        t.hosts[host as usize] = if h.pc == Pc::Idle { Host::default() } else { h };
        Ok(())
    }

    /// The reference takes the committed event unless it is a repeat; then the
    /// store must hold the reference's state value and context.
    fn follow(&mut self, t: &mut State, h: &Host) -> Result<(), Violation> {
        let out = self.outs[h.out as usize].clone();
        let logical = self.events[h.ev as usize].logical;
        let id = || self.events[h.ev as usize].value["id"].as_str().unwrap_or("").to_string();
        let repeat = Self::seen(t, logical);
        if repeat.is_some() {
            // Past its retention window a repeat may be judged again by the
            // topology; it must still leave state, context and effects alone.
            if !out.effects.is_empty() {
                return Err(self.violation(format!("a repeat of {} was applied again and emitted effect {}", id(), self.strings.all[out.effects[0].0 as usize])));
            }
        } else {
            let r = self.reduce(t.reference, h.ev, h.at)?;
            let (snapshot, response) = (self.outs[r as usize].snapshot, self.outs[r as usize].response);
            if snapshot != 0 {
                t.reference = snapshot;
                let at = t.frozen.partition_point(|f| f.0 < logical);
                let ty = self.events[h.ev as usize].value["type"].as_str().unwrap_or("");
                let until = h.at.saturating_add(self.m.retention_for(ty));
                Rc::make_mut(&mut t.frozen).insert(at, (logical, response, until, h.ev));
            }
        }
        if t.store != t.reference {
            let (store, reference) = (t.store, t.reference);
            self.info(store);
            self.info(reference);
            if self.snaps[&store].state_text != self.snaps[&reference].state_text {
                let (a, b) = (&self.snaps[&store].state_text, &self.snaps[&reference].state_text);
                let id = self.events[h.ev as usize].value["id"].as_str().unwrap_or("");
                let what = if repeat.is_some() { format!("a repeat of {id}") } else { id.to_string() };
                return Err(self.violation(format!("after {what} the store holds {a} but the schedule without repeats gives {b}")));
            }
        }
        Ok(())
    }

    fn reply(&mut self, t: &State, h: &Host) -> Result<(), Violation> {
        if !h.repeat {
            return Ok(());
        }
        let out = &self.outs[h.out as usize];
        let logical = self.events[h.ev as usize].logical;
        let Some((frozen, until, recorded)) = Self::seen(t, logical) else { return Ok(()) };
        // Within the window the ledger answers every repeat of the id it
        // recorded with the frozen response (another id of the same logical
        // event, a fresh re-send, is the machine's to absorb).
        if recorded == h.ev && h.at < until && (out.status != Status::Duplicate || out.response != frozen) {
            let id = self.events[h.ev as usize].value["id"].as_str().unwrap_or("").to_string();
            let (got, want) = (self.strings.all[out.response as usize].clone(), self.strings.all[frozen as usize].clone());
            let status = out.status.as_str();
            return Err(self.violation(format!("the reply to a repeat of {id} within its retention window is {status} {got}, not the frozen response {want}")));
        }
        Ok(())
    }

    fn call(&mut self, t: &mut State, host: u8, result: CallResult) -> Result<(), Violation> {
        let mut h = t.hosts[host as usize];
        let (Job::Attempt(item) | Job::Verify(item)) = h.job else { unreachable!("only effect jobs call the gateway") };
        let (key, idempotent) = self.item_keys[item as usize];
        // What the report says: 0 succeeded, 1 declined, 2 unknown, 3 verified (exists), 4 verified (absent).
        let said = if matches!(h.job, Job::Verify(_)) {
            if t.gateway.iter().any(|g| g.0 == key && g.2 == 1) {
                3
            } else {
                4
            }
        } else {
            if t.now >= h.claimed_at + crate::outbox::ATTEMPT_LEASE_MS {
                // The lease is over; another dispatcher may own the attempt now.
                t.hosts[host as usize] = Host::default();
                return Ok(());
            }
            if result != CallResult::Succeeded {
                t.effect_faults += 1;
            }
            let answer = self.perform(t, key, idempotent, result == CallResult::Failed)?;
            match (result, answer) {
                (CallResult::Lost, _) => 2,
                (_, 2) => 1,
                _ => 0,
            }
        };
        h.ev = match self.reports.get(&(item, said)) {
            Some(&ev) => ev,
            None => {
                let ev = self.report_event(item, said);
                self.reports.insert((item, said), ev);
                ev
            }
        };
        h.twice = result == CallResult::Twice;
        h.phase = 1;
        h.pc = Pc::Report;
        t.hosts[host as usize] = h;
        Ok(())
    }

    /// The event a dispatcher reports for `item` after the gateway said `said` (see `call`).
    fn report_event(&mut self, item: u32, said: u8) -> u32 {
        let it = self.items[item as usize].clone();
        let mut payload = json!({ "key": it["key"], "attempt": it["attempt"] });
        let kind = match said {
            0 => {
                payload["result"] = result_of(&it);
                "idem.effect.succeeded"
            }
            1 => {
                payload["retryable"] = json!(false);
                payload["error"] = json!("declined");
                "idem.effect.failed"
            }
            2 => {
                payload["error"] = json!("timeout");
                "idem.effect.unknown"
            }
            _ => {
                payload["exists"] = json!(said == 3);
                payload["result"] = if said == 3 { result_of(&it) } else { Value::Null };
                "idem.effect.verified"
            }
        };
        self.event(json!({ "id": it["resultId"], "type": kind, "payload": payload }), None)
    }

    /// The gateway performs `key` (or answers from its memory of the key); its answer: 1 done, 2 declined.
    fn perform(&mut self, t: &mut State, key: u32, idempotent: bool, declined: bool) -> Result<u8, Violation> {
        let gateway = Rc::make_mut(&mut t.gateway);
        let at = gateway.partition_point(|g| g.0 < key);
        if at == gateway.len() || gateway[at].0 != key {
            gateway.insert(at, (key, 0, 0));
        }
        let g = &mut gateway[at];
        if idempotent && !self.bounds.faults.gateway_without_keys && g.2 != 0 {
            return Ok(g.2);
        }
        if declined {
            g.2 = 2;
            return Ok(2);
        }
        g.1 = g.1.saturating_add(1);
        g.2 = 1;
        let times = g.1;
        let name = self.strings.all[key as usize].clone();
        if times > 1 {
            return Err(self.violation(format!("effect {name} was performed {times} times at the provider")));
        }
        if !self.info(t.reference).outbox_keys.contains(&key) {
            return Err(self.violation(format!("effect {name} reached the provider before any committed event emitted it")));
        }
        Ok(1)
    }

    fn violation(&self, message: String) -> Violation {
        Violation { message }
    }
}

/// A reply as the host sends it. Replies are compared byte for byte: the engine writes a
/// response's members in key order both when it first answers and when the ledger replays it
/// (tests/check.rs `a_repeat_replays_the_first_reply_byte_for_byte`).
pub fn reply_text(v: &Value) -> String {
    crate::json::to_text(v)
}

/// What the gateway answers for an attempt: the same value every time, so
/// that schedules differing only in who called are one state.
fn result_of(item: &Value) -> Value {
    json!({ "id": format!("{}:{}", item["type"].as_str().unwrap_or(""), item["key"].as_str().unwrap_or("")) })
}
