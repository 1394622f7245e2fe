//! Actions: idem's own data actions as they are, XState's built-ins that have
//! a JSON form as data, anything else an opaque effect of its name.
//!
//! XState 4's action creators return plain objects, which `JSON.stringify`
//! keeps: `send("X")` is `{ "type": "xstate.send", "event": { "type": "X" }, "id": "X" }`
//! (with `to` when it goes to another actor, `delay` when delayed),
//! `raise("X")` is `{ "type": "xstate.raise", "event": { "type": "X" } }`,
//! `assign({ n: 0 })` is `{ "type": "xstate.assign", "assignment": { "n": 0 } }`.
//! XState 5's are functions with the same members (`sendTo` has the type
//! `xstate.sendTo`, `emit` is `{ "type": "xstate.emit", "event": ... }`), lost
//! by a plain `JSON.stringify` and kept by a replacer that writes them out
//! (`tests/xstate/make.mjs`). They are read as:
//!
//! - a raise, or a send without `to` (XState 4 sends it to the machine itself),
//!   as idem's `raise`: handled within the same event. XState 4 queues a sent
//!   event behind the current one instead, and a `to` computed by a function
//!   (`respond`, `sendTo(() => ref)`) is lost in JSON and reads the same, so each
//!   such send gets an `info` diagnostic saying so;
//! - a send to another actor (`to: "#_parent"` or an actor's name) as an effect
//!   `xstate.send` carrying `to` and the event: idem has no other actors, and the
//!   host that runs the effect can deliver it;
//! - `assign` of literal values as idem's `assign`, and the payloads of sent,
//!   raised and emitted events as data: a value that holds an object is written
//!   `{"preserve": ...}`, so that no object in it reads as an operator. A value computed by a
//!   function is lost in JSON before the import sees it: the diagnostic of each
//!   assign says so, and an assign left with no value is an opaque effect;
//! - `emit` (XState 5) as an effect of the emitted event's type, its other
//!   members the payload: both reach the world outside the machine.
//!
//! XState 4's `choose([{ cond, actions }, ...])` on a transition is data: the
//! transition becomes one candidate per choice, guarded by its condition, with
//! the choice's actions in the place of the `choose`, and a last candidate that
//! chooses nothing when no choice is unconditional.
//!
//! A delayed send or raise, an event computed by a function, a `choose` of
//! entry or exit actions, and `pure` and `enqueueActions` (which pick their
//! actions in code) are opaque effects with a diagnostic naming the action and
//! its path.

use super::{join, Importer};
use crate::analyze::Severity;
use serde_json::{json, Map, Value};

const IMPLEMENT_FIX: &str = "Give it as data in the definition's `implementations.actions` (idem actions: an `assign` if it changes context, an `effect` if it reaches the outside world).";
const DATA_FIX: &str = "Write it as data: an idem `assign` (JSONLogic) if it changes context, an `effect` if it reaches the outside world.";

