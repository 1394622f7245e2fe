//! The `Value`s of the snapshot's records, from which `Snapshot::to_value`
//! builds the readable form that `inspect` and `idem inspect` give.

use super::*;

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
