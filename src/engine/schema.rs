//! Event payload schemas: the machine's `events` declarations
//! (`"events": { "PAY": { "payload": <JSON Schema> } }`) and the subset of JSON
//! Schema (draft 2020-12) the engine validates a payload against before any
//! transition.
//!
//! The subset: `type`, `required`, `properties`, `additionalProperties`,
//! `items`, `enum`, `const`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`, `minLength`, `maxLength`, `minItems`, `maxItems`, the
//! boolean schemas `true` and `false`, and the annotations `$schema`,
//! `$comment`, `title`, `description`, `default`, `examples`, `deprecated`,
//! `readOnly`, `writeOnly` (read, never checked). Any other keyword — `pattern`
//! among them: the engine carries no regular expression engine, and one that
//! backtracks would let a payload spend the event's time — is refused when
//! the definition is loaded (`invalid_definition`, naming the keyword's path), so
//! a schema never silently checks less than it says. The official
//! JSON-Schema-Test-Suite cases of these keywords run in `cargo test`
//! (tests/schema_suite.rs; the groups that use other keywords are pinned as
//! refused). Our own validator rather than the `jsonschema` crate, which brings
//! a regular expression engine and URL handling the engine has no use for
//! (benches/RESULTS.md, entry 44). `crate::unvalidated` (feature `analysis`)
//! is the lint beside it: payload arithmetic no schema guards.
//!
//! A schema is checked once on load and kept as written; validation walks it
//! with the payload and stops at the first violation, whose path
//! (`payload.items[2].amount`) the `invalid_payload` error carries.

use crate::error::{Code, Error, Result};
use crate::machine::{NameSet, DONE_EVENT_PREFIX, EFFECT_REPORT_PREFIX, INIT_EVENT, TIMER_EVENT};
use serde_json::{Map, Number, Value};

/// The declared payload schemas by event type, in the order written.
#[derive(Debug, Default)]
pub struct Schemas(Map<String, Value>);

const EVENT_KEYS: &[&str] = &["payload", "description"];
const ANNOTATIONS: &[&str] =
    &["$schema", "$comment", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"];
const TYPES: &[&str] = &["null", "boolean", "object", "array", "number", "string", "integer"];

impl Schemas {
    /// The machine's `events` member: each event type's declaration, its
    /// payload schema checked against the subset.
    pub fn load(v: Option<&Value>) -> Result<Schemas> {
        let mut out = Map::new();
        let Some(v) = v else { return Ok(Schemas(out)) };
        let Some(o) = v.as_object() else { return Err(refuse("events", "events must be an object")) };
        for (ty, decl) in o {
            let path = format!("events.{ty}");
            if ty.is_empty() {
                return Err(refuse(&path, "an event type must be a non-empty string"));
            }
            let Some(d) = decl.as_object() else { return Err(refuse(&path, "an event declaration must be an object")) };
            if let Some(k) = d.keys().find(|k| !EVENT_KEYS.contains(&k.as_str())) {
                return Err(refuse(&format!("{path}.{k}"), "unknown key in an event declaration"));
            }
            let schema = d.get("payload").cloned().unwrap_or(Value::Bool(true));
            check_schema(&schema, &format!("{path}.payload"))?;
            out.insert(ty.clone(), schema);
        }
        Ok(Schemas(out))
    }

    /// The declared event types, in the order written.
    pub fn types(&self) -> impl Iterator<Item = &String> {
        self.0.keys()
    }

    /// The payload schema of `event_type`, if one is declared.
    pub fn get(&self, event_type: &str) -> Option<&Value> {
        self.0.get(event_type)
    }

    /// `invalid_payload` at the first violation of `event_type`'s schema, if it has one.
    pub fn check(&self, event_type: &str, payload: &Value) -> Result<()> {
        match self.0.get(event_type) {
            Some(schema) => validate(schema, payload, "payload"),
            None => Ok(()),
        }
    }
}

fn refuse(path: &str, message: &str) -> Error {
    Error::at(Code::InvalidDefinition, path, message)
}

/// Refuse a schema that is not in the subset, or whose keywords have values
/// of the wrong kind.
fn check_schema(s: &Value, path: &str) -> Result<()> {
    let o = match s {
        Value::Bool(_) => return Ok(()),
        Value::Object(o) => o,
        _ => return Err(refuse(path, "a schema must be an object or a boolean")),
    };
    for (k, v) in o {
        let at = format!("{path}.{k}");
        let ok = match k.as_str() {
            "type" => match v {
                Value::String(t) => TYPES.contains(&t.as_str()),
                Value::Array(a) => a.iter().all(|t| t.as_str().is_some_and(|t| TYPES.contains(&t))),
                _ => false,
            },
            "required" => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            "properties" => match v.as_object() {
                Some(p) => {
                    for (name, sub) in p {
                        check_schema(sub, &format!("{at}.{name}"))?;
                    }
                    true
                }
                None => false,
            },
            "additionalProperties" | "items" => {
                check_schema(v, &at)?;
                true
            }
            "enum" => v.is_array(),
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => v.is_number(),
            "minLength" | "maxLength" | "minItems" | "maxItems" => count(v).is_some(),
            "const" => true,
            _ if ANNOTATIONS.contains(&k.as_str()) => true,
            _ => {
                return Err(refuse(&at, "unsupported schema keyword: payload schemas support type, required, properties, additionalProperties, items, enum, const, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems and maxItems"))
            }
        };
        if !ok {
            return Err(refuse(&at, "schema keyword has a value of the wrong kind"));
        }
    }
    Ok(())
}

/// A non-negative integer (`2` or `2.0`), as a count.
fn count(v: &Value) -> Option<u64> {
    let n = v.as_number()?;
    n.as_u64().or_else(|| n.as_f64().filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1e19).map(|f| f as u64))
}