impl Importer {
    pub(super) fn actions(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Vec<Value> {
        let list: Vec<(&Value, String)> = match v {
            Value::Array(a) => a.iter().enumerate().map(|(i, x)| (x, format!("{path}[{i}]"))).collect(),
            other => vec![(other, path.to_string())],
        };
        let mut out = Vec::new();
        for (a, p) in list {
            if let Some(a) = self.action(a, &p, spath, event) {
                out.push(a);
            }
        }
        out
    }

    fn action(&mut self, a: &Value, p: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        match a {
            Value::Object(o) if o.len() == 1 && ["assign", "effect", "respond", "raise"].iter().any(|k| o.contains_key(*k)) => Some(a.clone()),
            Value::String(name) if !name.is_empty() => Some(self.named_action(name, None, p, spath, event)),
            Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                Some("xstate.raise") => Some(self.raise(o, p, spath, event).unwrap_or_else(|| opaque("xstate.raise"))),
                Some(t @ ("xstate.send" | "xstate.sendTo")) => Some(self.send(t, o, p, spath, event)),
                Some("xstate.assign") => Some(self.assign(o, p, spath, event)),
                Some("xstate.emit") => Some(self.emit(o, p, spath, event)),
                Some(t @ ("xstate.log" | "xstate.cancel")) => {
                    self.diag(Severity::Info, spath, event, p, format!("built-in action `{t}` has no effect on state; left out"), "");
                    None
                }
                Some(t @ ("xstate.choose" | "xstate.pure" | "xstate.enqueueActions")) => {
                    self.diag(
                        Severity::Warning,
                        spath,
                        event,
                        p,
                        format!("built-in action `{t}` picks its actions when it runs, by guards or code; it is modelled as an opaque effect `{t}`"),
                        "Put each choice on a transition of its own, guarded, with its actions as data.",
                    );
                    Some(opaque(t))
                }
                Some(t) if !t.is_empty() && !t.starts_with("xstate.") => Some(self.named_action(t, o.get("params"), p, spath, event)),
                Some(t) if !t.is_empty() => {
                    let builtin = t.starts_with("xstate.");
                    self.diag(
                        Severity::Warning,
                        spath,
                        event,
                        p,
                        format!(
                            "{} `{t}` cannot be read as data; it is modelled as an opaque effect `{t}`{}",
                            if builtin { "built-in action" } else { "action" },
                            if o.contains_key("params") { " (its params are not evaluated)" } else { "" }
                        ),
                        DATA_FIX,
                    );
                    Some(opaque(t))
                }
                _ => {
                    self.diag(Severity::Warning, spath, event, p, "an action object needs a string `type`; left out".into(), "");
                    None
                }
            },
            Value::Null => {
                self.diag(
                    Severity::Warning,
                    spath,
                    event,
                    p,
                    "an inline action (a function, lost in JSON) cannot be read; it is modelled as an opaque effect `inline-action`".into(),
                    "Name the action (setup({ actions })) or write it as idem data.",
                );
                Some(opaque("inline-action"))
            }
            other => {
                self.diag(Severity::Warning, spath, event, p, format!("an action cannot be {other}; left out"), "");
                None
            }
        }
    }

    /// A named action (`"notify"`, `{ "type": "notify", "params": … }`): kept
    /// as the name, which `implementations.actions` must implement; the import
    /// stands in an opaque effect of that type until the user gives it as data.
    fn named_action(&mut self, name: &str, params: Option<&Value>, p: &str, spath: &str, event: Option<&str>) -> Value {
        self.diag(
            Severity::Warning,
            spath,
            event,
            p,
            format!(
                "action `{name}` is code the analysis cannot read; it is kept as a name, which `implementations.actions.{name}` implements: \
                 the import stands in an opaque effect `{name}`{}, so running it again on a repeat is reported",
                if params.is_some() { " (its params are not evaluated)" } else { "" }
            ),
            IMPLEMENT_FIX,
        );
        self.stand_ins.actions.entry(name.to_string()).or_insert_with(|| json!([opaque(name)]));
        match params {
            Some(params) => json!({ "type": name, "params": params }),
            None => Value::String(name.to_string()),
        }
    }

