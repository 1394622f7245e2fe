//! `reduce`: apply one event to a snapshot, once.
//!
//! In order: validate the event (limits, a known type, the payload against its
//! schema) → load the snapshot, or start a new process → a live ledger entry
//! with the same id answers `duplicate` (same fingerprint: the first response) or
//! `conflict` (another fingerprint) without touching anything → otherwise one
//! macrostep (`interpreter`) on a working copy → record the id, prune the ledger
//! (retention per event type, the entry cap), encode.
//!
//! An event that no transition takes, eventless or not, is `ignored` and writes
//! nothing (unless `recordIgnored`). A new process is written only once an event
//! is taken, or when its initial step alone leaves something (a final state,
//! then stored `done`; an effect; a timer): the event is then recorded as
//! ignored, so that a copy of it is its duplicate. Effect reports
//! (`idem.effect.*`) and timer firings (`idem.after`) are events too, deduplicated
//! by the same ledger, where they are remembered under the reserved `idem:`
//! prefix that no outside event id may start with.
//!
//! An event given as text is read member by member when it is written as
//! `JSON.stringify` writes one (`read_event`: no whitespace, `id`/`type`/`payload`
//! at most once, nothing else), each member parsed in place; any other text is
//! parsed whole; both end in the same checks (`check_fields`, `check_payload`).

use crate::error::{Code, Error, Result};
use crate::json::{self, object, Fingerprint};
use crate::interpreter::{Run, Start};
use crate::machine::{Machine, EFFECT_REPORT_PREFIX, TIMER_EVENT};
use crate::outbox;
use crate::snapshot::{self, ProcessState, Snapshot};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The snapshot a reduce starts from.
pub enum Current<'a> {
    /// No process yet.
    None,
    /// The stored text, to decode.
    Text(&'a str),
    /// The stored text, to decode; its buffer may become the decoded ledger's.
    Owned(String),
    /// Already decoded (kept in memory since the last event).
    Loaded(Box<snapshot::Loaded>),
}

impl<'a> From<Option<&'a str>> for Current<'a> {
    fn from(text: Option<&'a str>) -> Current<'a> {
        text.map_or(Current::None, Current::Text)
    }
}

