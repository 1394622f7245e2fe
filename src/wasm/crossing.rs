//! The crossings between JavaScript and wasm memory: the inline JavaScript
//! functions a reduce calls (each crossing doing all it can: the event's text
//! and a small snapshot written straight into wasm memory by
//! `TextEncoder.encodeInto`, the outcome built as an object literal), and the
//! readers of what they write.
//!
//! The common small outcome (no effects, a state that is one name, a response
//! that is a string, null or the default `{revision, state}`) crosses as flags,
//! numbers and two strings' UTF-8, without JSON (`outcome_plain`); any other has
//! its JSON-valued members from one `JSON.parse` of an array (`outcome_out`), and
//! outcomes with `error` or `upgradedFrom` go as their whole text; a wasm test
//! pins the three forms together. A snapshot is classified and compared with the
//! kept one by the same call that copies a small one in; a larger one is written
//! by one `TextEncoder.encodeInto` (bytes with `reduceBytes`: one copy, checked
//! for ASCII), and that buffer becomes the decoded ledger's.

use super::*;

#[wasm_bindgen(inline_js = "const encoder = new TextEncoder();\n\
let decoder = new TextDecoder('utf-8', { ignoreBOM: true });\n\
let decoded = 0;\n\
let memory = null;\n\
let heap = new Uint8Array(0);\n\
let held = null;\n\
function bytes(m) { if (m !== memory || heap.byteLength === 0) { memory = m; heap = new Uint8Array(m.buffer); } return heap; }\n\
function decode(m, ptr, len) {\n\
  decoded += len;\n\
  if (decoded >= 2146435072) { decoder = new TextDecoder('utf-8', { ignoreBOM: true }); decoded = len; }\n\
  return decoder.decode(bytes(m).subarray(ptr, ptr + len));\n\
}\n\
export function utf8(s) { return encoder.encode(s); }\n\
export function array_into(m, a, ptr) { bytes(m).set(a, ptr); }\n\
export function ascii_into(s, view) { const r = encoder.encodeInto(s, view); return r.read === s.length && r.written === s.length; }\n\
export function event_in(m, e, ptr, cap) {\n\
  let t = e;\n\
  if (typeof t !== 'string') {\n\
    try { t = JSON.stringify(t); } catch (_) { return -1; }\n\
    if (typeof t !== 'string') return -1;\n\
  }\n\
  const r = encoder.encodeInto(t, bytes(m).subarray(ptr, ptr + cap));\n\
  if (r.read === t.length) return r.written;\n\
  held = t;\n\
  return -2 - (r.written + 3 * (t.length - r.read));\n\
}\n\
export function held_in(m, ptr, cap) { const t = held; held = null; return encoder.encodeInto(t, bytes(m).subarray(ptr, ptr + cap)).written; }\n\
export function snapshot_in(m, s, kept, ptr, cap) {\n\
  if (s === null || s === undefined) return -1;\n\
  if (s === kept) return -2;\n\
  if (typeof s === 'string') {\n\
    const n = s.length;\n\
    if (n > cap) return 4 * n + 2;\n\
    const r = encoder.encodeInto(s, bytes(m).subarray(ptr, ptr + cap));\n\
    if (r.read !== n) return 4 * n + 2;\n\
    return 4 * r.written + (r.written === n ? 0 : 1);\n\
  }\n\
  if (s instanceof Uint8Array) {\n\
    if (s.length <= cap) bytes(m).set(s, ptr);\n\
    return 4 * s.length + 3;\n\
  }\n\
  return -3;\n\
}\n\
export function bytes_out(m, p, pn, t, tn) { const h = bytes(m); const b = new Uint8Array(pn + tn); b.set(h.subarray(p, p + pn)); b.set(h.subarray(t, t + tn), pn); return b; }\n\
function outcome(flags, effects, next, original, response, revision, state, status, snapshot) {\n\
  const changed = (flags & 1) !== 0, duplicate = (flags & 2) !== 0, nextDueAt = next < 0 ? null : next;\n\
  const o = (flags & 4) === 0\n\
    ? { changed, duplicate, effects, nextDueAt, response, revision, state, status }\n\
    : { changed, duplicate, effects, nextDueAt, original, response, revision, state, status };\n\
  o.snapshot = snapshot;\n\
  return o;\n\
}\n\
export function outcome_out(m, flags, revision, next, ptr, len, snapshot) {\n\
  let v;\n\
  try { v = JSON.parse(decode(m, ptr, len)); } catch (_) { return null; }\n\
  return outcome(flags, v[0], next, v[4], v[1], revision, v[2], v[3], snapshot);\n\
}\n\
const STATUS = ['applied', 'duplicate', 'conflict', 'ignored', 'rejected'];\n\
export function outcome_plain(m, flags, revision, next, ptr, split, len, at, first, snapshot) {\n\
  const state = decode(m, ptr, split), status = STATUS[(flags >> 5) & 7];\n\
  const response = (flags & 8) !== 0 ? null : (flags & 16) !== 0 ? { revision, state } : decode(m, ptr + split, len - split);\n\
  const original = (flags & 4) === 0 ? undefined : { at, revision: first, status: STATUS[(flags >> 8) & 7] };\n\
  return outcome(flags, [], next, original, response, revision, state, status, snapshot);\n\
}\n\
export function outcome_text(m, ptr, len, snapshot) {\n\
  let o;\n\
  try { o = JSON.parse(decode(m, ptr, len)); } catch (_) { return null; }\n\
  o.snapshot = snapshot;\n\
  return o;\n\
}")]
extern "C" {
    /// `TextEncoder.encode`: one native call, where passing a `String` argument
    /// would copy a large snapshot character by character in JavaScript.
    pub(super) fn utf8(s: &JsValue) -> js_sys::Uint8Array;
    /// `a` (a `Uint8Array`) copied into wasm memory at `ptr`.
    pub(super) fn array_into(m: &JsValue, a: &js_sys::Uint8Array, ptr: u32);
    /// `TextEncoder.encodeInto` straight into wasm memory; true when every
    /// character became one byte (the string is ASCII, as snapshots are).
    pub(super) fn ascii_into(s: &JsValue, view: &js_sys::Uint8Array) -> bool;
    // Each reduce crosses into JavaScript a few times, each crossing doing
    // all it can (a crossing has a fixed cost, and wasm-bindgen's own string
    // arguments are copied character by character). `m` is this module's
    // `WebAssembly.Memory`; the functions view it afresh after it grows.
    /// The event's JSON text (the string itself, or `JSON.stringify` of
    /// anything else) encoded into `cap` bytes at `ptr`: the bytes written;
    /// -1 when it cannot be converted; `-2 - room` when it needs up to `room`
    /// bytes (then [`held_in`] writes the same text).
    pub(super) fn event_in(m: &JsValue, event: &JsValue, ptr: u32, cap: u32) -> f64;
    /// The text `event_in` had no room for, written into `cap` bytes at `ptr`.
    pub(super) fn held_in(m: &JsValue, ptr: u32, cap: u32) -> f64;
    /// The snapshot argument: -1 for null/undefined, -2 when it is `kept`
    /// (`===`), -3 for any other type than string or `Uint8Array`; otherwise
    /// `4 * n + k`: k = 0, a string of n ASCII characters written at `ptr`;
    /// 1, a string written as n bytes of UTF-8; 2, a string of n characters
    /// not written (more than `cap` bytes); 3, n bytes, written when n ≤ `cap`.
    pub(super) fn snapshot_in(m: &JsValue, snapshot: &JsValue, kept: &JsValue, ptr: u32, cap: u32) -> f64;
    /// A new `Uint8Array` holding the two pieces, one after the other.
    pub(super) fn bytes_out(m: &JsValue, p: u32, p_len: u32, t: u32, t_len: u32) -> JsValue;
    /// The outcome object from [`outcome_parts`], with `snapshot` set on it
    /// last: the keys of `Outcome::to_json_text`, in its (sorted) order, built
    /// by the inline `outcome` (the one place JavaScript spells them) as an
    /// object literal rather than by `JSON.parse` of the whole outcome.
    pub(super) fn outcome_out(m: &JsValue, flags: u32, revision: f64, next: f64, ptr: u32, len: u32, snapshot: &JsValue) -> JsValue;
    /// The outcome object of [`outcome_plain`]: the same keys and values as
    /// `outcome_out`'s, built from two strings and numbers without `JSON.parse`
    /// (which costs more than the rest of the crossing for a small outcome):
    /// the state, the `split` bytes at `ptr`, and the response, the rest of the
    /// `len` bytes (`null` with [`flag::NULL_RESPONSE`], `{revision, state}`
    /// with [`flag::DEFAULT_RESPONSE`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn outcome_plain(m: &JsValue, flags: u32, revision: f64, next: f64, ptr: u32, split: u32, len: u32, at: f64, first: f64, snapshot: &JsValue) -> JsValue;
    /// `JSON.parse` of the outcome's text at `ptr`, with `snapshot` set on it.
    pub(super) fn outcome_text(m: &JsValue, ptr: u32, len: u32, snapshot: &JsValue) -> JsValue;
}

