//! Import the serializable JSON form of an XState v5 machine config, so that
//! XState users can lint machines they already have.
//!
//! The input is what `JSON.stringify(machine.config)` produces: `id`, `initial`,
//! `context`, `states`, `on`, `always`, `after`, `entry`/`exit`, `onDone`,
//! `type: "final" | "parallel" | "history"` (with `history: "shallow" | "deep"`
//! and a default `target`), transitions with `target` (one, or several into
//! parallel regions), `guard`, `actions` and `reenter`. Every region of a
//! parallel state is kept, in the order it is written. Guards and
//! actions are code in XState; in the JSON form only their names survive
//! (`"isPaid"` or `{ "type": "isPaid", "params": … }`), and inline functions
//! disappear (`null` in an action list, or the key dropped altogether).
//!
//! Nothing that cannot be represented is dropped silently: each such place
//! becomes an `unrepresentable` diagnostic (a [`Finding`]) naming its path in
//! the XState config, and the topology is still imported and analysed:
//!
//! - a named action or guard stays a name (`"notify"`, `{ "type": "notify", "params": … }`),
//!   which the definition's `implementations` must implement (XState 5's `setup`
//!   shape, as data; [`Imported::needs`] lists the names). Until the user gives them,
//!   the import stands in for each: an action is an opaque effect of its type
//!   (`{ "effect": { "type": "notify" } }`), so a repeat that runs it again is
//!   reported as the action running twice; a guard is a flag the event carries
//!   (`event.payload.$guard.<name>`), so the analysis explores both outcomes.
//!   A named guard inside `and`/`or`/`not`, combined with `in` or a `choose`'s
//!   condition is that flag itself: an implementation is named only at the top
//!   of a transition's guard (on the completion of invoked work too, the stand-in
//!   flag then read from what the work reported);
//! - an inline guard (a function: `null` when written out, XState 4's
//!   `{ "type": "xstate.guard" }`) becomes a flag of its own, named by the
//!   function's name or its site, so two inline guards stay two flags; so does
//!   a guard dropped from its transition with its key, which shows when the
//!   transition has candidates after it (it would leave them unreachable) or is
//!   eventless without a target (it would be taken forever);
//! - `invoke` becomes an effect emitted on entry of its state, `onDone`/`onError`
//!   transitions on its completion events (see [`invoke`] for what leaving the
//!   state does to a later completion, and for work given inline, named by its
//!   id); XState's names of those events (`done.invoke.<id>`, ...) are read as
//!   the effect's (see [`events`]);
//! - a named delay becomes milliseconds when the config's `delays` gives a
//!   number for it (XState keeps delays in the implementations; add them to the
//!   config as `"delays": { "name": ms }`), and an ISO-8601 duration (`PT30S`)
//!   is read; a delay that is code becomes work the host waits, as an effect
//!   `xstate.after.<name>` whose completion takes the delayed transitions;
//! - a wildcard (`"*"`, `"mouse.*"`) becomes each event the machine names that it
//!   matches (see [`events`]);
//! - `output` (XState 5) or `data` (XState 4) of a final state becomes the
//!   state's `output` when it is a literal (quoted with `preserve` when it holds
//!   an object, so that idem reads it as the data it is): its parent's done event carries it
//!   as `event.payload.output` (XState: `event.output`); a function is lost in
//!   JSON, and a final state of the machine has no done event to carry it.
//!
//! XState 4 idioms are rewritten, each with an `info` diagnostic: `cond` as
//! `guard`, `internal: false` as `reenter: true`, `key` as the machine id, a
//! machine-level `on` targeting a child by its bare name (`.child`),
//! `on: { "": … }` as `always`, `onEntry`/`onExit` as `entry`/`exit`,
//! `parallel: true` and `history` without `type` as state types (`history: true`
//! is shallow), `activities` as effects started on entry, and a forbidden
//! transition (`EVENT: undefined`, lost in JSON; accepted as `null`) as a
//! targetless transition without actions, which takes the event so an
//! ancestor's does not. A config written for XState 4 (see [`outline`]) has
//! each transition into its own state, or a state inside it, re-enter that
//! state, as XState 4's external transitions do. A compound state without
//! `initial` enters its first child.
//!
//! Last, the definition is loaded in the engine, and what it still refuses (a
//! target naming no state, two states with one id, ...) is taken out one part at
//! a time with a warning (see [`repair`]): a machine is imported whole but for
//! the parts named.
//!
//! [`Imported::kept`] counts the transitions of the source and those imported.
//!
//! XState 5's built-ins are functions, lost by a plain `JSON.stringify` (an
//! action becomes `null`, a guard disappears); written out with their own
//! members (a replacer that keeps a function's members under its name, as
//! `tests/xstate/make.mjs` does), they are read as data, and so are XState 4's,
//! which are plain objects:
//!
//! - `raise`, `send`/`sendTo`, `assign` of literal values, `emit`, and XState 4's
//!   `choose` on a transition as one candidate per choice (see [`action`]);
//! - `stateIn("#m.a.b")` (or a state value), `{ "type": "xstate.stateIn", "stateValue": ... }`
//!   or `{ "stateValue": ... }`, and XState 4's `in: "#m.a.b"` on a transition,
//!   become `{ "in_state": "#m.a.b" }` (one per leaf of a state value, joined by `and`);
//! - `and`, `or` and `not` become JSONLogic `and`, `or` and `!` over their
//!   guards, each of which keeps its own flag (see [`guard`]).
//!
//! Idem's own data actions (`{ "assign": … }`, `{ "effect": … }`, `{ "respond": … }`, `{ "raise": … }`)
//! and JSONLogic guards (an object without `type`) are accepted as they are, so a
//! config can be ported to idem one guard or action at a time.

