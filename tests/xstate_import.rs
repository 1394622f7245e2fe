//! XState configs imported whole and run by the real reducer: invoked services
//! as effects whose completions (reported through the outbox) move the
//! machine, XState v4 idioms, delays and done data.
#![cfg(feature = "analysis")]

use idem::analyze::Severity;
use idem::xstate::{self, Imported};
use idem::{Machine, Outcome, Status};
use serde_json::{json, Value};

fn fixture(name: &str) -> Imported {
    let path = format!("{}/tests/analysis/xstate/{name}", env!("CARGO_MANIFEST_DIR"));
    xstate::import_json(&std::fs::read_to_string(&path).unwrap()).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}

/// The sites of the diagnostics of one severity, sorted.
fn sites(out: &Imported, severity: Severity) -> Vec<String> {
    let mut s: Vec<String> = out.diagnostics.iter().filter(|d| d.severity == severity).filter_map(|d| d.site.clone()).collect();
    s.sort();
    s
}

fn message<'a>(out: &'a Imported, site: &str) -> &'a str {
    let d = out.diagnostics.iter().find(|d| d.site.as_deref() == Some(site));
    &d.unwrap_or_else(|| panic!("no diagnostic at {site}: {:#?}", out.diagnostics)).message
}

/// One process driven through `reduce`, its snapshot carried from event to event.
struct Process {
    m: Machine,
    name: &'static str,
    snapshot: Option<String>,
    now: u64,
}

impl Process {
    fn new(out: &Imported, name: &'static str) -> Self {
        let m = Machine::from_value(out.definition.clone()).unwrap_or_else(|e| panic!("the import is a valid definition: {e:?}"));
        Process { m, name, snapshot: None, now: 1_000 }
    }

    fn send(&mut self, event: Value) -> Outcome {
        self.now += 1;
        let o = self.m.reduce_in(self.name, self.snapshot.as_deref(), &event, self.now);
        assert!(o.error.is_none(), "{event}: {:?}", o.error);
        if let Some(s) = &o.snapshot {
            self.snapshot = Some(s.clone());
        }
        o
    }

    fn event(&mut self, id: &str, ty: &str) -> Outcome {
        self.send(json!({ "id": id, "type": ty }))
    }

    /// The dispatcher's two reports for an effect: it started, then it finished.
    fn started(&mut self, key: &str) -> Outcome {
        self.send(json!({ "id": format!("{key}#1:started"), "type": "idem.effect.started", "payload": { "key": key } }))
    }

    fn succeeded(&mut self, key: &str, result: Value) -> Outcome {
        self.send(json!({ "id": format!("{key}#1:result"), "type": "idem.effect.succeeded", "payload": { "key": key, "result": result } }))
    }

    /// The host fires the process's one due timer, by the id the snapshot gives it.
    fn fire_timer(&mut self) -> Outcome {
        let view = idem::inspect(&self.m, self.snapshot.as_deref().unwrap()).unwrap();
        let timers = view["timers"].as_array().cloned().unwrap_or_default();
        assert_eq!(timers.len(), 1, "{timers:?}");
        let id = timers[0]["id"].as_str().unwrap().to_string();
        self.now = timers[0]["dueAt"].as_u64().unwrap_or_else(|| panic!("{}", timers[0])) - 1;
        self.send(json!({ "id": id, "type": "idem.after" }))
    }

    fn failed(&mut self, key: &str) -> Outcome {
        self.send(json!({ "id": format!("{key}#1:result"), "type": "idem.effect.failed", "payload": { "key": key, "error": "declined" } }))
    }
}

/// The (type, key, payload) of each effect an outcome emitted.
fn effects(o: &Outcome) -> Vec<(String, String, Value)> {
    o.effects.iter().map(|e| (e.effect_type.clone(), e.key.clone(), e.payload.clone())).collect()
}

