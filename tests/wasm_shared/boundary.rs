//! The contract of the boundary itself: what is thrown (real `Error`s with a
//! stable `code`, and `path` for definitions), what is an outcome instead
//! (`rejected` with `error.code`), duplicates answered with the first response,
//! and the opaque snapshot string.

use super::scenarios::{js, machine_text, prop, snap, value};
use idem::wasm::Machine;
use js_sys::{Object, Reflect};
use serde_json::{json, Value};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

// The package's IdemError, whose `instanceof` asks for the brand src/wasm.rs sets.
#[wasm_bindgen::prelude::wasm_bindgen(module = "/pkg/src/error.js")]
extern "C" {
    type IdemError;
}

fn order() -> Machine {
    Machine::new(js(machine_text("order.json")), wasm_bindgen::JsValue::UNDEFINED, wasm_bindgen::JsValue::UNDEFINED).unwrap_or_else(|e| panic!("order.json threw {e:?}"))
}

fn pay(id: &str, payment: &str, amount: u32) -> JsValue {
    js(&json!({ "id": id, "type": "PAYMENT_PARTIAL", "payload": { "paymentId": payment, "amount": amount } }).to_string())
}

/// What was thrown must be a JavaScript `Error` named IdemError with this code.
fn assert_idem_error(thrown: &JsValue, code: &str) {
    assert!(thrown.is_instance_of::<js_sys::Error>(), "thrown value is not an Error: {thrown:?}");
    assert!(thrown.is_instance_of::<IdemError>(), "thrown value is not an IdemError: {thrown:?}");
    assert_eq!(prop(thrown, "name").as_deref(), Some("IdemError"));
    assert_eq!(prop(thrown, "code").as_deref(), Some(code), "{thrown:?}");
    assert!(!prop(thrown, "message").unwrap_or_default().is_empty(), "empty message: {thrown:?}");
}

fn outcome(out: Result<JsValue, JsValue>) -> Value {
    match out {
        Ok(o) => value(&o),
        Err(e) => panic!("reduce threw {e:?}"),
    }
}

#[wasm_bindgen_test]
fn version_is_the_crate_version() {
    assert_eq!(idem::wasm::js_version(), env!("CARGO_PKG_VERSION"));
}

