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
//! - a named action becomes an opaque effect of that type (`{ "effect": { "type": "notify" } }`),
//!   so a repeat that runs it again is reported as the action running twice;
//! - a named guard becomes a flag the event carries
//!   (`event.payload.$guard.<name>`), so the analysis explores both outcomes;
//! - named delays, wildcard events and `invoke` are left out.
//!
//! Two built-ins are functions in XState and lost by a plain `JSON.stringify`
//! (an action becomes `null`, a guard disappears); written out with their own
//! properties (a replacer that keeps a function's members, as
//! `tests/analysis/xstate/make.mjs` does), they are read as data:
//!
//! - `raise({ type: "X", ... })`, `{ "type": "xstate.raise", "event": { "type": "X", ... } }`,
//!   becomes `{ "raise": { "type": "X", "payload": { ... } } }` (an event computed by a
//!   function, or a delayed raise, is `unrepresentable`);
//! - `stateIn("#m.a.b")` (or a state value), `{ "type": "xstate.stateIn", "stateValue": ... }`
//!   or `{ "stateValue": ... }`, becomes `{ "in_state": "#m.a.b" }` (one per leaf of a
//!   state value, joined by `and`).
//!
//! Idem's own data actions (`{ "assign": … }`, `{ "effect": … }`, `{ "respond": … }`, `{ "raise": … }`)
//! and JSONLogic guards (an object without `type`) are accepted as they are, so a
//! config can be ported to idem one guard or action at a time.

use crate::analyze::{Finding, Severity};
use crate::error::{Code, Error, Result};
use serde_json::{json, Map, Value};

/// An imported machine: an idem definition and what could not be represented.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Imported {
    pub definition: Value,
    pub diagnostics: Vec<Finding>,
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
    let id = match obj.get("id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => "machine".to_string(),
    };
    let mut imp = Importer { id: id.clone(), diagnostics: Vec::new() };
    let mut def = imp.state(config, "", "", true);
    if let Some(o) = def.as_object_mut() {
        o.insert("id".into(), Value::String(id));
    }
    Ok(Imported { definition: def, diagnostics: imp.diagnostics })
}

