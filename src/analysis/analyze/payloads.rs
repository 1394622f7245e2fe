//! Payloads: a few values per field, from what the expressions compare them with.

use super::exprs::{op, var_path};
use crate::machine::{Action, Machine};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

#[derive(Debug, Default, Clone)]
pub(super) struct FieldSpec {
    numeric: bool,
    consts: Vec<Value>,
    peers: Vec<String>,
    member_of: Vec<String>,
}

const NUMERIC_OPS: &[&str] = &["+", "-", "*", "/", "%", "<", ">", "<=", ">=", "min", "max"];
const COMPARE_OPS: &[&str] = &["==", "===", "!=", "!==", "<", ">", "<=", ">="];

fn payload_field(v: &Value) -> Option<String> {
    var_path(v).and_then(|p| p.strip_prefix("event.payload.")).map(str::to_string)
}

fn collect_specs(v: &Value, specs: &mut BTreeMap<String, FieldSpec>) {
    if let Some(f) = payload_field(v) {
        specs.entry(f).or_default();
        return;
    }
    if let Some((name, args)) = op(v) {
        if NUMERIC_OPS.contains(&name) {
            for a in &args {
                if let Some(f) = payload_field(a) {
                    specs.entry(f).or_default().numeric = true;
                }
            }
        }
        if COMPARE_OPS.contains(&name) && args.len() >= 2 {
            for (a, b) in [(args[0], args[1]), (args[1], args[0])] {
                let Some(f) = payload_field(a) else { continue };
                let spec = specs.entry(f).or_default();
                if let Some(c) = var_path(b).and_then(|p| p.strip_prefix("context.")) {
                    spec.peers.push(c.to_string());
                } else if !b.is_object() && !b.is_array() && !spec.consts.contains(b) {
                    spec.consts.push(b.clone());
                }
            }
        }
        if name == "in" && args.len() == 2 {
            if let (Some(f), Some(s)) = (payload_field(args[0]), var_path(args[1]).and_then(|p| p.strip_prefix("context."))) {
                specs.entry(f).or_default().member_of.push(s.to_string());
            }
        }
        for a in args {
            collect_specs(a, specs);
        }
        return;
    }
    match v {
        Value::Array(a) => a.iter().for_each(|x| collect_specs(x, specs)),
        Value::Object(o) => o.values().for_each(|x| collect_specs(x, specs)),
        _ => {}
    }
}

fn expressions_of(m: &Machine, actions: &[Action], out: &mut Vec<Value>) {
    for a in actions {
        match a {
            Action::Assign(fields) => out.extend(fields.iter().map(|(_, e)| m.exprs.source(*e).clone())),
            Action::Respond(e) => out.push(m.exprs.source(*e).clone()),
            Action::Raise(r) => out.extend(r.payload.iter().map(|e| m.exprs.source(*e).clone())),
            Action::Effect(d) => {
                out.extend(d.payload.iter().chain(d.key.iter()).map(|e| m.exprs.source(*e).clone()));
            }
            Action::Host(_) => {}
        }
    }
}

