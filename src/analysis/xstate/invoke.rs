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
//! completion does not move the new one. Where a completion's transition has a
//! named guard (which must stay the whole of its guard, see [`super::guard`]),
//! a first transition that does nothing takes an earlier invocation's
//! completion instead: applied, it moves nothing. One case is not told apart: when the
//! state was entered by another effect's completion (`x.succeeded`, whose id
//! is not the id in the keys that macrostep emits), any completion of the
//! effect type is taken, as it would be without the guard.
//!
//! Work whose logic is given inline is an effect too, named by the invoke's
//! `id` or else by the id XState gives the invocation
//! (`<state id>:invocation[<i>]` in XState 4, `<i>.<state id>` in XState 5),
//! with a diagnostic: a function (`src: (ctx) => ...`, `fromPromise(...)`,
//! `fromCallback(...)`: lost in JSON), and an invoked machine, whose
//! completion stands for its done event; its own states are not imported. What
//! an effect cannot do is reported and left out: `onSnapshot` (an effect
//! reports only its end) and `autoForward`/`forward` (an effect receives no
//! events).
//!
//! A named delay whose value is code (`after: { backoff: ... }` with `backoff`
//! a function in the implementations) is work of the same kind: an effect
//! `xstate.after.<name>` on entry, the delayed transitions on its completion.

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
            let Some((ty, params)) = self.invoked_type(o, id, i, &p, spath) else {
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
            let site = id.map_or_else(|| if many { format!("{spath}#{i}") } else { spath.to_string() }, str::to_string);
            let payload = o.get("input").or_else(|| o.get("data")).cloned().or(params);
            let completions = [("succeeded", o.get("onDone"), join(&p, "onDone")), ("failed", o.get("onError"), join(&p, "onError"))];
            self.as_effect(&ty, payload, &site, spath, &completions, &mut out);
        }
        out
    }

    /// Work as an effect emitted on entry of the state at `spath` (its
    /// invocation recorded under `site`), and the transitions on its
    /// completion events (`<ty>.succeeded`, `<ty>.failed`), each taken only
    /// for the current invocation (see the module's documentation).
    pub(super) fn as_effect(
        &mut self,
        ty: &str,
        payload: Option<Value>,
        site: &str,
        spath: &str,
        completions: &[(&str, Option<&Value>, String)],
        out: &mut Invoked,
    ) {
        // The field that records which invocation is current (no dots: a `var` path splits at them).
        let field = format!("$invoke:{}", site.replace('.', "/"));
        let mut effect = Map::new();
        effect.insert("type".into(), json!(ty));
        if let Some(payload) = payload {
            effect.insert("payload".into(), super::action::quoted(payload));
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
        for (suffix, t, tp) in completions {
            let Some(t) = t else { continue };
            let event = format!("{ty}.{suffix}");
            self.flags_in = Some(if *suffix == "succeeded" { "result" } else { "error" });
            let ts = self.transitions(t, tp, spath, Some(&event));
            self.flags_in = None;
            let Some(ts) = ts else { continue };
            let ts = match ts {
                Value::Array(a) => a,
                one => vec![one],
            };
            let guarded: Vec<Value> = if ts.iter().any(names_its_guard) {
                // A named guard stays the whole of its transition's guard, where idem resolves the
                // name: an earlier invocation's completion is taken first by a transition that does
                // nothing, so that it moves nothing (it is applied, not ignored).
                let earlier = json!({ "guard": { "!": [current] } });
                std::iter::once(earlier).chain(ts).collect()
            } else {
                ts.into_iter().map(|t| with_guard(t, &current)).collect()
            };
            out.on.push((event, Value::Array(guarded)));
        }
    }

    /// The effect type of an invoke, and the params of XState 4's `src: { type, ... }`;
    /// `None` (with its diagnostic) when `src` is no kind of actor logic.
    /// Logic given inline (a function, lost in JSON, or a machine) is named by
    /// the invoke's `id`, or else by the id XState gives the invocation.
    fn invoked_type(&mut self, o: &Map<String, Value>, id: Option<&str>, index: usize, path: &str, spath: &str) -> Option<(String, Option<Value>)> {
        let sp = join(path, "src");
        let named = |generated: String| match id {
            Some(id) => (id.to_string(), "named by the invoke's id".to_string()),
            None => (generated, "the id XState gives the invocation".to_string()),
        };
        let (ty, message) = match o.get("src") {
            Some(Value::String(s)) if !s.is_empty() => return Some((s.clone(), None)),
            Some(Value::Object(src)) if ["states", "initial", "config", "root", "machine"].iter().any(|k| src.contains_key(*k)) => {
                let machine = src.get("id").and_then(Value::as_str).filter(|m| !m.is_empty());
                let (ty, how) = match (id, machine) {
                    (None, Some(m)) => (m.to_string(), "named by the machine's id".to_string()),
                    _ => named(self.invoke_id(spath, index)),
                };
                let which = machine.map_or_else(String::new, |m| format!(" `{m}`"));
                let message = format!(
                    "an invoked machine{which} has states and receives events of its own; it is modelled as the effect `{ty}` ({how}), whose \
                     completion stands for the machine's done event (onDone) or its error (onError): its states are not imported, and \
                     the events it would receive or send are not modelled"
                );
                (ty, message)
            }
            Some(Value::Object(src)) => match src.get("type").and_then(Value::as_str) {
                Some(t) if !t.is_empty() && !t.starts_with("xstate.") => {
                    let params: Map<String, Value> = src.iter().filter(|(k, _)| k.as_str() != "type").map(|(k, v)| (k.clone(), v.clone())).collect();
                    return Some((t.to_string(), (!params.is_empty()).then_some(Value::Object(params))));
                }
                _ => {
                    let (ty, how) = named(self.invoke_id(spath, index));
                    let message = format!(
                        "actor logic given inline (fromPromise, fromCallback or fromObservable: functions, lost in JSON) cannot be read; \
                         it is modelled as the effect `{ty}` ({how}), whose completion takes onDone/onError"
                    );
                    (ty, message)
                }
            },
            None | Some(Value::Null) => {
                let (ty, how) = named(self.invoke_id(spath, index));
                (ty.clone(), format!("`src` is an inline function (lost in JSON); it is modelled as the effect `{ty}`, {how}"))
            }
            Some(other) => {
                self.diag(Severity::Warning, spath, None, &sp, format!("`src` cannot be {other}; the invoke is left out, with its onDone/onError"), FIX);
                return None;
            }
        };
        self.diag(Severity::Warning, spath, None, &sp, message, FIX);
        Some((ty, None))
    }

    /// The id XState gives the `index`th invocation of the state at `spath`
    /// that has none: `<state id>:invocation[<index>]` in XState 4,
    /// `<index>.<state id>` in XState 5.
    fn invoke_id(&self, spath: &str, index: usize) -> String {
        let state = self.state_id(spath);
        if self.v4 {
            format!("{state}:invocation[{index}]")
        } else {
            format!("{index}.{state}")
        }
    }
}

/// Whether a transition's guard is the name of an implementation (`"isPaid"`,
/// `{ "type": "isPaid", "params": … }`), which cannot be combined with another guard.
fn names_its_guard(t: &Value) -> bool {
    match t.get("guard") {
        Some(Value::String(_)) => true,
        Some(Value::Object(o)) => o.get("type").is_some_and(Value::is_string) && o.keys().all(|k| k == "type" || k == "params"),
        _ => false,
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