#[test]
fn an_invoked_service_is_an_effect_whose_completion_moves_the_machine() {
    let out = fixture("checkout-invoke.json");
    assert_eq!(
        sites(&out, Severity::Warning),
        vec![
            "states.failed.after.retryDelay",
            "states.paying.invoke.onDone.actions",
            "states.paying.invoke.onError[0].guard",
            "states.receipt.invoke.src",
        ]
    );
    assert!(message(&out, "states.receipt.invoke.src").contains("fromPromise"));
    assert!(message(&out, "states.failed.after.retryDelay").contains("retryDelay"));
    let def = &out.definition;
    assert_eq!(
        def["states"]["paying"]["entry"],
        json!([
            { "assign": { "$invoke:charge": { "var": "event.id" } } },
            { "effect": { "type": "chargeCard", "payload": { "currency": "EUR" } } }
        ])
    );
    assert_eq!(def["states"]["paying"]["on"]["chargeCard.succeeded"]["target"], "confirming");
    assert_eq!(def["states"]["paying"]["on"]["chargeCard.failed"].as_array().unwrap().len(), 2);
    assert_eq!(def["states"]["done"]["entry"], json!([{ "assign": { "$output:checkoutFlow": { "status": "ordered" } } }]));
    assert!(def["states"]["receipt"].get("entry").is_none(), "inline actor logic is not an effect");

    let mut p = Process::new(&out, "order-1");
    let o = p.event("e1", "CHECKOUT");
    assert_eq!(o.state, json!("paying"));
    assert_eq!(effects(&o), vec![("chargeCard".into(), "order-1/e1:0".into(), json!({ "currency": "EUR" }))]);
    assert_eq!(p.started("order-1/e1:0").status, Status::Applied);
    let done = p.succeeded("order-1/e1:0", json!({ "receipt": "r-1" }));
    assert_eq!((done.status, &done.state), (Status::Applied, &json!("confirming")));
    // onDone's named action runs as an opaque effect, then the next state's invoke starts.
    let types: Vec<String> = effects(&done).into_iter().map(|e| e.0).collect();
    assert_eq!(types, vec!["storeReceipt", "createOrder"]);
    // The same report delivered again is a duplicate: the machine does not move twice.
    let again = p.succeeded("order-1/e1:0", json!({ "receipt": "r-1" }));
    assert_eq!((again.status, again.effects.len(), &again.state), (Status::Duplicate, 0, &json!("confirming")));
    let create = done.effects.iter().find(|e| e.effect_type == "createOrder").unwrap().key.clone();
    p.started(&create);
    let o = p.succeeded(&create, json!({}));
    assert_eq!(o.state, json!("receipt"));
    // The delayed transition still leads on; the final state records its output for the parent.
    let entered = p.now;
    assert_eq!(p.fire_timer().state, json!("done"));
    assert_eq!(p.now, entered + 2_000, "fired when due");
    let view = idem::inspect(&p.m, p.snapshot.as_deref().unwrap()).unwrap();
    assert_eq!(view["context"]["$output:checkoutFlow"], json!({ "status": "ordered" }));
}

#[test]
fn an_effect_failure_takes_on_error_and_its_guards() {
    let out = fixture("checkout-invoke.json");
    let mut p = Process::new(&out, "order-3");
    p.event("e1", "CHECKOUT");
    p.started("order-3/e1:0");
    // The report carries no `$guard` flag, so the named guard is false and the second onError is taken.
    let o = p.failed("order-3/e1:0");
    assert_eq!((o.status, &o.state), (Status::Applied, &json!("failed")));
    // Another try is a new invocation with its own key.
    let o = p.event("e2", "RETRY");
    assert_eq!(effects(&o)[0].1, "order-3/e2:0");
}

