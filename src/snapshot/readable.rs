//! The readable form of a snapshot (`inspect`, `idem inspect`): its JSON
//! text is what `json::to_text` writes of `Snapshot::to_value`, byte for byte,
//! written directly without building `Value`s. A `Value`'s members iterate in
//! key order, so the members here are in key order too (the tests compare the
//! two).

use super::*;

/// An outbox entry as `json::to_text` writes its `to_value`.
pub(super) fn write_outbox_entry_sorted(e: &OutboxEntry, t: &mut Vec<u8>) {
    json::put(t, b"{");
    if let Some(id) = &e.attempt_id {
        json::put(t, b"\"attemptId\":");
        json::write_str(id, t);
        json::put(t, b",");
    }
    json::put(t, b"\"attempts\":");
    json::push_u64(e.attempts.into(), t);
    json::put(t, b",\"createdAt\":");
    json::push_u64(e.created_at, t);
    if let Some(at) = e.done_at {
        json::put(t, b",\"doneAt\":");
        json::push_u64(at, t);
    }
    if let Some(at) = e.due_at {
        json::put(t, b",\"dueAt\":");
        json::push_u64(at, t);
    }
    if let Some(v) = &e.error {
        json::put(t, b",\"error\":");
        json::write_json(v, t);
    }
    json::put(t, b",\"eventId\":");
    json::write_str(&e.event_id, t);
    json::put(t, if e.idempotent { b",\"idempotent\":true,\"key\":" } else { b",\"idempotent\":false,\"key\":" });
    json::write_str(&e.key, t);
    json::put(t, b",\"payload\":");
    json::write_json(&e.payload, t);
    if let Some(v) = &e.result {
        json::put(t, b",\"result\":");
        json::write_json(v, t);
    }
    let r = &e.retry;
    json::put(t, b",\"retry\":{\"baseMs\":");
    json::push_u64(r.base_ms, t);
    json::put(t, b",\"factor\":");
    json::push_u64(r.factor.into(), t);
    json::put(t, b",\"jitterPct\":");
    json::push_u64(r.jitter_pct.into(), t);
    json::put(t, b",\"maxAttempts\":");
    json::push_u64(r.max_attempts.into(), t);
    json::put(t, b",\"maxDelayMs\":");
    json::push_u64(r.max_delay_ms, t);
    json::put(t, b"},\"state\":");
    json::write_str(e.state.as_str(), t);
    json::put(t, b",\"type\":");
    json::write_str(&e.effect_type, t);
    json::put(t, b"}");
}

/// A timer as `json::to_text` writes its `to_value`.
pub(super) fn write_timer_sorted(timer: &Timer, t: &mut Vec<u8>) {
    json::put(t, b"{\"delay\":");
    json::push_u64(timer.delay, t);
    json::put(t, b",\"dueAt\":");
    json::push_u64(timer.due_at, t);
    json::put(t, b",\"id\":");
    json::write_str(&timer.id, t);
    json::put(t, b",\"state\":");
    json::write_str(&timer.state, t);
    json::put(t, b"}");
}

/// A ledger record as `json::to_text` writes the object [`Snapshot::to_value`] makes of it.
pub(super) fn write_entry_sorted(e: &Entry<'_>, t: &mut Vec<u8>) {
    json::put(t, b"{\"at\":");
    json::push_u64(e.at, t);
    json::put(t, b",\"exp\":");
    json::push_u64(e.exp, t);
    json::put(t, b",\"fp\":");
    json::write_str(e.fp, t);
    json::put(t, b",\"id\":");
    json::write_str(&e.id(), t);
    json::put(t, b",\"response\":");
    json::write_json(&e.response().unwrap_or(Value::Null), t);
    json::put(t, b",\"rev\":");
    json::push_u64(e.rev, t);
    json::put(t, b",\"status\":");
    json::write_str(e.status(), t);
    json::put(t, b"}");
}

/// The readable form of a snapshot as JSON text, for `inspect` (see
/// [`Snapshot::write_readable`]), after the checks [`crate::inspect`] makes.
pub fn inspect_text(machine: &Machine, snapshot: &str) -> Result<String> {
    let loaded = load(machine, snapshot)?;
    loaded.snap.ledger.validate()?;
    let mut t = Vec::with_capacity(256);
    loaded.snap.write_readable(&mut t);
    Ok(json::utf8(t))
}

// The `Value`s serde_json's `to_value` makes of the same structs (for
// `Snapshot::to_value` and `object!`), built directly.

impl json::ToValue for MachineRef {
    fn to_value(&self) -> Value {
        object! { "id": self.id, "version": self.version, "hash": self.hash }
    }
}

impl json::ToValue for EffectState {
    fn to_value(&self) -> Value {
        Value::String(self.as_str().to_string())
    }
}

impl json::ToValue for RetryPolicy {
    fn to_value(&self) -> Value {
        object! {
            "maxAttempts": self.max_attempts,
            "baseMs": self.base_ms,
            "factor": self.factor,
            "maxDelayMs": self.max_delay_ms,
            "jitterPct": self.jitter_pct,
        }
    }
}

impl json::ToValue for OutboxEntry {
    fn to_value(&self) -> Value {
        let mut m = json::members! {
            "key": self.key,
            "type": self.effect_type,
            "payload": self.payload,
            "idempotent": self.idempotent,
            "state": self.state,
            "attempts": self.attempts,
            "retry": self.retry,
            "eventId": self.event_id,
            "createdAt": self.created_at,
        };
        let optional = [
            ("attemptId", self.attempt_id.as_ref().map(json::to_value)),
            ("dueAt", self.due_at.map(Value::from)),
            ("doneAt", self.done_at.map(Value::from)),
            ("result", self.result.clone()),
            ("error", self.error.clone()),
        ];
        for (key, v) in optional {
            if let Some(v) = v {
                m.insert(key.to_string(), v);
            }
        }
        Value::Object(m)
    }
}

impl json::ToValue for Timer {
    fn to_value(&self) -> Value {
        object! { "id": self.id, "state": self.state, "delay": self.delay, "dueAt": self.due_at }
    }
}

impl Snapshot {
    /// [`Snapshot::to_value`] as `json::to_text` writes it, byte for byte.
    pub fn write_readable(&self, t: &mut Vec<u8>) {
        json::put(t, b"{\"context\":");
        json::write_json(&self.context, t);
        json::put(t, if self.done { b",\"done\":true,\"format\":" } else { b",\"done\":false,\"format\":" });
        json::push_u64(self.format.into(), t);
        if !self.history.is_empty() {
            json::put(t, b",\"history\":");
            json::write_json(&Value::Object(self.history.clone()), t);
        }
        json::put(t, b",\"ledger\":[");
        let mut first = true;
        for e in self.ledger.iter().filter_map(Result::ok) {
            if !first {
                json::put(t, b",");
            }
            first = false;
            write_entry_sorted(&e, t);
        }
        let r = &self.machine;
        json::put(t, b"],\"machine\":{\"hash\":");
        json::write_str(&r.hash, t);
        json::put(t, b",\"id\":");
        json::write_str(&r.id, t);
        json::put(t, b",\"version\":");
        json::write_str(&r.version, t);
        json::put(t, b"},\"outbox\":");
        write_array(&self.outbox, t, write_outbox_entry_sorted);
        json::put(t, b",\"revision\":");
        json::push_u64(self.revision, t);
        json::put(t, b",\"timers\":");
        write_array(&self.timers, t, write_timer_sorted);
        json::put(t, b",\"value\":");
        json::write_json(&self.value, t);
        json::put(t, b"}");
    }
}
