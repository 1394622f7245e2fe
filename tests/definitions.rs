//! Definitions are validated once, on load; every error has a stable code and
//! names the JSON path of what is wrong.

use idem::{Code, Machine};
use serde_json::{json, Value};

fn check(def: Value, code: Code, path: &str) {
    let err = Machine::from_value(def.clone()).expect_err(&format!("accepted {def}"));
    assert_eq!(err.code, code, "{def}: {err}");
    assert_eq!(err.path.as_deref(), Some(path), "{def}: {err}");
    assert!(err.message.contains(path), "message names the path: {}", err.message);
    assert!(!err.message.ends_with('.'), "no trailing period: {}", err.message);
}

#[test]
fn invalid_definitions_name_their_path() {
    let base = |states: Value| json!({ "id": "m", "initial": "a", "states": states });
    check(base(json!({ "a": { "on": { "GO": "shiped" } } })), Code::UnknownTarget, "states.a.on.GO");
    check(base(json!({ "a": { "on": { "GO": [{ "guard": true, "target": "b" }, { "target": "zz" }] } }, "b": {} })), Code::UnknownTarget, "states.a.on.GO[1].target");
    check(json!({ "id": "m", "initial": "x", "states": { "a": {} } }), Code::InvalidInitial, "initial");
    check(json!({ "id": "m", "states": { "a": {} } }), Code::InvalidInitial, "initial");
    check(base(json!({ "a": { "states": { "b": {} } } })), Code::InvalidInitial, "states.a.initial");
    check(base(json!({ "a": { "on": { "GO": { "target": "a", "guard": { "nope": [1] } } } } })), Code::InvalidExpression, "states.a.on.GO.guard");
    // A name (XState's named guard or action) refers to `implementations`: without one it is refused,
    // never read as a JSONLogic string literal that would always be true.
    check(base(json!({ "a": { "on": { "GO": { "target": "a", "guard": "isPaid" } } } })), Code::Unimplemented, "states.a.on.GO.guard");
    check(base(json!({ "a": { "on": { "GO": [{ "target": "a", "guard": "" }] } } })), Code::InvalidGuard, "states.a.on.GO[0].guard");
    check(base(json!({ "a": { "always": { "target": "b", "guard": "ready" } }, "b": {} })), Code::Unimplemented, "states.a.always.guard");
    check(base(json!({ "a": { "after": { "1000": { "target": "a", "guard": "late" } } } })), Code::Unimplemented, "states.a.after.1000.guard");
    check(base(json!({ "a": { "entry": ["sendEmail"] } })), Code::Unimplemented, "states.a.entry[0]");
    check(base(json!({ "a": { "entry": [{ "raise": 7 }] } })), Code::InvalidDefinition, "states.a.entry[0].raise");
    check(base(json!({ "a": { "entry": [{ "raise": { "type": "idem.after" } }] } })), Code::InvalidDefinition, "states.a.entry[0].raise.type");
    check(base(json!({ "a": { "entry": [{ "log": "X" }] } })), Code::UnknownAction, "states.a.entry[0]");
    check(base(json!({ "a": { "id": "dup" }, "b": { "id": "dup" } })), Code::DuplicateStateId, "states.b.id");
    check(base(json!({ "a": { "always": { "target": "b" } }, "b": { "always": { "target": "a" } } })), Code::AlwaysLoop, "states.b.always");
    check(base(json!({ "a": { "always": [{ "actions": [{ "assign": { "x": 1 } }] }] } })), Code::AlwaysLoop, "states.a.always[0]");
    check(base(json!({ "a": { "entyr": [] } })), Code::InvalidDefinition, "states.a.entyr");
    check(base(json!({ "a": { "type": "parallel", "initial": "x", "states": { "x": {} } } })), Code::InvalidInitial, "states.a.initial");
    // A parallel state with no region would be a leaf that is not atomic (history records nothing of it).
    check(base(json!({ "a": { "type": "parallel" } })), Code::InvalidDefinition, "states.a.states");
    check(base(json!({ "a": { "type": "parallel", "states": { "h": { "type": "history" } } } })), Code::InvalidDefinition, "states.a.states");
    check(base(json!({ "a": {}, "h": { "type": "history", "history": "deeper" } })), Code::InvalidDefinition, "states.h.history");
    check(base(json!({ "a": { "history": "deep" } })), Code::InvalidDefinition, "states.a.history");
    check(base(json!({ "a": {}, "h": { "type": "history", "on": { "GO": "a" } } })), Code::InvalidDefinition, "states.h.on");
    check(base(json!({ "a": {}, "h": { "type": "history", "target": "nowhere" } })), Code::UnknownTarget, "states.h.target");
    check(base(json!({ "a": { "target": "b" } })), Code::InvalidDefinition, "states.a.target");
    check(base(json!({ "a": { "onDone": "b" } })), Code::InvalidDefinition, "states.a.onDone");
    check(base(json!({ "a": { "on": { "GO": { "target": ["b", "c"] } } }, "b": {}, "c": {} })), Code::InvalidDefinition, "states.a.on.GO.target");
    check(base(json!({ "a": { "on": { "GO": { "guard": { "in_state": "#m.nowhere" }, "target": "b" } } }, "b": {} })), Code::UnknownTarget, "states.a.on.GO.guard");
    check(base(json!({ "a": { "on": { "GO": { "guard": { "in_state": 3 }, "target": "b" } } }, "b": {} })), Code::InvalidExpression, "states.a.on.GO.guard");
    check(base(json!({ "a": { "after": { "soon": "a" } } })), Code::Unimplemented, "states.a.after.soon");
    check(base(json!({ "a": { "after": { "1.5": "a" } } })), Code::InvalidDefinition, "states.a.after.1.5");
    check(base(json!({ "a": { "entry": [{ "effect": { "payload": 1 } }] } })), Code::InvalidDefinition, "states.a.entry[0].effect.type");
    check(base(json!({ "a": { "entry": [{ "effect": { "type": "x", "retry": { "maxAttempts": 0 } } }] } })), Code::InvalidDefinition, "states.a.entry[0].effect.retry.maxAttempts");
    check(json!({ "id": "m", "initial": "a", "states": { "a": {} }, "retention": { "maxEntries": 0 } }), Code::InvalidDefinition, "retention.maxEntries");
    check(json!({ "initial": "a", "states": { "a": {} } }), Code::InvalidDefinition, "id");
    check(json!({ "id": "m", "initial": "a", "states": {} }), Code::InvalidDefinition, "states");
}

