//! The official JSONLogic test suite (tests/jsonlogic/tests.json, from jsonlogic.com)
//! run against idem's expression evaluator.

use serde_json::Value;

#[test]
fn official_suite_passes() {
    let text = include_str!("jsonlogic/tests.json");
    let cases: Vec<Value> = serde_json::from_str(text).unwrap();
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

fn numbers_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| numbers_equal(p, q)),
        _ => a == b,
    }
}

#[test]
fn unknown_operators_are_refused_on_load() {
    let mut exprs = idem::expr::Exprs::default();
    let err = exprs.compile_guard(&serde_json::json!({ "log": "x" }), "states.a.on.GO.guard").unwrap_err();
    assert_eq!(err.code, idem::Code::InvalidExpression);
    assert_eq!(err.path.as_deref(), Some("states.a.on.GO.guard"));
}

#[test]
fn objects_with_non_operator_keys_are_templates() {
    let rule = serde_json::json!({ "amount": { "var": "total" }, "items": [{ "id": { "var": "id" } }] });
    let out = idem::expr::apply(&rule, &serde_json::json!({ "total": 5, "id": "x" })).unwrap();
    assert_eq!(out, serde_json::json!({ "amount": 5, "items": [{ "id": "x" }] }));
    let single = idem::expr::apply(&serde_json::json!({ "amount": { "var": "total" } }), &serde_json::json!({ "total": 7 })).unwrap();
    assert_eq!(single, serde_json::json!({ "amount": 7 }));
}
