//! The JavaScript bindings: the only module that names `wasm_bindgen`, `js_sys`,
//! `serde_wasm_bindgen` or `getrandom`.
//!
//! A reduce's values cross the boundary as JSON text (parsed on the JavaScript
//! side with `JSON.parse`; benches/RESULTS.md, log entry 37, has serde-wasm-bindgen
//! measured against it), and the snapshot as one opaque string (or `Uint8Array`) that
//! hosts store and load as it is: in through one `TextEncoder.encodeInto` into
//! wasm memory, out as the caller's own string for the unchanged part plus
//! what changed. A reduce crosses into JavaScript a few times only: once for
//! the event, once for the snapshot, once for the outcome object (and once for
//! a changed snapshot). What is not asked for per event (`inspect`, `due`,
//! `retention`, `analyze`) leaves as plain objects through serde-wasm-bindgen.
//! Errors are real `Error` objects carrying `code` (and `path` where one applies).

use crate::error::{Code, Error};
use crate::json::object;
use crate::reduce::Current;
use crate::snapshot::Loaded;
use std::cell::{Cell, RefCell};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// `e` as a JavaScript `Error` named IdemError with its `code` (and `path`), branded with
/// `Symbol.for("idem.error")`, the mark `instanceof IdemError` asks for (pkg/src/error.js): the
/// lean module and the full one each have their own glue, so their errors share a brand rather
/// than a prototype.
fn js_error(e: &Error) -> JsValue {
    let err = js_sys::Error::new(&e.message);
    err.set_name("IdemError");
    let _ = js_sys::Reflect::set(&err, &"code".into(), &e.code.as_str().into());
    if let Some(p) = &e.path {
        let _ = js_sys::Reflect::set(&err, &"path".into(), &p.as_str().into());
    }
    // Not enumerable, not writable: it shows in no log and no JSON.
    let brand = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&brand, &"value".into(), &JsValue::TRUE);
    js_sys::Object::define_property(&err, &js_sys::Symbol::for_("idem.error").into(), &brand);
    err.into()
}

/// `v` as a plain JavaScript value (objects, not `Map`s; `None` as `null`).
/// An integer beyond 2^53, which serde-wasm-bindgen refuses, sends the value
/// through `JSON.parse` instead, which rounds it to the nearest number as
/// JavaScript does everywhere else.
fn to_js<T: serde::Serialize + ?Sized>(v: &T) -> JsValue {
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).unwrap_or_else(|_| {
        let text = serde_json::to_string(v).unwrap_or_default();
        js_sys::JSON::parse(&text).unwrap_or(JsValue::NULL)
    })
}