    /// A transition whose actions hold XState 4's `choose([{ cond, actions }, ...])`
    /// (at `at` of `source`'s actions), imported as `t` without its actions: one
    /// candidate per choice, guarded by the transition's guard and the choice's,
    /// whose actions are those before the `choose`, the choice's, then those
    /// after it; and when no choice is unconditional, a last candidate that
    /// chooses nothing. XState evaluates a choice's condition when the `choose`
    /// runs, after the actions before it; idem before any of the transition's
    /// actions, which only differs when those actions change what the
    /// condition reads.
    pub(super) fn choices(&mut self, t: Value, source: &Value, at: usize, path: &str, spath: &str, event: Option<&str>) -> Value {
        let listed: Vec<&Value> = match source.get("actions") {
            Some(Value::Array(a)) => a.iter().collect(),
            Some(one) => vec![one],
            None => Vec::new(),
        };
        let ap = |i: usize| if matches!(source.get("actions"), Some(Value::Array(_))) { format!("{path}.actions[{i}]") } else { format!("{path}.actions") };
        let mut before = Vec::new();
        let mut after = Vec::new();
        for (i, a) in listed.iter().enumerate() {
            if i == at {
                continue;
            }
            let imported = self.action(a, &ap(i), spath, event);
            (if i < at { &mut before } else { &mut after }).extend(imported);
        }
        let cp = ap(at);
        self.diag(
            Severity::Info,
            spath,
            event,
            &cp,
            "`xstate.choose` picks its actions by the first condition that holds; read as one transition per choice, guarded by its \
             condition, whose actions are the transition's with the choice's in the place of the `choose` (XState evaluates a \
             condition when the `choose` runs, idem before the transition's actions)"
                .into(),
            "",
        );
        let base = match t {
            Value::String(target) => json!({ "target": target }),
            other => other,
        };
        let own = base.get("guard").cloned().map(|g| self.expression(g));
        let conds: &[Value] = listed[at].get("conds").and_then(Value::as_array).map_or(&[], Vec::as_slice);
        let mut out = Vec::new();
        let mut unconditional = false;
        for (j, choice) in conds.iter().enumerate() {
            let jp = format!("{cp}.conds[{j}]");
            let written = choice.get("cond").map(|g| ("cond", g)).or_else(|| choice.get("guard").map(|g| ("guard", g)));
            // A condition that cannot be read (said where it stands) is a flag of its own, never "always".
            let guard = written.map(|(k, g)| {
                let gp = join(&jp, k);
                self.guard_expr(g, &gp, spath, event).unwrap_or_else(|| json!({ "===": [{ "var": format!("event.payload.$guard.{}", super::guard::site_flag(&gp)) }, true] }))
            });
            unconditional = written.is_none();
            let mut actions = before.clone();
            if let Some(a) = choice.get("actions") {
                actions.extend(self.actions(a, &join(&jp, "actions"), spath, event));
            }
            actions.extend(after.iter().cloned());
            out.push(candidate(&base, own.as_ref(), guard, actions));
            if unconditional {
                break;
            }
        }
        if !unconditional {
            let mut actions = before;
            actions.extend(after);
            out.push(candidate(&base, own.as_ref(), None, actions));
        }
        Value::Array(out)
    }

    /// XState 4's `activities`: work that runs while the state is active, each
    /// an effect started on entry (by its name, or an inline one by its site).
    pub(super) fn activities(&mut self, v: &Value, path: &str, spath: &str) -> Vec<Value> {
        let list: Vec<(&Value, String)> = match v {
            Value::Array(a) => a.iter().enumerate().map(|(i, x)| (x, format!("{path}[{i}]"))).collect(),
            other => vec![(other, path.to_string())],
        };
        let mut out = Vec::new();
        for (a, p) in list {
            let name = match a {
                Value::String(s) if !s.is_empty() => s.clone(),
                Value::Object(o) => match o.get("type").or_else(|| o.get("id")).and_then(Value::as_str) {
                    Some(t) if !t.is_empty() => t.to_string(),
                    _ => format!("activity:{}", p.replace('.', "/")),
                },
                _ => format!("activity:{}", p.replace('.', "/")),
            };
            self.diag(
                Severity::Warning,
                spath,
                None,
                &p,
                format!(
                    "activity `{name}` runs while the state is active (XState 4); it is modelled as an effect `{name}` started on entry, \
                     and its stop on exit is not modelled"
                ),
                "Start the work with an entry action and stop it with an exit action, each an effect.",
            );
            out.push(opaque(&name));
        }
        out
    }

    /// `raise(...)`: the event it raises, as an idem `raise`.
    fn raise(&mut self, o: &Map<String, Value>, path: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        let delayed = o.get("delay").is_some_and(|d| !d.is_null());
        let raised = event_of(o.get("event"));
        let why = match (&raised, delayed) {
            (_, true) => "a delayed raise (`delay`) is not supported",
            (Err(why), false) => why,
            (Ok(_), false) => return raised.ok().map(|(ty, payload)| raise_of(ty, payload)),
        };
        self.diag(
            Severity::Warning,
            spath,
            event,
            path,
            format!("built-in action `xstate.raise` cannot be read as data: {why}; it is modelled as an opaque effect `xstate.raise`"),
            "Raise a fixed event: raise({ type: \"X\", ... }), or write { \"raise\": { \"type\": \"X\" } }.",
        );
        None
    }