use crate::analyze::{Finding, Severity};
use crate::error::{Code, Error, Result};
use serde_json::{json, Map, Value};

pub mod action;
mod delay;
pub mod events;
pub mod guard;
pub mod invoke;
pub mod outline;
pub mod repair;

/// An imported machine: an idem definition and what could not be represented.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Imported {
    pub definition: Value,
    pub diagnostics: Vec<Finding>,
    /// How much of the source survived.
    pub kept: Kept,
    /// The named guards and actions the definition uses, each with a stand-in
    /// in its `implementations` that the user replaces with data.
    pub needs: Needs,
}

/// Transitions in the source config (every entry of `on`, `always`, `after`,
/// `onDone`, an invoke's `onDone`/`onError`, forbidden ones included) and how
/// many of them the definition has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Kept {
    pub states: usize,
    pub transitions: usize,
    pub transitions_kept: usize,
}

/// Import from JSON text.
pub fn import_json(text: &str) -> Result<Imported> {
    let v = crate::json::parse(text, Code::InvalidJson, "xstate config")?;
    import(&v)
}

/// Import an XState v5 config (its JSON form) as an idem definition.
///
/// ```
/// use idem::xstate;
/// use serde_json::json;
/// let out = xstate::import(&json!({
///   "id": "door", "initial": "closed",
///   "states": { "closed": { "on": { "OPEN": { "target": "open", "guard": "isUnlocked" } } }, "open": {} }
/// })).unwrap();
/// assert_eq!(out.diagnostics[0].code, "unrepresentable");
/// assert!(idem::Machine::from_value(out.definition).is_ok());
/// ```
pub fn import(config: &Value) -> Result<Imported> {
    let obj = config.as_object().ok_or_else(|| Error::at(Code::InvalidDefinition, "", "an XState config must be an object"))?;
    let mut imp = Importer { outline: outline::Outline::of(config), ..Importer::default() };
    imp.id = match (obj.get("id"), obj.get("key")) {
        (Some(Value::String(s)), _) if !s.is_empty() => s.clone(),
        (_, Some(Value::String(k))) if !k.is_empty() => {
            imp.diag(Severity::Info, "", None, "key", format!("`key` is XState v4's machine id; read as `id: \"{k}\"`"), "");
            k.clone()
        }
        _ => "machine".to_string(),
    };
    if let Some(Value::Object(d)) = obj.get("delays") {
        imp.delays = d.clone();
    }
    imp.version();
    if let Some(Value::Object(children)) = obj.get("states") {
        imp.root_children = children.keys().cloned().collect();
    }
    let mut def = imp.state(config, "", "", true);
    let stand_ins = std::mem::take(&mut imp.stand_ins);
    let sorted = |m: &Map<String, Value>| {
        let mut names: Vec<String> = m.keys().cloned().collect();
        names.sort();
        names
    };
    let needs = Needs { guards: sorted(&stand_ins.guards), actions: sorted(&stand_ins.actions) };
    if let Some(o) = def.as_object_mut() {
        o.insert("id".into(), Value::String(imp.id.clone()));
        let mut imps = Map::new();
        for (key, section) in [("guards", stand_ins.guards), ("actions", stand_ins.actions)] {
            if !section.is_empty() {
                imps.insert(key.into(), Value::Object(section));
            }
        }
        if !imps.is_empty() {
            o.insert("implementations".into(), Value::Object(imps));
        }
    }
    imp.settle(&mut def);
    Ok(Imported { definition: def, diagnostics: imp.diagnostics, kept: imp.kept, needs })
}

/// What the import stands in for each named guard (its flag) and action (an
/// opaque effect), by name: the definition's `implementations` until the user
/// gives them as data.
#[derive(Default)]
struct StandIns {
    guards: Map<String, Value>,
    actions: Map<String, Value>,
}

/// The names of the implementations a config needs, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Needs {
    pub guards: Vec<String>,
    pub actions: Vec<String>,
}

#[derive(Default)]
struct Importer {
    id: String,
    diagnostics: Vec<Finding>,
    /// The config's `delays`: named delays in milliseconds.
    delays: Map<String, Value>,
    /// The machine's children, which a v4 machine-level `on` names bare.
    root_children: Vec<String>,
    kept: Kept,
    outline: outline::Outline,
    /// Read as an XState 4 config (see [`outline`]).
    v4: bool,
    /// The stand-ins of the named guards and actions, and so the names the config needs.
    stand_ins: StandIns,
    /// Where the guards being read find their flags: the event's payload, or
    /// for the completion of invoked work, what the work reported in it
    /// (`result` or `error`), since the outbox writes that event's payload.
    flags_in: Option<&'static str>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Keys XState allows that have no meaning for the analysis (types, and XState 4's action order).
