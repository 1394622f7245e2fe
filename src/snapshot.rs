//! The snapshot: one self-contained, versioned value holding the state, the
//! context, the ledger of applied event ids, the outbox and the due timers.
//!
//! Wire format 1 is JSON text whose last member is a checksum of everything
//! before it: `{"format":1,...,"check":"<16 hex>"}`. A host stores the text as
//! it is; any change to it (truncation, a flipped bit, a hand edit) is detected
//! on load and the snapshot is rejected rather than reinterpreted.

use crate::error::{Code, Error, Result};
use crate::json;
use crate::machine::{Machine, StateIdx};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The newest format this engine writes. Every older format stays readable.
pub const FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineRef {
    pub id: String,
    pub version: String,
    pub hash: String,
}

/// One remembered event id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerEntry {
    pub id: String,
    /// Fingerprint of the event's canonical `type` + `payload`.
    pub fp: String,
    /// When it was applied (host time, ms).
    pub at: u64,
    /// When the entry is forgotten (ms): `at` + the retention window of its type.
    pub exp: u64,
    /// The revision it produced.
    pub rev: u64,
    /// `applied` or `ignored` (the latter only when the machine records ignored events).
    pub status: String,
    /// The frozen response, replayed to duplicates.
    pub response: Value,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RetryWire {
    pub max_attempts: u32,
    pub base_ms: u64,
    pub factor: u32,
    pub max_delay_ms: u64,
    pub jitter_pct: u32,
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
    pub retry: RetryWire,
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

/// The decoded snapshot (format 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    pub format: u32,
    pub machine: MachineRef,
    /// XState-style state value.
    pub value: Value,
    pub context: Value,
    /// Count of committed changes (applied events, and recorded ignored ones).
    pub revision: u64,
    #[serde(default)]
    pub done: bool,
    pub ledger: Vec<LedgerEntry>,
    #[serde(default)]
    pub outbox: Vec<OutboxEntry>,
    #[serde(default)]
    pub timers: Vec<Timer>,
}

/// A snapshot checked against a machine, with its active leaf resolved.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub snap: Snapshot,
    pub leaf: StateIdx,
    /// `Some(old version)` when written by another version of the same machine.
    pub upgraded_from: Option<String>,
}

const CHECK_PREFIX: &str = ",\"check\":\"";

impl Snapshot {
    /// Encode as wire text with its checksum.
    pub fn encode(&self) -> String {
        let mut body = serde_json::to_string(self).expect("snapshot serializes");
        debug_assert!(body.ends_with('}'));
        let h = json::hash64(body.as_bytes());
        body.pop();
        body.push_str(CHECK_PREFIX);
        body.push_str(&format!("{h:016x}\"}}"));
        body
    }

    /// Decode wire text, verifying its checksum and format (no machine checks).
    pub fn decode(text: &str, max_bytes: usize) -> Result<Snapshot> {
        if text.len() > max_bytes {
            return Err(Error::new(
                Code::SnapshotTooLarge,
                format!("snapshot is {} bytes, more than the {} allowed", text.len(), max_bytes),
            ));
        }
        let corrupt = |why: &str| Error::new(Code::InvalidSnapshot, format!("snapshot is corrupted: {why}"));
        // `..."check":"0123456789abcdef"}`
        let tail_len = CHECK_PREFIX.len() + 16 + 2;
        if text.len() < tail_len + 2 || !text.is_char_boundary(text.len() - tail_len) {
            return Err(corrupt("too short or missing its checksum"));
        }
        let (head, tail) = text.split_at(text.len() - tail_len);
        let digits = tail
            .strip_prefix(CHECK_PREFIX)
            .and_then(|t| t.strip_suffix("\"}"))
            .ok_or_else(|| corrupt("missing its checksum"))?;
        let expected = u64::from_str_radix(digits, 16).map_err(|_| corrupt("checksum is not hex"))?;
        let mut body = String::with_capacity(head.len() + 1);
        body.push_str(head);
        body.push('}');
        if json::hash64(body.as_bytes()) != expected {
            return Err(corrupt("checksum mismatch"));
        }
        let value = json::parse(&body, Code::InvalidSnapshot, "snapshot")?;
        let format = value.get("format").and_then(Value::as_u64);
        match format {
            Some(1) => serde_json::from_value(value)
                .map_err(|e| Error::new(Code::InvalidSnapshot, format!("snapshot does not match format 1: {e}"))),
            Some(f) => Err(Error::new(
                Code::UnsupportedSnapshotFormat,
                format!("snapshot format {f} is newer than this engine (it reads 1 to {FORMAT})"),
            )),
            None => Err(Error::new(Code::InvalidSnapshot, "snapshot has no format number")),
        }
    }

    /// A fresh snapshot in `leaf` with the machine's initial context.
    pub fn initial(machine: &Machine, leaf: StateIdx) -> Snapshot {
        Snapshot {
            format: FORMAT,
            machine: MachineRef { id: machine.id.clone(), version: machine.version.clone(), hash: machine.hash.clone() },
            value: machine.state_value(leaf),
            context: machine.initial_context.clone(),
            revision: 0,
            done: false,
            ledger: Vec::new(),
            outbox: Vec::new(),
            timers: Vec::new(),
        }
    }

    /// The readable form for people and tools (the decoded value, without checksum).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("snapshot serializes")
    }
}

/// Decode a snapshot and check it belongs to `machine`.
pub fn load(machine: &Machine, text: &str) -> Result<Loaded> {
    let snap = Snapshot::decode(text, machine.limits.max_snapshot_bytes)?;
    if snap.machine.id != machine.id {
        return Err(Error::new(
            Code::WrongMachine,
            format!("snapshot belongs to machine \"{}\", not \"{}\"", snap.machine.id, machine.id),
        ));
    }
    let same = snap.machine.hash == machine.hash;
    let leaf = match machine.leaf_of_value(&snap.value) {
        Some(l) => l,
        None if same => return Err(Error::new(Code::InvalidSnapshot, "snapshot state value does not name a state of its machine")),
        None => {
            return Err(Error::new(
                Code::MissingState,
                format!(
                    "snapshot written by version {} is in state \"{}\", which version {} no longer has",
                    snap.machine.version,
                    Machine::value_path(&snap.value),
                    machine.version
                ),
            ))
        }
    };
    if !snap.context.is_object() {
        return Err(Error::new(Code::InvalidSnapshot, "snapshot context is not an object"));
    }
    let upgraded_from = (!same).then(|| snap.machine.version.clone());
    Ok(Loaded { snap, leaf, upgraded_from })
}
