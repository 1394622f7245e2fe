//! Every scenario of tests/scenarios/ through the exported `Machine`, with real
//! JavaScript values (definitions and events are `JSON.parse`d objects, outcomes
//! are read back with `JSON.stringify`), compared byte for byte with the native
//! engine's answers committed in tests/golden/ (tests/golden.rs keeps them
//! current and checks that this file names every scenario and machine).

use super::runner::{self, Api};
use idem::wasm::Machine;
use js_sys::{Reflect, JSON};
use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

macro_rules! machine {
    ($file:literal) => {
        ($file, include_str!(concat!("../machines/", $file)))
    };
}

/// tests/machines/, by file name.
pub const MACHINES: &[(&str, &str)] = &[
    machine!("ancestor-target.json"),
    machine!("counter100.json"),
    machine!("door.json"),
    machine!("eventless-after-any-event.json"),
    machine!("fragile-counter.json"),
    machine!("history.json"),
    machine!("nested.json"),
    machine!("order.json"),
    machine!("parallel-conflicts.json"),
    machine!("parallel-regions.json"),
    machine!("payment-noidem.json"),
    machine!("payment.json"),
    machine!("raise-and-initial-step.json"),
    machine!("record-ignored.json"),
    machine!("reenter.json"),
    machine!("runaway.json"),
];

macro_rules! scenario {
    ($test:ident, $name:literal) => {
        #[wasm_bindgen_test]
        fn $test() {
            check(
                $name,
                include_str!(concat!("../scenarios/", $name, ".json")),
                include_str!(concat!("../golden/scenarios/", $name, ".jsonl")),
            );
        }
    };
}

scenario!(action_order, "action-order");
scenario!(after_timeout, "after-timeout");
scenario!(always_counter, "always-counter");
scenario!(charge_exhausted, "charge-exhausted");
scenario!(charge_idempotent, "charge-idempotent");
scenario!(charge_verify, "charge-verify");
scenario!(fragile_counter, "fragile-counter");
scenario!(ignored_default, "ignored-default");
scenario!(order_partial_payments, "order-partial-payments");
scenario!(record_ignored, "record-ignored");
scenario!(reenter, "reenter");
scenario!(runaway, "runaway");
scenario!(ancestor_target, "ancestor-target");
scenario!(eventless_after_any_event, "eventless-after-any-event");
scenario!(parallel_regions, "parallel-regions");
scenario!(parallel_conflicts, "parallel-conflicts");
scenario!(history, "history");
scenario!(raise_and_initial_step, "raise-and-initial-step");

/// The definition text of a machine of tests/machines/.
pub fn machine_text(file: &str) -> &'static str {
    MACHINES.iter().find(|(f, _)| *f == file).unwrap_or_else(|| panic!("{file} is not in MACHINES")).1
}

/// A JavaScript value from JSON text (`JSON.parse`).
pub fn js(text: &str) -> JsValue {
    JSON::parse(text).unwrap_or_else(|e| panic!("JSON.parse failed on {text}: {e:?}"))
}

/// A JavaScript value read back as JSON (`JSON.stringify`).
pub fn value(v: &JsValue) -> Value {
    let text = JSON::stringify(v).ok().and_then(|s| s.as_string()).unwrap_or_else(|| panic!("not JSON-serialisable: {v:?}"));
    serde_json::from_str(&text).unwrap()
}

/// A property of a JavaScript value, if it is a string.
pub fn prop(v: &JsValue, name: &str) -> Option<String> {
    Reflect::get(v, &name.into()).ok().and_then(|p| p.as_string())
}

/// A thrown error as the golden files write it (`{ code, message, path? }`).
fn thrown(e: &JsValue) -> Value {
    let mut info = json!({ "code": prop(e, "code"), "message": prop(e, "message") });
    if let Some(p) = prop(e, "path") {
        info["path"] = p.into();
    }
    json!({ "thrown": info })
}

/// The exported `Machine`, called as JavaScript calls it.
struct Js(Machine);

impl Api for Js {
    fn reduce(&self, snapshot: Option<&str>, event: &Value, now: u64, process: Option<&str>) -> Value {
        let out = self.0.reduce(snap(snapshot.map(str::to_string)), js(&event.to_string()), now as f64, process.map_or(JsValue::UNDEFINED, JsValue::from));
        out.map_or_else(|e| thrown(&e), |o| value(&o))
    }

    fn due(&self, snapshot: &str, now: u64) -> Value {
        self.0.due(JsValue::from(snapshot), now as f64).map_or_else(|e| thrown(&e), |o| value(&o))
    }

    fn inspect(&self, snapshot: &str) -> Value {
        self.0.inspect(JsValue::from(snapshot)).map_or_else(|e| thrown(&e), |o| value(&o))
    }
}

fn new_machine(definition: &str) -> Machine {
    Machine::new(js(definition), wasm_bindgen::JsValue::UNDEFINED, wasm_bindgen::JsValue::UNDEFINED).unwrap_or_else(|e| panic!("Machine constructor threw {}", thrown(&e)))
}

fn check(name: &str, scenario: &str, golden: &str) {
    let file = serde_json::from_str::<Value>(scenario).unwrap()["machine"].as_str().unwrap().to_string();
    let lines = runner::run(scenario, &Js(new_machine(machine_text(&file))));
    if let Err(diff) = runner::compare(golden, &lines) {
        panic!("scenario {name}: the wasm engine differs from the native one (tests/golden/scenarios/{name}.jsonl): {diff}");
    }
}

/// The hazard analysis and the XState import answer as the native ones do.
#[cfg(feature = "analysis")]
mod analysis {
    use super::*;

    macro_rules! xstate {
        ($file:literal) => {
            ($file, include_str!(concat!("../analysis/xstate/", $file)))
        };
    }

    /// tests/analysis/xstate/, by file name.
    const XSTATE: &[(&str, &str)] = &[
        xstate!("auth-v4.json"),
        xstate!("checkout-invoke.json"),
        xstate!("checkout.json"),
        xstate!("media-player.json"),
        xstate!("order-parallel.json"),
        xstate!("signup.json"),
    ];

    #[wasm_bindgen_test]
    fn findings_and_imports_match_the_native_ones() {
        let mut lines = Vec::new();
        for (file, text) in MACHINES {
            let findings = value(&new_machine(text).analyze());
            lines.push(runner::canonical(&json!({ "machine": file, "findings": findings })));
        }
        for (file, text) in XSTATE {
            // As a user has it: `JSON.stringify(machine.config)`, passed as an object.
            let imported = idem::wasm::import_xstate(js(text)).map_or_else(|e| thrown(&e), |o| value(&o));
            lines.push(runner::canonical(&json!({ "xstate": file, "import": imported })));
        }
        if let Err(diff) = runner::compare(include_str!("../golden/analysis.jsonl"), &lines) {
            panic!("analysis differs from the native one (tests/golden/analysis.jsonl): {diff}");
        }
    }
}

/// A stored snapshot as the JavaScript API takes it: the string, or null.
pub fn snap(snapshot: Option<String>) -> JsValue {
    snapshot.map_or(JsValue::NULL, JsValue::from)
}
