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
//!
//! Here are the in-memory types (`Snapshot`, its outbox entries and timers)
//! and the errors every part shares; the wire format is in the files:
//!
//! - `format`: format 3 encoded and decoded, the checksum;
//! - `ledger`: the applied event ids, where a repeated event is recognised;
//! - `newlines`: finding the ledger's records in its text;
//! - `head`: the head's JSON, read and written;
//! - `fields`: the head's structs as tables of fields, and their one checker;
//! - `legacy`: formats 1 and 2;
//! - `load`: a snapshot checked against its machine;
//! - `readable`: the `Value`s of its records, for the readable form `inspect` gives.

use crate::error::{Code, Error, Result};
use crate::json::{self, object};
use crate::machine::{Machine, RetryPolicy, StateIdx};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;
use xxhash_rust::xxh3::Xxh3Default as Xxh3;

mod fields;
mod format;
mod head;
mod ledger;
mod legacy;
mod load;
mod newlines;
mod readable;

use fields::*;
use format::*;
use head::*;
use ledger::*;
use legacy::*;
use newlines::*;

pub use format::{ascii_json, Encoded};
#[cfg(target_arch = "wasm32")]
pub(crate) use format::with_record_room;
pub use ledger::{Entry, Ledger};
pub use load::{load, load_owned};

/// The newest format this engine writes. Every older format stays readable.
pub const FORMAT: u32 = 3;

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

/// What a process is at one moment, apart from its ledger and its machine:
/// the one place a field of a process is declared. The snapshot and the head
/// hold it whole, and a reduce hands it to the interpreter and takes it back
/// whole (`interpreter::Start`, `Run::state`).
///
/// The fields are in the order the head writes them. A new field goes here,
/// then into the head's reader (`fields::HEAD` and `Head::read`; a member
/// written after the timers leaves `read_head` to that general path), its
/// writer (`Snapshot::write_head`), the readable form (`Snapshot::to_value`)
/// and the serde oracle `head::FlatHead`. `head::outbox_writer_tests` then
/// checks that the writer writes what the `Serialize` derive here writes and
/// that every field of a generated state reads back as it was.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(test, derive(Serialize))]
pub struct ProcessState {
    /// XState-style state value.
    pub value: Value,
    pub context: Value,
    /// Count of committed changes (applied events, and recorded ignored ones).
    pub revision: u64,
    /// A final state of the machine was reached: the process is finished.
    pub done: bool,
    pub outbox: Vec<OutboxEntry>,
    pub timers: Vec<Timer>,
    /// What each history state recorded when its parent was last exited: its
    /// path, and the paths of the states it restores (written only when some
    /// history state has recorded something).
    #[cfg_attr(test, serde(skip_serializing_if = "Map::is_empty"))]
    pub history: Map<String, Value>,
}

/// The snapshot, decoded. The ledger stays as text records (see [`Ledger`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The format it was read from (new snapshots: [`FORMAT`]).
    pub format: u32,
    /// Shared: the snapshots of a process all name the same machine (see `KNOWN`).
    pub machine: Arc<MachineRef>,
    pub state: ProcessState,
    pub ledger: Ledger,
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
/// a trap if that were ever wrong, as the panic of `&s[range]` is, but with no
/// message to format (ARCHITECTURE.md, the invariant on `str` slices).
fn cut<R: std::slice::SliceIndex<str, Output = str>>(s: &str, range: R) -> &str {
    s.get(range).unwrap_or_else(|| std::process::abort())
}

// The errors of decoding, each built in one place; the paths that find them
// are rare (cold).

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
    let (old, path, new) = (snap.machine.version.as_str(), Machine::value_path(&snap.state.value), machine.version.as_str());
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
