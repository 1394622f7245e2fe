//! `idem check`: every delivery schedule of a scenario within bounds. Proved
//! where the machine and the host are right, violated (with the shortest
//! trace) where a machine accumulates or a host defect is planted.
#![cfg(feature = "analysis")]

use idem::check::explore::{self, Options, Property, Report, Verdict};
use idem::check::model::{Action, Bounds, Clock};
use idem::check::report;
use idem::check::scenario::Scenario;
use idem::Machine;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn root(path: &str) -> String {
    format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))
}

fn machine(path: &str) -> Machine {
    Machine::from_json(&std::fs::read_to_string(root(path)).unwrap()).unwrap()
}

fn options(scenario: &Scenario, set: impl FnOnce(&mut Bounds)) -> Options {
    let mut bounds = Bounds::defaults(scenario.events().count());
    set(&mut bounds);
    Options { bounds, property: Property::Dedup, max_states: 2_000_000, timeout_s: None, process: "p1".into(), progress_every: explore::PROGRESS_EVERY }
}

fn check(m: &str, scenario: &str, set: impl FnOnce(&mut Bounds)) -> Report {
    let m = machine(m);
    let s = Scenario::parse(&m, &std::fs::read_to_string(root(scenario)).unwrap()).unwrap();
    let opts = options(&s, set);
    explore::check(&m, &s, &opts, &mut || 0.0, &mut |_| {})
}

fn violated(r: &Report) -> &explore::Counterexample {
    match &r.verdict {
        Verdict::Violated(cx) => cx,
        other => panic!("expected a violation, got {other:?}"),
    }
}

/// The trace's actions as short words.
fn kinds(actions: &[Action]) -> Vec<&'static str> {
    actions
        .iter()
        .map(|a| match a {
            Action::Deliver { .. } => "deliver",
            Action::Resend { .. } => "resend",
            Action::Dispatch { .. } => "dispatch",
            Action::Commit { .. } => "commit",
            Action::Call { .. } => "call",
            Action::Report { .. } => "report",
            Action::Crash { .. } => "crash",
            Action::Advance { why: Clock::Expiry, .. } => "expire",
            Action::Advance { .. } => "advance",
        })
        .collect()
}

#[test]
fn the_fragile_counter_counts_a_payment_twice_after_its_retention_window() {
    let r = check("www/machines/order-fragile.json", "tests/check/order-fragile.jsonl", |_| {});
    let cx = violated(&r);
    // deliver, advance past retention, deliver again (each delivery reduced, then committed).
    assert_eq!(kinds(&cx.actions), ["deliver", "commit", "expire", "deliver", "commit"]);
    assert!(cx.violation.contains("a repeat of pay-1"), "{}", cx.violation);
    assert_eq!(cx.expected["context"]["paid"], 40);
    assert_eq!(cx.actual["context"]["paid"], 80);
    assert_eq!(cx.steps.len(), 5);
    assert_eq!(cx.steps[3]["status"], "applied");
    // The deliveries that stood replay through `idem run`: the second is applied again.
    assert_eq!(cx.run.len(), 2);
    assert_eq!(cx.run[1]["now"], 3_600_000);
}

#[test]
fn the_fragile_counter_counts_a_fresh_resend_twice() {
    let r = check("www/machines/order-fragile.json", "tests/check/order-fragile.jsonl", |b| {
        b.fresh_resends = 1;
        b.expiries = 0;
    });
    let cx = violated(&r);
    assert_eq!(kinds(&cx.actions), ["deliver", "commit", "resend", "commit"]);
}

#[test]
fn the_robust_order_is_proved_within_the_default_bounds() {
    let r = check("www/machines/order-robust.json", "tests/check/order-3.jsonl", |_| {});
    assert!(matches!(r.verdict, Verdict::Proved), "{:?}", r.verdict);
    assert!(r.progress.distinct > 10_000, "the exploration is not vacuous: {:?}", r.progress);
    // A fresh re-send of a payment is absorbed by the set of payment ids.
    let r = check("www/machines/order-robust.json", "tests/check/order-fragile.jsonl", |b| b.fresh_resends = 1);
    assert!(matches!(r.verdict, Verdict::Proved), "{:?}", r.verdict);
}