thread_local! {
    /// This module's memory, looked up once (each lookup is a crossing).
    pub(super) static MEMORY: JsValue = wasm_bindgen::memory();
}

/// The snapshot text from a JavaScript string (or bytes), `None` for null/undefined,
/// and whether it came from a string that is all ASCII (its characters are its bytes).
pub(super) fn snapshot_text(v: &JsValue) -> Result<Option<(String, bool)>, JsValue> {
    if v.is_null() || v.is_undefined() {
        return Ok(None);
    }
    let bytes = if let Some(s) = v.dyn_ref::<js_sys::JsString>() {
        let n = s.length() as usize;
        // Spare room for the records reduces append when this buffer becomes the ledger's.
        let mut buf: Vec<u8> = Vec::with_capacity(crate::snapshot::with_record_room(n));
        // SAFETY: the view covers the vector's spare capacity and lives only for
        // the call, which cannot allocate in (or grow) wasm memory.
        let view = unsafe { js_sys::Uint8Array::view_mut_raw(buf.as_mut_ptr(), n) };
        if ascii_into(v, &view) {
            // SAFETY: `n` bytes were written, one per character, so each is an
            // ASCII character and the bytes are valid UTF-8.
            return Ok(Some((unsafe {
                buf.set_len(n);
                String::from_utf8_unchecked(buf)
            }, true)));
        }
        array_vec(&utf8(v), 0)
    } else if let Some(b) = v.dyn_ref::<js_sys::Uint8Array>() {
        let n = b.length() as usize;
        let buf = array_vec(b, crate::snapshot::with_record_room(n) - n);
        if is_ascii(&buf) {
            // SAFETY: ASCII bytes are valid UTF-8.
            return Ok(Some((unsafe { String::from_utf8_unchecked(buf) }, false)));
        }
        buf
    } else {
        return Err(invalid_argument("snapshot", "a string or a Uint8Array", v));
    };
    // Invalid UTF-8 cannot carry a valid checksum: lossy text is refused by the engine.
    Ok(Some((String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()), false)))
}

