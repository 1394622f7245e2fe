//! Expressions cannot grow a value or burn time without bound: one evaluation
//! has a work budget (`idem::expr::EVAL_BUDGET`), so a definition that doubles a
//! list on every microstep, or nests `map` over a payload, fails cleanly instead
//! of exhausting memory.

use idem::{Code, Machine};
use serde_json::json;

/// A machine whose `GO` runs 40 `always` microsteps, each assigning `rule` to
/// `context.x` (first `x0`): what a rule that doubles `x` would grow to.
fn doubler(x0: serde_json::Value, rule: serde_json::Value) -> Machine {
    Machine::from_value(json!({
        "id": "doubler", "initial": "idle", "context": { "n": 0, "x": x0 },
        "states": {
            "idle": { "on": { "GO": "grow" } },
            "grow": { "always": [{
                "guard": { "<": [{ "var": "context.n" }, 40] }, "target": "grow", "reenter": true,
                "actions": [{ "assign": { "n": { "+": [{ "var": "context.n" }, 1] }, "x": rule } }]
            }] }
        }
    }))
    .unwrap()
}

/// Refused for its work budget, with nothing written.
fn assert_over_budget(o: &idem::Outcome) {
    assert_eq!(o.status.as_str(), "rejected");
    let e = o.error.as_ref().unwrap();
    assert_eq!(e.code, Code::ExpressionFailed);
    assert!(e.message.contains("units of work"), "{}", e.message);
    assert!(o.snapshot.is_none());
}

#[test]
fn a_list_doubled_on_every_microstep_is_stopped_by_the_budget() {
    let m = doubler(json!([1]), json!({ "merge": [{ "var": "context.x" }, { "var": "context.x" }] }));
    assert_over_budget(&m.reduce(None, &json!({ "id": "g", "type": "GO" }), 0));
}

#[test]
fn a_string_doubled_on_every_microstep_is_stopped_by_the_budget() {
    let m = doubler(json!("ab"), json!({ "cat": [{ "var": "context.x" }, { "var": "context.x" }] }));
    assert_over_budget(&m.reduce(None, &json!({ "id": "g", "type": "GO" }), 0));
}

#[test]
fn a_value_copied_twice_on_every_microstep_is_stopped_by_the_budget() {
    // `[x, x]` nests the context's value in a new array holding two copies of it:
    // twice the values on every microstep.
    let m = doubler(json!(0), json!([{ "var": "context.x" }, { "var": "context.x" }]));
    assert_over_budget(&m.reduce(None, &json!({ "id": "g", "type": "GO" }), 0));
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

/// The machine of the tests below: `E` assigns `rule` (an expression of
/// `event.payload.xs` and the context) to `context.x`; `RESET` sets it to 0.
fn assigning(rule: serde_json::Value, context_x: serde_json::Value) -> Machine {
    Machine::from_value(json!({
        "id": "builder", "initial": "a", "context": { "x": context_x },
        "states": { "a": { "on": {
            "E": { "actions": [{ "assign": { "x": rule } }] },
            "RESET": { "actions": [{ "assign": { "x": 0 } }] }
        } } }
    }))
    .unwrap()
}

#[test]
fn an_accumulator_used_twice_is_stopped_by_the_budget() {
    // `[acc, acc]` doubles what the accumulator holds on every item: 2^40 values
    // from 40 items, had each copy not been charged for what it copies.
    let m = assigning(json!({ "reduce": [{ "var": "event.payload.xs" }, [{ "var": "accumulator" }, { "var": "accumulator" }], 0] }), json!(0));
    assert_over_budget(&m.reduce(None, &json!({ "id": "e", "type": "E", "payload": { "xs": vec![1; 40] } }), 0));
    // The same with few enough items builds its value.
    let o = m.reduce(None, &json!({ "id": "e", "type": "E", "payload": { "xs": vec![1; 4] } }), 0);
    assert_eq!(o.status.as_str(), "applied", "{:?}", o.error);
    let x = &idem::inspect(&m, o.snapshot.as_deref().unwrap()).unwrap()["context"]["x"];
    assert_eq!(x.to_string().matches('0').count(), 16);
}

#[test]
fn a_reduce_that_nests_its_accumulator_stops_at_the_json_depth() {
    // `[acc]` on every item: one level per item, as deep as the payload is long.
    let m = assigning(json!({ "reduce": [{ "var": "event.payload.xs" }, [{ "var": "accumulator" }], 0] }), json!(0));
    for n in [100, 20_000] {
        let o = m.reduce(None, &json!({ "id": "e", "type": "E", "payload": { "xs": vec![1; n] } }), 0);
        assert_eq!(o.status.as_str(), "rejected", "{n} items");
        let e = o.error.unwrap();
        assert_eq!(e.code, Code::ExpressionFailed);
        assert!(e.message.contains("nested deeper than 64 levels"), "{}", e.message);
    }
    // Within the depth it builds the nested value.
    let o = m.reduce(None, &json!({ "id": "e", "type": "E", "payload": { "xs": vec![1; 10] } }), 0);
    assert_eq!(o.status.as_str(), "applied", "{:?}", o.error);
}