/// JSON text of a value given as an object or as a JSON string.
fn json_text(v: &JsValue, what: &str) -> Result<String, JsValue> {
    if let Some(s) = v.as_string() {
        return Ok(s);
    }
    js_sys::JSON::stringify(v)
        .ok()
        .and_then(|s| s.as_string())
        .ok_or_else(|| js_error(&Error::new(Code::InvalidJson, format!("{what} cannot be converted to json"))))
}

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
export function outcome_out(m, flags, revision, next, ptr, len, snapshot) {\n\
  let v;\n\
  try { v = JSON.parse(decode(m, ptr, len)); } catch (_) { return null; }\n\
  const changed = (flags & 1) !== 0, duplicate = (flags & 2) !== 0, nextDueAt = next < 0 ? null : next;\n\
  const o = (flags & 4) === 0\n\
    ? { changed, duplicate, effects: v[0], nextDueAt, response: v[1], revision, state: v[2], status: v[3] }\n\
    : { changed, duplicate, effects: v[0], nextDueAt, original: v[4], response: v[1], revision, state: v[2], status: v[3] };\n\
  o.snapshot = snapshot;\n\
  return o;\n\
}\n\
const STATUS = ['applied', 'duplicate', 'conflict', 'ignored', 'rejected'];\n\
export function outcome_plain(m, flags, revision, next, ptr, split, len, at, first, snapshot) {\n\
  const changed = (flags & 1) !== 0, duplicate = (flags & 2) !== 0, nextDueAt = next < 0 ? null : next;\n\
  const state = decode(m, ptr, split), status = STATUS[(flags >> 5) & 7];\n\
  const response = (flags & 8) !== 0 ? null : (flags & 16) !== 0 ? { revision, state } : decode(m, ptr + split, len - split);\n\
  const o = (flags & 4) === 0\n\
    ? { changed, duplicate, effects: [], nextDueAt, response, revision, state, status }\n\
    : { changed, duplicate, effects: [], nextDueAt, original: { at, revision: first, status: STATUS[(flags >> 8) & 7] }, response, revision, state, status };\n\
  o.snapshot = snapshot;\n\
  return o;\n\
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
    fn utf8(s: &JsValue) -> js_sys::Uint8Array;
    /// `a` (a `Uint8Array`) copied into wasm memory at `ptr`.
    fn array_into(m: &JsValue, a: &js_sys::Uint8Array, ptr: u32);
    /// `TextEncoder.encodeInto` straight into wasm memory; true when every
    /// character became one byte (the string is ASCII, as snapshots are).
    fn ascii_into(s: &JsValue, view: &js_sys::Uint8Array) -> bool;
    // Each reduce crosses into JavaScript a few times, each crossing doing
    // all it can (a crossing has a fixed cost, and wasm-bindgen's own string
    // arguments are copied character by character). `m` is this module's
    // `WebAssembly.Memory`; the functions view it afresh after it grows.
    /// The event's JSON text (the string itself, or `JSON.stringify` of
    /// anything else) encoded into `cap` bytes at `ptr`: the bytes written;
    /// -1 when it cannot be converted; `-2 - room` when it needs up to `room`
    /// bytes (then [`held_in`] writes the same text).
    fn event_in(m: &JsValue, event: &JsValue, ptr: u32, cap: u32) -> f64;
    /// The text `event_in` had no room for, written into `cap` bytes at `ptr`.
    fn held_in(m: &JsValue, ptr: u32, cap: u32) -> f64;
    /// The snapshot argument: -1 for null/undefined, -2 when it is `kept`
    /// (`===`), -3 for any other type than string or `Uint8Array`; otherwise
    /// `4 * n + k`: k = 0, a string of n ASCII characters written at `ptr`;
    /// 1, a string written as n bytes of UTF-8; 2, a string of n characters
    /// not written (more than `cap` bytes); 3, n bytes, written when n ≤ `cap`.
    fn snapshot_in(m: &JsValue, snapshot: &JsValue, kept: &JsValue, ptr: u32, cap: u32) -> f64;
    /// A new `Uint8Array` holding the two pieces, one after the other.
    fn bytes_out(m: &JsValue, p: u32, p_len: u32, t: u32, t_len: u32) -> JsValue;
    /// The outcome object from [`outcome_parts`], with `snapshot` set on it
    /// last: the keys of `Outcome::to_json_text`, in its (sorted) order. An
    /// object literal, where `JSON.parse` of the whole outcome costs more
    /// than the rest of the crossing.
    fn outcome_out(m: &JsValue, flags: u32, revision: f64, next: f64, ptr: u32, len: u32, snapshot: &JsValue) -> JsValue;
    /// The outcome object of [`outcome_plain`]: the same keys and values as
    /// `outcome_out`'s, built from two strings and numbers without `JSON.parse`
    /// (which costs more than the rest of the crossing for a small outcome):
    /// the state, the `split` bytes at `ptr`, and the response, the rest of the
    /// `len` bytes (`null` with flag 8, `{revision, state}` with flag 16).
    #[allow(clippy::too_many_arguments)]
    fn outcome_plain(m: &JsValue, flags: u32, revision: f64, next: f64, ptr: u32, split: u32, len: u32, at: f64, first: f64, snapshot: &JsValue) -> JsValue;
    /// `JSON.parse` of the outcome's text at `ptr`, with `snapshot` set on it.
    fn outcome_text(m: &JsValue, ptr: u32, len: u32, snapshot: &JsValue) -> JsValue;
}

thread_local! {
    /// This module's memory, looked up once (each lookup is a crossing).
    static MEMORY: JsValue = wasm_bindgen::memory();
}

/// The snapshot text from a JavaScript string (or bytes), `None` for null/undefined,
/// and whether it came from a string that is all ASCII (its characters are its bytes).
fn snapshot_text(v: &JsValue) -> Result<Option<(String, bool)>, JsValue> {
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
        return Err(js_error(&Error::new(Code::InvalidSnapshot, "snapshot must be a string, a Uint8Array or null")));
    };
    // Invalid UTF-8 cannot carry a valid checksum: lossy text is refused by the engine.
    Ok(Some((String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()), false)))
}

/// The bytes of `a`, with room for `spare` more (one copy, where js-sys's
/// `to_vec` and `copy_to` each bring a length assertion and its formatting).
fn array_vec(a: &js_sys::Uint8Array, spare: usize) -> Vec<u8> {
    let n = a.length() as usize;
    let mut buf = Vec::with_capacity(n + spare);
    buf.resize(n, 0);
    MEMORY.with(|m| array_into(m, a, buf.as_mut_ptr() as u32));
    buf
}

