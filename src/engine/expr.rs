//! Guards and computed values: JSONLogic (<https://jsonlogic.com>), compiled
//! once when the machine is loaded and evaluated without cloning the scope.
//!
//! Why our own evaluator rather than a crate: the maintained JSONLogic crate
//! (`datalogic-rs`) alone made the wasm ~300 KiB gzip, three times the size
//! budget; this module is a few hundred lines, implements the operators of the
//! JSONLogic specification (no impure `log`), and is checked against the
//! official JSONLogic test suite (`tests/jsonlogic/tests.json`) in `cargo test`.
//!
//! Expressions read `context`, `event` (`id`, `type`, `payload`) and `state`.
//!
//! One extension: an object whose key is not an operator is an object literal
//! whose values are expressions (`{"amount": {"var": "context.total"}}`), so
//! payloads and responses can be built. A guard's top must still be an
//! operator or a literal, so a misspelt operator there is an error.

use crate::error::{Code, Error, Result};
use crate::json::object;
use serde_json::{Map, Number, Value};
use std::borrow::Cow;

/// Index of a compiled expression in [`Exprs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExprId(pub(crate) u32);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Var,
    Missing,
    MissingSome,
    If,
    Eq,
    StrictEq,
    Ne,
    StrictNe,
    Not,
    NotNot,
    Or,
    And,
    Gt,
    Ge,
    Lt,
    Le,
    Max,
    Min,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Map,
    Filter,
    Reduce,
    All,
    NoneOf,
    SomeOf,
    Merge,
    In,
    Cat,
    Substr,
}

/// The operators by name, searched in order, with the function that evaluates
/// each one's family. A table rather than a `match` on the names and one on
/// the operators: those compile to a few hundred bytes more, which a cold
/// start compiles when it builds a machine.
///
/// Each family is a function of its own, called through the pointer its node
/// keeps, so that neither the compiler nor wasm-opt folds them back into
/// [`eval`]: the wasm engine compiles a function when it is first called, and
/// an expression then compiles only the operators it uses (a cold start's
/// first event compiled the whole evaluator, 22 KB of code, before).
const OPS: &[(&str, Op, OpFn)] = {
    use Op::*;
    &[
        ("var", Var, op_var),
        ("missing", Missing, op_missing),
        ("missing_some", MissingSome, op_missing),
        ("if", If, op_logic),
        ("?:", If, op_logic),
        ("==", Eq, op_test),
        ("===", StrictEq, op_test),
        ("!=", Ne, op_test),
        ("!==", StrictNe, op_test),
        ("!", Not, op_test),
        ("!!", NotNot, op_test),
        ("or", Or, op_logic),
        ("and", And, op_logic),
        (">", Gt, op_test),
        (">=", Ge, op_test),
        ("<", Lt, op_test),
        ("<=", Le, op_test),
        ("max", Max, op_arith),
        ("min", Min, op_arith),
        ("+", Add, op_arith),
        ("-", Sub, op_arith),
        ("*", Mul, op_arith),
        ("/", Div, op_arith),
        ("%", Mod, op_arith),
        ("map", Map, op_each),
        ("filter", Filter, op_each),
        ("reduce", Reduce, op_reduce),
        ("all", All, op_each),
        ("none", NoneOf, op_each),
        ("some", SomeOf, op_each),
        ("merge", Merge, op_merge),
        ("in", In, op_in),
        ("cat", Cat, op_cat),
        ("substr", Substr, op_substr),
    ]
};

fn op_of(name: &str) -> Option<(Op, OpFn)> {
    OPS.iter().find(|(n, ..)| *n == name).map(|&(_, op, f)| (op, f))
}

/// Whether an object with `name` as its one member is an operator (or
/// `in_state`) rather than an object literal.
pub fn is_operator(name: &str) -> bool {
    name == IN_STATE || op_of(name).is_some()
}

#[derive(Debug, Clone)]
enum Node {
    Lit(Value),
    Array(Vec<Node>),
    /// An object literal whose values are expressions (idem's one extension).
    Object(Vec<(String, Node)>),
    /// An operator, with the function that evaluates its family (see [`OPS`]).
    Op(Op, OpFn, Vec<Node>),
    /// `var` whose key is a literal string, its path split into parts once at
    /// compile time (no parts: the empty path, the whole scope). `args` are the
    /// operator's arguments as written (the key, then the default).
    Var(Vec<String>, Vec<Node>, Root),
    /// `{"in_state": "#order.shipping.packed"}`: whether that state is active,
    /// named as written and by its path's parts once the machine resolves it.
    InState(String, Vec<String>),
}

/// The operator that tests whether a state is active (XState's `stateIn`).
pub const IN_STATE: &str = "in_state";

/// Where a literal `var` path starts in a process scope, found once at compile
/// time from its first parts (what [`Data::lookup_parts`] finds there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Root {
    /// `context...`: the parts after the first.
    Context,
    /// `state...`: the parts after the first.
    State,
    /// `event.payload...`: the parts after the second.
    Payload,
    /// Anything else (`event.id`, `event`, unknown names): looked up by name.
    Named,
}

impl Root {
    fn of(parts: &[String]) -> Root {
        match parts {
            [first, ..] if first == "context" => Root::Context,
            [first, ..] if first == "state" => Root::State,
            [first, second, ..] if first == "event" && second == "payload" => Root::Payload,
            _ => Root::Named,
        }
    }
}