pub(super) fn payload_specs(m: &Machine) -> BTreeMap<String, BTreeMap<String, FieldSpec>> {
    // Expressions any event can reach: entry/exit actions and eventless transitions.
    let mut shared = Vec::new();
    for s in &m.states {
        expressions_of(m, &s.entry, &mut shared);
        expressions_of(m, &s.exit, &mut shared);
        for t in s.always.iter().chain(s.after.iter().flat_map(|(_, ts)| ts.iter())) {
            shared.extend(t.guard.map(|g| m.exprs.source(g).clone()));
            expressions_of(m, &t.actions, &mut shared);
        }
    }
    let mut out = BTreeMap::new();
    // The events outside sends, and those the outbox raises when an effect
    // completes (`<effect>.succeeded`, `.failed`: their guards may read what
    // the work reported).
    for e in m.event_types.iter().chain(m.outcome_types.iter()) {
        let mut exprs = shared.clone();
        for s in &m.states {
            for (ev, ts) in &s.on {
                if ev == e {
                    for t in ts {
                        exprs.extend(t.guard.map(|g| m.exprs.source(g).clone()));
                        expressions_of(m, &t.actions, &mut exprs);
                    }
                }
            }
        }
        let mut specs = BTreeMap::new();
        for x in &exprs {
            collect_specs(x, &mut specs);
        }
        // What the event's payload schema requires, and the numbers it declares.
        if let Some(schema) = m.schemas.get(e) {
            for f in crate::schema::required_fields(schema) {
                specs.entry(f).or_default();
            }
            for f in crate::schema::numeric_fields(schema) {
                specs.entry(f).or_default().numeric = true;
            }
        }
        // A field read as `event.payload.a.b` also makes `a` appear; keep the leaves.
        let keys: Vec<String> = specs.keys().cloned().collect();
        for k in &keys {
            if keys.iter().any(|o| o.starts_with(&format!("{k}."))) {
                specs.remove(k);
            }
        }
        out.insert(e.clone(), specs);
    }
    out
}

fn get_path<'a>(v: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted.split('.').try_fold(v, |cur, k| match cur {
        Value::Object(o) => o.get(k),
        Value::Array(a) => k.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

fn set_path(v: &mut Value, dotted: &str, x: Value) {
    let parts: Vec<&str> = dotted.split('.').collect();
    let mut cur = v;
    for (i, p) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let o = cur.as_object_mut().expect("made an object");
        if i + 1 == parts.len() {
            o.insert(p.to_string(), x);
            return;
        }
        cur = o.entry(p.to_string()).or_insert_with(|| Value::Object(Map::new()));
    }
}

fn generic(spec: &FieldSpec, variant: usize) -> Value {
    if let Some(Value::Bool(b)) = spec.consts.first() {
        return Value::Bool(!b);
    }
    if spec.numeric {
        json!([40, 60, 100][variant % 3])
    } else {
        json!(["a1", "b2", "c3"][variant % 3])
    }
}

/// A few payloads for one event type in one context.
pub(super) fn payloads(specs: &BTreeMap<String, FieldSpec>, context: &Value) -> Vec<Value> {
    if specs.is_empty() {
        return vec![json!({})];
    }
    let mut out: Vec<Value> = Vec::new();
    for variant in 0..4 {
        let mut p = json!({});
        for (f, spec) in specs {
            let peer = spec.peers.iter().find_map(|c| get_path(context, c)).filter(|v| !v.is_null()).cloned();
            let member =
                spec.member_of.iter().find_map(|s| get_path(context, s).and_then(Value::as_array).and_then(|a| a.first())).cloned();
            let v = match variant {
                0 => peer.or_else(|| spec.consts.first().cloned()).unwrap_or_else(|| generic(spec, 0)),
                1 => peer.or_else(|| spec.consts.get(1).cloned()).unwrap_or_else(|| generic(spec, 1)),
                2 => generic(spec, 2),
                _ => match member {
                    Some(m) => m,
                    None => continue,
                },
            };
            set_path(&mut p, f, v);
        }
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_follow_what_guards_compare() {
        let mut specs = BTreeMap::new();
        collect_specs(&json!({ "==": [{ "var": "event.payload.round" }, { "var": "context.round" }] }), &mut specs);
        collect_specs(&json!({ "+": [{ "var": "context.paid" }, { "var": "event.payload.amount" }] }), &mut specs);
        collect_specs(&json!({ "==": [{ "var": "event.payload.kind" }, "refund"] }), &mut specs);
        let ps = payloads(&specs, &json!({ "round": 7 }));
        assert_eq!(ps[0], json!({ "amount": 40, "kind": "refund", "round": 7 }));
        assert!(ps.iter().any(|p| p["amount"] == json!(60)));
        assert!(ps.iter().any(|p| p["round"] != json!(7)));
    }
}
