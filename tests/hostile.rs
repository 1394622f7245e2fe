//! The catalogue of hostile inputs: one test per row, each asserting the
//! stable error code the input gets (or, for inputs that are legal but
//! dangerous in other languages, that they pass through unchanged).
//! The table in docs/hostile-inputs.md lists the same rows.

use idem::{Code, Machine, Outcome, Status};
use serde_json::{json, Value};
use std::process::Command;

const ORDER: &str = include_str!("machines/order.json");

fn order() -> Machine {
    Machine::from_json(ORDER).expect("order machine loads")
}

fn machine(def: Value) -> Machine {
    Machine::from_value(def).expect("test machine loads")
}

fn pay(id: &str, payment: &str, amount: u64) -> Value {
    json!({ "id": id, "type": "PAYMENT_PARTIAL", "payload": { "paymentId": payment, "amount": amount } })
}

fn code(o: &Outcome) -> &'static str {
    o.error.as_ref().map(|e| e.code.as_str()).unwrap_or("none")
}

/// A rejected outcome with `code` that writes nothing.
fn assert_rejected(o: &Outcome, expected: &str) {
    assert_eq!(o.status, Status::Rejected, "expected a rejection with {expected}, got {:?}", o.status);
    assert_eq!(code(o), expected, "{:?}", o.error);
    assert!(o.snapshot.is_none(), "a rejected outcome must not write");
    assert!(o.effects.is_empty());
}

fn def_code(text: &str) -> &'static str {
    match Machine::from_json(text) {
        Ok(_) => "none",
        Err(e) => e.code.as_str(),
    }
}

/// `depth` levels of arrays around a number.
fn nested(depth: usize) -> String {
    "[".repeat(depth) + "1" + &"]".repeat(depth)
}

fn nested_value(depth: usize) -> Value {
    serde_json::from_str(&nested(depth)).expect("within serde's recursion limit")
}

/// A snapshot after one applied payment.
fn order_snapshot() -> String {
    order().reduce_in("order-1", None, &pay("e1", "p1", 40), 1_000).snapshot.expect("applied")
}

/// The readable body of a snapshot, as format 1 JSON (which the engine still reads).
fn body(snapshot: &str) -> Value {
    let mut v = idem::Snapshot::decode(snapshot, usize::MAX).expect("a snapshot").to_value();
    v["format"] = json!(1);
    v
}

/// Re-encode a (modified) body as format 1 with a valid checksum: a forged snapshot
/// that passes the integrity check and must be refused by the checks behind it.
fn forge(body: &Value) -> String {
    let mut text = serde_json::to_string(body).unwrap();
    let h = idem::json::hash64(text.as_bytes());
    text.pop();
    text.push_str(&format!(",\"check\":\"{h:016x}\"}}"));
    text
}

// ---------------------------------------------------------------------------
// Sizes

#[test]
fn event_id_over_256_bytes_is_event_id_too_long() {
    let m = order();
    let o = m.reduce(None, &pay(&"x".repeat(257), "p1", 1), 0);
    assert_rejected(&o, "event_id_too_long");
    // 256 bytes counted in bytes, not characters: 86 three-byte characters are 258 bytes.
    let o = m.reduce(None, &pay(&"€".repeat(86), "p1", 1), 0);
    assert_rejected(&o, "event_id_too_long");
    let o = m.reduce(None, &pay(&"x".repeat(256), "p1", 1), 0);
    assert_eq!(o.status, Status::Applied, "256 bytes is the limit, inclusive");
}

#[test]
fn payload_over_the_limit_is_payload_too_large() {
    let m = order();
    let big = "x".repeat(64 * 1024);
    let o = m.reduce(None, &json!({ "id": "e1", "type": "PAYMENT_PARTIAL", "payload": { "paymentId": big, "amount": 1 } }), 0);
    assert_rejected(&o, "payload_too_large");
    // A machine can lower the limit.
    let small = machine(json!({
        "id": "small", "initial": "a", "limits": { "maxPayloadBytes": 16 },
        "states": { "a": { "on": { "E": "a" } } }
    }));
    assert_rejected(&small.reduce(None, &json!({ "id": "e1", "type": "E", "payload": { "k": "0123456789" } }), 0), "payload_too_large");
    assert_eq!(small.reduce(None, &json!({ "id": "e1", "type": "E", "payload": { "k": 1 } }), 0).status, Status::Applied);
}

#[test]
fn event_text_over_the_limit_is_payload_too_large_before_parsing() {
    let m = order();
    // Not even JSON: refused on its size alone, never parsed.
    let text = "{".repeat(m.limits.max_payload_bytes + m.limits.max_id_bytes + 4097);
    assert_rejected(&m.reduce_in("order-1", None, &text, 0), "payload_too_large");
}

