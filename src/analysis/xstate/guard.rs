//! Guards: named and inline ones as flags the event carries, `stateIn` as `in_state`.

use super::{join, Importer};
use crate::analyze::Severity;
use serde_json::{json, Map, Value};

impl Importer {
    /// A guard as idem reads it. A named guard becomes the flag
    /// `event.payload.$guard.<name>`; an inline one (a function: `null` when
    /// written out, or XState 4's `{ "type": "xstate.guard", "name": … }`) a
    /// flag of its own, named by its function's name or else by its site, so
    /// that two inline guards are never one flag.
    pub(super) fn guard(&mut self, v: &Value, path: &str, spath: &str, event: Option<&str>) -> Option<Value> {
        if let Some(g) = self.state_in(v, path, spath, event) {
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
                            format!("params of guard `{t}` are not evaluated"),
                            "",
                        );
                    }
                    (t.clone(), false)
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
        let what = if inline { format!("inline guard (a function) at {path}") } else { format!("guard `{name}`") };
        self.diag(
            Severity::Warning,
            spath,
            event,
            path,
            format!(
                "{what} is code the analysis cannot read; it is modelled as a flag the event carries \
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

/// The flag of an inline guard without a usable name: its site, with the
/// dots that would split a `var` path written as slashes.
fn site_flag(path: &str) -> String {
    format!("inline:{}", path.replace('.', "/"))
}

/// A JavaScript function name (XState 4 writes an anonymous function's source instead).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$') && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}
