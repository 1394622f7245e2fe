//! One simulated execution: an in-memory store with compare-and-set, hosts
//! running the loop `load -> reduce -> commit (if changed) -> reply -> dispatch`
//! as step machines interleaved by a seeded scheduler, dispatchers reporting
//! effect attempts back through `reduce`, payment gateways, and the faults:
//! duplicated, reordered and late deliveries, crashes between any two steps,
//! lost replies, gateway timeouts and network errors.
//!
//! After the execution reaches quiescence (nothing running, nothing due) the
//! invariants are checked; every breach is a violation with a readable line.

use super::rng::Rng;
use super::workload::{plan, Chaos, Kind, Planned};
use crate::{EmittedEffect, Machine, Status};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Deliberate defects, to prove that the checks catch what they claim to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// The store writes without comparing versions (last writer wins).
    pub no_compare_and_set: bool,
    /// The host performs effects straight from the reduce outcome, before committing.
    pub effects_before_commit: bool,
    /// Dispatchers call the gateway even when another one owns the attempt.
    pub ignore_claim: bool,
    /// The gateways ignore idempotency keys.
    pub gateway_without_keys: bool,
}

/// Totals over executions.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub executions: u64,
    pub events: u64,
    pub deliveries: u64,
    pub duplicates: u64,
    pub conflicts: u64,
    pub crashes: u64,
    pub effects: u64,
    pub commits: u64,
    pub lost_replies: u64,
    pub timeouts: u64,
    pub verifies: u64,
    pub expired: u64,
    pub timers: u64,
    pub ticks: u64,
    pub crash_points: BTreeMap<&'static str, u64>,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        self.executions += o.executions;
        self.events += o.events;
        self.deliveries += o.deliveries;
        self.duplicates += o.duplicates;
        self.conflicts += o.conflicts;
        self.crashes += o.crashes;
        self.effects += o.effects;
        self.commits += o.commits;
        self.lost_replies += o.lost_replies;
        self.timeouts += o.timeouts;
        self.verifies += o.verifies;
        self.expired += o.expired;
        self.timers += o.timers;
        self.ticks += o.ticks;
        for (k, v) in &o.crash_points {
            *self.crash_points.entry(k).or_default() += v;
        }
    }
}

/// How one execution is set up beyond its seed.
#[derive(Clone, Debug, Default)]
pub struct Opts {
    /// Chaos knobs turned off (bits of `workload::SHRINK_BITS`).
    pub shrink: u32,
    /// Indices (in plan order) of events left out.
    pub drop: Vec<usize>,
    pub trace: bool,
    pub faults: Faults,
}

pub struct Report {
    pub kind: Kind,
    pub stats: Stats,
    pub violations: Vec<String>,
    pub trace: Vec<String>,
    pub planned: usize,
}

/// Bound on scheduler ticks: an execution that has not settled by then is a violation.
const MAX_TICKS: u64 = 200_000;
/// Bound on compare-and-set retries of one host call before it gives up (and its caller retries).
const MAX_CAS_TRIES: u32 = 40;
/// Bound on a retrying sender's attempts.
const MAX_SENDS: u32 = 200;

/// The two machines the workload drives (tests/machines/order.json and
/// tests/sim/checkout.json), loaded by the caller.
pub struct Machines {
    pub order: Machine,
    pub checkout: Machine,
}


pub fn kind_of(seed: u64) -> Kind {
    if seed % 2 == 0 {
        Kind::Order
    } else {
        Kind::Checkout
    }
}

/// Run the execution of `seed`.
pub fn run(machines: &Machines, seed: u64, opts: &Opts) -> Report {
    let kind = kind_of(seed);
    let m = match kind {
        Kind::Order => &machines.order,
        Kind::Checkout => &machines.checkout,
    };
    let mut setup = Rng::new(seed);
    let mut chaos = Chaos::draw(&mut setup);
    let processes = setup.range(1, 2) as usize;
    let mut planned = plan(kind, processes, &mut setup, &chaos);
    let total = planned.len();
    chaos.shrink(opts.shrink);
    planned = planned
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !opts.drop.contains(i))
        .map(|(_, mut p)| {
            p.copies.truncate(chaos.max_copies as usize);
            if chaos.late_p == 0.0 {
                let first = p.copies[0];
                for c in p.copies.iter_mut() {
                    *c = (*c).min(first + 300);
                }
            }
            p
        })
        .collect();
    let mut w = World::new(m, kind, processes, chaos, opts, Rng::new(seed ^ 0x5EED_5EED_5EED_5EED));
    w.trace_line(format!(
        "seed {seed}: {} process(es) of {}, {} event(s), chaos {:?}",
        processes,
        kind.name(),
        planned.len(),
        w.chaos
    ));
    for p in planned {
        w.add_sender(p);
    }
    w.execute();
    w.check();
    w.stats.executions = 1;
    Report { kind, stats: w.stats, violations: w.violations, trace: w.trace.unwrap_or_default(), planned: total }
}

