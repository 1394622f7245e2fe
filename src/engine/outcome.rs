//! What a reduce gives back: the `Outcome` (status, duplicate flag, frozen
//! response, effects, state value, the new snapshot) and the `Event` it was
//! given, validated; written as JSON text by `Outcome::to_json_text`.

use crate::error::Error;
use crate::json::{self, object};
use crate::machine::Machine;
use crate::snapshot::{self, Snapshot};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// An event as the engine sees it, validated. A reduce owns the event it
/// checked; the engine's own events may borrow constant parts.
#[derive(Debug, Clone, PartialEq)]
pub struct Event<'a> {
    pub id: Cow<'a, str>,
    pub event_type: Cow<'a, str>,
    pub payload: Cow<'a, Value>,
}

impl Event<'_> {
    pub fn to_value(&self) -> Value {
        object! { "id": *self.id, "type": *self.event_type, "payload": *self.payload }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Applied,
    Duplicate,
    Conflict,
    Ignored,
    Rejected,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Applied => "applied",
            Status::Duplicate => "duplicate",
            Status::Conflict => "conflict",
            Status::Ignored => "ignored",
            Status::Rejected => "rejected",
        }
    }
}

/// An effect emitted by this reduce, to be performed after the commit.
#[derive(Debug, Clone, PartialEq)]
pub struct EmittedEffect {
    pub key: String,
    pub effect_type: String,
    pub payload: Value,
    pub idempotent: bool,
}

/// What `reduce` decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: Status,
    /// The new snapshot text when it changed; `None` means write nothing.
    pub snapshot: Option<String>,
    /// The response frozen for this event (replayed byte for byte to duplicates).
    pub response: Value,
    pub effects: Vec<EmittedEffect>,
    pub error: Option<Error>,
    /// State value after the event (or the current one when nothing changed).
    pub state: Value,
    pub revision: u64,
    /// Set when the snapshot was written by another version of the same machine.
    pub upgraded_from: Option<String>,
    /// Earliest time some effect or timer is due, if any.
    pub next_due_at: Option<u64>,
    /// For a duplicate: how the first delivery was recorded (its status, the
    /// revision it produced, when), so a replay can be answered without
    /// reading the ledger again.
    pub original: Option<Original>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Original {
    pub status: &'static str,
    pub revision: u64,
    pub at: u64,
}

impl Outcome {
    pub(crate) fn rejected(err: Error) -> Outcome {
        Outcome {
            status: Status::Rejected,
            snapshot: None,
            response: Value::Null,
            effects: Vec::new(),
            error: Some(err),
            state: Value::Null,
            revision: 0,
            upgraded_from: None,
            next_due_at: None,
            original: None,
        }
    }

    /// The event was seen before with the same content (`status` is `duplicate`).
    pub fn duplicate(&self) -> bool {
        self.status == Status::Duplicate
    }
}

/// Where a new snapshot's text stands when [`Machine::reduce_parts`] leaves it
/// in two parts: `outcome.snapshot` holds the text from `at` on, and the
/// ledger returned with the outcome the first `at` bytes (`ledger.prefix(at)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    pub at: usize,
    /// How many leading bytes of the whole new text are the same as in the
    /// snapshot the reduce started from (0 when none are known to be): a
    /// host holding that text can keep them instead of copying the whole.
    pub kept_prefix: usize,
}

/// What [`Machine::reduce_parts`] gives back: the outcome, the snapshot as it
/// stands afterwards, decoded (`None` when no process exists), and, when a
/// new snapshot was written, where its text is split.
#[derive(Debug)]
pub struct Reduced {
    pub outcome: Outcome,
    pub after: Option<snapshot::Loaded>,
    pub split: Option<Split>,
}

impl Reduced {
    pub(crate) fn unchanged(outcome: Outcome, after: Option<snapshot::Loaded>) -> Reduced {
        Reduced { outcome, after, split: None }
    }

    /// The outcome with its snapshot's text whole, and the decoded snapshot.
    pub fn joined(self) -> (Outcome, Option<snapshot::Loaded>) {
        let Reduced { mut outcome, after, split } = self;
        if let (Some(split), Some(tail), Some(l)) = (split, outcome.snapshot.as_mut(), after.as_ref()) {
            // In the tail's own buffer when there is room (a short ledger's).
            tail.insert_str(0, l.snap.ledger.prefix(split.at));
        }
        (outcome, after)
    }
}

