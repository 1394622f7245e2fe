//! The snapshot: one self-contained, versioned value holding the state, the
//! context, the ledger of applied event ids, the outbox and the due timers.
//!
//! A host stores the snapshot as one opaque ASCII string; any change to it
//! (truncation, a flipped bit, a hand edit) is caught by its checksum on load
//! and the snapshot is rejected rather than reinterpreted.
//!
//! Format 2 keeps the ledger out of JSON so that its cost per event is a copy,
//! not a parse:
//!
//! ```text
//! idem2 <head bytes> <ledger entries>\n
//! <head: JSON of machine, value, context, revision, done, outbox, timers>\n
//! <one ledger record per line, fixed-width fields, see `Ledger`>
//! <16 hex digits: xxh3-64 of everything before them>
//! ```
//!
//! Format 1 (one JSON object ending in a `"check"` member) is still read.

use crate::error::{Code, Error, Result};
use crate::json;
use crate::machine::{Machine, RetryPolicy, StateIdx};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The newest format this engine writes. Every older format stays readable.
pub const FORMAT: u32 = 2;

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
    pub machine: MachineRef,
    /// XState-style state value.
    pub value: Value,
    pub context: Value,
    /// Count of committed changes (applied events, and recorded ignored ones).
    pub revision: u64,
    pub done: bool,
    pub ledger: Ledger,
    pub outbox: Vec<OutboxEntry>,
    pub timers: Vec<Timer>,
}

/// Everything but the ledger, as it is written in format 2's JSON head.
#[derive(Serialize)]
struct HeadRef<'a> {
    machine: &'a MachineRef,
    value: &'a Value,
    context: &'a Value,
    revision: u64,
    done: bool,
    outbox: &'a [OutboxEntry],
    timers: &'a [Timer],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Head {
    machine: MachineRef,
    value: Value,
    context: Value,
    revision: u64,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    outbox: Vec<OutboxEntry>,
    #[serde(default)]
    timers: Vec<Timer>,
}

/// Format 1: the whole snapshot as JSON, ledger entries as objects.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1 {
    #[allow(dead_code)]
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1Entry {
    id: String,
    fp: String,
    at: u64,
    exp: u64,
    rev: u64,
    status: String,
    response: Value,
}

/// A snapshot checked against a machine, with its active leaf resolved.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub snap: Snapshot,
    pub leaf: StateIdx,
    /// `Some(old version)` when written by another version of the same machine.
    pub upgraded_from: Option<String>,
}

fn corrupt(why: &str) -> Error {
    Error::new(Code::InvalidSnapshot, format!("snapshot is corrupted: {why}"))
}

impl Snapshot {
    /// Encode as format 2 text (ASCII), checksum last.
    pub fn encode(&self) -> String {
        let head = HeadRef {
            machine: &self.machine,
            value: &self.value,
            context: &self.context,
            revision: self.revision,
            done: self.done,
            outbox: &self.outbox,
            timers: &self.timers,
        };
        let head = ascii_json(&serde_json::to_string(&head).expect("snapshot head serializes"));
        let mut out = String::with_capacity(head.len() + self.ledger.text_len() + 48);
        out.push_str(&format!("idem{} {} {}\n", FORMAT, head.len(), self.ledger.len()));
        out.push_str(&head);
        out.push('\n');
        self.ledger.write_to(&mut out);
        let h = json::hash64(out.as_bytes());
        out.push_str(&format!("{h:016x}"));
        out
    }