/// The event a reduce applies: a JSON value, or its text (as a host sends it).
#[derive(Clone, Copy)]
pub enum Input<'a> {
    Value(&'a Value),
    Text(&'a str),
}

impl<'a> From<&'a Value> for Input<'a> {
    fn from(v: &'a Value) -> Input<'a> {
        Input::Value(v)
    }
}

impl<'a> From<&'a str> for Input<'a> {
    fn from(text: &'a str) -> Input<'a> {
        Input::Text(text)
    }
}

impl<'a> From<&'a String> for Input<'a> {
    fn from(text: &'a String) -> Input<'a> {
        Input::Text(text)
    }
}

pub use crate::outcome::{effect_json, EmittedEffect, Event, Original, Outcome, Reduced, Split, Status};

impl Machine {
    /// Apply `event` to `snapshot` (or to a new process when `None`) at host time `now` (ms).
    pub fn reduce<'e>(&self, snapshot: Option<&str>, event: impl Into<Input<'e>>, now: u64) -> Outcome {
        self.reduce_in("", snapshot, event, now)
    }

    /// As [`Machine::reduce`], naming the process; the name scopes default effect
    /// keys so that two processes with colliding event ids never share a key.
    pub fn reduce_in<'e>(&self, process: &str, snapshot: Option<&str>, event: impl Into<Input<'e>>, now: u64) -> Outcome {
        self.reduce_with(process, Current::from(snapshot), event, now).0
    }

    /// Reduce against a snapshot given as text or already decoded; also
    /// returns the snapshot as it stands afterwards, decoded (`None` when no
    /// process exists): the same bytes as decoding `outcome.snapshot` (or the
    /// input when unchanged) would give, so a caller may keep it for the next
    /// event instead of decoding. Errors keep their usual precedence: the
    /// event is checked before the snapshot is read.
    pub fn reduce_with<'e>(&self, process: &str, current: Current<'_>, event: impl Into<Input<'e>>, now: u64) -> (Outcome, Option<snapshot::Loaded>) {
        self.reduce_parts(process, current, event, now).joined()
    }

    /// As [`Machine::reduce_with`], leaving a new snapshot in two parts (see
    /// [`Split`]), for hosts that need only what changed.
    pub fn reduce_parts<'e>(&self, process: &str, current: Current<'_>, event: impl Into<Input<'e>>, now: u64) -> Reduced {
        let result = self.event_of_input(event.into()).and_then(|(e, fp)| {
            let loaded = match current {
                Current::None => None,
                Current::Text(text) => Some(snapshot::load(self, text)?),
                Current::Owned(text) => Some(snapshot::load_owned(self, text)?),
                Current::Loaded(l) => Some(*l),
            };
            self.reduce_event(process, loaded, e, fp, now)
        });
        result.unwrap_or_else(|e| Reduced::unchanged(Outcome::rejected(e), None))
    }

    /// Validate an event against this machine's limits and event types.
    pub fn parse_event(&self, v: &Value) -> Result<Event<'static>> {
        self.event_of_input(Input::Value(v)).map(|(e, _)| e)
    }

    /// The checked event of any input, with its fingerprint. Text laid out as
    /// `JSON.stringify` writes an event is read member by member
    /// ([`read_event`]); any other text is parsed whole.
    fn event_of_input(&self, event: Input<'_>) -> Result<(Event<'static>, Fingerprint)> {
        let [id, event_type, payload] = match event {
            Input::Value(v) => event_members(v.clone())?,
            Input::Text(text) => {
                let limit = self.limits.max_payload_bytes + self.limits.max_id_bytes + 4096;
                if text.len() > limit {
                    return Err(Error::new(Code::PayloadTooLarge, format!("event is {} bytes, more than the {} allowed", text.len(), limit)));
                }
                match read_event(text) {
                    Some(members) => members,
                    None => parse_event_text(text)?,
                }
            }
        };
        let (id, event_type) = self.check_fields(id, event_type)?;
        let payload = match payload {
            Some(p) if !p.is_null() => p,
            _ => Value::Object(Map::new()),
        };
        let fp = self.check_payload(&event_type, &payload)?;
        Ok((Event { id: Cow::Owned(id), event_type: Cow::Owned(event_type), payload: Cow::Owned(payload) }, fp))
    }

    /// The checks of an event's id and type, present or not.
    fn check_fields(&self, id: Option<Value>, event_type: Option<Value>) -> Result<(String, String)> {
        let id = match id {
            None | Some(Value::Null) => return Err(Error::at(Code::MissingEventId, "id", "event id is missing")),
            Some(Value::String(s)) if s.is_empty() => return Err(Error::at(Code::MissingEventId, "id", "event id is empty")),
            Some(Value::String(s)) => s,
            Some(_) => return Err(Error::at(Code::InvalidEvent, "id", "event id must be a string")),
        };
        if id.len() > self.limits.max_id_bytes {
            return Err(Error::at(
                Code::EventIdTooLong,
                "id",
                format!("event id is {} bytes, more than the {} allowed", id.len(), self.limits.max_id_bytes),
            ));
        }
        let event_type = match event_type {
            None | Some(Value::Null) => return Err(Error::at(Code::MissingEventType, "type", "event type is missing")),
            Some(Value::String(s)) if !s.is_empty() => s,
            Some(_) => return Err(Error::at(Code::InvalidEvent, "type", "event type must be a non-empty string")),
        };
        let reserved = is_engine_event(&event_type);
        if !reserved && id.starts_with(RESERVED_ID_PREFIX) {
            return Err(Error::at(
                Code::ReservedEvent,
                "id",
                format!("event ids starting with \"{RESERVED_ID_PREFIX}\" are reserved for the engine's own events"),
            ));
        }
        // The builder leaves outcome types out of the event types, so a type
        // accepted from outside is looked up once.
        let accepted = self.event_types.contains(event_type.as_str());
        if !accepted && self.outcome_types.contains(event_type.as_str()) {
            return Err(Error::at(
                Code::ReservedEvent,
                "type",
                format!("\"{event_type}\" is raised by the outbox when the effect finishes, never sent from outside"),
            ));
        }
        if !reserved && !accepted {
            return Err(Error::at(
                Code::UnknownEventType,
                "type",
                format!("event type \"{event_type}\" is not accepted by any state of machine \"{}\"", self.id),
            ));
        }
        Ok((id, event_type))
    }

    /// The payload's nesting and size (its compact JSON); returns the event's
    /// fingerprint, whose canonical JSON of the payload gives that size.
    fn check_payload(&self, event_type: &str, payload: &Value) -> Result<Fingerprint> {
        json::check_depth(payload, "event payload")?;
        let (fp, size) = json::fingerprint_digits(event_type, payload);
        if size > self.limits.max_payload_bytes {
            return Err(Error::at(
                Code::PayloadTooLarge,
                "payload",
                format!("event payload is {size} bytes, more than the {} allowed", self.limits.max_payload_bytes),
            ));
        }
        // The bounds first, then the machine's own schema.
        self.schemas.check(event_type, payload)?;
        Ok(fp)
    }

    /// `fp`: the event's fingerprint (`json::fingerprint` of its type and payload).
    fn reduce_event(&self, process: &str, mut current: Option<snapshot::Loaded>, event: Event, fp: Fingerprint, now: u64) -> Result<Reduced> {
        // The engine's own events (attempt reports, timers) are remembered under a
        // prefix no outside event may use, so a client can never take their ids first.
        let ledger_id: Cow<'_, str> = if is_engine_event(&event.event_type) {
            Cow::Owned(format!("{RESERVED_ID_PREFIX}{}", event.id))
        } else {
            Cow::Borrowed(&event.id)
        };
        // Worked on in place: the decoded snapshot is not moved into a new struct.
        let fresh = current.is_none();
        let l = current.get_or_insert_with(|| snapshot::Loaded { snap: Snapshot::initial(self, &[]), config: Vec::new(), upgraded_from: None });
        let snap = &mut l.snap;

        // 1. Seen before? A live ledger entry answers without touching anything.
        if let Some(i) = snap.ledger.find(&ledger_id, now)? {
            let entry = snap.ledger.entry_at(i)?;
            let o = self.seen(snap, l.upgraded_from.clone(), &entry, &event.id, &fp)?;
            return Ok(Reduced::unchanged(o, if fresh { None } else { current }));
        }

        // 2. Run the macrostep on the process's state, taken whole.
        let previous_revision = snap.state.revision;
        let mut state = std::mem::take(&mut snap.state);
        state.revision = next_revision(previous_revision)?;
        let mut run = Run::new(self, Start { config: std::mem::take(&mut l.config), state, origin: &event, process, now });
        if fresh {
            // A new process settles its initial step before its first event is judged.
            run.start()?;
        }
        let taken = if is_engine_event(&event.event_type) {
            run.engine_event(&event)?
        } else {
            run.macrostep(&event)?
        };
        // A process whose initial step ends in a final state, or leaves work to
        // do (an effect to perform, a timer to fire: XState starts an invoke as
        // the actor starts), is stored though its first event changes nothing.
        let kept_at_start = fresh && (run.state.done || !run.effects.is_empty() || !run.state.timers.is_empty());

        if !taken && !kept_at_start {
            // Nothing ran (a report or timer that changed nothing returns before
            // touching them), so the working copy is the snapshot as it was; a
            // new process (not written) reports the state its initial step settled in.
            snap.state = ProcessState { revision: previous_revision, ..run.state };
            l.config = run.config;
            let Some(loaded) = current else { unreachable!("filled above") };
            return self.ignored(loaded, fresh, &ledger_id, &event, &fp, now);
        }

        let state = run.state.value.clone();
        let revision = run.state.revision;
        let mut response = if taken {
            run.response.take().unwrap_or_else(|| object! { "state": state, "revision": revision })
        } else {
            Value::Null
        };
        // Members in key order, as the ledger freezes it: a repeat's reply is the first reply
        // byte for byte in every build (a build whose maps keep insertion order included).
        response.sort_all_objects();
        // The snapshot's machine reference is this machine's unless it was written by another version.
        if !snap.machine.names(self) {
            snap.machine = snapshot::MachineRef::of(self);
        }
        // The new snapshot is the old one's ledger and the run's state, with
        // the effects it emitted added to the outbox.
        snap.format = snapshot::FORMAT;
        snap.state = run.state;
        for e in &run.effects {
            snap.state.outbox.push(outbox::new_entry(e, &event.id, now));
        }
        outbox::prune(&mut snap.state.outbox, now, self.retention.default_ms);
        // Recorded even when ignored: the event created the process, so a copy is its duplicate.
        self.remember(snap, &ledger_id, &event, &fp, now, !taken, &response)?;
        let next_due_at = next_due(snap);
        let encoded = self.encode_within_limit(snap, &run.config)?;
        l.config = run.config;
        let split = Split { at: encoded.split, kept_prefix: encoded.shared };
        let outcome = Outcome {
            status: if taken { Status::Applied } else { Status::Ignored },
            snapshot: Some(encoded.tail),
            response,
            effects: run.effects.into_iter().map(|(e, _)| e).collect(),
            error: None,
            state,
            revision,
            upgraded_from: l.upgraded_from.take(),
            next_due_at,
            original: None,
        };
        Ok(Reduced { outcome, after: current, split: Some(split) })
    }

    // The branches a fresh event does not take are functions of their own (kept
    // out of line by wasm-opt's one-caller limit, scripts/build-wasm.sh), so
    // that a host compiling functions on their first call does not compile
    // them for a process's first event.

    /// The answer for an event id the ledger holds: a duplicate (same
    /// fingerprint: the first response) or a conflict.
    #[inline(never)]
    fn seen(
        &self,
        snap: &Snapshot,
        upgraded_from: Option<String>,
        entry: &snapshot::Entry<'_>,
        id: &str,
        fp: &str,
    ) -> Result<Outcome> {
        let mut o = self.unchanged(snap, upgraded_from);
        if entry.fp == fp {
            o.status = Status::Duplicate;
            o.response = entry.response()?;
            o.original = Some(Original { status: entry.status(), revision: entry.rev, at: entry.at });
        } else {
            o.status = Status::Conflict;
            o.error = Some(Error::at(
                Code::IdConflict,
                "id",
                format!("event id \"{id}\" was already used for a different event (type or payload differ)"),
            ));
            o.response = Value::Null;
        }
        Ok(o)
    }

    /// An event no transition took: recorded when the machine says so (never a
    /// process's first: a process is created by the first event it accepts,
    /// or by its first event when its initial step alone leaves something).
    #[inline(never)]
    fn ignored(
        &self,
        loaded: snapshot::Loaded,
        fresh: bool,
        ledger_id: &str,
        event: &Event,
        fp: &str,
        now: u64,
    ) -> Result<Reduced> {
        let snapshot::Loaded { snap, config, upgraded_from } = loaded;
        if self.record_ignored && !fresh {
            let mut next = snap;
            next.state.revision = next_revision(next.state.revision)?;
            self.remember(&mut next, ledger_id, event, fp, now, true, &Value::Null)?;
            let mut o = self.unchanged(&next, upgraded_from.clone());
            o.status = Status::Ignored;
            let e = self.encode_within_limit(&mut next, &config)?;
            o.snapshot = Some(e.tail);
            let split = Split { at: e.split, kept_prefix: e.shared };
            return Ok(Reduced { outcome: o, after: Some(snapshot::Loaded { snap: next, config, upgraded_from }), split: Some(split) });
        }
        let mut o = self.unchanged(&snap, upgraded_from.clone());
        o.status = Status::Ignored;
        Ok(Reduced::unchanged(o, (!fresh).then_some(snapshot::Loaded { snap, config, upgraded_from })))
    }

    /// Encode, refusing to produce a snapshot this machine could not read back:
    /// a configuration (`config`, the active states) that is not one, too deep
    /// an outbox entry, too large a snapshot.
    fn encode_within_limit(&self, snap: &mut Snapshot, config: &[crate::machine::StateIdx]) -> Result<snapshot::Encoded> {
        self.check_configuration(config, &snap.state.value)?;
        // Nested as the head may be when it is read (`snapshot::parse_head`):
        // an outbox entry's payload, result and error at level 4 (an effect
        // payload or result as deep as an event may carry would otherwise be
        // written and then refuse every later event of the process). The
        // context is checked where it changes (`assign`), the state value is
        // the definition's.
        let deep = snap.state.outbox.iter().any(|e| [Some(&e.payload), e.result.as_ref(), e.error.as_ref()].into_iter().flatten().any(|v| !json::within_depth(v, 4)));
        if deep {
            return Err(Error::new(
                Code::NestingTooDeep,
                format!("applying the event would nest an outbox entry of the snapshot deeper than {} levels", json::MAX_DEPTH),
            ));
        }
        let e = snap.encode_split();
        let len = e.split + e.tail.len();
        if len > self.limits.max_snapshot_bytes {
            return Err(Error::new(
                Code::SnapshotTooLarge,
                format!("applying the event would make the snapshot {len} bytes, more than the {} allowed", self.limits.max_snapshot_bytes),
            ));
        }
        Ok(e)
    }

    fn unchanged(&self, snap: &Snapshot, upgraded_from: Option<String>) -> Outcome {
        Outcome {
            status: Status::Ignored,
            snapshot: None,
            response: Value::Null,
            effects: Vec::new(),
            error: None,
            state: snap.state.value.clone(),
            revision: snap.state.revision,
            upgraded_from,
            next_due_at: next_due(snap),
            original: None,
        }
    }

    /// Record the event id, then forget what is expired or beyond the cap (oldest first).
    #[allow(clippy::too_many_arguments)]
    fn remember(&self, snap: &mut Snapshot, id: &str, event: &Event, fp: &str, now: u64, ignored: bool, response: &Value) -> Result<()> {
        let exp = now.saturating_add(self.retention_for(&event.event_type));
        snap.ledger.push(id, fp, now, exp, snap.state.revision, ignored, response);
        snap.ledger.prune(now, self.retention.max_entries)?;
        Ok(())
    }
}