/// `<[u8]>::is_ascii`, sixteen bytes at a time with SIMD128 (snapshots are
/// ASCII, and checking a large one byte by byte costs as much as hashing it).
fn is_ascii(b: &[u8]) -> bool {
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

/// `nowMs` as the engine's clock: missing (JavaScript's `undefined` arrives as
/// NaN) is `missing_now`; negative, infinite or past 2^53 − 1 is `invalid_now`.
fn now_ms(now: f64) -> Result<u64, JsValue> {
    if (0.0..=9_007_199_254_740_991.0).contains(&now) {
        Ok(now as u64)
    } else if now.is_nan() {
        Err(js_error(&Error::new(Code::MissingNow, "nowMs is missing or not a number: pass the host's clock (Date.now())")))
    } else {
        Err(js_error(&Error::new(Code::InvalidNow, "nowMs must be a number of milliseconds from 0 to 2^53 - 1")))
    }
}

/// The process id a reduce scopes its effect keys with (`<process>/<event>:<n>`):
/// required, so two processes that reuse an event id never share a key at the
/// gateway.
fn process_id(process: Option<String>) -> Result<String, JsValue> {
    match process {
        Some(p) if !p.is_empty() => Ok(p),
        _ => {
            let mut e = Error::new(Code::MissingProcessId, "processId is missing or empty: reduce scopes the effect keys it makes by it");
            e.path = Some("processId".into());
            Err(js_error(&e))
        }
    }
}

/// A validated machine, built once and reused for every event.
///
/// ```js
/// const machine = new Machine(definition);           // object or JSON string
/// const out = machine.reduce(null, { id: "evt-1", type: "PAY", payload: {} }, Date.now(), "order-42");
/// // out.status: "applied" | "duplicate" | "conflict" | "ignored" | "rejected"
/// if (out.changed) await store.commit("order-42", version, out.snapshot);
/// ```
#[wasm_bindgen]
pub struct Machine {
    inner: crate::Machine,
    resident: RefCell<Resident>,
    /// Where an event's text is written, kept between calls (taken out for a
    /// call, so a `toJSON` that reduces on this machine again gets its own).
    event_buf: Cell<Vec<u8>>,
    /// A buffer for a small snapshot's text, kept when a call did not use it.
    snapshot_buf: Cell<Vec<u8>>,
    /// Where a plain outcome's state and response are written (`outcome_plain_parts`).
    outcome_buf: Cell<Vec<u8>>,
}

/// Room an event's text is first given, and the most kept between calls.
const EVENT_ROOM: usize = 4096;
const EVENT_ROOM_KEPT: usize = 64 << 10;
/// A snapshot of up to this many bytes is copied in by the crossing that
/// looks at it; a longer one (where the copy dominates) by one more.
const SNAPSHOT_ROOM: usize = 2048;

/// The event's JSON text written into `buf` (grown when it needs more room):
/// its length in bytes.
fn event_text(event: &JsValue, buf: &mut Vec<u8>) -> Result<usize, JsValue> {
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

/// Decoded snapshots kept between calls (a Durable Object or a warm isolate
/// reduces the same process again and again), one per process id: a snapshot
/// the caller passes that is the kept one (see `Resident::take`) is used
/// without being copied into wasm memory or decoded; anything else is decoded
/// as usual. The outcome is the same either way, byte for byte.
#[derive(Default)]
struct Resident {
    entries: Vec<Kept>,
}

struct Kept {
    process: String,
    /// The snapshot string or bytes as the caller holds it.
    value: JsValue,
    /// Its length in bytes (for an ASCII string, its characters).
    len: usize,
    /// For bytes, their checksum (last 16 bytes): an array the caller changed
    /// in place is not the kept snapshot any more.
    check: Option<Vec<u8>>,
    /// `value` is a `Uint8Array`.
    bytes: bool,
    /// `value` is a string whose characters are its bytes, so byte offsets are
    /// character offsets (see `Machine::reduce_resident`).
    ascii: bool,
    records: Option<Records>,
    loaded: Loaded,
}

/// A JavaScript string holding a snapshot's header line and records (its first
/// `len` characters), built by appending to the previous one.
struct Records {
    text: js_sys::JsString,
    len: usize,
    /// Appends since it was last built flat.
    appends: u32,
}

const RESIDENT_ENTRIES: usize = 8;
/// Snapshot bytes kept at most (each is held twice: the caller's string and the
/// decoded copy), well inside a Worker isolate's 128 MB.
const RESIDENT_BYTES: usize = 16 << 20;

impl Resident {
    /// The process's entry, which JavaScript found to be `snapshot` itself
    /// (`===`: the same string, or an equal copy compared whole, so a tampered
    /// copy never stands in for the kept one); an array must still hold the
    /// same bytes at its end, where its checksum is.
    fn take_same(&mut self, process: &str, snapshot: &JsValue) -> Option<Kept> {
        let i = self.entries.iter().position(|e| e.process == process)?;
        let e = &self.entries[i];
        if e.bytes && (e.len != js_length(snapshot) || e.check != bytes_check(snapshot)) {
            return None;
        }
        Some(self.entries.remove(i))
    }

    fn put(&mut self, kept: Kept) {
        self.make_room(&kept.process, kept.len);
        if kept.len <= RESIDENT_BYTES {
            self.entries.push(kept);
        }
    }

    /// Room for `process`'s snapshot of `len` bytes: its own entry goes, and
    /// the oldest ones that keeping it would exceed the bounds with. Called
    /// before a snapshot is copied in and decoded too, so that what keeping it
    /// will push out is not in wasm memory beside it (that memory never
    /// shrinks: a host reducing one large process after another would hold
    /// two at once).
    fn make_room(&mut self, process: &str, len: usize) {
        self.entries.retain(|e| e.process != process);
        if len > RESIDENT_BYTES {
            return;
        }
        while !self.entries.is_empty()
            && (self.entries.len() >= RESIDENT_ENTRIES || self.entries.iter().map(|e| e.len).sum::<usize>() + len > RESIDENT_BYTES)
        {
            self.entries.remove(0);
        }
    }
}

/// The last 16 bytes of a snapshot held as bytes (its checksum), read without
/// copying the rest; `None` for a string.
fn bytes_check(v: &JsValue) -> Option<Vec<u8>> {
    let b = v.dyn_ref::<js_sys::Uint8Array>()?;
    let len = b.length();
    (len >= 16).then(|| array_vec(&b.subarray(len - 16, len), 0))
}

/// Length of a snapshot string (ASCII: characters are bytes) or byte array.
fn js_length(v: &JsValue) -> usize {
    if let Some(s) = v.dyn_ref::<js_sys::JsString>() {
        return s.length() as usize;
    }
    v.dyn_ref::<js_sys::Uint8Array>().map_or(0, |b| b.length() as usize)
}

#[wasm_bindgen]
impl Machine {
    /// Build a machine from a definition (an object or JSON text). Throws an
    /// `Error` with `code` and `path` when the definition is invalid.
    #[wasm_bindgen(constructor)]
    pub fn new(definition: JsValue) -> Result<Machine, JsValue> {
        let text = json_text(&definition, "definition")?;
        crate::Machine::from_json(&text)
            .map(|inner| Machine { inner, resident: RefCell::default(), event_buf: Cell::default(), snapshot_buf: Cell::default(), outcome_buf: Cell::default() })
            .map_err(|e| js_error(&e))
    }

    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.inner.id.clone()
    }

    #[wasm_bindgen(getter)]
    pub fn version(&self) -> String {
        self.inner.version.clone()
    }

    /// Content hash of the canonical definition.
    #[wasm_bindgen(getter)]
    pub fn hash(&self) -> String {
        self.inner.hash.clone()
    }

    /// Apply one event. `snapshot` is the stored string or `null` for a new
    /// process; `event` is `{ id, type, payload }` (object or JSON text);
    /// `processId` (required: `missing_process_id` without it) scopes default
    /// effect keys. Returns
    /// `{ status, duplicate, changed, snapshot, state, revision, response, effects, error?, nextDueAt }`
    /// where `snapshot` is the string to store (the input one when `changed` is false).
    /// Never throws for bad events or snapshots: those are `rejected` outcomes.
    pub fn reduce(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string | null")] snapshot: JsValue,
        event: JsValue,
        #[wasm_bindgen(js_name = nowMs)] now: f64,
        #[wasm_bindgen(js_name = processId)] process: Option<String>,
    ) -> Result<JsValue, JsValue> {
        self.reduce_js(snapshot, &event, now, process, false)
    }

    /// As [`Machine::reduce`], for hosts that store bytes (Durable Object storage,
    /// KV, Deno KV, IndexedDB, a D1 blob): `snapshot` is a `Uint8Array` (or null)
    /// and the outcome's `snapshot` is a `Uint8Array`. The snapshot is ASCII, so
    /// its bytes and its string are the same text; this path skips the text
    /// conversions at the boundary, which dominate large snapshots.
    ///
    /// ```js
    /// const out = machine.reduceBytes(stored ?? null, event, Date.now(), id);
    /// if (out.changed) await storage.put(id, out.snapshot); // a Uint8Array
    /// ```
    #[wasm_bindgen(js_name = reduceBytes)]
    pub fn reduce_bytes(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | null")] snapshot: JsValue,
        event: JsValue,
        #[wasm_bindgen(js_name = nowMs)] now: f64,
        #[wasm_bindgen(js_name = processId)] process: Option<String>,
    ) -> Result<JsValue, JsValue> {
        self.reduce_js(snapshot, &event, now, process, true)
    }

    /// The work due at `nowMs`: effect attempts, verifications, presumed-lost
    /// attempts and timers, each with the exact events to report back.
    pub fn due(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] snapshot: JsValue,
        #[wasm_bindgen(js_name = nowMs)] now: f64,
    ) -> Result<JsValue, JsValue> {
        let now = now_ms(now)?;
        let snapshot = snapshot_text(&snapshot)?.map(|(t, _)| t).unwrap_or_default();
        let items = crate::outbox::due(&self.inner, &snapshot, now).map_err(|e| js_error(&e))?;
        Ok(to_js(&items))
    }

    /// The snapshot as a readable object (state, context, ledger, outbox, timers).
    pub fn inspect(&self, #[wasm_bindgen(unchecked_param_type = "string")] snapshot: JsValue) -> Result<JsValue, JsValue> {
        let snapshot = snapshot_text(&snapshot)?.map(|(t, _)| t).unwrap_or_default();
        let readable = crate::inspect(&self.inner, &snapshot).map_err(|e| js_error(&e))?;
        Ok(to_js(&readable))
    }

    /// How long event ids are remembered: `{ defaultMs, perType, maxEntries }`.
    pub fn retention(&self) -> JsValue {
        let r = &self.inner.retention;
        to_js(&object! { "defaultMs": r.default_ms, "perType": r.per_type.to_json(), "maxEntries": r.max_entries })
    }

    /// The definition as loaded (for diagrams and tools).
    pub fn definition(&self) -> JsValue {
        to_js(&self.inner.definition)
    }

    /// Event types some state accepts.
    #[wasm_bindgen(js_name = eventTypes)]
    pub fn event_types(&self) -> JsValue {
        to_js(&Value::Array(self.inner.event_types.iter().cloned().map(Value::String).collect()))
    }
}

