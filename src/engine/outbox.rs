//! The outbox: effects on their way to the outside world, each moving through
//! `pending → in_flight(attempt n) → succeeded | failed | unknown | verifying`
//! (`unknown`: an idempotent provider, retried with the same key after backoff;
//! `verifying`: a non-idempotent one, asked before any retry). Backoff is
//! exponential with a cap and a jitter derived from the key and the attempt, so
//! the schedule is the same on every run.
//!
//! The host never decides anything here. It asks [`due`] what to do now, does
//! it, and reports each step back through `reduce` as an event whose id the
//! engine chose (`<key>#<n>:started`, `<key>#<n>:result`, `<key>#<n>:verify`),
//! so a report delivered twice is a duplicate and two dispatchers racing for
//! the same attempt are told apart by the ledger: only one `started` applies.
//! A finished effect raises `<type>.succeeded` or `<type>.failed` into the
//! machine.

use crate::error::{Code, Error, Result};
use crate::json::{self, object};
use crate::machine::{Machine, RetryPolicy};
use crate::outcome::{EmittedEffect, Event};
use crate::snapshot::{self, EffectState, OutboxEntry, Snapshot, Timer};
use serde_json::Value;
use std::borrow::Cow;

/// How long an attempt may stay `in_flight` before it is presumed lost (ms).
pub const ATTEMPT_LEASE_MS: u64 = 30_000;
/// Finished effects kept for inspection, newest first.
pub const KEEP_DONE: usize = 100;

pub const STARTED: &str = "idem.effect.started";
pub const SUCCEEDED: &str = "idem.effect.succeeded";
pub const FAILED: &str = "idem.effect.failed";
pub const UNKNOWN: &str = "idem.effect.unknown";
pub const VERIFIED: &str = "idem.effect.verified";

/// The default idempotency key: the event that emitted it and the effect's position,
/// scoped by the process name when there is one.
pub fn default_key(process: &str, event_id: &str, position: usize) -> String {
    if process.is_empty() {
        format!("{event_id}:{position}")
    } else {
        format!("{process}/{event_id}:{position}")
    }
}

pub(crate) fn new_entry(e: &(EmittedEffect, RetryPolicy), event_id: &str, now: u64) -> OutboxEntry {
    let (e, r) = e;
    OutboxEntry {
        key: e.key.clone(),
        effect_type: e.effect_type.clone(),
        payload: e.payload.clone(),
        idempotent: e.idempotent,
        state: EffectState::Pending,
        attempts: 0,
        attempt_id: None,
        due_at: Some(now),
        retry: *r,
        event_id: event_id.to_string(),
        created_at: now,
        done_at: None,
        result: None,
        error: None,
    }
}

/// Delay before attempt `n + 1` after attempt `n` (n ≥ 1) did not succeed:
/// exponential with a cap, minus a jitter derived from the key and attempt
/// number (never from a random source), so every run computes the same schedule.
pub fn backoff(retry: &RetryPolicy, key: &str, n: u32) -> u64 {
    let exp = (n.max(1) - 1).min(40);
    let raw = (retry.factor as u64).checked_pow(exp).and_then(|f| retry.base_ms.checked_mul(f)).unwrap_or(u64::MAX);
    let delay = raw.min(retry.max_delay_ms);
    let h = json::hash64(format!("{key}#{n}").as_bytes());
    let jitter = (delay as u128 * retry.jitter_pct as u128 * (h % 1000) as u128 / 100_000) as u64;
    delay - jitter.min(delay)
}

/// Drop finished effects older than `window` or beyond [`KEEP_DONE`].
pub(crate) fn prune(outbox: &mut Vec<OutboxEntry>, now: u64, window: u64) {
    outbox.retain(|e| !e.state.is_done() || e.done_at.unwrap_or(now).saturating_add(window) > now);
    let done = outbox.iter().filter(|e| e.state.is_done()).count();
    if done > KEEP_DONE {
        let mut extra = done - KEEP_DONE;
        outbox.retain(|e| {
            if extra > 0 && e.state.is_done() {
                extra -= 1;
                false
            } else {
                true
            }
        });
    }
}

