//! `Machine`, the exported class: a definition validated once, and the per-event
//! calls on it (`reduce`, `reduceBytes`, `due`, `inspect`, ...). A reduce takes
//! the event's text and the snapshot in by the crossings of `crossing`, starts
//! from the resident decoded snapshot when the caller passes back the one it was
//! handed (`resident`), and sends the outcome out by `outcome`.

use super::*;

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
    /// The callback running the guards and actions given as functions (see `crate::host`).
    host: Option<js_sys::Function>,
}

thread_local! {
    /// The callback of the machine reducing now.
    static CALLING: RefCell<Option<js_sys::Function>> = const { RefCell::new(None) };
}

/// The engine's host callback: the reducing machine's, called with the
/// index and `params`, context and event joined by newlines (JSON text has
/// none of its own); it answers a guard's boolean, or `=` and the JSON text of
/// an action's answer, or `!` and why it failed.
fn call_host(index: u32, params: &str, context: &str, event: &str) -> Result<String, String> {
    let f = CALLING.with(|c| c.borrow().clone()).ok_or("no function implementations were given")?;
    let texts = [params, context, event].join("\n");
    let answer = f.call2(&JsValue::NULL, &index.into(), &texts.into()).unwrap_or(JsValue::UNDEFINED);
    // A guard's boolean crosses as it is, no text to copy.
    if let Some(b) = answer.as_bool() {
        return Ok(if b { "true" } else { "false" }.to_owned());
    }
    let answer = answer.as_string().unwrap_or_default();
    match answer.split_at_checked(1) {
        Some(("=", json)) => Ok(json.to_owned()),
        Some(("!", why)) => Err(why.to_owned()),
        _ => Err("the host answered nothing".to_owned()),
    }
}

