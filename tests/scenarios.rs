//! Data-driven scenarios: a machine file, a stream of events with the time each
//! arrives, and the outcome expected for each. One file per story in
//! tests/scenarios/; the wasm suites run the same files.

use idem::Machine;
use serde_json::{json, Value};
use std::path::Path;

/// Run one scenario file; panics with the step number and what differed.
fn check(file: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let text = std::fs::read_to_string(dir.join("scenarios").join(file)).unwrap();
    let scenario: Value = serde_json::from_str(&text).unwrap();
    let machine_file = scenario["machine"].as_str().unwrap();
    let machine = Machine::from_json(&std::fs::read_to_string(dir.join("machines").join(machine_file)).unwrap()).unwrap();
    let process = scenario["process"].as_str().unwrap_or("");
    let mut snapshot: Option<String> = None;
    let mut saved: std::collections::HashMap<String, Option<String>> = Default::default();
    for (i, step) in scenario["steps"].as_array().unwrap().iter().enumerate() {
        let at = format!("{file} step {i} ({step})");
        let now = step["now"].as_u64().unwrap_or(i as u64 + 1);
        if let Some(name) = step["save"].as_str() {
            saved.insert(name.to_string(), snapshot.clone());
            continue;
        }
        if let Some(name) = step["restore"].as_str() {
            snapshot = saved[name].clone();
            continue;
        }
        if let Some(kinds) = step.get("due") {
            let items = idem::outbox::due(&machine, snapshot.as_deref().unwrap(), now).unwrap();
            let got: Vec<String> = items
                .iter()
                .map(|d| format!("{}:{}", d["kind"].as_str().unwrap(), d["type"].as_str().or(d["state"].as_str()).unwrap()))
                .collect();
            assert_eq!(json!(got), *kinds, "{at}: due items {items:?}");
            continue;
        }
        let out = machine.reduce_in(process, snapshot.as_deref(), &step["event"], now);
        let got = out.to_json(true);
        let expect = step["expect"].as_object().unwrap();
        for (k, want) in expect {
            let have = match k.as_str() {
                "context" => got["snapshot"]["context"].clone(),
                "code" => got["error"]["code"].clone(),
                "effects" => json!(out.effects.iter().map(|e| e.effect_type.clone()).collect::<Vec<_>>()),
                "effectKeys" => json!(out.effects.iter().map(|e| e.key.clone()).collect::<Vec<_>>()),
                "ledger" => json!(idem::inspect(&machine, out.snapshot.as_deref().or(snapshot.as_deref()).unwrap())
                    .unwrap()["ledger"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| e["id"].clone())
                    .collect::<Vec<_>>()),
                "outbox" => json!(idem::inspect(&machine, out.snapshot.as_deref().or(snapshot.as_deref()).unwrap())
                    .unwrap()["outbox"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| format!("{}:{}:{}", e["key"].as_str().unwrap(), e["state"].as_str().unwrap(), e["attempts"]))
                    .collect::<Vec<_>>()),
                other => got[other].clone(),
            };
            assert_eq!(have, *want, "{at}: {k} differs; outcome {got}");
        }
        if out.snapshot.is_some() {
            snapshot = out.snapshot;
        }
    }
}

#[test]
fn order_partial_payments() {
    check("order-partial-payments.json");
}

#[test]
fn fragile_counter() {
    check("fragile-counter.json");
}

#[test]
fn record_ignored() {
    check("record-ignored.json");
}

#[test]
fn ignored_not_recorded_by_default() {
    check("ignored-default.json");
}

#[test]
fn action_order_nested() {
    check("action-order.json");
}

#[test]
fn always_counts_to_100() {
    check("always-counter.json");
}

#[test]
fn reenter_and_targetless() {
    check("reenter.json");
}

#[test]
fn charge_lost_response_retry() {
    check("charge-idempotent.json");
}

#[test]
fn charge_non_idempotent_verify() {
    check("charge-verify.json");
}

#[test]
fn charge_exhausted_escalates() {
    check("charge-exhausted.json");
}

#[test]
fn delayed_transition() {
    check("after-timeout.json");
}

#[test]
fn runaway_always_is_an_error_not_a_hang() {
    check("runaway.json");
}

#[test]
fn ancestor_target() {
    check("ancestor-target.json");
}

#[test]
fn eventless_after_any_event() {
    check("eventless-after-any-event.json");
}

#[test]
fn parallel_regions() {
    check("parallel-regions.json");
}

#[test]
fn parallel_conflicts() {
    check("parallel-conflicts.json");
}

#[test]
fn history() {
    check("history.json");
}

#[test]
fn raise_and_initial_step() {
    check("raise-and-initial-step.json");
}

#[test]
fn scenario_files_all_have_tests() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let this = include_str!("scenarios.rs");
    for f in std::fs::read_dir(dir).unwrap() {
        let name = f.unwrap().file_name().into_string().unwrap();
        assert!(this.contains(&format!("check(\"{name}\")")), "{name} is not run by any test");
    }
}
