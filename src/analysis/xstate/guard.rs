//! Guards: named and inline ones as flags the event carries, `stateIn` as
//! `in_state`, and the combinators `and`/`or`/`not` as JSONLogic over them.
//!
//! XState 5 makes `and([...])`, `or([...])` and `not(g)` functions whose
//! `guards` member holds what they combine: a plain `JSON.stringify` drops them
//! (the transition then looks unguarded), and a replacer that writes out a
//! function's members under its name (`tests/xstate/make.mjs`) gives
//! `{ "type": "xstate.and", "guards": [...] }`. The betas of XState 5 made them
//! plain objects, which survive JSON as they are:
//! `{ "type": "xstate.boolean", "params": { "op": "and" }, "children": [...] }`.
//! Both are read, and each guard inside keeps its own flag, so the analysis
//! still tells `and(["isPaid", "isShipped"])` from either guard alone.

use super::{join, Importer};
use crate::analyze::Severity;
use serde_json::{json, Map, Value};

impl Importer {
    /// A transition's guard. A named guard (`"isPaid"`, `{ "type": "isPaid",
    /// "params": … }`) stays a name, which the definition's
    /// `implementations.guards` must implement: the import stands in the flag
    /// [`Importer::guard_expr`] makes of it (on the completion of invoked work,
    /// a flag read from what the work reported), until the user gives the
    /// guard as data. Anything that is not a name is that expression.
    pub(super) fn guard(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        let named = named_guard(v);
        let expr = self.guard_expr(v, path, spath, event)?;
        let Some((name, params)) = named else { return Some(expr) };
        if let Some(d) = self.diagnostics.last_mut().filter(|d| d.site.as_deref() == Some(path)) {
            d.message.push_str(&format!("; it is kept as a name, which `implementations.guards.{name}` implements, the flag standing in until it is given"));
            d.fix = "Give the guard as a JSONLogic expression over context, event and params in the definition's `implementations.guards`.".into();
        }
        self.stand_ins.guards.entry(name.clone()).or_insert(expr);
        Some(match params {
            Some(p) => json!({ "type": name, "params": p }),
            None => Value::String(name),
        })
    }

    /// A guard as an expression, for where it is combined with another
    /// (`and` with `in`, a `choose`'s condition, a lost guard's flag): a name
    /// becomes the stand-in the import has for it.
    pub(super) fn expression(&self, g: Value) -> Value {
        let name = match &g {
            Value::String(s) => Some(s.as_str()),
            Value::Object(o) if o.keys().all(|k| k == "type" || k == "params") => o.get("type").and_then(Value::as_str),
            _ => None,
        };
        match name.and_then(|n| self.stand_ins.guards.get(n)) {
            Some(flag) => flag.clone(),
            None => g,
        }
    }