#[test]
fn definition_over_one_mib_is_definition_too_large() {
    let mut text = String::from(r#"{"id":"big","initial":"a","description":""#);
    text.push_str(&"x".repeat(1 << 20));
    text.push_str(r#"","states":{"a":{}}}"#);
    assert_eq!(def_code(&text), "definition_too_large");
}

#[test]
fn snapshot_over_the_machine_limit_is_snapshot_too_large() {
    let def = json!({
        "id": "notes", "initial": "open", "limits": { "maxSnapshotBytes": 1024 }, "context": { "notes": [] },
        "states": { "open": { "on": { "NOTE": { "actions": [{ "assign": {
            "notes": { "merge": [{ "var": "context.notes" }, [{ "var": "event.payload.text" }]] } } }] } } } }
    });
    let m = machine(def);
    let long = "x".repeat(2000);
    // A snapshot text over the limit is refused before anything is decoded.
    let padded = format!("{}{}", " ".repeat(1025), order_snapshot());
    assert_rejected(&m.reduce(Some(&padded), &json!({ "id": "n1", "type": "NOTE", "payload": { "text": "a" } }), 0), "snapshot_too_large");
    // Nor does reduce write a snapshot that it would refuse to load.
    let o = m.reduce(None, &json!({ "id": "n1", "type": "NOTE", "payload": { "text": long } }), 0);
    if let Some(s) = &o.snapshot {
        assert!(
            s.len() <= 1024,
            "reduce wrote a {}-byte snapshot over the machine's maxSnapshotBytes of 1024: the next event on this process is refused with snapshot_too_large",
            s.len()
        );
    }
    assert_rejected(&o, "snapshot_too_large");
}

#[test]
fn recorded_ignored_events_cannot_grow_the_snapshot_past_the_limit() {
    // With recordIgnored, every ignored id is written to the ledger: the snapshot grows without a transition.
    let m = machine(json!({
        "id": "quiet", "initial": "a", "recordIgnored": true, "limits": { "maxSnapshotBytes": 2048 },
        "states": { "a": { "on": { "E": { "guard": false, "target": "a" }, "START": { "target": "a" } } } }
    }));
    // A process is created by the first event it accepts.
    let mut snap = m.reduce(None, &json!({ "id": "start", "type": "START" }), 0).snapshot;
    assert!(snap.is_some());
    for i in 0..20 {
        let e = json!({ "id": format!("{i:0>250}"), "type": "E" });
        let o = m.reduce(snap.as_deref(), &e, i);
        if let Some(s) = &o.snapshot {
            assert!(s.len() <= 2048, "event {i}: a recorded ignored event made the snapshot {} bytes, over the 2048 allowed", s.len());
            snap = o.snapshot;
        } else {
            assert_rejected(&o, "snapshot_too_large");
            return;
        }
    }
    panic!("20 ids of 250 bytes fit in 2048 bytes?");
}

// ---------------------------------------------------------------------------
// Nesting

#[test]
fn deep_payload_is_nesting_too_deep() {
    let m = order();
    let e = json!({ "id": "e1", "type": "PAYMENT_PARTIAL", "payload": { "deep": nested_value(100) } });
    assert_rejected(&m.reduce(None, &e, 0), "nesting_too_deep");
    let text = format!(r#"{{"id":"e1","type":"PAYMENT_PARTIAL","payload":{}}}"#, nested(100));
    assert_rejected(&m.reduce_in("", None, &text, 0), "nesting_too_deep");
    // Past the parser's own recursion limit the text is not valid JSON for us.
    let text = format!(r#"{{"id":"e1","type":"PAYMENT_PARTIAL","payload":{}}}"#, nested(10_000));
    assert_rejected(&m.reduce_in("", None, &text, 0), "invalid_event");
    // 60 levels are fine.
    let e = json!({ "id": "e1", "type": "PAYMENT_PARTIAL", "payload": { "paymentId": "p", "amount": 1, "deep": nested_value(60) } });
    assert_eq!(m.reduce(None, &e, 0).status, Status::Applied);
}

#[test]
fn deep_definition_is_nesting_too_deep() {
    let text = format!(r#"{{"id":"d","initial":"a","context":{{"x":{}}},"states":{{"a":{{}}}}}}"#, nested(100));
    assert_eq!(def_code(&text), "nesting_too_deep");
    // Deeply nested states hit the same bound.
    let mut states = String::from("{}");
    for _ in 0..40 {
        states = format!(r#"{{"initial":"s","states":{{"s":{states}}}}}"#);
    }
    let text = format!(r#"{{"id":"d","initial":"s","states":{{"s":{states}}}}}"#);
    assert_eq!(def_code(&text), "nesting_too_deep");
    let text = format!(r#"{{"id":"d","initial":"a","context":{{"x":{}}},"states":{{"a":{{}}}}}}"#, nested(100_000));
    assert_eq!(def_code(&text), "invalid_json");
}

#[test]
fn deep_expression_is_nesting_too_deep() {
    let mut guard = json!({ "var": "context.n" });
    for _ in 0..70 {
        guard = json!({ "!": [guard] });
    }
    let def = json!({ "id": "g", "initial": "a", "states": { "a": { "on": { "E": { "guard": guard, "target": "a" } } } } });
    assert_eq!(Machine::from_value(def).unwrap_err().code.as_str(), "nesting_too_deep");
}

#[test]
fn deep_snapshot_is_nesting_too_deep() {
    let mut b = body(&order_snapshot());
    b["context"]["deep"] = nested_value(100);
    let o = order().reduce_in("order-1", Some(&forge(&b)), &pay("e2", "p2", 1), 2_000);
    assert_rejected(&o, "nesting_too_deep");
}

/// Reduce never writes a snapshot nested deeper than it reads one: such a
/// snapshot would refuse every later event of its process, and `inspect` too.
#[test]
fn reduce_never_writes_a_snapshot_nested_deeper_than_it_reads() {
    // An assign that wraps the context's value in one more array on every event.
    let m = machine(json!({
        "id": "wrap", "initial": "a", "context": { "x": 0 },
        "states": { "a": { "on": {
            "WRAP": { "actions": [{ "assign": { "x": [{ "var": "context.x" }] } }] },
            "RESET": { "actions": [{ "assign": { "x": 0 } }] }
        } } }
    }));
    let mut snap: Option<String> = None;
    let mut applied = 0;
    for i in 0..100 {
        let o = m.reduce(snap.as_deref(), &json!({ "id": format!("w{i}"), "type": "WRAP" }), i);
        if o.status != Status::Applied {
            assert_rejected(&o, "nesting_too_deep");
            break;
        }
        applied += 1;
        snap = o.snapshot;
    }
    assert!((55..64).contains(&applied), "{applied} wraps applied");
    // The last snapshot written still reads, and its process goes on.
    let last = snap.unwrap();
    idem::inspect(&m, &last).expect("the last snapshot written reads back");
    let o = m.reduce(Some(&last), &json!({ "id": "r", "type": "RESET" }), 1_000);
    assert_eq!(o.status, Status::Applied, "{:?}", o.error);

    // An effect payload as deep as an event payload may be, one level down in the outbox.
    let m = machine(json!({
        "id": "fx", "initial": "a",
        "states": { "a": { "on": {
            "SEND": { "actions": [{ "effect": { "type": "ship", "payload": { "var": "event.payload.d" } } }] }
        } } }
    }));
    let e = json!({ "id": "s1", "type": "SEND", "payload": { "d": nested_value(62) } });
    assert_rejected(&m.reduce(None, &e, 0), "nesting_too_deep");
    let e = json!({ "id": "s2", "type": "SEND", "payload": { "d": nested_value(55) } });
    let o = m.reduce(None, &e, 0);
    assert_eq!(o.status, Status::Applied, "{:?}", o.error);
    let s = o.snapshot.unwrap();
    idem::inspect(&m, &s).expect("an effect payload within the bound reads back");
    // Its report: a result as deep as an event payload may carry is refused, not written.
    let key = o.effects[0].key.clone();
    let started = m.reduce(Some(&s), &json!({ "id": "st", "type": "idem.effect.started", "payload": { "key": key } }), 1);
    assert_eq!(started.status, Status::Applied, "{:?}", started.error);
    let s = started.snapshot.unwrap();
    let report = json!({ "id": "ok", "type": "idem.effect.succeeded", "payload": { "key": key, "result": nested_value(62) } });
    assert_rejected(&m.reduce(Some(&s), &report, 2), "nesting_too_deep");
    let report = json!({ "id": "ok", "type": "idem.effect.succeeded", "payload": { "key": key, "result": nested_value(50) } });
    let o = m.reduce(Some(&s), &report, 2);
    assert_eq!(o.status, Status::Applied, "{:?}", o.error);
    idem::inspect(&m, o.snapshot.as_deref().unwrap()).expect("a result within the bound reads back");
}

// ---------------------------------------------------------------------------
// Encoding

fn scratch_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("idem-hostile-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run the CLI; return its exit status and the error code it printed on stderr.
fn cli(args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_idem")).args(args).output().expect("the idem binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let err: Value = serde_json::from_str(stderr.trim()).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), err, String::from_utf8_lossy(&out.stdout).to_string())
}

#[test]
fn invalid_utf8_event_file_is_invalid_json_in_the_cli() {
    let d = scratch_dir("utf8-event");
    let (m, e) = (d.join("m.json"), d.join("e.json"));
    std::fs::write(&m, ORDER).unwrap();
    let mut bytes = br#"{"id":"e1","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p"#.to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe, 0xc3]);
    bytes.extend_from_slice(br#"","amount":1}}"#);
    std::fs::write(&e, bytes).unwrap();
    let (status, err, stdout) = cli(&["reduce", "--process", "p-1", "--machine", m.to_str().unwrap(), "--event", e.to_str().unwrap(), "--now", "1"]);
    assert_eq!(status, 2);
    assert_eq!(err["code"], "invalid_json", "{err}");
    assert!(stdout.is_empty(), "nothing is reduced: {stdout}");
    // The same event as valid UTF-8 is applied.
    std::fs::write(&e, pay("e1", "p1", 1).to_string()).unwrap();
    let (status, _, stdout) = cli(&["reduce", "--process", "p-1", "--machine", m.to_str().unwrap(), "--event", e.to_str().unwrap(), "--now", "1"]);
    assert_eq!(status, 0);
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["status"], "applied");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn invalid_utf8_machine_and_snapshot_files_are_invalid_json_in_the_cli() {
    let d = scratch_dir("utf8-files");
    let (m, bad, e) = (d.join("m.json"), d.join("bad.json"), d.join("e.json"));
    std::fs::write(&m, ORDER).unwrap();
    std::fs::write(&e, pay("e1", "p1", 1).to_string()).unwrap();
    let mut snap = order_snapshot().into_bytes();
    snap[20] = 0xff;
    std::fs::write(&bad, &snap).unwrap();
    let (status, err, _) = cli(&["inspect", "--machine", m.to_str().unwrap(), "--snapshot", bad.to_str().unwrap()]);
    assert_eq!((status, err["code"].as_str()), (2, Some("invalid_json")), "{err}");
    let (status, err, _) = cli(&["reduce", "--process", "p-1", "--machine", bad.to_str().unwrap(), "--event", e.to_str().unwrap(), "--now", "1"]);
    assert_eq!((status, err["code"].as_str()), (2, Some("invalid_json")), "{err}");
    // A file that is not there is an io error.
    let missing = d.join("missing.json");
    let (status, err, _) = cli(&["reduce", "--process", "p-1", "--machine", missing.to_str().unwrap(), "--event", e.to_str().unwrap(), "--now", "1"]);
    assert_eq!((status, err["code"].as_str()), (2, Some("io")), "{err}");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn lone_surrogate_escape_in_event_text_is_invalid_event() {
    let m = order();
    let text = r#"{"id":"e\ud800","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p1","amount":1}}"#;
    assert_rejected(&m.reduce_in("", None, text, 0), "invalid_event");
}

#[test]
fn control_characters_and_unicode_in_ids_round_trip() {
    let m = order();
    let id = "e\u{0}\u{1f}\u{202e}\u{feff}😀\"\\";
    let first = m.reduce_in("order-1", None, &pay(id, "p\u{0}", 1), 0);
    assert_eq!(first.status, Status::Applied);
    let s = first.snapshot.unwrap();
    let again = m.reduce_in("order-1", Some(&s), &pay(id, "p\u{0}", 1), 1);
    assert_eq!(again.status, Status::Duplicate);
    assert_eq!(idem::inspect(&m, &s).unwrap()["ledger"][0]["id"], id);
}

// ---------------------------------------------------------------------------
// Prototype-polluting keys: plain keys here, kept as data end to end

#[test]
fn proto_keys_in_payload_and_context_round_trip() {
    let m = machine(json!({
        "id": "proto", "initial": "open",
        "context": { "__proto__": { "admin": false }, "constructor": "ctx", "prototype": null },
        "states": { "open": { "on": { "SET": { "actions": [
            { "assign": {
                "__proto__": { "var": "event.payload.__proto__" },
                "constructor": { "var": "event.payload.constructor" }
            } },
            { "respond": { "var": "event.payload" } }
        ] } } } }
    }));
    let payload = json!({ "__proto__": { "admin": true }, "constructor": { "prototype": { "polluted": 1 } } });
    let e = json!({ "id": "e1", "type": "SET", "payload": payload });
    let o = m.reduce_in("p", None, &e, 0);
    assert_eq!(o.status, Status::Applied, "{:?}", o.error);
    assert_eq!(o.response, payload);
    let s = o.snapshot.unwrap();
    let ctx = &idem::inspect(&m, &s).unwrap()["context"];
    assert_eq!(ctx["__proto__"], json!({ "admin": true }));
    assert_eq!(ctx["constructor"], json!({ "prototype": { "polluted": 1 } }));
    assert_eq!(ctx["prototype"], Value::Null);
    // The same payload with its keys in another order is the same event.
    let reordered: Value =
        serde_json::from_str(r#"{"constructor":{"prototype":{"polluted":1}},"__proto__":{"admin":true}}"#).unwrap();
    let again = m.reduce_in("p", Some(&s), &json!({ "id": "e1", "type": "SET", "payload": reordered }), 1);
    assert_eq!(again.status, Status::Duplicate);
    assert_eq!(again.response, payload);
}

#[test]
fn proto_keys_as_event_fields_are_invalid_event() {
    let m = order();
    let text = r#"{"id":"e1","type":"PAYMENT_PARTIAL","payload":{},"__proto__":{"type":"CANCEL"}}"#;
    assert_rejected(&m.reduce_in("", None, text, 0), "invalid_event");
}

#[test]
fn proto_and_constructor_as_event_types_and_state_names_are_plain_names() {
    let m = machine(json!({
        "id": "names", "initial": "__proto__",
        "states": { "__proto__": { "on": { "constructor": "toString" } }, "toString": { "on": { "__proto__": "__proto__" } } }
    }));
    let o = m.reduce(None, &json!({ "id": "e1", "type": "constructor" }), 0);
    assert_eq!((o.status, o.state.clone()), (Status::Applied, json!("toString")));
    assert_rejected(&m.reduce(None, &json!({ "id": "e1", "type": "hasOwnProperty" }), 0), "unknown_event_type");
}

// ---------------------------------------------------------------------------
// Identity across processes

#[test]
fn event_ids_colliding_across_processes_are_applied_to_each() {
    let m = order();
    let a = m.reduce_in("order-1", None, &pay("e1", "p1", 100), 0);
    let b = m.reduce_in("order-2", None, &pay("e1", "p1", 100), 0);
    assert_eq!((a.status, b.status), (Status::Applied, Status::Applied), "ledgers are per process");
    assert_eq!(a.effects.len(), 1);
    assert_eq!(b.effects.len(), 1);
    assert_ne!(a.effects[0].key, b.effects[0].key, "effect keys are scoped by the process name");
    assert_eq!(a.effects[0].key, "order-1/e1:0");
    // Unnamed processes share keys: the host must name its processes.
    let c = m.reduce_in("", None, &pay("e1", "p1", 100), 0);
    assert_eq!(c.effects[0].key, "e1:0");
}

#[test]
fn an_event_replayed_against_another_process_is_judged_by_that_process_ledger() {
    let m = order();
    let s1 = m.reduce_in("order-1", None, &pay("e1", "p1", 100), 0).snapshot.unwrap();
    let s2 = m.reduce_in("order-2", None, &pay("e9", "p9", 10), 0).snapshot.unwrap();
    // The user event is new to order-2: applied there, once.
    let o = m.reduce_in("order-2", Some(&s2), &pay("e1", "p1", 100), 1);
    assert_eq!(o.status, Status::Applied);
    let again = m.reduce_in("order-2", o.snapshot.as_deref(), &pay("e1", "p1", 100), 2);
    assert_eq!(again.status, Status::Duplicate);
    // order-1's effect report means nothing to order-2 (which has no such effect).
    let item = idem::outbox::due(&m, &s1, 0).unwrap().remove(0);
    let started = item["started"].clone();
    assert_rejected(&m.reduce_in("order-2", Some(&s2), &started, 1), "unknown_effect");
}

#[test]
fn a_snapshot_of_another_machine_is_wrong_machine() {
    let other = machine(json!({ "id": "other", "initial": "a", "states": { "a": { "on": { "E": "a" } } } }));
    let s = other.reduce(None, &json!({ "id": "x", "type": "E" }), 0).snapshot.unwrap();
    assert_rejected(&order().reduce(Some(&s), &pay("e1", "p1", 1), 0), "wrong_machine");
    assert_eq!(idem::inspect(&order(), &s).unwrap_err().code.as_str(), "wrong_machine");
    assert_eq!(idem::outbox::due(&order(), &s, 0).unwrap_err().code.as_str(), "wrong_machine");
}

// ---------------------------------------------------------------------------
// Corrupted and forged snapshots

#[test]
fn a_snapshot_with_any_flipped_bit_is_invalid_snapshot() {
    let m = order();
    let s = order_snapshot();
    let bytes = s.as_bytes();
    let mut flips = 0;
    for i in 0..bytes.len() {
        for bit in 0..7 {
            // Low seven bits of ASCII keep the text valid UTF-8 (the API takes &str).
            let mut b = bytes.to_vec();
            b[i] ^= 1 << bit;
            let Ok(text) = String::from_utf8(b) else { continue };
            // The checksum is strict lowercase hex, so even `a` -> `A` in it is caught.
            let o = m.reduce_in("order-1", Some(&text), &pay("e2", "p2", 1), 2_000);
            assert_eq!(code(&o), "invalid_snapshot", "bit {bit} of byte {i} flipped: {:?}", o.error);
            assert!(o.snapshot.is_none());
            flips += 1;
        }
    }
    assert!(flips > 1_000);
}

#[test]
fn a_truncated_snapshot_is_invalid_snapshot() {
    let m = order();
    let s = order_snapshot();
    for cut in 0..s.len() {
        let o = m.reduce_in("order-1", Some(&s[..cut]), &pay("e2", "p2", 1), 2_000);
        assert_eq!(code(&o), "invalid_snapshot", "cut at {cut}");
        assert_eq!(idem::inspect(&m, &s[..cut]).unwrap_err().code.as_str(), "invalid_snapshot");
    }
    assert_eq!(code(&m.reduce_in("order-1", Some(""), &pay("e2", "p2", 1), 0)), "invalid_snapshot");
}

#[test]
fn a_snapshot_of_a_newer_format_is_unsupported_snapshot_format() {
    let mut b = body(&order_snapshot());
    b["format"] = json!(4);
    let o = order().reduce_in("order-1", Some(&forge(&b)), &pay("e2", "p2", 1), 2_000);
    assert_rejected(&o, "unsupported_snapshot_format");
    // and in the text layout of format 2 and later (checksum intact)
    let text = order_snapshot().replacen("idem3\n", "idem4\n", 1);
    let body = &text[..text.len() - 16];
    let text = format!("{body}{:016x}", idem::json::hash64(body.as_bytes()));
    let o = order().reduce_in("order-1", Some(&text), &pay("e2", "p2", 1), 2_000);
    assert_rejected(&o, "unsupported_snapshot_format");
}

#[test]
fn a_forged_snapshot_with_a_valid_checksum_is_still_checked() {
    let m = order();
    let base = body(&order_snapshot());
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Edit)> = vec![
        ("invalid_snapshot", Box::new(|b| b["value"] = json!("nowhere"))),
        ("invalid_snapshot", Box::new(|b| b["context"] = json!([1, 2]))),
        ("invalid_snapshot", Box::new(|b| b["extra"] = json!(1))),
        ("invalid_snapshot", Box::new(|b| b["format"] = json!("1"))),
        ("invalid_snapshot", Box::new(|b| b["ledger"] = json!({}))),
        ("invalid_snapshot", Box::new(|b| b["revision"] = json!(-1))),
        ("wrong_machine", Box::new(|b| b["machine"]["id"] = json!("payment"))),
    ];
    for (expected, edit) in cases {
        let mut b = base.clone();
        edit(&mut b);
        let o = m.reduce_in("order-1", Some(&forge(&b)), &pay("e2", "p2", 1), 2_000);
        assert_rejected(&o, expected);
    }
}

/// A format 3 text's records, trailer line (without its newline) and head.
fn parts3(text: &str) -> (&str, &str, &str) {
    let body = text[..text.len() - 16].strip_suffix('\n').unwrap();
    let head_start = body.rfind('\n').unwrap() + 1;
    let trailer_start = body[..head_start - 1].rfind('\n').unwrap() + 1;
    (&body["idem3\n".len()..trailer_start], &body[trailer_start..head_start - 1], &body[head_start..])
}

/// Format 2 text with a valid checksum, from a JSON head and a ledger section.
fn forge2(head: &str, ledger: &str, count: usize) -> String {
    let mut text = format!("idem2 {} {count}\n{head}\n{ledger}", head.len());
    let h = idem::json::hash64(text.as_bytes());
    text.push_str(&format!("{h:016x}"));
    text
}

#[test]
fn a_forged_format_2_snapshot_with_malformed_ledger_records_is_invalid_snapshot() {
    let m = order();
    let two = m.reduce_in("order-1", Some(&order_snapshot()), &pay("e2", "p2", 10), 2_000).snapshot.unwrap();
    // The head and the records of the format 3 text, forged back as format 2.
    let (ledger, _, head) = parts3(&two);
    assert_eq!(ledger.matches('\n').count(), 2);
    // The forgery itself is sound: unchanged parts load.
    assert!(idem::inspect(&m, &forge2(head, ledger, 2)).is_ok());
    let first = &ledger[..ledger.find('\n').unwrap() + 1];
    let cases: Vec<(String, usize)> = vec![
        (ledger.to_string(), 3),                                 // more records announced than written
        (ledger.to_string(), 1),                                 // fewer: trailing bytes
        (ledger.replacen("0004\"e1\"", "0004e1xx", 1), 2),       // id not a JSON string literal
        (ledger.replacen("0004", "0fff", 1), 2),                 // id length past the record
        (ledger.replacen("\n", "", 1), 2),                       // records run together
        (first.replacen("0000000d", "0000000e", 1), 1),          // response length off by one
        (first.replacen("a0000000d", "x0000000d", 1), 1),        // status neither applied nor ignored
    ];
    for (i, (l, count)) in cases.iter().enumerate() {
        let forged = forge2(head, l, *count);
        let o = m.reduce_in("order-1", Some(&forged), &pay("e3", "p3", 1), 3_000);
        assert_eq!(code(&o), "invalid_snapshot", "case {i}: {:?}", o.error);
        assert!(o.snapshot.is_none());
    }
    // A fingerprint and a frozen response are read only when their id comes again
    // (records are not parsed on load): a forged one is refused then, and only then.
    let bad = ledger.replacen("a7f2", "A7F2", 1);
    let forged = forge2(head, &bad, 2);
    assert_eq!(m.reduce_in("order-1", Some(&forged), &pay("e3", "p3", 1), 3_000).status, Status::Applied);
    assert_rejected(&m.reduce_in("order-1", Some(&forged), &pay("e1", "p1", 40), 3_000), "invalid_snapshot");
    let bad = ledger.replacen("\"recorded p1\"", "\u{7f}recorded p1\"", 1);
    let forged = forge2(head, &bad, 2);
    assert_eq!(m.reduce_in("order-1", Some(&forged), &pay("e3", "p3", 1), 3_000).status, Status::Applied);
    assert_rejected(&m.reduce_in("order-1", Some(&forged), &pay("e1", "p1", 40), 3_000), "invalid_snapshot");
}

/// Format 3 text with a valid checksum: records, a trailer line, a head.
fn forge3(records: &str, trailer: &str, head: &str) -> String {
    let mut text = format!("idem3\n{records}{trailer}\n{head}\n");
    let h = idem::json::hash64(text.as_bytes());
    text.push_str(&format!("{h:016x}"));
    text
}

#[test]
fn a_forged_format_3_snapshot_is_checked_when_read() {
    let m = order();
    let two = m.reduce_in("order-1", Some(&order_snapshot()), &pay("e2", "p2", 10), 2_000).snapshot.unwrap();
    let (records, trailer, head) = parts3(&two);
    assert_eq!(forge3(records, trailer, head), two, "the forgery reproduces the engine's text");
    let prune_at = trailer.split(' ').nth(1).unwrap();
    // The structure is checked at once.
    let structural = [
        forge3(records, "", head),                                    // no trailer
        forge3(records, &format!("#3 {prune_at}"), head),             // count too high
        forge3(records, &format!("#1 {prune_at}"), head),             // count too low: trailing bytes
        forge3(records, "#2", head),                                  // prune time missing
        forge3(records, &format!("#2 {prune_at} 7"), head),           // a field too many
        forge3(records, &format!("2 {prune_at}"), head),              // no '#'
        forge3(&records.replacen('\n', "", 1), &format!("#2 {prune_at}"), head), // records run together
        format!("idem3\n{records}{trailer}\n{head}"),               // no checksum at all
    ];
    for (i, forged) in structural.iter().enumerate() {
        let o = m.reduce_in("order-1", Some(forged), &pay("e3", "p3", 1), 3_000);
        assert_eq!(code(&o), "invalid_snapshot", "case {i}: {:?}", o.error);
        assert!(o.snapshot.is_none());
    }
    // A record's status byte is read with the record: another id is applied, its own id is refused.
    let bad = records.replacen("a0000000d", "x0000000d", 1);
    let forged = forge3(&bad, trailer, head);
    assert_eq!(m.reduce_in("order-1", Some(&forged), &pay("e3", "p3", 1), 3_000).status, Status::Applied);
    assert_rejected(&m.reduce_in("order-1", Some(&forged), &pay("e1", "p1", 40), 3_000), "invalid_snapshot");
    // ... and when expired records are looked at (a prune time already passed).
    let forged = forge3(&bad, "#2 0", head);
    assert_rejected(&m.reduce_in("order-1", Some(&forged), &pay("e3", "p3", 1), 3_000), "invalid_snapshot");
    // Records are found by their newlines; a record's two lengths must agree
    // with where its newline is, which is checked when the record is read.
    let (first, rest) = records.split_at(records.find('\n').unwrap() + 1);
    let id_len = usize::from_str_radix(&first[..4], 16).unwrap();
    let resp_at = 4 + id_len + 32 + 16 + 16 + 12 + 1;
    let resp_len = usize::from_str_radix(&first[resp_at..resp_at + 8], 16).unwrap();
    let lying = [
        format!("{:04x}{}{rest}", id_len + 1, &first[4..]),                                  // id length
        format!("{}{:08x}{}{rest}", &first[..resp_at], resp_len - 1, &first[resp_at + 8..]), // response length
        format!("{}\n{}{rest}", &first[..resp_at + 8], &first[resp_at + 8..]),               // a newline inside
    ];
    for (i, bad) in lying.iter().enumerate() {
        let o = m.reduce_in("order-1", Some(&forge3(bad, "#2 0", head)), &pay("e3", "p3", 1), 3_000);
        assert_eq!(code(&o), "invalid_snapshot", "lying record {i}: {:?}", o.error);
        assert!(o.snapshot.is_none());
    }
    // A newline too many is a record too many: refused at once, whatever the prune time.
    let forged = forge3(&lying[2], trailer, head);
    assert_rejected(&m.reduce_in("order-1", Some(&forged), &pay("e3", "p3", 1), 3_000), "invalid_snapshot");
}

// ---------------------------------------------------------------------------
// Events

#[test]
fn unknown_event_type_is_unknown_event_type() {
    assert_rejected(&order().reduce(None, &json!({ "id": "e1", "type": "REFUND" }), 0), "unknown_event_type");
}

#[test]
fn missing_or_malformed_id_and_type_have_their_own_codes() {
    let m = order();
    let cases = [
        (json!({ "type": "CANCEL" }), "missing_event_id"),
        (json!({ "id": null, "type": "CANCEL" }), "missing_event_id"),
        (json!({ "id": "", "type": "CANCEL" }), "missing_event_id"),
        (json!({ "id": 7, "type": "CANCEL" }), "invalid_event"),
        (json!({ "id": "e1" }), "missing_event_type"),
        (json!({ "id": "e1", "type": "" }), "invalid_event"),
        (json!({ "id": "e1", "type": ["CANCEL"] }), "invalid_event"),
        (json!({ "id": "e1", "type": "CANCEL", "extra": 1 }), "invalid_event"),
        (json!(["e1", "CANCEL"]), "invalid_event"),
        (json!(null), "invalid_event"),
    ];
    for (e, expected) in cases {
        assert_rejected(&m.reduce(None, &e, 0), expected);
    }
    assert_rejected(&m.reduce_in("", None, "{\"id\":", 0), "invalid_event");
    assert_rejected(&m.reduce_in("", None, "", 0), "invalid_event");
}

#[test]
fn the_same_id_with_another_payload_is_id_conflict_and_never_applied() {
    let m = order();
    let s = m.reduce_in("order-1", None, &pay("e1", "p1", 40), 0).snapshot.unwrap();
    let o = m.reduce_in("order-1", Some(&s), &pay("e1", "p1", 60), 1);
    assert_eq!(o.status, Status::Conflict);
    assert_eq!(code(&o), "id_conflict");
    assert!(o.snapshot.is_none());
    assert_eq!(idem::inspect(&m, &s).unwrap()["context"]["paid"], 40);
}

#[test]
fn numbers_out_of_range_are_number_out_of_range() {
    for amount in ["1e400", "1e309", "-1e309", "1.8e308", "17976931348623159e292", "1e99999999999"] {
        let text = format!(r#"{{"id":"e1","type":"PAYMENT_PARTIAL","payload":{{"paymentId":"p1","amount":{amount}}}}}"#);
        assert_rejected(&order().reduce_in("o", None, &text, 0), "number_out_of_range");
    }
    // The largest finite double is a number; below the smallest one a number rounds to zero, as any
    // decimal rounds to its nearest double.
    for amount in ["1.7976931348623157e308", "1e-400"] {
        let text = format!(r#"{{"id":"e1","type":"PAYMENT_PARTIAL","payload":{{"paymentId":"p1","amount":{amount}}}}}"#);
        assert_eq!(order().reduce_in("o", None, &text, 0).status, Status::Applied, "{amount}");
    }
    let def = r#"{"id":"m","initial":"a","context":{"n":1e309},"states":{"a":{}}}"#;
    assert_eq!(Machine::from_json(def).unwrap_err().code, Code::NumberOutOfRange);
}

#[test]
fn huge_amounts_do_not_break_arithmetic() {
    let m = Machine::from_json(
        r#"{ "id": "sum", "initial": "open", "context": { "sum": 0 }, "states": { "open": { "on": { "ADD": {
             "actions": [{ "assign": { "sum": { "+": [{ "var": "context.sum" }, { "var": "event.payload.amount" }] } } }] } } } } }"#,
    )
    .unwrap();
    let add = |id: &str, amount: f64| json!({ "id": id, "type": "ADD", "payload": { "amount": amount } });
    let o = m.reduce_in("o", None, &add("e1", 1.7e308), 0);
    assert_eq!(o.status, Status::Applied, "{:?}", o.error);
    // The sum overflows to infinity, which JSON cannot hold: the event fails
    // (`expression_failed`), nothing is written, and the process keeps working.
    let o2 = m.reduce_in("o", o.snapshot.as_deref(), &add("e2", 1.7e308), 1);
    assert_rejected(&o2, "expression_failed");
    let s = o.snapshot.unwrap();
    assert_eq!(idem::inspect(&m, &s).unwrap()["context"]["sum"], json!(1.7e308));
    let o3 = m.reduce_in("o", Some(&s), &add("e3", -1.7e308), 2);
    assert_eq!(o3.status, Status::Applied, "{:?}", o3.error);
    assert_eq!(idem::inspect(&m, o3.snapshot.as_deref().unwrap()).unwrap()["context"]["sum"], json!(0));
}

#[test]
fn arithmetic_on_a_payload_that_is_not_a_number_fails_and_writes_nothing() {
    // No payload schema here: "abc" reaches the `+`, whose result is not a
    // number. JSONLogic would give null, and `paid` would silently become null.
    let m = Machine::from_json(
        r#"{ "id": "sum", "initial": "open", "context": { "paid": 0 }, "states": { "open": { "on": { "PAY": {
             "actions": [{ "assign": { "paid": { "+": [{ "var": "context.paid" }, { "var": "event.payload.amount" }] } } }] } } } } }"#,
    )
    .unwrap();
    let s = m.reduce_in("o", None, &json!({ "id": "e1", "type": "PAY", "payload": { "amount": 60 } }), 0).snapshot.unwrap();
    for (i, amount) in [json!("abc"), json!({}), json!([1, 2])].into_iter().enumerate() {
        let o = m.reduce_in("o", Some(&s), &json!({ "id": format!("x{i}"), "type": "PAY", "payload": { "amount": amount } }), 1);
        assert_rejected(&o, "expression_failed");
    }
    let o = m.reduce_in("o", Some(&s), &json!({ "id": "e2", "type": "PAY", "payload": { "amount": 40 } }), 2);
    assert_eq!(idem::inspect(&m, o.snapshot.as_deref().unwrap()).unwrap()["context"]["paid"], json!(100));
    // The order machine declares its payload: the same "abc" is refused before any transition.
    let order = order();
    let abc = json!({ "id": "e9", "type": "PAYMENT_PARTIAL", "payload": { "paymentId": "p9", "amount": "abc" } });
    assert_rejected(&order.reduce_in("o", None, &abc, 0), "invalid_payload");
}

#[test]
fn a_payment_without_an_amount_is_refused_and_spends_nothing() {
    // Issue 38: null counted as 0 applied a payment without an amount, its payment id
    // spent and nothing paid. A missing value (or null, a boolean, `[5]`) is no number.
    let m = Machine::from_json(
        r#"{ "id": "sum", "initial": "open", "context": { "paid": 0, "payments": [] }, "states": { "open": { "on": {
             "PAY": { "guard": { "!": { "in": [{ "var": "event.payload.paymentId" }, { "var": "context.payments" }] } },
               "actions": [{ "assign": { "payments": { "merge": [{ "var": "context.payments" }, [{ "var": "event.payload.paymentId" }]] },
                                         "paid": { "+": [{ "var": "context.paid" }, { "var": "event.payload.amount" }] } } }] },
             "REFUND": { "actions": [{ "raise": { "type": "PAY", "payload": { "preserve": { "paymentId": "r1" } } } }] } } } } }"#,
    )
    .unwrap();
    let s = m.reduce_in("o", None, &json!({ "id": "e0", "type": "PAY", "payload": { "paymentId": "p0", "amount": 10 } }), 0).snapshot.unwrap();
    let lacking = [json!({ "paymentId": "p1" }), json!({ "paymentId": "p1", "amount": null }), json!({ "paymentId": "p1", "amount": true }), json!({ "paymentId": "p1", "amount": [5] })];
    for (i, payload) in lacking.into_iter().enumerate() {
        let o = m.reduce_in("o", Some(&s), &json!({ "id": format!("x{i}"), "type": "PAY", "payload": payload }), 1);
        assert_rejected(&o, "expression_failed");
        let message = &o.error.as_ref().unwrap().message;
        assert!(message.contains("\"+\" takes numbers, but its argument 2 is") && message.ends_with("at states.open.on.PAY.actions[0].assign.paid"), "{message}");
    }
    // A raised event has no payload field it does not give: the whole event is refused.
    assert_rejected(&m.reduce_in("o", Some(&s), &json!({ "id": "r", "type": "REFUND" }), 1), "expression_failed");
    // Nothing was spent: p1 with its amount is applied once.
    let o = m.reduce_in("o", Some(&s), &json!({ "id": "e1", "type": "PAY", "payload": { "paymentId": "p1", "amount": 40 } }), 2);
    let context = idem::inspect(&m, o.snapshot.as_deref().unwrap()).unwrap()["context"].clone();
    assert_eq!(context, json!({ "paid": 50, "payments": ["p0", "p1"] }));
}