#[wasm_bindgen_test]
fn invalid_definitions_throw_errors_with_code_and_path() {
    let cases = [
        (r#"{"id":"o","initial":"pending","states":{"pending":{"on":{"PAY":"shiped"}},"paid":{}}}"#, "unknown_target", Some("states.pending.on.PAY")),
        (r#"{"id":"o","initial":"nowhere","states":{"pending":{}}}"#, "invalid_initial", Some("initial")),
        (r#"{"id":"o","initial":"a","states":{"a":{"on":{"GO":{"target":"a","guard":{"nope":[1]}}}}}}"#, "invalid_expression", Some("states.a.on.GO.guard")),
    ];
    for (text, code, path) in cases {
        // As an object and as JSON text: the same error.
        for definition in [js(text), JsValue::from_str(text)] {
            match Machine::new(definition, wasm_bindgen::JsValue::UNDEFINED, wasm_bindgen::JsValue::UNDEFINED) {
                Ok(_) => panic!("{text} was accepted"),
                Err(e) => {
                    assert_idem_error(&e, code);
                    assert_eq!(prop(&e, "path").as_deref(), path, "{text}");
                }
            }
        }
    }
    // Text that is not JSON, and an object JSON.stringify cannot serialise (a BigInt).
    let Err(e) = Machine::new(JsValue::from_str(r#"{"id":"o", "initial":"#), wasm_bindgen::JsValue::UNDEFINED, wasm_bindgen::JsValue::UNDEFINED) else { panic!("truncated json was accepted") };
    assert_idem_error(&e, "invalid_json");
    let bigint = Object::new();
    Reflect::set(&bigint, &"id".into(), &js_sys::BigInt::from(1u32).into()).unwrap();
    let Err(e) = Machine::new(bigint.into(), wasm_bindgen::JsValue::UNDEFINED, wasm_bindgen::JsValue::UNDEFINED) else { panic!("a BigInt definition was accepted") };
    assert_idem_error(&e, "invalid_json");
}

#[wasm_bindgen_test]
fn a_definition_as_object_or_text_is_the_same_machine() {
    let text = machine_text("order.json");
    let (a, b) = (order(), Machine::new(JsValue::from_str(text), wasm_bindgen::JsValue::UNDEFINED, wasm_bindgen::JsValue::UNDEFINED).unwrap_or_else(|e| panic!("{e:?}")));
    assert_eq!((a.id(), a.version()), ("order".to_string(), "1".to_string()));
    assert_eq!(a.hash(), b.hash());
    assert!(!a.hash().is_empty());
    assert_eq!(value(&a.definition())["id"], "order");
    assert!(value(&a.event_types()).as_array().unwrap().contains(&json!("PAYMENT_PARTIAL")));
    assert_eq!(value(&a.retention()), json!({ "defaultMs": 86400000, "perType": { "PAYMENT_PARTIAL": 3600000 }, "maxEntries": 1000 }));
}

#[wasm_bindgen_test]
fn bad_now_ms_throws_with_a_code() {
    let m = order();
    let first = outcome(m.reduce(JsValue::NULL, pay("e1", "p1", 40), 1000.0, JsValue::from("o")));
    let snapshot = first["snapshot"].as_str().unwrap().to_string();
    // NaN is what a missing nowMs (undefined) arrives as.
    for (now, code) in [(-1.0, "invalid_now"), (f64::NAN, "missing_now"), (f64::INFINITY, "invalid_now"), (f64::NEG_INFINITY, "invalid_now"), (9_007_199_254_740_992.0, "invalid_now")] {
        let Err(e) = m.reduce(JsValue::from(snapshot.clone()), pay("e2", "p2", 10), now, JsValue::from("o")) else { panic!("reduce accepted nowMs {now}") };
        assert_idem_error(&e, code);
        let Err(e) = m.due(JsValue::from(snapshot.clone()), now) else { panic!("due accepted nowMs {now}") };
        assert_idem_error(&e, code);
    }
    // The largest safe integer is a valid time.
    assert!(m.reduce(JsValue::from(snapshot), pay("e2", "p2", 10), 9_007_199_254_740_991.0, JsValue::from("o")).is_ok());
}

#[wasm_bindgen_test]
fn reduce_without_a_process_id_throws_missing_process_id() {
    // Effect keys are `<process>/<event>:<n>`: without the process two processes reusing an event id
    // would share a key at the gateway, so the call is refused rather than answered.
    let m = order();
    for process in [JsValue::UNDEFINED, JsValue::NULL, JsValue::from("")] {
        for bytes in [false, true] {
            let out = if bytes { m.reduce_bytes(JsValue::NULL, pay("e1", "p1", 40), 1000.0, process.clone()) } else { m.reduce(JsValue::NULL, pay("e1", "p1", 40), 1000.0, process.clone()) };
            let Err(e) = out else { panic!("reduce accepted processId {process:?}") };
            assert_idem_error(&e, "missing_process_id");
            assert_eq!(js_sys::Reflect::get(&e, &"path".into()).unwrap().as_string().as_deref(), Some("processId"));
        }
    }
}

#[wasm_bindgen_test]
fn a_process_id_or_snapshot_of_the_wrong_type_throws_invalid_argument_and_the_machine_goes_on() {
    // The bindings take the process id as a JavaScript value and read it only when it is a
    // string: the glue used to convert any value as a string (a number made it realloc memory it
    // never allocated). pkg/src/checks.js refuses these first; this is for a caller of the raw module.
    let m = order();
    let object: JsValue = Object::new().into();
    let long = JsValue::from("p".repeat(257));
    for (process, path) in [(JsValue::from(1_700_000_000_000.0), "processId"), (object.clone(), "processId"), (js_sys::Array::of1(&"p".into()).into(), "processId"), (JsValue::TRUE, "processId"), (long, "processId")] {
        for bytes in [false, true] {
            let out = if bytes { m.reduce_bytes(JsValue::NULL, pay("e1", "p1", 40), 1000.0, process.clone()) } else { m.reduce(JsValue::NULL, pay("e1", "p1", 40), 1000.0, process.clone()) };
            let Err(e) = out else { panic!("reduce accepted processId {process:?}") };
            assert_idem_error(&e, "invalid_argument");
            assert_eq!(prop(&e, "path").as_deref(), Some(path));
        }
    }
    for snapshot in [JsValue::from(42), object, JsValue::TRUE] {
        let Err(e) = m.reduce(snapshot.clone(), pay("e1", "p1", 40), 1000.0, JsValue::from("o")) else { panic!("reduce accepted snapshot {snapshot:?}") };
        assert_idem_error(&e, "invalid_argument");
        assert_eq!(prop(&e, "path").as_deref(), Some("snapshot"));
        let Err(e) = m.inspect(snapshot.clone()) else { panic!("inspect accepted snapshot {snapshot:?}") };
        assert_idem_error(&e, "invalid_argument");
    }
    // 256 bytes is the longest process id, and the machine still reduces.
    let out = outcome(m.reduce(JsValue::NULL, pay("e1", "p1", 40), 1000.0, JsValue::from("é".repeat(128))));
    assert_eq!(out["status"], "applied");
}

#[wasm_bindgen_test]
fn a_duplicate_replays_the_identical_response() {
    let m = order();
    let first = outcome(m.reduce(JsValue::NULL, pay("e1", "p1", 40), 1000.0, JsValue::from("o")));
    assert_eq!((first["status"].as_str(), first["changed"].as_bool()), (Some("applied"), Some(true)));
    let stored = first["snapshot"].as_str().unwrap().to_string();
    // The client retries the same event, as an object and as JSON text.
    let retry_text = json!({ "id": "e1", "type": "PAYMENT_PARTIAL", "payload": { "paymentId": "p1", "amount": 40 } }).to_string();
    for event in [pay("e1", "p1", 40), JsValue::from_str(&retry_text)] {
        let again = outcome(m.reduce(JsValue::from(stored.clone()), event, 2000.0, JsValue::from("o")));
        assert_eq!(again["status"], "duplicate");
        assert_eq!(again["duplicate"], true);
        assert_eq!(again["changed"], false);
        assert_eq!(again["response"], first["response"]);
        assert_eq!(again["response"], "recorded p1");
        assert_eq!(again["revision"], first["revision"]);
        assert_eq!(again["effects"], json!([]));
        // Nothing to write: the snapshot handed back is the stored one, byte for byte.
        assert_eq!(again["snapshot"].as_str(), Some(stored.as_str()));
    }
    // Same id, different payload: a conflict, never applied.
    let clash = outcome(m.reduce(JsValue::from(stored.clone()), pay("e1", "p1", 41), 3000.0, JsValue::from("o")));
    assert_eq!((clash["status"].as_str(), clash["changed"].as_bool()), (Some("conflict"), Some(false)));
    assert_eq!(clash["error"]["code"], "id_conflict");
    assert_eq!(clash["snapshot"].as_str(), Some(stored.as_str()));
}

#[wasm_bindgen_test]
fn bad_events_and_snapshots_are_rejected_outcomes_not_throws() {
    let m = order();
    let first = outcome(m.reduce(JsValue::NULL, pay("e1", "p1", 40), 1000.0, JsValue::from("o")));
    let stored = first["snapshot"].as_str().unwrap().to_string();
    let cases: [(Option<String>, JsValue, &str); 7] = [
        (Some(stored.clone()), js(r#"{"type":"PAYMENT_PARTIAL","payload":{}}"#), "missing_event_id"),
        (Some(stored.clone()), pay("idem:e9", "p9", 1), "reserved_event"),
        (Some(stored.clone()), js(r#"{"id":"e9","payload":{}}"#), "missing_event_type"),
        (Some(stored.clone()), js(r#"{"id":"e9","type":"NO_SUCH_EVENT"}"#), "unknown_event_type"),
        (Some(stored.clone()), JsValue::from_str(r#"{"id":"e9","#), "invalid_event"),
        (Some("idem2 not a snapshot".into()), pay("e9", "p9", 1), "invalid_snapshot"),
        (Some(stored.replacen("order", "other", 1)), pay("e9", "p9", 1), "invalid_snapshot"),
    ];
    for (snapshot, event, code) in cases {
        let out = outcome(m.reduce(snap(snapshot.clone()), event, 2000.0, JsValue::from("o")));
        assert_eq!(out["status"], "rejected", "{code}: {out}");
        assert_eq!(out["error"]["code"], code, "{out}");
        assert_eq!(out["changed"], false);
        assert_eq!(out["snapshot"].as_str(), snapshot.as_deref(), "a rejected event must leave the snapshot as it was");
    }
}

#[wasm_bindgen_test]
fn the_snapshot_is_an_opaque_ascii_string_and_inspect_reads_it() {
    let m = order();
    let out = outcome(m.reduce(JsValue::NULL, pay("e1", "p1", 40), 1000.0, JsValue::from("o")));
    let snapshot = out["snapshot"].as_str().unwrap();
    assert!(snapshot.starts_with("idem3\n"), "{snapshot}");
    assert!(snapshot.is_ascii());
    let seen = value(&m.inspect(JsValue::from(snapshot.to_string())).unwrap_or_else(|e| panic!("{e:?}")));
    assert_eq!(seen["format"], 3);
    assert_eq!(seen["value"], "pending");
    assert_eq!(seen["context"]["payments"], json!(["p1"]));
    assert_eq!(seen["ledger"][0]["id"], "e1");
    // The objects inspect and due hand over have the members, in their order, of
    // the values the native API returns.
    let native = idem::Machine::from_json(machine_text("order.json")).unwrap();
    let stringify = |v: JsValue| js_sys::JSON::stringify(&v).unwrap().as_string().unwrap();
    let inspected = m.inspect(JsValue::from(snapshot.to_string())).unwrap_or_else(|e| panic!("{e:?}"));
    let in_order = |v: &Value| {
        let mut w = Vec::new();
        idem::json::write_in_order(v, &mut w);
        String::from_utf8(w).unwrap()
    };
    assert_eq!(stringify(inspected), in_order(&idem::inspect(&native, snapshot).unwrap()));
    for now in [0.0, 1000.0, 1e12] {
        let due = m.due(JsValue::from(snapshot.to_string()), now).unwrap_or_else(|e| panic!("{e:?}"));
        let items = idem::outbox::due(&native, snapshot, now as u64).unwrap();
        assert_eq!(stringify(due), in_order(&Value::Array(items)));
    }
    // An unreadable snapshot is an error here (inspect is for people and tools).
    let Err(e) = m.inspect(JsValue::from("idem2 not a snapshot")) else { panic!("inspect accepted garbage") };
    assert!(e.is_instance_of::<js_sys::Error>());
    assert!(e.is_instance_of::<IdemError>());
    assert_eq!(prop(&e, "code").as_deref(), Some("invalid_snapshot"));
    // An Error that only looks like one is not an IdemError.
    let lookalike = js_sys::Error::new("no");
    lookalike.set_name("IdemError");
    let _ = Reflect::set(&lookalike, &"code".into(), &"invalid_snapshot".into());
    assert!(!lookalike.is_instance_of::<IdemError>());
}

#[wasm_bindgen_test]
fn new_event_ids_are_time_ordered_and_distinct() {
    const CROCKFORD: &str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let before = js_sys::Date::now() as u64;
    let ids: Vec<String> = (0..64).map(|_| idem::wasm::new_event_id().unwrap_or_else(|e| panic!("{e:?}"))).collect();
    let after = js_sys::Date::now() as u64;
    let time = |id: &str| id[..10].chars().fold(0u64, |t, c| t * 32 + CROCKFORD.find(c).unwrap() as u64);
    for id in &ids {
        assert_eq!(id.len(), 26, "{id}");
        assert!(id.chars().all(|c| CROCKFORD.contains(c)), "{id}");
        assert!((before..=after).contains(&time(id)), "{id}: timestamp {} outside [{before}, {after}]", time(id));
    }
    assert!(ids.windows(2).all(|w| time(&w[0]) <= time(&w[1])), "timestamps go back: {ids:?}");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "repeated ids: {ids:?}");
}

#[cfg(feature = "analysis")]
#[wasm_bindgen_test]
fn a_hazard_witness_replays_through_reduce() {
    // analyze() promises that reducing a finding's witness steps in order shows
    // the repeat applied a second time: check it across the boundary.
    let m = Machine::new(js(machine_text("fragile-counter.json")), wasm_bindgen::JsValue::UNDEFINED, wasm_bindgen::JsValue::UNDEFINED).unwrap_or_else(|e| panic!("{e:?}"));
    let findings = value(&m.analyze());
    let finding = findings
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "accumulating_assign")
        .unwrap_or_else(|| panic!("no accumulating_assign in {findings}"));
    assert_eq!(finding["severity"], "error");
    let mut snapshot: Option<String> = None;
    let mut statuses = Vec::new();
    for step in finding["witness"]["steps"].as_array().unwrap() {
        let out = outcome(m.reduce(snap(snapshot.clone()), js(&step["event"].to_string()), step["now"].as_f64().unwrap(), JsValue::from("witness")));
        statuses.push(out["status"].as_str().unwrap().to_string());
        snapshot = out["snapshot"].as_str().map(str::to_string);
    }
    assert_eq!(statuses, ["applied", "applied"], "the duplicate of the witness is applied again");
    let context = value(&m.inspect(JsValue::from(snapshot.unwrap())).unwrap_or_else(|e| panic!("{e:?}")))["context"].clone();
    assert_eq!(context["paid"], 80);
    // The robust order machine has no error-severity finding.
    let robust = value(&order().analyze());
    assert!(robust.as_array().unwrap().iter().all(|f| f["severity"] != "error"), "{robust}");
}

#[cfg(feature = "analysis")]
#[wasm_bindgen_test]
fn import_xstate_errors_are_errors_with_a_code() {
    let Err(e) = idem::wasm::import_xstate(JsValue::from_str("{not json")) else { panic!("garbage was imported") };
    assert_idem_error(&e, "invalid_json");
}

/// Ledger records are found by their newlines, sixteen bytes at a time in wasm:
/// ids of every length from 1 to 90 characters (some escaped, some not ASCII)
/// put record ends at every offset of those sixteen- and sixty-four-byte pieces.
/// Each id must then be found again in a snapshot decoded from its string.
#[wasm_bindgen_test]
fn every_record_is_found_whatever_its_length() {
    let id = |n: usize| -> String { (0..n).map(|i| ['a', '"', 'é', '\\', '7', '\n', '😀'][(i * 3 + n) % 7]).collect() };
    let m = order();
    let mut stored: Option<String> = None;
    for n in 1..=90 {
        let snap = stored.clone().map(JsValue::from).unwrap_or(JsValue::NULL);
        let o = outcome(m.reduce(snap, pay(&id(n), &format!("p{n}"), 1), 1000.0 + n as f64, JsValue::from("o")));
        assert_eq!(o["status"], "applied", "{n}: {:?}", o["error"]);
        stored = Some(o["snapshot"].as_str().unwrap().to_string());
    }
    let stored = stored.unwrap();
    for n in (1..=90).rev() {
        // A new Machine: nothing resident, the stored string is decoded.
        let again = outcome(order().reduce(JsValue::from(stored.as_str()), pay(&id(n), &format!("p{n}"), 1), 5000.0, JsValue::from("o")));
        assert_eq!(again["status"], "duplicate", "id of {n} characters: {:?}", again["error"]);
        assert_eq!(again["snapshot"].as_str(), Some(stored.as_str()));
    }
    let fresh = outcome(order().reduce(JsValue::from(stored.as_str()), pay(&id(91), "p91", 1), 5000.0, JsValue::from("o")));
    assert_eq!(fresh["status"], "applied", "{:?}", fresh["error"]);
}

/// The outcome object holds the keys of `Outcome::to_json_text`, in its order
/// and with its values, then `snapshot`: as a string or as bytes, decoded or
/// resident, for outcomes with effects, `original`, `error` and `upgradedFrom`, and the
/// plain ones (a string, null or default response) that cross without JSON.
#[wasm_bindgen_test]
fn outcome_objects_are_the_outcome_text_then_the_snapshot() {
    let v1 = machine_text("order.json");
    let mut def: Value = serde_json::from_str(v1).unwrap();
    def["version"] = json!("2");
    let v2 = def.to_string();
    let pay = |id: &str, p: &str, amount: u32| json!({ "id": id, "type": "PAYMENT_PARTIAL", "payload": { "paymentId": p, "amount": amount } });
    // (machine text, event): applied, duplicate, conflict, rejected, applied with
    // an effect, applied (the default response), its duplicate, ignored (a null
    // response), then a newer version of the machine.
    let steps = [
        (v1, pay("e1", "p1", 60)),
        (v1, pay("e1", "p1", 60)),
        (v1, pay("e1", "p1", 61)),
        (v1, json!({ "id": "e9", "type": "NO_SUCH_EVENT" })),
        (v1, pay("e2", "p2", 40)),
        (v1, json!({ "id": "e3", "type": "SHIP" })),
        (v1, json!({ "id": "e3", "type": "SHIP" })),
        (v1, pay("e5", "p5", 1)),
        (v2.as_str(), json!({ "id": "e4", "type": "SHIP" })),
    ];
    for bytes in [false, true] {
        let machines = [v1, v2.as_str()].map(|t| Machine::new(JsValue::from_str(t), wasm_bindgen::JsValue::UNDEFINED, wasm_bindgen::JsValue::UNDEFINED).unwrap_or_else(|e| panic!("{e:?}")));
        let mut stored: Option<String> = None;
        // The value the engine handed back last, passed back as it is (resident).
        let mut held = JsValue::NULL;
        for (i, (text, event)) in steps.iter().enumerate() {
            let now = 1000 + i as u64;
            let native = idem::Machine::from_json(text).unwrap_or_else(|e| panic!("{e:?}"));
            let want = native.reduce_in("o", stored.as_deref(), event, now);
            let m = &machines[usize::from(*text != v1)];
            let ev = js(&event.to_string());
            let out = if bytes { m.reduce_bytes(held.clone(), ev, now as f64, JsValue::from("o")) } else { m.reduce(held.clone(), ev, now as f64, JsValue::from("o")) };
            let out = out.unwrap_or_else(|e| panic!("step {i} threw {e:?}"));
            let obj: &Object = out.unchecked_ref();
            let keys: Vec<String> = Object::keys(obj).iter().filter_map(|k| k.as_string()).collect();
            assert_eq!(keys.last().map(String::as_str), Some("snapshot"), "step {i}: {keys:?}");
            let rest = Object::assign(&Object::new(), obj);
            Reflect::delete_property(&rest, &"snapshot".into()).unwrap();
            let got = js_sys::JSON::stringify(&rest).ok().and_then(|s| s.as_string());
            assert_eq!(got.as_deref(), Some(want.to_json_text(&native).as_str()), "step {i} (bytes: {bytes})");
            held = Reflect::get(&out, &"snapshot".into()).unwrap();
            let text = if bytes { held.dyn_ref::<js_sys::Uint8Array>().map(|b| String::from_utf8(b.to_vec()).unwrap()) } else { held.as_string() };
            stored = want.snapshot.or(stored);
            assert_eq!(text, stored, "step {i} (bytes: {bytes})");
        }
    }
}

/// The decoded snapshots a Machine keeps between calls (eight processes, 16 MiB
/// at most) never change an outcome. Sixteen processes, the four large ones
/// (~4 MB by the end, more than 16 MiB together) first, each round two or three
/// events each: the first handed the snapshot the process was last given (kept,
/// or pushed out by the others and decoded again) or, every third time, an older
/// one of its own; the second the one the first handed back (kept); the third,
/// every other time, the one the second was handed while the second's own is kept
/// (decoded; the kept entry dropped before the copy). Each outcome is the
/// engine's for the same text.
#[wasm_bindgen_test]
fn kept_snapshots_never_change_an_outcome() {
    let def = json!({
        "id": "blobs", "version": "1", "initial": "open",
        "context": { "blobs": [] },
        "limits": { "maxPayloadBytes": 1 << 20, "maxSnapshotBytes": 64 << 20 },
        "states": { "open": { "on": { "ADD": [{ "actions": [{ "assign": {
            "blobs": { "merge": [{ "var": "context.blobs" }, [{ "var": "event.payload.blob" }]] }
        } }] }] } } }
    })
    .to_string();
    let m = Machine::new(JsValue::from_str(&def), wasm_bindgen::JsValue::UNDEFINED, wasm_bindgen::JsValue::UNDEFINED).unwrap_or_else(|e| panic!("{e:?}"));
    let native = idem::Machine::from_json(&def).unwrap_or_else(|e| panic!("{e:?}"));
    const PROCESSES: usize = 16;
    const LARGE: usize = 4;
    // Per process: the JavaScript value last handed back, its text, and the text before it.
    let mut held: Vec<(JsValue, Option<String>, Option<String>)> = vec![(JsValue::NULL, None, None); PROCESSES];
    let (mut older_given, mut largest) = (0, 0);
    for round in 0..3usize {
        for (p, h) in held.iter_mut().enumerate() {
            for step in 0..if (p + round) % 2 == 0 { 3 } else { 2 } {
                let letter = char::from(b'a' + ((p * 2 + round * 5 + step) % 26) as u8);
                let blob: String = std::iter::repeat_n(letter, if p < LARGE { 700_000 } else { 100 }).collect();
                let event = json!({ "id": format!("p{p}-e{round}{step}"), "type": "ADD", "payload": { "blob": blob } });
                let (given, text) = if step == 2 || (step == 0 && round >= 1 && (p + round) % 3 == 0) {
                    older_given += 1;
                    (snap(h.2.clone()), h.2.clone())
                } else {
                    (h.0.clone(), h.1.clone())
                };
                let process = format!("process-{p}");
                let now = (1_000 + round * 2 + step) as u64;
                let want = native.reduce_in(&process, text.as_deref(), &event, now);
                assert_eq!(want.status.as_str(), "applied", "{process} event {round}{step}: {:?}", want.error);
                let out = m.reduce(given, js(&event.to_string()), now as f64, JsValue::from(process.as_str()));
                let out = out.unwrap_or_else(|e| panic!("{process} event {round}{step} threw {e:?}"));
                let mut got = value(&out);
                let snapshot = got.as_object_mut().and_then(|o| o.remove("snapshot"));
                let want_json: Value = serde_json::from_str(&want.to_json_text(&native)).unwrap();
                assert_eq!(got, want_json, "{process} event {round}{step}");
                assert_eq!(snapshot.as_ref().and_then(Value::as_str), want.snapshot.as_deref(), "{process} event {round}{step}");
                largest = largest.max(want.snapshot.as_ref().map_or(0, String::len));
                *h = (Reflect::get(&out, &"snapshot".into()).unwrap(), want.snapshot, text);
            }
        }
    }
    assert!(older_given >= 30, "only {older_given} older snapshots handed back");
    assert!(largest * LARGE > 16 << 20, "the large processes ({largest} B each) fit the 16 MiB kept");
}

/// Named implementations as data run through the wasm module as in Rust, and
/// a name nothing implements throws a real `Error` coded `unimplemented`.
#[wasm_bindgen_test]
fn named_implementations_run_and_missing_ones_throw_unimplemented() {
    let def = json!({
        "id": "tab", "initial": "open", "context": { "total": 0 },
        "implementations": {
            "guards": { "atLeast": { ">=": [{ "var": "event.payload.amount" }, { "var": "params.min" }] } },
            "actions": { "add": [{ "assign": { "total": { "+": [{ "var": "context.total" }, { "var": "event.payload.amount" }] } } }] }
        },
        "states": { "open": { "on": { "ADD": { "guard": { "type": "atLeast", "params": { "min": 10 } }, "actions": ["add"] } } } }
    });
    let m = Machine::new(js(&def.to_string()), wasm_bindgen::JsValue::UNDEFINED, wasm_bindgen::JsValue::UNDEFINED).unwrap_or_else(|e| panic!("{e:?}"));
    let add = |id: &str, amount: u32| js(&json!({ "id": id, "type": "ADD", "payload": { "amount": amount } }).to_string());
    let first = value(&m.reduce(JsValue::NULL, add("e1", 12), 1000.0, JsValue::from("t")).unwrap());
    assert_eq!(first["status"], "applied", "{first}");
    let snapshot = JsValue::from(first["snapshot"].as_str().unwrap());
    let context = value(&m.inspect(snapshot.clone()).unwrap_or_else(|e| panic!("{e:?}")))["context"].clone();
    assert_eq!(context, json!({ "total": 12 }));
    let low = value(&m.reduce(snapshot, add("e2", 9), 1001.0, JsValue::from("t")).unwrap());
    assert_eq!(low["status"], "ignored", "below params.min: {low}");

    let mut missing = def.clone();
    missing["states"]["open"]["entry"] = json!(["greet"]);
    let Err(e) = Machine::new(js(&missing.to_string()), wasm_bindgen::JsValue::UNDEFINED, wasm_bindgen::JsValue::UNDEFINED) else { panic!("an unimplemented name was accepted") };
    assert_idem_error(&e, "unimplemented");
    assert_eq!(prop(&e, "path").as_deref(), Some("states.open.entry[0]"));
    assert!(prop(&e, "message").unwrap().contains("action \"greet\""), "{e:?}");
}