impl Machine {
    /// `reduce` and `reduceBytes`: the time checked, the event's text read
    /// into the reusable buffer, then [`Machine::reduce_resident`].
    fn reduce_js(&self, snapshot: JsValue, event: &JsValue, now: f64, process: Option<String>, bytes: bool) -> Result<JsValue, JsValue> {
        let now = now_ms(now)?;
        let process = process_id(process)?;
        let mut buf = self.event_buf.take();
        let out = event_text(event, &mut buf).and_then(|n| {
            // SAFETY: TextEncoder wrote these n bytes: UTF-8, whole characters.
            let text = unsafe { std::str::from_utf8_unchecked(&buf[..n]) };
            self.reduce_resident(process, snapshot, text, now, bytes)
        });
        if buf.len() <= EVENT_ROOM_KEPT {
            self.event_buf.set(buf);
        }
        out
    }

    /// Reduce, starting from the resident decoded snapshot when the caller's
    /// snapshot is the one it was made from; keep what results for next time.
    /// Returns the outcome as a JavaScript object with `snapshot` set: the new
    /// snapshot (a `Uint8Array` when `bytes`, else a string), or the caller's own
    /// value when unchanged. A new string keeps the caller's string for the
    /// bytes the two share (format 3 appends after the old records), so only
    /// what changed crosses the boundary.
    fn reduce_resident(&self, process: String, snapshot: JsValue, event: &str, now: u64, bytes: bool) -> Result<JsValue, JsValue> {
        // One crossing tells what the snapshot is and, unless it is the kept
        // one, copies a small one in: into a buffer that becomes the decoded
        // snapshot's text, with spare room for the record a reduce appends
        // (kept for the next call when unused).
        let mut buf = self.snapshot_buf.take();
        if buf.capacity() < SNAPSHOT_ROOM + 1024 {
            buf = Vec::with_capacity(SNAPSHOT_ROOM + 1024);
        }
        let cap = SNAPSHOT_ROOM;
        let code = {
            let r = self.resident.try_borrow();
            let kept = r.as_ref().ok().and_then(|r| r.entries.iter().find(|e| e.process == process)).map(|e| &e.value);
            MEMORY.with(|m| snapshot_in(m, &snapshot, kept.unwrap_or(&JsValue::UNDEFINED), buf.as_mut_ptr() as u32, cap as u32))
        };
        let n = if code >= 0.0 { (code / 4.0) as usize } else { 0 };
        let kind = if code >= 0.0 { (code % 4.0) as u8 } else { 4 };
        let copied = (kind == 0 || kind == 1 || kind == 3) && n <= cap;
        if !copied {
            self.snapshot_buf.set(buf);
            buf = Vec::new();
        }
        let same = match self.resident.try_borrow_mut() {
            Ok(mut r) if code == -2.0 => r.take_same(&process, &snapshot),
            _ => None,
        };
        if same.is_none() && (code >= 0.0 || code == -2.0) {
            // A snapshot to decode: what keeping it will push out goes first.
            let len = if code >= 0.0 { n } else { js_length(&snapshot) };
            if let Ok(mut r) = self.resident.try_borrow_mut() {
                r.make_room(&process, len);
            }
        }
        // (current, had a snapshot, its string is ASCII, kept records, its
        // length and checksum (if bytes) when known without asking JavaScript)
        let (current, had, ascii, records, known) = match same {
            Some(k) => (Current::Loaded(Box::new(k.loaded)), true, k.ascii, k.records, Some((k.len, k.check))),
            None if code == -1.0 => (Current::None, false, false, None, None),
            None if code == -3.0 => {
                return Err(js_error(&Error::new(Code::InvalidSnapshot, "snapshot must be a string, a Uint8Array or null")))
            }
            None if copied => {
                // SAFETY: JavaScript wrote n bytes at the start of the buffer's
                // spare capacity (n <= cap, the room it was given).
                unsafe { buf.set_len(n) };
                let check = (bytes && kind == 3 && n >= 16).then(|| buf[n - 16..].to_vec());
                let (text, ascii) = match kind {
                    // SAFETY: n characters became n bytes, so each is ASCII.
                    0 => (unsafe { String::from_utf8_unchecked(buf) }, true),
                    // TextEncoder writes UTF-8.
                    1 => (String::from_utf8(buf).unwrap_or_default(), false),
                    _ if is_ascii(&buf) => (unsafe { String::from_utf8_unchecked(buf) }, false),
                    // Invalid UTF-8 cannot carry a valid checksum: lossy text is refused by the engine.
                    _ => (String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()), false),
                };
                (Current::Owned(text), true, ascii, None, Some((n, check)))
            }
            // Larger than the room given, or the kept one no longer: as before.
            None => match snapshot_text(&snapshot)? {
                Some((t, ascii)) => (Current::Owned(t), true, ascii, None, None),
                None => (Current::None, false, false, None, None),
            },
        };
        let (o, after) = self.inner.reduce_parts(&process, current, event, now);
        let (returned, len, ascii, records, check) = match (&o.snapshot, &after) {
            (Some(tail), Some(loaded)) => {
                // The new text is `prefix` (the ledger's own, `at` bytes) + `tail`.
                let at = o.split.unwrap_or(0);
                let prefix = loaded.snap.ledger.prefix(at);
                let len = prefix.len() + tail.len();
                if bytes {
                    let b = MEMORY.with(|m| bytes_out(m, prefix.as_ptr() as u32, prefix.len() as u32, tail.as_ptr() as u32, tail.len() as u32));
                    (b, len, false, None, last16(prefix.as_bytes(), tail.as_bytes()))
                } else {
                    let (value, records) = new_string(&snapshot, ascii, records, o.kept_prefix, prefix, tail);
                    (value, len, true, records, None)
                }
            }
            // Unchanged: hand back the caller's own value, no copy.
            (None, _) if had => {
                let (len, check) = known.unwrap_or_else(|| (js_length(&snapshot), bytes_check(&snapshot)));
                (snapshot, len, ascii, records, check)
            }
            _ => (JsValue::NULL, 0, false, None, None),
        };
        let mut plain = self.outcome_buf.take();
        let next = o.next_due_at.map_or(-1.0, |n| n as f64);
        let out = MEMORY.with(|m| {
            if let Some((flags, split)) = outcome_plain_parts(&o, &mut plain) {
                let (at, first) = o.original.as_ref().map_or((0.0, 0.0), |f| (f.at as f64, f.revision as f64));
                let (ptr, len) = (plain.as_ptr() as u32, plain.len() as u32);
                outcome_plain(m, flags, o.revision as f64, next, ptr, split as u32, len, at, first, &returned)
            } else {
                // Through a pointer: wasm-opt inlines a one-caller function this small, which would put
                // these writers back into every first event's compile (V8 compiles a function whole).
                let f: fn(&JsValue, &crate::reduce::Outcome, f64, &JsValue) -> JsValue = outcome_js;
                std::hint::black_box(f)(m, &o, next, &returned)
            }
        });
        if plain.capacity() <= OUTCOME_ROOM_KEPT {
            plain.clear();
            self.outcome_buf.set(plain);
        }
        if let Some(loaded) = after {
            if let Ok(mut r) = self.resident.try_borrow_mut() {
                r.put(Kept { process, value: returned, len, check, bytes, ascii, records, loaded });
            }
        }
        Ok(out)
    }
}

