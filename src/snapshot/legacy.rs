//! Formats 1 and 2, which earlier versions wrote: still read, and rewritten as
//! format 3 by the next encode. Format 1 is one JSON object ending in a
//! `"check"` member; format 2 puts the head first
//! (`idem2 <head bytes> <ledger entries>\n<head>\n<records><checksum>`).
//! `tests/fixtures/` holds snapshots of each that must load forever.

use super::*;

/// Format 1: the whole snapshot as JSON, ledger entries as objects (read by
/// [`v1_parts`]; the struct and its serde derive are what tests check that against).
#[cfg(test)]
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct V1 {
    pub(super) format: u32,
    pub(super) machine: MachineRef,
    pub(super) value: Value,
    pub(super) context: Value,
    pub(super) revision: u64,
    #[serde(default)]
    pub(super) done: bool,
    pub(super) ledger: Vec<V1Entry>,
    #[serde(default)]
    pub(super) outbox: Vec<OutboxEntry>,
    #[serde(default)]
    pub(super) timers: Vec<Timer>,
}

#[cfg_attr(test, derive(Debug, PartialEq, Deserialize), serde(deny_unknown_fields))]
pub(super) struct V1Entry {
    pub(super) id: String,
    pub(super) fp: String,
    pub(super) at: u64,
    pub(super) exp: u64,
    pub(super) rev: u64,
    pub(super) status: String,
    pub(super) response: Value,
}

/// A format 1 body, checked: the fields it shares with the head of the later
/// formats, read as those are, and its ledger entries, read one by one by the caller.
pub(super) fn v1_parts(v: Value) -> Wire<(Head, Vec<Value>)> {
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
    pub(super) fn from_value(v: Value) -> Wire<V1> {
        let format = v.get("format").and_then(Value::as_u64).unwrap_or(0) as u32;
        let (head, entries) = v1_parts(v)?;
        Ok(V1 {
            format,
            machine: (*head.machine).clone(),
            value: head.state.value,
            context: head.state.context,
            revision: head.state.revision,
            done: head.state.done,
            ledger: entries.into_iter().map(V1Entry::read).collect(),
            outbox: head.state.outbox,
            timers: head.state.timers,
        })
    }
}

impl V1Entry {
    pub(super) fn read(v: Value) -> V1Entry {
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

/// Format 2: `body` is everything before the checksum, which is `expected`.
#[inline(never)]
pub(super) fn decode_v2(body: &str, expected: u64) -> Result<Snapshot> {
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

pub(super) const V1_CHECK_PREFIX: &str = ",\"check\":\"";

/// Format 1 (out of line, as format 2's: `decode` is on every event's path, these are not).
#[inline(never)]
pub(super) fn decode_v1(text: &str) -> Result<Snapshot> {
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
