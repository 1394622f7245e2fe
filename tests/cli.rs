//! The command-line tool: `idem reduce`, `idem run`, `idem inspect`, errors as JSON on stderr.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn idem(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_idem")).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn tmp(name: &str, text: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into()
}

const ORDER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/machines/order.json");

#[test]
fn run_prints_one_outcome_per_event_then_the_final_snapshot() {
    let events = tmp(
        "run.jsonl",
        r#"{"id":"e1","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p1","amount":40},"now":1000}
{"id":"e1","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p1","amount":40}}

{"id":"e2","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p2","amount":60}}
"#,
    );
    let (code, out, err) = idem(&["run", "--machine", ORDER, "--events", &events, "--process", "o1"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["status"], "applied");
    assert_eq!(lines[1]["status"], "duplicate");
    assert_eq!(lines[2]["status"], "applied");
    assert_eq!(lines[2]["effects"][0]["key"], "o1/e2:0");
    let snap = &lines[3]["snapshot"];
    assert_eq!(snap["value"], "paid");
    // time advances 1 ms per event without `now`
    assert_eq!(snap["ledger"][1]["at"], 1002);
}

#[test]
fn reduce_chains_through_the_snapshot_text() {
    let e1 = tmp("e1.json", r#"{"id":"e1","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p1","amount":40}}"#);
    let (code, out, _) = idem(&["reduce", "--machine", ORDER, "--event", &e1, "--now", "5", "--process", "o1"]);
    assert_eq!(code, 0);
    let first: Value = serde_json::from_str(&out).unwrap();
    let snap = tmp("s1.txt", first["snapshot"].as_str().unwrap());
    let (code, out, _) = idem(&["reduce", "--machine", ORDER, "--snapshot", &snap, "--event", &e1, "--now", "6", "--process", "o1"]);
    assert_eq!(code, 0);
    let second: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(second["status"], "duplicate");
    assert_eq!(second["response"], first["response"]);
    let (code, out, _) = idem(&["inspect", "--machine", ORDER, "--snapshot", &snap]);
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["context"]["paid"], 40);
}

#[test]
fn errors_are_json_on_stderr_with_a_non_zero_status() {
    let bad_machine = tmp("bad.json", r#"{"id":"m","initial":"a","states":{"a":{"on":{"GO":"nowhere"}}}}"#);
    let e = tmp("e.json", r#"{"id":"e1","type":"GO"}"#);
    let (code, out, err) = idem(&["reduce", "--machine", &bad_machine, "--event", &e, "--now", "1", "--process", "o1"]);
    assert_ne!(code, 0);
    assert!(out.is_empty());
    let err: Value = serde_json::from_str(err.trim()).unwrap();
    assert_eq!(err["code"], "unknown_target");
    assert_eq!(err["path"], "states.a.on.GO");

    let not_json = tmp("notjson.json", "{\"id\": \"e1\", \"type\":");
    let (code, out, _) = idem(&["reduce", "--machine", ORDER, "--event", &not_json, "--now", "1", "--process", "o1"]);
    assert_eq!(code, 1, "a rejected event exits 1");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["error"]["code"], "invalid_event");

    let invalid_utf8 = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli/bad-utf8.json");
    std::fs::write(&invalid_utf8, b"{\"id\":\"\xff\xfe\",\"type\":\"GO\"}").unwrap();
    let (code, _, err) = idem(&["reduce", "--machine", ORDER, "--event", invalid_utf8.to_str().unwrap(), "--now", "1", "--process", "o1"]);
    assert_ne!(code, 0);
    assert_eq!(serde_json::from_str::<Value>(err.trim()).unwrap()["code"], "invalid_json");

    let (code, _, err) = idem(&["frobnicate"]);
    assert_eq!(code, 2);
    assert_eq!(serde_json::from_str::<Value>(err.trim()).unwrap()["code"], "usage");
    let (code, _, err) = idem(&["reduce", "--machine", ORDER, "--event", &e, "--process", "o1"]);
    assert_eq!(code, 2);
    assert!(err.contains("--now is required"));
}

#[test]
fn reduce_and_run_require_a_process_id() {
    let e = tmp("p.json", r#"{"id":"e1","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p1","amount":40}}"#);
    let events = tmp("p.jsonl", "{\"id\":\"e1\",\"type\":\"PAYMENT_PARTIAL\",\"payload\":{\"paymentId\":\"p1\",\"amount\":40}}\n");
    let calls: [(&[&str], &str); 4] = [
        (&["reduce", "--machine", ORDER, "--event", &e, "--now", "1"], "--process is required"),
        (&["reduce", "--machine", ORDER, "--event", &e, "--now", "1", "--process", ""], "--process must not be empty"),
        (&["run", "--machine", ORDER, "--events", &events], "--process is required"),
        (&["run", "--machine", ORDER, "--events", &events, "--process", ""], "--process must not be empty"),
    ];
    for (args, message) in calls {
        let (code, out, err) = idem(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty(), "{args:?}: {out}");
        let err: Value = serde_json::from_str(err.trim()).unwrap();
        assert_eq!(err["code"], "usage", "{args:?}");
        assert_eq!(err["message"], format!("{message} (idem --help prints the usage)"), "{args:?}");
    }
    // With one, the effect keys carry it.
    let (code, out, err) = idem(&["reduce", "--machine", ORDER, "--event", &e, "--now", "1", "--process", "o7"]);
    assert_eq!(code, 0, "{err}");
    let o: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(o["status"], "applied");
    let (_, help, _) = idem(&["--help"]);
    assert!(help.contains("--now MS --process ID\n"), "{help}");
    assert!(help.contains("--events EVENTS.jsonl --process ID\n"), "{help}");
}

#[test]
fn help_and_version_print_plain_text_and_exit_zero() {
    for args in [&["--help"][..], &["-h"], &["help"], &["lint", "--help"]] {
        let (code, out, err) = idem(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
        assert!(out.starts_with("idem: "), "{args:?}: {out}");
        assert!(out.contains("\n  idem lint    MACHINE.json"), "{args:?}: the usage lines, not an escaped string: {out}");
        assert!(!out.contains("\\n"), "{args:?}: {out}");
    }
    for args in [&["--version"][..], &["-V"], &["version"]] {
        let (code, out, _) = idem(args);
        assert_eq!(code, 0, "{args:?}");
        assert_eq!(out, format!("idem {}\n", env!("CARGO_PKG_VERSION")), "{args:?}");
    }
    // A usage error stays one line of JSON on stderr, pointing at --help.
    let (code, out, err) = idem(&["--frobnicate"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    let err: Value = serde_json::from_str(err.trim()).unwrap();
    assert_eq!(err["code"], "usage");
    assert_eq!(err["message"], "unknown command \"--frobnicate\" (idem --help prints the usage)");
}
