//! The snapshot: one self-contained, versioned value holding the state, the
//! context, the ledger of applied event ids, the outbox and the due timers.
//!
//! A host stores the snapshot as one opaque ASCII string; any change to it
//! (truncation, a flipped bit, a hand edit) is caught by its checksum on load
//! and the snapshot is rejected rather than reinterpreted.
//!
//! Format 3 keeps the ledger out of JSON, and first, so that an event that
//! only adds a record leaves every byte before it as it was:
//!
//! ```text
//! idem3\n
//! <one ledger record per line, fixed-width fields, see `Ledger`>
//! #<ledger entries> <prune at>\n
//! <head: JSON of machine, value, context, revision, done, outbox, timers>\n
//! <16 hex digits: xxh3-64 of everything before them>
//! ```
//!
//! The checksum is computed as a stream, and the stream's state after the
//! records is kept with a decoded ledger: encoding after an append hashes only
//! the new record, the trailer and the head, and a host holding the previous
//! text as a string can keep its unchanged prefix (see `Snapshot::encode_from`).
//!
//! Format 2 (`idem2 <head bytes> <ledger entries>\n<head>\n<records><checksum>`,
//! the head first) and format 1 (one JSON object ending in a `"check"` member)
//! are still read.

use crate::error::{Code, Error, Result};
use crate::json::{self, object};
use crate::machine::{Machine, RetryPolicy, StateIdx};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;
use xxhash_rust::xxh3::Xxh3Default as Xxh3;

/// The newest format this engine writes. Every older format stays readable.
pub const FORMAT: u32 = 3;

/// The first line of a format 3 snapshot.
const V3_MAGIC: &str = "idem3\n";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineRef {
    pub id: String,
    pub version: String,
    pub hash: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectState {
    Pending,
    InFlight,
    Unknown,
    Verifying,
    Succeeded,
    Failed,
}

impl EffectState {
    pub fn is_done(self) -> bool {
        matches!(self, EffectState::Succeeded | EffectState::Failed)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            EffectState::Pending => "pending",
            EffectState::InFlight => "in_flight",
            EffectState::Unknown => "unknown",
            EffectState::Verifying => "verifying",
            EffectState::Succeeded => "succeeded",
            EffectState::Failed => "failed",
        }
    }
}

/// One effect on its way to the outside world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OutboxEntry {
    /// The idempotency key: the same on every attempt.
    pub key: String,
    #[serde(rename = "type")]
    pub effect_type: String,
    pub payload: Value,
    pub idempotent: bool,
    pub state: EffectState,
    /// Attempts started so far.
    pub attempts: u32,
    /// Id of the current or last attempt (`<key>#<n>`), for observability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
    /// When the next step (an attempt or a verification) is due, if one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_at: Option<u64>,
    pub retry: RetryPolicy,
    /// The event whose transition emitted it.
    pub event_id: String,
    pub created_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

/// A delayed transition waiting for its time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Timer {
    /// The id of the event that fires it; stable, so a timer fired twice is a duplicate.
    pub id: String,
    /// Dotted path of the state that declared it.
    pub state: String,
    pub delay: u64,
    pub due_at: u64,
}

/// The snapshot, decoded. The ledger stays as text records (see [`Ledger`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The format it was read from (new snapshots: [`FORMAT`]).
    pub format: u32,
    /// Shared: the snapshots of a process all name the same machine (see `KNOWN`).
    pub machine: Arc<MachineRef>,
    /// XState-style state value.
    pub value: Value,
    pub context: Value,
    /// Count of committed changes (applied events, and recorded ignored ones).
    pub revision: u64,
    pub done: bool,
    pub ledger: Ledger,
    pub outbox: Vec<OutboxEntry>,
    pub timers: Vec<Timer>,
    /// What each history state recorded when its parent was last exited: its
    /// path, and the paths of the states it restores (written only when some
    /// history state has recorded something).
    pub history: Map<String, Value>,
}

/// Everything but the ledger, as it is written in format 2's JSON head (what
/// `Snapshot::write_head` writes).
#[cfg(test)]
#[derive(Serialize)]
struct HeadRef<'a> {
    machine: &'a MachineRef,
    value: &'a Value,
    context: &'a Value,
    revision: u64,
    done: bool,
    outbox: &'a [OutboxEntry],
    timers: &'a [Timer],
    #[serde(skip_serializing_if = "Map::is_empty")]
    history: &'a Map<String, Value>,
}

/// Everything but the ledger, as format 2 and 3 keep it in their JSON head.
/// Read by [`Head::from_value`]; the serde derive (tests only) is what that
/// reading is checked against.
#[cfg_attr(test, derive(Debug, PartialEq, Deserialize), serde(deny_unknown_fields))]
struct Head {
    #[cfg_attr(test, serde(deserialize_with = "shared_ref_de"))]
    machine: Arc<MachineRef>,
    value: Value,
    context: Value,
    revision: u64,
    #[cfg_attr(test, serde(default))]
    done: bool,
    #[cfg_attr(test, serde(default))]
    outbox: Vec<OutboxEntry>,
    #[cfg_attr(test, serde(default))]
    timers: Vec<Timer>,
    #[cfg_attr(test, serde(default))]
    history: Map<String, Value>,
}

#[cfg(test)]
fn shared_ref_de<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Arc<MachineRef>, D::Error> {
    MachineRef::deserialize(d).map(Arc::new)
}

/// The machine reference last written in a head, and the head's JSON up to the
/// end of it. Every snapshot of a process names the same machine, so the next
/// head read finds these very bytes: the reference is then shared instead of
/// parsed into three new strings, and written back by copying the bytes.
struct KnownRef {
    r: Arc<MachineRef>,
    json: Vec<u8>,
}

thread_local! {
    static KNOWN: RefCell<Option<KnownRef>> = const { RefCell::new(None) };
}

/// The head's JSON up to the end of the machine reference's hash.
fn write_machine(r: &MachineRef, t: &mut Vec<u8>) {
    json::put(t, b"{\"machine\":{\"id\":");
    json::write_str(&r.id, t);
    json::put(t, b",\"version\":");
    json::write_str(&r.version, t);
    json::put(t, b",\"hash\":");
    json::write_str(&r.hash, t);
}

// ---------------------------------------------------------------------------
// Writing the outbox and the timers
//
// By hand rather than through serde's `Serialize`, which would bring serde's
// serializer and serde_json's into the wasm module: the text is the derives'
// through serde_json, byte for byte (members in declaration order, renamed as
// the attributes say, `None` left out where `skip_serializing_if` says so; the
// tests compare the two on every variant).

/// An outbox entry's JSON, as its `Serialize` derive writes it.
fn write_outbox_entry(e: &OutboxEntry, t: &mut Vec<u8>) {
    json::put(t, b"{\"key\":");
    json::write_str(&e.key, t);
    json::put(t, b",\"type\":");
    json::write_str(&e.effect_type, t);
    json::put(t, b",\"payload\":");
    json::write_json(&e.payload, t);
    json::put(t, if e.idempotent { b",\"idempotent\":true,\"state\":" } else { b",\"idempotent\":false,\"state\":" });
    json::write_str(e.state.as_str(), t);
    json::put(t, b",\"attempts\":");
    json::push_u64(e.attempts.into(), t);
    if let Some(id) = &e.attempt_id {
        json::put(t, b",\"attemptId\":");
        json::write_str(id, t);
    }
    if let Some(at) = e.due_at {
        json::put(t, b",\"dueAt\":");
        json::push_u64(at, t);
    }
    let r = &e.retry;
    json::put(t, b",\"retry\":{\"maxAttempts\":");
    json::push_u64(r.max_attempts.into(), t);
    json::put(t, b",\"baseMs\":");
    json::push_u64(r.base_ms, t);
    json::put(t, b",\"factor\":");
    json::push_u64(r.factor.into(), t);
    json::put(t, b",\"maxDelayMs\":");
    json::push_u64(r.max_delay_ms, t);
    json::put(t, b",\"jitterPct\":");
    json::push_u64(r.jitter_pct.into(), t);
    json::put(t, b"},\"eventId\":");
    json::write_str(&e.event_id, t);
    json::put(t, b",\"createdAt\":");
    json::push_u64(e.created_at, t);
    if let Some(at) = e.done_at {
        json::put(t, b",\"doneAt\":");
        json::push_u64(at, t);
    }
    if let Some(v) = &e.result {
        json::put(t, b",\"result\":");
        json::write_json(v, t);
    }
    if let Some(v) = &e.error {
        json::put(t, b",\"error\":");
        json::write_json(v, t);
    }
    json::put(t, b"}");
}

/// A timer's JSON, as its `Serialize` derive writes it.
fn write_timer(timer: &Timer, t: &mut Vec<u8>) {
    json::put(t, b"{\"id\":");
    json::write_str(&timer.id, t);
    json::put(t, b",\"state\":");
    json::write_str(&timer.state, t);
    json::put(t, b",\"delay\":");
    json::push_u64(timer.delay, t);
    json::put(t, b",\"dueAt\":");
    json::push_u64(timer.due_at, t);
    json::put(t, b"}");
}

/// A JSON array of `items`, each written by `write`.
fn write_array<T>(items: &[T], t: &mut Vec<u8>, write: fn(&T, &mut Vec<u8>)) {
    t.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            t.push(b',');
        }
        write(item, t);
    }
    t.push(b']');
}

// The readable form (`inspect`) as JSON text: what `json::to_text` writes of
// `Snapshot::to_value`, byte for byte, written directly so that the wasm module
// builds no `Value`s for it. A `Value`'s members iterate in key order, so the
// members here are in key order too (the tests compare the two).

