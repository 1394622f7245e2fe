//! Hazard analysis: an `assign` that does arithmetic on an event payload field
//! no schema declares numeric and requires (`unvalidated_payload`, a warning).
//! Such a field may arrive as `"abc"`, or not at all (a raised event has no
//! payload unless it gives one); arithmetic on it fails the event
//! (`expression_failed`: a missing value is null, never 0) rather than storing
//! a wrong number, but the machine should say what it accepts: declare the
//! field `{"type": "number"}` and required in the event's payload schema
//! (`events`, src/engine/schema.rs) and the engine refuses the payload up
//! front (`invalid_payload`). A field read with a default
//! (`{"var": ["event.payload.tip", 0]}`) need not be required.

use crate::analyze::{Finding, Severity};
use crate::machine::{Action, Machine};
use serde_json::Value;

const ARITHMETIC: &[&str] = &["+", "-", "*", "/", "%", "min", "max"];

/// One finding per assigned field and payload field used in its arithmetic.
pub fn findings(m: &Machine) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in &m.states {
        for (event, ts) in &s.on {
            let schema = m.schemas.get(event);
            let numeric = schema.map(crate::schema::numeric_fields).unwrap_or_default();
            let required = schema.map(crate::schema::required_fields).unwrap_or_default();
            for t in ts {
                for a in &t.actions {
                    let Action::Assign(fields) = a else { continue };
                    for (name, e) in fields {
                        let mut used = Vec::new();
                        arithmetic_on_payload(m.exprs.source(*e), &mut used);
                        for (f, defaulted) in used {
                            let gap = if !numeric.contains(&f) {
                                Gap::NotNumeric
                            } else if !defaulted && !required.contains(&f) {
                                Gap::NotRequired
                            } else {
                                continue;
                            };
                            out.push(finding(m, &s.path, event, &t.json_path, m.exprs.path(*e), name, &f, gap));
                        }
                    }
                }
            }
        }
    }
    out
}

/// What the event's schema leaves open about a field arithmetic reads.
#[derive(Clone, Copy, PartialEq)]
enum Gap {
    /// Not declared a number: `"abc"` or a missing field gets through.
    NotNumeric,
    /// Declared a number but not required: a missing field gets through.
    NotRequired,
}

#[allow(clippy::too_many_arguments)]
fn finding(m: &Machine, state: &str, event: &str, transition: &str, site: &str, name: &str, field: &str, gap: Gap) -> Finding {
    let declared = match (gap, m.schemas.get(event).is_some()) {
        (Gap::NotRequired, _) => format!("its schema declares {field} numeric but does not require it"),
        (_, true) => format!("its schema does not declare {field} numeric"),
        (_, false) => format!("no schema declares {field} numeric"),
    };
    let arrives = match gap {
        Gap::NotRequired => format!("a payload without {field} (a raised event has none unless it gives one)"),
        Gap::NotNumeric => format!("a payload such as \"abc\", or one without {field} (a raised event has none unless it gives one),"),
    };
    Finding {
        code: "unvalidated_payload".to_string(),
        severity: Severity::Warning,
        state: state.to_string(),
        event: Some(event.to_string()),
        transitions: vec![transition.to_string()],
        site: Some(site.to_string()),
        message: format!(
            "context.{name} is computed with arithmetic on event.payload.{field}, and {declared}: {arrives} fails the event \
             (expression_failed: a missing value is null, never 0) instead of being refused as invalid"
        ),
        fix: format!(
            "declare the payload in the machine's events: {{\"{event}\": {{\"payload\": {{\"type\": \"object\", \"required\": [\"{field}\"], \
             \"properties\": {{\"{field}\": {{\"type\": \"number\"}}}}}}}}}}, or read it with a default: \
             {{\"var\": [\"event.payload.{field}\", 0]}}"
        ),
        retention_ms: None,
        cycle: Vec::new(),
        witness: None,
    }
}

/// The payload fields (`amount`, `line.price`) read directly as operands of an
/// arithmetic operator anywhere in `v`, each with whether it is read with a
/// default (when it is read both ways, without).
fn arithmetic_on_payload(v: &Value, out: &mut Vec<(String, bool)>) {
    match v {
        Value::Object(o) if o.contains_key(crate::expr::PRESERVE) && o.len() == 1 => {}
        Value::Object(o) => {
            for (k, args) in o {
                if ARITHMETIC.contains(&k.as_str()) {
                    let operands: Vec<&Value> = match args {
                        Value::Array(a) => a.iter().collect(),
                        x => vec![x],
                    };
                    for x in operands {
                        if let Some((f, defaulted)) = payload_var(x) {
                            match out.iter_mut().find(|(o, _)| o == f) {
                                Some(seen) => seen.1 &= defaulted,
                                None => out.push((f.to_string(), defaulted)),
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

/// `{"var": "event.payload.X"}` as `(X, false)`, or with a default that is
/// not null (`["event.payload.X", 0]`) as `(X, true)`.
fn payload_var(v: &Value) -> Option<(&str, bool)> {
    let (name, defaulted) = match v.get("var")? {
        Value::String(s) => (s.as_str(), false),
        Value::Array(a) => (a.first()?.as_str()?, a.get(1).is_some_and(|d| !d.is_null())),
        _ => return None,
    };
    Some((name.strip_prefix("event.payload.")?, defaulted))
}