    /// XState 4's `send` / XState 5's `sendTo`: to the machine itself a raise,
    /// to another actor an effect that carries the event.
    fn send(&mut self, ty: &str, o: &Map<String, Value>, path: &str, spath: &str, event: Option<&str>) -> Value {
        let to = o.get("to").filter(|t| !t.is_null());
        let delayed = o.get("delay").is_some_and(|d| !d.is_null());
        let sent = event_of(o.get("event"));
        let to_self = ty == "xstate.send" && to.is_none_or(|t| t == "#_internal");
        let unreadable = |why: String| (why, opaque(ty));
        let (why, modelled) = match (to, &sent) {
            (_, Err(why)) => unreadable(format!("{why} (as `forwardTo`, `escalate` and `send(fn)` write it)")),
            _ if delayed => unreadable("a delayed send (`delay`) is not supported: idem's raised events are handled within the same event".into()),
            (_, Ok((ety, payload))) if to_self => {
                let note = if to.is_some() { String::new() } else {
                    " A `to` computed by a function (`respond`, `sendTo(() => ref)`) is lost in JSON and reads the same: check that this one is sent to the machine itself."
                        .to_string()
                };
                self.diag(
                    Severity::Info,
                    spath,
                    event,
                    path,
                    format!(
                        "`{ty}` of \"{ety}\" to the machine itself is read as a raise, handled within the same event; XState 4 queues it \
                         behind the current event.{note}"
                    ),
                    "",
                );
                return raise_of(ety.clone(), payload.clone());
            }
            (Some(Value::String(target)), Ok((ety, payload))) => {
                let whom = if target == "#_parent" { "the machine's parent (sendParent)".to_string() } else { format!("the actor \"{target}\"") };
                let mut ev = payload.clone();
                ev.insert("type".into(), json!(ety));
                let mut carried = Map::new();
                carried.insert("to".into(), json!(target));
                carried.insert("event".into(), Value::Object(ev));
                let carried = quoted(Value::Object(carried));
                self.diag(
                    Severity::Warning,
                    spath,
                    event,
                    path,
                    format!(
                        "`{ty}` of \"{ety}\" goes to {whom}, and an idem process has no other actors: it is modelled as an effect `{ty}` \
                         whose payload carries `to` and the event"
                    ),
                    "Deliver it from the effect's handler, or import the other machine as a process of its own.",
                );
                return json!({ "effect": { "type": ty, "payload": carried } });
            }
            (Some(other), Ok(_)) => unreadable(format!("its target {other} is not an actor's name")),
            (None, Ok(_)) => unreadable("the actor it sends to is computed by a function (sendParent, sendTo(({ self }) => ...)), lost in JSON".into()),
        };
        self.diag(
            Severity::Warning,
            spath,
            event,
            path,
            format!("built-in action `{ty}` cannot be read as data: {why}; it is modelled as an opaque effect `{ty}`"),
            "Send a fixed event: send({ type: \"X\", ... }) / raise(...), or write { \"raise\": { \"type\": \"X\" } }.",
        );
        modelled
    }

    /// `assign({ field: <literal>, ... })` as idem's `assign`, each value
    /// [`quoted`]; a value that is a function is lost in JSON.
    fn assign(&mut self, o: &Map<String, Value>, path: &str, spath: &str, event: Option<&str>) -> Value {
        let fields = match o.get("assignment") {
            Some(Value::Object(fields)) if !fields.is_empty() => fields,
            _ => {
                self.diag(
                    Severity::Warning,
                    spath,
                    event,
                    path,
                    "built-in action `xstate.assign` computes the context with a function (lost in JSON); it is modelled as an opaque effect `xstate.assign`"
                        .into(),
                    "Assign literal values (assign({ step: 2 })), or write an idem `assign` with JSONLogic.",
                );
                return opaque("xstate.assign");
            }
        };
        let mut kept = Map::new();
        for (field, v) in fields {
            kept.insert(field.clone(), quoted(v.clone()));
        }
        let names: Vec<&str> = kept.keys().map(String::as_str).collect();
        self.diag(
            Severity::Info,
            spath,
            event,
            path,
            format!(
                "`xstate.assign` of literal values read as an idem assign of {}; a value computed by a function is lost in JSON before the import sees it",
                names.join(", ")
            ),
            "",
        );
        json!({ "assign": kept })
    }

