//! Guards and actions the host gives as functions (`new Machine(definition,
//! { guards, actions })` in JavaScript): the analysis cannot read them, and
//! says so, one `opaque_implementation` finding for each use, pointing at the
//! data form (`implementations` in the definition), which it reads like inline code.

use super::findings::{Finding, Severity};
use super::graph::action_lists;
use crate::host::HostUse;
use crate::machine::{Action, Machine, StateIdx, Transition};

pub(super) fn findings(m: &Machine) -> Vec<Finding> {
    let mut out = Vec::new();
    for (actions, _, state, t) in action_lists(m) {
        if let Some(h) = t.and_then(|t| t.host_guard.as_ref()) {
            out.push(finding(m, state, t, h));
        }
        for a in actions {
            if let Action::Host(h) = a {
                out.push(finding(m, state, t, h));
            }
        }
    }
    out
}

fn finding(m: &Machine, state: StateIdx, t: Option<&Transition>, h: &HostUse) -> Finding {
    let (section, name) = h.name.split_once('.').unwrap_or(("", h.name.as_str()));
    let kind = if section == "guards" { "guard" } else { "action" };
    let data = if section == "guards" { "a JSONLogic expression" } else { "a list of idem actions" };
    Finding {
        code: "opaque_implementation".into(),
        severity: Severity::Info,
        state: m.states[state].path.clone(),
        event: None,
        transitions: t.map(|t| vec![t.json_path.clone()]).unwrap_or_default(),
        site: Some(h.path.clone()),
        message: format!("{kind} `{name}` is a function, which the analysis cannot read: it sees only where it is used"),
        fix: format!("Give it as data ({data}) in the definition's `implementations.{section}.{name}` for the analysis to read it."),
        retention_ms: None,
        cycle: Vec::new(),
        witness: None,
    }
}
