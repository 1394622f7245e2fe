//! `invoke` as effects.
//!
//! An invoked service is work whose completion comes back as an event, which is
//! what an idem effect is. `invoke: { src: "charge", input, onDone, onError }`
//! on a state becomes:
//!
//! - on entry of the state (after its own entry actions, as XState starts its
//!   actors): `{ "assign": { "$invoke:<site>": event.id } }`, then
//!   `{ "effect": { "type": "charge", "payload": <input> } }` (XState 4's
//!   `data` is read as `input`; an input computed by a function is lost in JSON);
//! - `onDone` becomes the state's transitions on `charge.succeeded`, `onError`
//!   on `charge.failed`, the events the outbox raises when the host reports
//!   the effect finished (its result is `event.payload.result`).
//!
//! **Leaving the state makes a later completion harmless: it is ignored.** The
//! effect is not cancelled, since its work may already be under way (a charge
//! the engine cannot recall), and the dispatcher runs it like any effect. Its
//! completion is taken only by a state that is still active: once the state is
//! left no transition accepts it. If the state was entered again meanwhile,
//! its transitions are guarded by the invocation they belong to: the effect's
//! key is `<process>/<event id>:<n>` for the event whose macrostep entered the
//! state, which the assign above records, so an earlier invocation's
//! completion does not move the new one. One case is not told apart: when the
//! state was entered by another effect's completion (`x.succeeded`, whose id
//! is not the id in the keys that macrostep emits), any completion of the
//! effect type is taken, as it would be without the guard.
//!
//! What cannot be an effect is reported: an invoked machine (it receives
//! events and has states of its own), actor logic given inline
//! (`fromPromise`/`fromCallback`/`fromObservable`: functions, lost in JSON; a
//! named one is read as a promise), `onSnapshot` (an effect reports only its
//! end) and `autoForward`/`forward` (an effect receives no events).

use super::{join, Importer};
use crate::analyze::Severity;
use serde_json::{json, Map, Value};

/// What one state's `invoke` adds: entry actions and transitions by event.
#[derive(Default)]
pub(super) struct Invoked {
    pub entry: Vec<Value>,
    pub on: Vec<(String, Value)>,
}

const FIX: &str = "Name the work in setup({ actors }) (XState 5) or `services` (XState 4) so that `src` is a string: \
                   idem runs it as an effect whose completion is `<src>.succeeded` / `<src>.failed`.";

impl Importer {
    pub(super) fn invoke(&mut self, v: &Value, path: &str, spath: &str) -> Invoked {
        let mut out = Invoked::default();
        let list: Vec<(&Value, String)> = match v {
            Value::Array(a) => a.iter().enumerate().map(|(i, x)| (x, format!("{path}[{i}]"))).collect(),
            other => vec![(other, path.to_string())],
        };
        let many = list.len() > 1;
        for (i, (inv, p)) in list.into_iter().enumerate() {
            let Some(o) = inv.as_object() else {
                self.diag(Severity::Warning, spath, None, &p, format!("an invoke must be an object, not {inv}; left out"), "");
                continue;
            };
            let id = o.get("id").and_then(Value::as_str).filter(|s| !s.is_empty());
            let Some((ty, params)) = self.invoked_type(o, id, &p, spath) else {
                for k in ["onDone", "onError"] {
                    if let Some(t) = o.get(k) {
                        self.lost(t);
                    }
                }
                continue;
            };
            for (k, val) in o {
                let kp = join(&p, k);
                match k.as_str() {
                    "src" | "id" | "input" | "data" | "onDone" | "onError" | "systemId" => {}
                    "onSnapshot" => {
                        self.diag(
                            Severity::Warning,
                            spath,
                            None,
                            &kp,
                            "`onSnapshot` follows an invoked machine's or observable's snapshots; an effect reports only its end, so it is left out"
                                .into(),
                            "",
                        );
                        self.lost(val);
                    }
                    "autoForward" | "forward" if val == &Value::Bool(false) => {}
                    "autoForward" | "forward" => self.diag(
                        Severity::Warning,
                        spath,
                        None,
                        &kp,
                        format!("`{k}` sends the state's events to an invoked machine or callback; an effect receives no events, so it is left out"),
                        "Send what the work needs in its input.",
                    ),
                    other => self.diag(Severity::Warning, spath, None, &kp, format!("invoke key `{other}` has no idem equivalent and is left out"), ""),
                }
            }
            // The field that records which invocation is current (no dots: a `var` path splits at them).
            let site = id.map_or_else(|| if many { format!("{spath}#{i}") } else { spath.to_string() }, str::to_string);
            let field = format!("$invoke:{}", site.replace('.', "/"));
            let mut effect = Map::new();
            effect.insert("type".into(), json!(ty));
            match (o.get("input").or_else(|| o.get("data")), params) {
                (Some(input), _) => {
                    effect.insert("payload".into(), input.clone());
                }
                (None, Some(params)) => {
                    effect.insert("payload".into(), params);
                }
                (None, None) => {}
            }
            out.entry.push(json!({ "assign": { field.clone(): { "var": "event.id" } } }));
            out.entry.push(json!({ "effect": effect }));
            // Taken only for the current invocation: its key holds the id of the event that entered the state,
            // unless that was a completion itself (see the module's documentation).
            let entered_by = json!({ "var": format!("context.{field}") });
            let current = json!({ "or": [
                { "in": [{ "cat": ["/", entered_by, ":"] }, { "cat": ["/", { "var": "event.payload.key" }] }] },
                { "==": [{ "substr": [entered_by, -10] }, ":succeeded"] },
                { "==": [{ "substr": [entered_by, -7] }, ":failed"] }
            ] });
            for (k, suffix) in [("onDone", "succeeded"), ("onError", "failed")] {
                let Some(t) = o.get(k) else { continue };
                let event = format!("{ty}.{suffix}");
                let Some(ts) = self.transitions(t, &join(&p, k), spath, Some(&event)) else { continue };
                let ts = match ts {
                    Value::Array(a) => a,
                    one => vec![one],
                };
                let guarded: Vec<Value> = ts.into_iter().map(|t| with_guard(t, &current)).collect();
                out.on.push((event, Value::Array(guarded)));
            }
        }
        out
    }