/// An outbox entry as `json::to_text` writes its `to_value`.
fn write_outbox_entry_sorted(e: &OutboxEntry, t: &mut Vec<u8>) {
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
fn write_timer_sorted(timer: &Timer, t: &mut Vec<u8>) {
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
fn write_entry_sorted(e: &Entry<'_>, t: &mut Vec<u8>) {
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

/// Format 1: the whole snapshot as JSON, ledger entries as objects (read by
/// [`v1_parts`]; the struct and its serde derive are what tests check that against).
#[cfg(test)]
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct V1 {
    format: u32,
    machine: MachineRef,
    value: Value,
    context: Value,
    revision: u64,
    #[serde(default)]
    done: bool,
    ledger: Vec<V1Entry>,
    #[serde(default)]
    outbox: Vec<OutboxEntry>,
    #[serde(default)]
    timers: Vec<Timer>,
}

#[cfg_attr(test, derive(Debug, PartialEq, Deserialize), serde(deny_unknown_fields))]
struct V1Entry {
    id: String,
    fp: String,
    at: u64,
    exp: u64,
    rev: u64,
    status: String,
    response: Value,
}

// ---------------------------------------------------------------------------
// Reading the wire format from JSON values
//
// By hand rather than through serde's `Deserialize`: the derived code and the
// deserializer behind it are most of what serde would add to the wasm module.
// The rules are the derives' (see the attributes on the types above, and the
// tests that compare the two): every required field present, no unknown
// field, each of its JSON type, integers within their Rust type; an absent
// `done`, `outbox` or `timers` is false or empty; an optional field that is
// absent or null is `None`. Two forms the derives also read, which this
// engine never wrote, are refused: a struct written as an array of its field
// values, and an effect state written as `{"pending": null}`.

/// Why a JSON value is not the snapshot structure it should be: what is wrong,
/// and the path of the offending member (`outbox[0].retry.factor`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mismatch {
    reason: &'static str,
    path: String,
}

type Wire<T> = std::result::Result<T, Mismatch>;

impl Mismatch {
    #[cold]
    #[inline(never)]
    fn new(reason: &'static str) -> Mismatch {
        Mismatch { reason, path: String::new() }
    }

    /// The same mismatch, found inside member `name` of the value around it.
    #[cold]
    #[inline(never)]
    fn at(self, name: &str) -> Mismatch {
        self.within(name)
    }

    /// The same mismatch, found inside item `i` of an array.
    #[cold]
    #[inline(never)]
    fn at_index(self, i: usize) -> Mismatch {
        self.within(&format!("[{i}]"))
    }

    /// `segment` put before the path, with a `.` between two member names.
    fn within(mut self, segment: &str) -> Mismatch {
        let sep = if self.path.is_empty() || self.path.starts_with('[') { "" } else { "." };
        self.path = format!("{segment}{sep}{}", self.path);
        self
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(self.reason)
        } else {
            write!(f, "{} at {}", self.reason, self.path)
        }
    }
}

/// What a member of a wire struct holds. A value is checked against its kind
/// first (by [`check_kind`], which says what is wrong and where), and only then
/// read (by the struct's `read`), which then cannot fail: one checker for
/// every struct, and readers without an error path of their own.
#[derive(Clone, Copy)]
enum Kind {
    Any,
    Str,
    Bool,
    /// A `u64`: a JSON integer from 0 (no fraction or exponent: serde_json reads
    /// those as floats, which a `u64` field refuses).
    U64,
    U32,
    /// An [`EffectState`] by its wire name.
    State,
    /// Any JSON object.
    Object,
    Struct(&'static [Field]),
    /// An array of structs.
    List(&'static [Field]),
}

/// Whether a member must be there: an `Optional` one may be absent or null
/// (`None`), a `Default` one absent (false or empty) but not null.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    Required,
    Optional,
    Default,
}

/// One field of a wire struct: its member name, what it holds, whether it must be there.
struct Field {
    name: &'static str,
    kind: Kind,
    need: Need,
}

const fn req(name: &'static str, kind: Kind) -> Field {
    Field { name, kind, need: Need::Required }
}

const fn opt(name: &'static str, kind: Kind) -> Field {
    Field { name, kind, need: Need::Optional }
}

const fn or_default(name: &'static str, kind: Kind) -> Field {
    Field { name, kind, need: Need::Default }
}

// The fields of each struct, in declaration order (the order the derives read
// them in, so the first mismatch found is theirs), named as on the wire.
const MACHINE_REF: &[Field] = &[req("id", Kind::Str), req("version", Kind::Str), req("hash", Kind::Str)];
const RETRY: &[Field] = &[
    req("maxAttempts", Kind::U32),
    req("baseMs", Kind::U64),
    req("factor", Kind::U32),
    req("maxDelayMs", Kind::U64),
    req("jitterPct", Kind::U32),
];
const OUTBOX_ENTRY: &[Field] = &[
    req("key", Kind::Str),
    req("type", Kind::Str),
    req("payload", Kind::Any),
    req("idempotent", Kind::Bool),
    req("state", Kind::State),
    req("attempts", Kind::U32),
    opt("attemptId", Kind::Str),
    opt("dueAt", Kind::U64),
    req("retry", Kind::Struct(RETRY)),
    req("eventId", Kind::Str),
    req("createdAt", Kind::U64),
    opt("doneAt", Kind::U64),
    opt("result", Kind::Any),
    opt("error", Kind::Any),
];
const TIMER: &[Field] = &[req("id", Kind::Str), req("state", Kind::Str), req("delay", Kind::U64), req("dueAt", Kind::U64)];
const HEAD: &[Field] = &[
    req("machine", Kind::Struct(MACHINE_REF)),
    req("value", Kind::Any),
    req("context", Kind::Any),
    req("revision", Kind::U64),
    or_default("done", Kind::Bool),
    or_default("outbox", Kind::List(OUTBOX_ENTRY)),
    or_default("timers", Kind::List(TIMER)),
    or_default("history", Kind::Object),
];
const V1_ENTRY: &[Field] = &[
    req("id", Kind::Str),
    req("fp", Kind::Str),
    req("at", Kind::U64),
    req("exp", Kind::U64),
    req("rev", Kind::U64),
    req("status", Kind::Str),
    req("response", Kind::Any),
];
const V1_BODY: &[Field] = &[
    req("format", Kind::U32),
    req("machine", Kind::Struct(MACHINE_REF)),
    req("value", Kind::Any),
    req("context", Kind::Any),
    req("revision", Kind::U64),
    or_default("done", Kind::Bool),
    req("ledger", Kind::List(V1_ENTRY)),
    or_default("outbox", Kind::List(OUTBOX_ENTRY)),
    or_default("timers", Kind::List(TIMER)),
];

/// Whether `v` is a `kind`; the first mismatch (in field order, depth first) otherwise.
fn check_kind(v: &Value, kind: Kind) -> Wire<()> {
    let expected = match kind {
        Kind::Any => return Ok(()),
        Kind::Str if v.is_string() => return Ok(()),
        Kind::Str => "expected a string",
        Kind::Bool if v.is_boolean() => return Ok(()),
        Kind::Bool => "expected a boolean",
        Kind::U64 if v.is_u64() => return Ok(()),
        Kind::U64 => "expected a non-negative integer",
        Kind::U32 if v.as_u64().is_some_and(|n| n <= u32::MAX.into()) => return Ok(()),
        Kind::U32 => "expected an integer from 0 to 4294967295",
        Kind::State if v.as_str().and_then(EffectState::named).is_some() => return Ok(()),
        Kind::State => "expected an effect state",
        Kind::Object if v.is_object() => return Ok(()),
        Kind::Object => "expected an object",
        Kind::Struct(fields) => return check_struct(v, fields),
        Kind::List(fields) => {
            let Value::Array(items) = v else { return Err(Mismatch::new("expected an array")) };
            for (i, item) in items.iter().enumerate() {
                check_struct(item, fields).map_err(|e| e.at_index(i))?;
            }
            return Ok(());
        }
    };
    Err(Mismatch::new(expected))
}

/// Whether `v` is an object with `fields`: each required one present, each
/// present one of its kind (an optional one may be null), and no other member
/// (the first in key order is the unknown field).
fn check_struct(v: &Value, fields: &[Field]) -> Wire<()> {
    let Value::Object(map) = v else { return Err(Mismatch::new("expected an object")) };
    let mut present = 0;
    for f in fields {
        match map.get(f.name) {
            None if f.need == Need::Required => return Err(Mismatch::new("missing field").at(f.name)),
            None => {}
            Some(v) => {
                present += 1;
                if !(f.need == Need::Optional && v.is_null()) {
                    check_kind(v, f.kind).map_err(|e| e.at(f.name))?;
                }
            }
        }
    }
    if present == map.len() {
        return Ok(());
    }
    match map.keys().find(|k| !fields.iter().any(|f| f.name == k.as_str())) {
        Some(name) => Err(Mismatch::new("unknown field").at(name)),
        None => Ok(()),
    }
}

/// The members of an object that [`check_kind`] accepted, taken out by name: what
/// the check accepted reads without an error (an absent member reads as
/// null). Taken by `get_mut`, not `remove`: nothing else on the lean path
/// removes from a map, so the B-tree's removal code stays out of the module.
struct Members(Map<String, Value>);

impl Members {
    fn of(v: Value) -> Members {
        match v {
            Value::Object(map) => Members(map),
            _ => Members(Map::new()),
        }
    }

    // `take` and `get` are the only lookups, out of line: the readers are then
    // a call per field.
    #[inline(never)]
    fn take(&mut self, name: &str) -> Value {
        self.0.get_mut(name).map(std::mem::take).unwrap_or_default()
    }

    #[inline(never)]
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }

    /// Absent or null: `None`.
    fn opt(&mut self, name: &str) -> Option<Value> {
        Some(self.take(name)).filter(|v| !v.is_null())
    }

    fn string(&mut self, name: &str) -> String {
        self.opt_string(name).unwrap_or_default()
    }

    #[inline(never)]
    fn opt_string(&mut self, name: &str) -> Option<String> {
        match self.take(name) {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    fn opt_uint(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(Value::as_u64)
    }

    fn uint(&self, name: &str) -> u64 {
        self.opt_uint(name).unwrap_or(0)
    }

    /// Checked to be at most `u32::MAX`.
    fn uint32(&self, name: &str) -> u32 {
        self.uint(name) as u32
    }

    fn boolean(&self, name: &str) -> bool {
        self.get(name).and_then(Value::as_bool).unwrap_or(false)
    }

    /// An array of structs, each read by `read`; absent: empty.
    fn list<T>(&mut self, name: &str, read: fn(Value) -> T) -> Vec<T> {
        items(self.take(name), read)
    }
}

/// The items of an array, each read by `read`.
fn items<T>(v: Value, read: fn(Value) -> T) -> Vec<T> {
    match v {
        Value::Array(items) if !items.is_empty() => items.into_iter().map(read).collect(),
        _ => Vec::new(),
    }
}

/// A string checked to be one.
fn string(v: Value) -> String {
    match v {
        Value::String(s) => s,
        _ => String::new(),
    }
}

/// `v` read by `read` once it is checked to be a `kind`.
fn wire<T>(v: Value, kind: Kind, read: fn(Value) -> T) -> Wire<T> {
    check_kind(&v, kind)?;
    Ok(read(v))
}

impl MachineRef {
    fn read(v: Value) -> MachineRef {
        let mut m = Members::of(v);
        MachineRef { id: m.string("id"), version: m.string("version"), hash: m.string("hash") }
    }

    /// The reference that names `machine` (its own, shared).
    pub fn of(machine: &Machine) -> Arc<MachineRef> {
        machine.reference.clone()
    }

    /// Whether this reference names `machine`.
    pub fn names(&self, machine: &Machine) -> bool {
        std::ptr::eq(self, &*machine.reference)
            || (self.id == machine.id && self.version == machine.version && self.hash == machine.hash)
    }
}

impl EffectState {
    /// The state whose wire name ([`EffectState::as_str`]) is `name`.
    fn named(name: &str) -> Option<EffectState> {
        Some(match name {
            "pending" => EffectState::Pending,
            "in_flight" => EffectState::InFlight,
            "unknown" => EffectState::Unknown,
            "verifying" => EffectState::Verifying,
            "succeeded" => EffectState::Succeeded,
            "failed" => EffectState::Failed,
            _ => return None,
        })
    }
}

/// A retry policy as the outbox keeps it (camelCase, every field required).
fn retry_policy(v: Value) -> RetryPolicy {
    let m = Members::of(v);
    RetryPolicy {
        max_attempts: m.uint32("maxAttempts"),
        base_ms: m.uint("baseMs"),
        factor: m.uint32("factor"),
        max_delay_ms: m.uint("maxDelayMs"),
        jitter_pct: m.uint32("jitterPct"),
    }
}

impl OutboxEntry {
    fn read(v: Value) -> OutboxEntry {
        let mut m = Members::of(v);
        OutboxEntry {
            key: m.string("key"),
            effect_type: m.string("type"),
            payload: m.take("payload"),
            idempotent: m.boolean("idempotent"),
            state: m.get("state").and_then(Value::as_str).and_then(EffectState::named).unwrap_or(EffectState::Pending),
            attempts: m.uint32("attempts"),
            attempt_id: m.opt_string("attemptId"),
            due_at: m.opt_uint("dueAt"),
            retry: retry_policy(m.take("retry")),
            event_id: m.string("eventId"),
            created_at: m.uint("createdAt"),
            done_at: m.opt_uint("doneAt"),
            result: m.opt("result"),
            error: m.opt("error"),
        }
    }
}

impl Timer {
    fn read(v: Value) -> Timer {
        let mut m = Members::of(v);
        Timer { id: m.string("id"), state: m.string("state"), delay: m.uint("delay"), due_at: m.uint("dueAt") }
    }
}

impl Head {
    fn from_value(v: Value) -> Wire<Head> {
        wire(v, Kind::Struct(HEAD), Head::read)
    }

    /// The head's fields of an object checked to have them (other members are not read).
    fn read(v: Value) -> Head {
        let mut m = Members::of(v);
        Head {
            machine: Arc::new(MachineRef::read(m.take("machine"))),
            value: m.take("value"),
            context: m.take("context"),
            revision: m.uint("revision"),
            done: m.boolean("done"),
            outbox: m.list("outbox", OutboxEntry::read),
            timers: m.list("timers", Timer::read),
            history: match m.take("history") {
                Value::Object(o) => o,
                _ => Map::new(),
            },
        }
    }
}

/// A format 1 body, checked: the fields it shares with the head of the later
/// formats, read as those are, and its ledger entries, read one by one by the caller.
fn v1_parts(v: Value) -> Wire<(Head, Vec<Value>)> {
    check_kind(&v, Kind::Struct(V1_BODY))?;
    let mut m = Members::of(v);
    let entries = match m.take("ledger") {
        Value::Array(entries) => entries,
        _ => Vec::new(),
    };
    Ok((Head::read(Value::Object(m.0)), entries))
}

#[cfg(test)]
impl V1 {
    fn from_value(v: Value) -> Wire<V1> {
        let format = v.get("format").and_then(Value::as_u64).unwrap_or(0) as u32;
        let (head, entries) = v1_parts(v)?;
        Ok(V1 {
            format,
            machine: (*head.machine).clone(),
            value: head.value,
            context: head.context,
            revision: head.revision,
            done: head.done,
            ledger: entries.into_iter().map(V1Entry::read).collect(),
            outbox: head.outbox,
            timers: head.timers,
        })
    }
}

impl V1Entry {
    fn read(v: Value) -> V1Entry {
        let mut m = Members::of(v);
        V1Entry {
            id: m.string("id"),
            fp: m.string("fp"),
            at: m.uint("at"),
            exp: m.uint("exp"),
            rev: m.uint("rev"),
            status: m.string("status"),
            response: m.take("response"),
        }
    }
}

/// A snapshot checked against a machine, with its active states resolved.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub snap: Snapshot,
    /// The active states (the configuration), in document order.
    pub config: Vec<StateIdx>,
    /// `Some(old version)` when written by another version of the same machine.
    pub upgraded_from: Option<String>,
}

/// `&s[range]` for a range this module's own bookkeeping puts on character
/// boundaries (record bounds sit after a newline; a split is a record bound):
/// a trap if that were ever wrong, as the panic of `&s[range]` is, without
/// bringing that panic's message (and core's Unicode tables) into the module.
fn cut<R: std::slice::SliceIndex<str, Output = str>>(s: &str, range: R) -> &str {
    s.get(range).unwrap_or_else(|| std::process::abort())
}

// The errors of decoding, each built out of line in one place: the paths that
// find them are rare, and each `format!` or message copy left inline would be
// repeated in every function that returns it.

/// `invalid_snapshot`: `snapshot is corrupted: <why>`.
#[cold]
#[inline(never)]
fn corrupt(why: &str) -> Error {
    Error::new(Code::InvalidSnapshot, ["snapshot is corrupted: ", why].concat())
}

/// An error whose message is fixed.
#[cold]
#[inline(never)]
fn fail(code: Code, message: &'static str) -> Error {
    Error::new(code, message)
}

#[cold]
#[inline(never)]
fn too_large(len: usize, max_bytes: usize) -> Error {
    Error::new(Code::SnapshotTooLarge, format!("snapshot is {len} bytes, more than the {max_bytes} allowed"))
}

/// A format number this engine does not read: newer than [`FORMAT`], or unknown.
#[cold]
#[inline(never)]
fn unreadable_format(format: u64) -> Error {
    if format > FORMAT.into() {
        Error::new(Code::UnsupportedSnapshotFormat, format!("snapshot format {format} is newer than this engine (it reads 1 to {FORMAT})"))
    } else {
        corrupt(&format!("unknown format {format}"))
    }
}

#[cold]
#[inline(never)]
fn wrong_machine(got: &str, want: &str) -> Error {
    Error::new(Code::WrongMachine, ["snapshot belongs to machine \"", got, "\", not \"", want, "\""].concat())
}

/// The state of a snapshot written by another version of `machine`, which this one does not have.
#[cold]
#[inline(never)]
fn missing_state(snap: &Snapshot, machine: &Machine) -> Error {
    let (old, path, new) = (snap.machine.version.as_str(), Machine::value_path(&snap.value), machine.version.as_str());
    Error::new(Code::MissingState, ["snapshot written by version ", old, " is in state \"", &path, "\", which version ", new, " no longer has"].concat())
}

#[cold]
#[inline(never)]
fn too_many_attempts(e: &OutboxEntry) -> Error {
    corrupt(&format!("effect \"{}\" has {} attempts, beyond its retry policy", e.key, e.attempts))
}

/// A head or format 1 body (`what`) that is JSON but not of its format.
#[cold]
#[inline(never)]
fn mismatch(what: &str, format: u32, e: Mismatch) -> Error {
    Error::new(Code::InvalidSnapshot, format!("{what} does not match format {format}: {e}"))
}

impl Snapshot {
    /// Encode as format 3 text (ASCII), checksum last.
    pub fn encode(&mut self) -> String {
        self.encode_from().0
    }

    /// Encode, and say how many leading bytes the new text shares with the text
    /// this snapshot was decoded from or last encoded to (0 when none): the
    /// header line and the records up to where the ledger was only appended to.
    pub fn encode_from(&mut self) -> (String, usize) {
        let e = self.encode_split();
        let prefix = self.ledger.prefix(e.split);
        let mut out = String::with_capacity(prefix.len() + e.tail.len());
        out.push_str(prefix);
        out.push_str(&e.tail);
        (out, e.shared)
    }

    /// Encode without copying the records: the new text is
    /// `self.ledger.prefix(split)` followed by `tail`.
    pub fn encode_split(&mut self) -> Encoded {
        let ledger = &mut self.ledger;
        let split = ledger.text.len();
        // A kept stream is brought up to the end of the records in its own box;
        // records too short to be worth keeping one for are hashed again.
        let text = ledger.text.as_bytes();
        let (shared, state) = match ledger.synced.take() {
            Some(Synced { len, state: Some(mut state) }) => {
                state.update(&text[len..]);
                (len, Some(state))
            }
            Some(Synced { len, state: None }) => (len, Synced::keep(text)),
            None => (0, Synced::keep(text)),
        };
        let mut hasher = match &state {
            Some(state) => (**state).clone(),
            None => {
                let mut h = Xxh3::new();
                h.update(text);
                h
            }
        };
        ledger.synced = Some(Synced { len: split, state });
        // The trailer, the head and the checksum, written into one buffer; 512
        // bytes, as 256 were outgrown by even a new process's (its head is ~210).
        let mut t: Vec<u8> = Vec::with_capacity(512);
        t.push(b'#');
        json::push_u64(ledger.recs.len() as u64, &mut t);
        t.push(b' ');
        json::push_u64(ledger.prune_at, &mut t);
        t.push(b'\n');
        let head = t.len();
        self.write_head(&mut t);
        ascii_from(&mut t, head);
        t.push(b'\n');
        hasher.update(&t);
        push_hex(&mut t, hasher.digest(), 16);
        debug_assert!(t.is_ascii());
        // SAFETY: ASCII only: the trailer's digits, the head made ASCII by
        // `ascii_from`, newlines and hex digits (not checked again: a
        // UTF-8 check was as costly as making the head ASCII).
        Encoded { tail: unsafe { String::from_utf8_unchecked(t) }, split, shared }
    }

    /// The head's JSON: what serde_json writes for the head's fields in this
    /// order, byte for byte (a `Value`'s maps iterate in key order, so its
    /// canonical form is that text), non-ASCII characters included.
    fn write_head(&self, t: &mut Vec<u8>) {
        KNOWN.with(|known| {
            let mut known = known.borrow_mut();
            match &*known {
                Some(k) if Arc::ptr_eq(&k.r, &self.machine) => json::put(t, &k.json),
                _ => {
                    let at = t.len();
                    write_machine(&self.machine, t);
                    *known = Some(KnownRef { r: self.machine.clone(), json: t[at..].to_vec() });
                }
            }
        });
        json::put(t, b"},\"value\":");
        json::write_canonical(&self.value, t);
        json::put(t, b",\"context\":");
        json::write_canonical(&self.context, t);
        json::put(t, b",\"revision\":");
        json::push_u64(self.revision, t);
        json::put(t, if self.done { b",\"done\":true,\"outbox\":" } else { b",\"done\":false,\"outbox\":" });
        if self.outbox.is_empty() && self.timers.is_empty() && self.history.is_empty() {
            // The usual end, in one piece.
            return json::put(t, b"[],\"timers\":[]}");
        }
        write_array(&self.outbox, t, write_outbox_entry);
        json::put(t, b",\"timers\":");
        write_array(&self.timers, t, write_timer);
        if !self.history.is_empty() {
            json::put(t, b",\"history\":");
            json::write_json(&Value::Object(self.history.clone()), t);
        }
        json::put(t, b"}");
    }

    /// Decode a snapshot held in a `String` the caller gives up: a format 3
    /// ledger then keeps that very buffer instead of copying its records.
    pub fn decode_owned(text: String, max_bytes: usize) -> Result<Snapshot> {
        if text.starts_with(V3_MAGIC) && text.len() <= max_bytes {
            if let Some((body, expected)) = checked_tail(&text)? {
                let (snap, trailer_start) = decode_v3(body, expected)?;
                let mut text = text;
                text.truncate(trailer_start);
                return Ok(snap.with_records(text));
            }
        }
        Snapshot::decode(&text, max_bytes)
    }

    /// Decode any format this engine has written, verifying its checksum.
    pub fn decode(text: &str, max_bytes: usize) -> Result<Snapshot> {
        if text.len() > max_bytes {
            return Err(too_large(text.len(), max_bytes));
        }
        if text.starts_with('{') {
            return decode_v1(text);
        }
        if !text.starts_with("idem") {
            return Err(fail(Code::InvalidSnapshot, "not an idem snapshot"));
        }
        // Every text format from 2 on ends with the checksum of all that precedes it,
        // so integrity is checked before anything else is believed, even the format.
        let Some((body, expected)) = checked_tail(text)? else { return Err(corrupt("too short")) };
        if body.starts_with(V3_MAGIC) {
            let (snap, trailer_start) = decode_v3(body, expected)?;
            // Room for the record this reduce will add, so appending never copies the ledger again.
            let mut records = String::with_capacity(trailer_start + 1024);
            records.push_str(cut(body, ..trailer_start));
            return Ok(snap.with_records(records));
        }
        decode_v2(body, expected)
    }

    /// A fresh snapshot in `config` with the machine's initial context.
    pub fn initial(machine: &Machine, config: &[StateIdx]) -> Snapshot {
        Snapshot {
            format: FORMAT,
            machine: MachineRef::of(machine),
            value: machine.value_of_config(config),
            context: machine.initial_context.clone(),
            revision: 0,
            done: false,
            ledger: Ledger { cap: machine.retention.max_entries, ..Ledger::default() },
            outbox: Vec::new(),
            timers: Vec::new(),
            history: Map::new(),
        }
    }

    /// The readable form for people and tools (malformed ledger records, which
    /// only a forged snapshot can hold, are left out; [`Ledger::validate`] finds them).
    pub fn to_value(&self) -> Value {
        let ledger: Vec<Value> = self
            .ledger
            .iter()
            .filter_map(Result::ok)
            .map(|e| {
                object! {
                    "id": e.id(),
                    "fp": e.fp,
                    "at": e.at,
                    "exp": e.exp,
                    "rev": e.rev,
                    "status": e.status(),
                    "response": e.response().unwrap_or(Value::Null),
                }
            })
            .collect();
        let mut v = object! {
            "format": self.format,
            "machine": *self.machine,
            "value": self.value,
            "context": self.context,
            "revision": self.revision,
            "done": self.done,
            "ledger": ledger,
            "outbox": self.outbox,
            "timers": self.timers,
        };
        if !self.history.is_empty() {
            v["history"] = Value::Object(self.history.clone());
        }
        v
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

impl Head {
    fn into_snapshot(self, format: u32, ledger: Ledger) -> Snapshot {
        Snapshot {
            format,
            machine: self.machine,
            value: self.value,
            context: self.context,
            revision: self.revision,
            done: self.done,
            ledger,
            outbox: self.outbox,
            timers: self.timers,
            history: self.history,
        }
    }
}

/// The head's JSON, with the nesting bound every input gets: field by field
/// when it is laid out as the encoder writes it (`read_head`), else parsed
/// whole and read by [`Head::from_value`], which shares its code with format 1.
fn parse_head(text: &str, format: u32) -> Result<Head> {
    if let Some(head) = read_head(text) {
        return Ok(head);
    }
    let v = json::parse(text, Code::InvalidSnapshot, "snapshot head")?;
    let head = Head::from_value(v).map_err(|e| mismatch("snapshot head", format, e))?;
    json::check_depth(&head.context, "snapshot context")?;
    json::check_depth(&head.value, "snapshot state value")?;
    for e in &head.outbox {
        for v in [Some(&e.payload), e.result.as_ref(), e.error.as_ref()].into_iter().flatten() {
            json::check_depth(v, "snapshot outbox entry")?;
        }
    }
    Ok(head)
}

/// The head as [`Snapshot::write_head`] writes it (no whitespace, fields in
/// their order), read without building a `Value` of the whole head and then
/// converting that: each field's JSON is parsed on its own. `None` for
/// anything else, which `parse_head` then reads as any JSON, errors and all:
/// what this accepts it reads exactly as that would.
fn read_head(text: &str) -> Option<Head> {
    const FIELDS: [&str; 9] = [
        "{\"machine\":{\"id\":",
        ",\"version\":",
        ",\"hash\":",
        "},\"value\":",
        ",\"context\":",
        ",\"revision\":",
        ",\"done\":",
        ",\"outbox\":",
        ",\"timers\":",
    ];
    // The bytes of the last reference written are read as its value would be.
    let known = KNOWN.with(|k| {
        let k = k.borrow();
        let k = k.as_ref()?;
        text.as_bytes().starts_with(&k.json).then(|| (k.r.clone(), k.json.len()))
    });
    let mut fields: [Value; FIELDS.len()] = Default::default();
    // The usual end (not done, no outbox entry, no timer), matched whole.
    let mut usual_end = false;
    // Every check before anything is moved out, and one way out when one fails.
    let mut read = || {
        let (at, skip) = known.as_ref().map_or((0, 0), |&(_, len)| (len, 3));
        let mut r = HeadReader { text, i: at };
        for i in skip..FIELDS.len() {
            if i == 6 && r.lit(",\"done\":false,\"outbox\":[],\"timers\":[]").is_some() {
                usual_end = true;
                break;
            }
            r.lit(FIELDS[i])?;
            fields[i] = r.value()?;
        }
        r.lit("}")?;
        let whole = r.i == text.len()
            && fields[5].is_u64()
            && (known.is_some() || fields[..3].iter().all(Value::is_string))
            && (usual_end
                || (fields[6].is_boolean()
                    && (none(&fields[7]) || check_kind(&fields[7], Kind::List(OUTBOX_ENTRY)).is_ok())
                    && (none(&fields[8]) || check_kind(&fields[8], Kind::List(TIMER)).is_ok())));
        whole.then_some(())
    };
    read()?;
    let (revision, done) = (fields[5].as_u64().unwrap_or(0), fields[6].as_bool().unwrap_or(false));
    let (no_outbox, no_timers) = (usual_end || none(&fields[7]), usual_end || none(&fields[8]));
    let mut take = |i: usize| std::mem::take(&mut fields[i]);
    let machine = match known {
        Some((r, _)) => r,
        None => Arc::new(MachineRef { id: string(take(0)), version: string(take(1)), hash: string(take(2)) }),
    };
    Some(Head {
        machine,
        value: take(3),
        context: take(4),
        revision,
        done,
        outbox: if no_outbox { Vec::new() } else { items(take(7), OutboxEntry::read) },
        timers: if no_timers { Vec::new() } else { items(take(8), Timer::read) },
        history: Map::new(),
    })
}

/// An empty array: most heads have no outbox entry and no timer, read without a call.
fn none(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.is_empty())
}

struct HeadReader<'a> {
    text: &'a str,
    i: usize,
}

impl HeadReader<'_> {
    fn rest(&self) -> &[u8] {
        self.text.as_bytes().get(self.i..).unwrap_or_default()
    }

    fn lit(&mut self, lit: &str) -> Option<()> {
        self.rest().starts_with(lit.as_bytes()).then(|| self.i += lit.len())
    }

    /// A JSON value, within the nesting bound it has as a member of the head
    /// (`within_depth` at 2, the stricter of that and `json::parse`'s), read
    /// where it stands: the value a parse of the whole head finds there.
    fn value(&mut self) -> Option<Value> {
        let (v, len, depth) = json::parse_prefix(self.text.get(self.i..)?).ok()?;
        if depth >= json::MAX_DEPTH {
            return None;
        }
        self.i += len;
        Some(v)
    }
}

/// Format 2: `body` is everything before the checksum, which is `expected`.
#[inline(never)]
fn decode_v2(body: &str, expected: u64) -> Result<Snapshot> {
    if checksum(body) != expected {
        return Err(corrupt("checksum mismatch"));
    }
    let rest = body.get("idem".len()..).unwrap_or("");
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let format = rest.get(..digits).and_then(number).and_then(|n| u32::try_from(n).ok()).ok_or_else(|| corrupt("no format number"))?;
    if format != 2 {
        return Err(unreadable_format(format.into()));
    }
    let (header, after) = body.split_once('\n').ok_or_else(|| corrupt("no header line"))?;
    let mut fields = header.get("idem2".len()..).unwrap_or("").split(' ').skip(1);
    let mut size = || fields.next().and_then(number).and_then(|n| usize::try_from(n).ok()).ok_or_else(|| corrupt("bad header"));
    let (head_len, count) = (size()?, size()?);
    if after.len() < head_len + 1 || !after.is_char_boundary(head_len) || after.get(head_len..head_len + 1) != Some("\n") {
        return Err(corrupt("head length does not match"));
    }
    let head = parse_head(after.get(..head_len).unwrap_or(""), 2)?;
    // Format 2 kept no pruning schedule: look at the expiries on the next append.
    let records = after.get(head_len + 1..).unwrap_or("");
    let mut text = String::with_capacity(V3_MAGIC.len() + records.len() + 1024);
    text.push_str(V3_MAGIC);
    text.push_str(records);
    let ledger = Ledger::index(text, count, 0)?;
    Ok(head.into_snapshot(2, ledger))
}

/// A decimal number as `str::parse` reads it (an optional `+`, then digits),
/// one copy of that code for every number of the formats' header lines.
#[inline(never)]
fn number(s: &str) -> Option<u64> {
    s.parse().ok()
}

/// The checksum of formats 1 and 2, which are hashed in one piece (out of line:
/// the hasher's setup is large).
#[inline(never)]
fn checksum(body: &str) -> u64 {
    json::hash64(body.as_bytes())
}

/// The body of a format 2 or later text and the checksum that ends it.
fn checked_tail(text: &str) -> Result<Option<(&str, u64)>> {
    let split = text.len().wrapping_sub(16);
    let (Some(body), Some(check)) = (text.get(..split), text.get(split..)) else { return Ok(None) };
    if body.len() < 8 {
        return Ok(None);
    }
    // Sixteen lowercase hex digits always fit a `u64`.
    match hex16(check.as_bytes()) {
        Some(expected) => Ok(Some((body, expected))),
        None => Err(corrupt("checksum is not lowercase hex")),
    }
}

/// A format 3 snapshot whose records are still to be indexed (see
/// [`V3::with_records`]), and where its trailer starts.
struct V3 {
    head: Head,
    recs: Vec<Rec>,
    prune_at: u64,
    /// The checksum stream after the records, when they are long enough to keep it (see [`Synced::keep`]).
    state: Option<Box<Xxh3>>,
}

impl V3 {
    /// The snapshot, its ledger made of `text`: the header line and the records
    /// (the text the records were found in, or a copy of it).
    fn with_records(self, text: String) -> Snapshot {
        let mut ledger = Ledger::indexed(text, self.recs, self.prune_at);
        ledger.synced = Some(Synced { len: ledger.text.len(), state: self.state });
        self.head.into_snapshot(3, ledger)
    }
}

/// Format 3: `body` is everything before the checksum. The records come first,
/// so the checksum is taken as a stream and its state after the records is kept.
fn decode_v3(body: &str, expected: u64) -> Result<(V3, usize)> {
    // The head is the last line, the trailer (`#<count> <prune at>`) the one before.
    let layout = body.strip_suffix('\n').and_then(|b| {
        let head_start = last_newline(b.as_bytes())? + 1;
        let trailer_start = last_newline(b.as_bytes().get(..head_start - 1)?)? + 1;
        (trailer_start >= V3_MAGIC.len()).then_some((trailer_start, head_start))
    });
    let Some((trailer_start, head_start)) = layout else {
        return Err(corrupt(if checksum(body) != expected { "checksum mismatch" } else { "no trailer" }));
    };
    // Hash and find the records block by block (what the walk finds is believed
    // only once the checksum matches).
    const BLOCK: usize = 16 << 10;
    let b = body.as_bytes();
    let mut hasher = Xxh3::new();
    let mut walk = Walk::new(trailer_start);
    let mut at = 0;
    while at < trailer_start {
        let end = (at + BLOCK).min(trailer_start);
        hasher.update(&b[at..end]);
        walk.advance(b, end);
        at = end;
    }
    // Boxed here, not moved out with the rest: the state is a large value.
    let state = (trailer_start > Synced::KEEP_FROM).then(|| Box::new(hasher.clone()));
    hasher.update(&b[trailer_start..]);
    if hasher.digest() != expected {
        return Err(corrupt("checksum mismatch"));
    }
    // `#<count> <prune at>`: a second space is left in the second number, which then does not parse.
    let trailer = body.get(trailer_start..head_start - 1).and_then(|t| t.strip_prefix('#')?.split_once(' '));
    let Some((count, prune_at)) = trailer.and_then(|(c, p)| Some((usize::try_from(number(c)?).ok()?, number(p)?))) else {
        return Err(corrupt("bad trailer"));
    };
    let recs = walk.finish(trailer_start, count)?;
    let head = parse_head(body.get(head_start..body.len() - 1).unwrap_or(""), 3)?;
    Ok((V3 { head, recs, prune_at, state }, trailer_start))
}

/// Where the last `\n` of `b` is, found eight bytes at a time from the end
/// (the head, which has none, is scanned on every decode).
fn last_newline(b: &[u8]) -> Option<usize> {
    const L: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut end = b.len();
    // Sixteen bytes at a time where the processor compares them at once.
    #[cfg(any(all(target_arch = "wasm32", target_feature = "simd128"), all(target_arch = "x86_64", target_feature = "sse2")))]
    while end >= 16 {
        let m = newline_mask16(&b[end - 16..end]);
        if m != 0 {
            return Some(end - 1 - m.leading_zeros() as usize);
        }
        end -= 16;
    }
    while let Some(w) = end.checked_sub(8).and_then(|at| b.get(at..end)).and_then(|w| w.try_into().ok()) {
        // The high bit of each byte of `z` is set exactly where that byte of `x` is zero (see `newlines`).
        let x = u64::from_le_bytes(w) ^ (L * b'\n' as u64);
        let z = !(((x & LOW7) + LOW7) | x | LOW7);
        if z != 0 {
            return Some(end - 8 + (63 - z.leading_zeros() as usize) / 8);
        }
        end -= 8;
    }
    b.get(..end)?.iter().rposition(|&c| c == b'\n')
}

/// A bit for each byte of `b` (16 bytes) that is a newline, the first byte's lowest.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
fn newline_mask16(b: &[u8]) -> u16 {
    use core::arch::wasm32::{u8x16_bitmask, u8x16_eq, u8x16_splat, v128};
    debug_assert!(b.len() == 16);
    // SAFETY: the caller passes 16 bytes; v128 loads need no alignment.
    let v = unsafe { (b.as_ptr() as *const v128).read_unaligned() };
    u8x16_bitmask(u8x16_eq(v, u8x16_splat(b'\n')))
}

/// A bit for each byte of `b` (16 bytes) that is a newline, the first byte's lowest.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn newline_mask16(b: &[u8]) -> u16 {
    use core::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8};
    debug_assert!(b.len() == 16);
    // SAFETY: the caller passes 16 readable bytes, loaded unaligned; SSE2 is
    // enabled (the function's cfg).
    unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(b.as_ptr().cast()), _mm_set1_epi8(b'\n' as i8))) as u16 }
}

