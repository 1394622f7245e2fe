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
fn objects_of_two_or_more_members_are_templates() {
    let rule = serde_json::json!({ "amount": { "var": "total" }, "items": [{ "eachKey": { "id": { "var": "id" } } }] });
    let out = idem::expr::apply(&rule, &serde_json::json!({ "total": 5, "id": "x" })).unwrap();
    assert_eq!(out, serde_json::json!({ "amount": 5, "items": [{ "id": "x" }] }));
}

/// An object of one member is an operator: one idem does not know is refused
/// on load, wherever it is in the expression, with the expression's path.
#[test]
fn an_unknown_operator_anywhere_is_refused_on_load() {
    let rules = [
        serde_json::json!({ "plus": [1, 2] }),
        serde_json::json!({ "+": [{ "var": "context.n" }, { "plsu": 1 }] }),
        serde_json::json!([1, { "amount": 3 }]),
        serde_json::json!({ "a": 1, "b": { "cat": ["x", { "Var": "y" }] } }),
        serde_json::json!({ "eachKey": { "a": { "x": 1 } } }),
        serde_json::json!({ "var": ["context.a", { "b": 1 }] }),
    ];
    for rule in rules {
        let mut exprs = idem::expr::Exprs::default();
        let err = exprs.compile(&rule, "states.a.on.GO.actions[0].assign.x").unwrap_err();
        assert_eq!(err.code, idem::Code::InvalidExpression, "{rule}");
        assert_eq!(err.path.as_deref(), Some("states.a.on.GO.actions[0].assign.x"), "{rule}");
        assert!(err.message.starts_with("unknown operator \""), "{rule}: {}", err.message);
        assert!(err.message.contains("preserve"), "the message says how to write data: {}", err.message);
    }
    // In a machine: the definition does not load, naming the action's path.
    let def = r#"{"id":"m","initial":"a","context":{},"states":{"a":{"on":{"GO":{"actions":[{"assign":{"x":{"plus":[1,2]}}}]}}}}}"#;
    let err = idem::Machine::from_json(def).unwrap_err();
    assert_eq!(err.code, idem::Code::InvalidExpression);
    assert_eq!(err.message, "unknown operator \"plus\" (an object of one member is an operator; write data as {\"preserve\": {\"plus\": ...}}) at states.a.on.GO.actions[0].assign.x");
}

/// `preserve` gives its argument as data, never evaluated (json-logic-engine's
/// operator); `eachKey` builds an object from one expression per member.
#[test]
fn preserve_is_data_and_each_key_builds_objects() {
    let data = serde_json::json!({ "n": 4 });
    let check = |rule: serde_json::Value, want: serde_json::Value| {
        assert_eq!(idem::expr::apply(&rule, &data).unwrap(), want, "{rule}");
    };
    check(serde_json::json!({ "preserve": { "plus": [1, 2] } }), serde_json::json!({ "plus": [1, 2] }));
    check(serde_json::json!({ "preserve": { "var": "n" } }), serde_json::json!({ "var": "n" }));
    check(serde_json::json!({ "preserve": [{ "a": 1 }, { "+": [1, 2] }] }), serde_json::json!([{ "a": 1 }, { "+": [1, 2] }]));
    check(serde_json::json!({ "preserve": {} }), serde_json::json!({}));
    check(serde_json::json!({ "preserve": null }), serde_json::json!(null));
    check(serde_json::json!({ "eachKey": { "amount": { "var": "n" } } }), serde_json::json!({ "amount": 4 }));
    check(serde_json::json!({ "eachKey": { "a": { "preserve": { "b": 1 } } } }), serde_json::json!({ "a": { "b": 1 } }));
    check(serde_json::json!({ "eachKey": {} }), serde_json::json!({}));
    check(serde_json::json!({ "x": { "preserve": { "in": 1 } }, "y": [{ "preserve": { "min": 2 } }] }), serde_json::json!({ "x": { "in": 1 }, "y": [{ "min": 2 }] }));
    let err = idem::expr::Exprs::default().compile(&serde_json::json!({ "eachKey": [1] }), "p").unwrap_err();
    assert_eq!(err.code, idem::Code::InvalidExpression);
}