#[test]
fn a_state_limit_gives_inconclusive_never_proved() {
    let m = machine("www/machines/order-robust.json");
    let s = Scenario::parse(&m, &std::fs::read_to_string(root("tests/check/order-3.jsonl")).unwrap()).unwrap();
    let mut opts = options(&s, |_| {});
    opts.max_states = 500;
    let r = explore::check(&m, &s, &opts, &mut || 0.0, &mut |_| {});
    assert!(matches!(r.verdict, Verdict::Inconclusive(ref why) if why.contains("state limit")), "{:?}", r.verdict);
    let mut t = 0.0;
    opts.max_states = u64::MAX;
    opts.timeout_s = Some(1.0);
    let r = explore::check(&m, &s, &opts, &mut || { t += 10.0; t }, &mut |_| {});
    assert!(matches!(r.verdict, Verdict::Inconclusive(ref why) if why.contains("time limit")), "{:?}", r.verdict);
}

/// The simulator's planted host defects, each found within the default bounds with its minimal trace.
fn planted(defect: &str, m: &str) -> Box<explore::Counterexample> {
    let r = check(m, "tests/check/order-3.jsonl", |b| assert!(report::plant(&mut b.faults, defect)));
    match r.verdict {
        Verdict::Violated(cx) => cx,
        other => panic!("{defect} not found: {other:?}"),
    }
}

#[test]
fn a_store_without_compare_and_set_loses_an_update() {
    let cx = planted("no-cas", "www/machines/order-robust.json");
    // Two hosts load the same version; both commit; the first write is lost.
    assert_eq!(kinds(&cx.actions), ["deliver", "deliver", "commit", "commit"]);
    assert!(cx.violation.contains("the schedule without repeats gives"), "{}", cx.violation);
}

#[test]
fn effects_performed_before_the_commit_are_found() {
    let cx = planted("effects-before-commit", "www/machines/order-robust.json");
    // The charge goes out when the second payment is reduced, before its commit.
    assert_eq!(kinds(&cx.actions), ["deliver", "commit", "deliver"]);
    assert!(cx.violation.contains("before any committed event emitted it"), "{}", cx.violation);
}

#[test]
fn a_dispatcher_that_ignores_another_ones_claim_is_found() {
    // A provider without keys (verify before retry) performs every call that reaches it.
    let cx = planted("ignore-claim", "www/machines/order-robust-nokeys.json");
    assert!(cx.violation.contains("performed 2 times"), "{}", cx.violation);
    assert_eq!(kinds(&cx.actions).iter().filter(|k| **k == "call").count(), 2);
}

#[test]
fn a_gateway_that_ignores_idempotency_keys_is_found() {
    let cx = planted("no-keys", "www/machines/order-robust.json");
    assert!(cx.violation.contains("performed 2 times"), "{}", cx.violation);
    // The answer of the first call is lost, and the retry performs the charge again.
    assert!(cx.actions.iter().any(|a| matches!(a, Action::Call { result: idem::check::model::CallResult::Lost, .. })));
}

fn idem(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_idem")).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn the_cli_prints_the_counterexample_and_replays_it() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("check");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("fragile.json").to_string_lossy().to_string();
    let fragile = root("www/machines/order-fragile.json");
    let scenario = root("tests/check/order-fragile.jsonl");
    let (code, out, err) = idem(&["check", &fragile, "--scenario", &scenario, "--out", &file]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("  1. t=0 host 1 receives (deliver) pay-1"), "{out}");
    assert!(out.contains("expected (the same schedule with repeats removed)"), "{out}");
    assert!(out.contains(&format!("replay: idem check --replay {file}")), "{out}");
    assert!(out.lines().last().unwrap().starts_with("violated: "), "{out}");
    let (code, out, _) = idem(&["check", "--replay", &file, "--format", "json"]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["verdict"], "violated");
    assert_eq!(v["counterexample"]["actual"]["context"]["paid"], 80);
    // The trace no longer breaks a machine that records its payments.
    let mut ce: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    ce["machine"] = serde_json::from_str(&std::fs::read_to_string(root("www/machines/order-robust.json")).unwrap()).unwrap();
    let fixed = dir.join("fixed.json").to_string_lossy().to_string();
    std::fs::write(&fixed, ce.to_string()).unwrap();
    let (code, out, _) = idem(&["check", "--replay", &fixed]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("not reproduced"), "{out}");
    // The deliveries that stood run through `idem run` to the same context.
    let run: Vec<String> = v["counterexample"]["run"].as_array().unwrap().iter().map(|l| l.to_string()).collect();
    let events = dir.join("run.jsonl");
    std::fs::write(&events, run.join("\n")).unwrap();
    let (code, out, _) = idem(&["run", "--machine", &fragile, "--events", events.to_str().unwrap(), "--process", "p1"]);
    assert_eq!(code, 0);
    let last: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(last["snapshot"]["context"]["paid"], 80);
}