/// How [`Snapshot::encode_split`] wrote a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// Everything after the records: the trailer, the head and the checksum.
    pub tail: String,
    /// Where `tail` starts in the whole text (the length of the ledger's prefix).
    pub split: usize,
    /// Leading bytes that are as they were in the text last decoded or encoded.
    pub shared: usize,
}

const V1_CHECK_PREFIX: &str = ",\"check\":\"";

/// Format 1 (out of line, as format 2's: `decode` is on every event's path, these are not).
#[inline(never)]
fn decode_v1(text: &str) -> Result<Snapshot> {
    // `...,"check":"0123456789abcdef"}`
    let tail_len = V1_CHECK_PREFIX.len() + 16 + 2;
    if text.len() < tail_len + 2 || !text.is_char_boundary(text.len() - tail_len) {
        return Err(corrupt("too short or missing its checksum"));
    }
    let (head, tail) = text.split_at(text.len() - tail_len);
    let digits = tail
        .strip_prefix(V1_CHECK_PREFIX)
        .and_then(|t| t.strip_suffix("\"}"))
        .ok_or_else(|| corrupt("missing its checksum"))?;
    let expected = u64::from_str_radix(digits, 16).map_err(|_| corrupt("checksum is not hex"))?;
    let mut body = String::with_capacity(head.len() + 1);
    body.push_str(head);
    body.push('}');
    if checksum(&body) != expected {
        return Err(corrupt("checksum mismatch"));
    }
    let value = json::parse(&body, Code::InvalidSnapshot, "snapshot")?;
    match value.get("format").and_then(Value::as_u64) {
        Some(1) => {}
        Some(f) if f > FORMAT as u64 => return Err(unreadable_format(f)),
        _ => return Err(fail(Code::InvalidSnapshot, "json snapshot is not format 1")),
    }
    let (head, entries) = v1_parts(value).map_err(|e| mismatch("snapshot", 1, e))?;
    let mut ledger = Ledger::default();
    for e in entries {
        let e = V1Entry::read(e);
        if e.fp.len() != 32 || !e.fp.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(corrupt("ledger fingerprint is not 32 hex digits"));
        }
        ledger.push(&e.id, &e.fp, e.at, e.exp, e.rev, e.status == "ignored", &e.response);
    }
    // Like format 2, format 1 kept no pruning schedule: look on the next append.
    ledger.prune_at = 0;
    Ok(head.into_snapshot(1, ledger))
}