const TYPE_ONLY_KEYS: &[&str] = &["types", "schema", "schemas", "tsTypes", "predictableActionArguments", "preserveActionOrder"];

impl Importer {
    /// Which XState the config is read as, said once at the machine when it
    /// matters: XState 4 takes a transition into its own state as external.
    fn version(&mut self) {
        let (v4, v5) = (self.outline.v4.join("`, `"), self.outline.v5.join("`, `"));
        self.v4 = self.outline.is_v4();
        if self.v4 {
            let message = format!(
                "read as an XState 4 config (it uses `{v4}`): a transition whose target is its own state or a state inside it, \
                 without `internal: true` or a target starting with \".\", leaves the state and enters it again, as XState 4's \
                 external transitions do (`reenter: true`)"
            );
            self.diag(Severity::Info, "", None, "", message, "");
        } else if !self.outline.v4.is_empty() {
            let message = format!(
                "the config uses idioms of XState 4 (`{v4}`) and of XState 5 (`{v5}`); read as XState 5: a transition into its own \
                 state re-enters it only with `reenter: true`"
            );
            self.diag(Severity::Info, "", None, "", message, "");
        }
    }

    /// The id XState knows the state at `spath` by.
    fn state_id(&self, spath: &str) -> String {
        self.outline.state_id(&self.id, spath)
    }

    fn diag(&mut self, severity: Severity, state: &str, event: Option<&str>, path: &str, message: String, fix: &str) {
        self.diagnostics.push(Finding {
            code: "unrepresentable".into(),
            severity,
            state: state.to_string(),
            event: event.map(str::to_string),
            transitions: Vec::new(),
            site: Some(path.to_string()),
            message,
            fix: fix.to_string(),
            retention_ms: None,
            cycle: Vec::new(),
            witness: None,
        });
    }

