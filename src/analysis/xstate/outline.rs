//! What the import reads of the whole config before it reads a state: which
//! XState it was written for, where each state is (its path and its `id`), and
//! the events the machine names.
//!
//! The version matters because XState 4 and 5 take the same transition
//! differently: in XState 4 a transition whose target is its own state or a
//! descendant of it is *external* unless it says `internal: true` (or its target
//! starts with `.`), so the state is exited and entered again (its entry
//! actions, invokes and timers start over); in XState 5, as in idem, it is not
//! unless it says `reenter: true`. The JSON form does not say which XState
//! wrote it, so the import reads it from the idioms only one of them has.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The outline of a config.
#[derive(Default)]
pub(super) struct Outline {
    /// The XState 4 idioms found (`cond`, `internal`, ...), if the config has
    /// no idiom of XState 5: then it is read as an XState 4 machine.
    pub v4: Vec<String>,
    /// The XState 5 idioms found, which make the config an XState 5 one.
    pub v5: Vec<String>,
    /// Every state's dotted path ("" for the machine).
    paths: BTreeSet<String>,
    /// Declared `id` -> path.
    ids: BTreeMap<String, String>,
    /// Path -> declared `id`.
    declared: BTreeMap<String, String>,
    /// Events named by an `on` of any state, in the order they first appear.
    pub events: Vec<String>,
    /// The effect type of each invoke that has an `id` (see [`super::invoke`]).
    pub invokes: BTreeMap<String, String>,
}

impl Outline {
    pub fn of(config: &Value) -> Outline {
        let mut o = Outline::default();
        o.state(config, "", true);
        o
    }

    /// Read as XState 4: its idioms, and none of XState 5's.
    pub fn is_v4(&self) -> bool {
        !self.v4.is_empty() && self.v5.is_empty()
    }