fn violation(path: &str, message: &str) -> Error {
    Error::at(Code::InvalidPayload, path, message)
}

fn validate(s: &Value, v: &Value, path: &str) -> Result<()> {
    let o = match s {
        Value::Bool(true) => return Ok(()),
        Value::Object(o) => o,
        _ => return Err(violation(path, "event payload: no value is allowed here")),
    };
    if let Some(t) = o.get("type") {
        let fits = |t: &Value| t.as_str().is_some_and(|t| has_type(v, t));
        let ok = match t {
            Value::Array(a) => a.iter().any(fits),
            t => fits(t),
        };
        if !ok {
            return Err(violation(path, "event payload: value has the wrong type"));
        }
    }
    if o.get("const").is_some_and(|c| !same(c, v)) {
        return Err(violation(path, "event payload: value is not the constant the schema requires"));
    }
    if let Some(Value::Array(options)) = o.get("enum") {
        if !options.iter().any(|c| same(c, v)) {
            return Err(violation(path, "event payload: value is not one of the schema's enum"));
        }
    }
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            let bound = |k: &str| o.get(k).and_then(Value::as_f64);
            let out = bound("minimum").is_some_and(|b| x < b)
                || bound("maximum").is_some_and(|b| x > b)
                || bound("exclusiveMinimum").is_some_and(|b| x <= b)
                || bound("exclusiveMaximum").is_some_and(|b| x >= b);
            if out {
                return Err(violation(path, "event payload: number is out of the schema's range"));
            }
        }
        Value::String(text) => {
            let len = text.chars().count() as u64;
            if out_of(o, "minLength", "maxLength", len) {
                return Err(violation(path, "event payload: string length is out of the schema's range"));
            }
        }
        Value::Array(a) => {
            if out_of(o, "minItems", "maxItems", a.len() as u64) {
                return Err(violation(path, "event payload: array length is out of the schema's range"));
            }
            if let Some(items) = o.get("items") {
                for (i, x) in a.iter().enumerate() {
                    validate(items, x, &format!("{path}[{i}]"))?;
                }
            }
        }
        Value::Object(members) => check_object(o, members, path)?,
        _ => {}
    }
    Ok(())
}