/// What a report did to the outbox.
pub(crate) enum Report {
    /// Late or out-of-order: nothing changes (the outcome is `ignored`).
    Stale,
    /// The effect moved; nothing for the machine.
    Updated,
    /// The effect finished: the machine gets this event.
    Raise(Event<'static>),
}

/// Apply an attempt report (`idem.effect.*`) to the outbox.
pub(crate) fn report(outbox: &mut [OutboxEntry], event: &Event<'_>, now: u64) -> Result<Report> {
    let p = &*event.payload;
    let bad = |m: &str| Error::at(Code::InvalidEffectReport, "payload", m.to_string());
    let key = p.get("key").and_then(Value::as_str).ok_or_else(|| bad("effect report needs a string key"))?;
    let entry = outbox
        .iter_mut()
        .find(|e| e.key == key)
        .ok_or_else(|| Error::at(Code::UnknownEffect, "payload.key", format!("no effect with key \"{key}\" in the outbox")))?;
    let attempt = match p.get("attempt") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| bad("attempt must be a positive integer below 2^32"))?,
        ),
    };
    let current = |e: &OutboxEntry| attempt.is_none_or(|a| a == e.attempts);
    let retry = entry.retry;
    let exhausted = |e: &OutboxEntry| e.attempts >= retry.max_attempts;

    match &*event.event_type {
        STARTED => {
            let next = entry.attempts.saturating_add(1);
            let allowed = matches!(entry.state, EffectState::Pending | EffectState::Unknown) && next <= retry.max_attempts;
            if !allowed || attempt.is_some_and(|a| a != next) {
                return Ok(Report::Stale);
            }
            entry.attempts = next;
            entry.attempt_id = Some(format!("{key}#{next}"));
            entry.state = EffectState::InFlight;
            entry.due_at = Some(now.saturating_add(ATTEMPT_LEASE_MS));
            Ok(Report::Updated)
        }
        SUCCEEDED => {
            if entry.state != EffectState::InFlight || !current(entry) {
                return Ok(Report::Stale);
            }
            let result = p.get("result").cloned().unwrap_or(Value::Null);
            Ok(succeed(entry, result, now))
        }
        FAILED => {
            if entry.state != EffectState::InFlight || !current(entry) {
                return Ok(Report::Stale);
            }
            let retryable = p.get("retryable").and_then(Value::as_bool).unwrap_or(false);
            entry.error = Some(p.get("error").cloned().unwrap_or(Value::Null));
            if retryable && !exhausted(entry) {
                entry.state = EffectState::Pending;
                entry.due_at = Some(now.saturating_add(backoff(&retry, key, entry.attempts)));
                return Ok(Report::Updated);
            }
            let reason = if retryable { "exhausted" } else { "permanent" };
            Ok(fail(entry, reason, now))
        }
        UNKNOWN => {
            if entry.state != EffectState::InFlight || !current(entry) {
                return Ok(Report::Stale);
            }
            entry.error = Some(p.get("error").cloned().unwrap_or_else(|| Value::from("unknown outcome")));
            if !entry.idempotent {
                // The provider cannot deduplicate: ask it before trying again.
                entry.state = EffectState::Verifying;
                entry.due_at = Some(now);
                return Ok(Report::Updated);
            }
            if exhausted(entry) {
                return Ok(fail(entry, "exhausted", now));
            }
            entry.state = EffectState::Unknown;
            entry.due_at = Some(now.saturating_add(backoff(&retry, key, entry.attempts)));
            Ok(Report::Updated)
        }
        VERIFIED => {
            if entry.state != EffectState::Verifying || !current(entry) {
                return Ok(Report::Stale);
            }
            let exists = p.get("exists").and_then(Value::as_bool).ok_or_else(|| bad("verified needs a boolean exists"))?;
            if exists {
                let result = p.get("result").cloned().unwrap_or(Value::Null);
                return Ok(succeed(entry, result, now));
            }
            if exhausted(entry) {
                return Ok(fail(entry, "exhausted", now));
            }
            entry.state = EffectState::Pending;
            entry.due_at = Some(now.saturating_add(backoff(&retry, key, entry.attempts)));
            Ok(Report::Updated)
        }
        other => Err(Error::at(Code::InvalidEffectReport, "type", format!("unknown effect report \"{other}\""))),
    }
}

fn succeed(entry: &mut OutboxEntry, result: Value, now: u64) -> Report {
    entry.state = EffectState::Succeeded;
    entry.due_at = None;
    entry.done_at = Some(now);
    entry.result = Some(result.clone());
    entry.error = None;
    Report::Raise(Event {
        id: format!("{}:succeeded", entry.key).into(),
        event_type: format!("{}.succeeded", entry.effect_type).into(),
        payload: Cow::Owned(object! { "key": entry.key, "result": result, "attempts": entry.attempts }),
    })
}

fn fail(entry: &mut OutboxEntry, reason: &str, now: u64) -> Report {
    entry.state = EffectState::Failed;
    entry.due_at = None;
    entry.done_at = Some(now);
    let payload = object! { "key": entry.key, "reason": reason, "error": entry.error, "attempts": entry.attempts };
    Report::Raise(Event {
        id: format!("{}:failed", entry.key).into(),
        event_type: format!("{}.failed", entry.effect_type).into(),
        payload: Cow::Owned(payload),
    })
}

