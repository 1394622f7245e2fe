//! What stays true when a machine has parallel regions, history and raised
//! events: duplicates, effect keys, timers per region, snapshots that record
//! history, and the bounds on a macrostep.

use idem::{Code, Machine, Status};
use serde_json::{json, Value};

const T0: u64 = 1_700_000_000_000;

fn machine(def: Value) -> Machine {
    Machine::from_value(def).unwrap()
}

/// Two regions that both react to GO, each emitting a `notify` effect and
/// raising an event the other region counts.
fn two_regions() -> Machine {
    machine(json!({
        "id": "m", "initial": "p", "context": { "seen": 0 },
        "states": { "p": { "type": "parallel", "on": { "TOUCH": { "actions": [{ "assign": { "touched": true } }] } }, "states": {
            "a": { "initial": "a1", "states": {
                "a1": { "on": { "GO": { "target": "a2", "actions": [
                    { "effect": { "type": "notify", "payload": { "preserve": { "from": "a" } } } },
                    { "raise": { "type": "SEEN" } } ] } } },
                "a2": { "after": { "5000": "a1" } } } },
            "b": { "initial": "b1", "states": {
                "b1": { "on": {
                    "GO": { "target": "b2", "actions": [{ "effect": { "type": "notify", "payload": { "preserve": { "from": "b" } } } }] },
                    "SEEN": { "actions": [{ "assign": { "seen": { "+": [{ "var": "context.seen" }, 1] } } }] } },
                    "after": { "9000": "b2" } },
                "b2": { "on": {
                    "SEEN": { "actions": [{ "assign": { "seen": { "+": [{ "var": "context.seen" }, 1] } } }] },
                    "BACK": "b1" } } } } } } }
    }))
}

#[test]
fn two_regions_emitting_one_effect_type_get_two_keys_and_a_duplicate_replays_the_macrostep() {
    let m = two_regions();
    let created = m.reduce_in("order-1", None, &json!({ "id": "e0", "type": "TOUCH" }), T0);
    assert_eq!(created.status, Status::Applied);
    let s0 = created.snapshot.clone();
    let go = json!({ "id": "e1", "type": "GO" });
    let o = m.reduce_in("order-1", s0.as_deref(), &go, T0 + 1);
    assert_eq!(o.status, Status::Applied);
    let keys: Vec<&str> = o.effects.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert_ne!(keys[0], keys[1]);
    assert!(keys.iter().all(|k| k.starts_with("order-1/")), "keys are scoped by the process: {keys:?}");
    let froms: Vec<&Value> = o.effects.iter().map(|e| &e.payload["from"]).collect();
    assert_eq!(froms, [&json!("a"), &json!("b")], "regions act in document order");
    // The raised SEEN was handled in the same macrostep, after both regions moved.
    let view = idem::inspect(&m, o.snapshot.as_deref().unwrap()).unwrap();
    assert_eq!(view["context"]["seen"], 1);
    assert_eq!(view["value"], json!({ "p": { "a": "a2", "b": "b2" } }));

    // The same event again: a duplicate with the first response, nothing written, no effect again.
    let again = m.reduce_in("order-1", o.snapshot.as_deref(), &go, T0 + 2);
    assert_eq!(again.status, Status::Duplicate);
    assert_eq!(again.response, o.response);
    assert!(again.snapshot.is_none() && again.effects.is_empty());
    // Redelivered against the snapshot before it (a racing copy): the same keys, the same state.
    let twin = m.reduce_in("order-1", s0.as_deref(), &go, T0 + 3);
    assert_eq!(twin.effects.iter().map(|e| e.key.as_str()).collect::<Vec<_>>(), keys);
}