// ---------------------------------------------------------------------------

struct Store {
    rows: Vec<(Option<String>, u64)>,
    compare_and_set: bool,
}

impl Store {
    fn load(&self, p: usize) -> (Option<String>, u64) {
        self.rows[p].clone()
    }

    /// Write when the stored version is still `expected`; the new version is `expected + 1`.
    fn commit(&mut self, p: usize, expected: u64, snapshot: String) -> bool {
        let row = &mut self.rows[p];
        if self.compare_and_set && row.1 != expected {
            return false;
        }
        row.1 += 1;
        row.0 = Some(snapshot);
        true
    }
}

/// Payment, shipping and receipt providers. Idempotent ones remember the answer
/// per key and never perform a key twice; the receipt provider performs every
/// request that reaches it and can be asked whether an operation exists.
#[derive(Default)]
struct Gateway {
    answers: HashMap<String, Value>,
    /// Operations actually performed, per key.
    performed: HashMap<String, u32>,
    /// Operations performed per logical operation (process, type, round).
    per_operation: HashMap<String, u32>,
    /// The first request of each key: (process, type, payload).
    first: HashMap<String, (usize, String, Value)>,
    next_id: u64,
    honour_keys: bool,
}

/// One request to a provider, on behalf of a process.
#[derive(Clone, Copy)]
struct Request<'a> {
    process: usize,
    key: &'a str,
    ty: &'a str,
    payload: &'a Value,
    idempotent: bool,
}

enum GatewayAnswer {
    Ok(Value),
    Declined,
    NetworkError,
    Timeout,
}

impl Gateway {
    fn operation(process: usize, ty: &str, payload: &Value) -> String {
        match ty {
            "charge" => format!("{process}/charge/round {}", payload[0]),
            _ => format!("{process}/{ty}"),
        }
    }

    fn perform(&mut self, process: usize, key: &str, ty: &str, payload: &Value) -> Value {
        *self.performed.entry(key.to_string()).or_default() += 1;
        *self.per_operation.entry(Self::operation(process, ty, payload)).or_default() += 1;
        self.next_id += 1;
        json!({ "id": format!("{ty}_{}", self.next_id) })
    }

    fn call(&mut self, rng: &mut Rng, chaos: &Chaos, r: &Request) -> GatewayAnswer {
        let Request { process, key, ty, payload, idempotent } = *r;
        self.first.entry(key.to_string()).or_insert_with(|| (process, ty.to_string(), payload.clone()));
        if rng.chance(chaos.network_p) {
            return GatewayAnswer::NetworkError; // never reached the provider
        }
        let answer = if idempotent && self.honour_keys && self.answers.contains_key(key) {
            self.answers[key].clone()
        } else if ty == "charge" && rng.chance(chaos.decline_p) {
            json!({ "declined": true })
        } else {
            json!({ "ok": self.perform(process, key, ty, payload) })
        };
        self.answers.insert(key.to_string(), answer.clone());
        if rng.chance(chaos.timeout_p) {
            return GatewayAnswer::Timeout; // done (or declined) at the provider, the answer is lost
        }
        match answer.get("ok") {
            Some(r) => GatewayAnswer::Ok(r.clone()),
            None => GatewayAnswer::Declined,
        }
    }

    /// Does an operation with this key exist at the provider?
    fn verify(&self, key: &str) -> (bool, Value) {
        match self.answers.get(key).and_then(|a| a.get("ok")) {
            Some(r) => (true, r.clone()),
            None => (false, Value::Null),
        }
    }
}

#[derive(Clone, Debug)]
enum Job {
    /// One copy of a sender's event.
    Deliver { sender: usize },
    /// An `attempt` item: claim it (`started`), call the gateway, report the result.
    Attempt { item: Value },
    /// A `verify` item: ask the provider, report what it said.
    Verify { item: Value },
    /// An `expire` item's report or a timer's event, reduced as it is.
    Report { event: Value },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Load,
    Reduce,
    Commit,
    Call,
    Reply,
    Dispatch,
}