#[test]
fn the_cli_exit_status_says_proved_violated_inconclusive_or_usage() {
    let robust = root("www/machines/order-robust.json");
    let scenario = root("tests/check/order-fragile.jsonl");
    let (code, out, _) = idem(&["check", &robust, "--scenario", &scenario, "--format", "json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["verdict"], "proved");
    assert_eq!(v["bounds"]["reorder"], "all");
    assert!(v["collisionProbability"].as_f64().unwrap() < 1e-20);
    let (code, out, _) = idem(&["check", &robust, "--scenario", &root("tests/check/order-3.jsonl"), "--max-states", "100"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.starts_with("inconclusive (state limit of 100 reached)"), "{out}");
    for bad in [
        vec!["check", &robust],
        vec!["check", &robust, "--scenario", &scenario, "--reorder", "0"],
        vec!["check", &robust, "--scenario", &scenario, "--property", "fast"],
        vec!["check", &robust, "--scenario", &scenario, "--timeout", "-1"],
        vec!["check", "--replay", &scenario, "--hosts", "3"],
    ] {
        let (code, _, err) = idem(&bad);
        assert_eq!(code, 2, "{bad:?}: {err}");
        assert!(err.contains("\"code\":\"usage\""), "{err}");
    }
    let (code, _, err) = idem(&["check", &robust, "--scenario", &robust]);
    assert_eq!(code, 2);
    assert!(err.contains("scenario line 1"), "{err}");
}

#[test]
fn a_repeat_replays_the_first_reply_byte_for_byte() {
    // The default response and a respond whose members are written out of key order: the first
    // answer and its replay from the ledger are the same bytes, in this build (whose maps keep
    // insertion order) as in the lean one.
    let m = machine("www/machines/order-robust.json");
    let cancel = serde_json::json!({ "id": "c1", "type": "CANCEL", "payload": {} });
    let first = m.reduce_in("p1", None, &cancel, 1);
    let again = m.reduce_in("p1", first.snapshot.as_deref(), &cancel, 2);
    assert_eq!(first.response.to_string(), r#"{"revision":1,"state":"cancelled"}"#);
    assert_eq!(again.response.to_string(), first.response.to_string());
    let m = Machine::from_json(
        r#"{"id":"m","initial":"a","states":{"a":{"on":{"GO":{"target":"b","actions":[
            {"respond":{"z":1,"a":{"var":"event.type"}}},
            {"effect":{"type":"ship","payload":{"z":1,"a":{"var":"event.type"}}}}]}}},"b":{}}}"#,
    )
    .unwrap();
    let go = serde_json::json!({ "id": "g1", "type": "GO", "payload": {} });
    let first = m.reduce_in("p1", None, &go, 1);
    let again = m.reduce_in("p1", first.snapshot.as_deref(), &go, 2);
    assert_eq!(first.response.to_string(), r#"{"a":"GO","z":1}"#);
    assert_eq!(again.response.to_string(), first.response.to_string());
    let due = idem::outbox::due(&m, first.snapshot.as_deref().unwrap(), 1).unwrap();
    assert_eq!(serde_json::to_string(&first.effects[0].payload).unwrap(), r#"{"a":"GO","z":1}"#);
    assert!(serde_json::to_string(&due).unwrap().contains(r#""payload":{"a":"GO","z":1}"#), "{due:?}");
}

/// A scenario file of tests/scenarios as the checker reads it: its distinct events, in order.
fn scenario_of(name: &str) -> (Machine, Scenario) {
    let story: Value = serde_json::from_str(&std::fs::read_to_string(root(&format!("tests/scenarios/{name}.json"))).unwrap()).unwrap();
    let m = machine(&format!("tests/machines/{}", story["machine"].as_str().unwrap()));
    let mut ids = Vec::new();
    let mut lines = Vec::new();
    for step in story["steps"].as_array().unwrap() {
        let e = &step["event"];
        if e.is_object() && !ids.contains(&e["id"]) {
            ids.push(e["id"].clone());
            lines.push(e.to_string());
        }
    }
    let s = Scenario::parse(&m, &lines.join("\n")).unwrap();
    (m, s)
}

/// Every machine and scenario of tests/scenarios. Within the retention window
/// (no expiry) the ledger alone makes each one proved. With one expiry, the
/// machines whose topology accepts an event again (or that log every action
/// into their context) apply a late repeat a second time: each of those is
/// also flagged by the hazard analysis, so the two agree.
#[test]
fn the_repository_machines_are_proved_where_correct_and_violated_past_retention_where_the_lint_warns() {
    let past_retention = [
        "action-order",
        "always-counter",
        "ancestor-target",
        "charge-exhausted",
        "fragile-counter",
        "history",
        "ignored-default",
        "parallel-conflicts",
        "parallel-regions",
        "record-ignored",
        "reenter",
    ];
    let mut names: Vec<String> = std::fs::read_dir(root("tests/scenarios"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".json").to_string())
        .collect();
    names.sort();
    assert!(names.len() >= 18);
    for name in &names {
        let (m, s) = scenario_of(name);
        // Long stories in their own order keep the debug build quick (the demo
        // machines are checked in every order).
        let window = if s.events().count() > 4 { Some(1) } else { None };
        for expiries in [0, 1] {
            let opts = options(&s, |b| {
                b.expiries = expiries;
                b.reorder = window;
            });
            let r = explore::check(&m, &s, &opts, &mut || 0.0, &mut |_| {});
            let expect_violation = expiries == 1 && past_retention.contains(&name.as_str());
            match &r.verdict {
                Verdict::Proved => assert!(!expect_violation, "{name}: proved, expected a violation past retention"),
                Verdict::Violated(cx) => {
                    assert!(expect_violation, "{name} (expiries {expiries}): false alarm? {}", cx.violation);
                    assert!(cx.violation.starts_with("after a repeat of"), "{name}: {}", cx.violation);
                    assert!(cx.actions.iter().any(|a| matches!(a, Action::Advance { why: Clock::Expiry, .. })), "{name}");
                    let lint: Vec<String> = idem::analyze::analyze(&m).iter().map(|f| f.code.to_string()).collect();
                    assert!(lint.iter().any(|c| c.contains("reaccept") || c == "accumulating_assign"), "{name}: the lint sees nothing: {lint:?}");
                }
                Verdict::Inconclusive(why) => panic!("{name} (expiries {expiries}): inconclusive: {why}"),
            }
        }
    }
}

#[test]
fn the_demo_machines_are_proved_or_violated_as_their_descriptions_say() {
    for (m, want) in [
        ("www/machines/order-robust.json", "proved"),
        ("www/machines/order-robust-nokeys.json", "proved"),
        ("www/machines/order-parallel.json", "proved"),
        ("www/machines/order-fragile.json", "violated"),
    ] {
        let r = check(m, "tests/check/order-3.jsonl", |_| {});
        let got = match r.verdict {
            Verdict::Proved => "proved",
            Verdict::Violated(_) => "violated",
            Verdict::Inconclusive(_) => "inconclusive",
        };
        assert_eq!(got, want, "{m}");
    }
}

#[test]
fn confluence_is_opt_in_and_names_the_other_order() {
    let m = machine("www/machines/order-robust.json");
    let s = Scenario::parse(&m, &std::fs::read_to_string(root("tests/check/order-3.jsonl")).unwrap()).unwrap();
    let mut opts = options(&s, |_| {});
    opts.property = Property::Confluent;
    let r = explore::check(&m, &s, &opts, &mut || 0.0, &mut |_| {});
    // The payments set keeps arrival order: two orders settle with the same ids in another order.
    let cx = violated(&r);
    assert!(cx.violation.contains("another in"), "{}", cx.violation);
    assert!(cx.other_order.as_deref().is_some_and(|o| o.contains("shipped")), "{:?}", cx.other_order);
    assert!(!cx.steps.is_empty());
    // A door opened and closed settles closed whatever the order (within the retention window).
    let door = machine("tests/machines/door.json");
    let s = Scenario::parse(&door, "{\"id\":\"o1\",\"type\":\"OPEN\"}\n{\"id\":\"c1\",\"type\":\"CLOSE\"}").unwrap();
    let mut opts = options(&s, |b| b.expiries = 0);
    opts.property = Property::Confluent;
    let r = explore::check(&door, &s, &opts, &mut || 0.0, &mut |_| {});
    assert!(matches!(r.verdict, Verdict::Proved), "{:?}", r.verdict);
}
