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

/// `log(label)`: an action that appends `label` to `context.log`.
fn log(label: &str) -> Value {
    json!({ "assign": { "log": { "merge": [{ "var": "context.log" }, [label]] } } })
}

/// The machine of issue 38: region `s2`'s eventless transition to the parallel
/// state around it, while `s6` below it has one to its own parent's history
/// state, which restores `s6` itself. `labels` adds entry and exit logs.
fn history_next_to_a_region_exit(labels: bool) -> Value {
    let inc = json!({ "assign": { "a": { "+": [{ "var": "context.a" }, 1] } } });
    let under_two = json!({ "<": [{ "var": "context.a" }, 2] });
    let mut def = json!({ "id": "m", "initial": "s1", "context": { "a": 0 }, "on": { "GO": {} }, "states": { "s1": { "type": "parallel", "states": {
        "s2": { "type": "parallel", "always": { "target": "#m.s1", "guard": under_two, "actions": [inc] },
            "states": { "s3": { "initial": "s6", "states": {
                "s6": { "always": { "target": "h8", "guard": under_two, "actions": [inc] } },
                "h8": { "type": "history" } } },
                "s9": {} } } } } } });
    if labels {
        def["context"]["log"] = json!([]);
        for path in ["/states/s1", "/states/s1/states/s2", "/states/s1/states/s2/states/s3", "/states/s1/states/s2/states/s3/states/s6", "/states/s1/states/s2/states/s9"] {
            let name = path.rsplit('/').next().unwrap();
            let s = def.pointer_mut(path).unwrap();
            s["entry"] = json!([log(&format!("en:{name}"))]);
            s["exit"] = json!([log(&format!("ex:{name}"))]);
        }
        def.pointer_mut("/states/s1/states/s2/always/actions").unwrap().as_array_mut().unwrap().push(log("t:s2"));
        def.pointer_mut("/states/s1/states/s2/states/s3/states/s6/always/actions").unwrap().as_array_mut().unwrap().push(log("t:s6"));
    }
    def
}

#[test]
fn a_history_target_restoring_its_own_source_beside_a_region_exit_writes_a_whole_configuration() {
    let def = history_next_to_a_region_exit(false);
    let m = machine(def.clone());
    let whole = json!({ "s1": { "s2": { "s3": "s6", "s9": {} } } });
    let first = m.reduce_in("p-1", None, &json!({ "id": "e1", "type": "GO" }), T0);
    assert_eq!((first.status, &first.state), (Status::Applied, &whole), "{:?}", first.error);
    let text = first.snapshot.expect("written");
    // Read back by a fresh machine, with no copy of the snapshot in memory: the same state and context.
    let fresh = machine(def);
    let view = idem::inspect(&fresh, &text).unwrap();
    assert_eq!((&view["value"], &view["context"]), (&whole, &json!({ "a": 2 })), "XState's context too");
    assert_eq!(view["history"], Value::Null, "s6's transition preempted s2's: s3 was never exited, nothing recorded");
    let next = fresh.reduce_in("p-1", Some(&text), &json!({ "id": "e2", "type": "GO" }), T0 + 1);
    assert_eq!((next.status, &next.state), (Status::Applied, &whole), "{:?}", next.error);
}