struct Worker {
    id: u64,
    process: usize,
    job: Job,
    step: Step,
    /// Attempt jobs: 0 while claiming, 1 while reporting the result.
    phase: u8,
    event: Value,
    loaded: Option<String>,
    version: u64,
    outcome: Option<crate::Outcome>,
    cas_tries: u32,
    claimed_at: u64,
    /// Host time given to `reduce`.
    reduced_at: u64,
}

struct Sender {
    plan: Planned,
    answer: Option<Status>,
    sends: u32,
}

struct Commit {
    event: Value,
    now: u64,
    status: Status,
    revision: u64,
    snapshot: String,
    response: Value,
    effects: Vec<EmittedEffect>,
}

struct Reply {
    process: usize,
    sender: usize,
    status: Status,
    response: Value,
}

struct World<'m> {
    m: &'m Machine,
    /// The same definition built again: every snapshot the engine gives back is
    /// read in it, so nothing the resident machine remembers can hide a
    /// snapshot idem cannot read back.
    fresh: Machine,
    kind: Kind,
    names: Vec<String>,
    store: Store,
    gateway: Gateway,
    senders: Vec<Sender>,
    pending: Vec<(u64, usize, Job)>,
    live: Vec<Worker>,
    commits: Vec<Vec<Commit>>,
    replies: Vec<Reply>,
    now: u64,
    rng: Rng,
    chaos: Chaos,
    faults: Faults,
    stats: Stats,
    trace: Option<Vec<String>>,
    violations: Vec<String>,
    next_worker: u64,
}

fn short(e: &Value) -> String {
    let p = &e["payload"];
    let payload = if p.as_object().is_some_and(|o| o.is_empty()) { String::new() } else { format!(" {p}") };
    format!("{} {}{}", e["id"].as_str().unwrap_or("?"), e["type"].as_str().unwrap_or("?"), payload)
}

/// Read `snapshot` in `fresh` (a machine with no copy of it) and compare its
/// state value, context and revision with what `reduce` answered: the state
/// value and revision of the outcome, the context its snapshot text holds.
pub fn read_back(fresh: &Machine, snapshot: &str, o: &crate::Outcome) -> Result<(), String> {
    let read = crate::inspect(fresh, snapshot).map_err(|e| format!("cannot be read back by a fresh machine: {e}"))?;
    let written = crate::Snapshot::decode(snapshot, usize::MAX).map_err(|e| format!("cannot be decoded: {e}"))?.to_value();
    if read["value"] != o.state {
        return Err(format!("reads back in state {} but reduce answered {}", read["value"], o.state));
    }
    if read["context"] != written["context"] {
        return Err(format!("reads back with context {} but holds {}", read["context"], written["context"]));
    }
    if read["revision"] != json!(o.revision) {
        return Err(format!("reads back at revision {} but reduce answered {}", read["revision"], o.revision));
    }
    Ok(())
}