    /// XState 5's `emit(event)`: an event for the actor's listeners, outside the machine.
    fn emit(&mut self, o: &Map<String, Value>, path: &str, spath: &str, event: Option<&str>) -> Value {
        match event_of(o.get("event")) {
            Ok((ty, payload)) => {
                self.diag(
                    Severity::Info,
                    spath,
                    event,
                    path,
                    format!("`xstate.emit` of \"{ty}\" reaches the listeners outside the machine; read as an effect `{ty}`"),
                    "",
                );
                let mut effect = Map::new();
                effect.insert("type".into(), json!(ty));
                if !payload.is_empty() {
                    effect.insert("payload".into(), quoted(Value::Object(payload)));
                }
                json!({ "effect": effect })
            }
            Err(why) => {
                self.diag(
                    Severity::Warning,
                    spath,
                    event,
                    path,
                    format!("built-in action `xstate.emit` cannot be read as data: {why}; it is modelled as an opaque effect `xstate.emit`"),
                    DATA_FIX,
                );
                opaque("xstate.emit")
            }
        }
    }
}

/// The index of the first `choose` among a transition's actions whose
/// choices are written out (XState 4's, a plain object), if it has one.
pub(super) fn choice_at(t: &Value) -> Option<usize> {
    let listed: Vec<&Value> = match t.get("actions")? {
        Value::Array(a) => a.iter().collect(),
        one => vec![one],
    };
    listed.iter().position(|a| {
        a.get("type").and_then(Value::as_str) == Some("xstate.choose")
            && a.get("conds").and_then(Value::as_array).is_some_and(|c| !c.is_empty() && c.iter().all(Value::is_object))
    })
}

/// One candidate of a transition split by its `choose`.
fn candidate(base: &Value, own: Option<&Value>, choice: Option<Value>, actions: Vec<Value>) -> Value {
    let mut t = base.clone();
    if let Some(o) = t.as_object_mut() {
        let guard = match (own, choice) {
            (Some(own), Some(c)) => Some(json!({ "and": [own, c] })),
            (Some(own), None) => Some(own.clone()),
            (None, c) => c,
        };
        if let Some(g) = guard {
            o.insert("guard".into(), g);
        }
        if !actions.is_empty() {
            o.insert("actions".into(), Value::Array(actions));
        }
    }
    t
}

fn opaque(name: &str) -> Value {
    json!({ "effect": { "type": name } })
}

/// An event written out: its type and its other members (the payload, data
/// that idem reads as it is, [`quoted`]), or why it cannot be read.
fn event_of(v: Option<&Value>) -> Result<(String, Map<String, Value>), &'static str> {
    let e = v.and_then(Value::as_object).ok_or("the event is computed by a function")?;
    let ty = e.get("type").and_then(Value::as_str).filter(|t| !t.is_empty()).ok_or("the event has no type")?;
    let payload: Map<String, Value> = e.iter().filter(|(k, _)| k.as_str() != "type").map(|(k, v)| (k.clone(), v.clone())).collect();
    Ok((ty.to_string(), payload))
}

fn raise_of(ty: String, payload: Map<String, Value>) -> Value {
    let mut r = Map::new();
    r.insert("type".into(), Value::String(ty));
    if !payload.is_empty() {
        r.insert("payload".into(), quoted(Value::Object(payload)));
    }
    json!({ "raise": r })
}

/// A value XState gives as data, written as an idem expression that is that
/// value: as it is when it holds no object, else in `{"preserve": ...}`, so
/// that no object in it reads as an operator (`{ "max": 3 }`) or is refused as
/// an unknown one (`{ "step": 2 }`).
pub(super) fn quoted(v: Value) -> Value {
    fn holds_object(v: &Value) -> bool {
        match v {
            Value::Object(_) => true,
            Value::Array(items) => items.iter().any(holds_object),
            _ => false,
        }
    }
    if holds_object(&v) {
        json!({ (crate::expr::PRESERVE): v })
    } else {
        v
    }
}
