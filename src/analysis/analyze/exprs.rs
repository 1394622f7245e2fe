//! Reading expressions: the `var` paths a guard or an assign reads, whether
//! an assign accumulates, and the identified-set and round checks that make
//! a transition refuse its own repeat.

use super::graph::action_lists;
use crate::machine::{Action, Machine, Transition};
use serde_json::Value;

pub(super) fn var_path(v: &Value) -> Option<&str> {
    let o = v.as_object()?;
    if o.len() != 1 {
        return None;
    }
    match o.get("var")? {
        Value::String(s) => Some(s),
        Value::Array(a) => a.first()?.as_str(),
        _ => None,
    }
}

/// Every `var` path read by an expression.
fn vars(v: &Value, out: &mut Vec<String>) {
    if let Some(p) = var_path(v) {
        out.push(p.to_string());
        return;
    }
    match v {
        Value::Array(a) => a.iter().for_each(|x| vars(x, out)),
        Value::Object(o) => o.values().for_each(|x| vars(x, out)),
        _ => {}
    }
}

pub(super) fn reads(v: &Value, prefix: &str) -> bool {
    let mut vs = Vec::new();
    vars(v, &mut vs);
    vs.iter().any(|p| p == prefix || p.starts_with(&format!("{prefix}.")))
}

pub(super) fn op(v: &Value) -> Option<(&str, Vec<&Value>)> {
    let o = v.as_object()?;
    if o.len() != 1 {
        return None;
    }
    let (k, args) = o.iter().next()?;
    let args = match args {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    Some((k.as_str(), args))
}

const ACCUMULATING_OPS: &[&str] = &["+", "-", "*", "merge", "cat"];

/// Does `expr` compute a new value of `context.<field>` from its previous one
/// (`+`, `-`, `*`, `merge`, `cat` with the field as an operand)?
pub(super) fn accumulates(expr: &Value, field: &str) -> bool {
    let target = format!("context.{field}");
    fn walk(v: &Value, target: &str) -> bool {
        if let Some((name, args)) = op(v) {
            if ACCUMULATING_OPS.contains(&name) && args.iter().any(|a| var_path(a) == Some(target) || operand_chain(a, target)) {
                return true;
            }
            return args.iter().any(|a| walk(a, target));
        }
        match v {
            Value::Array(a) => a.iter().any(|x| walk(x, target)),
            _ => false,
        }
    }
    fn operand_chain(v: &Value, target: &str) -> bool {
        match op(v) {
            Some((name, args)) if ACCUMULATING_OPS.contains(&name) => {
                args.iter().any(|a| var_path(a) == Some(target) || operand_chain(a, target))
            }
            _ => false,
        }
    }
    walk(expr, &target)
}

/// Conjuncts of a guard (`and` is flattened).
fn conjuncts(g: &Value) -> Vec<&Value> {
    match op(g) {
        Some(("and", args)) => args.into_iter().flat_map(conjuncts).collect(),
        _ => vec![g],
    }
}

/// Sets named by `!(event.… in context.S)` conjuncts of a guard.
fn negated_memberships(g: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for c in conjuncts(g) {
        let inner = match op(c) {
            Some(("!", args)) if args.len() == 1 => args[0],
            _ => continue,
        };
        if let Some(("in", args)) = op(inner) {
            if args.len() == 2 && reads(args[0], "event") {
                if let Some(p) = var_path(args[1]).and_then(|p| p.strip_prefix("context.")) {
                    out.push(p.to_string());
                }
            }
        }
    }
    out
}

/// Context fields compared for equality with something the event carries
/// (a generation or version check): `event.payload.round == context.round`.
fn generation_checks(g: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for c in conjuncts(g) {
        if let Some((name, args)) = op(c) {
            if (name == "==" || name == "===") && args.len() == 2 {
                for (a, b) in [(args[0], args[1]), (args[1], args[0])] {
                    let ev = var_path(a).is_some_and(|p| p.starts_with("event."));
                    if let (true, Some(f)) = (ev, var_path(b).and_then(|p| p.strip_prefix("context."))) {
                        out.push(f.to_string());
                    }
                }
            }
        }
    }
    out
}

fn assigned_fields(m: &Machine, actions: &[Action]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for a in actions {
        if let Action::Assign(fields) = a {
            for (f, e) in fields {
                out.push((f.clone(), m.exprs.source(*e).clone()));
            }
        }
    }
    out
}

/// The identified set (or generation field) that makes a transition refuse its
/// own repeat: its guard checks the event against `context.S`, and its actions
/// record the event in `S` (or advance it).
pub(super) fn identity_guard(m: &Machine, t: &Transition) -> Option<String> {
    let g = m.exprs.source(t.guard?);
    let assigned = assigned_fields(m, &t.actions);
    for s in negated_memberships(g) {
        if assigned.iter().any(|(f, e)| *f == s && reads(e, &format!("context.{s}")) && reads(e, "event")) {
            return Some(s);
        }
    }
    // A round (generation) check: the event must carry the current round, and
    // some transition of the machine advances it, so an old round is refused.
    let advanced = |f: &str| {
        assigned.iter().any(|(a, _)| a == f)
            || action_lists(m).iter().any(|(actions, ..)| assigned_fields(m, actions).iter().any(|(a, _)| a == f))
    };
    generation_checks(g).into_iter().find(|f| advanced(f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accumulation_is_read_from_the_expression() {
        let plus = json!({ "+": [{ "var": "context.paid" }, { "var": "event.payload.amount" }] });
        assert!(accumulates(&plus, "paid"));
        assert!(!accumulates(&plus, "total"));
        let append = json!({ "merge": [{ "var": "context.ids" }, [{ "var": "event.payload.id" }]] });
        assert!(accumulates(&append, "ids"));
        let set = json!({ "var": "event.payload.amount" });
        assert!(!accumulates(&set, "paid"));
        let nested = json!({ "if": [true, { "+": [1, { "-": [{ "var": ["context.n", 0] }, 2] }] }, 0] });
        assert!(accumulates(&nested, "n"));
        let max = json!({ "max": [{ "var": "context.n" }, { "var": "event.payload.n" }] });
        assert!(!accumulates(&max, "n"));
    }

    #[test]
    fn membership_and_generation_guards_are_recognised() {
        let g = json!({ "and": [{ "!": { "in": [{ "var": "event.payload.id" }, { "var": "context.seen" }] } }, { ">": [1, 0] }] });
        assert_eq!(negated_memberships(&g), vec!["seen".to_string()]);
        let g2 = json!({ "==": [{ "var": "context.round" }, { "var": "event.payload.round" }] });
        assert_eq!(generation_checks(&g2), vec!["round".to_string()]);
        assert!(negated_memberships(&json!({ "in": [{ "var": "event.payload.id" }, { "var": "context.seen" }] })).is_empty());
    }
}