impl<'m> World<'m> {
    fn new(m: &'m Machine, kind: Kind, processes: usize, chaos: Chaos, opts: &Opts, rng: Rng) -> World<'m> {
        World {
            m,
            fresh: Machine::from_json(&m.definition_json()).expect("a machine's own definition builds again"),
            kind,
            names: (1..=processes).map(|i| format!("{}-{i}", kind.name())).collect(),
            store: Store { rows: vec![(None, 0); processes], compare_and_set: !opts.faults.no_compare_and_set },
            gateway: Gateway { honour_keys: !opts.faults.gateway_without_keys, ..Gateway::default() },
            senders: Vec::new(),
            pending: Vec::new(),
            live: Vec::new(),
            commits: (0..processes).map(|_| Vec::new()).collect(),
            replies: Vec::new(),
            now: 1_000,
            rng,
            chaos,
            faults: opts.faults,
            stats: Stats::default(),
            trace: opts.trace.then(Vec::new),
            violations: Vec::new(),
            next_worker: 0,
        }
    }

    fn trace_line(&mut self, line: String) {
        if let Some(t) = &mut self.trace {
            t.push(line);
        }
    }

    fn log(&mut self, w: Option<&Worker>, what: impl FnOnce() -> String) {
        if self.trace.is_some() {
            let who = match w {
                Some(w) => format!("w{} {}", w.id, self.names[w.process]),
                None => "scheduler".to_string(),
            };
            let line = format!("t={:>7} {who}: {}", self.now, what());
            self.trace_line(line);
        }
    }

    fn violation(&mut self, v: String) {
        self.trace_line(format!("VIOLATION: {v}"));
        self.violations.push(v);
    }

    fn add_sender(&mut self, plan: Planned) {
        let s = self.senders.len();
        self.stats.events += 1;
        for &at in &plan.copies {
            self.pending.push((self.now + at, plan.process, Job::Deliver { sender: s }));
        }
        let sends = plan.copies.len() as u32;
        self.senders.push(Sender { plan, answer: None, sends });
    }

    /// A copy got no answer back to its sender (crash, lost reply, gave up): a retrying sender sends again.
    fn unanswered(&mut self, sender: usize) {
        let s = &mut self.senders[sender];
        if !s.plan.retrying || s.answer.is_some() {
            return;
        }
        if s.sends >= MAX_SENDS {
            let id = s.plan.event["id"].clone();
            self.violation(format!("sender of {id} gave up after {MAX_SENDS} sends"));
            return;
        }
        s.sends += 1;
        let process = s.plan.process;
        let at = self.now + self.rng.range(50, 2_000);
        self.pending.push((at, process, Job::Deliver { sender }));
    }

    fn push_job(&mut self, process: usize, job: Job) {
        let same = |j: &Job| match (j, &job) {
            (Job::Attempt { item: a }, Job::Attempt { item: b }) | (Job::Verify { item: a }, Job::Verify { item: b }) => a == b,
            (Job::Report { event: a }, Job::Report { event: b }) => a == b,
            _ => false,
        };
        // Racing dispatchers are welcome, but only among running workers: one queued copy is enough.
        if self.pending.iter().any(|(at, p, j)| *at <= self.now && *p == process && same(j)) {
            return;
        }
        self.pending.push((self.now, process, job));
    }

    fn jobs_for(&mut self, process: usize, snapshot: &str) {
        let items = match crate::outbox::due(self.m, snapshot, self.now) {
            Ok(items) => items,
            Err(e) => {
                let name = self.names[process].clone();
                return self.violation(format!("{name}: due() refused its own committed snapshot: {e}"));
            }
        };
        for item in items {
            let job = match item["kind"].as_str() {
                Some("attempt") => Job::Attempt { item },
                Some("verify") => Job::Verify { item },
                Some("expire") => Job::Report { event: item["report"].clone() },
                Some("timer") => Job::Report { event: item["event"].clone() },
                other => {
                    self.violation(format!("due() returned an item of unknown kind {other:?}"));
                    continue;
                }
            };
            self.push_job(process, job);
        }
    }

    /// A pass of the background dispatcher (an alarm or a cron): everything due in every process.
    fn sweep(&mut self) {
        for p in 0..self.names.len() {
            if let (Some(s), _) = self.store.load(p) {
                self.jobs_for(p, &s);
            }
        }
    }

    /// The earliest future time anything is due: a queued job or an effect, lease or timer.
    fn next_wake(&mut self) -> Option<u64> {
        let mut next = self.pending.iter().map(|(at, _, _)| *at).min();
        for p in 0..self.names.len() {
            if let (Some(s), _) = self.store.load(p) {
                if let Ok(items) = crate::outbox::due(self.m, &s, u64::MAX) {
                    for it in items {
                        if let Some(at) = it["dueAt"].as_u64() {
                            next = Some(next.map_or(at, |n| n.min(at)));
                        }
                    }
                }
            }
        }
        next
    }

    fn execute(&mut self) {
        let mut ticks = 0u64;
        loop {
            ticks += 1;
            if ticks > MAX_TICKS {
                self.violation(format!("no quiescence after {MAX_TICKS} scheduler ticks"));
                break;
            }
            self.now += self.rng.below(4);
            let released: Vec<usize> = (0..self.pending.len()).filter(|&i| self.pending[i].0 <= self.now).collect();
            if !self.live.is_empty() || !released.is_empty() {
                let start = !released.is_empty()
                    && self.live.len() < self.chaos.max_workers
                    && (self.live.is_empty() || self.rng.chance(0.6));
                if start {
                    let i = released[self.rng.below(released.len() as u64) as usize];
                    let (_, process, job) = self.pending.swap_remove(i);
                    self.start(process, job);
                } else {
                    let i = self.rng.below(self.live.len() as u64) as usize;
                    let w = self.live.swap_remove(i);
                    if let Some(w) = self.step(w) {
                        self.live.push(w);
                    }
                }
                if self.rng.chance(0.01) {
                    self.sweep();
                }
                continue;
            }
            // Nothing running and nothing arrived: the background dispatcher looks, then time jumps.
            let before = self.pending.len();
            self.sweep();
            if self.pending.len() > before {
                continue;
            }
            match self.next_wake() {
                Some(at) => {
                    let at = at.max(self.now + 1);
                    self.log(None, || format!("idle until t={at}"));
                    self.now = at;
                }
                None => break,
            }
        }
        self.stats.ticks = ticks;
    }

    fn start(&mut self, process: usize, job: Job) {
        self.next_worker += 1;
        let event = match &job {
            Job::Deliver { sender } => {
                self.stats.deliveries += 1;
                self.senders[*sender].plan.event.clone()
            }
            Job::Attempt { item } => item["started"].clone(),
            Job::Verify { .. } => Value::Null,
            Job::Report { event } => {
                if event["type"] == "idem.after" {
                    self.stats.timers += 1;
                } else {
                    self.stats.expired += 1;
                }
                event.clone()
            }
        };
        let step = if matches!(job, Job::Verify { .. }) { Step::Call } else { Step::Load };
        let w = Worker {
            id: self.next_worker,
            process,
            job,
            step,
            phase: 0,
            event,
            loaded: None,
            version: 0,
            outcome: None,
            cas_tries: 0,
            claimed_at: 0,
            reduced_at: 0,
        };
        let impostor = matches!(w.job, Job::Deliver { sender } if self.senders[sender].plan.impostor);
        self.log(Some(&w), || match &w.job {
            Job::Deliver { .. } => {
                let bug = if impostor { " (an impostor: reuses another event's id)" } else { "" };
                format!("receive {}{bug}", short(&w.event))
            }
            Job::Attempt { item } => format!("dispatch attempt {}", item["attemptId"]),
            Job::Verify { item } => format!("dispatch verify {}", item["attemptId"]),
            Job::Report { event } => format!("dispatch {}", short(event)),
        });
        self.live.push(w);
    }

    fn crash_point(w: &Worker) -> &'static str {
        match (&w.job, w.step, w.phase) {
            (_, Step::Load, 1) => "after the gateway call, before its result was recorded",
            (_, Step::Load, _) => "before load",
            (_, Step::Reduce, _) => "after load, before reduce",
            (_, Step::Commit, _) => "after reduce, before commit",
            (Job::Attempt { .. }, Step::Call, _) => "after the claim, before the gateway call",
            (_, Step::Call, _) => "before the verify call",
            (_, Step::Reply, _) => "after commit, before reply",
            (_, Step::Dispatch, _) => "after reply, before dispatch",
        }
    }