/// What `var` reads: plain data, or a process scope assembled from borrowed parts.
#[derive(Clone, Copy)]
pub enum Data<'a> {
    Value(&'a Value),
    Process { context: &'a Value, event_id: &'a str, event_type: &'a str, payload: &'a Value, state: &'a Value },
}

impl<'a> Data<'a> {
    fn whole(&self) -> Cow<'a, Value> {
        match *self {
            Data::Value(v) => Cow::Borrowed(v),
            Data::Process { context, event_id, event_type, payload, state } => Cow::Owned(object! {
                "context": context,
                "event": object! { "id": event_id, "type": event_type, "payload": payload },
                "state": state,
            }),
        }
    }

    /// Follow a dotted path without building the whole scope.
    fn lookup(&self, path: &str) -> Option<Cow<'a, Value>> {
        if path.is_empty() {
            return Some(self.whole());
        }
        self.lookup_parts(path.split('.'))
    }

    /// [`Data::lookup`] of a path already split at its dots (at least one part).
    fn lookup_parts<'p>(&self, mut parts: impl Iterator<Item = &'p str>) -> Option<Cow<'a, Value>> {
        let (start, rest): (Cow<'a, Value>, _) = match *self {
            Data::Value(v) => (Cow::Borrowed(v), parts),
            Data::Process { context, event_id, event_type, payload, state } => {
                let head = parts.next()?;
                match head {
                    "context" => (Cow::Borrowed(context), parts),
                    "state" => (Cow::Borrowed(state), parts),
                    "event" => match parts.next() {
                        None => (self.whole().into_owned().get("event").cloned().map(Cow::Owned)?, parts),
                        Some("id") => (Cow::Owned(Value::String(event_id.to_string())), parts),
                        Some("type") => (Cow::Owned(Value::String(event_type.to_string())), parts),
                        Some("payload") => (Cow::Borrowed(payload), parts),
                        Some(_) => return None,
                    },
                    _ => return None,
                }
            }
        };
        let mut cur = start;
        for part in rest {
            cur = match cur {
                Cow::Borrowed(v) => Cow::Borrowed(step(v, part)?),
                Cow::Owned(v) => Cow::Owned(step(&v, part)?.clone()),
            };
        }
        Some(cur)
    }
}

fn step<'v>(v: &'v Value, part: &str) -> Option<&'v Value> {
    match v {
        Value::Object(m) => m.get(part),
        Value::Array(a) => part.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    }
}

/// The compiled expressions of one machine, with the JSON path each came from.
#[derive(Debug, Default)]
pub struct Exprs {
    compiled: Vec<(Node, String, Value)>,
}

/// Bound on nested evaluation (map inside filter inside ...), far above any real rule.
const MAX_EVAL_DEPTH: usize = 128;
/// Bound on the work one evaluation may do and the values it may build (items
/// visited by `map`/`filter`/..., items merged, array and object members, string
/// bytes / 16, and the values inside a value copied: `[acc, acc]` pays for both
/// copies of what `acc` holds). It bounds time and memory: no single value an
/// expression returns can outgrow it, however many microsteps or `reduce` steps
/// feed it back.
pub const EVAL_BUDGET: usize = 1_000_000;

type Budget = std::cell::Cell<usize>;

/// Why an evaluation stopped: one of its bounds. A byte rather than a
/// message, so that the evaluator passes it up cheaply; the message is written
/// once, at the boundary.
#[derive(Debug, Clone, Copy)]
enum Stop {
    TooDeep,
    OverBudget,
    /// A `reduce` accumulator nested deeper than JSON may be (`json::MAX_DEPTH`).
    ValueTooDeep,
    /// An arithmetic operator's result is not a finite number (`NaN`, an
    /// infinity): JSONLogic would give `null` or `NaN`, which stored would
    /// silently lose the value it was computed from.
    NotANumber,
}

impl Stop {
    #[cold]
    #[inline(never)]
    fn message(self) -> String {
        match self {
            Stop::TooDeep => "evaluation nested too deeply".to_string(),
            Stop::OverBudget => format!("expression does more than {EVAL_BUDGET} units of work or builds a value that large"),
            Stop::ValueTooDeep => format!("reduce builds a value nested deeper than {} levels", crate::json::MAX_DEPTH),
            Stop::NotANumber => "an arithmetic result is not a finite number".to_string(),
        }
    }
}

/// The error of an evaluation that stopped (`what` is "expression" or "guard").
#[cold]
#[inline(never)]
fn failed(path: &str, what: &str, stop: Stop) -> Error {
    Error::at(Code::ExpressionFailed, path, format!("{what} failed: {}", stop.message()))
}

fn charge(budget: &Budget, units: usize) -> std::result::Result<(), Stop> {
    let left = budget.get();
    if units > left {
        return Err(Stop::OverBudget);
    }
    budget.set(left - units);
    Ok(())
}

/// The values inside `v` (its items and members, theirs, and so on; none for a
/// scalar), counted up to just past `cap`: what copying it costs beyond the
/// value itself. Values here are at most a few hundred levels deep (inputs are
/// bounded by `json::MAX_DEPTH`, literals by the expression's own depth, and a
/// `reduce` accumulator is checked at every step).
fn inner_values(v: &Value, cap: usize) -> usize {
    let mut n = 0usize;
    let mut add = |x: &Value| {
        n = n.saturating_add(1 + inner_values(x, cap.saturating_sub(n)));
        n > cap
    };
    match v {
        Value::Array(items) => {
            items.iter().any(&mut add);
        }
        Value::Object(m) => {
            m.values().any(&mut add);
        }
        _ => {}
    }
    n
}