    fn state(&mut self, v: &Value, path: &str, root: bool) {
        let Some(s) = v.as_object() else { return };
        self.paths.insert(path.to_string());
        if let Some(Value::String(id)) = s.get("id") {
            if !root {
                self.ids.entry(id.clone()).or_insert_with(|| path.to_string());
                self.declared.insert(path.to_string(), id.clone());
            }
        }
        for (k, val) in s {
            match k.as_str() {
                "predictableActionArguments" | "preserveActionOrder" | "tsTypes" | "schema" | "onEntry" | "onExit" | "activities" | "strict" => {
                    note(&mut self.v4, k.clone());
                }
                "key" if root => note(&mut self.v4, "key".into()),
                "parallel" if val == &Value::Bool(true) => note(&mut self.v4, "parallel: true".into()),
                "data" if s.get("type").and_then(Value::as_str) == Some("final") => note(&mut self.v4, "data".into()),
                "output" => note(&mut self.v5, "output".into()),
                "types" if root => note(&mut self.v5, "types".into()),
                "on" => match val {
                    Value::Object(on) => {
                        for (event, ts) in on {
                            if event.is_empty() {
                                note(&mut self.v4, "on: { \"\": … }".into());
                            } else if !is_wildcard(event) && !self.events.contains(event) {
                                self.events.push(event.clone());
                            }
                            if root && bare_target(ts) {
                                note(&mut self.v4, "a machine-level target named bare".into());
                            }
                            self.transitions(ts);
                        }
                    }
                    Value::Array(list) => {
                        note(&mut self.v4, "on: [...]".into());
                        for t in list {
                            if let Some(Value::String(event)) = t.get("event") {
                                if !event.is_empty() && !is_wildcard(event) && !self.events.contains(event) {
                                    self.events.push(event.clone());
                                }
                            }
                            self.transition(t);
                        }
                    }
                    _ => {}
                },
                "always" | "onDone" => self.transitions(val),
                "after" => match val {
                    Value::Object(after) => after.values().for_each(|t| self.transitions(t)),
                    other => self.transitions(other),
                },
                "invoke" => {
                    let list: Vec<&Value> = match val {
                        Value::Array(a) => a.iter().collect(),
                        one => vec![one],
                    };
                    for inv in list.into_iter().filter_map(Value::as_object) {
                        self.invoke(inv);
                    }
                }
                "entry" | "exit" => self.actions(val),
                "states" => {
                    if let Value::Object(children) = val {
                        for (ck, child) in children {
                            let cp = if path.is_empty() { ck.clone() } else { format!("{path}.{ck}") };
                            self.state(child, &cp, false);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn invoke(&mut self, inv: &Map<String, Value>) {
        if let Some(Value::String(id)) = inv.get("id") {
            let ty = match inv.get("src") {
                Some(Value::String(src)) if !src.is_empty() => src.as_str(),
                Some(Value::Object(src)) if !src.contains_key("states") => match src.get("type").and_then(Value::as_str) {
                    Some(t) if !t.is_empty() && !t.starts_with("xstate.") => t,
                    _ => id.as_str(),
                },
                _ => id.as_str(),
            };
            self.invokes.insert(id.clone(), ty.to_string());
        }
        for (k, val) in inv {
            match k.as_str() {
                "data" | "autoForward" | "forward" => note(&mut self.v4, k.clone()),
                "input" | "onSnapshot" | "systemId" => note(&mut self.v5, k.clone()),
                "onDone" | "onError" => self.transitions(val),
                _ => {}
            }
        }
    }

    fn transitions(&mut self, v: &Value) {
        match v {
            Value::Array(a) => a.iter().for_each(|t| self.transition(t)),
            one => self.transition(one),
        }
    }

    fn transition(&mut self, v: &Value) {
        let Some(t) = v.as_object() else { return };
        for (k, val) in t {
            match k.as_str() {
                "cond" | "internal" | "in" => note(&mut self.v4, k.clone()),
                "guard" | "reenter" => note(&mut self.v5, k.clone()),
                "actions" => self.actions(val),
                _ => {}
            }
        }
    }

    fn actions(&mut self, v: &Value) {
        let list: Vec<&Value> = match v {
            Value::Array(a) => a.iter().collect(),
            one => vec![one],
        };
        for a in list {
            match a.get("type").and_then(Value::as_str) {
                Some(t @ ("xstate.send" | "xstate.choose" | "xstate.pure" | "xstate.start" | "xstate.stop")) => note(&mut self.v4, t.to_string()),
                Some(t @ ("xstate.sendTo" | "xstate.enqueueActions" | "xstate.spawnChild" | "xstate.stopChild" | "xstate.emit")) => note(&mut self.v5, t.to_string()),
                _ => {}
            }
        }
    }

    /// The id XState knows the state at `path` by: its own, or the
    /// machine's id and its path.
    pub fn state_id(&self, machine_id: &str, path: &str) -> String {
        match self.declared.get(path) {
            Some(id) => id.clone(),
            None => join(machine_id, path),
        }
    }

    /// The path of the state a target names from the state at `source`, as
    /// XState resolves it (`#id`, `#id.child`, `#machine.path`, `.child`, or a
    /// sibling by its key or path), if there is such a state.
    pub fn resolve(&self, machine_id: &str, source: &str, target: &str) -> Option<String> {
        let found = if let Some(rest) = target.strip_prefix('#') {
            if let Some(p) = self.ids.get(rest) {
                p.clone()
            } else if rest == machine_id {
                String::new()
            } else if let Some(p) = rest.strip_prefix(machine_id).and_then(|r| r.strip_prefix('.')) {
                p.to_string()
            } else {
                let (head, tail) = rest.split_once('.')?;
                join(self.ids.get(head)?, tail)
            }
        } else if let Some(rest) = target.strip_prefix('.') {
            join(source, rest)
        } else {
            let parent = source.rsplit_once('.').map_or("", |(p, _)| p);
            join(parent, target)
        };
        self.paths.contains(&found).then_some(found)
    }
}

/// Whether a transition names a target without `#` or `.`: from the machine
/// itself only XState 4 resolves it (among the machine's children); XState 5
/// refuses it.
fn bare_target(ts: &Value) -> bool {
    let list: Vec<&Value> = match ts {
        Value::Array(a) => a.iter().collect(),
        one => vec![one],
    };
    list.into_iter().any(|t| {
        let target = match t {
            Value::Object(o) => o.get("target").unwrap_or(&Value::Null),
            other => other,
        };
        match target {
            Value::String(s) => !s.starts_with(['#', '.']),
            Value::Array(a) => a.iter().filter_map(Value::as_str).any(|s| !s.starts_with(['#', '.'])),
            _ => false,
        }
    })
}

/// Add an idiom to a list, once, in the order first found.
fn note(list: &mut Vec<String>, idiom: String) {
    if !list.contains(&idiom) {
        list.push(idiom);
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `*`, or a partial wildcard such as `mouse.*` (XState 5).
pub(super) fn is_wildcard(event: &str) -> bool {
    event == "*" || event.ends_with(".*")
}

/// Whether `state` is `ancestor` or inside it (dotted paths, "" the machine).
pub(super) fn is_within(state: &str, ancestor: &str) -> bool {
    ancestor.is_empty() || state == ancestor || state.strip_prefix(ancestor).is_some_and(|r| r.starts_with('.'))
}
