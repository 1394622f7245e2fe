//! The outcome on its way out: the common small outcome as flags, numbers and
//! two strings; any other as the JSON of its structured members; and the new
//! snapshot string made from the caller's unchanged prefix plus what changed.
//!
//! The writers of the structured forms are reached through a function pointer
//! (`outcome_js`), so that no optimiser inlines them into the small outcome's
//! path: a first event with the small outcome runs none of their code.

use super::*;

/// The bits of the `flags` the outcome crossings take, as the inline
/// JavaScript of `crossing.rs` reads them.
pub(super) mod flag {
    /// A new snapshot was written (`changed`).
    pub const CHANGED: u32 = 1;
    /// The status is `duplicate`.
    pub const DUPLICATE: u32 = 2;
    /// The outcome has an `original`.
    pub const ORIGINAL: u32 = 4;
    /// `outcome_plain`: the response is `null`.
    pub const NULL_RESPONSE: u32 = 8;
    /// `outcome_plain`: the response is `{revision, state}`.
    pub const DEFAULT_RESPONSE: u32 = 16;
    /// `outcome_plain`: the status's index in `STATUS` (three bits from here).
    pub const STATUS_AT: u32 = 5;
    /// `outcome_plain`: the original's status's index (three bits from here).
    pub const ORIGINAL_STATUS_AT: u32 = 8;
}

/// The flags every outcome crossing reads: changed and duplicate.
fn common_flags(o: &crate::outcome::Outcome) -> u32 {
    let mut flags = 0;
    if o.snapshot.is_some() {
        flags |= flag::CHANGED;
    }
    if o.duplicate() {
        flags |= flag::DUPLICATE;
    }
    flags
}

/// An outcome that is not the common small one (`outcome_plain_parts`): effects,
/// an error, a structured response. Out of line, so an event with the small
/// outcome does not compile these writers.
#[inline(never)]
pub(super) fn outcome_js(m: &JsValue, machine: &crate::Machine, o: &crate::outcome::Outcome, next: f64, returned: &JsValue) -> JsValue {
    if let Some((flags, text)) = outcome_parts(machine, o) {
        outcome_out(m, flags, o.revision as f64, next, text.as_ptr() as u32, text.len() as u32, returned)
    } else {
        let text = o.to_json_text(machine);
        outcome_text(m, text.as_ptr() as u32, text.len() as u32, returned)
    }
}

/// The most an outcome's plain text buffer keeps between calls.
pub(super) const OUTCOME_ROOM_KEPT: usize = 4096;

/// The outcome for `outcome_plain`, when it is the common small one: no
/// effects, no `error` nor `upgradedFrom`, a state that is one name, a
/// response that is a string, null or the default `{revision, state}`. Writes
/// the state's then the response's UTF-8 into `w` and returns the flags
/// (see [`flag`]) and where the response starts. `None` for any other outcome.
pub(super) fn outcome_plain_parts(o: &crate::outcome::Outcome, w: &mut Vec<u8>) -> Option<(u32, usize)> {
    use crate::outcome::Status;
    // In the order of the inline JavaScript's `STATUS`.
    const STATUS: [Status; 5] = [Status::Applied, Status::Duplicate, Status::Conflict, Status::Ignored, Status::Rejected];
    let index = |s: &str| STATUS.iter().position(|t| t.as_str() == s).map(|i| i as u32);
    if o.error.is_some() || o.upgraded_from.is_some() || !o.effects.is_empty() {
        return None;
    }
    let Value::String(state) = &o.state else { return None };
    let mut flags = common_flags(o) | index(o.status.as_str())? << flag::STATUS_AT;
    if let Some(first) = &o.original {
        flags |= flag::ORIGINAL | index(first.status)? << flag::ORIGINAL_STATUS_AT;
    }
    w.extend_from_slice(state.as_bytes());
    match &o.response {
        Value::String(r) => w.extend_from_slice(r.as_bytes()),
        Value::Null => flags |= flag::NULL_RESPONSE,
        Value::Object(r) if is_default_response(r, o.revision, state) => flags |= flag::DEFAULT_RESPONSE,
        _ => return None,
    }
    Some((flags, state.len()))
}