#[test]
fn guarded_always_cycles_are_legal() {
    // A guarded cycle may settle; the runtime bound catches the ones that do not.
    Machine::from_value(json!({ "id": "m", "initial": "a", "context": { "n": 0 }, "states": {
        "a": { "always": { "guard": { "<": [{ "var": "context.n" }, 3] }, "target": "b" } },
        "b": { "always": { "target": "a", "actions": [{ "assign": { "n": { "+": [{ "var": "context.n" }, 1] } } }] } }
    } })).unwrap();
}

#[test]
fn targets_resolve_like_xstate() {
    let m = Machine::from_value(json!({ "id": "order", "initial": "a", "states": {
        "a": { "initial": "a1", "states": { "a1": { "on": { "SIB": "a2", "ID": "#target", "PATH": "#order.b.b1" } }, "a2": {} },
               "on": { "CHILD": ".a2" } },
        "b": { "initial": "b1", "states": { "b1": {}, "b2": { "id": "target" } } }
    } })).unwrap();
    let go = |t: &str| {
        m.reduce(None, &json!({ "id": "x", "type": t }), 0).state
    };
    assert_eq!(go("SIB"), json!({ "a": "a2" }));
    assert_eq!(go("ID"), json!({ "b": "b2" }));
    assert_eq!(go("PATH"), json!({ "b": "b1" }));
    assert_eq!(go("CHILD"), json!({ "a": "a2" }));
}

#[test]
fn bad_json_and_oversized_definitions() {
    assert_eq!(Machine::from_json("{").unwrap_err().code, Code::InvalidJson);
    let big = format!("{{\"id\":\"m\",\"description\":\"{}\"}}", "x".repeat(2 << 20));
    assert_eq!(Machine::from_json(&big).unwrap_err().code, Code::DefinitionTooLarge);
    let deep = format!("{{\"id\":\"m\",\"meta\":{}{}}}", "[".repeat(80), "]".repeat(80));
    assert_eq!(Machine::from_json(&deep).unwrap_err().code, Code::NestingTooDeep);
}

#[test]
fn error_codes_are_stable() {
    let codes: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        codes,
        [
            "invalid_json", "invalid_definition", "unknown_target", "invalid_initial", "duplicate_state_id",
            "invalid_expression", "invalid_guard", "unknown_action", "unimplemented", "always_loop", "definition_too_large", "invalid_event",
            "missing_event_id", "missing_event_type", "event_id_too_long", "payload_too_large", "nesting_too_deep",
            "number_out_of_range", "unknown_event_type", "invalid_payload", "id_conflict", "reserved_event", "invalid_snapshot", "snapshot_too_large",
            "unsupported_snapshot_format", "wrong_machine", "missing_state", "missing_process_id", "missing_now", "invalid_now",
            "invalid_argument",
            "expression_failed", "implementation_failed", "microstep_limit",
            "unknown_effect", "invalid_effect_report", "internal_error", "usage", "io",
        ]
    );
}
