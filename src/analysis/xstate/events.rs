//! Events as XState names them where idem names them otherwise: XState 4's
//! `on` written as a list, wildcard descriptors, and the events of an invoked
//! service's completion named directly.
//!
//! - `on: [{ event: "X", target: "y" }, ...]` (XState 4) is read by event, in
//!   the order written.
//! - A wildcard (`"*"`, or XState 5's partial `"mouse.*"`) is read as each event
//!   the machine names elsewhere that it matches, tried after the state's own
//!   transitions for that event, as XState tries it. An event the machine names
//!   nowhere is refused by idem (`unknown_event_type`) rather than taken by the
//!   wildcard, so a wildcard that matches no named event is left out.
//! - `done.invoke.<id>` / `error.platform.<id>` (XState 4) and
//!   `xstate.done.actor.<id>` / `xstate.error.actor.<id>` (XState 5) are the
//!   completion events of the invoke with that id: they become the events of
//!   its effect, `<src>.succeeded` / `<src>.failed` (see [`super::invoke`]), and
//!   XState 4's `done.state.<id>` becomes `xstate.done.state.<id>`.

use super::{merge, outline, Importer};
use crate::analyze::Severity;
use serde_json::{Map, Value};

impl Importer {
    /// XState 4's `on` as a list of transitions that each name their `event`.
    pub(super) fn on_list(&mut self, list: &[Value], path: &str, spath: &str) -> Map<String, Value> {
        self.diag(
            Severity::Info,
            spath,
            None,
            path,
            "`on` written as a list of transitions, each with its `event`, is XState v4 syntax; read by event, in the order written".into(),
            "",
        );
        let mut on = Map::new();
        for (i, t) in list.iter().enumerate() {
            let ip = format!("{path}[{i}]");
            let Some((event, rest)) = t.as_object().and_then(|o| {
                let event = o.get("event")?.as_str()?;
                let rest: Map<String, Value> = o.iter().filter(|(k, _)| k.as_str() != "event").map(|(k, v)| (k.clone(), v.clone())).collect();
                Some((event.to_string(), rest))
            }) else {
                self.lost(t);
                self.diag(Severity::Warning, spath, None, &ip, "a transition of an `on` list needs a string `event`; left out".into(), "");
                continue;
            };
            match on.get_mut(&event) {
                Some(Value::Array(a)) => a.push(Value::Object(rest)),
                _ => {
                    on.insert(event, Value::Array(vec![Value::Object(rest)]));
                }
            }
        }
        on
    }

    /// The event idem knows `event` by, and a note when it is rewritten.
    pub(super) fn completion_event(&self, event: &str) -> (String, Option<String>) {
        let of_invoke = [
            ("done.invoke.", "succeeded"),
            ("error.platform.", "failed"),
            ("xstate.done.actor.", "succeeded"),
            ("xstate.error.actor.", "failed"),
        ];
        for (prefix, suffix) in of_invoke {
            let Some(id) = event.strip_prefix(prefix) else { continue };
            let Some(ty) = self.outline.invokes.get(id) else { continue };
            let renamed = format!("{ty}.{suffix}");
            let note = format!(
                "\"{event}\" is the completion of the invoke \"{id}\", which idem runs as an effect `{ty}`; read as \"{renamed}\" \
                 (taken for any invocation of it, a stale one included, unlike its onDone/onError)"
            );
            return (renamed, Some(note));
        }
        if let Some(id) = event.strip_prefix("done.state.") {
            let renamed = format!("xstate.done.state.{id}");
            return (renamed.clone(), Some(format!("\"{event}\" is XState v4's name of a state's done event; read as \"{renamed}\"")));
        }
        (event.to_string(), None)
    }

    /// A wildcard's transitions, added to each named event it matches (see the module's documentation).
    pub(super) fn wildcard(&mut self, map: &mut Map<String, Value>, descriptor: &str, ts: &Value, path: &str, spath: &str) {
        let prefix = descriptor.strip_suffix('*').unwrap_or("");
        let matching: Vec<String> = self
            .outline
            .events
            .iter()
            .filter(|e| !outline::is_wildcard(e) && (e.starts_with(prefix) || prefix.strip_suffix('.') == Some(e.as_str())))
            .map(|e| self.completion_event(e).0)
            .collect();
        if matching.is_empty() {
            self.lost(ts);
            let message = format!("wildcard event descriptor \"{descriptor}\" matches no event the machine names; left out");
            self.diag(Severity::Warning, spath, Some(descriptor), path, message, "Name each event the state accepts.");
            return;
        }
        let Some(t) = self.transitions(ts, path, spath, Some(descriptor)) else { return };
        let message = format!(
            "wildcard event descriptor \"{descriptor}\" is read as the {} event(s) the machine names that it matches ({}), each tried after \
             this state's own transitions for it; an event the machine names nowhere is refused by idem (unknown_event_type) rather than \
             taken here",
            matching.len(),
            matching.join(", ")
        );
        let message = if self.v4 {
            message
                + ". Where the state holds parallel regions, a region with no transition for the event takes the wildcard's even \
                   while another region takes the event, as in XState 5; XState 4 takes it only when no region does"
        } else {
            message
        };
        self.diag(Severity::Warning, spath, Some(descriptor), path, message, "Name each event the state accepts.");
        for event in matching {
            merge(map, &event, t.clone());
        }
    }
}