/// The members of an event written as `JSON.stringify` writes one (no
/// whitespace; `id`, `type` and `payload` at most once each, in any order, no
/// other member), each parsed where it stands, without building the object
/// around them. `None` for any other text, which the general path then reads,
/// errors and all: what this accepts it reads as that would (a payload too
/// deep for the whole event is left to it as well).
fn read_event(text: &str) -> Option<[Option<Value>; 3]> {
    let mut members: [Option<Value>; 3] = [None, None, None];
    let b = text.as_bytes();
    let mut i = 1;
    if b.first() != Some(&b'{') {
        return None;
    }
    if b.get(1) == Some(&b'}') {
        i = 2;
    } else {
        loop {
            let rest = &b[i..];
            let (slot, key_len) = if rest.starts_with(b"\"id\":") {
                (0, 5)
            } else if rest.starts_with(b"\"type\":") {
                (1, 7)
            } else if rest.starts_with(b"\"payload\":") {
                (2, 10)
            } else {
                return None;
            };
            i += key_len;
            let (value, len, depth) = json::parse_prefix(text.get(i..)?).ok()?;
            if members[slot].is_some() || depth + 1 > json::MAX_DEPTH {
                return None;
            }
            members[slot] = Some(value);
            i += len;
            match b.get(i) {
                Some(b',') => i += 1,
                Some(b'}') => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (i == b.len()).then_some(members)
}

/// An event text [`read_event`] does not read (another form, or not an
/// event), parsed whole. Out of line: a first event need not compile it.
#[inline(never)]
fn parse_event_text(text: &str) -> Result<[Option<Value>; 3]> {
    json::parse(text, Code::InvalidEvent, "event").and_then(event_members)
}

/// The id, type and payload of an event object, each absent or as it stands;
/// an error for anything but an object of those members (the first unknown
/// one, in key order, is named).
fn event_members(v: Value) -> Result<[Option<Value>; 3]> {
    let Value::Object(o) = v else { return Err(Error::new(Code::InvalidEvent, "event must be an object")) };
    let mut members: [Option<Value>; 3] = [None, None, None];
    for (k, v) in o {
        let slot = match k.as_str() {
            "id" => 0,
            "type" => 1,
            "payload" => 2,
            _ => return Err(Error::at(Code::InvalidEvent, k.clone(), format!("unknown event field \"{k}\""))),
        };
        members[slot] = Some(v);
    }
    Ok(members)
}

/// Ledger ids of the engine's own events start with this; outside ids may not.
pub const RESERVED_ID_PREFIX: &str = "idem:";

fn is_engine_event(event_type: &str) -> bool {
    event_type.starts_with(EFFECT_REPORT_PREFIX) || event_type == TIMER_EVENT
}

fn next_revision(revision: u64) -> Result<u64> {
    revision
        .checked_add(1)
        .ok_or_else(|| Error::new(Code::InvalidSnapshot, "snapshot revision is at its maximum and cannot advance"))
}

/// Earliest due time of any unfinished effect or timer.
pub fn next_due(snap: &Snapshot) -> Option<u64> {
    let effects = snap.state.outbox.iter().filter(|e| !e.state.is_done()).filter_map(|e| e.due_at);
    let timers = snap.state.timers.iter().map(|t| t.due_at);
    effects.chain(timers).min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ORDER: &str = include_str!("../../tests/machines/order.json");

    fn order(version: &str) -> Machine {
        let mut def: Value = serde_json::from_str(ORDER).unwrap();
        def["version"] = json!(version);
        Machine::from_value(def).unwrap()
    }

    fn same_text(o: &Outcome) {
        assert_eq!(o.to_json_text(&order("1")), json::to_text(&o.to_json(false)), "{o:?}");
    }

    #[test]
    fn outcome_text_is_to_json_text() {
        let m = order("1");
        let now = 1_700_000_000_000;
        let pay = |id: &str, pid: &str, amount: u64| json!({ "id": id, "type": "PAYMENT_PARTIAL", "payload": { "paymentId": pid, "amount": amount } });

        // Applied, a new process.
        let first = m.reduce(None, &pay("e1", "p-1", 40), now);
        assert_eq!(first.status, Status::Applied);
        same_text(&first);
        let s1 = first.snapshot.clone().unwrap();

        // Applied with an effect (paid in full: `ship` is emitted) and a due time.
        let paid = m.reduce(Some(&s1), &pay("e2", "p-\u{e9}\"2", 60), now + 1);
        assert_eq!(paid.status, Status::Applied);
        assert!(!paid.effects.is_empty() && paid.next_due_at.is_some());
        same_text(&paid);

        // Duplicate, with how the first delivery was recorded.
        let dup = m.reduce(Some(&s1), &pay("e1", "p-1", 40), now + 2);
        assert_eq!(dup.status, Status::Duplicate);
        assert!(dup.original.is_some());
        same_text(&dup);

        // Conflict (an error with a path) and rejections (with and without one).
        let conflict = m.reduce(Some(&s1), &pay("e1", "p-9", 40), now + 2);
        assert_eq!(conflict.status, Status::Conflict);
        same_text(&conflict);
        let unknown = m.reduce(Some(&s1), &json!({ "id": "e3", "type": "NOPE" }), now + 2);
        assert_eq!(unknown.status, Status::Rejected);
        assert!(unknown.error.as_ref().unwrap().path.is_some());
        same_text(&unknown);
        let corrupt = m.reduce(Some("idem2 garbage"), &pay("e4", "p-4", 1), now + 2);
        assert_eq!(corrupt.status, Status::Rejected);
        assert!(corrupt.error.as_ref().unwrap().path.is_none());
        same_text(&corrupt);

        // Ignored: SHIP is accepted only once paid.
        let ignored = m.reduce(Some(&s1), &json!({ "id": "e5", "type": "SHIP" }), now + 3);
        same_text(&ignored);

        // Written by another version of the machine.
        let m2 = order("2");
        let upgraded = m2.reduce(Some(&s1), &pay("e6", "p-6", 1), now + 4);
        assert_eq!(upgraded.upgraded_from.as_deref(), Some("1"));
        same_text(&upgraded);
        let upgraded_dup = m2.reduce(Some(&s1), &pay("e1", "p-1", 40), now + 4);
        assert_eq!(upgraded_dup.status, Status::Duplicate);
        same_text(&upgraded_dup);
    }

    #[test]
    fn a_state_value_lists_regions_in_document_order() {
        // From text, the order it is written in whatever order a map keeps.
        let m = Machine::from_json(r#"{ "id": "m", "initial": "p", "states": { "p": { "type": "parallel", "states": {
            "z": { "initial": "a", "states": { "a": { "on": { "X": "b" } }, "b": {} } },
            "b": { "initial": "a", "states": { "a": {} } }
        } } } }"#)
        .unwrap();
        let o = m.reduce_in("p-1", None, &json!({ "id": "e1", "type": "X" }), 1);
        assert_eq!(o.status, Status::Applied);
        let text = o.to_json_text(&m);
        assert!(text.contains(r#""state":{"p":{"z":"b","b":"a"}}"#), "{text}");
        // Read back from the stored snapshot (its members sorted), the regions are in document order again.
        let again = m.reduce_in("p-1", o.snapshot.as_deref(), &json!({ "id": "e2", "type": "X" }), 2);
        let text = again.to_json_text(&m);
        assert!(text.contains(r#""state":{"p":{"z":"b","b":"a"}}"#), "{text}");
        // A value this machine did not make keeps every member.
        let mut w = Vec::new();
        m.write_state_value(&json!({ "p": { "b": "a", "q": 1, "z": "b" } }), &mut w);
        assert_eq!(String::from_utf8(w).unwrap(), r#"{"p":{"z":"b","b":"a","q":1}}"#);
    }

    /// The members the general path reads from an event text: `json::parse`,
    /// then id, type and payload (`None` where it refuses the text or a member).
    fn general_members(text: &str) -> Option<[Option<Value>; 3]> {
        let v = json::parse(text, Code::InvalidEvent, "event").ok()?;
        let o = v.as_object()?;
        if o.keys().any(|k| !matches!(k.as_str(), "id" | "type" | "payload")) {
            return None;
        }
        Some([o.get("id").cloned(), o.get("type").cloned(), o.get("payload").cloned()])
    }

    #[test]
    fn read_event_reads_what_the_general_path_reads() {
        // Event texts put together from pieces, some of them not what
        // JSON.stringify writes (whitespace, a key twice, escaped or unknown
        // keys, trailing text, payloads as deep as the bound and deeper).
        let deep = |d: usize| format!("{}0{}", "[".repeat(d - 1), "]".repeat(d - 1));
        let keys = ["\"id\"", "\"type\"", "\"payload\"", "\"i\\u0064\"", "\"other\"", "\"ID\""];
        let values = [
            "\"e-1\"".to_string(), "\"\"".to_string(), "\"PAY\"".to_string(), "\"\\u00e9\\n\"".to_string(), "null".into(), "7".into(),
            "-0".into(), "1.5e3".into(), "true".into(), "{}".into(), "[]".into(), "{\"a\":{\"b\":[1,2,{\"c\":null}]},\"a\":2}".into(),
            "{\"amount\":1,\"paymentId\":\"q-1\"}".into(), deep(2), deep(json::MAX_DEPTH - 1), deep(json::MAX_DEPTH), "\"\\ud800\"".into(), "01".into(), "[1,]".into(),
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let (mut fast, mut total) = (0, 0);
        for _ in 0..20_000 {
            let mut text = String::from(["{", "{", "{", " {", "["][next(5)]);
            for m in 0..next(5) {
                if m > 0 {
                    text.push_str([",", ",", ",", " ,", ", "][next(5)]);
                }
                text.push_str(keys[next(keys.len())]);
                text.push_str([":", ":", ":", " :", ": "][next(5)]);
                text.push_str(&values[next(values.len())]);
            }
            text.push_str(["}", "}", "}", "} ", "}x", ",}", ""][next(7)]);
            total += 1;
            if let Some(members) = read_event(&text) {
                fast += 1;
                assert_eq!(Some(members), general_members(&text), "{text}");
            }
        }
        // The shape JSON.stringify writes comes up often enough to test it.
        assert!(fast > total / 20, "{fast} of {total}");
        for text in [
            r#"{"id":"e1","type":"PAY","payload":{"amount":1}}"#,
            r#"{"payload":{"amount":1},"type":"PAY","id":"e1"}"#,
            r#"{"id":"e1","type":"PAY"}"#,
            r#"{"id":"e1"}"#,
            r#"{}"#,
            r#"{"id":7,"type":null,"payload":[1]}"#,
        ] {
            assert!(read_event(text).is_some(), "{text}");
            assert_eq!(read_event(text), general_members(text), "{text}");
        }
        for text in [
            r#"{"id":"e1","id":"e2","type":"PAY"}"#,
            r#"{"id":"e1","type":"PAY","extra":1}"#,
            r#"{"id":"e1" ,"type":"PAY"}"#,
            r#"{"i\u0064":"e1","type":"PAY"}"#,
            r#"{"id":"e1","type":"PAY"} "#,
            r#"{"id":"e1","type":"PAY",}"#,
            r#"[{"id":"e1"}]"#,
            "",
        ] {
            assert_eq!(read_event(text), None, "{text}");
        }
        let too_deep = format!(r#"{{"id":"e1","type":"PAY","payload":{}}}"#, deep(json::MAX_DEPTH));
        assert_eq!(read_event(&too_deep), None);
        assert!(general_members(&too_deep).is_none(), "the general path refuses it");
    }
}