/// JSON text with every non-ASCII character escaped as `\uXXXX`, so snapshots
/// are ASCII (cheap to move between JavaScript strings and wasm memory).
pub fn ascii_json(text: &str) -> String {
    if text.is_ascii() {
        return text.to_string();
    }
    let mut out = Vec::with_capacity(text.len() + 16);
    escape_non_ascii(text, &mut out);
    ascii_string(out)
}

fn escape_non_ascii(text: &str, out: &mut Vec<u8>) {
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c as u8);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.extend_from_slice(b"\\u");
                push_hex(out, *u as u64, 4);
            }
        }
    }
}

/// [`ascii_json`] of the JSON text `t` holds from `from` on, in place.
fn ascii_from(t: &mut Vec<u8>, from: usize) {
    if !t[from..].is_ascii() {
        let text = t.split_off(from);
        match std::str::from_utf8(&text) {
            Ok(text) => escape_non_ascii(text, t),
            // Never: the text was split off at the start of a piece of JSON text.
            Err(_) => unreachable!("JSON text is UTF-8"),
        }
    }
}

/// An id as its record holds it: a JSON string literal, made ASCII.
fn id_literal(id: &str) -> String {
    let mut t = Vec::with_capacity(id.len() + 2);
    json::write_str(id, &mut t);
    ascii_from(&mut t, 0);
    ascii_string(t)
}

/// Bytes made ASCII by the writers here, as a `String`.
fn ascii_string(bytes: Vec<u8>) -> String {
    json::utf8(bytes)
}

/// The low `dst.len()` hex digits of `v`, lowercase.
fn put_hex(dst: &mut [u8], v: u64) {
    let digits = json::hex_digits(v);
    let mut from = digits.iter().rev();
    for d in dst.iter_mut().rev() {
        *d = *from.next().unwrap_or(&b'0');
    }
}

/// Digits `{:0width$x}` writes for `v`.
fn hex_width(v: u64, width: usize) -> usize {
    (64 - v.leading_zeros() as usize).div_ceil(4).max(width)
}

/// `{:0width$x}`: lowercase hex, at least `width` digits.
fn push_hex(t: &mut Vec<u8>, v: u64, width: usize) {
    let n = hex_width(v, width);
    if n > 16 {
        t.resize(t.len() + n - 16, b'0');
    }
    t.extend_from_slice(&json::hex_digits(v)[16 - n.min(16)..]);
}

/// The capacity to give a ledger text of `len` bytes that records will be
/// appended to: an eighth more, at least 1 KiB. The wasm boundary's copy of a
/// snapshot, which becomes the ledger's text, is made so (a warm host appends
/// to it event after event). Natively a decoded text gets 1 KiB: glibc hands a
/// block an eighth larger back to the system on every free, and a round trip at
/// 100,000 entries took four times as long.
pub(crate) fn with_record_room(len: usize) -> usize {
    len + (len / 8).max(1024)
}

/// Room for a record at the end of a ledger's text: when less than 512 bytes
/// (a usual record's room) are left, an eighth of the text more, where a `Vec`
/// would double. A warm host appends to the same text event after event, and
/// wasm memory never shrinks: a 15 MB ledger kept decoded had doubled on its
/// fifth to eighth event, taking wasm memory from 22 MiB to 51; now its text
/// has room for thousands of records as the boundary copies it in, and grows by
/// an eighth after.
fn grow_records(t: &mut Vec<u8>) {
    if t.capacity() - t.len() < 512 {
        t.reserve_exact(with_record_room(t.len()) - t.len());
    }
}

/// JSON text written by `body`, made ASCII and preceded by its length in hex
/// (`{:0width$x}`).
fn sized(t: &mut Vec<u8>, width: usize, body: impl FnOnce(&mut Vec<u8>)) {
    let at = t.len();
    t.resize(at + width, b'0');
    body(t);
    ascii_from(t, at + width);
    let len = (t.len() - at - width) as u64;
    if hex_width(len, width) == width {
        put_hex(&mut t[at..at + width], len);
    } else {
        let text = t.split_off(at + width);
        t.truncate(at);
        push_hex(t, len, width);
        t.extend_from_slice(&text);
    }
}

/// Where one ledger record sits in [`Ledger::text`]: from its first byte to
/// just past its newline. A decode finds records by their newlines alone;
/// their lengths and fixed fields are read (and checked) when they are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rec {
    start: u32,
    end: u32,
}

// Record layout, one per line, all ASCII:
//   <id literal length: 4 hex><id as a JSON string literal>
//   <fingerprint: 32 hex><at: 16 hex><exp: 16 hex><rev: 12 hex><a|i>
//   <response length: 8 hex><response JSON>\n
// The id literal and the response are JSON written by this engine, with
// control characters escaped, so a record's newline is its only one: the
// newlines of a ledger are its record boundaries.
const FP_LEN: usize = 32;
const FIXED: usize = FP_LEN + 16 + 16 + 12 + 1 + 8;