/// An evaluated value, owned: a value borrowed from the data or the scope is
/// copied, and the copy of what is inside it is charged (a scalar or an empty
/// array costs nothing more than before).
fn own(v: Cow<'_, Value>, budget: &Budget) -> std::result::Result<Value, Stop> {
    match v {
        Cow::Owned(v) => Ok(v),
        Cow::Borrowed(v) => {
            if let Value::Array(_) | Value::Object(_) = v {
                charge(budget, inner_values(v, budget.get()))?;
            }
            Ok(v.clone())
        }
    }
}

impl Exprs {
    /// Compile a computed value, naming `path` in the error when it is not valid.
    /// Out of line, and the one copy of this work that guards share: the
    /// builder is compiled on a cold start's first call, whole.
    #[inline(never)]
    pub fn compile(&mut self, rule: &Value, path: &str) -> Result<ExprId> {
        let node = compile(rule, path, 0)?;
        self.compiled.push((node, crate::machine::owned(path), cloned(rule)));
        Ok(ExprId(self.compiled.len() as u32 - 1))
    }

    /// Compile a guard: as [`Exprs::compile`], but its top must be an operator
    /// or a literal, so a misspelt operator is an error rather than an object
    /// literal that is always true. A bare string is refused too: it reads as
    /// an XState named guard (`"guard": "isPaid"`), code idem cannot run, and as
    /// a JSONLogic literal it would be truthy, letting the transition always fire.
    pub fn compile_guard(&mut self, rule: &Value, path: &str) -> Result<ExprId> {
        match rule {
            Value::Object(m) => {
                let name = crate::machine::members(m).next().map(|(k, _)| k.as_str());
                if m.len() != 1 || (name != Some(IN_STATE) && name.and_then(op_of).is_none()) {
                    return Err(compile_error(path, Some(name.unwrap_or(""))));
                }
            }
            Value::String(name) => return Err(named_guard(path, name)),
            _ => {}
        }
        self.compile(rule, path)
    }

    /// Resolve every `in_state` to the path of the state it names (`find`
    /// gives the dotted path, or `None` for no such state).
    pub fn resolve_states(&mut self, find: impl Fn(&str) -> Option<String>) -> Result<()> {
        fn walk(node: &mut Node, path: &str, find: &dyn Fn(&str) -> Option<String>) -> Result<()> {
            match node {
                Node::InState(name, parts) => match find(name) {
                    Some(p) => {
                        *parts = p.split('.').map(str::to_string).collect();
                        Ok(())
                    }
                    None => Err(Error::at(Code::UnknownTarget, path, format!("in_state names unknown state \"{name}\""))),
                },
                Node::Array(items) | Node::Op(_, _, items) | Node::Var(_, items, _) => items.iter_mut().try_for_each(|n| walk(n, path, find)),
                Node::Object(fields) => fields.iter_mut().try_for_each(|(_, n)| walk(n, path, find)),
                Node::Lit(_) => Ok(()),
            }
        }
        for (node, path, _) in &mut self.compiled {
            walk(node, path, &find)?;
        }
        Ok(())
    }

    /// The expression as written in the definition.
    pub fn source(&self, id: ExprId) -> &Value {
        &self.compiled[id.0 as usize].2
    }

    pub fn path(&self, id: ExprId) -> &str {
        &self.compiled[id.0 as usize].1
    }

    /// Evaluate to a JSON value.
    pub fn eval(&self, id: ExprId, data: Data<'_>) -> Result<Value> {
        let (node, path, _) = &self.compiled[id.0 as usize];
        eval(node, data, 0, &Budget::new(EVAL_BUDGET)).map(Cow::into_owned).map_err(|s| failed(path, "expression", s))
    }

    /// Evaluate with JSONLogic truthiness.
    pub fn test(&self, id: ExprId, data: Data<'_>) -> Result<bool> {
        let (node, path, _) = &self.compiled[id.0 as usize];
        eval(node, data, 0, &Budget::new(EVAL_BUDGET)).map(|v| truthy(&v)).map_err(|s| failed(path, "guard", s))
    }
}

/// Compile and evaluate once against plain data (for tests and tools).
pub fn apply(rule: &Value, data: &Value) -> Result<Value> {
    let node = compile(rule, "", 0)?;
    eval(&node, Data::Value(data), 0, &Budget::new(EVAL_BUDGET))
        .map(Cow::into_owned)
        .map_err(|s| Error::new(Code::ExpressionFailed, format!("expression failed: {}", s.message())))
}

/// The compiler's errors: an unknown operator at the top of a guard, or (no
/// operator) nesting too deep. One function for both, so that it has two
/// callers and is not inlined back into either by wasm-opt.
#[cold]
#[inline(never)]
fn compile_error(path: &str, operator: Option<&str>) -> Error {
    match operator {
        Some(name) => Error::at(Code::InvalidExpression, path, format!("unknown JSONLogic operator \"{name}\"")),
        None => Error::at(Code::NestingTooDeep, path, "expression is nested too deeply"),
    }
}

/// A guard given as a name (an XState named guard), refused with a hint.
#[cold]
#[inline(never)]
fn named_guard(path: &str, name: &str) -> Error {
    Error::at(
        Code::InvalidGuard,
        path,
        format!("guard \"{name}\" is a name, not an expression: write the condition in JSONLogic, e.g. {{\"===\": [{{\"var\": \"context.status\"}}, \"paid\"]}}"),
    )
}

/// Each of `items`, compiled one level below `depth`.
fn compile_all(items: &[Value], path: &str, depth: usize) -> Result<Vec<Node>> {
    // Grown by `push`, as the builder's lists are (`Machine::transitions`).
    let mut nodes = Vec::new();
    for item in items {
        nodes.push(compile(item, path, depth + 1)?);
    }
    Ok(nodes)
}

