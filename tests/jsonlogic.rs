//! The official JSONLogic test suite (tests/jsonlogic/tests.json, from jsonlogic.com)
//! run against idem's expression evaluator.

#[path = "jsonlogic/suite.rs"]
mod suite;

#[test]
fn official_suite_passes() {
    suite::official_suite_passes();
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
