//! Hazard analysis: an `assign` that does arithmetic on an event payload field
//! no schema declares numeric (`unvalidated_payload`, a warning). Such a field
//! may arrive as `"abc"` or `null`; arithmetic on it fails the event
//! (`expression_failed`) rather than storing a wrong number, but the machine
//! should say what it accepts: declare the field `{"type": "number"}` in the
//! event's payload schema (`events`, src/engine/schema.rs) and the engine refuses the
//! payload up front (`invalid_payload`).

use crate::analyze::{Finding, Severity};
use crate::machine::{Action, Machine};
use serde_json::Value;

const ARITHMETIC: &[&str] = &["+", "-", "*", "/", "%", "min", "max"];

/// One finding per assigned field and payload field used in its arithmetic.
pub fn findings(m: &Machine) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in &m.states {
        for (event, ts) in &s.on {
            let numeric = m.schemas.get(event).map(crate::schema::numeric_fields).unwrap_or_default();
            for t in ts {
                for a in &t.actions {
                    let Action::Assign(fields) = a else { continue };
                    for (name, e) in fields {
                        let mut used = Vec::new();
                        arithmetic_on_payload(m.exprs.source(*e), &mut used);
                        for f in used.into_iter().filter(|f| !numeric.contains(f)) {
                            out.push(finding(m, &s.path, event, &t.json_path, m.exprs.path(*e), name, &f));
                        }
                    }
                }
            }
        }
    }
    out
}

fn finding(m: &Machine, state: &str, event: &str, transition: &str, site: &str, name: &str, field: &str) -> Finding {
    let declared = if m.schemas.get(event).is_some() { "its schema does not declare" } else { "no schema declares" };
    Finding {
        code: "unvalidated_payload".to_string(),
        severity: Severity::Warning,
        state: state.to_string(),
        event: Some(event.to_string()),
        transitions: vec![transition.to_string()],
        site: Some(site.to_string()),
        message: format!(
            "context.{name} is computed with arithmetic on event.payload.{field}, and {declared} {field} numeric: a payload \
             such as \"abc\" fails the event instead of being refused as invalid"
        ),
        fix: format!(
            "declare the payload in the machine's events: {{\"{event}\": {{\"payload\": {{\"type\": \"object\", \"required\": [\"{field}\"], \
             \"properties\": {{\"{field}\": {{\"type\": \"number\"}}}}}}}}}}"
        ),
        retention_ms: None,
        cycle: Vec::new(),
        witness: None,
    }
}

/// The payload fields (`amount`, `line.price`) read directly as operands of an
/// arithmetic operator anywhere in `v`.
fn arithmetic_on_payload(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, args) in o {
                if ARITHMETIC.contains(&k.as_str()) {
                    let operands: Vec<&Value> = match args {
                        Value::Array(a) => a.iter().collect(),
                        x => vec![x],
                    };
                    for x in operands {
                        if let Some(f) = payload_var(x) {
                            if !out.iter().any(|o| o == f) {
                                out.push(f.to_string());
                            }
                        }
                    }
                }
                arithmetic_on_payload(args, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| arithmetic_on_payload(x, out)),
        _ => {}
    }
}

/// `{"var": "event.payload.X"}` (or `["event.payload.X", default]`) as `X`.
fn payload_var(v: &Value) -> Option<&str> {
    let name = match v.get("var")? {
        Value::String(s) => s.as_str(),
        Value::Array(a) => a.first()?.as_str()?,
        _ => return None,
    };
    name.strip_prefix("event.payload.")
}