/// The work a host should do now: attempts, verifications, presumed-lost
/// attempts to report, and timers to fire. Each item carries the exact events
/// to report back through `reduce`.
pub fn due(machine: &Machine, snapshot: &str, now: u64) -> Result<Vec<Value>> {
    let loaded = snapshot::load(machine, snapshot)?;
    Ok(due_items(&loaded.snap, now))
}

/// [`due`]'s items for a decoded snapshot: the due effects in outbox order,
/// then the due timers. Members are inserted in key order, so an item reads
/// the same whether or not the build's maps keep insertion order.
pub fn due_items(snap: &Snapshot, now: u64) -> Vec<Value> {
    let effects = snap.state.outbox.iter().filter_map(|e| due_effect(e, now));
    let timers = snap.state.timers.iter().filter(|t| t.due_at <= now).map(due_timer);
    effects.chain(timers).collect()
}

/// The step of `e` due at `now`, if one is: an attempt (with the event that
/// reports it started), a verification, or an expired attempt to report as
/// unknown.
fn due_effect(e: &OutboxEntry, now: u64) -> Option<Value> {
    let at = e.due_at.filter(|&at| at <= now && !e.state.is_done())?;
    let (n, kind) = match e.state {
        EffectState::Pending | EffectState::Unknown if e.attempts < e.retry.max_attempts => (e.attempts + 1, "attempt"),
        EffectState::InFlight => (e.attempts, "expire"),
        EffectState::Verifying => (e.attempts, "verify"),
        EffectState::Pending | EffectState::Unknown | EffectState::Succeeded | EffectState::Failed => return None,
    };
    let mut item = json::members! {
        "attempt": n,
        "attemptId": format!("{}#{}", e.key, n),
        "dueAt": at,
        "idempotent": e.idempotent,
        "key": e.key,
        "kind": kind,
        "payload": e.payload,
    };
    if e.state == EffectState::InFlight {
        item.insert("report".into(), report_event(&e.key, n, "result", UNKNOWN));
    } else {
        // "attempt" or "verify": the id its result is reported under.
        let attempt = e.state != EffectState::Verifying;
        item.insert("resultId".into(), Value::String(format!("{}#{}:{}", e.key, n, if attempt { "result" } else { "verify" })));
        if attempt {
            item.insert("started".into(), report_event(&e.key, n, "started", STARTED));
        }
    }
    item.insert("type".into(), Value::String(e.effect_type.clone()));
    Some(Value::Object(item))
}

/// A due timer, with the event that fires it.
fn due_timer(timer: &Timer) -> Value {
    object! {
        "delay": timer.delay,
        "dueAt": timer.due_at,
        "event": object! { "id": timer.id, "payload": object! {}, "type": crate::machine::TIMER_EVENT },
        "kind": "timer",
        "state": timer.state,
    }
}

/// The event that reports attempt `n` of the effect `key` (`kind`: started, or
/// unknown when the attempt's lease expired).
fn report_event(key: &str, n: u32, suffix: &str, kind: &str) -> Value {
    let mut payload = json::members! { "attempt": n };
    if kind == UNKNOWN {
        payload.insert("error".into(), Value::from("attempt lease expired"));
    }
    payload.insert("key".into(), Value::from(key));
    object! { "id": format!("{key}#{n}:{suffix}"), "payload": Value::Object(payload), "type": kind }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_deterministic_exponential_and_capped() {
        let r = RetryPolicy { max_attempts: 10, base_ms: 1000, factor: 2, max_delay_ms: 10_000, jitter_pct: 0 };
        let s: Vec<u64> = (1..=6).map(|n| backoff(&r, "k", n)).collect();
        assert_eq!(s, vec![1000, 2000, 4000, 8000, 10_000, 10_000]);
        let j = RetryPolicy { jitter_pct: 20, ..r };
        let a: Vec<u64> = (1..=6).map(|n| backoff(&j, "order-1/e1:0", n)).collect();
        let b: Vec<u64> = (1..=6).map(|n| backoff(&j, "order-1/e1:0", n)).collect();
        assert_eq!(a, b);
        for (x, y) in a.iter().zip(&s) {
            assert!(*x <= *y && *x >= y * 8 / 10, "{x} not within 20% below {y}");
        }
        let other: Vec<u64> = (1..=6).map(|n| backoff(&j, "order-2/e1:0", n)).collect();
        assert_ne!(a, other, "jitter depends on the key");
        let huge = RetryPolicy { max_attempts: 1000, base_ms: u64::MAX / 2, factor: 10, max_delay_ms: 5, jitter_pct: 100 };
        assert!(backoff(&huge, "k", 999) <= 5);
    }
}