    /// A guard as idem reads it. A named guard becomes the flag
    /// `event.payload.$guard.<name>`; an inline one (a function: `null` when
    /// written out, or XState 4's `{ "type": "xstate.guard", "name": … }`) a
    /// flag of its own, named by its function's name or else by its site, so
    /// that two inline guards are never one flag.
    pub(super) fn guard_expr(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        if let Some(g) = self.state_in(v, path, spath, event) {
            return g;
        }
        if let Some(g) = self.combinator(v, path, spath, event) {
            return g;
        }
        let (name, inline) = match v {
            Value::String(s) => (s.clone(), false),
            Value::Null => (site_flag(path), true),
            Value::Object(o) => match o.get("type") {
                Some(Value::String(t)) if t == "xstate.guard" => {
                    let named = o.get("name").and_then(Value::as_str).filter(|n| is_identifier(n));
                    (named.map_or_else(|| site_flag(path), |n| format!("inline:{n}")), true)
                }
                Some(Value::String(t)) => {
                    if o.contains_key("params") {
                        self.diag(
                            Severity::Info,
                            spath,
                            event,
                            &join(path, "params"),
                            format!("params of guard `{t}` are kept for its implementation; the flag standing in for it does not read them"),
                            "",
                        );
                    } else if let Some(k) = o.keys().find(|k| k.as_str() != "type") {
                        // XState 4 writes a guard's parameters beside its type: `{ type: "minLength", min: 3 }`.
                        self.diag(
                            Severity::Info,
                            spath,
                            event,
                            &join(path, k),
                            format!("members of guard `{t}` beside `type` are its parameters (XState 4) and are not evaluated"),
                            "",
                        );
                    }
                    (t.clone(), false)
                }
                // A JSONLogic expression: idem's own guard language, taken as it is if it is one.
                None => {
                    return match crate::expr::Exprs::default().compile_guard(v, path) {
                        Ok(_) => Some(v.clone()),
                        Err(e) => {
                            let message = format!("a guard object without `type` is read as JSONLogic, and this one is not: {}; guard left out", e.message);
                            self.diag(Severity::Warning, spath, event, path, message, "");
                            None
                        }
                    };
                }
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
        let what = if inline { format!("inline guard (a function) at {path}") } else { format!("guard `{name}`") };
        let var = self.flag_var(&name);
        self.diag(
            Severity::Warning,
            spath,
            event,
            path,
            format!("{what} is code the analysis cannot read; it is modelled as a flag {} ({var}), so both of its outcomes are explored", self.flag_carrier()),
            "Write the guard as a JSONLogic expression over context and event to have it checked.",
        );
        Some(json!({ "===": [{ "var": var }, true] }))
    }

    /// The `var` path of the flag that stands for guard `name`: in the event's
    /// payload, or in the result (or error) invoked work reports, whose
    /// completion event's payload the outbox writes.
    fn flag_var(&self, name: &str) -> String {
        match self.flags_in {
            Some(part) => format!("event.payload.{part}.$guard.{name}"),
            None => format!("event.payload.$guard.{name}"),
        }
    }

    /// Who sets a flag, for the diagnostics.
    fn flag_carrier(&self) -> &'static str {
        match self.flags_in {
            Some("result") => "the invoked work's result carries",
            Some(_) => "the invoked work's error carries",
            None => "the event carries",
        }
    }

    /// A guard the transition at `path` must have had, lost in JSON (a
    /// function in an object's member disappears: `{ target, guard: fn }` is
    /// written `{ target }`), as a flag of its own named by its site; `why`
    /// says how the loss shows.
    pub(super) fn lost_guard(&mut self, t: &mut Value, path: &str, spath: &str, event: Option<&str>, why: &str) {
        let name = site_flag(&join(path, "guard"));
        let var = self.flag_var(&name);
        self.diag(
            Severity::Warning,
            spath,
            event,
            path,
            format!(
                "{why}: its guard was most likely a function, lost in JSON; it is modelled as a flag {} ({var}), so both of its outcomes are explored",
                self.flag_carrier()
            ),
            "Name the guard (`guards` in the options or setup), so that its name survives in JSON.",
        );
        let flag = json!({ "===": [{ "var": var }, true] });
        let candidates: Vec<&mut Value> = match t {
            // The candidates of a transition split by its `choose`: each keeps its choice's guard too.
            Value::Array(split) => split.iter_mut().collect(),
            one => vec![one],
        };
        for t in candidates {
            if let Value::String(target) = t {
                *t = json!({ "target": target });
            }
            if let Some(o) = t.as_object_mut() {
                let guard = match o.remove("guard") {
                    Some(own) => json!({ "and": [flag.clone(), self.expression(own)] }),
                    None => flag.clone(),
                };
                o.insert("guard".into(), guard);
            }
        }
    }

    /// `and`/`or`/`not` (see the module's documentation): `Some(None)` when it
    /// is one that cannot be read whole, `None` when it is not one.
    fn combinator(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Option<Value>> {
        let o = v.as_object()?;
        let ty = o.get("type").and_then(Value::as_str)?;
        let (op, key) = match ty {
            "xstate.boolean" => (o.get("params").and_then(|p| p.get("op")).and_then(Value::as_str).unwrap_or(""), "children"),
            "xstate.and" | "xstate.or" | "xstate.not" => (&ty["xstate.".len()..], "guards"),
            // A function written out as `{ type: fn.name, ...members }`; without `guards` a guard named so.
            "and" | "or" | "not" if o.get("guards").is_some_and(Value::is_array) => (ty, "guards"),
            _ => return None,
        };
        let kp = join(path, key);
        let items = match (op, o.get(key)) {
            ("and" | "or", Some(Value::Array(items))) => items,
            ("not", Some(Value::Array(items))) if items.len() == 1 => items,
            ("and" | "or" | "not", _) => {
                let why = if op == "not" { "one guard" } else { "a list of guards" };
                self.diag(
                    Severity::Warning,
                    spath,
                    event,
                    &kp,
                    format!("guard `{ty}` needs `{key}`, {why} (lost when only the function's name is written out); guard left out"),
                    "Write out the combinator's members (tests/xstate/make.mjs shows a replacer that does), or write the guard as JSONLogic.",
                );
                return Some(None);
            }
            _ => {
                let op = o.get("params").and_then(|p| p.get("op")).unwrap_or(&Value::Null);
                let message = format!("guard `xstate.boolean` with op {op} is none of \"and\", \"or\", \"not\"; guard left out");
                self.diag(Severity::Warning, spath, event, &join(path, "params"), message, "");
                return Some(None);
            }
        };
        let mut parts = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let ip = format!("{kp}[{i}]");
            let Some(g) = self.guard_expr(item, &ip, spath, event) else {
                self.diag(
                    Severity::Warning,
                    spath,
                    event,
                    path,
                    format!("guard `{ty}` cannot be read whole: {ip} cannot be read; guard left out"),
                    "",
                );
                return Some(None);
            };
            parts.push(g);
        }
        Some(Some(match (op, parts.len()) {
            ("not", _) => json!({ "!": parts }),
            // XState's `and([])` holds and `or([])` does not; JSONLogic's answers are not booleans.
            ("and", 0) => json!({ "!": [false] }),
            ("or", 0) => json!({ "!!": [false] }),
            (_, 1) => parts.into_iter().next().unwrap_or(Value::Null),
            _ => json!({ op: parts }),
        }))
    }

    /// XState 4's `in` member of a transition (`in: "#m.ready"`, or a state
    /// value): the state it must be in, as `in_state`.
    pub(super) fn in_member(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        self.diag(Severity::Info, spath, event, path, "`in` is XState v4's state guard; read as `in_state`, with the transition's guard if any".into(), "");
        self.state_in(&json!({ "stateValue": v }), path, spath, event).flatten()
    }

    /// `stateIn(...)` written out with its members: `Some(None)` when it is
    /// one but its state value cannot be read, `None` when it is not one.
    fn state_in(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Option<Value>> {
        let o = v.as_object()?;
        let ty = o.get("type").and_then(Value::as_str);
        let value = match ty {
            // XState 5's betas wrote it as data: `{ "type": "xstate.guard:in", "params": { "stateValue": ... } }`.
            Some("xstate.stateIn" | "xstate.guard:in") => o.get("stateValue").or_else(|| o.get("params").and_then(|p| p.get("stateValue"))),
            None | Some("stateIn") => o.get("stateValue"),
            Some(_) => None,
        };
        let Some(value) = value else {
            if matches!(ty, Some("xstate.stateIn" | "xstate.guard:in")) {
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

/// The name and params of a named guard: a string, or an object whose `type`
/// is not one of XState's built-ins (`xstate.*`, the combinators), its
/// `params`, or (XState 4) the members beside `type`.
fn named_guard(v: &Value) -> Option<(String, Option<Value>)> {
    match v {
        Value::String(s) if !s.is_empty() => Some((s.clone(), None)),
        Value::Object(o) => {
            let t = o.get("type")?.as_str()?;
            let combinator = matches!(t, "and" | "or" | "not") && o.get("guards").is_some_and(Value::is_array);
            if t.is_empty() || t.starts_with("xstate.") || combinator {
                return None;
            }
            let beside: Map<String, Value> = o.iter().filter(|(k, _)| k.as_str() != "type").map(|(k, x)| (k.clone(), x.clone())).collect();
            let params = match o.get("params") {
                Some(p) => Some(p.clone()),
                None if !beside.is_empty() => Some(Value::Object(beside)),
                None => None,
            };
            Some((t.to_string(), params))
        }
        _ => None,
    }
}

/// The flag of an inline guard without a usable name: its site, with the
/// dots that would split a `var` path written as slashes.
pub(super) fn site_flag(path: &str) -> String {
    format!("inline:{}", path.replace('.', "/"))
}

/// A JavaScript function name (XState 4 writes an anonymous function's source instead).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$') && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}