    /// Decode any format this engine has written, verifying its checksum.
    pub fn decode(text: &str, max_bytes: usize) -> Result<Snapshot> {
        if text.len() > max_bytes {
            return Err(Error::new(
                Code::SnapshotTooLarge,
                format!("snapshot is {} bytes, more than the {} allowed", text.len(), max_bytes),
            ));
        }
        if text.starts_with('{') {
            return decode_v1(text);
        }
        if !text.starts_with("idem") {
            return Err(Error::new(Code::InvalidSnapshot, "not an idem snapshot"));
        }
        // Every text format from 2 on ends with the checksum of all that precedes it,
        // so integrity is checked before anything else is believed, even the format.
        if text.len() < 24 || !text.is_char_boundary(text.len() - 16) {
            return Err(corrupt("too short"));
        }
        let (body, check) = text.split_at(text.len() - 16);
        if !check.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(corrupt("checksum is not lowercase hex"));
        }
        let expected = u64::from_str_radix(check, 16).map_err(|_| corrupt("checksum is not hex"))?;
        if json::hash64(body.as_bytes()) != expected {
            return Err(corrupt("checksum mismatch"));
        }
        let rest = &body["idem".len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let format: u32 = rest[..digits].parse().map_err(|_| corrupt("no format number"))?;
        if format > FORMAT {
            return Err(Error::new(
                Code::UnsupportedSnapshotFormat,
                format!("snapshot format {format} is newer than this engine (it reads 1 to {FORMAT})"),
            ));
        }
        if format != 2 {
            return Err(corrupt(&format!("unknown format {format}")));
        }
        let (header, after) = body.split_once('\n').ok_or_else(|| corrupt("no header line"))?;
        let mut fields = header["idem2".len()..].split(' ').skip(1);
        let head_len: usize = fields.next().and_then(|f| f.parse().ok()).ok_or_else(|| corrupt("bad header"))?;
        let count: usize = fields.next().and_then(|f| f.parse().ok()).ok_or_else(|| corrupt("bad header"))?;
        if after.len() < head_len + 1 || !after.is_char_boundary(head_len) || &after[head_len..head_len + 1] != "\n" {
            return Err(corrupt("head length does not match"));
        }
        let head_value = json::parse(&after[..head_len], Code::InvalidSnapshot, "snapshot head")?;
        let head: Head = serde_json::from_value(head_value)
            .map_err(|e| Error::new(Code::InvalidSnapshot, format!("snapshot head does not match format 2: {e}")))?;
        let ledger = Ledger::parse(&after[head_len + 1..], count)?;
        Ok(Snapshot {
            format,
            machine: head.machine,
            value: head.value,
            context: head.context,
            revision: head.revision,
            done: head.done,
            ledger,
            outbox: head.outbox,
            timers: head.timers,
        })
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
            ledger: Ledger::default(),
            outbox: Vec::new(),
            timers: Vec::new(),
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
                serde_json::json!({
                    "id": e.id(),
                    "fp": e.fp,
                    "at": e.at,
                    "exp": e.exp,
                    "rev": e.rev,
                    "status": e.status(),
                    "response": e.response().unwrap_or(Value::Null),
                })
            })
            .collect();
        serde_json::json!({
            "format": self.format,
            "machine": self.machine,
            "value": self.value,
            "context": self.context,
            "revision": self.revision,
            "done": self.done,
            "ledger": ledger,
            "outbox": self.outbox,
            "timers": self.timers,
        })
    }
}

const V1_CHECK_PREFIX: &str = ",\"check\":\"";

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
    if json::hash64(body.as_bytes()) != expected {
        return Err(corrupt("checksum mismatch"));
    }
    let value = json::parse(&body, Code::InvalidSnapshot, "snapshot")?;
    match value.get("format").and_then(Value::as_u64) {
        Some(1) => {}
        Some(f) if f > FORMAT as u64 => {
            return Err(Error::new(
                Code::UnsupportedSnapshotFormat,
                format!("snapshot format {f} is newer than this engine (it reads 1 to {FORMAT})"),
            ))
        }
        _ => return Err(Error::new(Code::InvalidSnapshot, "json snapshot is not format 1")),
    }
    let v1: V1 = serde_json::from_value(value)
        .map_err(|e| Error::new(Code::InvalidSnapshot, format!("snapshot does not match format 1: {e}")))?;
    let mut ledger = Ledger::default();
    for e in v1.ledger {
        if e.fp.len() != 32 || !e.fp.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(corrupt("ledger fingerprint is not 32 hex digits"));
        }
        ledger.push(&e.id, &e.fp, e.at, e.exp, e.rev, e.status == "ignored", &e.response);
    }
    Ok(Snapshot {
        format: 1,
        machine: v1.machine,
        value: v1.value,
        context: v1.context,
        revision: v1.revision,
        done: v1.done,
        ledger,
        outbox: v1.outbox,
        timers: v1.timers,
    })
}

