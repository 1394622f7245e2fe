//! Named implementations as data (`implementations.guards/actions/delays`,
//! XState 5's shape): a name runs as the same code written inline would,
//! `params` is bound where the name is used, the hazard analysis sees through
//! names, and a name nothing implements is refused on load with every such
//! name and where it is used.

use idem::{Code, Machine};
use serde_json::{json, Value};

/// An order: `ADD` adds the amount when it is above `params.min`, `SHIP`
/// notifies through an effect whose payload comes from `params`, and the
/// `shipped` state times out after the named `grace` delay.
fn named() -> Value {
    json!({
        "id": "order", "initial": "open", "context": { "total": 0, "lines": 0 },
        "implementations": {
            "guards": {
                "above": { ">": [{ "var": "event.payload.amount" }, { "var": "params.min" }] },
                "hasLines": { ">": [{ "var": "context.lines" }, 0] }
            },
            "actions": {
                "addLine": [{ "assign": {
                    "total": { "+": [{ "var": "context.total" }, { "var": "event.payload.amount" }] },
                    "lines": { "+": [{ "var": "context.lines" }, 1] } } }],
                "notify": [{ "effect": { "type": "notify", "payload": { "channel": { "var": "params.channel" }, "total": { "var": "context.total" } } } }]
            },
            "delays": { "grace": { "*": [2, 1000] } }
        },
        "states": {
            "open": { "on": {
                "ADD": { "guard": { "type": "above", "params": { "min": 10 } }, "actions": "addLine" },
                "SHIP": { "target": "shipped", "guard": "hasLines", "actions": [{ "type": "notify", "params": { "channel": "mail" } }] }
            } },
            "shipped": { "after": { "grace": "closed" } },
            "closed": { "type": "final" }
        }
    })
}

/// The same machine with its code written inline.
fn inline() -> Value {
    json!({
        "id": "order", "initial": "open", "context": { "total": 0, "lines": 0 },
        "states": {
            "open": { "on": {
                "ADD": { "guard": { ">": [{ "var": "event.payload.amount" }, 10] }, "actions": [{ "assign": {
                    "total": { "+": [{ "var": "context.total" }, { "var": "event.payload.amount" }] },
                    "lines": { "+": [{ "var": "context.lines" }, 1] } } }] },
                "SHIP": { "target": "shipped", "guard": { ">": [{ "var": "context.lines" }, 0] },
                    "actions": [{ "effect": { "type": "notify", "payload": { "channel": "mail", "total": { "var": "context.total" } } } }] }
            } },
            "shipped": { "after": { "2000": "closed" } },
            "closed": { "type": "final" }
        }
    })
}

/// What a step leaves, without the machine's identity (its hash differs).
fn observed(out: &idem::Outcome) -> Value {
    let j = out.to_json(true);
    json!({
        "status": j["status"], "error": j["error"]["code"], "state": j["snapshot"]["value"], "context": j["snapshot"]["context"],
        "effects": out.effects.iter().map(|e| json!([e.effect_type, e.payload])).collect::<Vec<_>>(),
        "nextDueAt": j["nextDueAt"],
    })
}