#[test]
fn a_transition_entering_its_source_again_conflicts_with_one_exiting_it() {
    let m = machine(history_next_to_a_region_exit(true));
    let o = m.reduce_in("p-1", None, &json!({ "id": "e1", "type": "GO" }), T0);
    assert_eq!(o.status, Status::Applied, "{:?}", o.error);
    let log = &idem::inspect(&m, o.snapshot.as_deref().unwrap()).unwrap()["context"]["log"];
    // The initial step; then twice s6's eventless transition, which re-enters s6
    // without exiting it, preempts s2's, which would exit s6 (a descendant's
    // transition wins, SCXML 3.13); then both guards fail. XState takes both at
    // once, exits everything and enters only s1 and s6 (its state value fills in
    // s2, s3 and s9): `history-reentry-conflicts` in tests/differential/differences.mjs.
    let want = ["en:s1", "en:s2", "en:s3", "en:s6", "en:s9", "t:s6", "en:s6", "t:s6", "en:s6"];
    assert_eq!(log, &json!(want));

    // Beside a transition that exits the source and enters its sibling, the one
    // that comes first in document order wins; XState took both and entered both
    // siblings (found by the differential test, seed 102, case 44).
    let m = machine(json!({
        "id": "m", "initial": "p", "context": { "n": 0 },
        "states": { "p": { "type": "parallel", "states": {
            "a": { "initial": "a1", "states": { "a1": { "always": { "target": "#m.p.b.b2", "guard": { "<": [{ "var": "context.n" }, 1] },
                "actions": [{ "assign": { "n": { "+": [{ "var": "context.n" }, 1] } } }] } } } },
            "b": { "initial": "b1", "states": {
                "b1": { "always": { "target": "h", "guard": { "<": [{ "var": "context.n" }, 1] },
                    "actions": [{ "assign": { "n": { "+": [{ "var": "context.n" }, 10] } } }] } },
                "b2": {}, "h": { "type": "history" } } } } } },
        "on": { "GO": {} }
    }));
    let o = m.reduce_in("p-1", None, &json!({ "id": "e1", "type": "GO" }), T0);
    assert_eq!((o.status, &o.state), (Status::Applied, &json!({ "p": { "a": "a1", "b": "b2" } })), "{:?}", o.error);
    assert_eq!(idem::inspect(&m, o.snapshot.as_deref().unwrap()).unwrap()["context"], json!({ "n": 1 }));
}

#[test]
fn a_configuration_that_is_not_one_is_an_internal_error() {
    let m = machine(history_next_to_a_region_exit(false));
    let path = |p: &str| m.state_by_path(p).unwrap();
    let whole: Vec<usize> = ["", "s1", "s1.s2", "s1.s2.s3", "s1.s2.s3.s6", "s1.s2.s9"].iter().map(|p| path(p)).collect();
    let value = m.value_of_config(&whole);
    assert_eq!(m.check_configuration(&whole, &value), Ok(()));
    let broken: [(&str, Vec<usize>); 8] = [
        // What idem wrote before the fix: s1 with no region (issue 38).
        ("s1.s2.s3.s6 is active but its parent is not", vec![path(""), path("s1"), path("s1.s2.s3.s6")]),
        ("s1 is a parallel state with a region that is not active", vec![path(""), path("s1")]),
        ("s1.s2.s3 is a compound state without exactly one active child", whole.iter().copied().filter(|&s| s != path("s1.s2.s3.s6")).collect()),
        ("the machine is not active", whole[1..].to_vec()),
        ("s1.s2.s3.h8 is a history state and active", { let mut c = whole.clone(); c.push(path("s1.s2.s3.h8")); c.sort(); c }),
        ("s1.s2.s9 is followed by a state out of document order", { let mut c = whole.clone(); c.swap(4, 5); c }),
        ("s1.s2.s3.s6 is active but its parent is not", vec![path(""), path("s1"), path("s1.s2"), path("s1.s2.s3.s6"), path("s1.s2.s9")]),
        ("the machine is not active", vec![]),
    ];
    for (what, config) in broken {
        let e = m.check_configuration(&config, &value).unwrap_err();
        assert_eq!(e.code, Code::InternalError);
        assert!(e.message.contains(what), "{what}: {}", e.message);
    }
    let e = m.check_configuration(&whole, &json!({ "s1": {} })).unwrap_err();
    assert!(e.message.contains("state value that does not name its configuration"), "{}", e.message);
}

/// `st(name, extra)`: a state whose entry and exit append `en:name` and `ex:name` to the log.
fn st(name: &str, extra: Value) -> Value {
    let mut s = json!({ "entry": [log(&format!("en:{name}"))], "exit": [log(&format!("ex:{name}"))] });
    s.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    s
}

/// Run `events` (types) from a new process, each from the stored snapshot read
/// by a fresh machine; the state value and the log after each, the first
/// entry the new process's (its initial step and first event, `START`).
fn story(def: Value, events: &[&str]) -> Vec<(Value, Value)> {
    let mut def = def;
    def["on"] = json!({ "START": { "actions": [] } });
    story_with(&machine(def), events)
}

