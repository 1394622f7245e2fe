//! Expressions cannot grow a value or burn time without bound: one evaluation
//! has a work budget (`idem::expr::EVAL_BUDGET`), so a definition that doubles a
//! list on every microstep, or nests `map` over a payload, fails cleanly instead
//! of exhausting memory.

use idem::{Code, Machine};
use serde_json::json;

#[test]
fn a_list_doubled_on_every_microstep_is_stopped_by_the_budget() {
    let m = Machine::from_value(json!({
        "id": "doubler", "initial": "idle", "context": { "n": 0, "list": [1] },
        "states": {
            "idle": { "on": { "GO": "grow" } },
            "grow": { "always": [{
                "guard": { "<": [{ "var": "context.n" }, 40] }, "target": "grow", "reenter": true,
                "actions": [{ "assign": {
                    "n": { "+": [{ "var": "context.n" }, 1] },
                    "list": { "merge": [{ "var": "context.list" }, { "var": "context.list" }] }
                } }]
            }] }
        }
    }))
    .unwrap();
    let o = m.reduce(None, &json!({ "id": "g", "type": "GO" }), 0);
    assert_eq!(o.status.as_str(), "rejected");
    let e = o.error.unwrap();
    assert_eq!(e.code, Code::ExpressionFailed);
    assert!(e.message.contains("units of work"), "{}", e.message);
    assert!(o.snapshot.is_none());
}

#[test]
fn a_string_doubled_on_every_microstep_is_stopped_by_the_budget() {
    let m = Machine::from_value(json!({
        "id": "doubler", "initial": "idle", "context": { "n": 0, "s": "ab" },
        "states": {
            "idle": { "on": { "GO": "grow" } },
            "grow": { "always": [{
                "guard": { "<": [{ "var": "context.n" }, 60] }, "target": "grow", "reenter": true,
                "actions": [{ "assign": {
                    "n": { "+": [{ "var": "context.n" }, 1] },
                    "s": { "cat": [{ "var": "context.s" }, { "var": "context.s" }] }
                } }]
            }] }
        }
    }))
    .unwrap();
    let o = m.reduce(None, &json!({ "id": "g", "type": "GO" }), 0);
    assert_eq!(o.error.map(|e| e.code), Some(Code::ExpressionFailed));
}

#[test]
fn ordinary_expressions_are_untouched_by_the_budget() {
    let m = Machine::from_value(json!({
        "id": "mapper", "initial": "a", "context": {},
        "states": { "a": { "on": { "E": { "actions": [{ "assign": { "pairs": {
            "map": [{ "var": "event.payload.xs" }, { "map": [{ "var": "" }, { "*": [{ "var": "" }, 2] }] }]
        } } }] } } } }
    }))
    .unwrap();
    let row: Vec<u32> = (0..100).collect();
    let xs: Vec<&Vec<u32>> = (0..100).map(|_| &row).collect();
    let o = m.reduce(None, &json!({ "id": "e", "type": "E", "payload": { "xs": xs } }), 0);
    assert_eq!(o.status.as_str(), "applied", "{:?}", o.error);
    let pairs = &idem::inspect(&m, o.snapshot.as_deref().unwrap()).unwrap()["context"]["pairs"];
    assert_eq!(pairs[99][99], json!(198));
}