fn compile(rule: &Value, path: &str, depth: usize) -> Result<Node> {
    if depth > crate::json::MAX_DEPTH {
        return Err(compile_error(path, None));
    }
    match rule {
        Value::Array(items) => {
            let nodes = compile_all(items, path, depth)?;
            if !nodes.iter().all(|n| matches!(n, Node::Lit(_))) {
                return Ok(Node::Array(nodes));
            }
        }
        Value::Object(m) => {
            let mut members = crate::machine::members(m);
            if let (Some((name, args)), None) = (members.next(), members.next()) {
                if name == IN_STATE {
                    return match args {
                        Value::String(s) => Ok(Node::InState(s.clone(), Vec::new())),
                        _ => Err(Error::at(Code::InvalidExpression, path, "in_state takes one state, named as a transition target (\"#machine.path\" or \"#id\")")),
                    };
                }
                if let Some((op, f)) = op_of(name) {
                    let args = match args {
                        Value::Array(a) => compile_all(a, path, depth)?,
                        other => vec![compile(other, path, depth + 1)?],
                    };
                    if let (Op::Var, Some(Node::Lit(Value::String(key)))) = (op, args.first()) {
                        let parts = var_parts(key);
                        let root = Root::of(&parts);
                        return Ok(Node::Var(parts, args, root));
                    }
                    return Ok(Node::Op(op, f, args));
                }
            }
            let mut fields = Vec::new();
            for (k, v) in crate::machine::members(m) {
                fields.push((k.clone(), compile(v, path, depth + 1)?));
            }
            if !fields.iter().all(|(_, n)| matches!(n, Node::Lit(_))) {
                return Ok(Node::Object(fields));
            }
        }
        _ => {}
    }
    // A literal, or an array or object of literals: the value as written,
    // cloned in one place.
    Ok(Node::Lit(cloned(rule)))
}

/// `v.clone()` out of line: `Value::clone` is inlined where it is called, and
/// the compiler (and the builder) would carry a copy per call, all compiled on
/// a cold start.
#[inline(never)]
pub(crate) fn cloned(v: &Value) -> Value {
    v.clone()
}

/// A literal `var` key split at its dots (none for the empty key), by the
/// builder's splitter rather than `str::split`, whose searcher and memchr a
/// cold start would compile for this alone.
fn var_parts(key: &str) -> Vec<String> {
    let mut parts = Vec::new();
    if key.is_empty() {
        return parts;
    }
    let mut rest = key;
    while let Some((part, tail)) = crate::machine::split_dot(rest) {
        parts.push(crate::machine::owned(part));
        rest = tail;
    }
    parts.push(crate::machine::owned(rest));
    parts
}

type Eval<'a> = std::result::Result<Cow<'a, Value>, Stop>;

fn num(f: f64) -> Value {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
        Value::Number(Number::from(f as i64))
    } else {
        Number::from_f64(f).map(Value::Number).unwrap_or(Value::Null)
    }
}

/// JavaScript `ToNumber`, as JSONLogic inherits it.
fn to_number(v: &Value) -> f64 {
    match v {
        Value::Null => 0.0,
        Value::Bool(b) => *b as u8 as f64,
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) => crate::float::js_string_to_number(s),
        Value::Array(a) if a.is_empty() => 0.0,
        Value::Array(a) if a.len() == 1 => to_number(&a[0]),
        _ => f64::NAN,
    }
}

/// JavaScript `ToString`.
fn to_js_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        _ => {
            let mut out = String::new();
            push_js_string(v, &mut out);
            out
        }
    }
}

/// [`to_js_string`], appended to `out`.
fn push_js_string(v: &Value, out: &mut String) {
    use std::fmt::Write;
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        // An integer is written as serde_json writes it (its digits, as JavaScript's).
        Value::Number(n) if !n.is_f64() => write!(out, "{n}").expect("writing to a String"),
        Value::Number(n) => push_js_number(n.as_f64().unwrap_or(f64::NAN), out),
        Value::String(s) => out.push_str(s),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !x.is_null() {
                    push_js_string(x, out);
                }
            }
        }
        Value::Object(_) => out.push_str("[object Object]"),
    }
}