#[test]
fn named_implementations_run_as_their_inline_code() {
    let (a, b) = (Machine::from_value(named()).unwrap(), Machine::from_value(inline()).unwrap());
    let events = [
        json!({ "id": "e1", "type": "SHIP" }),
        json!({ "id": "e2", "type": "ADD", "payload": { "amount": 5 } }),
        json!({ "id": "e3", "type": "ADD", "payload": { "amount": 25 } }),
        json!({ "id": "e4", "type": "ADD", "payload": { "amount": 11 } }),
        json!({ "id": "e5", "type": "SHIP" }),
        // The timer's event, as the outbox gives it once due.
        Value::Null,
    ];
    let (mut sa, mut sb): (Option<String>, Option<String>) = (None, None);
    let mut seen = Vec::new();
    let mut timers = Vec::new();
    for (i, e) in events.iter().enumerate() {
        // The timer fires once it is due, 2000 ms after SHIP.
        let now = if i == 5 { 3004 } else { 1000 + i as u64 };
        let timer = |m: &Machine, snap: &Option<String>| {
            idem::outbox::due(m, snap.as_deref().unwrap(), now).unwrap().into_iter().find(|d| d["kind"] == "timer").unwrap()["event"].clone()
        };
        let e = &if e.is_null() { timer(&a, &sa) } else { e.clone() };
        assert!(!e.is_null() && (i < 5 || *e == timer(&b, &sb)), "{e}");
        let (oa, ob) = (a.reduce(sa.as_deref(), e, now), b.reduce(sb.as_deref(), e, now));
        assert_eq!(observed(&oa), observed(&ob), "event {e}");
        seen.push(observed(&oa));
        if let Some(snap) = &oa.snapshot {
            let due = |at| idem::outbox::due(&a, snap, at).unwrap().iter().filter(|d| d["kind"] == "timer").count();
            timers.push((i, due(now + 1999), due(now + 2000)));
        }
        sa = oa.snapshot.clone().or(sa);
        sb = ob.snapshot.clone().or(sb);
    }
    // Not vacuous: the guard with params refused 5 and took 25 and 11, the
    // notify effect carries its param, the named delay scheduled 2 s.
    assert_eq!(seen[2]["context"], json!({ "total": 25, "lines": 1 }));
    assert_eq!(seen[3]["context"], json!({ "total": 36, "lines": 2 }));
    assert_eq!(seen[4]["effects"], json!([["notify", { "channel": "mail", "total": 36 }]]));
    assert!(timers.contains(&(4, 0, 1)), "the shipped state's timer is due 2000 ms after SHIP: {timers:?}");
    assert_eq!(seen[5]["state"], json!("closed"), "{}", seen[5]);
}

#[cfg(feature = "analysis")]
#[test]
fn the_analysis_reads_names_as_inline_code() {
    let codes = |def: Value| {
        let m = Machine::from_value(def).unwrap();
        let mut c: Vec<(String, String)> = idem::analyze::analyze(&m).iter().map(|f| (f.code.to_string(), format!("{:?}", f.severity))).collect();
        c.sort();
        c
    };
    let (a, b) = (codes(named()), codes(inline()));
    assert!(a.iter().any(|(c, _)| c == "accumulating_assign"), "the named addLine accumulates: {a:?}");
    assert_eq!(a, b);
}

#[test]
fn params_are_bound_where_the_name_is_used() {
    // One implementation, two uses with different params; a missing param reads its default.
    let m = Machine::from_value(json!({
        "id": "m", "initial": "a", "context": { "n": 0 },
        "implementations": { "actions": { "add": [{ "assign": { "n": { "+": [{ "var": "context.n" }, { "var": ["params.by", 100] }] } } }] } },
        "states": { "a": { "on": {
            "ONE": { "actions": { "type": "add", "params": { "by": 1 } } },
            "TEN": { "actions": [{ "type": "add", "params": { "by": 10 } }] },
            "DEFAULT": { "actions": ["add"] },
            // Inside `map` a `var` reads the item: `params` there is the item's, not bound.
            "MAP": { "actions": [{ "assign": { "n": { "reduce": [{ "map": [{ "var": "event.payload.items" }, { "var": "params" }] }, { "+": [{ "var": "current" }, { "var": "accumulator" }] }, 0] } } }] }
        } } }
    }))
    .unwrap();
    let mut snap = None;
    let mut last = Value::Null;
    for (id, t, payload) in [("1", "ONE", json!({})), ("2", "TEN", json!({})), ("3", "DEFAULT", json!({}))] {
        let out = m.reduce(snap.as_deref(), &json!({ "id": id, "type": t, "payload": payload }), 1);
        last = out.to_json(true)["snapshot"]["context"]["n"].clone();
        snap = out.snapshot.clone().or(snap);
    }
    assert_eq!(last, json!(111));
    let out = m.reduce(snap.as_deref(), &json!({ "id": "4", "type": "MAP", "payload": { "items": [{ "params": 2 }, { "params": 3 }] } }), 1);
    assert_eq!(out.to_json(true)["snapshot"]["context"]["n"], json!(5));
}

