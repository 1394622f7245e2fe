//! The JavaScript bindings: the only module that names `wasm_bindgen` or `js_sys`.
//!
//! Values cross the boundary as JSON text (parsed on the JavaScript side with
//! `JSON.parse`), and the snapshot as one opaque string (or `Uint8Array`) that
//! hosts store and load as it is: in through one `TextEncoder.encodeInto` into
//! wasm memory, out as the caller's own string for the unchanged part plus
//! what changed. Errors are real `Error` objects carrying `code` (and `path`
//! where one applies).

use crate::error::{Code, Error};
use crate::json::object;
use crate::reduce::Current;
use crate::snapshot::Loaded;
use std::cell::RefCell;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

fn js_error(e: &Error) -> JsValue {
    let err = js_sys::Error::new(&e.message);
    let _ = js_sys::Reflect::set(&err, &"code".into(), &e.code.as_str().into());
    if let Some(p) = &e.path {
        let _ = js_sys::Reflect::set(&err, &"path".into(), &p.as_str().into());
    }
    err.set_name("IdemError");
    err.into()
}

fn to_js(v: &Value) -> JsValue {
    js_sys::JSON::parse(&crate::json::to_text(v)).unwrap_or(JsValue::NULL)
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
export function utf8(s) { return encoder.encode(s); }\n\
export function ascii_into(s, view) { const r = encoder.encodeInto(s, view); return r.read === s.length && r.written === s.length; }")]
extern "C" {
    /// `TextEncoder.encode`: one native call, where passing a `String` argument
    /// would copy a large snapshot character by character in JavaScript.
    fn utf8(s: &JsValue) -> js_sys::Uint8Array;
    /// `TextEncoder.encodeInto` straight into wasm memory; true when every
    /// character became one byte (the string is ASCII, as snapshots are).
    fn ascii_into(s: &JsValue, view: &js_sys::Uint8Array) -> bool;
}

/// The snapshot text from a JavaScript string (or bytes), `None` for null/undefined,
/// and whether it came from a string that is all ASCII (its characters are its bytes).
fn snapshot_text(v: &JsValue) -> Result<Option<(String, bool)>, JsValue> {
    if v.is_null() || v.is_undefined() {
        return Ok(None);
    }
    let bytes = if let Some(s) = v.dyn_ref::<js_sys::JsString>() {
        let n = s.length() as usize;
        // Spare room for the record a reduce appends when this buffer becomes the ledger's.
        let mut buf: Vec<u8> = Vec::with_capacity(n + 1024);
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
        utf8(v).to_vec()
    } else if let Some(b) = v.dyn_ref::<js_sys::Uint8Array>() {
        let mut buf = Vec::with_capacity(b.length() as usize + 1024);
        buf.resize(b.length() as usize, 0);
        b.copy_to(&mut buf);
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

fn now_ms(now: f64) -> Result<u64, JsValue> {
    if (0.0..=9_007_199_254_740_991.0).contains(&now) {
        Ok(now as u64)
    } else {
        Err(js_error(&Error::new(Code::InvalidEvent, "now must be a non-negative number of milliseconds")))
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
    len: usize,
    /// For bytes, their checksum (last 16 bytes): an array the caller changed
    /// in place is not the kept snapshot any more.
    check: Option<Vec<u8>>,
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
    /// The entry for exactly this snapshot: the process's entry, when the
    /// caller hands back the very value the engine gave it (the same string
    /// object is recognised at once), or an equal copy (compared whole by
    /// JavaScript's `===`), so a tampered copy never stands in for the kept one.
    fn take(&mut self, process: &str, snapshot: &JsValue) -> Option<Kept> {
        let i = self.entries.iter().position(|e| e.process == process)?;
        let e = &self.entries[i];
        if e.len != js_length(snapshot) || e.check != bytes_check(snapshot) || &e.value != snapshot {
            return None;
        }
        Some(self.entries.remove(i))
    }

    fn put(&mut self, kept: Kept) {
        self.entries.retain(|e| e.process != kept.process);
        if kept.len > RESIDENT_BYTES {
            return;
        }
        while self.entries.len() >= RESIDENT_ENTRIES
            || self.entries.iter().map(|e| e.len).sum::<usize>() + kept.len > RESIDENT_BYTES
        {
            self.entries.remove(0);
        }
        self.entries.push(kept);
    }
}

/// The last 16 bytes of a snapshot held as bytes (its checksum), read without
/// copying the rest; `None` for a string.
fn bytes_check(v: &JsValue) -> Option<Vec<u8>> {
    let b = v.dyn_ref::<js_sys::Uint8Array>()?;
    let len = b.length();
    (len >= 16).then(|| b.subarray(len - 16, len).to_vec())
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
            .map(|inner| Machine { inner, resident: RefCell::default() })
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
    /// `processId` scopes default effect keys. Returns
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
        let now = now_ms(now)?;
        let text = json_text(&event, "event")?;
        self.reduce_resident(process.as_deref().unwrap_or(""), snapshot, &text, now, false)
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
        let now = now_ms(now)?;
        let text = json_text(&event, "event")?;
        self.reduce_resident(process.as_deref().unwrap_or(""), snapshot, &text, now, true)
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
        crate::outbox::due(&self.inner, &snapshot, now).map(|items| to_js(&Value::Array(items))).map_err(|e| js_error(&e))
    }

    /// The snapshot as a readable object (state, context, ledger, outbox, timers).
    pub fn inspect(&self, #[wasm_bindgen(unchecked_param_type = "string")] snapshot: JsValue) -> Result<JsValue, JsValue> {
        let snapshot = snapshot_text(&snapshot)?.map(|(t, _)| t).unwrap_or_default();
        crate::inspect(&self.inner, &snapshot).map(|v| to_js(&v)).map_err(|e| js_error(&e))
    }

    /// How long event ids are remembered: `{ defaultMs, perType, maxEntries }`.
    pub fn retention(&self) -> JsValue {
        let r = &self.inner.retention;
        to_js(&object! { "defaultMs": r.default_ms, "perType": r.per_type, "maxEntries": r.max_entries })
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
    /// Reduce, starting from the resident decoded snapshot when the caller's
    /// snapshot is the one it was made from; keep what results for next time.
    /// Returns the outcome as a JavaScript object with `snapshot` set: the new
    /// snapshot (a `Uint8Array` when `bytes`, else a string), or the caller's own
    /// value when unchanged. A new string keeps the caller's string for the
    /// bytes the two share (format 3 appends after the old records), so only
    /// what changed crosses the boundary.
    fn reduce_resident(&self, process: &str, snapshot: JsValue, event: &str, now: u64, bytes: bool) -> Result<JsValue, JsValue> {
        let cached = self.resident.borrow_mut().take(process, &snapshot);
        let (current, had, ascii, records) = match cached {
            Some(kept) => (Current::Loaded(Box::new(kept.loaded)), true, kept.ascii, kept.records),
            None => match snapshot_text(&snapshot)? {
                Some((t, ascii)) => (Current::Owned(t), true, ascii, None),
                None => (Current::None, false, false, None),
            },
        };
        let (o, after) = self.inner.reduce_parts(process, current, event, now);
        let out = js_sys::JSON::parse(&o.to_json_text()).unwrap_or(JsValue::NULL);
        let (returned, len, ascii, records) = match (&o.snapshot, &after) {
            (Some(tail), Some(loaded)) => {
                // The new text is `prefix` (the ledger's own, `at` bytes) + `tail`.
                let at = o.split.unwrap_or(0);
                let prefix = loaded.snap.ledger.prefix(at);
                let len = prefix.len() + tail.len();
                if bytes {
                    let b = js_sys::Uint8Array::new_with_length(len as u32);
                    b.subarray(0, at as u32).copy_from(prefix.as_bytes());
                    b.subarray(at as u32, len as u32).copy_from(tail.as_bytes());
                    (b.into(), len, false, None)
                } else {
                    let (value, records) = new_string(&snapshot, ascii, records, o.kept_prefix, prefix, tail);
                    (value, len, true, records)
                }
            }
            // Unchanged: hand back the caller's own value, no copy.
            (None, _) if had => {
                let len = js_length(&snapshot);
                (snapshot, len, ascii, records)
            }
            _ => (JsValue::NULL, 0, false, None),
        };
        let _ = js_sys::Reflect::set(&out, &"snapshot".into(), &returned);
        if let Some(loaded) = after {
            let check = bytes_check(&returned);
            self.resident.borrow_mut().put(Kept { process: process.to_string(), value: returned, len, check, ascii, records, loaded });
        }
        Ok(out)
    }
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
            let text = if keep == at { base } else { base.concat(&JsValue::from_str(&prefix[keep..])) };
            let value = text.concat(&JsValue::from_str(tail));
            (value.into(), Some(Records { text, len: at, appends: appends + 1 }))
        }
        None => {
            let mut whole = String::with_capacity(at + tail.len());
            whole.push_str(prefix);
            whole.push_str(tail);
            let value = js_sys::JsString::from(whole.as_str());
            let text = value.slice(0, at as u32);
            (value.into(), Some(Records { text, len: at, appends: 0 }))
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
        to_js(&serde_json::to_value(&findings).unwrap_or(Value::Null))
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
    Ok(to_js(&serde_json::json!({ "definition": out.definition, "diagnostics": out.diagnostics })))
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
    getrandom::getrandom(&mut rand)
        .map_err(|e| js_error(&Error::new(Code::Io, format!("no random source: {e}"))))?;
    let ms = js_sys::Date::now() as u64;
    Ok(crate::json::ulid(ms, rand))
}