    /// One state node. `xpath`: its JSON path in the XState config;
    /// `spath`: its dotted state path.
    fn state(&mut self, v: &Value, xpath: &str, spath: &str, root: bool) -> Value {
        let mut out = Map::new();
        let Some(o) = v.as_object() else {
            self.diag(Severity::Warning, spath, None, xpath, "a state must be an object; imported as an empty state".into(), "");
            return Value::Object(out);
        };
        if !root {
            self.kept.states += 1;
        }
        let declared = o.get("type").and_then(Value::as_str);
        // What other keys add to `entry`, `on` and `always`, merged after the loop.
        let mut entry_extra = Vec::new();
        let mut on_extra: Vec<(String, Value)> = Vec::new();
        let mut always_extra = Vec::new();
        for (k, val) in o {
            let p = join(xpath, k);
            match k.as_str() {
                "id" | "key" | "delays" if root => {}
                // XState 4 writes a state's own key in its config: nothing to import.
                "key" => {}
                "id" => {
                    if let Value::String(s) = val {
                        out.insert("id".into(), Value::String(s.clone()));
                    }
                }
                "version" if root => {
                    if val.is_string() || val.is_number() {
                        out.insert("version".into(), val.clone());
                    }
                }
                "context" if root => {
                    if val.is_object() {
                        out.insert("context".into(), val.clone());
                    } else {
                        self.diag(
                            Severity::Warning,
                            spath,
                            None,
                            &p,
                            "context is not a plain object (a function?); the analysis starts from an empty context".into(),
                            "Give the initial context as a JSON object.",
                        );
                    }
                }
                "initial" => match val {
                    Value::String(s) => {
                        out.insert("initial".into(), Value::String(s.clone()));
                    }
                    Value::Object(t) => {
                        if let Some(child) = self.initial_transition(t, &p, spath) {
                            out.insert("initial".into(), Value::String(child));
                        }
                    }
                    _ => self.diag(Severity::Warning, spath, None, &p, "initial must name a child state".into(), ""),
                },
                "type" => match val.as_str() {
                    Some(t @ ("final" | "parallel" | "history")) => {
                        out.insert("type".into(), json!(t));
                    }
                    Some("atomic") | Some("compound") => {}
                    _ => self.diag(Severity::Warning, spath, None, &p, format!("unknown state type {val}"), ""),
                },
                "parallel" => {
                    if val == &Value::Bool(true) && declared.is_none() {
                        out.insert("type".into(), json!("parallel"));
                        self.diag(Severity::Info, spath, None, &p, "`parallel: true` is XState v4 syntax; read as `type: \"parallel\"`".into(), "");
                    }
                }
                "history" => match val {
                    Value::String(mode) if mode == "shallow" || mode == "deep" => {
                        out.insert("history".into(), json!(mode));
                        if declared.is_none() {
                            out.insert("type".into(), json!("history"));
                            self.diag(Severity::Info, spath, None, &p, "XState v4 reads `history` without `type` as a history state; so does the import".into(), "");
                        }
                    }
                    Value::Bool(true) if declared.is_none() || declared == Some("history") => {
                        out.insert("type".into(), json!("history"));
                        out.insert("history".into(), json!("shallow"));
                        self.diag(Severity::Info, spath, None, &p, "`history: true` is XState v4 syntax; read as a shallow history state".into(), "");
                    }
                    Value::Bool(false) => {}
                    _ => self.diag(
                        Severity::Warning,
                        spath,
                        None,
                        &p,
                        format!("history mode {val} is neither \"shallow\" nor \"deep\"; read as shallow"),
                        "",
                    ),
                },
                // A history state's default: where it goes before anything was recorded.
                "target" => {
                    if let Some(t) = self.target(val, &p, spath, None) {
                        out.insert("target".into(), t);
                    }
                }
                "onDone" if !root => {
                    if let Some(t) = self.transitions(val, &p, spath, None) {
                        out.insert("onDone".into(), t);
                    }
                }
                "states" => {
                    let Some(children) = val.as_object() else { continue };
                    // In the order they are written: the regions of a parallel state run in it.
                    let mut states = Map::new();
                    for (ck, child) in children {
                        let cx = join(&p, ck);
                        let cs = join(spath, ck);
                        states.insert(ck.clone(), self.state(child, &cx, &cs, false));
                    }
                    out.insert("states".into(), Value::Object(states));
                }
                "on" => {
                    let listed;
                    let on = match val {
                        Value::Object(on) => on,
                        Value::Array(list) => {
                            listed = self.on_list(list, &p, spath);
                            &listed
                        }
                        other => {
                            let message = format!("`on` must map events to transitions, not {other}; left out");
                            self.diag(Severity::Warning, spath, None, &p, message, "");
                            continue;
                        }
                    };
                    let mut map = Map::new();
                    let mut wildcards = Vec::new();
                    for (ev, ts) in on {
                        let ep = join(&p, ev);
                        if ev.is_empty() {
                            self.diag(Severity::Info, spath, None, &ep, "`on: { \"\": … }` is XState v4's eventless transition; read as `always`".into(), "");
                            if let Some(t) = self.always(ts, &ep, spath) {
                                always_extra.push(t);
                            }
                            continue;
                        }
                        if outline::is_wildcard(ev) {
                            wildcards.push((ev, ts, ep));
                            continue;
                        }
                        let (event, note) = self.completion_event(ev);
                        if let Some(note) = note {
                            self.diag(Severity::Info, spath, Some(ev), &ep, note, "");
                        }
                        if let Some(t) = self.transitions(ts, &ep, spath, Some(ev)) {
                            merge(&mut map, &event, t);
                        }
                    }
                    // After the events named, as XState tries a wildcard after them.
                    for (ev, ts, ep) in wildcards {
                        self.wildcard(&mut map, ev, ts, &ep, spath);
                    }
                    out.insert("on".into(), Value::Object(map));
                }
                "always" => {
                    if let Some(t) = self.always(val, &p, spath) {
                        out.insert("always".into(), t);
                    }
                }
                "after" => {
                    let mut by_effect = invoke::Invoked::default();
                    let map = self.after(val, &p, spath, &mut by_effect);
                    out.insert("after".into(), Value::Object(map));
                    entry_extra.extend(by_effect.entry);
                    on_extra.extend(by_effect.on);
                }
                "invoke" => {
                    let inv = self.invoke(val, &p, spath);
                    entry_extra.extend(inv.entry);
                    on_extra.extend(inv.on);
                }
                "output" | "data" if declared == Some("final") && !root => {
                    if let Some(output) = self.output(k, val, &p, spath) {
                        out.insert("output".into(), output);
                    }
                }
                "entry" | "exit" => {
                    let actions = self.actions(val, &p, spath, None);
                    extend(&mut out, k, actions);
                }
                "onEntry" | "onExit" => {
                    let key = if k == "onEntry" { "entry" } else { "exit" };
                    self.diag(Severity::Info, spath, None, &p, format!("`{k}` is XState v4's early spelling of `{key}`; read as `{key}`"), "");
                    let actions = self.actions(val, &p, spath, None);
                    extend(&mut out, key, actions);
                }
                "activities" => {
                    let started = self.activities(val, &p, spath);
                    entry_extra.extend(started);
                }
                "strict" if root => {
                    let message = "`strict` makes XState 4 throw on an event the machine does not accept; idem ignores such an event \
                                   (its outcome's status is `ignored`); left out";
                    self.diag(Severity::Info, spath, None, &p, message.into(), "");
                }
                "description" | "meta" | "tags" => {
                    out.insert(k.clone(), val.clone());
                }
                k if TYPE_ONLY_KEYS.contains(&k) => {
                    let why = if k.starts_with("predictable") || k.starts_with("preserve") {
                        "asks XState 4 to run actions in the order they are written, as idem always does"
                    } else {
                        "only matters to TypeScript"
                    };
                    self.diag(Severity::Info, spath, None, &p, format!("`{k}` {why}; left out"), "");
                }
                other => {
                    if other == "onDone" {
                        self.lost(val);
                    }
                    let what = match other {
                        "onDone" => "`onDone` of the machine itself (its done event ends the process) has no idem equivalent",
                        "output" if root => "the machine's `output` (its result once it is done) has no idem equivalent: a process that ends keeps its context",
                        "output" => "`output` belongs on a final state",
                        _ => "this key has no idem equivalent",
                    };
                    self.diag(
                        Severity::Warning,
                        spath,
                        None,
                        &p,
                        format!("{what}; `{other}` is left out"),
                        "",
                    );
                }
            }
        }
        if !entry_extra.is_empty() {
            let entry = out.entry("entry").or_insert_with(|| json!([]));
            if let Value::Array(a) = entry {
                a.extend(entry_extra);
            }
        }
        for t in always_extra {
            merge(&mut out, "always", t);
        }
        let has_region = out.get("states").and_then(Value::as_object).is_some_and(|c| c.values().any(|s| s["type"] != "history"));
        if out.get("type") == Some(&json!("parallel")) && !has_region {
            out.shift_remove("type");
            self.diag(Severity::Info, spath, None, xpath, "a parallel state with no region is a leaf; read as an atomic state".into(), "");
        }
        self.settle_initial(&mut out, xpath, spath);
        if !has_region && matches!(out.get("type").and_then(Value::as_str), None | Some("final")) {
            if let Some(done) = out.shift_remove("onDone") {
                self.unkeep(&done);
                let message = "`onDone` of a state without child states is never taken (no done event is raised for it); left out";
                self.diag(Severity::Warning, spath, None, &join(xpath, "onDone"), message.into(), "");
            }
        }
        if !on_extra.is_empty() {
            let on = out.entry("on").or_insert_with(|| json!({}));
            if let Value::Object(on) = on {
                for (ev, t) in on_extra {
                    merge(on, &ev, t);
                }
            }
        }
        Value::Object(out)
    }

