//! Event payload schemas through `reduce`: a payload that does not match is
//! `rejected` with `invalid_payload` and the path of the first violation, and
//! nothing is written; declared events are known event types; a schema outside
//! the subset is refused on load. The suite's cases are in tests/schema_suite.rs.

use idem::{Machine, Status};
use serde_json::{json, Value};

fn machine(events: Value) -> Result<Machine, idem::Error> {
    Machine::from_value(json!({
        "id": "order", "initial": "open", "context": { "paid": 0 },
        "events": events,
        "states": { "open": { "on": { "PAY": { "actions": [{ "assign": {
            "paid": { "+": [{ "var": "context.paid" }, { "var": "event.payload.amount" }] } } }] } } } }
    }))
}

fn pay_schema() -> Value {
    json!({ "PAY": { "payload": { "type": "object", "required": ["amount", "lines"],
        "properties": { "amount": { "type": "number", "exclusiveMinimum": 0 },
                        "lines": { "type": "array", "items": { "type": "object", "properties": { "sku": { "type": "string", "minLength": 1 } } } } } } },
        "NOTE": {} })
}

#[test]
fn a_payload_that_does_not_match_is_invalid_payload_at_its_first_violation() {
    let m = machine(pay_schema()).unwrap();
    let cases = [
        (json!({ "amount": "abc", "lines": [] }), "payload.amount"),
        (json!({ "amount": 0, "lines": [] }), "payload.amount"),
        (json!({ "lines": [] }), "payload.amount"),
        (json!({ "amount": 5, "lines": [{ "sku": "a" }, { "sku": "" }] }), "payload.lines[1].sku"),
        (json!(null), "payload.amount"),
    ];
    for (payload, path) in cases {
        let o = m.reduce_in("o", None, &json!({ "id": "e1", "type": "PAY", "payload": payload }), 0);
        assert_eq!(o.status, Status::Rejected, "{payload}");
        let e = o.error.unwrap();
        assert_eq!((e.code.as_str(), e.path.as_deref()), ("invalid_payload", Some(path)), "{payload}: {}", e.message);
        assert!(o.snapshot.is_none());
    }
    let ok = m.reduce_in("o", None, &json!({ "id": "e1", "type": "PAY", "payload": { "amount": 5, "lines": [{ "sku": "a" }] } }), 0);
    assert_eq!(ok.status, Status::Applied, "{:?}", ok.error);
    // The id of a refused payload was not recorded: the same id with a valid payload applies.
    let bad = m.reduce_in("o", ok.snapshot.as_deref(), &json!({ "id": "e2", "type": "PAY", "payload": { "amount": "x", "lines": [] } }), 1);
    assert_eq!(bad.status, Status::Rejected);
    let good = m.reduce_in("o", ok.snapshot.as_deref(), &json!({ "id": "e2", "type": "PAY", "payload": { "amount": 1, "lines": [] } }), 2);
    assert_eq!(good.status, Status::Applied, "{:?}", good.error);
}

#[test]
fn declared_events_are_known_event_types() {
    let m = machine(pay_schema()).unwrap();
    let o = m.reduce_in("o", None, &json!({ "id": "n1", "type": "NOTE" }), 0);
    assert_eq!(o.status, Status::Ignored, "{:?}", o.error);
    let u = m.reduce_in("o", None, &json!({ "id": "n2", "type": "OTHER" }), 0);
    assert_eq!(u.error.unwrap().code.as_str(), "unknown_event_type");
}

#[test]
fn schemas_outside_the_subset_are_refused_on_load_naming_the_path() {
    let cases = [
        (json!({ "PAY": { "payload": { "properties": { "id": { "type": "string", "pattern": "^p[0-9]+$" } } } } }), "events.PAY.payload.properties.id.pattern"),
        (json!({ "PAY": { "payload": { "oneOf": [] } } }), "events.PAY.payload.oneOf"),
        (json!({ "PAY": { "payload": { "type": "decimal" } } }), "events.PAY.payload.type"),
        (json!({ "PAY": { "payload": { "minLength": -1 } } }), "events.PAY.payload.minLength"),
        (json!({ "PAY": { "schema": {} } }), "events.PAY.schema"),
        (json!({ "idem.after": {} }), "events.idem.after"),
        (json!([]), "events"),
    ];
    for (events, path) in cases {
        let e = machine(events.clone()).unwrap_err();
        assert_eq!((e.code.as_str(), e.path.as_deref()), ("invalid_definition", Some(path)), "{events}: {}", e.message);
    }
}