/// The ledger of remembered event ids, kept as text records so that a reduce
/// copies it instead of parsing it: finding an id is a scan of fixed-width
/// fields, an event appends one record, and expired records are dropped in
/// batches (see [`Ledger::prune`]).
#[derive(Clone)]
pub struct Ledger {
    /// The header line of format 3, then the records, contiguous, oldest first:
    /// the text's own prefix, so encoding copies it (or not) as it is.
    text: String,
    recs: Vec<Rec>,
    /// Before this time no scan of the expiries is needed: fewer records than a
    /// batch (an eighth of them, at least one) can have expired. 0: look now.
    prune_at: u64,
    /// The checksum stream over the header line and `text[..len]`, where those
    /// bytes are still as they were in the text last decoded or encoded.
    synced: Option<Synced>,
    /// The records by their id, once the ledger is looked up a second time.
    index: IdIndex,
    /// How many of the newest records are remembered (the machine's
    /// `retention.maxEntries`, set when the ledger is loaded for it or pruned;
    /// all of them until then). The older ones wait in the text, never matched
    /// nor listed, until they are an eighth of the cap and dropped together
    /// (see [`Ledger::prune`]).
    cap: usize,
}

/// Where each record is by a hash of its id literal, so that a ledger kept
/// decoded between events (a Durable Object's, a warm isolate's: the resident
/// snapshot) finds an id in a few probes instead of a scan of every record.
/// Built on the second lookup of the same decoded ledger: one decoded for a
/// single event is looked up once, and a scan costs less than building this.
/// Appended records are added at the next lookup; pruning, which renumbers the
/// records, drops it and the count of lookups with it.
#[derive(Clone, Default)]
struct IdIndex {
    /// Lookups since the ledger was decoded or pruned (counted to 2).
    finds: u8,
    /// Open addressing with linear probing, at most half full: a record `r`
    /// is `(hash >> 32) << 32 | (r + 1)`, 0 is empty. Empty until built.
    slots: Vec<u64>,
    /// Records `0..indexed` are in `slots`.
    indexed: usize,
}

impl IdIndex {
    /// Ledgers with fewer records are always scanned.
    const FROM: usize = 64;

    fn hash(literal: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_128(literal) as u64
    }

    /// Records `r` whose id literal may be the one hashed to `h`, any order.
    fn candidates(&self, h: u64) -> impl Iterator<Item = usize> + '_ {
        let mask = self.slots.len().wrapping_sub(1);
        let tag = h >> 32;
        let start = h as usize & mask;
        (0..self.slots.len())
            .map(move |k| self.slots[(start + k) & mask])
            .take_while(|&slot| slot != 0)
            .filter(move |&slot| slot >> 32 == tag)
            .map(|slot| (slot as u32 as usize) - 1)
    }

    fn insert(&mut self, h: u64, r: usize) {
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = (h >> 32) << 32 | (r as u64 + 1);
    }
}

#[derive(Clone)]
struct Synced {
    len: usize,
    /// The stream's state after those bytes; `None` when they are at most
    /// [`Synced::KEEP_FROM`] bytes, hashed again rather than kept.
    state: Option<Box<Xxh3>>,
}

impl Synced {
    /// Records up to this length are hashed again at each encode rather than
    /// kept: a short text costs about as much to hash again as a kept state
    /// costs to box and clone.
    const KEEP_FROM: usize = 1024;

    /// The stream over `text`, boxed to be kept, when `text` is long enough
    /// for that to pay.
    fn keep(text: &[u8]) -> Option<Box<Xxh3>> {
        (text.len() > Synced::KEEP_FROM).then(|| {
            let mut h = Box::new(Xxh3::new());
            h.update(text);
            h
        })
    }
}

impl Default for Ledger {
    fn default() -> Ledger {
        Ledger { text: V3_MAGIC.to_string(), recs: Vec::new(), prune_at: 0, synced: None, index: IdIndex::default(), cap: usize::MAX }
    }
}

impl PartialEq for Ledger {
    /// Same records, same pruning schedule (what the text holds).
    fn eq(&self, other: &Ledger) -> bool {
        self.prune_at == other.prune_at
            && self.recs.len() == other.recs.len()
            && self.recs.iter().zip(&other.recs).all(|(a, b)| self.raw(a) == other.raw(b))
    }
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger").field("entries", &self.recs.len()).field("prune_at", &self.prune_at).finish()
    }
}

/// One record, read in place.
pub struct Entry<'a> {
    id_literal: &'a str,
    pub fp: &'a str,
    pub at: u64,
    pub exp: u64,
    pub rev: u64,
    ignored: bool,
    response_json: &'a str,
}

impl Entry<'_> {
    pub fn id(&self) -> String {
        match json::parse_value(self.id_literal) {
            Ok(Value::String(id)) => id,
            _ => String::new(),
        }
    }
    pub fn status(&self) -> &'static str {
        if self.ignored {
            "ignored"
        } else {
            "applied"
        }
    }
    /// The frozen response.
    pub fn response(&self) -> Result<Value> {
        json::parse_value(self.response_json).map_err(|_| corrupt("ledger response is not json"))
    }
}

/// Lowercase hex digit values; 0xff for every other byte.
static HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Lowercase hex, at most 16 digits (what `Ledger::push` writes). Branch-free:
/// it runs for every record of every ledger a reduce reads.
fn hex(s: &str) -> Option<u64> {
    let mut v = 0u64;
    let mut bad = 0u8;
    for &c in s.as_bytes() {
        let d = HEX[c as usize];
        bad |= d;
        v = (v << 4) | (d & 0x0f) as u64;
    }
    (bad & 0xf0 == 0).then_some(v)
}

/// Eight lowercase hex digits (most significant first) at once, as one u64
/// lane per byte. `None` unless every byte is `0-9` or `a-f`.
#[inline(always)]
fn hex8(b: &[u8]) -> Option<u64> {
    hex_lanes(u64::from_be_bytes(b.get(..8)?.try_into().ok()?))
}

/// Eight ASCII hex digits held one per byte of `x`, most significant first.
#[inline(always)]
fn hex_lanes(x: u64) -> Option<u64> {
    const L: u64 = 0x0101_0101_0101_0101;
    const H: u64 = 0x8080_8080_8080_8080;
    // For bytes below 0x80, `((x | H) - c * L) & H` has the high bit of each byte
    // set where that byte is >= c (the OR keeps borrows inside their byte).
    let ge = |c: u64| ((x | H) - c * L) & H;
    let digit = ge(0x30) & !ge(0x3a);
    let letter = ge(0x61) & !ge(0x67);
    if x & H != 0 || (digit | letter) != H {
        return None;
    }
    let mut v = (x & 0x0f0f_0f0f_0f0f_0f0f) + (letter >> 7) * 9;
    v = (v | (v >> 4)) & 0x00ff_00ff_00ff_00ff;
    v = (v | (v >> 8)) & 0x0000_ffff_0000_ffff;
    v = (v | (v >> 16)) & 0x0000_0000_ffff_ffff;
    Some(v)
}

/// Sixteen lowercase hex digits.
#[inline(always)]
fn hex16(b: &[u8]) -> Option<u64> {
    Some((hex8(b.get(..8)?)? << 32) | hex8(b.get(8..16)?)?)
}

/// Four lowercase hex digits.
#[inline(always)]
fn hex4(b: &[u8]) -> Option<u64> {
    let b = b.get(..4)?;
    let (d0, d1, d2, d3) = (HEX[b[0] as usize], HEX[b[1] as usize], HEX[b[2] as usize], HEX[b[3] as usize]);
    ((d0 | d1 | d2 | d3) & 0xf0 == 0).then_some(((d0 as u64) << 12) | ((d1 as u64) << 8) | ((d2 as u64) << 4) | d3 as u64)
}

impl Ledger {
    pub fn len(&self) -> usize {
        self.recs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    /// The first `len` bytes of the encoded text (see [`Snapshot::encode_split`]).
    pub fn prefix(&self, len: usize) -> &str {
        cut(&self.text, ..len.min(self.text.len()))
    }

    fn raw(&self, r: &Rec) -> &str {
        cut(&self.text, r.start as usize..r.end as usize)
    }

    /// Where the fixed fields of `r` begin (the end of its id literal), once
    /// its two lengths agree with where its newline is.
    fn id_end(&self, r: &Rec) -> Option<usize> {
        let (start, end) = (r.start as usize, r.end as usize);
        let rec = self.text.as_bytes().get(start..end)?;
        let id_len = hex4(rec)? as usize;
        let fixed_end = (4 + id_len).checked_add(FIXED)?;
        let resp_len = hex8(rec.get(fixed_end.checked_sub(8)?..)?)? as usize;
        let well_formed = id_len >= 2
            && rec[4] == b'"'
            && rec[3 + id_len] == b'"'
            && fixed_end.checked_add(resp_len)?.checked_add(1)? == rec.len()
            && rec[rec.len() - 1] == b'\n';
        well_formed.then_some(start + 4 + id_len)
    }

    fn entry(&self, r: &Rec) -> Result<Entry<'_>> {
        self.read_entry(r).ok_or_else(|| corrupt("malformed ledger record"))
    }