/// An outcome that is not the common small one (`outcome_plain_parts`): effects,
/// an error, a structured response. Out of line, so an event with the small
/// outcome does not compile these writers.
#[inline(never)]
fn outcome_js(m: &JsValue, o: &crate::reduce::Outcome, next: f64, returned: &JsValue) -> JsValue {
    if let Some((flags, text)) = outcome_parts(o) {
        outcome_out(m, flags, o.revision as f64, next, text.as_ptr() as u32, text.len() as u32, returned)
    } else {
        let text = o.to_json_text();
        outcome_text(m, text.as_ptr() as u32, text.len() as u32, returned)
    }
}

/// The most an outcome's plain text buffer keeps between calls.
const OUTCOME_ROOM_KEPT: usize = 4096;

/// The outcome for `outcome_plain`, when it is the common small one: no
/// effects, no `error` nor `upgradedFrom`, a state that is one name, a
/// response that is a string, null or the default `{revision, state}`. Writes
/// the state's then the response's UTF-8 into `w` and returns the flags
/// (1 changed, 2 duplicate, 4 original, 8 null response, 16 the default
/// response, the status's index at bit 5 and the original's at bit 8)
/// and where the response starts. `None` for any other outcome.
fn outcome_plain_parts(o: &crate::reduce::Outcome, w: &mut Vec<u8>) -> Option<(u32, usize)> {
    use crate::reduce::Status;
    // In the order of the inline JavaScript's `STATUS`.
    const STATUS: [Status; 5] = [Status::Applied, Status::Duplicate, Status::Conflict, Status::Ignored, Status::Rejected];
    let index = |s: &str| STATUS.iter().position(|t| t.as_str() == s).map(|i| i as u32);
    if o.error.is_some() || o.upgraded_from.is_some() || !o.effects.is_empty() {
        return None;
    }
    let Value::String(state) = &o.state else { return None };
    let mut flags = u32::from(o.snapshot.is_some()) | u32::from(o.duplicate) << 1 | index(o.status.as_str())? << 5;
    if let Some(first) = &o.original {
        flags |= 4 | index(first.status)? << 8;
    }
    w.extend_from_slice(state.as_bytes());
    match &o.response {
        Value::String(r) => w.extend_from_slice(r.as_bytes()),
        Value::Null => flags |= 8,
        Value::Object(r) if is_default_response(r, o.revision, state) => flags |= 16,
        _ => return None,
    }
    Some((flags, state.len()))
}