/// Arithmetic takes numbers, and strings that are numbers; anything else
/// fails the evaluation, naming the operator and the argument, where
/// JSONLogic would count it as 0 or 1 or give NaN (docs/expressions.md).
#[test]
fn arithmetic_never_makes_a_number_up() {
    let data = serde_json::json!({ "n": 4, "s": "2.5", "blank": " ", "t": true, "z": null, "a": [5], "o": {} });
    let ok = [
        (serde_json::json!({ "+": [{ "var": "n" }, { "var": "s" }] }), serde_json::json!(6.5)),
        (serde_json::json!({ "*": [" 3 ", "0x10"] }), serde_json::json!(48)),
        (serde_json::json!({ "-": [{ "var": "n" }] }), serde_json::json!(-4)),
        (serde_json::json!({ "max": [1, "7", 3] }), serde_json::json!(7)),
        (serde_json::json!({ "+": [{ "var": ["missing", 0] }, 1] }), serde_json::json!(1)),
        (serde_json::json!({ "+": [] }), serde_json::json!(0)),
    ];
    for (rule, want) in ok {
        assert_eq!(idem::expr::apply(&rule, &data).unwrap(), want, "{rule}");
    }
    let fails = [
        (serde_json::json!({ "+": [{ "var": "n" }, { "var": "missing" }] }), "\"+\" takes numbers, but its argument 2 is null (a missing value reads as null)"),
        (serde_json::json!({ "+": [{ "var": "z" }, 1] }), "\"+\" takes numbers, but its argument 1 is null (a missing value reads as null)"),
        (serde_json::json!({ "-": [{ "var": "t" }, 1] }), "\"-\" takes numbers, but its argument 1 is a boolean"),
        (serde_json::json!({ "*": [2, { "var": "a" }] }), "\"*\" takes numbers, but its argument 2 is an array"),
        (serde_json::json!({ "/": [{ "var": "o" }, 1] }), "\"/\" takes numbers, but its argument 1 is an object"),
        (serde_json::json!({ "%": [5, { "var": "blank" }] }), "\"%\" takes numbers, but its argument 2 is a string that is not a number"),
        (serde_json::json!({ "min": [1, "abc"] }), "\"min\" takes numbers, but its argument 2 is a string that is not a number"),
        (serde_json::json!({ "max": [""] }), "\"max\" takes numbers, but its argument 1 is a string that is not a number"),
        (serde_json::json!({ "/": [1] }), "\"/\" takes numbers, but its argument 2 is null (a missing value reads as null)"),
        (serde_json::json!({ "/": [1, 0] }), "an arithmetic result is not a finite number"),
        (serde_json::json!({ "max": [] }), "an arithmetic result is not a finite number"),
    ];
    for (rule, why) in fails {
        let err = idem::expr::apply(&rule, &data).unwrap_err();
        assert_eq!(err.code, idem::Code::ExpressionFailed, "{rule}");
        assert_eq!(err.message, format!("expression failed: {why}"), "{rule}");
    }
}

/// `cat` joins as json-logic-js does (JavaScript's `join`): a missing value
/// or null adds nothing, rather than the text "null".
#[test]
fn cat_reads_a_missing_value_as_nothing() {
    let data = serde_json::json!({ "n": null, "xs": [1, null, 2] });
    let rule = serde_json::json!({ "cat": ["a", { "var": "n" }, { "var": "missing" }, "-", { "var": "xs" }, null] });
    assert_eq!(idem::expr::apply(&rule, &data).unwrap(), serde_json::json!("a-1,,2"));
}

/// Comparisons keep JavaScript's answers, which json-logic-js gives: an
/// array or object is compared as its string (`[]` is `""`, `[5]` is `"5"`),
/// and two strings compare as strings; null is 0 against a number.
#[test]
fn comparisons_read_arrays_and_objects_as_javascript_does() {
    let cases = [
        (serde_json::json!({ "<": [[], "a"] }), true),
        (serde_json::json!({ "<": [[5], "6"] }), true),
        (serde_json::json!({ ">": [[10], "9"] }), false),
        (serde_json::json!({ ">": [{ "preserve": { "x": 1 } }, "["] }), true),
        (serde_json::json!({ "<": [[1, 2], 3] }), false),
        (serde_json::json!({ "<=": [[], 0] }), true),
        (serde_json::json!({ "<": [null, 1] }), true),
        (serde_json::json!({ ">=": [{ "var": "missing" }, 0] }), true),
    ];
    for (rule, want) in cases {
        assert_eq!(idem::expr::apply(&rule, &serde_json::json!({})).unwrap(), serde_json::json!(want), "{rule}");
    }
}
