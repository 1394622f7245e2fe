//! Guards and computed values: JSONLogic (<https://jsonlogic.com>), compiled
//! once when the machine is loaded and evaluated without cloning the scope.
//!
//! Why our own evaluator rather than a crate: the maintained JSONLogic crate
//! (`datalogic-rs`) alone did not fit the wasm module's size budget
//! (benches/RESULTS.md, entry 44); this module implements the operators of the
//! JSONLogic specification (no impure `log`) and is checked against the official
//! JSONLogic test suite (`tests/jsonlogic/tests.json`) in `cargo test`.
//! `ops` holds the operators, one function per family; `js` the JavaScript
//! semantics JSONLogic inherits.
//!
//! Expressions read `context`, `event` (`id`, `type`, `payload`) and `state`, by
//! reference ([`Data::Process`]), never cloning the context per guard.
//!
//! An object of one member is an operator, and one idem does not know is
//! refused on load (`invalid_expression`), so a misspelt operator never
//! becomes data; data that is such an object is written `{"preserve": ...}`
//! (its argument is not evaluated), and such an object built from an
//! expression `{"eachKey": {"amount": ...}}` (both json-logic-engine's names). One extension:
//! an object of two or more members is an object literal whose values are
//! expressions (`{"amount": {"var": "context.total"}, "currency": "EUR"}`), so
//! payloads and responses can be built. A guard must be an operator, or the name
//! of one in the definition's `implementations`, never a literal that is always
//! true.
//!
//! Every evaluation has a work budget ([`EVAL_BUDGET`] values visited, built or
//! copied), so no definition can exhaust memory by feeding a growing value back
//! through `always` microsteps or `reduce` steps; a `reduce` accumulator is kept
//! within JSON's nesting bound.
//!
//! Arithmetic never makes a number up: an operand of `+ - * / % min max` that
//! is null (a missing value), a boolean, an array, an object or a string that
//! is not a number fails the evaluation (`expression_failed`), as does a
//! result that is not a finite number. The rules, beside json-logic-js's
//! answers, are in docs/expressions.md.

use crate::error::{Code, Error, Result};
use crate::json::object;
use serde_json::{Map, Number, Value};
use std::borrow::Cow;

mod js;
mod ops;

use js::*;
use ops::*;

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
/// each one's family: one table says which names exist, which operator each
/// is and what evaluates it, where a `match` on the names and another on the
/// operators would say it twice.
///
/// Each family is a function of its own, called through the pointer its node
/// keeps rather than from a `match` in [`eval`], so that no optimiser folds
/// the families back into one function: evaluating an expression touches only
/// the code of the operators it uses, which a wasm engine then compiles on
/// first use alone (benches/RESULTS.md, entry 17).
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

/// Whether `name` is an operator: an object with it as its one member is
/// evaluated as that operator (`in_state`, `preserve` and `eachKey` included). An object
/// with one member named otherwise is refused on load.
pub fn is_operator(name: &str) -> bool {
    name == IN_STATE || name == PRESERVE || name == EACH_KEY || op_of(name).is_some()
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

/// The operator whose argument is data, not an expression: `{"preserve":
/// {"plus": [1, 2]}}` is the object `{"plus": [1, 2]}`. Named as
/// json-logic-engine names it; the way to write an object of one member
/// (which would otherwise read as an operator) as a value.
pub const PRESERVE: &str = "preserve";

/// The operator that builds an object from expressions, one per member:
/// `{"eachKey": {"amount": {"var": "context.total"}}}`. Named as
/// json-logic-engine names it; the way to build an object of one member (an
/// object of two or more is built so without it).
pub const EACH_KEY: &str = "eachKey";

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
    /// An arithmetic operator's result is not a finite number (a division by
    /// zero, an overflow, `max` of nothing): JSONLogic would give `null`, `NaN`
    /// or an infinity, which stored would silently lose the value it was
    /// computed from.
    NotANumber,
    /// An arithmetic operator's argument (its index) is not a number: null (a
    /// missing value), a boolean, an array, an object or a string that is not
    /// a number, where JSONLogic would count it as 0 or 1 or give `NaN`.
    NotNumeric(Op, u8, Kind),
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
            Stop::NotNumeric(op, i, kind) => {
                let name = OPS.iter().find(|(_, o, _)| *o == op).map_or("", |(n, ..)| n);
                format!("\"{name}\" takes numbers, but its argument {} is {}", i as usize + 1, kind.describe())
            }
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
    /// Out of line: the one copy of this work, which guards share.
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
            // An object literal would always be true (one of one member is an
            // operator, checked by `compile`).
            Value::Object(m) if m.len() != 1 => return Err(literal_guard(path)),
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

/// The compiler's errors: an unknown operator (an object of one member not
/// named as one), or (no operator) nesting too deep. One function for both,
/// kept out of the compiler's path, which only fails through it.
#[cold]
#[inline(never)]
fn compile_error(path: &str, operator: Option<&str>) -> Error {
    match operator {
        Some(name) => Error::at(
            Code::InvalidExpression,
            path,
            format!("unknown operator \"{name}\" (an object of one member is an operator; write data as {{\"preserve\": {{\"{name}\": ...}}}})"),
        ),
        None => Error::at(Code::NestingTooDeep, path, "expression is nested too deeply"),
    }
}

/// A guard that is an object literal, which would always be true.
#[cold]
#[inline(never)]
fn literal_guard(path: &str) -> Error {
    Error::at(Code::InvalidExpression, path, "a guard is an operator, not an object literal (which is always true)")
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
            // The items' values, which are not the items as written where
            // one is `preserve`.
            let values = nodes.into_iter().filter_map(|n| if let Node::Lit(v) = n { Some(v) } else { None }).collect();
            return Ok(Node::Lit(Value::Array(values)));
        }
        Value::Object(m) => {
            let mut members = crate::machine::members(m);
            if let (Some((name, args)), None) = (members.next(), members.next()) {
                if name == PRESERVE {
                    return Ok(Node::Lit(cloned(args)));
                }
                if name == EACH_KEY {
                    return match args {
                        Value::Object(m) => template(m, path, depth),
                        _ => Err(Error::at(Code::InvalidExpression, path, "eachKey takes an object, each member's value an expression")),
                    };
                }
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
                return Err(compile_error(path, Some(name)));
            }
            return template(m, path, depth);
        }
        _ => {}
    }
    // A scalar: the value as written.
    Ok(Node::Lit(cloned(rule)))
}

/// An object whose members' values are expressions (the members of
/// `eachKey`, or an object of two or more members): a literal when they all are.
fn template(m: &Map<String, Value>, path: &str, depth: usize) -> Result<Node> {
    let mut fields = Vec::new();
    for (k, v) in crate::machine::members(m) {
        fields.push((k.clone(), compile(v, path, depth + 1)?));
    }
    if fields.iter().all(|(_, n)| matches!(n, Node::Lit(_))) {
        let mut lit = Map::new();
        for (k, n) in fields {
            if let Node::Lit(v) = n {
                lit.insert(k, v);
            }
        }
        return Ok(Node::Lit(Value::Object(lit)));
    }
    Ok(Node::Object(fields))
}

/// `v.clone()` out of line: the one copy the compiler and the builder share,
/// where `Value::clone`, inlined where it is called, would make one per call.
#[inline(never)]
pub(crate) fn cloned(v: &Value) -> Value {
    v.clone()
}

/// A literal `var` key split at its dots (none for the empty key), by the
/// builder's splitter (`machine::split_dot`), so that keys and state paths are
/// split by one function.
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