/// The bytes of `a`, with room for `spare` more (one copy, where js-sys's
/// `to_vec` and `copy_to` each bring a length assertion and its formatting).
pub(super) fn array_vec(a: &js_sys::Uint8Array, spare: usize) -> Vec<u8> {
    let n = a.length() as usize;
    let mut buf = Vec::with_capacity(n + spare);
    buf.resize(n, 0);
    MEMORY.with(|m| array_into(m, a, buf.as_mut_ptr() as u32));
    buf
}

/// `<[u8]>::is_ascii`, sixteen bytes at a time with SIMD128 (snapshots are
/// ASCII, and checking a large one byte by byte costs as much as hashing it).
pub(super) fn is_ascii(b: &[u8]) -> bool {
    #[cfg(target_feature = "simd128")]
    {
        use core::arch::wasm32::{u8x16_bitmask, v128, v128_or};
        let (chunks, rest) = b.split_at(b.len() - b.len() % 64);
        for c in chunks.chunks_exact(64) {
            // SAFETY: each 16-byte piece is in bounds; v128 loads need no alignment.
            let v = unsafe {
                let p = c.as_ptr() as *const v128;
                v128_or(v128_or(p.read_unaligned(), p.add(1).read_unaligned()), v128_or(p.add(2).read_unaligned(), p.add(3).read_unaligned()))
            };
            if u8x16_bitmask(v) != 0 {
                return false;
            }
        }
        rest.is_ascii()
    }
    #[cfg(not(target_feature = "simd128"))]
    b.is_ascii()
}

/// Room an event's text is first given, and the most kept between calls.
pub(super) const EVENT_ROOM: usize = 4096;
pub(super) const EVENT_ROOM_KEPT: usize = 64 << 10;
/// A snapshot of up to this many bytes is copied in by the crossing that
/// looks at it; a longer one (where the copy dominates) by one more.
pub(super) const SNAPSHOT_ROOM: usize = 2048;

/// The event's JSON text written into `buf` (grown when it needs more room):
/// its length in bytes.
pub(super) fn event_text(event: &JsValue, buf: &mut Vec<u8>) -> Result<usize, JsValue> {
    if buf.len() < EVENT_ROOM {
        buf.resize(EVENT_ROOM, 0);
    }
    let n = MEMORY.with(|m| event_in(m, event, buf.as_mut_ptr() as u32, buf.len() as u32));
    let n = if n >= 0.0 {
        n
    } else if n == -1.0 {
        return Err(js_error(&Error::new(Code::InvalidJson, "event cannot be converted to json")));
    } else {
        buf.resize((-2.0 - n) as usize, 0);
        MEMORY.with(|m| held_in(m, buf.as_mut_ptr() as u32, buf.len() as u32))
    };
    Ok((n as usize).min(buf.len()))
}

/// The last 16 bytes of a snapshot held as bytes (its checksum), read without
/// copying the rest; `None` for a string.
pub(super) fn bytes_check(v: &JsValue) -> Option<Vec<u8>> {
    let b = v.dyn_ref::<js_sys::Uint8Array>()?;
    let len = b.length();
    (len >= 16).then(|| array_vec(&b.subarray(len - 16, len), 0))
}

/// Length of a snapshot string (ASCII: characters are bytes) or byte array.
pub(super) fn js_length(v: &JsValue) -> usize {
    if let Some(s) = v.dyn_ref::<js_sys::JsString>() {
        return s.length() as usize;
    }
    v.dyn_ref::<js_sys::Uint8Array>().map_or(0, |b| b.length() as usize)
}
