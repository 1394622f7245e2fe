//! Hazard analysis: an `assign` that does arithmetic on an event payload field
//! no schema declares numeric and requires (`unvalidated_payload`, a warning).
//! Such a field may arrive as `"abc"`, or not at all (a raised event has no
//! payload unless it gives one); arithmetic on it fails the event
//! (`expression_failed`: a missing value is null, never 0) rather than storing
//! a wrong number, but the machine should say what it accepts: declare the
//! field `{"type": "number"}` and required in the event's payload schema
//! (`events`, src/engine/schema.rs) and the engine refuses the payload up
//! front (`invalid_payload`). A field read with a default
//! (`{"var": ["event.payload.tip", 0]}`) need not be required. A raised event
//! is not checked against the schema: a `raise` whose payload does not give
//! the field is a finding of its own.

use crate::analyze::{Finding, Severity};
use crate::machine::{Action, Machine};
use serde_json::Value;

const ARITHMETIC: &[&str] = &["+", "-", "*", "/", "%", "min", "max"];

/// One finding per assigned field and payload field used in its arithmetic
/// that the event's schema leaves open, and one per raise of that event that
/// does not give the field.
pub fn findings(m: &Machine) -> Vec<Finding> {
    let raised = raises(m);
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
                            let at = Site { state: &s.path, event, transition: &t.json_path, expr: m.exprs.path(*e), assigned: name, field: &f };
                            if !numeric.contains(&f) {
                                out.push(finding(m, &at, Gap::NotNumeric));
                            } else if !defaulted && !required.contains(&f) {
                                out.push(finding(m, &at, Gap::NotRequired));
                            }
                            // A raised event is not checked against the schema: one that
                            // does not give the field fails whatever the schema says.
                            let lacking = raised.iter().filter(|r| r.event_type == event.as_str() && !defaulted && !r.gives(&f));
                            for r in lacking {
                                out.push(finding(m, &at, Gap::Raised(&r.site)));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// Where arithmetic reads a payload field: the transition, the assign and the field.
struct Site<'a> {
    state: &'a str,
    event: &'a str,
    transition: &'a str,
    expr: &'a str,
    assigned: &'a str,
    field: &'a str,
}

/// What lets a field arithmetic reads arrive as no number.
#[derive(Clone, Copy, PartialEq)]
enum Gap<'a> {
    /// Not declared a number: `"abc"` or a missing field gets through.
    NotNumeric,
    /// Declared a number but not required: a missing field gets through.
    NotRequired,
    /// Raised without it, at this path (a raised event's payload is not checked).
    Raised(&'a str),
}

fn finding(m: &Machine, at: &Site, gap: Gap) -> Finding {
    let Site { state, event, transition, expr, assigned, field } = *at;
    let declared = match (gap, m.schemas.get(event).is_some()) {
        (Gap::Raised(site), _) => format!("{event} is raised without it at {site}, where no schema checks a payload"),
        (Gap::NotRequired, _) => format!("its schema declares {field} numeric but does not require it"),
        (_, true) => format!("its schema does not declare {field} numeric"),
        (_, false) => format!("no schema declares {field} numeric"),
    };
    let arrives = match gap {
        Gap::Raised(_) => "taken here, that raised event".to_string(),
        Gap::NotRequired => format!("a payload without {field} (a raised event has none unless it gives one)"),
        Gap::NotNumeric => format!("a payload such as \"abc\", or one without {field} (a raised event has none unless it gives one),"),
    };
    let fix = match gap {
        Gap::Raised(site) => format!("give {field} in the payload of the raise at {site}, or read it with a default: {{\"var\": [\"event.payload.{field}\", 0]}}"),
        _ => format!(
            "declare the payload in the machine's events: {{\"{event}\": {{\"payload\": {{\"type\": \"object\", \"required\": [\"{field}\"], \
             \"properties\": {{\"{field}\": {{\"type\": \"number\"}}}}}}}}}}, or read it with a default: \
             {{\"var\": [\"event.payload.{field}\", 0]}}"
        ),
    };
    Finding {
        code: "unvalidated_payload".to_string(),
        severity: Severity::Warning,
        state: state.to_string(),
        event: Some(event.to_string()),
        transitions: vec![transition.to_string()],
        site: Some(expr.to_string()),
        message: format!(
            "context.{assigned} is computed with arithmetic on event.payload.{field}, and {declared}: {arrives} fails the event \
             (expression_failed: a missing value is null, never 0){}",
            if matches!(gap, Gap::Raised(_)) { "" } else { " instead of being refused as invalid" }
        ),
        fix,
        retention_ms: None,
        cycle: Vec::new(),
        witness: None,
    }
}

/// A `raise` of the machine: its event type, the payload it writes (`None`:
/// none) and where it is.
struct Raise<'a> {
    event_type: &'a str,
    payload: Option<&'a Value>,
    site: String,
}

impl Raise<'_> {
    /// Whether the payload gives `field` (a dotted path), or may: a payload
    /// computed by an expression is taken to give it.
    fn gives(&self, field: &str) -> bool {
        let Some(p) = self.payload else { return false };
        let mut parts = field.split('.');
        let first = parts.next().unwrap_or_default();
        match p {
            // Data: the field is there, and not null.
            Value::Object(o) if o.len() == 1 && o.contains_key(crate::expr::PRESERVE) => {
                let mut cur = &o[crate::expr::PRESERVE];
                for part in field.split('.') {
                    match cur.get(part) {
                        Some(v) => cur = v,
                        None => return false,
                    }
                }
                !cur.is_null()
            }
            // Built from expressions: the member is there.
            Value::Object(o) if o.len() == 1 && o.contains_key(crate::expr::EACH_KEY) => o[crate::expr::EACH_KEY].get(first).is_some(),
            Value::Object(o) if o.len() != 1 => o.contains_key(first),
            _ => true,
        }
    }
}

/// Every `raise` of the machine, in entry and exit actions and on transitions.
fn raises(m: &Machine) -> Vec<Raise<'_>> {
    fn add<'m>(m: &'m Machine, actions: &'m [Action], site: &str, out: &mut Vec<Raise<'m>>) {
        for (i, a) in actions.iter().enumerate() {
            if let Action::Raise(r) = a {
                let site = r.payload.map_or_else(|| format!("{site}[{i}]"), |p| m.exprs.path(p).to_string());
                out.push(Raise { event_type: &r.event_type, payload: r.payload.map(|p| m.exprs.source(p)), site });
            }
        }
    }
    let mut out = Vec::new();
    for s in &m.states {
        let within = |key: &str| if s.json_path.is_empty() { key.to_string() } else { format!("{}.{key}", s.json_path) };
        add(m, &s.entry, &within("entry"), &mut out);
        add(m, &s.exit, &within("exit"), &mut out);
        let transitions = s.on.iter().flat_map(|(_, ts)| ts).chain(&s.always).chain(s.after.iter().flat_map(|(_, ts)| ts));
        for t in transitions {
            add(m, &t.actions, &format!("{}.actions", t.json_path), &mut out);
        }
    }
    out
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