#[wasm_bindgen]
impl Machine {
    /// Build a machine from a definition (an object or JSON text). Throws an
    /// `Error` with `code` and `path` when the definition is invalid.
    ///
    /// `hosted` (the package's `Machine` passes it) names the guards and
    /// actions given as functions, one `guards.NAME` or `actions.NAME` a line,
    /// and `call` runs them: `(index, texts)`, see `call_host`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        definition: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string | undefined")] hosted: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Function | undefined")] call: JsValue,
    ) -> Result<Machine, JsValue> {
        let text = json_text(&definition, "definition")?;
        let names = hosted.as_string().unwrap_or_default();
        let host = call.dyn_into::<js_sys::Function>().ok();
        if host.is_some() {
            crate::host::set_host(call_host);
        }
        crate::Machine::from_json_hosted(&text, &names)
            .map(|inner| Machine { inner, resident: RefCell::default(), event_buf: Cell::default(), snapshot_buf: Cell::default(), outcome_buf: Cell::default(), host })
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
        #[wasm_bindgen(js_name = processId, unchecked_param_type = "string")] process: JsValue,
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
        #[wasm_bindgen(js_name = processId, unchecked_param_type = "string")] process: JsValue,
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
        // As text, so that its states and transitions keep the order they were written in.
        js_sys::JSON::parse(&self.inner.definition_json()).unwrap_or(JsValue::NULL)
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
    fn reduce_js(&self, snapshot: JsValue, event: &JsValue, now: f64, process: JsValue, bytes: bool) -> Result<JsValue, JsValue> {
        let now = now_ms(now)?;
        let process = process_id(&process)?;
        let mut buf = self.event_buf.take();
        // This machine's callback while it reduces, the caller's back after (a
        // function may reduce on another machine).
        let before = self.host.as_ref().map(|h| CALLING.with(|c| c.replace(Some(h.clone()))));
        let out = event_text(event, &mut buf).and_then(|n| {
            // SAFETY: TextEncoder wrote these n bytes: UTF-8, whole characters.
            let text = unsafe { std::str::from_utf8_unchecked(&buf[..n]) };
            self.reduce_resident(process, snapshot, text, now, bytes)
        });
        if let Some(before) = before {
            CALLING.with(|c| c.replace(before));
        }
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
        let arg = SnapshotArg::of(code, cap);
        let copied = matches!(arg, SnapshotArg::Copied { .. });
        if !copied {
            self.snapshot_buf.set(buf);
            buf = Vec::new();
        }
        let same = match self.resident.try_borrow_mut() {
            Ok(mut r) if matches!(arg, SnapshotArg::Kept) => r.take_same(&process, &snapshot),
            _ => None,
        };
        if same.is_none() {
            // A snapshot to decode: what keeping it will push out goes first.
            let len = match arg {
                SnapshotArg::Copied { n, .. } | SnapshotArg::Large { n } => Some(n),
                SnapshotArg::Kept => Some(js_length(&snapshot)),
                SnapshotArg::Absent | SnapshotArg::WrongType => None,
            };
            if let (Some(len), Ok(mut r)) = (len, self.resident.try_borrow_mut()) {
                r.make_room(&process, len);
            }
        }
        let source = match (same, arg) {
            (Some(k), _) => Source { current: Current::Loaded(Box::new(k.loaded)), had: true, ascii: k.ascii, records: k.records, known: Some((k.len, k.check)) },
            (None, SnapshotArg::Absent) => Source::none(),
            (None, SnapshotArg::WrongType) => return Err(invalid_argument("snapshot", "null, a string or a Uint8Array", &snapshot)),
            (None, SnapshotArg::Copied { n, form }) => {
                // SAFETY: JavaScript wrote n bytes at the start of the buffer's
                // spare capacity (n <= cap, the room it was given).
                unsafe { buf.set_len(n) };
                let check = (bytes && form == Form::Bytes && n >= 16).then(|| buf[n - 16..].to_vec());
                let (text, ascii) = match form {
                    // SAFETY: n characters became n bytes, so each is ASCII.
                    Form::Ascii => (unsafe { String::from_utf8_unchecked(buf) }, true),
                    // TextEncoder writes UTF-8.
                    Form::Utf8 => (String::from_utf8(buf).unwrap_or_default(), false),
                    // SAFETY: ASCII bytes are valid UTF-8.
                    Form::Bytes if is_ascii(&buf) => (unsafe { String::from_utf8_unchecked(buf) }, false),
                    // Invalid UTF-8 cannot carry a valid checksum: lossy text is refused by the engine.
                    Form::Bytes => (String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()), false),
                };
                Source { current: Current::Owned(text), had: true, ascii, records: None, known: Some((n, check)) }
            }
            // Larger than the room given, or the kept one no longer: as before.
            (None, SnapshotArg::Large { .. } | SnapshotArg::Kept) => match snapshot_text(&snapshot)? {
                Some((t, ascii)) => Source { current: Current::Owned(t), had: true, ascii, records: None, known: None },
                None => Source::none(),
            },
        };
        let Source { current, had, ascii, records, known } = source;
        let crate::outcome::Reduced { outcome: o, after, split } = self.inner.reduce_parts(&process, current, event, now);
        let split = split.unwrap_or(crate::outcome::Split { at: 0, kept_prefix: 0 });
        let (returned, len, ascii, records, check) = match (&o.snapshot, &after) {
            (Some(tail), Some(loaded)) => {
                // The new text is `prefix` (the ledger's own, `at` bytes) + `tail`.
                let prefix = loaded.snap.ledger.prefix(split.at);
                let len = prefix.len() + tail.len();
                if bytes {
                    let b = MEMORY.with(|m| bytes_out(m, prefix.as_ptr() as u32, prefix.len() as u32, tail.as_ptr() as u32, tail.len() as u32));
                    (b, len, false, None, last16(prefix.as_bytes(), tail.as_bytes()))
                } else {
                    let (value, records) = new_string(&snapshot, ascii, records, split.kept_prefix, prefix, tail);
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
                // Through a pointer, so these writers stay a function of their own: the engine
                // compiles a function whole on its first call, and a first event with the small
                // outcome then compiles none of them.
                let f: fn(&JsValue, &crate::Machine, &crate::outcome::Outcome, f64, &JsValue) -> JsValue = outcome_js;
                std::hint::black_box(f)(m, &self.inner, &o, next, &returned)
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

/// What `snapshot_in` found the snapshot argument to be (its numeric code, named).
#[derive(Clone, Copy)]
enum SnapshotArg {
    /// null or undefined: no process yet.
    Absent,
    /// The value kept from the last call for this process (`===`).
    Kept,
    /// Neither a string nor a `Uint8Array`.
    WrongType,
    /// `n` bytes written at the start of the buffer's spare capacity.
    Copied { n: usize, form: Form },
    /// A snapshot of `n` bytes (or characters) that did not fit the room given: not written.
    Large { n: usize },
}

/// How a copied snapshot's bytes came.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// A string whose characters were each one byte.
    Ascii,
    /// A string written as UTF-8.
    Utf8,
    /// A `Uint8Array`'s bytes, as the caller gave them.
    Bytes,
}

impl SnapshotArg {
    /// The argument `snapshot_in` describes by `code` (see its documentation), given `cap` bytes of room.
    fn of(code: f64, cap: usize) -> SnapshotArg {
        if code == -1.0 {
            return SnapshotArg::Absent;
        }
        if code == -2.0 {
            return SnapshotArg::Kept;
        }
        if code < 0.0 {
            return SnapshotArg::WrongType;
        }
        let n = (code / 4.0) as usize;
        let form = match (code % 4.0) as u8 {
            0 => Form::Ascii,
            1 => Form::Utf8,
            3 => Form::Bytes,
            _ => return SnapshotArg::Large { n },
        };
        if n > cap {
            return SnapshotArg::Large { n };
        }
        SnapshotArg::Copied { n, form }
    }
}

/// The snapshot a reduce starts from, and what is known of the caller's value.
struct Source {
    current: Current<'static>,
    /// The caller passed a snapshot (not null).
    had: bool,
    /// The caller's value is a string whose characters are its bytes.
    ascii: bool,
    /// The kept records string, when the snapshot is the resident one.
    records: Option<Records>,
    /// Its length in bytes, and its checksum if bytes, when known without asking JavaScript.
    known: Option<(usize, Option<Vec<u8>>)>,
}

impl Source {
    fn none() -> Source {
        Source { current: Current::None, had: false, ascii: false, records: None, known: None }
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
