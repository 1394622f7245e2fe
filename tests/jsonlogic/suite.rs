//! The official JSONLogic test suite (tests.json here, from jsonlogic.com) run
//! against idem's evaluator: shared by the native tests (tests/jsonlogic.rs) and
//! the wasm ones (tests/wasm_shared/jsonlogic.rs).

use serde_json::Value;

/// Runs every case and panics with the failures, if any.
pub fn official_suite_passes() {
    let cases: Vec<Value> = serde_json::from_str(include_str!("tests.json")).unwrap();
    let mut run = 0;
    let mut failures = Vec::new();
    for case in cases {
        let Value::Array(c) = case else { continue }; // section headings are strings
        let (rule, data, expected) = (&c[0], &c[1], &c[2]);
        match idem::expr::apply(rule, data) {
            Ok(got) if numbers_equal(&got, expected) => {}
            other => failures.push(format!("{rule} with {data}: expected {expected}, got {other:?}")),
        }
        run += 1;
    }
    assert!(run > 250, "suite too small: {run}");
    assert!(failures.is_empty(), "{} of {run} failed:\n{}", failures.len(), failures.join("\n"));
}

/// Equal, numbers compared as `f64` (`1` and `1.0` alike).
fn numbers_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| numbers_equal(p, q)),
        _ => a == b,
    }
}