    /// Advance one worker by one step; `None` when it is finished or crashed.
    fn step(&mut self, mut w: Worker) -> Option<Worker> {
        if self.rng.chance(self.chaos.crash_p) {
            let point = Self::crash_point(&w);
            self.stats.crashes += 1;
            *self.stats.crash_points.entry(point).or_default() += 1;
            self.log(Some(&w), || format!("CRASH {point}"));
            if let Job::Deliver { sender } = w.job {
                self.unanswered(sender);
            }
            return None;
        }
        match w.step {
            Step::Load => {
                let (s, v) = self.store.load(w.process);
                w.loaded = s;
                w.version = v;
                w.step = Step::Reduce;
                self.log(Some(&w), || format!("load version {v}"));
            }
            Step::Reduce => {
                let name = &self.names[w.process];
                let o = self.m.reduce_in(name, w.loaded.as_deref(), &w.event, self.now);
                self.log(Some(&w), || {
                    let fx: Vec<&str> = o.effects.iter().map(|e| e.key.as_str()).collect();
                    format!(
                        "reduce {} -> {} rev {} state {}{}",
                        short(&w.event),
                        o.status.as_str(),
                        o.revision,
                        o.state,
                        if fx.is_empty() { String::new() } else { format!(" effects {fx:?}") }
                    )
                });
                if o.status == Status::Duplicate {
                    self.stats.duplicates += 1;
                }
                if let Some(s) = &o.snapshot {
                    if let Err(v) = read_back(&self.fresh, s, &o) {
                        let (n, e) = (self.names[w.process].clone(), short(&w.event));
                        self.violation(format!("{n}: the snapshot written for {e} {v}"));
                    }
                }
                if o.status == Status::Rejected {
                    let (n, e) = (self.names[w.process].clone(), short(&w.event));
                    self.violation(format!("{n}: {e} was rejected: {:?}", o.error));
                }
                if self.faults.effects_before_commit && matches!(w.job, Job::Deliver { .. }) {
                    for e in o.effects.clone() {
                        let r = Request { process: w.process, key: &e.key, ty: &e.effect_type, payload: &e.payload, idempotent: e.idempotent };
                        let _ = self.gateway.call(&mut self.rng, &self.chaos, &r);
                    }
                }
                w.outcome = Some(o);
                w.reduced_at = self.now;
                w.step = Step::Commit;
            }
            Step::Commit => {
                let o = w.outcome.clone().expect("reduced");
                if let Some(s) = o.snapshot.clone() {
                    if !self.store.commit(w.process, w.version, s.clone()) {
                        self.stats.conflicts += 1;
                        w.cas_tries += 1;
                        self.log(Some(&w), || format!("commit on version {}: conflict", w.version));
                        if w.cas_tries >= MAX_CAS_TRIES {
                            self.log(Some(&w), || "gives up".into());
                            if let Job::Deliver { sender } = w.job {
                                self.unanswered(sender);
                            }
                            return None;
                        }
                        w.step = Step::Load;
                        return Some(w);
                    }
                    self.stats.commits += 1;
                    self.log(Some(&w), || format!("commit on version {}: ok", w.version));
                    let c = Commit {
                        event: w.event.clone(),
                        now: w.reduced_at,
                        status: o.status,
                        revision: o.revision,
                        snapshot: s.clone(),
                        response: o.response.clone(),
                        effects: o.effects.clone(),
                    };
                    self.commits[w.process].push(c);
                    w.loaded = Some(s);
                }
                w.step = match (&w.job, w.phase) {
                    (Job::Deliver { .. }, _) => Step::Reply,
                    (Job::Attempt { .. }, 0) => {
                        let owned = w.outcome.as_ref().is_some_and(|o| o.status == Status::Applied);
                        if !owned && !self.faults.ignore_claim {
                            self.log(Some(&w), || "attempt owned by another dispatcher: skip".into());
                            return None;
                        }
                        w.claimed_at = self.now;
                        Step::Call
                    }
                    _ => Step::Dispatch,
                };
            }
            Step::Call => return self.call(w),
            Step::Reply => {
                let Job::Deliver { sender } = w.job else { unreachable!("only deliveries reply") };
                if self.rng.chance(self.chaos.lost_reply_p) {
                    self.stats.lost_replies += 1;
                    self.log(Some(&w), || "reply lost".into());
                    self.unanswered(sender);
                } else {
                    let o = w.outcome.as_ref().expect("reduced");
                    self.replies.push(Reply { process: w.process, sender, status: o.status, response: o.response.clone() });
                    let s = &mut self.senders[sender];
                    s.answer.get_or_insert(o.status);
                    self.log(Some(&w), || format!("reply {}", o.status.as_str()));
                }
                w.step = Step::Dispatch;
            }
            Step::Dispatch => {
                if let Some(s) = w.loaded.clone() {
                    self.jobs_for(w.process, &s);
                }
                return None;
            }
        }
        Some(w)
    }