fn out_of(o: &Map<String, Value>, min: &str, max: &str, n: u64) -> bool {
    o.get(min).and_then(count).is_some_and(|b| n < b) || o.get(max).and_then(count).is_some_and(|b| n > b)
}

fn check_object(o: &Map<String, Value>, members: &Map<String, Value>, path: &str) -> Result<()> {
    if let Some(Value::Array(req)) = o.get("required") {
        if let Some(missing) = req.iter().filter_map(Value::as_str).find(|k| !members.contains_key(*k)) {
            return Err(violation(&member(path, missing), "event payload: required member is missing"));
        }
    }
    let props = o.get("properties").and_then(Value::as_object);
    let extra = o.get("additionalProperties");
    for (k, x) in members {
        let sub = props.and_then(|p| p.get(k)).or(extra);
        if let Some(sub) = sub {
            validate(sub, x, &member(path, k))?;
        }
    }
    Ok(())
}

/// `path.key`, or `path["key"]` when the key is not a plain name.
fn member(path: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$');
    if plain {
        format!("{path}.{key}")
    } else {
        let mut quoted = Vec::new();
        crate::json::write_str(key, &mut quoted);
        format!("{path}[{}]", String::from_utf8_lossy(&quoted))
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match (t, v) {
        ("null", Value::Null) | ("boolean", Value::Bool(_)) | ("object", Value::Object(_)) => true,
        ("array", Value::Array(_)) | ("string", Value::String(_)) | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => is_integer(n),
        _ => false,
    }
}

fn is_integer(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// JSON Schema's equality: numbers by value (`1` is `1.0`), objects whatever
/// their members' order.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
            (Some(p), Some(q), _, _) => p == q,
            (_, _, Some(p), Some(q)) => p == q,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| same(p, q)))
        }
        _ => a == b,
    }
}

/// The payload members `schema` declares as numbers (`number` or `integer`
/// and nothing else), as dotted paths (`amount`, `line.price`): what
/// hazard analysis counts as validated for arithmetic.
pub fn numeric_fields(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_numeric(schema, "", &mut out);
    out
}

fn collect_numeric(s: &Value, prefix: &str, out: &mut Vec<String>) {
    let Some(props) = s.get("properties").and_then(Value::as_object) else { return };
    for (k, sub) in props {
        let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        let numeric = |t: &Value| t.as_str().is_some_and(|t| t == "number" || t == "integer");
        let declared = match sub.get("type") {
            Some(Value::Array(a)) => !a.is_empty() && a.iter().all(numeric),
            Some(t) => numeric(t),
            None => false,
        };
        if declared {
            out.push(path.clone());
        }
        collect_numeric(sub, &path, out);
    }
}

/// Declared event types are event types the machine knows, whether or not a
/// state accepts them yet (an undeclared one no state accepts stays
/// `unknown_event_type`). The engine's own types cannot be declared.
pub(crate) fn declare(schemas: &Schemas, event_types: &mut NameSet, outcome_types: &NameSet) -> Result<()> {
    for ty in schemas.types() {
        let engine = ty.starts_with(EFFECT_REPORT_PREFIX) || ty == TIMER_EVENT || ty.starts_with(DONE_EVENT_PREFIX) || ty == INIT_EVENT;
        if engine || outcome_types.contains(ty) {
            return Err(refuse(&format!("events.{ty}"), "the engine raises this event type itself; it cannot be declared"));
        }
        if !event_types.contains(ty) {
            event_types.insert(ty.clone());
        }
    }
    Ok(())
}

/// The payload members `schema` requires, as dotted paths (nested objects'
/// required members under their own): what hazard analysis fills in when it
/// makes payloads for an event.
pub fn required_fields(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_required(schema, "", &mut out);
    out
}

fn collect_required(s: &Value, prefix: &str, out: &mut Vec<String>) {
    let Some(req) = s.get("required").and_then(Value::as_array) else { return };
    for k in req.iter().filter_map(Value::as_str) {
        let path = if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
        if let Some(sub) = s.get("properties").and_then(|p| p.get(k)) {
            collect_required(sub, &path, out);
        }
        out.push(path);
    }
}