/// JSON text with every non-ASCII character escaped as `\uXXXX`, so snapshots
/// are ASCII (cheap to move between JavaScript strings and wasm memory).
pub fn ascii_json(text: &str) -> String {
    if text.is_ascii() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

/// Where one ledger record sits in [`Ledger::text`]. Only the two lengths are
/// read when a ledger is decoded; the fixed fields are read when they are needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rec {
    start: u32,
    /// End of the id literal (quotes included), where the fixed fields begin.
    id_end: u32,
    end: u32,
}

// Record layout, one per line, all ASCII:
//   <id literal length: 4 hex><id as a JSON string literal>
//   <fingerprint: 32 hex><at: 16 hex><exp: 16 hex><rev: 12 hex><a|i>
//   <response length: 8 hex><response JSON>\n
const FP_LEN: usize = 32;
const FIXED: usize = FP_LEN + 16 + 16 + 12 + 1 + 8;

/// The ledger of remembered event ids, kept as text records so that a reduce
/// copies it instead of parsing it: finding an id is a scan of fixed-width
/// fields, pruning drops records, encoding copies the kept ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ledger {
    text: String,
    recs: Vec<Rec>,
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
        serde_json::from_str(self.id_literal).unwrap_or_default()
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
        serde_json::from_str(self.response_json).map_err(|_| corrupt("ledger response is not json"))
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