#[test]
fn a_completion_after_the_state_is_left_is_ignored_even_once_it_is_entered_again() {
    let out = fixture("checkout-invoke.json");
    let mut p = Process::new(&out, "order-2");
    p.event("e1", "CHECKOUT");
    p.started("order-2/e1:0");
    assert_eq!(p.event("e2", "CANCEL").state, json!("cart"));
    // Entered again: a second charge, while the first is still out.
    let o = p.event("e3", "CHECKOUT");
    assert_eq!(effects(&o)[0].1, "order-2/e3:0");
    // The first charge's completion belongs to the invocation that was left: the machine stays.
    let stale = p.succeeded("order-2/e1:0", json!({}));
    assert_eq!(stale.state, json!("paying"), "{:?}", stale.status);
    assert!(stale.effects.is_empty(), "onDone's action did not run: {:?}", effects(&stale));
    // The current one's completion is taken.
    p.started("order-2/e3:0");
    assert_eq!(p.succeeded("order-2/e3:0", json!({})).state, json!("confirming"));

    // Left for good: the completion changes nothing in the machine.
    let mut q = Process::new(&out, "order-4");
    q.event("e1", "CHECKOUT");
    q.started("order-4/e1:0");
    q.event("e2", "CANCEL");
    let late = q.succeeded("order-4/e1:0", json!({}));
    assert_eq!((&late.state, late.effects.len()), (&json!("cart"), 0));
}

#[test]
fn xstate_v4_idioms_are_rewritten_and_run() {
    let out = fixture("auth-v4.json");
    assert_eq!(
        sites(&out, Severity::Info),
        vec![
            "key",
            "on.CANCEL",
            "on.LOGOUT",
            "states.authenticating.on.CANCEL",
            "states.session.on.",
            "states.session.on.[0].cond",
            "states.session.states.hist.history",
        ]
    );
    assert!(message(&out, "states.authenticating.on.CANCEL").contains("forbids"));
    let def = &out.definition;
    assert_eq!(def["id"], "auth");
    assert_eq!(def["on"], json!({ "LOGOUT": ".loggedOut", "CANCEL": ".idle" }));
    assert_eq!(def["states"]["session"]["states"]["hist"], json!({ "type": "history", "history": "shallow" }));
    assert_eq!(def["states"]["session"]["always"]["target"], "loggedOut");
    assert!(def["states"]["session"]["on"].get("").is_none());

    let mut p = Process::new(&out, "user-1");
    let o = p.event("e1", "LOGIN");
    assert_eq!(effects(&o), vec![("loginService".into(), "user-1/e1:0".into(), json!({ "remember": true }))]);
    // CANCEL is forbidden while authenticating: the machine's own CANCEL is not taken.
    assert_eq!(p.event("e2", "CANCEL").state, json!("authenticating"));
    p.started("user-1/e1:0");
    assert_eq!(p.succeeded("user-1/e1:0", json!({ "token": "t" })).state, json!({ "session": "active" }));
    assert_eq!(p.event("e3", "LOCK").state, json!({ "session": "locked" }));
    // The machine's LOGOUT names its child bare; the history state is reached by a dotted path.
    assert_eq!(p.event("e4", "LOGOUT").state, json!("loggedOut"));
    assert_eq!(p.event("e5", "RESUME").state, json!({ "session": "locked" }));
    let o = p.event("e6", "UNLOCK");
    assert_eq!(effects(&o)[0].0, "verifyPin");
    p.started("user-1/e6:0");
    assert_eq!(p.failed("user-1/e6:0").state, json!({ "session": "locked" }));
    // Elsewhere CANCEL is the machine's: back to idle.
    assert_eq!(p.event("e7", "CANCEL").state, json!("idle"));
}

#[test]
fn named_and_iso_delays_become_milliseconds_when_known() {
    let out = fixture("media-player.json");
    assert_eq!(sites(&out, Severity::Warning), vec!["states.error.after.P1M", "states.error.after.retryDelay"]);
    assert!(message(&out, "states.error.after.P1M").contains("P1M"));
    assert!(message(&out, "states.error.after.retryDelay").contains("retryDelay"));
    let playing = &out.definition["states"]["playing"]["states"];
    assert_eq!(playing["buffering"]["after"], json!({ "10000": "#player.error" }));
    assert_eq!(playing["running"]["after"], json!({ "1800000": "#player.stopped" }));
    assert_eq!(playing["paused"]["after"], json!({ "300000": "#player.stopped" }));
    assert_eq!(out.definition["states"]["error"]["after"], json!({}));

    let mut p = Process::new(&out, "tv");
    let o = p.event("e1", "PLAY");
    assert_eq!(o.state, json!({ "playing": "buffering" }));
    assert_eq!(o.next_due_at, Some(p.now + 10_000));
    let o = p.event("e2", "LOADED");
    assert_eq!(o.next_due_at, Some(p.now + 1_800_000));
    assert_eq!(p.fire_timer().state, json!("stopped"));
}