/// [`story`] of a machine that accepts `START`; the context is `{ "log": [] }`.
fn story_with(m: &Machine, events: &[&str]) -> Vec<(Value, Value)> {
    let mut def: Value = serde_json::from_str(&m.definition_json()).unwrap();
    def["context"] = json!({ "log": [] });
    if def["on"].get("START").is_none() {
        def["on"]["START"] = json!({ "actions": [] });
    }
    let mut out = Vec::new();
    let mut snapshot: Option<String> = None;
    for (i, t) in std::iter::once(&"START").chain(events).enumerate() {
        let m = machine(def.clone());
        let o = m.reduce_in("h-1", snapshot.as_deref(), &json!({ "id": format!("e{i}"), "type": t }), T0 + i as u64);
        assert_eq!(o.status, Status::Applied, "{t}: {:?}", o.error);
        snapshot = o.snapshot;
        let view = idem::inspect(&m, snapshot.as_deref().unwrap()).unwrap();
        assert_eq!(view["value"], o.state, "read back as answered");
        out.push((o.state, view["context"]["log"].clone()));
    }
    out
}

// The stories below are what XState 5.33 does with the same machines (entry and
// exit actions logging), run by hand; the differential test compares more.

#[test]
fn an_initial_history_state_enters_its_default_target_in_a_new_process() {
    let steps = story(json!({ "id": "m", "initial": "h", "states": { "a": st("a", json!({})), "b": st("b", json!({})), "h": { "type": "history", "target": "b" } } }), &[]);
    assert_eq!(steps[0], (json!("b"), json!(["en:b"])));
}

#[test]
fn an_initial_history_state_restores_what_it_recorded_when_its_parent_is_entered_again() {
    let def = json!({ "id": "m", "initial": "p", "states": {
        "p": st("p", json!({ "initial": "h", "on": { "OUT": "o" }, "states": {
            "a": st("a", json!({ "on": { "N": "b" } })), "b": st("b", json!({})), "h": { "type": "history", "target": "a" } } })),
        "o": st("o", json!({ "on": { "BACK": "p" } })) } });
    let steps = story(def, &["N", "OUT", "BACK"]);
    assert_eq!(steps[0], (json!({ "p": "a" }), json!(["en:p", "en:a"])));
    assert_eq!(steps[3].0, json!({ "p": "b" }), "p entered by default: its initial history restores b");
    assert_eq!(steps[3].1, json!(["en:p", "en:a", "ex:a", "en:b", "ex:b", "ex:p", "en:o", "ex:o", "en:p", "en:b"]));
}

#[test]
fn an_initial_deep_history_state_restores_every_level_and_its_default_may_lie_deep() {
    let def = json!({ "id": "m", "initial": "p", "states": {
        "p": st("p", json!({ "initial": "h", "on": { "OUT": "o" }, "states": {
            "a": st("a", json!({ "initial": "a1", "states": { "a1": st("a1", json!({ "on": { "N": "a2" } })), "a2": st("a2", json!({})) } })),
            "b": st("b", json!({})),
            "h": { "type": "history", "history": "deep", "target": "b" } } })),
        "o": st("o", json!({ "on": { "BACK": "p", "BACKA": "p.a" } })) } });
    let steps = story(def, &["OUT", "BACKA", "N", "OUT", "BACK"]);
    let values: Vec<&Value> = steps.iter().map(|(v, _)| v).collect();
    assert_eq!(values, [&json!({ "p": "b" }), &json!("o"), &json!({ "p": { "a": "a1" } }), &json!({ "p": { "a": "a2" } }), &json!("o"), &json!({ "p": { "a": "a2" } })]);
    assert_eq!(steps[5].1.as_array().unwrap()[15..], [json!("ex:o"), json!("en:p"), json!("en:a"), json!("en:a2")]);

    // A default target inside a parallel state enters every region of it.
    let def = json!({ "id": "m", "initial": "p", "states": {
        "p": st("p", json!({ "initial": "h", "states": {
            "a": st("a", json!({ "type": "parallel", "states": { "x": st("x", json!({})), "y": st("y", json!({})) } })),
            "h": { "type": "history", "target": "a.y" } } })) } });
    assert_eq!(story(def, &[])[0], (json!({ "p": { "a": { "x": {}, "y": {} } } }), json!(["en:p", "en:a", "en:x", "en:y"])));
}