    /// The gateway step of an attempt or a verification.
    fn call(&mut self, mut w: Worker) -> Option<Worker> {
        let item = match &w.job {
            Job::Attempt { item } | Job::Verify { item } => item.clone(),
            _ => unreachable!("only effect jobs call the gateway"),
        };
        let key = item["key"].as_str().expect("key").to_string();
        let ty = item["type"].as_str().expect("type").to_string();
        let attempt = item["attempt"].clone();
        let report = |t: &str, extra: Value| {
            let mut payload = json!({ "key": key, "attempt": attempt });
            payload.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            json!({ "id": item["resultId"], "type": t, "payload": payload })
        };
        let event = if matches!(w.job, Job::Verify { .. }) {
            self.stats.verifies += 1;
            if self.rng.chance(self.chaos.timeout_p) {
                self.stats.timeouts += 1;
                self.log(Some(&w), || format!("verify {key}: no answer"));
                return None; // still verifying: due again at the next pass
            }
            let (exists, result) = self.gateway.verify(&key);
            self.log(Some(&w), || format!("verify {key}: exists {exists}"));
            report("idem.effect.verified", json!({ "exists": exists, "result": result }))
        } else {
            if self.now >= w.claimed_at + crate::outbox::ATTEMPT_LEASE_MS {
                // The lease is over; another dispatcher may own the effect now.
                self.log(Some(&w), || format!("lease of {key} expired before the call: abandon"));
                return None;
            }
            let idempotent = item["idempotent"].as_bool().expect("idempotent");
            let r = Request { process: w.process, key: &key, ty: &ty, payload: &item["payload"], idempotent };
            let answer = self.gateway.call(&mut self.rng, &self.chaos, &r);
            match answer {
                GatewayAnswer::Ok(result) => {
                    self.log(Some(&w), || format!("{ty} {key}: ok {result}"));
                    report("idem.effect.succeeded", json!({ "result": result }))
                }
                GatewayAnswer::Declined => {
                    self.log(Some(&w), || format!("{ty} {key}: declined"));
                    report("idem.effect.failed", json!({ "retryable": false, "error": "declined" }))
                }
                GatewayAnswer::NetworkError => {
                    self.log(Some(&w), || format!("{ty} {key}: network error"));
                    report("idem.effect.failed", json!({ "retryable": true, "error": "network error" }))
                }
                GatewayAnswer::Timeout => {
                    self.stats.timeouts += 1;
                    self.log(Some(&w), || format!("{ty} {key}: timeout"));
                    report("idem.effect.unknown", json!({ "error": "timeout" }))
                }
            }
        };
        w.event = event;
        w.phase = 1;
        w.cas_tries = 0;
        w.step = Step::Load;
        Some(w)
    }

