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
//! a changed snapshot), and once for each guard or action given as a function
//! (`machine::call_host`). What is not asked for per event (`inspect`, `due`,
//! `retention`, `analyze`) leaves as plain objects through serde-wasm-bindgen.
//! Errors are real `Error` objects carrying `code` (and `path` where one applies).
//!
//! Here are the errors and values crossing the boundary and the free functions
//! (`version`, `newEventId`, `importXState`); `checkMachine` and the command line
//! (`runCli`) are in `check` and `cli`; the class `Machine` is in
//! `machine`, the inline JavaScript of the per-event crossings in `crossing`,
//! the outcome and the new snapshot string in `outcome`, the decoded snapshots
//! kept between calls in `resident`.
//!
//! The definition comes in as JSON text (`JSON.stringify` of an object):
//! `JSON.stringify` refuses a cyclic object with an error, where a deserializer
//! walking the object would recurse until the stack runs out, and the engine's
//! parser bounds the nesting. An integer beyond 2^53, which serde-wasm-bindgen
//! refuses, goes out through `JSON.parse`, which rounds it as JavaScript does.
//! `reduce` and `reduceBytes` require the process id (`missing_process_id`:
//! effect keys are `<process>/<event>:<n>`, so two processes reusing an event id
//! would otherwise share one at the gateway); it crosses as a JavaScript value,
//! read only when it is a string of at most 256 bytes (`invalid_argument`
//! otherwise), since a `String` parameter's glue converts whatever it is given.
//! A missing `nowMs` is `missing_now`, one out of range `invalid_now`.
//!
//! The core never calls into the host: JavaScript's `Number` of a text,
//! `String` of a number and `%` are Rust (`float`, `expr`), checked against the
//! JavaScript engine by the wasm suites. Only `newEventId` draws on
//! `crypto.getRandomValues` (through `getrandom`). Byte arrays come in by one
//! `set` (`crossing::array_vec`).

use crate::error::{Code, Error};
use crate::json::object;
use crate::reduce::Current;
use crate::snapshot::Loaded;
use std::cell::{Cell, RefCell};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[cfg(feature = "analysis")]
mod check;
#[cfg(feature = "analysis")]
mod cli;
mod crossing;
mod machine;
mod outcome;
mod resident;

use crossing::*;
use outcome::*;
use resident::*;

pub use machine::Machine;

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

/// `nowMs` as the engine's clock: missing (JavaScript's `undefined` arrives as
/// NaN) is `missing_now`; negative, infinite or past 2^53 − 1 is `invalid_now`.
/// It stays an `f64` parameter: the glue converts it with `+nowMs`, which may
/// throw (a BigInt, a Symbol) but writes nothing to wasm memory; the entries'
/// `Machine` (pkg/src/checks.js) refuses anything but a number before that.
fn now_ms(now: f64) -> Result<u64, JsValue> {
    if (0.0..=9_007_199_254_740_991.0).contains(&now) {
        Ok(now as u64)
    } else if now.is_nan() {
        Err(js_error(&Error::new(Code::MissingNow, "nowMs is missing or not a number: pass the host's clock (Date.now())")))
    } else {
        Err(js_error(&Error::new(Code::InvalidNow, "nowMs must be a number of milliseconds from 0 to 2^53 - 1")))
    }
}

/// The longest process id, in bytes of UTF-8 (an event id's limit; pkg/src/checks.js says the same).
const MAX_PROCESS_ID_BYTES: usize = 256;

/// The process id a reduce scopes its effect keys with (`<process>/<event>:<n>`):
/// required, so two processes that reuse an event id never share a key at the
/// gateway. Taken as a `JsValue` and read only when it is a string: a `String`
/// parameter is converted by the glue without a look at its type, and a number
/// there made it `realloc` memory it never allocated (a trap, and a broken
/// allocator for every later call).
fn process_id(process: &JsValue) -> Result<String, JsValue> {
    let coded = |code, message: String| {
        let mut e = Error::new(code, message);
        e.path = Some("processId".into());
        Err(js_error(&e))
    };
    match process.as_string() {
        Some(p) if !p.is_empty() && p.len() <= MAX_PROCESS_ID_BYTES => Ok(p),
        Some(p) if !p.is_empty() => coded(Code::InvalidArgument, format!("processId must be at most {MAX_PROCESS_ID_BYTES} bytes of UTF-8, got {}", p.len())),
        Some(_) => coded(Code::MissingProcessId, "processId is missing or empty: reduce scopes the effect keys it makes by it".into()),
        None if process.is_undefined() || process.is_null() => coded(Code::MissingProcessId, "processId is missing or empty: reduce scopes the effect keys it makes by it".into()),
        None => Err(invalid_argument("processId", "a non-empty string", process)),
    }
}

/// What kind of JavaScript value `v` is, for a message (`a number`, `an object`).
fn type_name(v: &JsValue) -> String {
    if v.is_null() {
        return "null".into();
    }
    if js_sys::Array::is_array(v) {
        return "an array".into();
    }
    match v.js_typeof().as_string().as_deref() {
        Some("object") => "an object".into(),
        Some("undefined") => "undefined".into(),
        Some(t) => format!("a {t}"),
        None => "a value".into(),
    }
}

/// The `invalid_argument` error for the argument `name`, which must be `expected` and is `got`.
fn invalid_argument(name: &str, expected: &str, got: &JsValue) -> JsValue {
    let mut e = Error::new(Code::InvalidArgument, format!("{name} must be {expected}, got {}", type_name(got)));
    e.path = Some(name.into());
    js_error(&e)
}

/// Import the JSON form of an XState v5 config (`JSON.stringify(machine.config)`)
/// as an idem definition: `{ definition, diagnostics, kept, needs }`, where
/// `diagnostics` are `unrepresentable` findings naming what could not be
/// expressed as data, and `needs` the named guards and actions whose stand-ins
/// in `definition.implementations` the user replaces with data.
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
