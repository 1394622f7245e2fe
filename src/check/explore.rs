//! Breadth-first exploration of a scenario's schedules (`idem check`).
//!
//! Every state reached is fingerprinted (XXH3-128 of its exact encoding:
//! interned strings stand for their whole text) and explored once; the
//! property is checked on every step, so the first breach found is on a
//! shortest schedule. The verdict is `proved` only when every state within the
//! bounds was explored; a state or time limit gives `inconclusive`.
//!
//! The core reads no clock: the caller passes `elapsed` (seconds since start)
//! for the time limit and the progress reports.

use super::model::{Action, Bounds, CallResult, Clock, Job, Pc, State, Violation, World};
use super::scenario::Scenario;
use crate::Machine;
use serde_json::{json, Value};
use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Property {
    /// Every schedule ends as it does with repeats removed, checked at every step.
    Dedup,
    /// Dedup, and every schedule that delivers every event once settles in the same state value and context.
    Confluent,
}

impl Property {
    pub fn as_str(self) -> &'static str {
        match self {
            Property::Dedup => "dedup",
            Property::Confluent => "confluent",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    pub bounds: Bounds,
    pub property: Property,
    pub max_states: u64,
    pub timeout_s: Option<f64>,
    pub process: String,
    /// Steps between two progress reports (and two looks at the time limit).
    pub progress_every: u64,
}

/// Steps between two progress lines of `idem check`.
pub const PROGRESS_EVERY: u64 = 50_000;

/// Progress of a run, reported every `Options::progress_every` steps.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    pub states: u64,
    pub distinct: u64,
    pub depth: u32,
    pub seconds: f64,
}

#[derive(Clone, Debug)]
pub enum Verdict {
    Proved,
    Violated(Box<Counterexample>),
    Inconclusive(String),
}

#[derive(Clone, Debug)]
pub struct Report {
    pub verdict: Verdict,
    pub progress: Progress,
    pub reduces: u64,
}

#[derive(Clone, Debug)]
pub struct Counterexample {
    pub violation: String,
    pub actions: Vec<Action>,
    pub steps: Vec<Value>,
    pub expected: Value,
    pub actual: Value,
    /// The events reduced whose outcome stood (committed, or answered without a write), as `idem run` lines.
    pub run: Vec<Value>,
    /// `confluent`: the state value and context another order settled in.
    pub other_order: Option<String>,
}

/// XXH3-128 of the state's exact encoding.
fn fingerprint(s: &State, buf: &mut Vec<u8>) -> u128 {
    buf.clear();
    s.encode(buf);
    xxhash_rust::xxh3::xxh3_128(buf)
}