struct Importer {
    id: String,
    diagnostics: Vec<Finding>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Keys XState allows that have no meaning for the analysis (types only).
const TYPE_ONLY_KEYS: &[&str] = &["types", "schemas", "tsTypes", "predictableActionArguments", "preserveActionOrder"];

impl Importer {
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
        for (k, val) in o {
            let p = join(xpath, k);
            match k.as_str() {
                "id" if root => {}
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
                    _ => self.diag(Severity::Warning, spath, None, &p, "initial must name a child state".into(), ""),
                },
                "type" => match val.as_str() {
                    Some(t @ ("final" | "parallel" | "history")) => {
                        out.insert("type".into(), json!(t));
                    }
                    Some("atomic") | Some("compound") => {}
                    _ => self.diag(Severity::Warning, spath, None, &p, format!("unknown state type {val}"), ""),
                },
                "history" => match val.as_str() {
                    Some(mode @ ("shallow" | "deep")) => {
                        out.insert("history".into(), json!(mode));
                    }
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
                    let Some(on) = val.as_object() else { continue };
                    let mut map = Map::new();
                    for (ev, ts) in on {
                        let ep = join(&p, ev);
                        if ev == "*" || ev.ends_with(".*") {
                            self.diag(
                                Severity::Warning,
                                spath,
                                Some(ev),
                                &ep,
                                format!("wildcard event descriptor \"{ev}\" is not supported and is left out"),
                                "Name each event the state accepts.",
                            );
                            continue;
                        }
                        if let Some(t) = self.transitions(ts, &ep, spath, Some(ev)) {
                            map.insert(ev.clone(), t);
                        }
                    }
                    out.insert("on".into(), Value::Object(map));
                }
                "always" => {
                    if let Some(t) = self.transitions(val, &p, spath, None) {
                        out.insert("always".into(), t);
                    }
                }
                "after" => {
                    let Some(after) = val.as_object() else { continue };
                    let mut map = Map::new();
                    for (delay, ts) in after {
                        let dp = join(&p, delay);
                        if delay.parse::<u64>().is_err() {
                            self.diag(
                                Severity::Warning,
                                spath,
                                None,
                                &dp,
                                format!("named delay \"{delay}\" is code; this delayed transition is left out"),
                                "Give the delay in milliseconds.",
                            );
                            continue;
                        }
                        if let Some(t) = self.transitions(ts, &dp, spath, None) {
                            map.insert(delay.clone(), t);
                        }
                    }
                    out.insert("after".into(), Value::Object(map));
                }
                "entry" | "exit" => {
                    let actions = self.actions(val, &p, spath, None);
                    out.insert(k.clone(), Value::Array(actions));
                }
                "description" | "meta" | "tags" => {
                    out.insert(k.clone(), val.clone());
                }
                k if TYPE_ONLY_KEYS.contains(&k) => {
                    self.diag(Severity::Info, spath, None, &p, format!("`{k}` only matters to TypeScript and is left out"), "");
                }
                other => {
                    let what = match other {
                        "invoke" => "invoked actors (`invoke`) are not supported",
                        "onDone" => "`onDone` of the machine itself (its done event ends the process) has no idem equivalent",
                        "output" => "`output` is not supported",
                        _ => "this key has no idem equivalent",
                    };
                    self.diag(
                        Severity::Warning,
                        spath,
                        None,
                        &p,
                        format!("{what}; `{other}` is left out"),
                        "Model the work as effects on transitions, and its completion as the `<type>.succeeded`/`<type>.failed` events idem raises.",
                    );
                }
            }
        }
        Value::Object(out)
    }

    fn transitions(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        match v {
            Value::Array(items) => {
                let mut out = Vec::new();
                for (i, t) in items.iter().enumerate() {
                    if let Some(t) = self.transition(t, &format!("{path}[{i}]"), spath, event) {
                        out.push(t);
                    }
                }
                Some(Value::Array(out))
            }
            other => self.transition(other, path, spath, event),
        }
    }

    /// A target: a state name as XState writes it (a sibling key, `.child`,
    /// `#id`), or several, one per parallel region.
    fn target(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        match v {
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
                for (k, val) in o {
                    let p = join(path, k);
                    match k.as_str() {
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
                            if val == &Value::Bool(false) {
                                out.insert("reenter".into(), Value::Bool(true));
                            }
                            self.diag(
                                Severity::Info,
                                spath,
                                event,
                                &p,
                                "`internal` is XState v4 syntax; `internal: false` is read as `reenter: true`".into(),
                                "",
                            );
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
                Some(Value::Object(out))
            }
            Value::Null => {
                self.diag(
                    Severity::Warning,
                    spath,
                    event,
                    path,
                    "a transition set to undefined/null (forbidding a parent's transition) is not supported and is left out".into(),
                    "Guard the parent's transition instead.",
                );
                None
            }
            other => {
                self.diag(Severity::Warning, spath, event, path, format!("a transition cannot be {other}"), "");
                None
            }
        }
    }

    fn guard(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        if let Some(g) = self.state_in(v, path, spath, event) {
            return g;
        }
        let name = match v {
            Value::String(s) => s.clone(),
            Value::Object(o) => match o.get("type") {
                Some(Value::String(t)) => {
                    if o.contains_key("params") {
                        self.diag(
                            Severity::Info,
                            spath,
                            event,
                            &join(path, "params"),
                            format!("params of guard `{t}` are not evaluated"),
                            "",
                        );
                    }
                    t.clone()
                }
                // A JSONLogic expression: idem's own guard language.
                None => return Some(v.clone()),
                Some(_) => {
                    self.diag(Severity::Warning, spath, event, path, "a guard type must be a string; guard left out".into(), "");
                    return None;
                }
            },
            _ => {
                self.diag(Severity::Warning, spath, event, path, "a guard must be a name or an object; guard left out".into(), "");
                return None;
            }
        };
        self.diag(
            Severity::Warning,
            spath,
            event,
            path,
            format!(
                "guard `{name}` is code the analysis cannot read; it is modelled as a flag the event carries \
                 (event.payload.$guard.{name}), so both of its outcomes are explored"
            ),
            "Write the guard as a JSONLogic expression over context and event to have it checked.",
        );
        Some(json!({ "===": [{ "var": format!("event.payload.$guard.{name}") }, true] }))
    }

    /// `stateIn(...)` written out with its members: `Some(None)` when it is
    /// one but its state value cannot be read, `None` when it is not one.
    fn state_in(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Option<Value>> {
        let o = v.as_object()?;
        let ty = o.get("type").and_then(Value::as_str);
        let value = match ty {
            Some("xstate.stateIn") => o.get("stateValue").or_else(|| o.get("params").and_then(|p| p.get("stateValue"))),
            None | Some("stateIn") => o.get("stateValue"),
            Some(_) => None,
        };
        let Some(value) = value else {
            if ty == Some("xstate.stateIn") {
                self.diag(Severity::Warning, spath, event, path, "stateIn without a readable stateValue; guard left out".into(), "");
                return Some(None);
            }
            return None;
        };
        let mut leaves = Vec::new();
        state_value_leaves(value, &mut String::new(), &mut leaves);
        let tests: Vec<Value> = leaves
            .into_iter()
            .map(|l| json!({ "in_state": if l.starts_with('#') { l } else { format!("#{}.{l}", self.id) } }))
            .collect();
        Some(match tests.len() {
            0 => {
                self.diag(Severity::Warning, spath, event, path, format!("stateIn({value}) names no state; guard left out"), "");
                None
            }
            1 => tests.into_iter().next(),
            _ => Some(json!({ "and": tests })),
        })
    }

    /// `raise(...)` written out with its members: the event it raises, as an idem `raise`.
    fn raise(&mut self, o: &Map<String, Value>, path: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        let ev = o.get("event").and_then(Value::as_object);
        let ty = ev.and_then(|e| e.get("type")).and_then(Value::as_str).filter(|t| !t.is_empty());
        let delayed = o.get("delay").is_some_and(|d| !d.is_null());
        let (Some(e), Some(ty), false) = (ev, ty, delayed) else {
            let why = if delayed { "a delayed raise (`delay`) is not supported" } else { "the event it raises is computed by a function" };
            self.diag(
                Severity::Warning,
                spath,
                event,
                path,
                format!("built-in action `xstate.raise` cannot be read as data: {why}; it is modelled as an opaque effect `xstate.raise`"),
                "Raise a fixed event: raise({ type: \"X\", ... }), or write { \"raise\": { \"type\": \"X\" } }.",
            );
            return None;
        };
        let payload: Map<String, Value> = e.iter().filter(|(k, _)| k.as_str() != "type").map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut r = Map::new();
        r.insert("type".into(), json!(ty));
        if !payload.is_empty() {
            r.insert("payload".into(), Value::Object(payload));
        }
        Some(json!({ "raise": r }))
    }

    fn actions(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Vec<Value> {
        let list: Vec<(&Value, String)> = match v {
            Value::Array(a) => a.iter().enumerate().map(|(i, x)| (x, format!("{path}[{i}]"))).collect(),
            other => vec![(other, path.to_string())],
        };
        let mut out = Vec::new();
        for (a, p) in list {
            let opaque = |name: &str| json!({ "effect": { "type": name } });
            match a {
                Value::Object(o) if o.len() == 1 && ["assign", "effect", "respond", "raise"].iter().any(|k| o.contains_key(*k)) => {
                    out.push(a.clone());
                }
                Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("xstate.raise") => match self.raise(o, &p, spath, event) {
                    Some(r) => out.push(r),
                    None => out.push(opaque("xstate.raise")),
                },
                Value::String(name) => {
                    self.diag(
                        Severity::Warning,
                        spath,
                        event,
                        &p,
                        format!(
                            "action `{name}` is code the analysis cannot read; it is modelled as an opaque effect `{name}`, so running it \
                             again on a repeat is reported"
                        ),
                        "Write it as data: an idem `assign` (JSONLogic) if it changes context, an `effect` if it reaches the outside world.",
                    );
                    out.push(opaque(name));
                }
                Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                    Some(t @ ("xstate.log" | "xstate.cancel")) => {
                        self.diag(Severity::Info, spath, event, &p, format!("built-in action `{t}` has no effect on state; left out"), "");
                    }
                    Some(t) if !t.is_empty() => {
                        let builtin = t.starts_with("xstate.");
                        self.diag(
                            Severity::Warning,
                            spath,
                            event,
                            &p,
                            format!(
                                "{} `{t}` cannot be read as data; it is modelled as an opaque effect `{t}`{}",
                                if builtin { "built-in action" } else { "action" },
                                if o.contains_key("params") { " (its params are not evaluated)" } else { "" }
                            ),
                            "Write it as data: an idem `assign` (JSONLogic) if it changes context, an `effect` if it reaches the outside world.",
                        );
                        out.push(opaque(t));
                    }
                    _ => self.diag(Severity::Warning, spath, event, &p, "an action object needs a string `type`; left out".into(), ""),
                },
                Value::Null => {
                    self.diag(
                        Severity::Warning,
                        spath,
                        event,
                        &p,
                        "an inline action (a function, lost in JSON) cannot be read; it is modelled as an opaque effect `inline-action`"
                            .into(),
                        "Name the action (setup({ actions })) or write it as idem data.",
                    );
                    out.push(opaque("inline-action"));
                }
                other => self.diag(Severity::Warning, spath, event, &p, format!("an action cannot be {other}; left out"), ""),
            }
        }
        out
    }
}

/// The states a state value names, as paths from the machine (`a.b`), or
/// `#id...` as written.
fn state_value_leaves(v: &Value, prefix: &mut String, out: &mut Vec<String>) {
    match v {
        Value::String(s) if prefix.is_empty() => out.push(s.clone()),
        Value::String(s) => out.push(format!("{prefix}.{s}")),
        Value::Object(o) => {
            for (k, inner) in o {
                let saved = prefix.clone();
                *prefix = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                if inner.as_object().is_some_and(Map::is_empty) {
                    out.push(prefix.clone());
                } else {
                    state_value_leaves(inner, prefix, out);
                }
                *prefix = saved;
            }
        }
        _ => {}
    }
}