    // -----------------------------------------------------------------------
    // Invariants

    fn check(&mut self) {
        self.stats.effects = self.gateway.performed.values().map(|&n| n as u64).sum();
        for p in 0..self.names.len() {
            self.check_process(p);
        }
        self.check_senders();
        self.check_gateway();
    }

    fn check_process(&mut self, p: usize) {
        let name = self.names[p].clone();
        let commits = std::mem::take(&mut self.commits[p]);
        let mut v = Vec::new();

        // Every distinct event id applied at most once (user events, reports, timers).
        let mut applied: HashMap<&str, usize> = HashMap::new();
        for c in &commits {
            *applied.entry(c.event["id"].as_str().unwrap_or("")).or_default() += 1;
        }
        for (id, n) in &applied {
            if *n > 1 {
                v.push(format!("{name}: event {id} applied {n} times"));
            }
        }

        // Revisions have no gap: commit i produced revision i + 1, and the store agrees.
        for (i, c) in commits.iter().enumerate() {
            if c.revision != i as u64 + 1 {
                v.push(format!("{name}: commit {} of {} produced revision {} (gap)", i + 1, short(&c.event), c.revision));
                break;
            }
        }
        let (stored, version) = self.store.load(p);
        if version != commits.len() as u64 {
            v.push(format!("{name}: store version {version} after {} commits", commits.len()));
        }

        // A clean, single delivery of the same distinct events in the same order of first
        // application, at the same times, gives the same final snapshot, byte for byte.
        let mut clean: Option<String> = None;
        for c in &commits {
            let o = self.m.reduce_in(&name, clean.as_deref(), &c.event, c.now);
            if o.status != c.status || o.snapshot.as_deref() != Some(c.snapshot.as_str()) {
                v.push(format!(
                    "{name}: {} at t={} was {} in the execution but {} in a clean delivery (a lost update or a second application)",
                    short(&c.event),
                    c.now,
                    c.status.as_str(),
                    o.status.as_str()
                ));
                break;
            }
            clean = o.snapshot;
        }
        if v.is_empty() && clean != stored {
            v.push(format!("{name}: the stored snapshot differs from the clean delivery's"));
        }

        if let Some(s) = &stored {
            match crate::inspect(self.m, s) {
                Err(e) => v.push(format!("{name}: final snapshot unreadable: {e}")),
                Ok(snap) => {
                    if snap["revision"] != json!(commits.len()) {
                        v.push(format!("{name}: final revision {} after {} commits", snap["revision"], commits.len()));
                    }
                    self.check_final(p, &snap, &commits, &mut v);
                }
            }
        }
        for x in v {
            self.violation(x);
        }
        self.commits[p] = commits;
    }