    /// The effect type of an invoke, and the params of XState 4's `src: { type, ... }`;
    /// `None` (with its diagnostic) when it cannot be an effect.
    fn invoked_type(&mut self, o: &Map<String, Value>, id: Option<&str>, path: &str, spath: &str) -> Option<(String, Option<Value>)> {
        let sp = join(path, "src");
        match o.get("src") {
            Some(Value::String(s)) if !s.is_empty() => Some((s.clone(), None)),
            Some(Value::Object(src)) if ["states", "initial", "config", "root", "machine"].iter().any(|k| src.contains_key(*k)) => {
                self.diag(
                    Severity::Warning,
                    spath,
                    None,
                    &sp,
                    "an invoked machine has states and receives events of its own; it cannot be an effect and is left out, with its onDone/onError"
                        .into(),
                    "Import the child machine as a process of its own, and start it with an effect.",
                );
                None
            }
            Some(Value::Object(src)) => match src.get("type").and_then(Value::as_str) {
                Some(t) if !t.is_empty() && !t.starts_with("xstate.") => {
                    let params: Map<String, Value> = src.iter().filter(|(k, _)| k.as_str() != "type").map(|(k, v)| (k.clone(), v.clone())).collect();
                    Some((t.to_string(), (!params.is_empty()).then_some(Value::Object(params))))
                }
                _ => {
                    self.diag(
                        Severity::Warning,
                        spath,
                        None,
                        &sp,
                        "actor logic given inline (fromPromise, fromCallback or fromObservable: functions, lost in JSON) cannot be read; \
                         left out, with its onDone/onError"
                            .into(),
                        FIX,
                    );
                    None
                }
            },
            None | Some(Value::Null) => match id {
                // An inline function `src` (lost in JSON) with an id: the id names the work.
                Some(id) => {
                    self.diag(
                        Severity::Warning,
                        spath,
                        None,
                        &sp,
                        format!("`src` is an inline function (lost in JSON); it is modelled as the effect `{id}`, named by the invoke's id"),
                        FIX,
                    );
                    Some((id.to_string(), None))
                }
                None => {
                    self.diag(
                        Severity::Warning,
                        spath,
                        None,
                        &sp,
                        "`src` is an inline function (lost in JSON) and the invoke has no id to name it; left out, with its onDone/onError".into(),
                        FIX,
                    );
                    None
                }
            },
            Some(other) => {
                self.diag(Severity::Warning, spath, None, &sp, format!("`src` cannot be {other}; the invoke is left out"), FIX);
                None
            }
        }
    }
}

/// A transition taken only when `guard` holds too.
fn with_guard(t: Value, guard: &Value) -> Value {
    let mut t = match t {
        Value::String(target) => json!({ "target": target }),
        Value::Object(o) => Value::Object(o),
        other => other,
    };
    if let Some(o) = t.as_object_mut() {
        let g = match o.remove("guard") {
            Some(own) => json!({ "and": [guard.clone(), own] }),
            None => guard.clone(),
        };
        o.insert("guard".into(), g);
    }
    t
}