/// JavaScript's `String(f)` (ECMAScript Number::toString): the shortest digits
/// that round-trip (as serde_json writes them), placed as JavaScript places
/// them: plain up to 21 integer digits and down to 6 leading zeros, exponent
/// form (`1e+21`, `1e-7`) beyond.
fn push_js_number(f: f64, out: &mut String) {
    if f.is_nan() {
        return out.push_str("NaN");
    }
    if f.is_infinite() {
        return out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
    }
    if f == 0.0 {
        return out.push('0');
    }
    if f < 0.0 {
        out.push('-');
    }
    let Some(n) = serde_json::Number::from_f64(f.abs()) else { return out.push_str("NaN") };
    let text = n.to_string();
    // serde_json writes `<int>[.<frac>][e<exp>]`: read it byte by byte (ASCII).
    let bytes = text.as_bytes();
    let e_at = bytes.iter().position(|&b| b == b'e' || b == b'E').unwrap_or(bytes.len());
    let mut exp = 0i32;
    for &b in &bytes[e_at..] {
        if b.is_ascii_digit() {
            exp = exp.saturating_mul(10).saturating_add((b - b'0') as i32);
        }
    }
    if bytes[e_at..].contains(&b'-') {
        exp = -exp;
    }
    let mut all = String::with_capacity(e_at);
    let mut int_len = e_at;
    for (i, &b) in bytes[..e_at].iter().enumerate() {
        if b == b'.' {
            int_len = i;
        } else {
            all.push(b as char);
        }
    }
    let lead = all.len() - all.trim_start_matches('0').len();
    let digits = all.trim_start_matches('0').trim_end_matches('0');
    // The value is 0.<digits> x 10^point.
    let point = int_len as i32 - lead as i32 + exp;
    let k = digits.len() as i32;
    // `get` where the branches bound the index: a `str` index that could fail
    // brings in the panic message of a bad slice and core's Unicode tables.
    if k <= point && point <= 21 {
        out.push_str(digits);
        (0..point - k).for_each(|_| out.push('0'));
    } else if 0 < point && point <= 21 {
        out.push_str(digits.get(..point as usize).unwrap_or(""));
        out.push('.');
        out.push_str(digits.get(point as usize..).unwrap_or(""));
    } else if -6 < point && point <= 0 {
        out.push_str("0.");
        (0..-point).for_each(|_| out.push('0'));
        out.push_str(digits);
    } else {
        out.push_str(digits.get(..1).unwrap_or(""));
        if k > 1 {
            out.push('.');
            out.push_str(digits.get(1..).unwrap_or(""));
        }
        let e = point - 1;
        out.push('e');
        out.push(if e < 0 { '-' } else { '+' });
        let e = e.unsigned_abs();
        if e >= 100 {
            out.push((b'0' + (e / 100) as u8) as char);
        }
        if e >= 10 {
            out.push((b'0' + (e / 10 % 10) as u8) as char);
        }
        out.push((b'0' + (e % 10) as u8) as char);
    }
}

/// `hay` contains `needle`: byte by byte (a UTF-8 needle matches only where a
/// character starts) and in time linear in both (Knuth–Morris–Pratt), where
/// `str::contains` would bring in the panic message of a bad `str` slice and
/// core's Unicode tables.
fn contains(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.len() <= 1 || n.len() > h.len() {
        return n.is_empty() || (n.len() == 1 && h.contains(&n[0]));
    }
    // border[i]: length of the longest proper prefix of n[..=i] that ends it.
    let mut border = vec![0usize; n.len()];
    let mut k = 0;
    for i in 1..n.len() {
        while k > 0 && n[i] != n[k] {
            k = border[k - 1];
        }
        if n[i] == n[k] {
            k += 1;
        }
        border[i] = k;
    }
    let mut k = 0;
    for &b in h {
        while k > 0 && b != n[k] {
            k = border[k - 1];
        }
        if b == n[k] {
            k += 1;
            if k == n.len() {
                return true;
            }
        }
    }
    false
}

/// JSONLogic truthiness: JavaScript's, except that an empty array is false.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(_) => true,
    }
}

fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(_), _) | (Value::Object(_), _) => false, // identity in JS: never equal across evaluations
        _ => a == b,
    }
}

/// JavaScript `==` (abstract equality) on JSON values.
fn loose_eq(a: &Value, b: &Value) -> bool {
    use Value::*;
    match (a, b) {
        (Null, Null) => true,
        (Null, _) | (_, Null) => false,
        (Number(_), Number(_)) | (String(_), String(_)) | (Bool(_), Bool(_)) => strict_eq(a, b),
        (Bool(_), _) => loose_eq(&num(to_number(a)), b),
        (_, Bool(_)) => loose_eq(a, &num(to_number(b))),
        (Number(_), String(_)) | (String(_), Number(_)) => to_number(a) == to_number(b),
        (Array(_) | Object(_), Number(_) | String(_)) => loose_eq(&Value::String(to_js_string(a)), b),
        (Number(_) | String(_), Array(_) | Object(_)) => loose_eq(a, &Value::String(to_js_string(b))),
        _ => false,
    }
}

/// JavaScript relational comparison: strings compare as strings, the rest as numbers.
fn less(a: &Value, b: &Value, or_equal: bool) -> bool {
    if let (Value::String(x), Value::String(y)) = (a, b) {
        return if or_equal { x <= y } else { x < y };
    }
    let (x, y) = (to_number(a), to_number(b));
    if or_equal {
        x <= y
    } else {
        x < y
    }
}

fn eval<'a>(node: &'a Node, data: Data<'a>, depth: usize, budget: &Budget) -> Eval<'a> {
    if depth > MAX_EVAL_DEPTH {
        return Err(Stop::TooDeep);
    }
    match node {
        Node::Lit(v) => Ok(Cow::Borrowed(v)),
        Node::Array(items) => {
            charge(budget, items.len())?;
            let mut out = Vec::with_capacity(items.len());
            for i in items {
                out.push(own(eval(i, data, depth + 1, budget)?, budget)?);
            }
            Ok(Cow::Owned(Value::Array(out)))
        }
        Node::Object(fields) => {
            charge(budget, fields.len())?;
            let mut out = Map::new();
            for (k, n) in fields {
                out.insert(k.clone(), own(eval(n, data, depth + 1, budget)?, budget)?);
            }
            Ok(Cow::Owned(Value::Object(out)))
        }
        Node::Op(op, f, nodes) => f(*op, Args { nodes, data, depth: depth + 1, budget }),
        Node::InState(_, parts) => {
            let value = match data {
                Data::Process { state, .. } => Cow::Borrowed(state),
                Data::Value(_) => data.lookup_parts(std::iter::once("state")).unwrap_or(Cow::Owned(Value::Null)),
            };
            Ok(Cow::Owned(Value::Bool(value_names(&value, parts))))
        }
        Node::Var(parts, args, root) => {
            // As [`op_var`] with its literal key, which it would
            // evaluate one level down (where the depth bound applies too).
            let depth = depth + 1;
            if depth > MAX_EVAL_DEPTH {
                return Err(Stop::TooDeep);
            }
            let found = match (data, root) {
                (Data::Process { context, state, payload, .. }, Root::Context | Root::State | Root::Payload) => {
                    let (start, skip) = match root {
                        Root::Context => (context, 1),
                        Root::State => (state, 1),
                        _ => (payload, 2),
                    };
                    parts[skip..].iter().try_fold(start, |v, part| step(v, part)).map(Cow::Borrowed)
                }
                _ if parts.is_empty() => Some(data.whole()),
                _ => data.lookup_parts(parts.iter().map(String::as_str)),
            };
            match found {
                Some(v) if !v.is_null() => Ok(v),
                _ => match args.get(1) {
                    Some(n) => eval(n, data, depth, budget),
                    None => Ok(Cow::Owned(Value::Null)),
                },
            }
        }
    }
}

