//! The JavaScript semantics JSONLogic inherits: `ToNumber`, `ToString`,
//! `String(n)`, truthiness, `==`, `===` and relational comparison, on JSON values.

use super::*;

pub(super) fn num(f: f64) -> Value {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
        Value::Number(Number::from(f as i64))
    } else {
        Number::from_f64(f).map(Value::Number).unwrap_or(Value::Null)
    }
}

/// JavaScript `ToNumber`, as JSONLogic inherits it.
pub(super) fn to_number(v: &Value) -> f64 {
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

/// What an arithmetic operand is when it is not a number, for the error that
/// names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Null,
    Bool,
    Array,
    Object,
    /// A string that is empty, blank, or not a number JavaScript reads.
    Text,
}

impl Kind {
    pub(super) fn describe(self) -> &'static str {
        match self {
            Kind::Null => "null (a missing value reads as null)",
            Kind::Bool => "a boolean",
            Kind::Array => "an array",
            Kind::Object => "an object",
            Kind::Text => "a string that is not a number",
        }
    }
}

/// An operand of arithmetic (`+ - * / % min max`) as a number: a number, or a
/// string JavaScript reads as one (`"19.99"`, `" 5 "`, `"1e2"`, `"0x1F"`).
/// Where JSONLogic's `ToNumber` makes a number up (null, `""`, `false` and
/// `[]` count as 0, `true` as 1, `[5]` as 5) or gives `NaN`, this refuses,
/// so that a missing payload field fails the event instead of counting as 0.
pub(super) fn operand(v: &Value) -> std::result::Result<f64, Kind> {
    match v {
        Value::Number(n) => n.as_f64().ok_or(Kind::Text),
        Value::String(s) if s.trim_matches(crate::float::is_js_space).is_empty() => Err(Kind::Text),
        Value::String(s) => Some(crate::float::js_string_to_number(s)).filter(|f| !f.is_nan()).ok_or(Kind::Text),
        Value::Null => Err(Kind::Null),
        Value::Bool(_) => Err(Kind::Bool),
        Value::Array(_) => Err(Kind::Array),
        Value::Object(_) => Err(Kind::Object),
    }
}

/// JavaScript `ToString`.
pub(super) fn to_js_string(v: &Value) -> String {
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
pub(super) fn push_js_string(v: &Value, out: &mut String) {
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
pub(super) fn push_js_number(f: f64, out: &mut String) {
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
    // `get` where the branches bound the index: no `str` index here can panic
    // (ARCHITECTURE.md, the invariant on `str` slices).
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
/// `str::contains` on a pattern would bring a `str` slice that can panic
/// (ARCHITECTURE.md, the invariant on `str` slices).
pub(super) fn contains(hay: &str, needle: &str) -> bool {
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

pub(super) fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(_), _) | (Value::Object(_), _) => false, // identity in JS: never equal across evaluations
        _ => a == b,
    }
}

/// JavaScript `==` (abstract equality) on JSON values.
pub(super) fn loose_eq(a: &Value, b: &Value) -> bool {
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

/// JavaScript relational comparison: arrays and objects become their strings
/// first (`ToPrimitive`: `[]` is `""`, `[5]` is `"5"`); two strings compare as
/// strings, anything else as numbers.
pub(super) fn less(a: &Value, b: &Value, or_equal: bool) -> bool {
    fn primitive(v: &Value) -> Cow<'_, Value> {
        match v {
            Value::Array(_) | Value::Object(_) => Cow::Owned(Value::String(to_js_string(v))),
            _ => Cow::Borrowed(v),
        }
    }
    let (a, b) = (primitive(a), primitive(b));
    if let (Value::String(x), Value::String(y)) = (&*a, &*b) {
        return if or_equal { x <= y } else { x < y };
    }
    let (x, y) = (to_number(&a), to_number(&b));
    if or_equal {
        x <= y
    } else {
        x < y
    }
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