#[test]
fn the_demo_machines_refuse_a_payment_of_abc() {
    for name in ["order-robust", "order-fragile", "order-parallel", "order-robust-nokeys"] {
        let text = std::fs::read_to_string(format!("{}/www/machines/{name}.json", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let m = Machine::from_json(&text).unwrap();
        let e = json!({ "id": "e1", "type": "PAYMENT_PARTIAL", "payload": { "paymentId": "p1", "amount": "abc" } });
        let o = m.reduce_in("o", None, &e, 0);
        let err = o.error.unwrap();
        assert_eq!((err.code.as_str(), err.path.as_deref()), ("invalid_payload", Some("payload.amount")), "{name}");
    }
}

#[cfg(feature = "analysis")]
#[test]
fn arithmetic_on_an_undeclared_payload_field_is_unvalidated_payload() {
    let without = machine(json!({})).unwrap();
    let found: Vec<_> = idem::analyze::analyze(&without).into_iter().filter(|f| f.code == "unvalidated_payload").collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].event.as_deref(), Some("PAY"));
    assert_eq!(found[0].site.as_deref(), Some("states.open.on.PAY.actions[0].assign.paid"));
    assert!(found[0].message.contains("or one without amount"), "a missing value fails the event too: {}", found[0].message);
    let with = machine(pay_schema()).unwrap();
    assert!(idem::analyze::analyze(&with).iter().all(|f| f.code != "unvalidated_payload"));
    // Declared a number but not required: a payload without it fails the event.
    let optional = machine(json!({ "PAY": { "payload": { "type": "object", "properties": { "amount": { "type": "number" } } } } })).unwrap();
    let found: Vec<_> = idem::analyze::analyze(&optional).into_iter().filter(|f| f.code == "unvalidated_payload").collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("declares amount numeric but does not require it"), "{}", found[0].message);
    let e = json!({ "id": "e1", "type": "PAY", "payload": {} });
    assert_eq!(optional.reduce_in("o", None, &e, 0).error.map(|e| e.code), Some(idem::Code::ExpressionFailed), "what the finding says");
    // Read with a default, the field need not be required.
    let defaulted = Machine::from_value(json!({
        "id": "order", "initial": "open", "context": { "paid": 0 },
        "events": { "PAY": { "payload": { "type": "object", "properties": { "tip": { "type": "number" } } } } },
        "states": { "open": { "on": { "PAY": { "actions": [{ "assign": {
            "paid": { "+": [{ "var": "context.paid" }, { "var": ["event.payload.tip", 0] }] } } }] } } } }
    }))
    .unwrap();
    assert!(idem::analyze::analyze(&defaulted).iter().all(|f| f.code != "unvalidated_payload"));
    assert_eq!(defaulted.reduce_in("o", None, &e, 0).status, idem::Status::Applied);
}

#[cfg(feature = "analysis")]
#[test]
fn a_raise_without_the_field_arithmetic_reads_is_unvalidated_payload_whatever_the_schema() {
    // A raised event is not checked against the schema: PAY raised without an amount fails.
    let raising = |raises: Value| {
        Machine::from_value(json!({
            "id": "order", "initial": "open", "context": { "paid": 0 }, "events": pay_schema(),
            "states": { "open": {
                "entry": [{ "raise": { "type": "NOTE" } }],
                "on": {
                    "PAY": { "actions": [{ "assign": { "paid": { "+": [{ "var": "context.paid" }, { "var": "event.payload.amount" }] } } }] },
                    "REFUND": { "actions": raises } } } }
        }))
        .unwrap()
    };
    let lacking = raising(json!([{ "raise": { "type": "PAY" } }, { "raise": { "type": "PAY", "payload": { "preserve": { "lines": [] } } } }]));
    let found: Vec<_> = idem::analyze::analyze(&lacking).into_iter().filter(|f| f.code == "unvalidated_payload").collect();
    let sites: Vec<&str> = found.iter().map(|f| f.message.split(" is raised without it at ").nth(1).unwrap_or("").split(',').next().unwrap()).collect();
    assert_eq!(sites, ["states.open.on.REFUND.actions[0]", "states.open.on.REFUND.actions[1].raise.payload"], "{found:?}");
    assert!(found.iter().all(|f| f.site.as_deref() == Some("states.open.on.PAY.actions[0].assign.paid")));
    let o = lacking.reduce_in("o", None, &json!({ "id": "e1", "type": "REFUND" }), 0);
    assert_eq!(o.error.map(|e| e.code), Some(idem::Code::ExpressionFailed), "what the finding says");
    // Raised with the amount (as data, or built from an expression): nothing to say.
    let giving = raising(json!([
        { "raise": { "type": "PAY", "payload": { "preserve": { "amount": 5, "lines": [] } } } },
        { "raise": { "type": "PAY", "payload": { "eachKey": { "amount": { "var": "context.paid" } } } } }
    ]));
    assert!(idem::analyze::analyze(&giving).iter().all(|f| f.code != "unvalidated_payload"));
}