/// Whether a state value has the state at `path` (its keys from the root)
/// active: a string names an atomic state, an object's keys active children.
fn value_names(value: &Value, path: &[String]) -> bool {
    match (value, path) {
        (_, []) => true,
        (Value::String(s), [last]) => s == last,
        (Value::Object(m), [first, rest @ ..]) => m.get(first).is_some_and(|v| value_names(v, rest)),
        _ => false,
    }
}

/// An operator's argument nodes with what evaluating them needs.
#[derive(Clone, Copy)]
struct Args<'a, 'b> {
    nodes: &'a [Node],
    data: Data<'a>,
    depth: usize,
    budget: &'b Budget,
}

impl<'a> Args<'a, '_> {
    fn eval(&self, n: &'a Node) -> Eval<'a> {
        eval(n, self.data, self.depth, self.budget)
    }

    /// Argument `i`, or null when there are fewer.
    fn arg(&self, i: usize) -> Eval<'a> {
        match self.nodes.get(i) {
            Some(n) => self.eval(n),
            None => Ok(Cow::Owned(Value::Null)),
        }
    }

    /// Every argument, in order, stopping at the first that fails.
    fn all(&self) -> std::result::Result<Vec<Value>, Stop> {
        self.nodes.iter().map(|n| own(self.eval(n)?, self.budget)).collect()
    }

    /// Each argument as a number, in order, stopping at the first that fails (as `all`).
    fn numbers(&self) -> impl Iterator<Item = std::result::Result<f64, Stop>> + '_ {
        self.nodes.iter().map(|n| self.eval(n).map(|v| to_number(&v)))
    }
}

/// The function that evaluates one family of operators.
type OpFn = for<'a, 'b> fn(Op, Args<'a, 'b>) -> Eval<'a>;

#[inline(never)]
fn op_var<'a>(_: Op, a: Args<'a, '_>) -> Eval<'a> {
    let key = a.arg(0)?;
    let found = match key.as_ref() {
        Value::Null => Some(a.data.whole()),
        Value::String(s) => a.data.lookup(s),
        Value::Number(n) => a.data.lookup(&n.to_string()),
        Value::Array(arr) if arr.is_empty() => Some(a.data.whole()),
        _ => None,
    };
    match found {
        Some(v) if !v.is_null() => Ok(v),
        _ => a.arg(1),
    }
}

#[inline(never)]
fn op_missing<'a>(op: Op, a: Args<'a, '_>) -> Eval<'a> {
    let present = |k: &Value| {
        let found = a.data.lookup(&to_js_string(k));
        matches!(found.as_deref(), Some(v) if !v.is_null() && *v != Value::String(String::new()))
    };
    if op == Op::Missing {
        let mut keys = a.all()?;
        if let Some(Value::Array(inner)) = keys.first() {
            keys = inner.clone();
        }
        let missing: Vec<Value> = keys.into_iter().filter(|k| !present(k)).collect();
        return Ok(Cow::Owned(Value::Array(missing)));
    }
    let need = to_number(&*a.arg(0)?);
    let keys = match own(a.arg(1)?, a.budget)? {
        Value::Array(arr) => arr,
        other => vec![other],
    };
    let mut missing = Vec::new();
    for k in &keys {
        if !present(k) {
            missing.push(k.clone());
        }
    }
    let present = (keys.len() - missing.len()) as f64;
    Ok(Cow::Owned(Value::Array(if present >= need { Vec::new() } else { missing })))
}

#[inline(never)]
fn op_logic<'a>(op: Op, a: Args<'a, '_>) -> Eval<'a> {
    let args = a.nodes;
    if op == Op::If {
        let mut i = 0;
        while i + 1 < args.len() {
            if truthy(&*a.eval(&args[i])?) {
                return a.eval(&args[i + 1]);
            }
            i += 2;
        }
        return a.arg(i);
    }
    // `or` stops at the first truthy argument, `and` at the first falsy one.
    let mut last = Cow::Owned(Value::Null);
    for n in args {
        last = a.eval(n)?;
        if truthy(&last) == (op == Op::Or) {
            break;
        }
    }
    Ok(last)
}

