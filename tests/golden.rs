//! Golden files for the wasm boundary tests. The wasm suites cannot run native
//! code, so the native engine's answers to every scenario of tests/scenarios/
//! are committed as tests/golden/scenarios/<scenario>.jsonl (the format is
//! described in tests/wasm_shared/runner.rs), and its hazard findings for every
//! machine of tests/machines/ and its imports of tests/analysis/xstate/ as
//! tests/golden/analysis.jsonl. The wasm tests compare the JavaScript-facing
//! values with them byte for byte. This test keeps the goldens current:
//!
//!     IDEM_BLESS=1 cargo test --test golden      # regenerate after a deliberate change

#[path = "wasm_shared/runner.rs"]
mod runner;

use idem::Machine;
use runner::Api;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The native engine, answering as `pkg/src/*.js` does (see src/wasm/):
/// `snapshot` is the string to store, the input one when nothing changed.
struct Native(Machine);

impl Api for Native {
    fn reduce(&self, snapshot: Option<&str>, event: &Value, now: u64, process: Option<&str>) -> Value {
        let o = self.0.reduce_in(process.unwrap_or(""), snapshot, &event.to_string(), now);
        let mut out = o.to_json(false);
        out["snapshot"] = match (o.snapshot.as_deref(), snapshot) {
            (Some(s), _) | (None, Some(s)) => Value::String(s.to_string()),
            (None, None) => Value::Null,
        };
        out
    }

    fn due(&self, snapshot: &str, now: u64) -> Value {
        idem::outbox::due(&self.0, snapshot, now).map_or_else(|e| json!({ "thrown": e.to_json() }), Value::Array)
    }

    fn inspect(&self, snapshot: &str) -> Value {
        idem::inspect(&self.0, snapshot).unwrap_or_else(|e| json!({ "thrown": e.to_json() }))
    }
}

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn scenario_names() -> Vec<String> {
    files("scenarios", ".json").into_iter().map(|n| n.trim_end_matches(".json").to_string()).collect()
}

/// The golden lines of one scenario, computed by the native engine.
fn native_lines(name: &str) -> Vec<String> {
    let dir = tests_dir();
    let text = std::fs::read_to_string(dir.join("scenarios").join(format!("{name}.json"))).unwrap();
    let scenario: Value = serde_json::from_str(&text).unwrap();
    let machine_file = scenario["machine"].as_str().unwrap();
    let definition = std::fs::read_to_string(dir.join("machines").join(machine_file)).unwrap();
    runner::run(&text, &Native(Machine::from_json(&definition).unwrap()))
}

#[test]
fn goldens_match_the_native_engine() {
    let bless = std::env::var_os("IDEM_BLESS").is_some_and(|v| v == "1");
    let golden_dir = tests_dir().join("golden/scenarios");
    let mut stale = Vec::new();
    for name in scenario_names() {
        let lines = native_lines(&name);
        let path = golden_dir.join(format!("{name}.jsonl"));
        if bless {
            std::fs::create_dir_all(&golden_dir).unwrap();
            std::fs::write(&path, lines.join("\n") + "\n").unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(golden) => {
                if let Err(diff) = runner::compare(&golden, &lines) {
                    stale.push(format!("tests/golden/scenarios/{name}.jsonl: {diff}"));
                }
            }
            Err(_) => stale.push(format!("tests/golden/scenarios/{name}.jsonl is missing")),
        }
    }
    #[cfg(feature = "analysis")]
    {
        let lines = analysis_lines();
        let path = tests_dir().join("golden/analysis.jsonl");
        if bless {
            std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        } else {
            match std::fs::read_to_string(&path) {
                Ok(golden) => {
                    if let Err(diff) = runner::compare(&golden, &lines) {
                        stale.push(format!("tests/golden/analysis.jsonl: {diff}"));
                    }
                }
                Err(_) => stale.push("tests/golden/analysis.jsonl is missing".to_string()),
            }
        }
    }
    assert!(
        stale.is_empty(),
        "the golden files differ from the native engine:\n{}\n\nIf the change is deliberate, regenerate them with\n    IDEM_BLESS=1 cargo test --test golden\nand commit tests/golden/ (the wasm suites compare against it).",
        stale.join("\n")
    );
}

