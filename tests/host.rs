//! Guards and actions the host implements as functions (`idem::host`), run
//! natively with a callback written here: the answers the interpreter takes
//! (a boolean, a context patch, idem actions as data), the calls a duplicate
//! does not make, and `implementation_failed` for a failure or a wrong answer,
//! nothing stored. The JavaScript side is pkg/test/implementations.test.mjs.

use idem::host::set_host;
use idem::{Code, Machine};
use serde_json::{json, Value};
use std::cell::Cell;

thread_local! {
    /// Calls on this test's thread (the tests run in parallel, each reduce on its own thread).
    static CALLS: Cell<usize> = const { Cell::new(0) };
}

fn calls() -> usize {
    CALLS.with(Cell::get)
}

/// The functions, by index in `HOSTED`: a guard reading the event, an action
/// patching the context, one answering idem actions, and three that go wrong.
fn host(index: u32, params: &str, context: &str, event: &str) -> Result<String, String> {
    CALLS.with(|c| c.set(c.get() + 1));
    let context: Value = serde_json::from_str(context).map_err(|e| e.to_string())?;
    let event: Value = serde_json::from_str(event).map_err(|e| e.to_string())?;
    let params: Value = serde_json::from_str(params).map_err(|e| e.to_string())?;
    match index {
        0 => Ok((event["payload"]["role"] == "admin").to_string()),
        1 => Ok(json!({ "count": context["count"].as_i64().unwrap_or(0) + 1 }).to_string()),
        2 => Ok(json!([{ "respond": { "preserve": { "channel": params["channel"], "id": event["id"] } } }]).to_string()),
        3 => Err("it threw: boom".into()),
        4 => Ok("\"yes\"".into()),
        _ => Ok("5".into()),
    }
}

const HOSTED: &str = "guards.isAdmin\nactions.bump\nactions.notify\nguards.throws\nguards.answersText\nactions.answersNumber";

fn machine(guard: &str, action: &str) -> Machine {
    set_host(host);
    let def = json!({
        "id": "build", "initial": "idle", "context": { "count": 0 },
        "states": {
            "idle": { "on": { "START": [
                { "guard": guard, "target": "running", "actions": [action, { "type": "notify", "params": { "channel": "ops" } }] },
                { "target": "refused" }
            ] } },
            "running": {}, "refused": {}
        }
    });
    Machine::from_json_hosted(&def.to_string(), HOSTED).expect("builds")
}

fn start(id: &str, role: &str) -> Value {
    json!({ "id": id, "type": "START", "payload": { "role": role } })
}

#[test]
fn functions_choose_patch_and_respond_and_a_duplicate_calls_none() {
    let m = machine("isAdmin", "bump");
    let out = m.reduce(None, &start("e1", "admin"), 1);
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.state, json!("running"));
    assert_eq!(out.response, json!({ "channel": "ops", "id": "e1" }));
    assert_eq!(calls(), 3, "the guard, bump and notify, once each");
    let snapshot = out.snapshot.expect("stored");
    assert_eq!(idem::inspect(&m, &snapshot).expect("readable")["context"], json!({ "count": 1 }));

    let before = calls();
    let again = m.reduce(Some(&snapshot), &start("e1", "admin"), 2);
    assert!(again.duplicate());
    assert_eq!(again.response, out.response);
    assert_eq!(calls(), before, "a duplicate calls no function");

    let guest = m.reduce(None, &start("e2", "guest"), 1);
    assert_eq!(guest.state, json!("refused"));
}

#[test]
fn a_failing_function_or_a_wrong_answer_is_implementation_failed_and_nothing_is_stored() {
    for (guard, action, name, path) in [
        ("throws", "bump", "guards.throws", "states.idle.on.START[0].guard"),
        ("answersText", "bump", "guards.answersText", "states.idle.on.START[0].guard"),
        ("isAdmin", "answersNumber", "actions.answersNumber", "states.idle.on.START[0].actions[0]"),
    ] {
        let out = machine(guard, action).reduce(None, &start("e1", "admin"), 1);
        let e = out.error.expect("refused");
        assert_eq!(e.code, Code::ImplementationFailed);
        assert_eq!(e.path.as_deref(), Some(path));
        assert!(e.message.contains(name), "{}", e.message);
        assert!(out.snapshot.is_none(), "nothing stored for {name}");
    }
}

#[test]
fn a_name_neither_hosted_nor_given_as_data_is_unimplemented() {
    set_host(host);
    let def = json!({ "id": "m", "initial": "a", "states": { "a": { "on": { "GO": { "guard": "isAdmin", "actions": ["missing"] } } } } });
    let e = match Machine::from_json_hosted(&def.to_string(), HOSTED) {
        Err(e) => e,
        Ok(_) => panic!("a missing name must be refused"),
    };
    assert_eq!(e.code, Code::Unimplemented);
    assert!(e.message.contains("action \"missing\"") && !e.message.contains("isAdmin"), "{}", e.message);
}