#[test]
fn a_param_that_is_an_object_stays_data() {
    // `{"op": ...}` given as a param is a value, not an operator to run.
    let m = Machine::from_value(json!({
        "id": "m", "initial": "a", "context": {},
        "implementations": { "actions": { "keep": [{ "assign": { "kept": { "var": "params.value" } } }] } },
        "states": { "a": { "on": { "GO": { "actions": [{ "type": "keep", "params": { "value": { "var": "context.secret" } } }] } } } }
    }))
    .unwrap();
    let out = m.reduce(None, &json!({ "id": "1", "type": "GO" }), 1);
    assert_eq!(out.to_json(true)["snapshot"]["context"]["kept"], json!({ "var": "context.secret" }));
}

#[test]
fn every_unimplemented_name_is_listed_with_where_it_is_used() {
    let err = Machine::from_value(json!({
        "id": "m", "initial": "a",
        "implementations": { "guards": { "ok": true } },
        "states": {
            "a": { "entry": ["greet"], "on": { "GO": [{ "target": "b", "guard": "isAdmin" }, { "target": "b", "guard": "ok", "actions": [{ "type": "notify" }] }] } },
            "b": { "after": { "retryDelay": "a" } }
        }
    }))
    .unwrap_err();
    assert_eq!(err.code, Code::Unimplemented, "{err}");
    assert_eq!(err.path.as_deref(), Some("states.a.entry[0]"));
    for part in [
        "action \"greet\" (used at states.a.entry[0])",
        "guard \"isAdmin\" (used at states.a.on.GO[0].guard)",
        "action \"notify\" (used at states.a.on.GO[1].actions[0])",
        "delay \"retryDelay\" (used at states.b.after.retryDelay)",
    ] {
        assert!(err.message.contains(part), "{part} in {}", err.message);
    }
    assert!(!err.message.contains("\"ok\""), "{}", err.message);
    assert_eq!(err.message.chars().next().map(char::is_lowercase), Some(true));
    assert!(!err.message.ends_with('.'));
}

#[test]
fn implementations_are_checked_where_they_are_written() {
    let with = |imps: Value| json!({ "id": "m", "initial": "a", "implementations": imps, "states": { "a": {} } });
    let check = |def: Value, code: Code, path: &str| {
        let err = Machine::from_value(def.clone()).expect_err(&format!("accepted {def}"));
        assert_eq!((err.code, err.path.as_deref()), (code, Some(path)), "{def}: {err}");
        assert!(err.message.contains(path), "{}", err.message);
    };
    check(with(json!([])), Code::InvalidDefinition, "implementations");
    check(with(json!({ "actors": {} })), Code::InvalidDefinition, "implementations.actors");
    check(with(json!({ "guards": [] })), Code::InvalidDefinition, "implementations.guards");
    // Checked even when nothing uses them.
    check(with(json!({ "guards": { "g": { "nope": 1 } } })), Code::InvalidExpression, "implementations.guards.g");
    check(with(json!({ "guards": { "g": { "a": 1, "b": 2 } } })), Code::InvalidExpression, "implementations.guards.g");
    check(with(json!({ "actions": { "x": [{ "log": 1 }] } })), Code::UnknownAction, "implementations.actions.x[0]");
    check(with(json!({ "actions": { "x": ["y"], "y": [] } })), Code::InvalidDefinition, "implementations.actions.x[0]");
    check(with(json!({ "delays": { "d": { "var": "context.ms" } } })), Code::InvalidDefinition, "implementations.delays.d");
    check(with(json!({ "delays": { "d": -5 } })), Code::InvalidDefinition, "implementations.delays.d");
    check(with(json!({ "delays": { "d": "soon" } })), Code::InvalidDefinition, "implementations.delays.d");
    // A key that starts as a number is still a number of ms, not a name.
    let def = json!({ "id": "m", "initial": "a", "states": { "a": { "after": { "-5": "a" } } } });
    check(def, Code::InvalidDefinition, "states.a.after.-5");
}

#[test]
fn the_hash_covers_the_implementations() {
    let a = Machine::from_value(named()).unwrap();
    let mut changed = named();
    changed["implementations"]["guards"]["hasLines"] = json!({ ">": [{ "var": "context.lines" }, 1] });
    let b = Machine::from_value(changed).unwrap();
    assert_ne!(a.hash, b.hash);
}