#[inline(never)]
fn op_test<'a>(op: Op, a: Args<'a, '_>) -> Eval<'a> {
    let b = match op {
        Op::Eq => loose_eq(&*a.arg(0)?, &*a.arg(1)?),
        Op::Ne => !loose_eq(&*a.arg(0)?, &*a.arg(1)?),
        Op::StrictEq => strict_eq(&*a.arg(0)?, &*a.arg(1)?),
        Op::StrictNe => !strict_eq(&*a.arg(0)?, &*a.arg(1)?),
        Op::Not => !truthy(&*a.arg(0)?),
        Op::NotNot => truthy(&*a.arg(0)?),
        Op::Gt => less(&*a.arg(1)?, &*a.arg(0)?, false),
        Op::Ge => less(&*a.arg(1)?, &*a.arg(0)?, true),
        _ => {
            // `<` and `<=`, with a third argument: between.
            let or_equal = op == Op::Le;
            let (x, y) = (a.arg(0)?, a.arg(1)?);
            let first = less(&x, &y, or_equal);
            if a.nodes.len() >= 3 {
                let z = a.arg(2)?;
                return Ok(Cow::Owned(Value::Bool(first && less(&y, &z, or_equal))));
            }
            first
        }
    };
    Ok(Cow::Owned(Value::Bool(b)))
}

#[inline(never)]
fn op_arith<'a>(op: Op, a: Args<'a, '_>) -> Eval<'a> {
    let r = match op {
        Op::Max | Op::Min => {
            let nums = a.numbers().collect::<std::result::Result<Vec<f64>, Stop>>()?;
            if nums.is_empty() || nums.iter().any(|n| n.is_nan()) {
                return Err(Stop::NotANumber);
            }
            if op == Op::Max {
                nums.into_iter().fold(f64::NEG_INFINITY, f64::max)
            } else {
                nums.into_iter().fold(f64::INFINITY, f64::min)
            }
        }
        Op::Add => a.numbers().sum::<std::result::Result<f64, Stop>>()?,
        Op::Mul => a.numbers().product::<std::result::Result<f64, Stop>>()?,
        Op::Sub => {
            let vals = a.numbers().collect::<std::result::Result<Vec<f64>, Stop>>()?;
            match vals.as_slice() {
                [x] => -x,
                [x, y, ..] => x - y,
                [] => f64::NAN,
            }
        }
        Op::Div => to_number(&*a.arg(0)?) / to_number(&*a.arg(1)?),
        _ => rem(to_number(&*a.arg(0)?), to_number(&*a.arg(1)?)),
    };
    // Not JSONLogic's `null`/`NaN`: a result that is not a finite number fails
    // the evaluation (ARCHITECTURE.md, src/expr.rs).
    if !r.is_finite() {
        return Err(Stop::NotANumber);
    }
    Ok(Cow::Owned(num(r)))
}

/// `%`: the remainder of a truncating division, which Rust's `%` on `f64`
/// and JavaScript's `%` both are (C's `fmod`).
fn rem(x: f64, y: f64) -> f64 {
    x % y
}

#[inline(never)]
fn op_each<'a>(op: Op, a: Args<'a, '_>) -> Eval<'a> {
    let items = match own(a.arg(0)?, a.budget)? {
        Value::Array(arr) => arr,
        _ => Vec::new(),
    };
    let Some(body) = a.nodes.get(1) else { return Ok(Cow::Owned(Value::Null)) };
    charge(a.budget, items.len())?;
    let mut out = Vec::new();
    for item in &items {
        let r = eval(body, Data::Value(item), a.depth, a.budget)?;
        match op {
            Op::Map => out.push(own(r, a.budget)?),
            Op::Filter if truthy(&r) => out.push(item.clone()),
            Op::All if !truthy(&r) => return Ok(Cow::Owned(Value::Bool(false))),
            Op::NoneOf if truthy(&r) => return Ok(Cow::Owned(Value::Bool(false))),
            Op::SomeOf if truthy(&r) => return Ok(Cow::Owned(Value::Bool(true))),
            _ => {}
        }
    }
    Ok(Cow::Owned(match op {
        Op::Map | Op::Filter => Value::Array(out),
        Op::All => Value::Bool(!items.is_empty()),
        Op::NoneOf => Value::Bool(true),
        _ => Value::Bool(false),
    }))
}

#[inline(never)]
fn op_reduce<'a>(_: Op, a: Args<'a, '_>) -> Eval<'a> {
    let items = match own(a.arg(0)?, a.budget)? {
        Value::Array(arr) => arr,
        _ => Vec::new(),
    };
    let mut acc = own(a.arg(2)?, a.budget)?;
    let Some(body) = a.nodes.get(1) else { return Ok(Cow::Owned(acc)) };
    charge(a.budget, items.len())?;
    for item in items {
        let mut scope = Map::new();
        scope.insert("current".into(), item);
        scope.insert("accumulator".into(), acc);
        let scope = Value::Object(scope);
        acc = own(eval(body, Data::Value(&scope), a.depth, a.budget)?, a.budget)?;
        // What a step builds around the accumulator stays within what JSON may
        // nest: `[acc]` on every step would otherwise nest it once per item.
        if !crate::json::within_depth(&acc, 1) {
            return Err(Stop::ValueTooDeep);
        }
    }
    Ok(Cow::Owned(acc))
}

#[inline(never)]
fn op_merge<'a>(_: Op, a: Args<'a, '_>) -> Eval<'a> {
    // Every argument is evaluated before the arrays merged are charged
    // for, as when they were collected first; one charge for them all
    // fails exactly when one of a charge per array would.
    let mut out = Vec::new();
    let mut merged = 0usize;
    for n in a.nodes {
        match a.eval(n)? {
            Cow::Borrowed(v @ Value::Array(arr)) => {
                // Each item, and what is inside it, copied.
                merged = merged.saturating_add(inner_values(v, a.budget.get()));
                out.extend(arr.iter().cloned())
            }
            Cow::Owned(Value::Array(arr)) => {
                merged = merged.saturating_add(arr.len());
                // The first array built is taken whole rather than copied.
                if out.is_empty() {
                    out = arr;
                } else {
                    out.extend(arr)
                }
            }
            other => out.push(own(other, a.budget)?),
        }
    }
    charge(a.budget, merged)?;
    Ok(Cow::Owned(Value::Array(out)))
}