/// `{"revision": revision, "state": state}`: the response of an event whose
/// actions respond nothing, rebuilt in JavaScript from the outcome's own.
fn is_default_response(r: &serde_json::Map<String, Value>, revision: u64, state: &str) -> bool {
    r.len() == 2
        && r.get("revision").and_then(Value::as_u64) == Some(revision)
        && r.get("state").and_then(Value::as_str) == Some(state)
}

/// The outcome for `outcome_out`, when it has no `error` nor `upgradedFrom`
/// (those go as the whole text to `outcome_text`): flags (1 changed,
/// 2 duplicate, 4 original) and the JSON text of an array of the values that
/// are JSON, `[effects, response, state, status, original?]`, each as
/// `Outcome::to_json_text` writes it. Numbers go as numbers (`u64 as f64`
/// rounds as `JSON.parse` does).
fn outcome_parts(o: &crate::reduce::Outcome) -> Option<(u32, Vec<u8>)> {
    if o.error.is_some() || o.upgraded_from.is_some() {
        return None;
    }
    let mut w: Vec<u8> = Vec::with_capacity(128);
    let mut flags = u32::from(o.snapshot.is_some()) | u32::from(o.duplicate) << 1;
    w.push(b'[');
    o.write_effects(&mut w);
    w.push(b',');
    crate::json::write_json(&o.response, &mut w);
    w.push(b',');
    crate::json::write_in_order(&o.state, &mut w);
    w.push(b',');
    crate::json::write_str(o.status.as_str(), &mut w);
    if let Some(first) = &o.original {
        flags |= 4;
        w.push(b',');
        first.write_json(&mut w);
    }
    w.push(b']');
    Some((flags, w))
}