#[test]
fn an_initial_history_state_needs_a_default_target_and_several_must_lie_in_different_regions() {
    let refused = |def: Value, code: Code, path: &str, what: &str| {
        let e = Machine::from_value(def).unwrap_err();
        assert_eq!((e.code, e.path.as_deref()), (code, Some(path)), "{e}");
        assert!(e.message.contains(what), "{e}");
    };
    // Without one its parent's initial state, the fallback, is itself (XState 5 overflows its stack).
    refused(
        json!({ "id": "m", "initial": "h", "states": { "a": {}, "h": { "type": "history" } } }),
        Code::InvalidInitial,
        "initial",
        "initial state \"h\" is a history state without a default target",
    );
    refused(
        json!({ "id": "m", "initial": "p", "states": { "p": { "initial": "h", "states": { "a": {}, "h": { "type": "history", "target": [] } } } } }),
        Code::InvalidInitial,
        "states.p.initial",
        "without a default target",
    );
    // Two default targets in one compound state would enter both.
    refused(
        json!({ "id": "m", "initial": "p", "states": { "p": { "initial": "a", "states": { "a": {}, "b": {}, "h": { "type": "history", "target": ["a", "b"] } } } } }),
        Code::InvalidDefinition,
        "states.p.states.h.target",
        "not in different regions of a parallel state",
    );
}

#[test]
fn a_history_record_that_restores_no_configuration_is_refused_on_load() {
    let m = machine(json!({
        "id": "h", "initial": "work",
        "states": {
            "work": { "initial": "a", "on": { "PAUSE": "paused" }, "states": {
                "a": {}, "b": { "initial": "b1", "states": { "b1": {}, "b2": {} } },
                "hist": { "type": "history" }, "deep": { "type": "history", "history": "deep" } } },
            "paused": { "on": { "RESUME": "#h.work.hist" } } }
    }));
    let paused = m.config_of_value(&json!("paused")).unwrap();
    let with = |record: Value| {
        let mut s = idem::Snapshot::initial(&m, &paused);
        s.state.history = record.as_object().unwrap().clone();
        s.encode_from().0
    };
    let resume = json!({ "id": "e1", "type": "RESUME" });
    // What the engine records: one child (shallow), every atomic descendant (deep).
    for ok in [json!({ "work.hist": ["work.b"] }), json!({ "work.deep": ["work.b.b2"] }), json!({ "work.hist": ["work.a"], "work.deep": ["work.a"] })] {
        let o = m.reduce_in("h-1", Some(&with(ok.clone())), &resume, T0);
        assert_eq!(o.status, Status::Applied, "{ok}: {:?}", o.error);
    }
    // Two children of one compound state, a state outside the parent, the parent itself, nothing.
    for forged in [
        json!({ "work.hist": ["work.a", "work.b"] }),
        json!({ "work.deep": ["work.b.b1", "work.b.b2"] }),
        json!({ "work.hist": ["paused"] }),
        json!({ "work.hist": ["work"] }),
        json!({ "work.hist": ["work.deep"] }),
        json!({ "work.hist": [] }),
    ] {
        let text = with(forged.clone());
        let e = idem::inspect(&m, &text).unwrap_err();
        assert_eq!(e.code, Code::InvalidSnapshot, "{forged}: {e}");
        let o = m.reduce_in("h-1", Some(&text), &resume, T0);
        assert_eq!((o.status, o.error.map(|e| e.code)), (Status::Rejected, Some(Code::InvalidSnapshot)), "{forged}");
    }
}

#[test]
fn a_history_state_of_a_parallel_state_restores_it_whole_when_its_record_changes_on_the_way_out() {
    // Found by fuzz_props once its machines had history states in parallel
    // states. Nothing recorded, `h` names its parent `d` (the domain is then the
    // machine: `d` is exited); exiting `d` records its regions, and entering `h`
    // restores them: `d` itself must be entered again too. The domain is the one
    // the exit set was computed over, not the one the new record would give (`d`).
    // XState 5.33 enters x and y alone (its state value fills in `d`; `en:d` never
    // runs); the differential generator puts no history state in a parallel state.
    let m = machine(json!({ "id": "m", "initial": "d", "states": { "a": {},
        "d": st("d", json!({ "type": "parallel", "states": {
            "x": st("x", json!({})), "y": st("y", json!({ "on": { "E0": "h" } })), "h": { "type": "history" } } })) } }));
    let steps = story_with(&m, &["E0", "E0"]);
    let whole = json!({ "d": { "x": {}, "y": {} } });
    assert_eq!(steps[1], (whole.clone(), json!(["en:d", "en:x", "en:y", "ex:y", "ex:x", "ex:d", "en:d", "en:x", "en:y"])));
    // Recorded now: the domain is `d`, whose regions are exited and entered again.
    assert_eq!(steps[2].1.as_array().unwrap()[9..], [json!("ex:y"), json!("ex:x"), json!("en:x"), json!("en:y")]);
}