#[test]
fn inline_guards_stay_distinct_flags() {
    let config = json!({
        "id": "g", "initial": "a",
        "states": {
            "a": { "on": {
                "GO": [{ "target": "b", "cond": null }, { "target": "c", "guard": null }],
                "V4": [
                    { "target": "b", "cond": { "type": "xstate.guard", "name": "isAdult" } },
                    { "target": "c", "cond": { "type": "xstate.guard", "name": "(ctx) => ctx.age > 3" } }
                ]
            } },
            "b": {}, "c": {}
        }
    });
    let out = xstate::import(&config).unwrap();
    let flag = |ev: &str, i: usize| out.definition["states"]["a"]["on"][ev][i]["guard"]["==="][0]["var"].as_str().unwrap().to_string();
    assert_eq!(flag("GO", 0), "event.payload.$guard.inline:states/a/on/GO[0]/cond");
    assert_eq!(flag("GO", 1), "event.payload.$guard.inline:states/a/on/GO[1]/guard");
    assert_eq!(flag("V4", 0), "event.payload.$guard.inline:isAdult");
    assert_eq!(flag("V4", 1), "event.payload.$guard.inline:states/a/on/V4[1]/cond");
    let m = Machine::from_value(out.definition).unwrap();
    let o = m.reduce(None, &json!({ "id": "e1", "type": "GO", "payload": { "$guard": { "inline:states/a/on/GO[1]/guard": true } } }), 0);
    assert_eq!(o.state, json!("c"), "the second guard alone holds");
}

#[test]
fn invoked_work_that_cannot_be_an_effect_is_named_precisely() {
    let config = json!({
        "id": "x", "initial": "a",
        "states": {
            "a": { "invoke": [
                { "src": { "id": "child", "initial": "s", "states": { "s": {} } }, "onDone": "b" },
                { "src": "ticker", "onSnapshot": { "actions": "log" }, "autoForward": true },
                { "onDone": "b" },
                { "id": "fetchUser", "onDone": "b" }
            ] },
            "b": {}
        }
    });
    let out = xstate::import(&config).unwrap();
    assert!(message(&out, "states.a.invoke[0].src").contains("invoked machine"));
    assert!(message(&out, "states.a.invoke[1].onSnapshot").contains("onSnapshot"));
    assert!(message(&out, "states.a.invoke[1].autoForward").contains("receives no events"));
    assert!(message(&out, "states.a.invoke[2].src").contains("no id"));
    assert!(message(&out, "states.a.invoke[3].src").contains("`fetchUser`"));
    let types: Vec<&str> = out.definition["states"]["a"]["entry"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["effect"]["type"].as_str())
        .collect();
    assert_eq!(types, vec!["ticker", "fetchUser"]);
    assert_eq!(out.kept.transitions, 4, "three onDone and one onSnapshot");
    assert_eq!(out.kept.transitions_kept, 1);
    assert!(Machine::from_value(out.definition).is_ok());
}

#[test]
fn the_import_counts_the_transitions_it_kept() {
    let mut total = (0, 0);
    for (file, states, transitions, kept) in
        [("checkout-invoke.json", 7, 13, 11), ("auth-v4.json", 8, 13, 13), ("media-player.json", 7, 12, 10)]
    {
        let out = fixture(file);
        assert_eq!((out.kept.states, out.kept.transitions, out.kept.transitions_kept), (states, transitions, kept), "{file}");
        println!("{file}: {kept} of {transitions} transitions kept");
        total = (total.0 + transitions, total.1 + kept);
    }
    println!("all: {} of {} transitions kept", total.1, total.0);
}