/// The last 16 bytes of `a` followed by `b` (a snapshot's checksum), `None`
/// when there are fewer.
fn last16(a: &[u8], b: &[u8]) -> Option<Vec<u8>> {
    let from_b = b.len().min(16);
    let from_a = 16 - from_b;
    (a.len() >= from_a).then(|| [&a[a.len() - from_a..], &b[b.len() - from_b..]].concat())
}

/// Shared prefixes shorter than this are not worth splicing: the whole text is
/// as cheap to hand over.
const SPLICE_MIN: usize = 1024;
/// Appends after which the kept records string is rebuilt flat, so a process
/// kept for a long time does not hold an ever deeper chain of pieces.
const MAX_APPENDS: u32 = 1024;

/// The new snapshot as a JavaScript string: `prefix` (the header line and the
/// records, of which the first `keep` bytes are the old text's) + `tail`.
/// Only what changed crosses the boundary: the records are taken from the
/// kept records string or the caller's string (`slice` of a flat string and
/// `concat` do not copy characters in JavaScript engines), never re-decoded.
/// Returns the string and the records string to keep for the next event.
fn new_string(old: &JsValue, ascii: bool, records: Option<Records>, keep: usize, prefix: &str, tail: &str) -> (JsValue, Option<Records>) {
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

/// Hazard analysis, in the full build only (the lean build for edge hosts leaves it out).
#[cfg(feature = "analysis")]
#[wasm_bindgen]
impl Machine {
    /// The duplicate-delivery hazards of this machine, as `idem lint` reports
    /// them: `[{ code, severity, state, event?, transitions, site?, message, fix,
    /// retentionMs?, cycle?, witness? }]`, errors first. A hazard's
    /// `witness.steps` (`{ event, now, role }`), reduced in order, shows the repeat
    /// being applied a second time.
    ///
    /// ```js
    /// for (const f of machine.analyze()) {
    ///   if (f.severity === "error") console.log(f.code, f.state, f.transitions, f.fix);
    /// }
    /// ```
    pub fn analyze(&self) -> JsValue {
        let findings = crate::analyze::analyze(&self.inner);
        to_js(&findings)
    }
}

/// Import the JSON form of an XState v5 config (`JSON.stringify(machine.config)`)
/// as an idem definition: `{ definition, diagnostics }`, where `diagnostics` are
/// `unrepresentable` findings naming what could not be expressed as data.
///
/// ```js
/// const { definition, diagnostics } = importXState(JSON.stringify(xstateMachine.config));
/// const findings = [...diagnostics, ...new Machine(definition).analyze()];
/// ```
#[cfg(feature = "analysis")]
#[wasm_bindgen(js_name = importXState)]
pub fn import_xstate(config: JsValue) -> Result<JsValue, JsValue> {
    let text = json_text(&config, "xstate config")?;
    let out = crate::xstate::import_json(&text).map_err(|e| js_error(&e))?;
    Ok(to_js(&out))
}

/// The engine version.
#[wasm_bindgen(js_name = version)]
pub fn js_version() -> String {
    crate::version().to_string()
}

/// A new time-ordered event id (48-bit ms timestamp + 80 random bits, Crockford
/// base32, 26 characters, like a ULID), for originators that need a stable id to
/// reuse across their own retries. Call it inside a request, not at module load.
#[wasm_bindgen(js_name = newEventId)]
pub fn new_event_id() -> Result<String, JsValue> {
    let mut rand = [0u8; 10];
    // `crypto.getRandomValues`; an error where the runtime has no Web Crypto
    // (Node before 19 has none on `globalThis`).
    if getrandom::fill(&mut rand).is_err() {
        return Err(js_error(&Error::new(Code::Io, "no random source: crypto.getRandomValues is missing or failed")));
    }
    let ms = js_sys::Date::now() as u64;
    Ok(crate::json::ulid(ms, rand))
}