    /// The final snapshot at quiescence: effects all finished and consistent with the gateways.
    fn check_final(&self, p: usize, snap: &Value, commits: &[Commit], v: &mut Vec<String>) {
        let name = &self.names[p];
        let emitted: HashMap<&str, &EmittedEffect> =
            commits.iter().flat_map(|c| c.effects.iter()).map(|e| (e.key.as_str(), e)).collect();
        let outbox = snap["outbox"].as_array().cloned().unwrap_or_default();
        for e in &outbox {
            let key = e["key"].as_str().unwrap_or("");
            let state = e["state"].as_str().unwrap_or("");
            if !emitted.contains_key(key) {
                v.push(format!("{name}: outbox holds {key}, which no committed event emitted"));
            }
            match state {
                "succeeded" => {
                    let (exists, result) = self.gateway.verify(key);
                    if !exists {
                        v.push(format!("{name}: effect {key} succeeded but the provider never performed it"));
                    } else if e["result"] != result {
                        v.push(format!("{name}: effect {key} recorded result {} but the provider answered {result}", e["result"]));
                    }
                }
                "failed" => {}
                other => v.push(format!("{name}: effect {key} still {other} at quiescence")),
            }
        }
        for key in emitted.keys() {
            if !outbox.iter().any(|e| e["key"] == *key) {
                v.push(format!("{name}: effect {key} was committed but is missing from the outbox"));
            }
        }
        // Business facts the machines promise.
        let ctx = &snap["context"];
        let set = match self.kind {
            Kind::Order => &ctx["payments"],
            Kind::Checkout => &ctx["items"],
        };
        let items = set.as_array().cloned().unwrap_or_default();
        let distinct: HashSet<String> = items.iter().map(|x| x.to_string()).collect();
        if distinct.len() != items.len() {
            v.push(format!("{name}: the identified set {set} holds a duplicate"));
        }
    }

    fn check_senders(&mut self) {
        let mut v = Vec::new();
        for (i, s) in self.senders.iter().enumerate() {
            let p = s.plan.process;
            let id = s.plan.event["id"].as_str().unwrap_or("");
            let mine: Vec<&Commit> = self.commits[p].iter().filter(|c| c.event == s.plan.event).collect();
            let twin_applied = self.commits[p].iter().any(|c| c.event["id"] == id && c.event != s.plan.event);
            let name = &self.names[p];
            if mine.len() > 1 {
                continue; // already reported as applied more than once
            }
            if s.plan.retrying {
                match s.answer {
                    None => v.push(format!("{name}: retrying sender of {id} never got an answer")),
                    Some(Status::Applied | Status::Duplicate) if mine.len() != 1 => {
                        v.push(format!("{name}: {id} was answered as applied but applied {} times", mine.len()))
                    }
                    Some(Status::Conflict) if !twin_applied => {
                        v.push(format!("{name}: {id} was answered as a conflict but no other event used its id"))
                    }
                    Some(Status::Rejected) => v.push(format!("{name}: {id} was rejected")),
                    _ => {}
                }
            }
            // Every answer for an applied event replays the frozen response of its application.
            for r in self.replies.iter().filter(|r| r.sender == i && r.process == p) {
                if matches!(r.status, Status::Applied | Status::Duplicate) {
                    match mine.first() {
                        Some(c) if c.response == r.response => {}
                        Some(c) => v.push(format!(
                            "{name}: {id} answered {} with response {} but it was applied with {}",
                            r.status.as_str(),
                            r.response,
                            c.response
                        )),
                        None => v.push(format!("{name}: {id} answered {} but never applied", r.status.as_str())),
                    }
                }
            }
        }
        for x in v {
            self.violation(x);
        }
    }

    fn check_gateway(&mut self) {
        let mut v = Vec::new();
        let mut keys: Vec<&String> = self.gateway.performed.keys().collect();
        keys.sort();
        for key in keys {
            let n = self.gateway.performed[key];
            if n > 1 {
                v.push(format!("effect {key} performed {n} times at the provider"));
            }
        }
        let mut ops: Vec<(&String, &u32)> = self.gateway.per_operation.iter().collect();
        ops.sort();
        for (op, n) in ops {
            if *n > 1 {
                v.push(format!("operation {op} performed {n} times (under different keys)"));
            }
        }
        // Nothing reached a provider that a committed event did not emit (dispatch follows the commit).
        let mut first: Vec<(&String, &(usize, String, Value))> = self.gateway.first.iter().collect();
        first.sort_by_key(|(k, _)| *k);
        for (key, (p, ty, payload)) in first {
            let committed = self.commits[*p]
                .iter()
                .flat_map(|c| c.effects.iter())
                .any(|e| e.key == *key && e.effect_type == *ty && e.payload == *payload);
            if !committed {
                v.push(format!("{}: {ty} {key} reached the provider but no committed event emitted it", self.names[*p]));
            }
        }
        for x in v {
            self.violation(x);
        }
    }
}