#[test]
fn timers_belong_to_their_region_and_go_when_it_is_left() {
    let m = two_regions();
    let s = m.reduce_in("t-1", None, &json!({ "id": "e0", "type": "TOUCH" }), T0).snapshot.unwrap();
    let timers = |s: &str| -> Vec<String> {
        idem::inspect(&m, s).unwrap()["timers"].as_array().unwrap().iter().map(|t| t["state"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(timers(&s), ["p.b.b1"]);
    let o = m.reduce_in("t-1", Some(&s), &json!({ "id": "e1", "type": "GO" }), T0 + 1);
    assert_eq!(o.status, Status::Applied);
    assert_eq!(timers(o.snapshot.as_deref().unwrap()), ["p.a.a2"], "b1 left: its timer is gone; a2 entered: its own is set");
}

#[test]
fn a_region_timer_fires_in_its_region_only() {
    let m = two_regions();
    let o = m.reduce_in("t-2", None, &json!({ "id": "e1", "type": "GO" }), T0);
    assert_eq!(o.status, Status::Applied);
    let s = o.snapshot.unwrap();
    let due = idem::outbox::due(&m, &s, T0 + 5000).unwrap();
    let timer = due.iter().find(|d| d["kind"] == "timer").expect("a2's timer is due");
    let fired = m.reduce_in("t-2", Some(&s), &timer["event"], T0 + 5000);
    assert_eq!(fired.status, Status::Applied, "{fired:?}");
    assert_eq!(fired.state, json!({ "p": { "a": "a1", "b": "b2" } }), "a went back; b did not move");
}

#[test]
fn history_is_recorded_in_the_snapshot_and_a_forged_record_is_refused() {
    let m = machine(json!({
        "id": "h", "initial": "work",
        "states": {
            "work": { "initial": "a", "on": { "PAUSE": "paused" }, "states": {
                "a": { "on": { "NEXT": "b" } }, "b": {}, "hist": { "type": "history" } } },
            "paused": { "on": { "RESUME": "#h.work.hist" } } }
    }));
    let mut s = None;
    for (i, t) in ["NEXT", "PAUSE"].iter().enumerate() {
        let o = m.reduce_in("h-1", s.as_deref(), &json!({ "id": format!("e{i}"), "type": t }), T0 + i as u64);
        assert_eq!(o.status, Status::Applied);
        s = o.snapshot;
    }
    let text = s.unwrap();
    let view = idem::inspect(&m, &text).unwrap();
    assert_eq!(view["history"], json!({ "work.hist": ["work.b"] }));
    let resumed = m.reduce_in("h-1", Some(&text), &json!({ "id": "e9", "type": "RESUME" }), T0 + 9);
    assert_eq!(resumed.state, json!({ "work": "b" }));

    // The same machine without the history state cannot read that record.
    let other = machine(json!({
        "id": "h", "initial": "work",
        "states": {
            "work": { "initial": "a", "on": { "PAUSE": "paused" }, "states": { "a": { "on": { "NEXT": "b" } }, "b": {} } },
            "paused": { "on": { "RESUME": "work" } } }
    }));
    let o = other.reduce_in("h-1", Some(&text), &json!({ "id": "e9", "type": "RESUME" }), T0 + 9);
    assert_eq!(o.status, Status::Rejected);
    assert!(matches!(o.error.unwrap().code, Code::InvalidSnapshot | Code::MissingState));
}

#[test]
fn a_raise_loop_is_an_error_not_a_hang_and_writes_nothing() {
    let m = machine(json!({
        "id": "r", "initial": "a", "limits": { "maxMicrosteps": 50 },
        "states": { "a": { "on": {
            "GO": { "actions": [{ "raise": { "type": "PING" } }] },
            "PING": { "actions": [{ "raise": { "type": "PING" } }] } } } }
    }));
    let o = m.reduce_in("r-1", None, &json!({ "id": "e1", "type": "GO" }), T0);
    assert_eq!(o.status, Status::Rejected);
    assert_eq!(o.error.as_ref().unwrap().code, Code::MicrostepLimit);
    assert!(o.snapshot.is_none());
}

#[test]
fn a_process_whose_initial_step_ends_final_is_stored_done_and_its_first_event_is_a_duplicate_after() {
    let m = machine(json!({ "id": "f", "initial": "a", "states": { "a": { "always": "end", "on": { "GO": "end" } }, "end": { "type": "final" } } }));
    let ev = json!({ "id": "e1", "type": "GO" });
    let o = m.reduce_in("f-1", None, &ev, T0);
    assert_eq!((o.status, o.state.clone()), (Status::Ignored, json!("end")));
    let s = o.snapshot.expect("stored, done");
    assert_eq!(idem::inspect(&m, &s).unwrap()["done"], true);
    let again = m.reduce_in("f-1", Some(&s), &ev, T0 + 1);
    assert_eq!(again.status, Status::Duplicate);
    let later = m.reduce_in("f-1", Some(&s), &json!({ "id": "e2", "type": "GO" }), T0 + 2);
    assert_eq!((later.status, later.snapshot.is_none()), (Status::Ignored, true));
}

#[test]
fn a_final_states_output_is_its_done_events_payload_computed_on_entry() {
    // XState 5's done data: `output` of a final state, evaluated after its entry
    // actions over the context and the event that entered it; the parent's done
    // event carries it (`event.output` in XState, `event.payload.output` here).
    let m = machine(json!({
        "id": "d", "initial": "work", "context": { "tries": 0 },
        "states": {
            "work": {
                "initial": "charging",
                "onDone": { "target": "closed", "actions": [{ "assign": { "receipt": { "var": "event.payload" } } }] },
                "states": {
                    "charging": { "on": {
                        "CHARGED": "paid",
                        "DECLINED": "refused" } },
                    "paid": {
                        "type": "final",
                        "entry": [{ "assign": { "tries": { "+": [{ "var": "context.tries" }, 1] } } }],
                        "output": { "amount": { "var": "event.payload.amount" }, "tries": { "var": "context.tries" }, "by": "card" } },
                    "refused": { "type": "final" } } },
            "closed": {} }
    }));
    let o = m.reduce_in("d-1", None, &json!({ "id": "e1", "type": "CHARGED", "payload": { "amount": 40 } }), T0);
    assert_eq!((o.status, &o.state), (Status::Applied, &json!("closed")));
    let view = idem::inspect(&m, o.snapshot.as_deref().unwrap()).unwrap();
    assert_eq!(view["context"]["receipt"], json!({ "output": { "amount": 40, "tries": 1, "by": "card" } }), "after the entry action");
    // A final state without output: the done event's payload is empty.
    let o = m.reduce_in("d-2", None, &json!({ "id": "e1", "type": "DECLINED" }), T0);
    let view = idem::inspect(&m, o.snapshot.as_deref().unwrap()).unwrap();
    assert_eq!(view["context"]["receipt"], json!({}));
    // An output that fails to evaluate fails the event, as an assign would: nothing is written.
    let failing = machine(json!({
        "id": "d", "initial": "w",
        "states": { "w": { "initial": "a", "onDone": "z", "states": {
            "a": { "on": { "GO": "b" } },
            "b": { "type": "final", "output": { "/": [1, 0] } } } }, "z": {} }
    }));
    let o = failing.reduce_in("d-3", None, &json!({ "id": "e1", "type": "GO" }), T0);
    assert_eq!((o.status, o.error.as_ref().map(|e| e.code)), (Status::Rejected, Some(Code::ExpressionFailed)));
    assert!(o.snapshot.is_none());
}

#[test]
fn output_is_refused_where_no_done_event_would_carry_it() {
    let refused = |def: Value, path: &str| {
        let e = Machine::from_value(def).unwrap_err();
        assert_eq!((e.code, e.path.as_deref()), (Code::InvalidDefinition, Some(path)), "{e}");
    };
    // On a state that is not final.
    refused(
        json!({ "id": "o", "initial": "w", "states": { "w": { "initial": "a", "states": { "a": { "output": 1 } } } } }),
        "states.w.states.a.output",
    );
    // On a final state of the machine: it ends the process.
    refused(json!({ "id": "o", "initial": "a", "states": { "a": { "type": "final", "output": 1 } } }), "states.a.output");
    // On the machine itself (XState's machine output is not an idem key).
    refused(json!({ "id": "o", "initial": "a", "output": 1, "states": { "a": {} } }), "output");
}