#[inline(never)]
fn op_in<'a>(_: Op, a: Args<'a, '_>) -> Eval<'a> {
    let (needle, hay) = (a.arg(0)?, a.arg(1)?);
    Ok(Cow::Owned(Value::Bool(match hay.as_ref() {
        Value::Array(arr) => arr.iter().any(|x| strict_eq(x, &needle)),
        Value::String(s) => contains(s, &to_js_string(&needle)),
        _ => false,
    })))
}

#[inline(never)]
fn op_cat<'a>(_: Op, a: Args<'a, '_>) -> Eval<'a> {
    let mut s = String::with_capacity(32);
    for n in a.nodes {
        push_js_string(&*a.eval(n)?, &mut s);
    }
    charge(a.budget, s.len() / 16)?;
    Ok(Cow::Owned(Value::String(s)))
}

#[inline(never)]
fn op_substr<'a>(_: Op, a: Args<'a, '_>) -> Eval<'a> {
    let s: Vec<char> = to_js_string(&*a.arg(0)?).chars().collect();
    let len = s.len() as i64;
    let start = to_number(&*a.arg(1)?);
    let start = if start.is_nan() { 0 } else { start as i64 };
    let start = if start < 0 { len.saturating_add(start).max(0) } else { start.min(len) };
    let end = match a.nodes.get(2) {
        None => len,
        Some(_) => {
            let l = to_number(&*a.arg(2)?);
            let l = if l.is_nan() { 0 } else { l as i64 };
            if l < 0 {
                len.saturating_add(l).max(start)
            } else {
                start.saturating_add(l).min(len)
            }
        }
    };
    Ok(Cow::Owned(Value::String(s[start as usize..end.max(start) as usize].iter().collect())))
}

#[cfg(test)]
mod contains_tests {
    #[test]
    fn contains_agrees_with_str_contains() {
        let words = ["", "a", "b", "ab", "aab", "aaab", "abab", "abaab", "ba", "\u{e9}", "\u{e9}t\u{e9}", "t\u{e9}", "\u{1f600}", "x\u{1f600}y"];
        for h in words.iter().chain(&["aaaaaaaaab", "abababababc", "\u{e9}t\u{e9} x\u{1f600}y", "zzaabaabaabzz"]) {
            for n in words.iter().chain(&["aabaab", "abc", "ababc", "aaaaaaaaab"]) {
                assert_eq!(super::contains(h, n), h.contains(n), "{h:?} contains {n:?}");
            }
        }
    }
}

#[cfg(test)]
mod js_number_tests {
    #[test]
    fn numbers_become_strings_as_in_javascript() {
        // Expected values are JavaScript's String(x), from Node.
        let cases: &[(f64, &str)] = &[
            (0.1, "0.1"), (1e21, "1e+21"), (1e-7, "1e-7"), (123.0, "123"), (1.5e300, "1.5e+300"), (-0.0, "0"),
            (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
            (123456789012345680000.0, "123456789012345680000"), (0.000001, "0.000001"), (100.0, "100"), (1.5, "1.5"),
            (-2.5e-10, "-2.5e-10"), (9007199254740992.0, "9007199254740992"), (1e20, "100000000000000000000"),
            (123.456, "123.456"), (-1e21, "-1e+21"), (0.5, "0.5"), (1.0 / 3.0, "0.3333333333333333"), (4.35, "4.35"),
            (0.00001, "0.00001"), (12345678.9, "12345678.9"), (f64::NAN, "NaN"), (f64::INFINITY, "Infinity"),
            (1e-100, "1e-100"), (-7e99, "-7e+99"), (1.2345e-50, "1.2345e-50"), (2e-7, "2e-7"), (1.5e21, "1.5e+21"),
        ];
        for &(x, js) in cases {
            let mut out = String::new();
            super::push_js_number(x, &mut out);
            assert_eq!(out, js, "String({x:e})");
        }
    }

    #[test]
    fn strings_become_numbers_as_in_javascript() {
        // Expected values are JavaScript's Number(s), from Node. Rust's own
        // spellings ("inf", "nan", "infinity") are not numbers there.
        let cases: &[(&str, f64)] = &[
            ("", 0.0), (" \n\t", 0.0), (" 19.99 ", 19.99), ("\u{feff}1", 1.0), ("\u{85}1", f64::NAN), ("5.", 5.0), (".5", 0.5),
            ("-.5e1", -5.0),
            ("1e1000", f64::INFINITY), ("-1e-1000", -0.0), ("Infinity", f64::INFINITY), ("-Infinity", f64::NEG_INFINITY),
            ("inf", f64::NAN), ("-inf", f64::NAN), ("infinity", f64::NAN), ("NaN", f64::NAN), ("nan", f64::NAN), ("0x1F", 31.0),
            ("0o17", 15.0), ("0b101", 5.0), ("-0x1F", f64::NAN), ("0x", f64::NAN), ("1_000", f64::NAN), ("12px", f64::NAN),
            ("0x20000000000001", 9007199254740992.0), ("0.1", 0.1), ("-0", -0.0),
        ];
        for &(s, want) in cases {
            let got = super::to_number(&serde_json::Value::String(s.to_string()));
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "Number({s:?}) = {got}, want {want}");
        }
    }
}