impl Outcome {
    /// The outcome as JSON; the snapshot is included as its decoded value when
    /// `with_snapshot` (for tools), never as text.
    pub fn to_json(&self, with_snapshot: bool) -> Value {
        let mut o = Map::new();
        o.insert("status".into(), self.status.as_str().into());
        o.insert("duplicate".into(), self.duplicate().into());
        o.insert("changed".into(), self.snapshot.is_some().into());
        o.insert("state".into(), self.state.clone());
        o.insert("revision".into(), self.revision.into());
        o.insert("response".into(), self.response.clone());
        o.insert("effects".into(), Value::Array(self.effects.iter().map(effect_json).collect()));
        if let Some(e) = &self.error {
            o.insert("error".into(), e.to_json());
        }
        if let Some(v) = &self.upgraded_from {
            o.insert("upgradedFrom".into(), v.clone().into());
        }
        o.insert("nextDueAt".into(), self.next_due_at.map(Value::from).unwrap_or(Value::Null));
        if let Some(first) = &self.original {
            o.insert("original".into(), object! { "status": first.status, "revision": first.revision, "at": first.at });
        }
        if with_snapshot {
            if let Some(text) = &self.snapshot {
                if let Ok(s) = Snapshot::decode(text, usize::MAX) {
                    o.insert("snapshot".into(), s.to_value());
                }
            }
        }
        Value::Object(o)
    }
}

impl Outcome {
    /// The JSON text of `to_json(false)`, written directly rather than through
    /// a `serde_json::Map` (keys in the same, sorted, order), the state value's
    /// parallel regions in `m`'s document order ([`Machine::write_state_value`]).
    pub fn to_json_text(&self, m: &Machine) -> String {
        let mut w: Vec<u8> = Vec::with_capacity(256);
        let value = |w: &mut Vec<u8>, v: &Value| json::write_json(v, w);
        let num = |w: &mut Vec<u8>, n: u64| json::push_u64(n, w);
        let boolean = |w: &mut Vec<u8>, b: bool| w.extend_from_slice(if b { b"true" } else { b"false" });
        w.extend_from_slice(b"{\"changed\":");
        boolean(&mut w, self.snapshot.is_some());
        w.extend_from_slice(b",\"duplicate\":");
        boolean(&mut w, self.duplicate());
        w.extend_from_slice(b",\"effects\":");
        self.write_effects(&mut w);
        if let Some(e) = &self.error {
            w.extend_from_slice(b",\"error\":{\"code\":");
            json::write_str(e.code.as_str(), &mut w);
            w.extend_from_slice(b",\"message\":");
            json::write_str(&e.message, &mut w);
            if let Some(p) = &e.path {
                w.extend_from_slice(b",\"path\":");
                json::write_str(p, &mut w);
            }
            w.push(b'}');
        }
        w.extend_from_slice(b",\"nextDueAt\":");
        match self.next_due_at {
            Some(n) => num(&mut w, n),
            None => w.extend_from_slice(b"null"),
        }
        if let Some(first) = &self.original {
            w.extend_from_slice(b",\"original\":");
            first.write_json(&mut w);
        }
        w.extend_from_slice(b",\"response\":");
        value(&mut w, &self.response);
        w.extend_from_slice(b",\"revision\":");
        num(&mut w, self.revision);
        w.extend_from_slice(b",\"state\":");
        m.write_state_value(&self.state, &mut w);
        w.extend_from_slice(b",\"status\":");
        json::write_str(self.status.as_str(), &mut w);
        if let Some(v) = &self.upgraded_from {
            w.extend_from_slice(b",\"upgradedFrom\":");
            json::write_str(v, &mut w);
        }
        w.push(b'}');
        json::utf8(w)
    }
}

impl Outcome {
    /// `effects` as `to_json_text` writes it: an array of `{idempotent, key, payload, type}`.
    pub(crate) fn write_effects(&self, w: &mut Vec<u8>) {
        w.push(b'[');
        for (i, e) in self.effects.iter().enumerate() {
            if i > 0 {
                w.push(b',');
            }
            w.extend_from_slice(if e.idempotent { b"{\"idempotent\":true,\"key\":" } else { b"{\"idempotent\":false,\"key\":" });
            json::write_str(&e.key, w);
            w.extend_from_slice(b",\"payload\":");
            json::write_json(&e.payload, w);
            w.extend_from_slice(b",\"type\":");
            json::write_str(&e.effect_type, w);
            w.push(b'}');
        }
        w.push(b']');
    }
}

impl Original {
    /// `{at, revision, status}`, as `Outcome::to_json_text` writes it.
    pub(crate) fn write_json(&self, w: &mut Vec<u8>) {
        w.extend_from_slice(b"{\"at\":");
        json::push_u64(self.at, w);
        w.extend_from_slice(b",\"revision\":");
        json::push_u64(self.revision, w);
        w.extend_from_slice(b",\"status\":");
        json::write_str(self.status, w);
        w.push(b'}');
    }
}

pub fn effect_json(e: &EmittedEffect) -> Value {
    object! { "key": e.key, "type": e.effect_type, "payload": e.payload, "idempotent": e.idempotent }
}
