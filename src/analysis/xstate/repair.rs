//! The last step of an import: the definition must load in the engine.
//!
//! What the import knows how to rewrite is rewritten before this step; what
//! the engine still refuses (a target that names no state, two states with
//! one id, an `in_state` of no state, an unguarded loop of eventless
//! transitions, ...) is taken out of the definition one refusal at a time,
//! each with a warning that names what was taken out and the engine's reason,
//! so that one part XState would tolerate, or only fail on when it is reached,
//! does not make idem refuse the whole machine. The site of such a warning is
//! its path in the imported definition, which follows the XState config's
//! except where the import rewrote it (an invoke's `onDone` is under `on`).

use super::Importer;
use crate::analyze::Severity;
use crate::error::{Code, Error};
use crate::Machine;
use serde_json::{json, Value};

/// At most this many parts are taken out before the import gives up and
/// leaves the engine's refusal to whoever loads the definition.
const MAX_REPAIRS: usize = 100;

/// One step of a path in the definition.
#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// What a path names, read with the definition's shape.
enum Spot {
    /// A transition (`on.<event>`, `always`, `after.<ms>` or `onDone`, one of a
    /// list at `index`), and what follows inside it.
    Transition { at: Vec<Seg>, inside: Vec<Seg> },
    /// An entry or exit action.
    Action(Vec<Seg>),
    /// A member of a state.
    Member { state: Vec<Seg>, key: String },
}

impl Importer {
    /// Take out of `def`, one at a time, what the engine refuses to load.
    pub(super) fn settle(&mut self, def: &mut Value) {
        for _ in 0..MAX_REPAIRS {
            let Err(e) = Machine::from_value(def.clone()) else { return };
            if !self.repair(def, &e) {
                return;
            }
        }
    }

    fn repair(&mut self, def: &mut Value, e: &Error) -> bool {
        let Some(path) = e.path.as_deref().filter(|p| !p.is_empty()) else { return false };
        let Some(segs) = locate(def, path) else { return false };
        let Some(spot) = classify(&segs) else { return false };
        let why = format!("the engine refuses the imported definition here ({}: {})", e.code.as_str(), e.message);
        match spot {
            Spot::Transition { at, inside } => {
                let into_guard = inside.first() == Some(&Seg::Key("guard".into()));
                let into_action = inside.first() == Some(&Seg::Key("actions".into())) && inside.len() >= 2;
                if e.code == Code::AlwaysLoop || into_guard {
                    // Keep the transition; what decides it becomes a flag of its own.
                    let name = format!("repair:{}", path.replace('.', "/"));
                    let what = if into_guard { "its guard is modelled" } else { "it is guarded" };
                    let message = format!("{why}; {what} as a flag the event carries (event.payload.$guard.{name})");
                    self.diag(Severity::Warning, "", None, path, message, "");
                    let flag = json!({ "===": [{ "var": format!("event.payload.$guard.{name}") }, true] });
                    let Some(t) = get_mut(def, &at) else { return false };
                    if let Value::String(target) = t {
                        *t = json!({ "target": target });
                    }
                    let Some(o) = t.as_object_mut() else { return false };
                    o.insert("guard".into(), flag);
                    true
                } else if into_action {
                    let action: Vec<Seg> = at.iter().chain(&inside[..2]).cloned().collect();
                    self.diag(Severity::Warning, "", None, path, format!("{why}; this action is left out"), "");
                    remove(def, &action)
                } else {
                    self.diag(Severity::Warning, "", None, path, format!("{why}; this transition is left out"), "");
                    let removed = remove(def, &at);
                    if removed {
                        self.kept.transitions_kept = self.kept.transitions_kept.saturating_sub(1);
                    }
                    removed
                }
            }
            Spot::Action(at) => {
                self.diag(Severity::Warning, "", None, path, format!("{why}; this action is left out"), "");
                remove(def, &at)
            }
            Spot::Member { state, key } => {
                let mut at = state.clone();
                at.push(Seg::Key(key.clone()));
                if key == "states" || key == "type" {
                    return false;
                }
                if key == "initial" {
                    // A compound state needs one: its first child state that is not a history state.
                    let Some(o) = get_mut(def, &state).and_then(Value::as_object_mut) else { return false };
                    let first = o.get("states").and_then(Value::as_object).and_then(|c| c.iter().find(|(_, c)| c["type"] != "history"));
                    let Some(first) = first.map(|(k, _)| k.clone()) else { return false };
                    if o.get("initial").and_then(Value::as_str) == Some(first.as_str()) {
                        return false;
                    }
                    self.diag(Severity::Warning, "", None, path, format!("{why}; read as its first child state, \"{first}\""), "");
                    o.insert("initial".into(), Value::String(first));
                    return true;
                }
                if key == "onDone" || key == "always" {
                    if let Some(ts) = get_mut(def, &at) {
                        let n = ts.as_array().map_or(1, Vec::len);
                        self.kept.transitions_kept = self.kept.transitions_kept.saturating_sub(n);
                    }
                }
                self.diag(Severity::Warning, "", None, path, format!("{why}; `{key}` is left out"), "");
                remove(def, &at)
            }
        }
    }
}