/// Fingerprints are already uniform: the set keys on their low bits.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u128 keys")
    }
    fn write_u128(&mut self, v: u128) {
        self.0 = v as u64;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Probability that two distinct states of `n` share a 128-bit fingerprint (birthday bound).
pub fn collision_estimate(n: u64) -> f64 {
    let n = n as f64;
    n * n / 2f64.powi(129)
}

/// Explore every schedule of `scenario` within `opts`.
pub fn check(
    m: &Machine,
    scenario: &Scenario,
    opts: &Options,
    elapsed: &mut dyn FnMut() -> f64,
    progress: &mut dyn FnMut(&Progress),
) -> Report {
    let mut w = World::new(m, scenario, &opts.process, opts.bounds.clone());
    let start = w.initial();
    let mut buf = Vec::with_capacity(256);
    let mut seen: HashSet<u128, BuildHasherDefault<Identity>> = HashSet::default();
    seen.insert(fingerprint(&start, &mut buf));
    let mut parents: Vec<(u32, Action)> = vec![(u32::MAX, Action::Crash { host: 0 })];
    let mut queue: VecDeque<(State, u32, u32)> = VecDeque::from([(start, 0, 0)]);
    let mut p = Progress { distinct: 1, ..Progress::default() };
    let mut settled: Option<(String, u32)> = None;
    let every = opts.progress_every.max(1);
    let mut enabled = Vec::new();
    let mut next_report = every;
    while let Some((s, node, depth)) = queue.pop_front() {
        p.depth = p.depth.max(depth);
        w.actions_into(&s, &mut enabled);
        for &a in &enabled {
            p.states += 1;
            let (t, r) = w.step(&s, a);
            let breach = match r {
                Err(v) => Some(v),
                Ok(()) if opts.property == Property::Confluent => confluence(&mut w, &t, node, &mut settled, &parents, a),
                Ok(()) => None,
            };
            if let Some(v) = breach {
                let mut actions = path(&parents, node);
                actions.push(a);
                p.seconds = elapsed();
                let other = settled.as_ref().map(|(text, _)| text.clone());
                let cx = replay(m, scenario, opts, &actions, other.clone()).unwrap_or_else(|| explain(&mut w, &actions, v, &t));
                return Report { verdict: Verdict::Violated(Box::new(cx)), progress: p, reduces: w.reduces };
            }
            if seen.insert(fingerprint(&t, &mut buf)) {
                p.distinct += 1;
                parents.push((node, a));
                queue.push_back((t, parents.len() as u32 - 1, depth + 1));
            }
        }
        if p.states >= next_report {
            next_report += every;
            p.seconds = elapsed();
            progress(&p);
            if opts.timeout_s.is_some_and(|limit| p.seconds > limit) {
                let reason = format!("time limit of {} ms reached", (opts.timeout_s.unwrap_or(0.0) * 1000.0) as u64);
                return Report { verdict: Verdict::Inconclusive(reason), progress: p, reduces: w.reduces };
            }
        }
        if p.distinct > opts.max_states {
            p.seconds = elapsed();
            let reason = format!("state limit of {} reached", opts.max_states);
            return Report { verdict: Verdict::Inconclusive(reason), progress: p, reduces: w.reduces };
        }
    }
    p.seconds = elapsed();
    Report { verdict: Verdict::Proved, progress: p, reduces: w.reduces }
}

/// `--property confluent`: a settled state (every scenario event recorded,
/// every host idle, nothing due now or later) must hold what the first settled
/// state found held.
fn confluence(w: &mut World, t: &State, _node: u32, settled: &mut Option<(String, u32)>, _parents: &[(u32, Action)], _a: Action) -> Option<Violation> {
    if t.hosts.iter().any(|h| h.pc != Pc::Idle) || !w.due(t.store, t.now).is_empty() {
        return None;
    }
    let all = (0..w.n()).all(|i| {
        let logical = w.events[w.client[i] as usize].logical;
        t.frozen.binary_search_by_key(&logical, |f| f.0).is_ok()
    });
    let now = t.now;
    let info = w.info(t.store);
    if !all || info.next_due.is_some_and(|d| d > now) {
        return None;
    }
    let here = info.state_text.clone();
    match settled {
        None => {
            *settled = Some((here, t.store));
            None
        }
        Some((first, _)) if *first == here => None,
        Some((first, _)) => Some(Violation { message: format!("this order settles in {here}, another in {first}") }),
    }
}

fn path(parents: &[(u32, Action)], mut node: u32) -> Vec<Action> {
    let mut out = Vec::new();
    while node != 0 {
        let (up, a) = parents[node as usize];
        out.push(a);
        node = up;
    }
    out.reverse();
    out
}

/// Run `actions` from the start and describe every step; `None` when the
/// trace no longer breaks the property (for `--replay`, a fixed machine).
/// `other_order`: for `confluent`, the state another order settled in.
pub fn replay(m: &Machine, scenario: &Scenario, opts: &Options, actions: &[Action], other_order: Option<String>) -> Option<Counterexample> {
    let mut w = World::new(m, scenario, &opts.process, opts.bounds.clone());
    let mut s = w.initial();
    let mut steps = Vec::new();
    let mut run = Vec::new();
    let mut settled = other_order.clone().map(|text| (text, 0));
    for (i, &a) in actions.iter().enumerate() {
        if !w.actions(&s).contains(&a) {
            return None;
        }
        let before = s.clone();
        let (t, r) = w.step(&s, a);
        let r = match r {
            Ok(()) if opts.property == Property::Confluent => match confluence(&mut w, &t, 0, &mut settled, &[], a) {
                Some(v) => Err(v),
                None => Ok(()),
            },
            r => r,
        };
        steps.push(describe(&mut w, &before, &t, a, i + 1));
        stood(&w, &before, &t, a, &mut run);
        if let Err(v) = r {
            let mut cx = explain(&mut w, actions, v, &t);
            cx.steps = steps;
            cx.run = run;
            cx.other_order = other_order;
            return Some(cx);
        }
        s = t;
    }
    None
}

/// The event a step's outcome made stand, as an `idem run` line.
fn stood(w: &World, before: &State, after: &State, a: Action, run: &mut Vec<Value>) {
    let host = match a {
        Action::Commit { host } => host as usize,
        Action::Deliver { .. } | Action::Resend { .. } | Action::Dispatch { .. } | Action::Report { .. } => {
            // Answered at once, with nothing to write.
            if let Some((ev, at)) = w.last_answer {
                let mut line = w.events[ev as usize].value.clone();
                line["now"] = json!(at);
                run.push(line);
            }
            return;
        }
        _ => return,
    };
    let h = before.hosts[host];
    if after.version != before.version {
        let mut line = w.events[h.ev as usize].value.clone();
        line["now"] = json!(h.at);
        run.push(line);
    }
}

fn explain(w: &mut World, actions: &[Action], v: Violation, t: &State) -> Counterexample {
    let performed: Vec<Value> = t.gateway.iter().filter(|g| g.1 > 0).map(|g| json!({ "key": w.strings.all[g.0 as usize], "times": g.1 })).collect();
    let reference = w.info(t.reference).clone();
    let store = w.info(t.store).clone();
    let emitted: Vec<&str> = reference.outbox_keys.iter().map(|&k| w.strings.all[k as usize].as_str()).collect();
    Counterexample {
        violation: v.message,
        actions: actions.to_vec(),
        steps: Vec::new(),
        expected: json!({ "value": reference.value, "context": reference.context, "effects": emitted }),
        actual: json!({ "value": store.value, "context": store.context, "effectsPerformed": performed }),
        run: Vec::new(),
        other_order: None,
    }
}

fn event_name(w: &World, ev: u32) -> String {
    let e = &w.events[ev as usize].value;
    let p = &e["payload"];
    let payload = if p.as_object().is_some_and(|o| o.is_empty()) || p.is_null() { String::new() } else { format!(" {}", crate::json::to_text(p)) };
    format!("{} {}{payload}", e["id"].as_str().unwrap_or("?"), e["type"].as_str().unwrap_or("?"))
}

/// One numbered step: the action, and what came of it.
fn describe(w: &mut World, before: &State, after: &State, a: Action, n: usize) -> Value {
    let outcome = |w: &World| {
        let o = &w.outs[w.last_out.unwrap_or(0) as usize];
        let text = |i: u32| crate::json::parse(&w.strings.all[i as usize], crate::Code::InvalidJson, "response").unwrap_or(Value::Null);
        (o.status.as_str(), text(o.response), text(o.state))
    };
    let (text, host) = match a {
        Action::Deliver { host, event } | Action::Resend { host, event } => {
            let idx = if matches!(a, Action::Resend { .. }) { w.n() + event as usize } else { event as usize };
            let ev = w.client[idx];
            let verb = if matches!(a, Action::Resend { .. }) { "re-send under a fresh id" } else { "deliver" };
            (format!("host {} receives ({verb}) {}, loads version {} and reduces", host + 1, event_name(w, ev), before.version), Some(host))
        }
        Action::Dispatch { item, host } => {
            let id = w.due(before.store, before.now)[item as usize];
            let it = w.items[id as usize].clone();
            (format!("host {} dispatches {} {} ({})", host + 1, it["kind"].as_str().unwrap_or("?"), it["key"].as_str().unwrap_or("?"), it["attemptId"].as_str().unwrap_or("")), Some(host))
        }
        Action::Commit { host } => {
            let h = before.hosts[host as usize];
            let text = if w.outs[h.out as usize].snapshot == 0 {
                "nothing to write".to_string()
            } else if after.version != before.version {
                format!("commit on version {}: ok", h.version)
            } else {
                format!("commit on version {}: conflict, loads version {} and reduces again", h.version, before.version)
            };
            (format!("host {} {text}", host + 1), Some(host))
        }
        Action::Call { host, result } => {
            let r = match result {
                CallResult::Succeeded => "succeeded",
                CallResult::Failed => "failed (declined)",
                CallResult::Lost => "performed, answer lost",
                CallResult::Twice => "succeeded, answered twice",
            };
            (format!("host {} calls the gateway: {r}", host + 1), None)
        }
        Action::Report { host } => (format!("host {} loads version {} and reduces {}", host + 1, before.version, event_name(w, before.hosts[host as usize].ev)), Some(host)),
        Action::Crash { host } => {
            let h = before.hosts[host as usize];
            let at = match (h.pc, h.job) {
                (Pc::Reduced, _) => "after reduce, before commit",
                (Pc::Call, _) => "after the claim, before the gateway call",
                (Pc::Report, _) => "after the gateway call, before its result was recorded",
                (Pc::Idle, Job::None) | (Pc::Idle, _) => "while idle",
            };
            (format!("host {} crashes {at}", host + 1), None)
        }
        Action::Advance { to, why } => {
            let why = match why {
                Clock::Scenario => "the scenario's advance",
                Clock::Due => "the next timer or retry",
                Clock::Expiry => "past a retention window",
            };
            (format!("the clock moves to {to} ms ({why})"), None)
        }
    };
    let mut v = json!({ "step": n, "action": text, "now": after.now });
    if let (Some(_), Some(_)) = (host, w.last_out) {
        let (status, response, state) = outcome(w);
        v["status"] = json!(status);
        v["response"] = response;
        v["state"] = state;
    }
    v
}

// ---------------------------------------------------------------------------
// Actions and bounds as JSON (counterexample files, `--replay`)

pub fn action_json(a: Action) -> Value {
    match a {
        Action::Deliver { event, host } => json!({ "do": "deliver", "event": event, "host": host }),
        Action::Resend { event, host } => json!({ "do": "resend", "event": event, "host": host }),
        Action::Dispatch { item, host } => json!({ "do": "dispatch", "item": item, "host": host }),
        Action::Commit { host } => json!({ "do": "commit", "host": host }),
        Action::Call { host, result } => {
            let r = match result {
                CallResult::Succeeded => "succeeded",
                CallResult::Failed => "failed",
                CallResult::Lost => "lost",
                CallResult::Twice => "twice",
            };
            json!({ "do": "call", "host": host, "result": r })
        }
        Action::Report { host } => json!({ "do": "report", "host": host }),
        Action::Crash { host } => json!({ "do": "crash", "host": host }),
        Action::Advance { to, why } => {
            let w = match why {
                Clock::Scenario => "scenario",
                Clock::Due => "due",
                Clock::Expiry => "expiry",
            };
            json!({ "do": "advance", "to": to, "why": w })
        }
    }
}

pub fn action_from_json(v: &Value) -> Option<Action> {
    let u8_of = |k: &str| v[k].as_u64().and_then(|n| u8::try_from(n).ok());
    Some(match v["do"].as_str()? {
        "deliver" => Action::Deliver { event: u8_of("event")?, host: u8_of("host")? },
        "resend" => Action::Resend { event: u8_of("event")?, host: u8_of("host")? },
        "dispatch" => Action::Dispatch { item: u8_of("item")?, host: u8_of("host")? },
        "commit" => Action::Commit { host: u8_of("host")? },
        "report" => Action::Report { host: u8_of("host")? },
        "crash" => Action::Crash { host: u8_of("host")? },
        "call" => {
            let result = match v["result"].as_str()? {
                "succeeded" => CallResult::Succeeded,
                "failed" => CallResult::Failed,
                "lost" => CallResult::Lost,
                "twice" => CallResult::Twice,
                _ => return None,
            };
            Action::Call { host: u8_of("host")?, result }
        }
        "advance" => {
            let why = match v["why"].as_str()? {
                "scenario" => Clock::Scenario,
                "due" => Clock::Due,
                "expiry" => Clock::Expiry,
                _ => return None,
            };
            Action::Advance { to: v["to"].as_u64()?, why }
        }
        _ => return None,
    })
}