    fn read_entry(&self, r: &Rec) -> Option<Entry<'_>> {
        let f = self.id_end(r)?;
        // `id_end` checked every length against the record's bytes; `get` keeps
        // a forged, non-ASCII record from cutting a character.
        let t = &self.text;
        let fixed = t.get(f..f + FIXED)?;
        let fp = fixed.get(..FP_LEN)?;
        // One record is read per duplicate: the table's digits, not the wider ones of `hex16`.
        let fx = |range: std::ops::Range<usize>| fixed.get(range).and_then(hex);
        hex(fp.get(..16)?)?;
        hex(fp.get(16..)?)?;
        Some(Entry {
            id_literal: t.get(r.start as usize + 4..f)?,
            fp,
            at: fx(32..48)?,
            exp: fx(48..64)?,
            rev: fx(64..76)?,
            ignored: match fixed.as_bytes()[76] {
                b'a' => false,
                b'i' => true,
                _ => return None,
            },
            response_json: t.get(f + FIXED..r.end as usize - 1)?,
        })
    }

    /// Read every record once, remembered or not: an `invalid_snapshot` error
    /// for a malformed one.
    pub fn validate(&self) -> Result<()> {
        self.recs.iter().try_for_each(|r| self.entry(r).and_then(|e| e.response()).map(|_| ()))
    }

    fn exp_of(&self, r: &Rec) -> Result<u64> {
        let f = self.id_end(r).ok_or_else(|| corrupt("malformed ledger record"))?;
        let fixed = &self.text.as_bytes()[f..f + FIXED];
        match (hex16(&fixed[48..64]), fixed[76]) {
            (Some(exp), b'a' | b'i') => Ok(exp),
            _ => Err(corrupt("malformed ledger record")),
        }
    }

    /// Every remembered record, oldest first; a malformed one is an
    /// `invalid_snapshot` error. Expired records not yet dropped are included
    /// (their `exp` says so); those beyond the cap are not.
    pub fn iter(&self) -> impl Iterator<Item = Result<Entry<'_>>> {
        self.recs[self.forgotten()..].iter().map(|r| self.entry(r))
    }

    /// The live record for an event id, if any (newest first): its place, for
    /// [`Ledger::entry_at`]. A ledger looked up before (kept decoded between
    /// events) is looked up in its [`IdIndex`]; otherwise only records whose
    /// id matches are read beyond their id.
    pub fn find(&mut self, id: &str, now: u64) -> Result<Option<usize>> {
        if self.recs.is_empty() {
            return Ok(None);
        }
        let literal = id_literal(id);
        if self.recs.len() >= IdIndex::FROM && self.index.finds >= 1 {
            return self.find_indexed(literal.as_bytes(), now);
        }
        let forgotten = self.forgotten();
        self.index.finds = 1;
        let (t, want) = (self.text.as_bytes(), literal.as_bytes());
        // A record starts with its id literal's length in four hex digits, then
        // the literal. Ids that differ mostly differ at their end (a counter, the
        // random part of a ULID), so the length and the last eight bytes are
        // compared first, inline.
        let mut len_hex = [0u8; 4];
        put_hex(&mut len_hex, want.len() as u64);
        let want_len = u32::from_le_bytes(len_hex);
        let last8 = |b: &[u8]| b.len().checked_sub(8).map(|i| u64::from_le_bytes(b[i..].try_into().unwrap_or_default()));
        let want_last = last8(want);
        for (i, r) in self.recs.iter().enumerate().skip(forgotten).rev() {
            let (start, end) = (r.start as usize, r.end as usize);
            let Some(rec) = t.get(start..end) else { continue };
            let Some(got) = rec.get(4..4 + want.len()) else { continue };
            if u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]) == want_len
                && last8(got) == want_last
                && got == want
                && self.entry(r)?.exp > now
            {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// [`Ledger::find`] through the index, brought up to date first: the
    /// newest live record among those whose id literal is `want`.
    #[inline(never)]
    fn find_indexed(&mut self, want: &[u8], now: u64) -> Result<Option<usize>> {
        self.index_records();
        let h = IdIndex::hash(want);
        let forgotten = self.forgotten();
        let same = |i: usize| i >= forgotten && self.recs.get(i).and_then(|r| self.literal(r)) == Some(want);
        // Newest first, as the scan: the newest match below the last one tried.
        let mut below = usize::MAX;
        while let Some(i) = self.index.candidates(h).filter(|&i| i < below && same(i)).max() {
            if self.entry_at(i)?.exp > now {
                return Ok(Some(i));
            }
            below = i;
        }
        Ok(None)
    }

    /// Add the records appended since the index was last brought up to date,
    /// building it (or building it larger) when it has no room for them.
    fn index_records(&mut self) {
        let n = self.recs.len();
        if self.index.slots.len() < 2 * n {
            // Room for the ledger to double before it is built again.
            self.index.slots = vec![0; (4 * n).next_power_of_two()];
            self.index.indexed = 0;
        }
        for i in self.index.indexed..n {
            // A record whose id cannot be read is matched by no lookup.
            if let Some(literal) = self.literal(&self.recs[i]) {
                let h = IdIndex::hash(literal);
                self.index.insert(h, i);
            }
        }
        self.index.indexed = n;
        self.index.finds = 2;
    }

    /// How many of the oldest records are beyond the cap: no longer remembered.
    fn forgotten(&self) -> usize {
        self.recs.len().saturating_sub(self.cap)
    }

    /// Remember the newest `cap` records (a machine's `retention.maxEntries`).
    pub fn set_cap(&mut self, cap: usize) {
        self.cap = cap;
    }

    /// The id literal of `r`, as its length says.
    fn literal(&self, r: &Rec) -> Option<&[u8]> {
        let rec = self.text.as_bytes().get(r.start as usize..r.end as usize)?;
        rec.get(4..4 + hex4(rec)? as usize)
    }

    /// Whether the last lookup went through the [`IdIndex`] (tests check
    /// that the index, not only the scan, answered).
    #[doc(hidden)]
    pub fn is_indexed(&self) -> bool {
        self.index.finds == 2
    }

    /// The record at `i`, a place [`Ledger::find`] gave.
    pub fn entry_at(&self, i: usize) -> Result<Entry<'_>> {
        self.recs.get(i).ok_or_else(|| corrupt("malformed ledger record")).and_then(|r| self.entry(r))
    }

    /// Append a record.
    #[allow(clippy::too_many_arguments)]
    pub fn push(&mut self, id: &str, fp: &str, at: u64, exp: u64, rev: u64, ignored: bool, response: &Value) {
        if self.recs.is_empty() && self.prune_at == 0 {
            self.prune_at = u64::MAX;
        }
        // A record that expires early can make a batch due earlier.
        self.prune_at = self.prune_at.min(exp);
        let start = self.text.len();
        // SAFETY: only UTF-8 is appended (JSON text, `fp`, ASCII digits), and
        // the text is cut only where such a piece starts.
        let t = unsafe { self.text.as_mut_vec() };
        grow_records(t);
        sized(t, 4, |t| json::write_str(id, t));
        t.extend_from_slice(fp.as_bytes());
        // `at` and `exp` in 16 digits, the revision's low 48 bits in 12, the
        // status: put together here and appended at once.
        let mut fixed = [0u8; 16 + 16 + 12 + 1];
        fixed[..16].copy_from_slice(&json::hex_digits(at));
        fixed[16..32].copy_from_slice(&json::hex_digits(exp));
        fixed[32..44].copy_from_slice(&json::hex_digits(rev)[4..]);
        fixed[44] = if ignored { b'i' } else { b'a' };
        t.extend_from_slice(&fixed);
        sized(t, 8, |t| json::write_json(response, t));
        t.push(b'\n');
        let end = t.len();
        self.recs.push(Rec { start: start as u32, end: end as u32 });
    }

    /// Forget the oldest records beyond `cap`, and the expired ones, once
    /// either is a batch: an eighth of the cap or of the ledger, at least one.
    /// Until then such a record stays in the text but is never matched (`find`
    /// reads only the newest `cap` records and checks expiry) nor listed
    /// (`iter`), so what is remembered is exactly the live records within the
    /// cap either way; batching keeps most events append-only, which is what
    /// makes them cheap to encode, also for a ledger that is full.
    pub fn prune(&mut self, now: u64, cap: usize) -> Result<()> {
        self.cap = cap;
        let over = self.recs.len().saturating_sub(cap);
        if over < (cap / 8).max(1) && now < self.prune_at {
            return Ok(());
        }
        self.prune_now(now, over)
    }

    /// [`Ledger::prune`] once the ledger is over its cap by a batch or the
    /// earliest expiry has passed: out of line, since most events append
    /// without it (and V8 compiles a function whole when first called).
    #[inline(never)]
    fn prune_now(&mut self, now: u64, over: usize) -> Result<()> {
        let mut exps = Vec::with_capacity(self.recs.len());
        for r in &self.recs {
            exps.push(self.exp_of(r)?);
        }
        let dead = exps.iter().filter(|&&e| e <= now).count();
        let drop_dead = dead > 0 && dead * 8 >= exps.len();
        if over > 0 || drop_dead {
            let keep = |i: usize| !drop_dead || exps[i] > now;
            let (mut count, mut size) = (0, 0);
            for i in (over..self.recs.len()).filter(|&i| keep(i)) {
                count += 1;
                size += self.raw(&self.recs[i]).len();
            }
            let mut text = String::with_capacity(size + 1024);
            text.push_str(V3_MAGIC);
            let mut recs = Vec::with_capacity(count + 1);
            let mut kept = Vec::with_capacity(count);
            for i in (over..self.recs.len()).filter(|&i| keep(i)) {
                let r = self.recs[i];
                let base = text.len() as u32;
                text.push_str(self.raw(&r));
                recs.push(Rec { start: base, end: base + (r.end - r.start) });
                kept.push(exps[i]);
            }
            self.text = text;
            self.recs = recs;
            self.synced = None;
            // Renumbered: looked up as a ledger decoded afresh.
            self.index = IdIndex::default();
            self.prune_at = next_batch(kept);
        } else {
            self.prune_at = next_batch(exps);
        }
        Ok(())
    }

    /// Index `count` records in `text`, the header line of format 3 followed by
    /// the records.
    fn index(text: String, count: usize, prune_at: u64) -> Result<Ledger> {
        let mut walk = Walk::new(text.len());
        walk.advance(text.as_bytes(), text.len());
        let recs = walk.finish(text.len(), count)?;
        Ok(Ledger::indexed(text, recs, prune_at))
    }

    /// A ledger of `text` whose records `recs` were found while it was hashed.
    fn indexed(text: String, recs: Vec<Rec>, prune_at: u64) -> Ledger {
        Ledger { text, recs, prune_at, synced: None, index: IdIndex::default(), cap: usize::MAX }
    }
}

/// Finds the records of a ledger section by their newlines, the only ones in
/// it (see the record layout). Nothing else of a record is read here: its
/// lengths and fields are checked when it is used. Finding newlines needs no
/// record to be read before the next one's start is known, so it runs at the
/// speed of a scan, sixteen bytes at a time; it can run while the text is being
/// hashed, block by block, so the bytes are still in the processor's cache.
struct Walk {
    /// Where the next record starts.
    at: usize,
    /// How far the text has been scanned.
    scanned: usize,
    recs: Vec<Rec>,
}

impl Walk {
    fn new(len: usize) -> Walk {
        Walk { at: V3_MAGIC.len(), scanned: V3_MAGIC.len(), recs: Vec::with_capacity(len / 64 + 64) }
    }

    /// Index every record that ends by `limit`.
    fn advance(&mut self, b: &[u8], limit: usize) {
        let from = self.scanned;
        let Some(part) = b.get(from..limit) else { return };
        let (recs, at) = (&mut self.recs, &mut self.at);
        newlines(part, |i| {
            let end = from + i + 1;
            recs.push(Rec { start: *at as u32, end: end as u32 });
            *at = end;
        });
        self.scanned = limit;
    }

    /// The records, when they end exactly at `end` and are `count`.
    fn finish(self, end: usize, count: usize) -> Result<Vec<Rec>> {
        if self.recs.len() != count {
            return Err(corrupt("malformed ledger record"));
        }
        if self.at != end {
            return Err(corrupt("ledger has trailing bytes"));
        }
        Ok(self.recs)
    }
}

/// Call `f` with the index of every `\n` in `b`, in order.
#[inline(always)]
fn newlines(b: &[u8], mut f: impl FnMut(usize)) {
    #[cfg(target_feature = "simd128")]
    {
        use core::arch::wasm32::{u8x16_bitmask, u8x16_eq, u8x16_splat, v128, v128_any_true, v128_or};
        let nl = u8x16_splat(b'\n');
        let whole = b.len() - b.len() % 64;
        let mut base = 0;
        while base < whole {
            // SAFETY: the four 16-byte loads are inside `b[base..base + 64]`;
            // v128 loads need no alignment.
            let [e0, e1, e2, e3] = unsafe {
                let p = b.as_ptr().add(base) as *const v128;
                [0, 1, 2, 3].map(|k| u8x16_eq(p.add(k).read_unaligned(), nl))
            };
            // Records are about a hundred bytes: most 64-byte pieces have no newline.
            if v128_any_true(v128_or(v128_or(e0, e1), v128_or(e2, e3))) {
                let mut m = (u8x16_bitmask(e0) as u64)
                    | (u8x16_bitmask(e1) as u64) << 16
                    | (u8x16_bitmask(e2) as u64) << 32
                    | (u8x16_bitmask(e3) as u64) << 48;
                while m != 0 {
                    f(base + m.trailing_zeros() as usize);
                    m &= m - 1;
                }
            }
            base += 64;
        }
        for (i, &c) in b[whole..].iter().enumerate() {
            if c == b'\n' {
                f(whole + i);
            }
        }
    }
    #[cfg(not(target_feature = "simd128"))]
    {
        // Eight bytes at a time: the high bit of each byte of `z` is set exactly
        // where that byte of `x` is zero, i.e. where `b` has a newline.
        const L: u64 = 0x0101_0101_0101_0101;
        const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
        let mut chunks = b.chunks_exact(8);
        let mut base = 0;
        for c in &mut chunks {
            let x = u64::from_le_bytes(c.try_into().unwrap_or_default()) ^ (L * b'\n' as u64);
            let mut z = !(((x & LOW7) + LOW7) | x | LOW7);
            while z != 0 {
                f(base + (z.trailing_zeros() / 8) as usize);
                z &= z - 1;
            }
            base += 8;
        }
        for (i, &c) in chunks.remainder().iter().enumerate() {
            if c == b'\n' {
                f(base + i);
            }
        }
    }
}

/// When the next batch of expired records can be due: the expiry of the
/// record that makes expired ones an eighth of `exps` (at least one), found by
/// bisecting the time range (no sort: this runs once per batch, and a sort
/// would add its own code to the module).
fn next_batch(exps: Vec<u64>) -> u64 {
    let k = exps.len().div_ceil(8);
    let (Some(&min), Some(&max)) = (exps.iter().min(), exps.iter().max()) else { return u64::MAX };
    // The earliest t with at least k expiries at or before it.
    let (mut lo, mut hi) = (min, max);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if exps.iter().filter(|&&e| e <= mid).count() >= k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Decode a snapshot and check it belongs to `machine`.
pub fn load(machine: &Machine, text: &str) -> Result<Loaded> {
    check(machine, Snapshot::decode(text, machine.limits.max_snapshot_bytes)?)
}

/// As [`load`], taking the text's buffer for the ledger (no copy of the records).
pub fn load_owned(machine: &Machine, text: String) -> Result<Loaded> {
    check(machine, Snapshot::decode_owned(text, machine.limits.max_snapshot_bytes)?)
}

fn check(machine: &Machine, mut snap: Snapshot) -> Result<Loaded> {
    // A snapshot that names this machine by its own reference (the one shared
    // through `KNOWN` once written) needs no comparison; one that names it by
    // equal strings takes that reference, for the next time.
    let same = Arc::ptr_eq(&snap.machine, &machine.reference) || {
        if snap.machine.id != machine.id {
            return Err(wrong_machine(&snap.machine.id, &machine.id));
        }
        let same = snap.machine.hash == machine.hash;
        if same && snap.machine.version == machine.version {
            snap.machine = machine.reference.clone();
        }
        same
    };
    let config = match machine.config_of_value(&snap.value) {
        Some(c) => c,
        None if same => return Err(fail(Code::InvalidSnapshot, "snapshot state value does not name a state of its machine")),
        None => return Err(missing_state(&snap, machine)),
    };
    if machine.has_parallel() {
        // Stored with its members sorted; the value a process reports has its regions in document order.
        snap.value = machine.value_of_config(&config);
    }
    for (h, recorded) in &snap.history {
        let is_history = machine.state_by_path(h).is_some_and(|i| machine.states[i].kind == crate::machine::Kind::History);
        let names_states = recorded.as_array().is_some_and(|a| a.iter().all(|p| p.as_str().and_then(|p| machine.state_by_path(p)).is_some()));
        if !is_history || !names_states {
            return Err(fail(Code::InvalidSnapshot, "snapshot history does not name history states of its machine"));
        }
    }
    if !snap.context.is_object() {
        return Err(fail(Code::InvalidSnapshot, "snapshot context is not an object"));
    }
    if let Some(e) = snap.outbox.iter().find(|e| e.retry.max_attempts > crate::machine::MAX_ATTEMPTS || e.attempts > e.retry.max_attempts) {
        return Err(too_many_attempts(e));
    }
    let upgraded_from = (!same).then(|| snap.machine.version.clone());
    snap.ledger.set_cap(machine.retention.max_entries);
    Ok(Loaded { snap, config, upgraded_from })
}

#[cfg(test)]
mod newline_tests {
    use super::{last_newline, newlines};
    // Run in wasm too (`cargo test --target wasm32-unknown-unknown --lib`), where
    // the scan takes sixteen bytes at a time with SIMD128.
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// The scan finds exactly the newlines a byte-by-byte loop finds, at every
    /// length and alignment, next to bytes one bit away from `\n` and above 0x7f.
    #[test]
    fn the_scan_finds_every_newline_and_nothing_else() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let alphabet = [b'\n', b'\n' ^ 0x80, b'\n' ^ 1, b'\n' ^ 0x10, 0, 0xff, b'a', b'"'];
        for len in 0..300 {
            let b: Vec<u8> = (0..len).map(|_| alphabet[(next() % 8) as usize]).collect();
            let mut got = Vec::new();
            newlines(&b, |i| got.push(i));
            let want: Vec<usize> = (0..len).filter(|&i| b[i] == b'\n').collect();
            assert_eq!(got, want, "{b:?}");
            assert_eq!(last_newline(&b), want.last().copied(), "{b:?}");
            // And with newlines rarer than in a word, as in a head.
            let sparse: Vec<u8> = b.iter().map(|&c| if c == b'\n' && next() % 16 != 0 { b'a' } else { c }).collect();
            assert_eq!(last_newline(&sparse), sparse.iter().rposition(|&c| c == b'\n'), "{sparse:?}");
        }
    }
}