#[test]
fn a_misspelt_operator_is_refused_on_load_not_stored() {
    // Issue 38: `{"plus": [1, 2]}` was stored as the object it is.
    let e = Machine::from_json(r#"{ "id": "m", "initial": "a", "context": {}, "states": { "a": { "on": { "GO": { "actions": [{ "assign": { "x": { "plus": [1, 2] } } }] } } } } }"#).unwrap_err();
    assert_eq!((e.code, e.path.as_deref()), (idem::Code::InvalidExpression, Some("states.a.on.GO.actions[0].assign.x")));
    assert!(e.message.starts_with("unknown operator \"plus\""), "{}", e.message);
    let data = Machine::from_json(r#"{ "id": "m", "initial": "a", "context": {}, "states": { "a": { "on": { "GO": { "actions": [{ "assign": { "x": { "preserve": { "plus": [1, 2] } } } }] } } } } }"#).unwrap();
    let o = data.reduce_in("o", None, &json!({ "id": "e1", "type": "GO" }), 0);
    assert_eq!(idem::inspect(&data, o.snapshot.as_deref().unwrap()).unwrap()["context"]["x"], json!({ "plus": [1, 2] }));
}

#[test]
fn forged_effect_reports_are_unknown_effect_or_invalid_effect_report() {
    let m = order();
    let s = m.reduce_in("order-1", None, &pay("e1", "p1", 100), 0).snapshot.unwrap();
    let cases = [
        (json!({ "id": "r1", "type": "idem.effect.succeeded", "payload": { "key": "nope", "attempt": 1 } }), "unknown_effect"),
        (json!({ "id": "r2", "type": "idem.effect.succeeded", "payload": { "attempt": 1 } }), "invalid_effect_report"),
        (json!({ "id": "r3", "type": "idem.effect.started", "payload": { "key": "order-1/e1:0", "attempt": -1 } }), "invalid_effect_report"),
        (json!({ "id": "r4", "type": "idem.effect.bogus", "payload": { "key": "order-1/e1:0" } }), "invalid_effect_report"),
    ];
    for (e, expected) in cases {
        assert_rejected(&m.reduce_in("order-1", Some(&s), &e, 1), expected);
    }
    // A report for an attempt that never started is stale: ignored, nothing written.
    let e = json!({ "id": "r5", "type": "idem.effect.succeeded", "payload": { "key": "order-1/e1:0", "attempt": 1 } });
    let o = m.reduce_in("order-1", Some(&s), &e, 1);
    assert_eq!((o.status, o.snapshot.is_none()), (Status::Ignored, true));
}

#[test]
fn an_effect_report_with_an_attempt_beyond_u32_does_not_alias_attempt_1() {
    let m = order();
    let s = m.reduce_in("order-1", None, &pay("e1", "p1", 100), 0).snapshot.unwrap();
    let item = idem::outbox::due(&m, &s, 0).unwrap().remove(0);
    let s = m.reduce_in("order-1", Some(&s), &item["started"], 1).snapshot.unwrap();
    // 2^32 + 1 is not attempt 1.
    let e = json!({ "id": "forged", "type": "idem.effect.succeeded",
                    "payload": { "key": "order-1/e1:0", "attempt": 4_294_967_297u64, "result": "forged" } });
    let o = m.reduce_in("order-1", Some(&s), &e, 2);
    assert_ne!(o.status, Status::Applied, "attempt 4294967297 was taken for attempt 1");
}

#[test]
fn effect_outcome_events_and_reserved_ids_from_outside_are_reserved_event() {
    let m = order();
    let s = m.reduce_in("order-1", None, &pay("e1", "p1", 100), 0).snapshot.unwrap();
    // `ship.succeeded` is raised by the outbox when the ship effect finishes; a client cannot send it.
    let fake = json!({ "id": "x1", "type": "ship.succeeded", "payload": { "key": "order-1/e1:0", "result": {} } });
    assert_rejected(&m.reduce_in("order-1", Some(&s), &fake, 1), "reserved_event");
    assert_rejected(&m.reduce_in("order-1", Some(&s), &json!({ "id": "x2", "type": "ship.failed" }), 1), "reserved_event");
    // Nor may a client use the id prefix under which the engine remembers its own events.
    assert_rejected(&m.reduce_in("order-1", Some(&s), &json!({ "id": "idem:x", "type": "SHIP" }), 1), "reserved_event");
}

#[test]
fn a_client_cannot_take_the_id_of_an_engine_event_first() {
    let m = order();
    let s = m.reduce_in("order-1", None, &pay("e1", "p1", 100), 0).snapshot.unwrap();
    let item = idem::outbox::due(&m, &s, 0).unwrap().remove(0);
    let started_id = item["started"]["id"].as_str().unwrap().to_string();
    // A client event carrying the id the engine chose for the attempt's `started` report...
    let squatter = json!({ "id": started_id, "type": "SHIP" });
    let o = m.reduce_in("order-1", Some(&s), &squatter, 1);
    assert_eq!(o.status, Status::Applied);
    // ...does not stop the attempt from starting: engine events have ledger ids of their own.
    let o = m.reduce_in("order-1", o.snapshot.as_deref(), &item["started"], 2);
    assert_eq!(o.status, Status::Applied, "{:?}", o.error);
}

#[test]
fn flooding_the_ledger_past_max_entries_leaves_a_late_duplicate_to_the_topology() {
    // The order machine, remembering 20 ids instead of 1,000 (same behaviour, cheaper to flood).
    let mut def: Value = serde_json::from_str(ORDER).unwrap();
    def["retention"]["maxEntries"] = json!(20);
    let m = machine(def);
    let mut s = m.reduce_in("o", None, &pay("e1", "p1", 10), 0).snapshot;
    // 20 more applied events (payments of 0) push e1 out of the ledger.
    for i in 0..20 {
        s = m.reduce_in("o", s.as_deref(), &pay(&format!("flood-{i}"), &format!("f{i}"), 0), 1 + i).snapshot.or(s);
    }
    let view = idem::inspect(&m, s.as_deref().unwrap()).unwrap();
    assert_eq!(view["ledger"].as_array().unwrap().len(), 20);
    assert!(view["ledger"].as_array().unwrap().iter().all(|e| e["id"] != "e1"));
    // e1 is no longer remembered, so it is judged afresh: the set guard (p1 already paid) ignores it.
    let o = m.reduce_in("o", s.as_deref(), &pay("e1", "p1", 10), 2_000);
    assert_eq!((o.status, o.duplicate()), (Status::Ignored, false));
    assert_eq!(view["context"]["paid"], 10);
}

#[test]
fn a_timer_event_that_no_timer_is_waiting_for_is_ignored() {
    let m = order();
    let s = order_snapshot();
    let o = m.reduce_in("order-1", Some(&s), &json!({ "id": "after:pending:5:1", "type": "idem.after" }), 1);
    assert_eq!((o.status, o.snapshot.is_none()), (Status::Ignored, true));
}

// ---------------------------------------------------------------------------
// Loops

#[test]
fn an_unguarded_always_loop_is_always_loop() {
    let def = json!({ "id": "loop", "initial": "a", "states": {
        "a": { "always": "b" }, "b": { "always": { "target": "a" } } } });
    let e = Machine::from_value(def).unwrap_err();
    assert_eq!(e.code.as_str(), "always_loop");
    assert!(e.path.is_some());
    let def = json!({ "id": "loop", "initial": "a", "states": { "a": { "always": { "actions": [] } } } });
    assert_eq!(Machine::from_value(def).unwrap_err().code.as_str(), "always_loop");
}

#[test]
fn a_guarded_runaway_loop_is_microstep_limit_not_a_hang() {
    let m = machine(json!({
        "id": "runaway", "initial": "idle", "context": { "n": 0 },
        "states": {
            "idle": { "on": { "START": "spinning" } },
            "spinning": { "always": [{ "guard": true, "target": "spinning", "reenter": true,
                "actions": [{ "assign": { "n": { "+": [{ "var": "context.n" }, 1] } } }] }] }
        }
    }));
    let s = m.reduce(None, &json!({ "id": "e0", "type": "START", "payload": {} }), 0);
    assert_rejected(&s, "microstep_limit");
    // A guarded loop that settles (counts to 100) is legal.
    let counter = machine(json!({
        "id": "counter", "initial": "idle", "context": { "n": 0 },
        "states": {
            "idle": { "on": { "START": "counting" } },
            "counting": { "always": [
                { "guard": { "<": [{ "var": "context.n" }, 100] }, "target": "counting", "reenter": true,
                  "actions": [{ "assign": { "n": { "+": [{ "var": "context.n" }, 1] } } }] },
                { "target": "done" } ] },
            "done": { "type": "final" }
        }
    }));
    let o = counter.reduce(None, &json!({ "id": "e0", "type": "START" }), 0);
    assert_eq!(o.status, Status::Applied);
    assert_eq!(idem::inspect(&counter, o.snapshot.as_deref().unwrap()).unwrap()["context"]["n"], 100);
}

#[test]
fn an_expression_that_overflows_its_arithmetic_is_not_a_panic() {
    // substr with a huge length: start + length must not overflow.
    let m = machine(json!({
        "id": "substr", "initial": "a", "context": { "s": "" },
        "states": { "a": { "on": { "CUT": { "actions": [{ "assign": {
            "s": { "substr": ["abcdef", { "var": "event.payload.from" }, { "var": "event.payload.len" }] } } }] } } } }
    }));
    for (from, len, want) in [(1.0, 1e300, "bcdef"), (-2.0, 1e300, "ef"), (1.0, -1e300, ""), (-1e300, 2.0, "ab")] {
        let e = json!({ "id": "e", "type": "CUT", "payload": { "from": from, "len": len } });
        let o = std::panic::catch_unwind(|| m.reduce(None, &e, 0)).unwrap_or_else(|_| {
            panic!("substr(\"abcdef\", {from}, {len}) panicked (arithmetic overflow in expr.rs Op::Substr)")
        });
        assert_eq!(o.status, Status::Applied);
        assert_eq!(idem::inspect(&m, o.snapshot.as_deref().unwrap()).unwrap()["context"]["s"], want);
    }
}

#[test]
fn a_forged_snapshot_with_the_revision_at_its_maximum_is_not_a_panic() {
    let m = order();
    // The revision: the next event would be revision 2^64.
    let mut b = body(&order_snapshot());
    b["revision"] = json!(u64::MAX);
    let s = forge(&b);
    let o = std::panic::catch_unwind(|| m.reduce_in("order-1", Some(&s), &pay("e2", "p2", 1), 2_000))
        .unwrap_or_else(|_| panic!("revision u64::MAX: reduce panicked (src/engine/reduce.rs: snap.state.revision + 1)"));
    assert_rejected(&o, "invalid_snapshot");
}

#[test]
fn a_forged_snapshot_with_an_attempt_counter_at_its_maximum_is_not_a_panic() {
    let m = order();
    // The attempt counter of an effect: the next attempt would be 2^32.
    let paid = m.reduce_in("order-1", None, &pay("e1", "p1", 100), 0).snapshot.unwrap();
    let mut b = body(&paid);
    b["outbox"][0]["attempts"] = json!(u32::MAX);
    let s = forge(&b);
    let due = std::panic::catch_unwind(|| idem::outbox::due(&m, &s, 0))
        .unwrap_or_else(|_| panic!("attempts u32::MAX: due panicked (src/engine/outbox.rs due_effect: e.attempts + 1)"));
    assert_eq!(due.unwrap_err().code.as_str(), "invalid_snapshot");
    let started = json!({ "id": "s", "type": "idem.effect.started", "payload": { "key": "order-1/e1:0" } });
    let o = std::panic::catch_unwind(|| m.reduce_in("order-1", Some(&s), &started, 1))
        .unwrap_or_else(|_| panic!("attempts u32::MAX: reduce panicked (src/engine/outbox.rs report STARTED: entry.attempts + 1)"));
    assert_rejected(&o, "invalid_snapshot");
}
