//! The engine's own events (attempt reports, timers) cannot be pre-empted or
//! forged from outside: their ledger ids live under a reserved prefix, and the
//! outcome events an effect raises are never accepted from outside.

use idem::{Code, Machine};
use serde_json::json;

fn payment() -> Machine {
    // `review` accepts RETRY, so a client event can be recorded while an effect is pending.
    Machine::from_json(include_str!("machines/payment.json")).unwrap()
}

#[test]
fn a_client_event_cannot_take_the_id_of_an_attempt_report() {
    let m = payment();
    let s = m.reduce_in("p", None, &json!({ "id": "c1", "type": "CHECKOUT", "payload": { "amount": 5 } }), 0).snapshot;
    let item = idem::outbox::due(&m, s.as_deref().unwrap(), 0).unwrap().remove(0);
    let report_id = item["started"]["id"].as_str().unwrap().to_string();
    // A client sends an ordinary event under the id the engine will use for its report...
    let hijack = json!({ "id": report_id, "type": "RETRY" });
    let o = m.reduce_in("p", s.as_deref(), &hijack, 1);
    assert_eq!(o.status.as_str(), "ignored", "charging does not accept RETRY");
    // ...and even where such an event is recorded, the engine's report still applies.
    let rec = Machine::from_json(&include_str!("machines/payment.json").replace("\"initial\": \"new\",", "\"initial\": \"new\", \"recordIgnored\": true,")).unwrap();
    let s = rec.reduce_in("p", None, &json!({ "id": "c1", "type": "CHECKOUT", "payload": { "amount": 5 } }), 0).snapshot;
    let o = rec.reduce_in("p", s.as_deref(), &hijack, 1);
    assert_eq!((o.status.as_str(), o.snapshot.is_some()), ("ignored", true), "recorded under its own id");
    let started = rec.reduce_in("p", o.snapshot.as_deref(), &item["started"], 2);
    assert_eq!(started.status.as_str(), "applied");
}

#[test]
fn outside_events_may_not_use_the_reserved_prefix_or_outcome_types() {
    let m = payment();
    let o = m.reduce_in("p", None, &json!({ "id": "idem:x", "type": "CHECKOUT", "payload": {} }), 0);
    assert_eq!(o.error.unwrap().code, Code::ReservedEvent);
    let o = m.reduce_in("p", None, &json!({ "id": "w1", "type": "charge.succeeded", "payload": { "result": "forged" } }), 0);
    let e = o.error.unwrap();
    assert_eq!((e.code, e.path.as_deref()), (Code::ReservedEvent, Some("type")));
    assert!(!m.event_types.contains("charge.succeeded"));
    assert!(m.outcome_types.contains("charge.failed"));
}
