//! The scenario runner shared by the native golden test (`tests/golden.rs`) and
//! the wasm boundary tests: it walks a scenario file of tests/scenarios/ through
//! an engine seen as JavaScript sees it, and writes one canonical JSON line per
//! step. Pure serde_json, no bindings, so both targets compile it.
//!
//! Lines, one per step, then one for the end:
//!
//! ```text
//! {"outcome":{...what m.reduce returns, snapshot string included...},"step":0}
//! {"due":[...what m.due returns...],"step":3}
//! {"save":"name","step":4}   {"restore":"name","step":5}
//! {"end":{...m.inspect(last snapshot)...}}   ({"end":null} when no process exists)
//! ```
//!
//! Canonical text: object keys sorted, and a whole float written as an integer.
//! A JavaScript engine has one number type (`JSON.parse("3.0")` is `3`) and lists
//! integer-like keys first, so this is the one form in which the native engine
//! and the JavaScript values can be compared byte for byte. Strings, the
//! snapshot among them, are compared exactly.

use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// The engine's JavaScript API, with the values as JavaScript receives them.
pub trait Api {
    /// `m.reduce(snapshot, event, nowMs, processId)`.
    fn reduce(&self, snapshot: Option<&str>, event: &Value, now: u64, process: Option<&str>) -> Value;
    /// `m.due(snapshot, nowMs)`.
    fn due(&self, snapshot: &str, now: u64) -> Value;
    /// `m.inspect(snapshot)`.
    fn inspect(&self, snapshot: &str) -> Value;
}

/// Run one scenario (its JSON text) and return its canonical lines.
pub fn run(scenario: &str, api: &dyn Api) -> Vec<String> {
    let scenario: Value = serde_json::from_str(scenario).expect("scenario is json");
    let process = scenario["process"].as_str();
    let mut snapshot: Option<String> = None;
    let mut saved: HashMap<String, Option<String>> = HashMap::new();
    let mut lines = Vec::new();
    for (i, step) in scenario["steps"].as_array().expect("steps").iter().enumerate() {
        let now = step["now"].as_u64().unwrap_or(i as u64 + 1);
        let line = if let Some(name) = step["save"].as_str() {
            saved.insert(name.to_string(), snapshot.clone());
            json!({ "step": i, "save": name })
        } else if let Some(name) = step["restore"].as_str() {
            snapshot = saved[name].clone();
            json!({ "step": i, "restore": name })
        } else if step.get("due").is_some() {
            let snap = snapshot.as_deref().expect("a due step needs a process");
            json!({ "step": i, "due": api.due(snap, now) })
        } else {
            let out = api.reduce(snapshot.as_deref(), &step["event"], now, process);
            // What a host stores: `out.snapshot` (the input one when nothing changed).
            snapshot = out["snapshot"].as_str().map(str::to_string);
            json!({ "step": i, "outcome": out })
        };
        lines.push(canonical(&line));
    }
    let end = snapshot.as_deref().map_or(Value::Null, |s| api.inspect(s));
    lines.push(canonical(&json!({ "end": end })));
    lines
}

/// The canonical JSON text of a value (see the module docs).
pub fn canonical(v: &Value) -> String {
    canon(v).to_string()
}

fn canon(v: &Value) -> Value {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), canon(&o[k]))).collect::<Map<_, _>>())
        }
        Value::Array(a) => Value::Array(a.iter().map(canon).collect()),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_991.0 => {
                Value::from(f as i64)
            }
            _ => v.clone(),
        },
        _ => v.clone(),
    }
}

/// Compare produced lines with the golden text; `Err` names the first
/// difference (line, step and JSON path) so a failure reads at a glance.
pub fn compare(golden: &str, got: &[String]) -> Result<(), String> {
    let want: Vec<&str> = golden.lines().collect();
    for (n, (w, g)) in want.iter().zip(got).enumerate() {
        if *w != g.as_str() {
            let path = match (serde_json::from_str::<Value>(w), serde_json::from_str::<Value>(g)) {
                (Ok(a), Ok(b)) => first_difference(&a, &b, String::new()).unwrap_or_else(|| "(formatting)".into()),
                _ => "(not json)".into(),
            };
            return Err(format!("line {} differs at {path}\n  golden: {w}\n     got: {g}", n + 1));
        }
    }
    if want.len() != got.len() {
        return Err(format!("golden has {} lines, the run produced {}", want.len(), got.len()));
    }
    Ok(())
}

fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let (p, q) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                if x.contains_key(k) != y.contains_key(k) {
                    return Some(format!("{at}.{k} (present on one side only)"));
                }
                if let Some(d) = first_difference(p, q, format!("{at}.{k}")) {
                    return Some(d);
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (p, q))| first_difference(p, q, format!("{at}[{i}]")))
        }
        _ if a == b => None,
        _ => Some(if at.is_empty() { "the top level".into() } else { at }),
    }
}