    /// `after`: by delay (milliseconds, ISO-8601, or a name the config's
    /// `delays` gives), or XState 4's list of `{ delay, target, … }`. A
    /// named delay whose value is code becomes work the host does, added to
    /// `by_effect`: an effect `xstate.after.<name>` on entry, the delayed
    /// transitions on its completion (see [`invoke`]).
    fn after(&mut self, v: &Value, path: &str, spath: &str, by_effect: &mut invoke::Invoked) -> Map<String, Value> {
        let entries: Vec<(Value, &Value, String, Option<Value>)> = match v {
            Value::Object(after) => after.iter().map(|(d, ts)| (json!(d), ts, join(path, d), None)).collect(),
            Value::Array(list) => list
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let mut t = t.clone();
                    let delay = t.as_object_mut().and_then(|o| o.remove("delay")).unwrap_or(Value::Null);
                    (delay, &list[i], format!("{path}[{i}]"), Some(t))
                })
                .collect(),
            _ => Vec::new(),
        };
        let mut map = Map::new();
        for (delay, ts, dp, rest) in entries {
            let ms = match delay::resolve(&delay, &self.delays) {
                delay::Delay::Millis(ms) => ms,
                delay::Delay::Resolved(ms, how) => {
                    self.diag(Severity::Info, spath, None, &dp, format!("delay {delay} is {ms} ms, read from {how}"), "");
                    ms
                }
                delay::Delay::Named(why) => {
                    let name = delay.as_str().unwrap_or_default();
                    let ty = format!("xstate.after.{name}");
                    let message = format!(
                        "{why}; the delayed transition is kept on the completion of an effect `{ty}` emitted on entry: the host waits \
                         the delay (its `delays.{name}`) and reports the effect done, as for an invoked service, and a completion \
                         after the state is left is ignored"
                    );
                    let fix = "Give the delay in milliseconds or in the config's `delays` map to have idem's own timer run it.";
                    self.diag(Severity::Warning, spath, None, &dp, message, fix);
                    let ts = rest.as_ref().unwrap_or(ts);
                    let site = format!("{spath}/after/{name}");
                    self.as_effect(&ty, None, &site, spath, &[("succeeded", Some(ts), dp.clone())], by_effect);
                    continue;
                }
                delay::Delay::Unknown(why) => {
                    self.lost(ts);
                    self.diag(
                        Severity::Warning,
                        spath,
                        None,
                        &dp,
                        format!("{why}; this delayed transition is left out"),
                        "Give the delay in milliseconds, as an ISO-8601 duration, or in the config's `delays` map.",
                    );
                    continue;
                }
            };
            let ts = rest.as_ref().unwrap_or(ts);
            if let Some(t) = self.transitions(ts, &dp, spath, None) {
                merge(&mut map, &ms.to_string(), t);
            }
        }
        map
    }

    /// A final state's `output` (XState 5) or `data` (XState 4): its done
    /// data, carried by the parent's done event as `event.payload.output`.
    fn output(&mut self, k: &str, val: &Value, path: &str, spath: &str) -> Option<Value> {
        if !spath.contains('.') {
            let message = format!("`{k}` of a final state of the machine is carried by no done event (the process ends); left out");
            self.diag(Severity::Info, spath, None, path, message, "");
            return None;
        }
        if k == "data" {
            let message = "`data` is XState v4's done data; read as `output`, which the parent's onDone reads as `event.payload.output` \
                           (XState 4: `event.data`); a value computed by a function is lost in JSON before the import sees it";
            self.diag(Severity::Info, spath, None, path, message.to_string(), "");
        }
        Some(action::quoted(val.clone()))
    }

    /// XState's initial transition written as an object (`initial: { target }`,
    /// as XState 5's machine definition writes it): the child it enters.
    fn initial_transition(&mut self, t: &Map<String, Value>, path: &str, spath: &str) -> Option<String> {
        let target = match t.get("target") {
            Some(Value::String(s)) => Some(s.as_str()),
            Some(Value::Array(a)) if a.len() == 1 => a[0].as_str(),
            Some(Value::Array(a)) if a.is_empty() => return None,
            _ => None,
        };
        let Some(target) = target else {
            self.diag(Severity::Warning, spath, None, path, "an initial transition must name one child state; left out".into(), "");
            return None;
        };
        // `#machine.path.child`, `.child` or `child`: the child's key is the last segment.
        let child = target.rsplit('.').next().unwrap_or(target).trim_start_matches('#').to_string();
        if t.get("actions").is_some_and(|a| a.as_array().is_none_or(|a| !a.is_empty())) {
            let message = "actions of an initial transition are not imported (idem's initial transition has none); left out";
            self.diag(Severity::Warning, spath, None, &join(path, "actions"), message.into(), "Run them as entry actions of the child.");
        }
        self.diag(Severity::Info, spath, None, path, format!("initial transition to \"{target}\" read as `initial: \"{child}\"`"), "");
        Some(child)
    }

    /// A compound state's `initial`: none on a parallel state, one on a state
    /// with children (XState 4 enters none of them when it is missing, with a
    /// warning; XState 5 refuses the machine).
    fn settle_initial(&mut self, out: &mut Map<String, Value>, xpath: &str, spath: &str) {
        let parallel = out.get("type") == Some(&json!("parallel"));
        if parallel && out.shift_remove("initial").is_some() {
            let message = "a parallel state enters every region, so its `initial` has no meaning (XState ignores it); left out";
            self.diag(Severity::Info, spath, None, &join(xpath, "initial"), message.into(), "");
        }
        if parallel || out.get("type") == Some(&json!("history")) {
            return;
        }
        let children = out.get("states").and_then(Value::as_object);
        let first = children.and_then(|c| c.iter().find(|(_, c)| c["type"] != "history")).map(|(k, _)| k.clone());
        let (Some(children), Some(first)) = (children, first) else {
            if out.shift_remove("initial").is_some() {
                let message = "`initial` of a state without child states has no meaning; left out";
                self.diag(Severity::Info, spath, None, &join(xpath, "initial"), message.into(), "");
            }
            return;
        };
        let named = out.get("initial").and_then(Value::as_str);
        let why = match named {
            None => "a state with child states has no `initial`: XState 4 enters none of them (with a warning) and XState 5 refuses the machine"
                .to_string(),
            Some(n) if !children.contains_key(n) => format!("`initial` \"{n}\" is not a child state"),
            // XState 5 enters a history state named as initial, its default target while
            // nothing is recorded; without one it recurses without end.
            Some(n) if children[n]["type"] == "history" && !has_target(&children[n]) => {
                format!("`initial` \"{n}\" is a history state without a default target, which XState 5 cannot enter (it recurses without end)")
            }
            Some(_) => return,
        };
        let message = format!("{why}; read as its first child state, \"{first}\"");
        self.diag(Severity::Warning, spath, None, &join(xpath, "initial"), message, "Name the child state to enter in `initial`.");
        out.insert("initial".into(), Value::String(first));
    }

    /// Count transitions of the source that are left out after all.
    fn unkeep(&mut self, v: &Value) {
        let n = match v {
            Value::Array(a) => a.len(),
            _ => 1,
        };
        self.kept.transitions_kept = self.kept.transitions_kept.saturating_sub(n);
    }

    /// Count transitions of the source that are left out.
    fn lost(&mut self, v: &Value) {
        self.kept.transitions += match v {
            Value::Array(a) => a.len(),
            _ => 1,
        };
    }

    /// A target of the machine's own transitions that XState v4 resolves
    /// among the machine's children: no `#`/`.` prefix, first segment a child.
    fn is_bare_child(&self, target: &str) -> bool {
        !target.starts_with(['#', '.']) && self.root_children.iter().any(|c| target.split('.').next() == Some(c.as_str()))
    }

    fn transitions(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        match v {
            Value::Array(items) => {
                let mut out = Vec::new();
                for (i, t) in items.iter().enumerate() {
                    let tp = format!("{path}[{i}]");
                    let Some(mut imported) = self.transition(t, &tp, spath, event) else { continue };
                    // An object without a guard before the last candidate would make the rest unreachable.
                    let unguarded = t.as_object().is_some_and(|o| !["guard", "cond", "in"].iter().any(|k| o.contains_key(*k)));
                    if unguarded && i + 1 < items.len() {
                        let why = "this transition has no guard, yet candidates follow it, which it would leave unreachable";
                        self.lost_guard(&mut imported, &tp, spath, event, why);
                    }
                    // A transition split by its `choose` is several candidates.
                    match imported {
                        Value::Array(split) => out.extend(split),
                        one => out.push(one),
                    }
                }
                Some(Value::Array(out))
            }
            other => self.transition(other, path, spath, event),
        }
    }

    /// Eventless transitions. One without target and guard would be taken
    /// again and again: its guard was lost in JSON (see [`Importer::lost_guard`]).
    fn always(&mut self, v: &Value, path: &str, spath: &str) -> Option<Value> {
        let mut ts = self.transitions(v, path, spath, None)?;
        let (last, lp) = match &mut ts {
            Value::Array(a) => {
                let lp = format!("{path}[{}]", a.len().saturating_sub(1));
                (a.last_mut(), lp)
            }
            one => (Some(one), path.to_string()),
        };
        if let Some(t) = last {
            let endless = t.as_object().is_some_and(|o| !o.contains_key("guard") && !o.contains_key("target"));
            if endless {
                self.lost_guard(t, &lp, spath, None, "this eventless transition has no target and no guard, so it would be taken forever");
            }
        }
        Some(ts)
    }

    /// A target: a state name as XState writes it (a sibling key, `.child`,
    /// `#id`), or several, one per parallel region.
    fn target(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        match v {
            Value::String(s) if spath.is_empty() && self.is_bare_child(s) => {
                self.diag(
                    Severity::Info,
                    spath,
                    event,
                    path,
                    format!("the machine's own transition names its child \"{s}\" bare (XState v4); read as \".{s}\""),
                    "",
                );
                Some(Value::String(format!(".{s}")))
            }
            Value::String(s) => Some(Value::String(s.clone())),
            Value::Array(a) if a.is_empty() => None,
            Value::Array(a) if a.iter().all(Value::is_string) => Some(if a.len() == 1 { a[0].clone() } else { v.clone() }),
            other => {
                self.diag(Severity::Warning, spath, event, path, format!("a target must name a state, not {other}; left out"), "");
                None
            }
        }
    }

    fn transition(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        self.kept.transitions += 1;
        // A `choose` among the actions splits the transition (see [`action`]): the rest is imported without them.
        let choice = action::choice_at(v);
        let base = match (choice, v) {
            (Some(_), Value::Object(o)) => Value::Object(o.iter().filter(|(k, _)| k.as_str() != "actions").map(|(k, x)| (k.clone(), x.clone())).collect()),
            _ => v.clone(),
        };
        let t = self.transition_inner(&base, path, spath, event).map(|t| self.external_v4(t, v, path, spath, event));
        if let Some(t) = &t {
            self.across_regions_v4(t, path, spath, event);
        }
        if t.is_some() {
            self.kept.transitions_kept += 1;
        }
        match (t, choice) {
            (Some(t), Some(at)) => Some(self.choices(t, v, at, path, spath, event)),
            (t, _) => t,
        }
    }

    /// XState 4 takes a transition whose targets are in several regions from
    /// inside one of them by leaving only the source's side; idem, as XState 5,
    /// leaves the parallel state that holds all the targets and enters it
    /// again, so its other regions start over. Said, not rewritten.
    fn across_regions_v4(&mut self, t: &Value, path: &str, spath: &str, event: Option<&str>) {
        let Some(Value::Array(targets)) = t.get("target") else { return };
        let resolved: Vec<String> = targets.iter().filter_map(Value::as_str).filter_map(|x| self.outline.resolve(&self.id, spath, x)).collect();
        if !self.v4 || resolved.len() < 2 {
            return;
        }
        // The deepest state that holds every target.
        let mut common: Vec<&str> = resolved[0].split('.').collect();
        for r in &resolved[1..] {
            let n = common.iter().zip(r.split('.')).take_while(|(a, b)| *a == b).count();
            common.truncate(n);
        }
        let holder = common.join(".");
        if holder == spath || !outline::is_within(spath, &holder) {
            return;
        }
        let whose = if holder.is_empty() { "the machine".to_string() } else { format!("\"{holder}\"") };
        let message = format!(
            "this transition's targets are in several regions of {whose}: XState 4 leaves only \"{spath}\"'s side and keeps the \
             other regions where they are; idem, as XState 5, leaves {whose} and enters it again, so its other regions start over"
        );
        self.diag(Severity::Warning, spath, event, path, message, "Send an event that each region takes on its own.");
    }

    /// XState 4's external transition into its own state (see [`outline`]):
    /// `t` imported from `source`, re-entering its state when XState 4 would.
    fn external_v4(&mut self, t: Value, source: &Value, path: &str, spath: &str, event: Option<&str>) -> Value {
        let explicit = source.as_object().is_some_and(|o| o.contains_key("internal") || o.contains_key("reenter"));
        // Read as XState 5 because it says so, or because it says nothing: then this transition is where it shows.
        let unsaid = self.outline.v4.is_empty() && self.outline.v5.is_empty();
        if explicit || !(self.v4 || unsaid) {
            return t;
        }
        let written = match source {
            Value::Object(o) => o.get("target").unwrap_or(&Value::Null),
            other => other,
        };
        let written: Vec<&str> = match written {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if written.is_empty() || written.iter().any(|w| w.starts_with('.')) {
            return t;
        }
        let targets: Vec<String> = match &t {
            Value::String(s) => vec![s.clone()],
            Value::Object(o) => match o.get("target") {
                Some(Value::String(s)) => vec![s.clone()],
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_string).collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        let Some(inside) = targets.iter().find(|x| self.outline.resolve(&self.id, spath, x).is_some_and(|r| outline::is_within(&r, spath))) else {
            return t;
        };
        let whose = if spath.is_empty() { "the machine".to_string() } else { format!("\"{spath}\"") };
        if !self.v4 {
            let message = format!(
                "the config uses no idiom of XState 4 or 5 alone, and is read as XState 5: this transition to \"{inside}\" stays in \
                 {whose}; XState 4 would leave {whose} and enter it again (entry and exit actions, invokes and delays start over)"
            );
            self.diag(Severity::Info, spath, event, path, message, "Write `reenter: true` if the machine is XState 4's and should start the state over.");
            return t;
        }
        let message = format!(
            "XState 4 takes this transition as external: its target \"{inside}\" is {whose} or a state inside it, so it leaves {whose} \
             and enters it again (entry and exit actions, invokes and delays start over); read as `reenter: true`"
        );
        self.diag(Severity::Info, spath, event, path, message, "Write `internal: true` where the state should stay as it is.");
        let mut t = match t {
            Value::String(s) => json!({ "target": s }),
            other => other,
        };
        if let Some(o) = t.as_object_mut() {
            o.insert("reenter".into(), Value::Bool(true));
        }
        t
    }

    fn transition_inner(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        match v {
            Value::String(_) => {
                let t = self.target(v, path, spath, event);
                Some(match t {
                    Some(t) => t,
                    None => json!({}),
                })
            }
            Value::Object(o) => {
                let mut out = Map::new();
                let mut in_state = None;
                for (k, val) in o {
                    let p = join(path, k);
                    match k.as_str() {
                        "in" => in_state = self.in_member(val, &p, spath, event),
                        "target" => {
                            if let Some(t) = self.target(val, &p, spath, event) {
                                out.insert("target".into(), t);
                            }
                        }
                        "guard" | "cond" => {
                            if k == "cond" {
                                self.diag(Severity::Info, spath, event, &p, "`cond` is XState v4 syntax; read as `guard`".into(), "");
                            }
                            if let Some(g) = self.guard(val, &p, spath, event) {
                                out.insert("guard".into(), g);
                            }
                        }
                        "actions" => {
                            out.insert("actions".into(), Value::Array(self.actions(val, &p, spath, event)));
                        }
                        "reenter" => {
                            if let Value::Bool(b) = val {
                                out.insert("reenter".into(), Value::Bool(*b));
                            }
                        }
                        "internal" => {
                            let message = if val == &Value::Bool(false) {
                                out.insert("reenter".into(), Value::Bool(true));
                                "`internal: false` is XState v4 syntax; read as `reenter: true`"
                            } else {
                                "`internal: true` is XState v4 syntax for a transition that does not leave its state, as idem's do \
                                 without `reenter: true`"
                            };
                            self.diag(Severity::Info, spath, event, &p, message.into(), "");
                        }
                        "description" | "meta" => {
                            out.insert(k.clone(), val.clone());
                        }
                        other => self.diag(
                            Severity::Warning,
                            spath,
                            event,
                            &p,
                            format!("transition key `{other}` has no idem equivalent and is left out"),
                            "",
                        ),
                    }
                }
                if let Some(test) = in_state {
                    let guard = match out.remove("guard") {
                        Some(own) => json!({ "and": [test, self.expression(own)] }),
                        None => test,
                    };
                    out.insert("guard".into(), guard);
                }
                Some(Value::Object(out))
            }
            Value::Null => {
                self.diag(
                    Severity::Info,
                    spath,
                    event,
                    path,
                    "a transition set to undefined/null forbids the event here (XState v4); read as a targetless transition \
                     without actions, which takes the event so that an ancestor's transition does not"
                        .into(),
                    "",
                );
                Some(json!({}))
            }
            other => {
                self.diag(Severity::Warning, spath, event, path, format!("a transition cannot be {other}"), "");
                None
            }
        }
    }
}

/// Add actions to the list under `key` (`entry`, `exit`), after any already there.
fn extend(map: &mut Map<String, Value>, key: &str, actions: Vec<Value>) {
    match map.get_mut(key) {
        Some(Value::Array(a)) => a.extend(actions),
        _ => {
            map.insert(key.to_string(), Value::Array(actions));
        }
    }
}

/// Add transitions under `key`, after any already there.
fn merge(map: &mut Map<String, Value>, key: &str, t: Value) {
    let add = match t {
        Value::Array(a) => a,
        one => vec![one],
    };
    match map.get_mut(key) {
        None => {
            map.insert(key.to_string(), if add.len() == 1 { add.into_iter().next().unwrap_or(Value::Null) } else { Value::Array(add) });
        }
        Some(Value::Array(a)) => a.extend(add),
        Some(one) => {
            let mut all = vec![one.take()];
            all.extend(add);
            *one = Value::Array(all);
        }
    }
}

/// Whether a history state of an XState config names a default target.
fn has_target(history: &Value) -> bool {
    match history.get("target") {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    }
}