#[cfg(test)]
mod hex_tests {
    use super::{hex, hex16, hex4, hex8};

    #[test]
    fn swar_hex_agrees_with_the_table_for_every_byte_in_every_position() {
        let base = *b"0123abcd";
        for pos in 0..8 {
            for byte in 0..=255u8 {
                let mut b = base;
                b[pos] = byte;
                let text = String::from_utf8_lossy(&b).into_owned();
                let expected = if text.len() == 8 { hex(&text) } else { None };
                assert_eq!(hex8(&b), expected, "byte {byte:#04x} at {pos}");
            }
        }
        assert_eq!(hex8(b"ffffffff"), Some(0xffff_ffff));
        assert_eq!(hex8(b"00000000"), Some(0));
        assert_eq!(hex16(b"0123456789abcdef"), Some(0x0123_4567_89ab_cdef));
        assert_eq!(hex16(b"0123456789abcdeF"), None);
        assert_eq!(hex4(b"00ff"), Some(255));
        assert_eq!(hex4(b"0 ff"), None);
        assert_eq!(hex8(b"0123"), None, "too short");
    }
}

#[cfg(test)]
mod writer_tests {
    use super::*;
    use serde_json::json;

    #[allow(clippy::too_many_arguments)]
    fn old_push(l: &mut Ledger, id: &str, fp: &str, at: u64, exp: u64, rev: u64, ignored: bool, response: &Value) {
        let id_literal = ascii_json(&Value::String(id.to_string()).to_string());
        let response = ascii_json(&crate::json::tests::sorted(response).to_string());
        l.text.push_str(&format!("{:04x}{}", id_literal.len(), id_literal));
        l.text.push_str(&format!(
            "{fp}{at:016x}{exp:016x}{:012x}{}{:08x}{response}\n",
            rev & 0xffff_ffff_ffff,
            if ignored { 'i' } else { 'a' },
            response.len()
        ));
    }

    #[test]
    fn records_and_head_are_written_as_serde_json_and_format_wrote_them() {
        let long = "\u{e9}x".repeat(40_000);
        let ids = ["e1", "", "\u{e9}\"\\\n\u{1}\u{7f}\u{1F600}", long.as_str()];
        let responses = [
            Value::Null,
            json!({"state": "paid", "revision": 3}),
            json!({"z": [1, 2.5, -0.0, 1e300, -7, 18446744073709551615u64], "a": {"\u{e9}": "\u{1F600}", "": null}}),
            json!(long.clone()),
        ];
        let fp = "0123456789abcdef0123456789abcdef";
        for id in ids {
            for r in &responses {
                for (at, exp, rev, ignored) in [(0, 0, 0, false), (u64::MAX, 1, u64::MAX, true), (1_700_000_000_000, 1_700_086_400_000, 7, false)] {
                    let mut got = Ledger::default();
                    got.push(id, fp, at, exp, rev, ignored, r);
                    let mut want = Ledger::default();
                    old_push(&mut want, id, fp, at, exp, rev, ignored, r);
                    assert_eq!(got.text, want.text);
                }
            }
        }

        let machine = MachineRef { id: "order\u{e9}".into(), version: "1\"".into(), hash: "cd9d".into() };
        let retry = RetryPolicy::default();
        let entry = OutboxEntry {
            key: "k\u{1F600}".into(),
            effect_type: "ship".into(),
            payload: json!({"b": [1, 0.1], "a": "\u{2028}"}),
            idempotent: true,
            state: EffectState::InFlight,
            attempts: 2,
            attempt_id: Some("k#2".into()),
            due_at: Some(5),
            retry,
            event_id: "e".into(),
            created_at: 1,
            done_at: None,
            result: Some(json!({"ok": [1]})),
            error: None,
        };
        let timer = Timer { id: "after:a:1:2".into(), state: "a".into(), delay: 1, due_at: 2 };
        for (value, context, outbox, timers, done) in [
            (json!("pending"), json!({}), vec![], vec![], false),
            (json!({"a": {"b": "c"}}), json!({"x": [1, {"y": -2.5e-7}], "\u{e9}": "\u{10FFFF}"}), vec![entry.clone()], vec![timer.clone()], true),
            (json!("p"), json!({"n": 18446744073709551615u64, "m": -9223372036854775808i64}), vec![entry.clone(), entry], vec![timer.clone(), timer], false),
        ] {
            let sorted = crate::json::tests::sorted;
            let (value, context) = (sorted(&value), sorted(&context));
            let outbox: Vec<OutboxEntry> = outbox.into_iter().map(|e: OutboxEntry| OutboxEntry { payload: sorted(&e.payload), result: e.result.as_ref().map(sorted), ..e }).collect();
            let snap = Snapshot {
                format: FORMAT,
                machine: Arc::new(machine.clone()),
                value,
                context,
                revision: 12345,
                done,
                ledger: Ledger::default(),
                outbox,
                timers,
                history: Map::new(),
            };
            let head = HeadRef {
                machine: &snap.machine,
                value: &snap.value,
                context: &snap.context,
                revision: snap.revision,
                done: snap.done,
                outbox: &snap.outbox,
                timers: &snap.timers,
                history: &snap.history,
            };
            let mut got = Vec::new();
            snap.write_head(&mut got);
            assert_eq!(String::from_utf8(got).unwrap(), serde_json::to_string(&head).unwrap());
            let mut snap = snap;
            let text = snap.encode();
            assert!(text.is_ascii());
            let mut back = Snapshot::decode(&text, usize::MAX).unwrap();
            assert_eq!(back.encode(), text);
        }
    }
}

/// The outbox and timer writers, and the `Value`s built for the snapshot's
/// structs, against the serde derives they replace: generated entries in every
/// state, each optional member present, absent or null, strings with control
/// characters and non-ASCII, any float. Snapshots holding them re-encode byte
/// for byte.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod outbox_writer_tests {
    use super::*;
    use proptest::arbitrary::any;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngSeed};

    fn text() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z0-9#:./-]{0,12}", "[a-z\u{0}-\u{1f}\"\\\\\u{7f}\u{e9}\u{2028}\u{1F600}]{0,12}", any::<String>()]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_filter_map("finite", |b| serde_json::Number::from_f64(f64::from_bits(b)).map(Value::Number)),
            text().prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                // In key order, as idem writes every object (see `json::write_json`).
                prop::collection::vec((text(), inner), 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect::<std::collections::BTreeMap<_, _>>().into_iter().collect())),
            ]
        })
    }

    fn entry() -> impl Strategy<Value = OutboxEntry> {
        use EffectState::*;
        let state = prop::sample::select(vec![Pending, InFlight, Unknown, Verifying, Succeeded, Failed]);
        let retry = (any::<u32>(), any::<u64>(), any::<u32>(), any::<u64>(), any::<u32>()).prop_map(|(a, b, c, d, e)| RetryPolicy {
            max_attempts: a,
            base_ms: b,
            factor: c,
            max_delay_ms: d,
            jitter_pct: e,
        });
        let first = (text(), text(), value(), any::<bool>(), state, any::<u32>(), prop::option::of(text()));
        let second =
            (prop::option::of(any::<u64>()), retry, text(), any::<u64>(), prop::option::of(any::<u64>()), prop::option::of(value()), prop::option::of(value()));
        (first, second).prop_map(|((key, effect_type, payload, idempotent, state, attempts, attempt_id), (due_at, retry, event_id, created_at, done_at, result, error))| {
            OutboxEntry { key, effect_type, payload, idempotent, state, attempts, attempt_id, due_at, retry, event_id, created_at, done_at, result, error }
        })
    }

    fn timer() -> impl Strategy<Value = Timer> {
        (text(), text(), any::<u64>(), any::<u64>()).prop_map(|(id, state, delay, due_at)| Timer { id, state, delay, due_at })
    }

    fn config() -> Config {
        Config { cases: 500, rng_seed: RngSeed::Fixed(0x0B07), failure_persistence: None, ..Config::default() }
    }

    fn written<T>(item: &T, write: fn(&T, &mut Vec<u8>)) -> String {
        let mut t = Vec::new();
        write(item, &mut t);
        String::from_utf8(t).unwrap()
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn entries_and_timers_are_written_as_the_derives_write_them(e in entry(), t in timer(), m in (text(), text(), text())) {
            prop_assert_eq!(written(&e, write_outbox_entry), serde_json::to_string(&e).unwrap());
            prop_assert_eq!(written(&t, write_timer), serde_json::to_string(&t).unwrap());
            prop_assert_eq!(json::to_value(&e), serde_json::to_value(&e).unwrap());
            prop_assert_eq!(json::to_value(&t), serde_json::to_value(&t).unwrap());
            prop_assert_eq!(json::to_value(&e.retry), serde_json::to_value(e.retry).unwrap());
            prop_assert_eq!(json::to_value(&e.state), serde_json::to_value(e.state).unwrap());
            let m = MachineRef { id: m.0, version: m.1, hash: m.2 };
            prop_assert_eq!(json::to_value(&m), serde_json::to_value(&m).unwrap());
        }

        #[test]
        fn snapshots_with_them_are_written_as_the_derives_write_them_and_reencode_byte_for_byte(
            outbox in prop::collection::vec(entry(), 0..4), timers in prop::collection::vec(timer(), 0..4),
            value in value(), context in value(), revision in any::<u64>(), done in any::<bool>(),
            records in prop::collection::vec((text(), text(), any::<u64>(), any::<u64>(), any::<u64>(), any::<bool>(), value()), 0..3),
            now in any::<u64>(),
        ) {
            let mut snap = Snapshot {
                format: FORMAT,
                machine: Arc::new(MachineRef { id: "order\u{e9}".into(), version: "1\"".into(), hash: "cd9d".into() }),
                value,
                context,
                revision,
                done,
                ledger: Ledger::default(),
                outbox,
                timers,
                history: Map::new(),
            };
            let head = HeadRef {
                machine: &snap.machine,
                value: &snap.value,
                context: &snap.context,
                revision: snap.revision,
                done: snap.done,
                outbox: &snap.outbox,
                timers: &snap.timers,
                history: &snap.history,
            };
            prop_assert_eq!(written(&snap, Snapshot::write_head), serde_json::to_string(&head).unwrap());
            let v = snap.to_value();
            prop_assert_eq!(&v["machine"], &serde_json::to_value(&*snap.machine).unwrap());
            prop_assert_eq!(&v["outbox"], &serde_json::to_value(&snap.outbox).unwrap());
            prop_assert_eq!(&v["timers"], &serde_json::to_value(&snap.timers).unwrap());
            // `inspect` and `due` as text, as `json::to_text` writes their values.
            let mut with_ledger = snap.clone();
            for (id, fp, at, exp, rev, ignored, response) in &records {
                with_ledger.ledger.push(id, fp, *at, *exp, *rev, *ignored, response);
            }
            prop_assert_eq!(written(&with_ledger, Snapshot::write_readable), json::to_text(&with_ledger.to_value()));
            for now in [now, 0, u64::MAX] {
                let mut due = Vec::new();
                crate::outbox::write_due(&with_ledger, now, &mut due);
                let due = String::from_utf8(due).unwrap();
                prop_assert_eq!(due, json::to_text(&Value::Array(crate::outbox::due_items(&with_ledger, now))));
            }
            // A result or error of null reads back as none (the derives read it so too).
            for e in &mut snap.outbox {
                e.result = e.result.take().filter(|v| !v.is_null());
                e.error = e.error.take().filter(|v| !v.is_null());
            }
            let text = snap.encode();
            let mut back = Snapshot::decode(&text, usize::MAX).unwrap();
            prop_assert_eq!(&back.outbox, &snap.outbox);
            prop_assert_eq!(&back.timers, &snap.timers);
            prop_assert_eq!(back.encode(), text);
        }
    }
}

#[cfg(test)]
mod read_head_tests {
    use super::*;
    use serde_json::json;

    /// What `parse_head` reads without `read_head`.
    fn general(text: &str) -> Option<Snapshot> {
        let v = json::parse(text, Code::InvalidSnapshot, "head").ok()?;
        let head = Head::from_value(v).ok()?;
        Some(head.into_snapshot(3, Ledger::default()))
    }

    fn agrees(text: &str) -> bool {
        let fast = read_head(text).map(|h| h.into_snapshot(3, Ledger::default()));
        if let Some(f) = &fast {
            assert_eq!(Some(f), general(text).as_ref(), "{text}");
        }
        fast.is_some()
    }

    fn head_of(value: Value, context: Value, outbox: Vec<OutboxEntry>, timers: Vec<Timer>, done: bool, revision: u64) -> String {
        let snap = Snapshot {
            format: FORMAT,
            machine: Arc::new(MachineRef { id: "order".into(), version: "1.\u{e9}".into(), hash: "cd9da19fa2174cabd96029ed88a5439f".into() }),
            value,
            context,
            revision,
            done,
            ledger: Ledger::default(),
            outbox,
            timers,
            history: Map::new(),
        };
        let mut t = Vec::new();
        snap.write_head(&mut t);
        String::from_utf8(t).unwrap()
    }