impl Ledger {
    pub fn len(&self) -> usize {
        self.recs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    fn text_len(&self) -> usize {
        self.recs.iter().map(|r| (r.end - r.start) as usize).sum()
    }

    fn entry(&self, r: &Rec) -> Result<Entry<'_>> {
        let bad = || corrupt("malformed ledger record");
        let t = &self.text;
        let f = r.id_end as usize;
        let fixed = &t[f..f + FIXED];
        let fp = &fixed[..FP_LEN];
        if !fp.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(bad());
        }
        Ok(Entry {
            id_literal: &t[r.start as usize + 4..f],
            fp,
            at: hex(&fixed[32..48]).ok_or_else(bad)?,
            exp: hex(&fixed[48..64]).ok_or_else(bad)?,
            rev: hex(&fixed[64..76]).ok_or_else(bad)?,
            ignored: match &fixed[76..77] {
                "a" => false,
                "i" => true,
                _ => return Err(bad()),
            },
            response_json: &t[f + FIXED..r.end as usize - 1],
        })
    }

    /// Read every record once: an `invalid_snapshot` error for a malformed one.
    pub fn validate(&self) -> Result<()> {
        self.iter().try_for_each(|e| e.and_then(|e| e.response()).map(|_| ()))
    }

    fn exp_of(&self, r: &Rec) -> Result<u64> {
        let f = r.id_end as usize;
        let fixed = &self.text.as_bytes()[f..f + FIXED];
        match (hex(&self.text[f + 48..f + 64]), fixed[76]) {
            (Some(exp), b'a' | b'i') => Ok(exp),
            _ => Err(corrupt("malformed ledger record")),
        }
    }

    /// Every record, oldest first; a malformed one is an `invalid_snapshot` error.
    pub fn iter(&self) -> impl Iterator<Item = Result<Entry<'_>>> {
        self.recs.iter().map(|r| self.entry(r))
    }

    /// The live record for an event id, if any (newest first). Only records whose
    /// id matches are read beyond their id.
    pub fn find(&self, id: &str, now: u64) -> Result<Option<Entry<'_>>> {
        let literal = ascii_json(&Value::String(id.to_string()).to_string());
        for r in self.recs.iter().rev() {
            if self.text[r.start as usize + 4..r.id_end as usize] == literal {
                let e = self.entry(r)?;
                if e.exp > now {
                    return Ok(Some(e));
                }
            }
        }
        Ok(None)
    }

    /// Append a record.
    #[allow(clippy::too_many_arguments)]
    pub fn push(&mut self, id: &str, fp: &str, at: u64, exp: u64, rev: u64, ignored: bool, response: &Value) {
        let id_literal = ascii_json(&Value::String(id.to_string()).to_string());
        let response = ascii_json(&response.to_string());
        let start = self.text.len();
        self.text.push_str(&format!("{:04x}{}", id_literal.len(), id_literal));
        let id_end = self.text.len();
        self.text.push_str(&format!(
            "{fp}{at:016x}{exp:016x}{:012x}{}{:08x}{response}\n",
            rev & 0xffff_ffff_ffff,
            if ignored { 'i' } else { 'a' },
            response.len()
        ));
        self.recs.push(Rec { start: start as u32, id_end: id_end as u32, end: self.text.len() as u32 });
    }

    /// Forget records that expired by `now`, then the oldest beyond `cap`.
    pub fn prune(&mut self, now: u64, cap: usize) -> Result<()> {
        // Only the expiry (and the status byte) of each record is read here; the
        // fingerprint and the response are checked when their id comes again.
        let mut keep = Vec::with_capacity(self.recs.len());
        for r in &self.recs {
            if self.exp_of(r)? > now {
                keep.push(*r);
            }
        }
        self.recs = keep;
        if self.recs.len() > cap {
            let drop = self.recs.len() - cap;
            self.recs.drain(..drop);
        }
        Ok(())
    }

    /// Drop the text of forgotten records once it outweighs the live ones, so a
    /// ledger kept in memory across many events does not grow without bound.
    pub fn compact_if_sparse(&mut self) {
        let live = self.text_len();
        if self.text.len() <= 2 * live + 64 * 1024 {
            return;
        }
        let mut text = String::with_capacity(live + 1024);
        for r in &mut self.recs {
            let base = text.len() as u32;
            text.push_str(&self.text[r.start as usize..r.end as usize]);
            *r = Rec { start: base, id_end: base + (r.id_end - r.start), end: base + (r.end - r.start) };
        }
        self.text = text;
    }

    fn write_to(&self, out: &mut String) {
        // Records that sit next to each other in `text` (all of them, unless some
        // were pruned) are copied in one run.
        let mut run: Option<(u32, u32)> = None;
        for r in &self.recs {
            run = match run {
                Some((start, end)) if end == r.start => Some((start, r.end)),
                Some((start, end)) => {
                    out.push_str(&self.text[start as usize..end as usize]);
                    Some((r.start, r.end))
                }
                None => Some((r.start, r.end)),
            };
        }
        if let Some((start, end)) = run {
            out.push_str(&self.text[start as usize..end as usize]);
        }
    }

    /// Read `count` records from a format 2 ledger section.
    fn parse(section: &str, count: usize) -> Result<Ledger> {
        let bad = || corrupt("malformed ledger record");
        let b = section.as_bytes();
        let mut recs = Vec::with_capacity(count.min(section.len() / (FIXED + 8) + 1));
        let mut i = 0usize;
        for _ in 0..count {
            let id_len = hex(section.get(i..i + 4).ok_or_else(bad)?).ok_or_else(bad)? as usize;
            let id_end = i + 4 + id_len;
            if section.len() < id_end + FIXED || b.get(i + 4) != Some(&b'"') || b.get(id_end - 1) != Some(&b'"') {
                return Err(bad());
            }
            let resp_len = hex(section.get(id_end + FIXED - 8..id_end + FIXED).ok_or_else(bad)?).ok_or_else(bad)? as usize;
            let end = id_end + FIXED + resp_len + 1;
            if b.get(end - 1) != Some(&b'\n') || !section.is_char_boundary(end) {
                return Err(bad());
            }
            recs.push(Rec { start: i as u32, id_end: id_end as u32, end: end as u32 });
            i = end;
        }
        if i != section.len() {
            return Err(corrupt("ledger has trailing bytes"));
        }
        // Room for the record this reduce will add, so appending never copies the ledger again.
        let mut text = String::with_capacity(section.len() + 1024);
        text.push_str(section);
        Ok(Ledger { text, recs })
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
    for e in &snap.outbox {
        if e.retry.max_attempts > crate::machine::MAX_ATTEMPTS || e.attempts > e.retry.max_attempts {
            return Err(corrupt(&format!("effect \"{}\" has {} attempts, beyond its retry policy", e.key, e.attempts)));
        }
    }
    let upgraded_from = (!same).then(|| snap.machine.version.clone());
    Ok(Loaded { snap, leaf, upgraded_from })
}
