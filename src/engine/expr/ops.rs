//! The operators, one function per family, each called through the pointer
//! its node keeps (`OPS`).

use super::*;

/// An operator's argument nodes with what evaluating them needs.
#[derive(Clone, Copy)]
pub(super) struct Args<'a, 'b> {
    pub(super) nodes: &'a [Node],
    pub(super) data: Data<'a>,
    pub(super) depth: usize,
    pub(super) budget: &'b Budget,
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

    /// Each argument of arithmetic operator `op` as a number ([`operand`]),
    /// in order, stopping at the first that fails to evaluate or is not a number.
    fn numbers(&self, op: Op) -> std::result::Result<Vec<f64>, Stop> {
        (0..self.nodes.len()).map(|i| self.number(op, i)).collect()
    }

    /// Argument `i` of arithmetic operator `op` as a number; a missing
    /// argument is null, and fails as null does.
    fn number(&self, op: Op, i: usize) -> std::result::Result<f64, Stop> {
        let v = self.arg(i)?;
        operand(&v).map_err(|kind| Stop::NotNumeric(op, i.min(u8::MAX as usize) as u8, kind))
    }
}

/// The function that evaluates one family of operators.
pub(super) type OpFn = for<'a, 'b> fn(Op, Args<'a, 'b>) -> Eval<'a>;

#[inline(never)]
pub(super) fn op_var<'a>(_: Op, a: Args<'a, '_>) -> Eval<'a> {
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
pub(super) fn op_missing<'a>(op: Op, a: Args<'a, '_>) -> Eval<'a> {
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
pub(super) fn op_logic<'a>(op: Op, a: Args<'a, '_>) -> Eval<'a> {
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
pub(super) fn op_test<'a>(op: Op, a: Args<'a, '_>) -> Eval<'a> {
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
pub(super) fn op_arith<'a>(op: Op, a: Args<'a, '_>) -> Eval<'a> {
    let r = match op {
        Op::Max | Op::Min => {
            let nums = a.numbers(op)?;
            if nums.is_empty() {
                return Err(Stop::NotANumber);
            }
            if op == Op::Max {
                nums.into_iter().fold(f64::NEG_INFINITY, f64::max)
            } else {
                nums.into_iter().fold(f64::INFINITY, f64::min)
            }
        }
        Op::Add => a.numbers(op)?.into_iter().sum(),
        Op::Mul => a.numbers(op)?.into_iter().product(),
        // `-` reads its first two arguments, as JSONLogic's does.
        Op::Sub => match a.nodes.len() {
            0 => f64::NAN,
            1 => -a.number(op, 0)?,
            _ => a.number(op, 0)? - a.number(op, 1)?,
        },
        Op::Div => a.number(op, 0)? / a.number(op, 1)?,
        _ => rem(a.number(op, 0)?, a.number(op, 1)?),
    };
    // Not JSONLogic's `null`/`NaN`: an operand that is not a number, or a
    // result that is not a finite number, fails the evaluation
    // (docs/expressions.md).
    if !r.is_finite() {
        return Err(Stop::NotANumber);
    }
    Ok(Cow::Owned(num(r)))
}

/// `%`: the remainder of a truncating division, which Rust's `%` on `f64`
/// and JavaScript's `%` both are (C's `fmod`).
pub(super) fn rem(x: f64, y: f64) -> f64 {
    x % y
}

#[inline(never)]
pub(super) fn op_each<'a>(op: Op, a: Args<'a, '_>) -> Eval<'a> {
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
pub(super) fn op_reduce<'a>(_: Op, a: Args<'a, '_>) -> Eval<'a> {
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
pub(super) fn op_merge<'a>(_: Op, a: Args<'a, '_>) -> Eval<'a> {
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
pub(super) fn op_in<'a>(_: Op, a: Args<'a, '_>) -> Eval<'a> {
    let (needle, hay) = (a.arg(0)?, a.arg(1)?);
    Ok(Cow::Owned(Value::Bool(match hay.as_ref() {
        Value::Array(arr) => arr.iter().any(|x| strict_eq(x, &needle)),
        Value::String(s) => contains(s, &to_js_string(&needle)),
        _ => false,
    })))
}

#[inline(never)]
pub(super) fn op_cat<'a>(_: Op, a: Args<'a, '_>) -> Eval<'a> {
    let mut s = String::with_capacity(32);
    for n in a.nodes {
        // As json-logic-js's `cat` (JavaScript's `join`): null, a missing value, is "", not "null".
        match &*a.eval(n)? {
            Value::Null => {}
            v => push_js_string(v, &mut s),
        }
    }
    charge(a.budget, s.len() / 16)?;
    Ok(Cow::Owned(Value::String(s)))
}

#[inline(never)]
pub(super) fn op_substr<'a>(_: Op, a: Args<'a, '_>) -> Eval<'a> {
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