#[test]
fn no_golden_without_its_scenario() {
    let names = scenario_names();
    // A missing directory is reported by goldens_match_the_native_engine.
    let Ok(dir) = std::fs::read_dir(tests_dir().join("golden/scenarios")) else { return };
    for f in dir {
        let file = f.unwrap().file_name().into_string().unwrap();
        let stem = file.strip_suffix(".jsonl").unwrap_or(&file);
        assert!(names.iter().any(|n| n == stem), "tests/golden/scenarios/{file} has no scenario in tests/scenarios/: delete it");
    }
}

fn files(dir: &str, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(tests_dir().join(dir))
        .unwrap()
        .map(|f| f.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(ext))
        .collect();
    names.sort();
    names
}

/// `m.analyze()` of every machine, then `importXState(config)` of every XState config.
#[cfg(feature = "analysis")]
fn analysis_lines() -> Vec<String> {
    let mut lines = Vec::new();
    for file in files("machines", ".json") {
        let m = Machine::from_json(&std::fs::read_to_string(tests_dir().join("machines").join(&file)).unwrap()).unwrap();
        let findings = serde_json::to_value(idem::analyze::analyze(&m)).unwrap();
        lines.push(runner::canonical(&json!({ "machine": file, "findings": findings })));
    }
    for file in files("analysis/xstate", ".json") {
        let text = std::fs::read_to_string(tests_dir().join("analysis/xstate").join(&file)).unwrap();
        let out = idem::xstate::import_json(&text).unwrap();
        let imported = json!({ "definition": out.definition, "diagnostics": out.diagnostics, "kept": out.kept, "needs": out.needs });
        lines.push(runner::canonical(&json!({ "xstate": file, "import": imported })));
    }
    lines
}

/// Every scenario, machine and XState config is included by the wasm suites.
#[test]
fn wasm_suites_run_every_scenario() {
    let wasm = include_str!("wasm_shared/scenarios.rs");
    for file in files("machines", ".json") {
        assert!(wasm.contains(&format!("machine!(\"{file}\")")), "tests/machines/{file} is not in MACHINES of tests/wasm_shared/scenarios.rs");
    }
    for file in files("analysis/xstate", ".json") {
        assert!(wasm.contains(&format!("xstate!(\"{file}\")")), "tests/analysis/xstate/{file} is not in XSTATE of tests/wasm_shared/scenarios.rs");
    }
    for name in scenario_names() {
        assert!(
            wasm.contains(&format!("scenario!({}, \"{name}\")", name.replace('-', "_"))),
            "tests/scenarios/{name}.json is not run by tests/wasm_shared/scenarios.rs: add `scenario!({}, \"{name}\");`",
            name.replace('-', "_")
        );
    }
}

/// The runner's canonical form and its comparison report the first difference.
#[test]
fn canonical_lines_and_differences() {
    assert_eq!(runner::canonical(&json!({ "b": 3.0, "a": [1.5, { "2": 0, "10": 1 }] })), r#"{"a":[1.5,{"10":1,"2":0}],"b":3}"#);
    let err = runner::compare("{\"a\":{\"b\":1}}\n", &["{\"a\":{\"b\":2}}".to_string()]).unwrap_err();
    assert!(err.contains("line 1 differs at .a.b"), "{err}");
    let err = runner::compare("{}\n{}\n", &["{}".to_string()]).unwrap_err();
    assert!(err.contains("golden has 2 lines, the run produced 1"), "{err}");
    assert!(runner::compare("{}\n", &["{}".to_string()]).is_ok());
}