/// The steps of `path` (`states.a.on.done.invoke.x[0].target`) in `def`:
/// at an object the longest member name the path goes on with, so that a
/// name with dots in it is one step.
fn locate(def: &Value, path: &str) -> Option<Vec<Seg>> {
    let mut segs = Vec::new();
    let mut node = def;
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('[') {
            let (n, tail) = r.split_once(']')?;
            let i: usize = n.parse().ok()?;
            node = node.as_array()?.get(i)?;
            segs.push(Seg::Index(i));
            rest = tail.strip_prefix('.').unwrap_or(tail);
            continue;
        }
        let o = node.as_object()?;
        let key = o
            .keys()
            .filter(|k| rest.strip_prefix(k.as_str()).is_some_and(|r| r.is_empty() || r.starts_with(['.', '['])))
            .max_by_key(|k| k.len())?;
        node = &o[key];
        segs.push(Seg::Key(key.clone()));
        rest = &rest[key.len()..];
        rest = rest.strip_prefix('.').unwrap_or(rest);
    }
    Some(segs)
}

/// Read the steps with the definition's shape: states within `states`,
/// transitions within `on`, `always`, `after` and `onDone`.
fn classify(segs: &[Seg]) -> Option<Spot> {
    let mut state: Vec<Seg> = Vec::new();
    let mut i = 0;
    loop {
        let Seg::Key(k) = segs.get(i)? else { return None };
        match k.as_str() {
            "states" if segs.len() > i + 1 => {
                state.extend_from_slice(&segs[i..i + 2]);
                i += 2;
                if i == segs.len() {
                    return None;
                }
            }
            "on" | "after" | "always" | "onDone" => {
                // `on` and `after` name an event or delay first.
                let keyed = matches!(k.as_str(), "on" | "after");
                let mut end = i + 1 + usize::from(keyed);
                if end > segs.len() {
                    return Some(Spot::Member { state, key: k.clone() });
                }
                if matches!(segs.get(end), Some(Seg::Index(_))) {
                    end += 1;
                }
                return Some(Spot::Transition { at: segs[..end].to_vec(), inside: segs[end..].to_vec() });
            }
            "entry" | "exit" => {
                let end = (i + 2).min(segs.len());
                if end == i + 1 {
                    return Some(Spot::Member { state, key: k.clone() });
                }
                return Some(Spot::Action(segs[..end].to_vec()));
            }
            _ => return Some(Spot::Member { state, key: k.clone() }),
        }
    }
}

fn get_mut<'a>(v: &'a mut Value, segs: &[Seg]) -> Option<&'a mut Value> {
    segs.iter().try_fold(v, |node, s| match s {
        Seg::Key(k) => node.as_object_mut()?.get_mut(k),
        Seg::Index(i) => node.as_array_mut()?.get_mut(*i),
    })
}

/// Remove the member or element at `segs`.
fn remove(v: &mut Value, segs: &[Seg]) -> bool {
    let Some((last, parent)) = segs.split_last() else { return false };
    let Some(parent) = get_mut(v, parent) else { return false };
    match (last, parent) {
        (Seg::Key(k), Value::Object(o)) => o.shift_remove(k).is_some(),
        (Seg::Index(i), Value::Array(a)) if *i < a.len() => {
            a.remove(*i);
            true
        }
        _ => false,
    }
}