    #[test]
    fn read_head_reads_what_the_general_path_reads() {
        let entry = OutboxEntry {
            key: "k".into(),
            effect_type: "ship".into(),
            payload: json!({"b": [1, 0.1]}),
            idempotent: false,
            state: EffectState::Pending,
            attempts: 0,
            attempt_id: None,
            due_at: Some(5),
            retry: RetryPolicy::default(),
            event_id: "e".into(),
            created_at: 1,
            done_at: None,
            result: None,
            error: Some(json!({"code": "x"})),
        };
        let timer = Timer { id: "after:a:1:2".into(), state: "a".into(), delay: 1, due_at: 2 };
        let deep = |n: usize| (0..n).fold(json!(1), |v, _| json!([v]));
        let heads = [
            head_of(json!("pending"), json!({"lastNote": null, "paid": 0, "payments": [], "total": 100}), vec![], vec![], false, 0),
            head_of(json!({"a": {"b": "c"}}), json!({"s": "\u{1F600}\"\\", "f": -2.5e-7}), vec![entry], vec![timer], true, u64::MAX),
            head_of(json!("p"), json!({"d": deep(61)}), vec![], vec![], false, 10),
            head_of(json!("p"), json!({"d": deep(62)}), vec![], vec![], false, 10),
        ];
        for (i, h) in heads.iter().enumerate() {
            assert_eq!(agrees(h), i != 3, "{h}");
        }
        assert!(general(&heads[3]).is_none(), "too deep for either");
        let variants = [
            heads[0].replace("\"revision\":0", "\"revision\":00"),
            heads[0].replace("\"revision\":0", "\"revision\":-0"),
            heads[0].replace("\"revision\":0", "\"revision\":0.0"),
            heads[0].replace("\"revision\":0", "\"revision\":18446744073709551615"),
            heads[0].replace("\"revision\":0", "\"revision\":18446744073709551616"),
            heads[0].replace("\"id\":\"order\"", "\"id\":\"or\\u0064er\""),
            heads[0].replace("\"id\":\"order\"", "\"id\":\"or\\\"der\""),
            heads[0].replace("\"id\":\"order\"", "\"id\":7"),
            heads[0].replace("\"value\":\"pending\"", "\"value\": \"pending\" "),
            heads[0].replace("\"value\":\"pending\"", "\"value\":7"),
            heads[0].replace("\"outbox\":[]", "\"outbox\":[{}]"),
            heads[0].replace("\"outbox\":[]", "\"outbox\":{}"),
            heads[0].replace("\"timers\":[]", "\"timers\":[{\"id\":\"a\",\"state\":\"b\",\"delay\":1,\"dueAt\":2,\"x\":1}]"),
            heads[0].replace("\"timers\":[]", "\"timers\":null"),
            heads[0].replace(",\"done\":false", ""),
            heads[0].replace(",\"done\":false", ",\"done\":0"),
            heads[0].replace("\"hash\":", "\"extra\":1,\"hash\":"),
            heads[0].clone() + " ",
            heads[0].clone() + "x",
            heads[1].replace("\"dueAt\":5", "\"dueAt\":-5"),
            // The forms `scalar` reads without a parser, and their neighbours.
            heads[0].replace("\"revision\":0", "\"revision\":1234567890123456789"),
            heads[0].replace("\"revision\":0", "\"revision\":9999999999999999999"),
            heads[0].replace("\"revision\":0", "\"revision\":12345678901234567890"),
            heads[0].replace("\"revision\":0", "\"revision\":99999999999999999999"),
            heads[0].replace("\"revision\":0", "\"revision\":7"),
            heads[0].replace("\"revision\":0", "\"revision\":1e3"),
            heads[0].replace("\"id\":\"order\"", "\"id\":\"or\u{7f}d\u{e9}r\""),
            heads[0].replace("\"id\":\"order\"", "\"id\":\"or\tder\""),
            heads[0].replace("\"id\":\"order\"", "\"id\":\"\""),
            heads[0].replace("\"id\":\"order\"", "\"id\":\""),
            heads[0].replace("\"value\":\"pending\"", "\"value\":[]"),
            heads[0].replace("\"value\":\"pending\"", "\"value\":null"),
            heads[0].replace("\"value\":\"pending\"", "\"value\":true"),
            heads[0].replace("\"value\":\"pending\"", "\"value\":nul"),
            heads[0].replace("\"context\":{", "\"context\":{}"),
            heads[0].replace("\"done\":false", "\"done\":true"),
            heads[0].replace("\"done\":false", "\"done\":False"),
        ];
        assert!(agrees(&variants[variants.len() - 17]) && agrees(&variants[variants.len() - 15]), "19 and 20 digit revisions are read");
        assert!(agrees(&variants[variants.len() - 11]), "a string with DEL and raw non-ASCII is read");
        for v in &variants {
            agrees(v);
        }
        // Every byte of a head changed, dropped or doubled.
        for h in &heads[..2] {
            for i in 0..h.len() {
                if !h.is_char_boundary(i) || !h.is_char_boundary(i + 1) {
                    continue;
                }
                for c in ["", " ", "0", "9", "\"", "\\", "}", "]", ",", "{", "[", "\u{e9}", &h[i..i + 1], &h[i..i + 1].repeat(2)] {
                    agrees(&format!("{}{}{}", &h[..i], c, &h[i + 1..]));
                }
            }
        }
    }
}

/// The readers of the wire format against the serde derives they replace: on
/// a representative head and format 1 body, and on every variant of them with
/// one member removed, made null, given another type or an out-of-range
/// number, or joined by an unknown member, both accept it with the same
/// result or both refuse it.
#[cfg(test)]
mod wire_tests {
    use super::*;
    use serde::de::DeserializeOwned;
    use serde_json::json;

    fn entry() -> Value {
        json!({
            "key": "k", "type": "ship", "payload": {"b": [1, 0.5]}, "idempotent": false, "state": "in_flight", "attempts": 2,
            "attemptId": "k#2", "dueAt": 5, "retry": {"maxAttempts": 5, "baseMs": 1000, "factor": 2, "maxDelayMs": 60000, "jitterPct": 20},
            "eventId": "e", "createdAt": 1, "doneAt": 9, "result": {"ok": true}, "error": null,
        })
    }

    fn head() -> Value {
        json!({
            "machine": {"id": "order", "version": "1", "hash": "cd9d"}, "value": {"a": "b"}, "context": {"n": 1},
            "revision": 7, "done": false, "outbox": [entry()], "timers": [{"id": "after:a:1:2", "state": "a", "delay": 1, "dueAt": 2}],
        })
    }

    fn v1() -> Value {
        let mut v = head();
        v["format"] = json!(1);
        v["ledger"] = json!([{"id": "e1", "fp": "0123456789abcdef0123456789abcdef", "at": 1, "exp": 2, "rev": 3, "status": "applied", "response": null}]);
        v
    }

    fn entry_of(v: Value) -> Wire<OutboxEntry> {
        wire(v, Kind::Struct(OUTBOX_ENTRY), OutboxEntry::read)
    }

    fn retry_of(v: Value) -> Wire<RetryPolicy> {
        wire(v, Kind::Struct(RETRY), retry_policy)
    }

    fn state_of(v: Value) -> Wire<EffectState> {
        wire(v, Kind::State, |v| v.as_str().and_then(EffectState::named).unwrap_or(EffectState::Pending))
    }

    fn timer_of(v: Value) -> Wire<Timer> {
        wire(v, Kind::Struct(TIMER), Timer::read)
    }

    fn machine_of(v: Value) -> Wire<MachineRef> {
        wire(v, Kind::Struct(MACHINE_REF), MachineRef::read)
    }

    fn v1_entry_of(v: Value) -> Wire<V1Entry> {
        wire(v, Kind::Struct(V1_ENTRY), V1Entry::read)
    }

    /// Both readers agree on `v`; true when they accept it.
    fn agree<T: DeserializeOwned + PartialEq + std::fmt::Debug>(v: &Value, ours: fn(Value) -> Wire<T>) -> bool {
        match (ours(v.clone()), serde_json::from_value::<T>(v.clone())) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{v}");
                true
            }
            (Err(_), Err(_)) => false,
            (a, b) => panic!("{v}: ours {a:?}, serde {:?}", b.map_err(|e| e.to_string())),
        }
    }

    /// JSON pointers to every value inside `v` (not `v` itself).
    fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
        let children: Vec<(String, &Value)> = match v {
            Value::Object(m) => m.iter().map(|(k, c)| (format!("{at}/{k}"), c)).collect(),
            Value::Array(a) => a.iter().enumerate().map(|(i, c)| (format!("{at}/{i}"), c)).collect(),
            _ => Vec::new(),
        };
        for (p, c) in children {
            out.push(p.clone());
            pointers(c, p, out);
        }
    }

    /// `v` and its variants, each differing from it in one place.
    fn variants(v: &Value) -> Vec<Value> {
        let others = [
            json!(null), json!(-1), json!(0), json!(1.5), json!(2.0), json!(4294967295u64), json!(4294967296u64), json!(u64::MAX),
            json!(-9223372036854775808i64), json!(""), json!("pending"), json!("x"), json!(true), json!([]), json!({}), json!({"x": 1}),
        ];
        let mut paths = Vec::new();
        pointers(v, String::new(), &mut paths);
        let mut out = vec![v.clone()];
        for p in &paths {
            for o in &others {
                let mut w = v.clone();
                *w.pointer_mut(p).unwrap() = o.clone();
                out.push(w);
            }
            let (parent, last) = p.rsplit_once('/').unwrap();
            let mut w = v.clone();
            match w.pointer_mut(parent).unwrap() {
                Value::Object(m) => drop(m.remove(last)),
                Value::Array(a) => drop(a.remove(last.parse::<usize>().unwrap())),
                _ => unreachable!(),
            }
            out.push(w);
        }
        for p in std::iter::once(String::new()).chain(paths) {
            let mut w = v.clone();
            if let Some(Value::Object(m)) = w.pointer_mut(&p) {
                m.insert("extra".into(), json!(1));
                out.push(w);
            }
        }
        out
    }

    #[test]
    fn readers_agree_with_the_derives() {
        let (mut accepted, mut refused) = (0, 0);
        let mut count = |ok: bool| if ok { accepted += 1 } else { refused += 1 };
        for v in variants(&head()) {
            count(agree(&v, Head::from_value));
        }
        for v in variants(&v1()) {
            count(agree(&v, V1::from_value));
        }
        for v in variants(&entry()) {
            count(agree(&v, entry_of));
            count(agree(&v["retry"], retry_of));
            count(agree(&v["state"], state_of));
        }
        for v in variants(&head()["timers"][0]) {
            count(agree(&v, timer_of));
        }
        for v in variants(&head()["machine"]) {
            count(agree(&v, machine_of));
        }
        for v in variants(&v1()["ledger"][0]) {
            count(agree(&v, v1_entry_of));
        }
        assert!(accepted > 100 && refused > 1000, "{accepted} accepted, {refused} refused");
    }

    #[test]
    fn defaults_and_optional_fields_read_as_the_derives_read_them() {
        let mut h = head();
        for k in ["done", "outbox", "timers"] {
            h.as_object_mut().unwrap().remove(k);
        }
        assert!(agree(&h, Head::from_value));
        let mut e = entry();
        for k in ["attemptId", "dueAt", "doneAt", "result", "error"] {
            let mut n = e.clone();
            n[k] = Value::Null;
            assert!(agree(&n, entry_of), "{k}: null");
            e.as_object_mut().unwrap().remove(k);
            assert!(agree(&e, entry_of), "{k}: absent");
        }
    }

    #[test]
    fn every_effect_state_is_read_by_its_wire_name() {
        use EffectState::*;
        for s in [Pending, InFlight, Unknown, Verifying, Succeeded, Failed] {
            assert!(agree(&json!(s.as_str()), state_of));
            assert_eq!(EffectState::named(s.as_str()), Some(s));
        }
    }

    /// Two forms the derives read that this engine never wrote are refused.
    #[test]
    fn forms_never_written_are_refused() {
        let timer = json!(["after:a:1:2", "a", 1, 2]);
        assert!(serde_json::from_value::<Timer>(timer.clone()).is_ok());
        assert!(timer_of(timer).is_err());
        let state = json!({"pending": null});
        assert!(serde_json::from_value::<EffectState>(state.clone()).is_ok());
        assert!(state_of(state).is_err());
    }

    #[test]
    fn mismatches_name_the_member() {
        let mut h = head();
        h["outbox"][0]["retry"]["factor"] = json!(-1);
        assert_eq!(Head::from_value(h).unwrap_err().to_string(), "expected an integer from 0 to 4294967295 at outbox[0].retry.factor");
        let mut h = head();
        h["timers"][0]["extra"] = json!(1);
        assert_eq!(Head::from_value(h).unwrap_err().to_string(), "unknown field at timers[0].extra");
        let mut h = head();
        h["machine"].as_object_mut().unwrap().remove("hash");
        assert_eq!(Head::from_value(h).unwrap_err().to_string(), "missing field at machine.hash");
        assert_eq!(Head::from_value(json!([])).unwrap_err().to_string(), "expected an object");
        let mut v = v1();
        v["ledger"][0]["at"] = json!(1.5);
        assert_eq!(V1::from_value(v).unwrap_err().to_string(), "expected a non-negative integer at ledger[0].at");
    }
}

#[cfg(test)]
mod growth_tests {
    use super::*;

    /// A ledger's text grows by an eighth when a record finds less than a
    /// usual record's room, never by doubling (wasm memory never shrinks), and
    /// not at all while the room lasts.
    #[test]
    fn a_ledger_text_grows_by_an_eighth() {
        for len in [0usize, 10_000, 1_000_000] {
            let mut t = Vec::with_capacity(with_record_room(len));
            t.resize(len, b'x');
            assert!(t.capacity() - len >= (len / 8).max(1024), "decoded with room: {len}");
            let cap = t.capacity();
            grow_records(&mut t);
            assert_eq!(t.capacity(), cap, "room left, nothing reserved: {len}");
            // Use the room up to less than 512 bytes, then grow once.
            t.resize(cap - 100, b'x');
            grow_records(&mut t);
            let used = t.len();
            assert!(t.capacity() >= used + (used / 8).max(1024), "an eighth more: {used} -> {}", t.capacity());
            assert!(t.capacity() < used + used / 4 + 4096, "not doubled: {used} -> {}", t.capacity());
        }
    }
}