/// `{"revision": revision, "state": state}`: the response of an event whose
/// actions respond nothing, rebuilt in JavaScript from the outcome's own.
pub(super) fn is_default_response(r: &serde_json::Map<String, Value>, revision: u64, state: &str) -> bool {
    r.len() == 2
        && r.get("revision").and_then(Value::as_u64) == Some(revision)
        && r.get("state").and_then(Value::as_str) == Some(state)
}

/// The outcome for `outcome_out`, when it has no `error` nor `upgradedFrom`
/// (those go as the whole text to `outcome_text`): flags (changed, duplicate,
/// original: see [`flag`]) and the JSON text of an array of the values that
/// are JSON, `[effects, response, state, status, original?]`, each as
/// `Outcome::to_json_text` writes it. Numbers go as numbers (`u64 as f64`
/// rounds as `JSON.parse` does).
pub(super) fn outcome_parts(machine: &crate::Machine, o: &crate::outcome::Outcome) -> Option<(u32, Vec<u8>)> {
    if o.error.is_some() || o.upgraded_from.is_some() {
        return None;
    }
    let mut w: Vec<u8> = Vec::with_capacity(128);
    let mut flags = common_flags(o);
    w.push(b'[');
    o.write_effects(&mut w);
    w.push(b',');
    crate::json::write_json(&o.response, &mut w);
    w.push(b',');
    machine.write_state_value(&o.state, &mut w);
    w.push(b',');
    crate::json::write_str(o.status.as_str(), &mut w);
    if let Some(first) = &o.original {
        flags |= flag::ORIGINAL;
        w.push(b',');
        first.write_json(&mut w);
    }
    w.push(b']');
    Some((flags, w))
}

/// The last 16 bytes of `a` followed by `b` (a snapshot's checksum), `None`
/// when there are fewer.
pub(super) fn last16(a: &[u8], b: &[u8]) -> Option<Vec<u8>> {
    let from_b = b.len().min(16);
    let from_a = 16 - from_b;
    (a.len() >= from_a).then(|| [&a[a.len() - from_a..], &b[b.len() - from_b..]].concat())
}

/// Shared prefixes shorter than this are not worth splicing: the whole text is
/// as cheap to hand over.
pub(super) const SPLICE_MIN: usize = 1024;
/// Appends after which the kept records string is rebuilt flat, so a process
/// kept for a long time does not hold an ever deeper chain of pieces.
pub(super) const MAX_APPENDS: u32 = 1024;

/// The new snapshot as a JavaScript string: `prefix` (the header line and the
/// records, of which the first `keep` bytes are the old text's) + `tail`.
/// Only what changed crosses the boundary: the records are taken from the
/// kept records string or the caller's string (`slice` of a flat string and
/// `concat` do not copy characters in JavaScript engines), never re-decoded.
/// Returns the string and the records string to keep for the next event.
pub(super) fn new_string(old: &JsValue, ascii: bool, records: Option<Records>, keep: usize, prefix: &str, tail: &str) -> (JsValue, Option<Records>) {
    let at = prefix.len();
    let base = match (records, old.dyn_ref::<js_sys::JsString>()) {
        _ if !ascii || keep < SPLICE_MIN || keep > at => None,
        (Some(r), _) if r.len == keep && r.appends < MAX_APPENDS => Some((r.text, r.appends)),
        (_, Some(old)) => Some((old.slice(0, keep as u32), 0)),
        _ => None,
    };
    match base {
        Some((base, appends)) => {
            // `get`, not an index: keep <= at (checked above), and a `str`
            // index that could fail brings in core's Unicode tables.
            let text = if keep == at { base } else { base.concat(&JsValue::from_str(prefix.get(keep..).unwrap_or(""))) };
            let value = text.concat(&JsValue::from_str(tail));
            (value.into(), Some(Records { text, len: at, appends: appends + 1 }))
        }
        None => {
            let mut whole = String::with_capacity(at + tail.len());
            whole.push_str(prefix);
            whole.push_str(tail);
            let value = js_sys::JsString::from(whole.as_str());
            // Records shorter than SPLICE_MIN would never be spliced onto.
            let records = (at >= SPLICE_MIN).then(|| Records { text: value.slice(0, at as u32), len: at, appends: 0 });
            (value.into(), records)
        }
    }
}
