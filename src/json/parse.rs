//! Reading JSON text: strict RFC 8259 into a `serde_json::Value`, exactly as
//! `serde_json::from_str::<Value>` reads it, with its reasons and positions,
//! and the nesting bound every input is held to.
//!
//! The same value: integers that fit in a `u64`, or an `i64` when negative, stay
//! integers; every other number is the correctly rounded `f64` (out of range, an
//! error); duplicate keys keep the last value; lone surrogate escapes are errors.
//! The same refusals, with serde_json's message, `<reason> at line L column C`.
//! It is recursive descent bounded at serde_json's own 127 levels of containers,
//! so no input can exhaust the stack, and it measures the nesting as it goes:
//! deeper than [`MAX_DEPTH`] is `nesting_too_deep`. `tests/json_parser.rs` and the
//! `json` fuzz target compare it with serde_json on hand-picked and generated
//! text, values and messages alike. `parse_prefix` reads one value where it
//! stands in a longer text, for the readers of events and snapshot heads that
//! take their members in place.

use super::float;
use super::order::Order;
use super::write::escaped;
use crate::error::{Code, Error, Result};
use serde_json::{Map, Number, Value};
use std::fmt;

/// Largest JSON nesting accepted anywhere input comes in.
pub const MAX_DEPTH: usize = 64;

/// The deepest level a container may open at: one more (a 128th level of
/// brackets) is refused as a syntax error, "recursion limit exceeded", as
/// serde_json refuses it. Deeper than [`MAX_DEPTH`] but within this, text is
/// valid JSON and the nesting error is [`Code::NestingTooDeep`]; beyond it, it
/// is the caller's syntax error code. Keeping serde_json's limit keeps which
/// code each input gets as it was.
const RECURSION_LIMIT: usize = 127;

/// Parse JSON text, mapping syntax errors to `code` and refusing deep nesting.
///
/// A number beyond f64's finite range (`1e309`) is [`Code::NumberOutOfRange`]
/// in an event or a definition: it has no value to be read as (never infinity,
/// never null), and a client that sent it is told so by name. In a snapshot it
/// stays `code` (`invalid_snapshot`): idem never writes one.
pub fn parse(text: &str, code: Code, what: &str) -> Result<Value> {
    let (value, depth) = parse_with_depth(text).map_err(|e| {
        let code = if e.reason == NUMBER_OUT_OF_RANGE && code != Code::InvalidSnapshot { Code::NumberOutOfRange } else { code };
        Error::new(code, format!("{what} is not valid json: {e}"))
    })?;
    if depth > MAX_DEPTH {
        return Err(too_deep(what));
    }
    Ok(value)
}

/// Why text is not JSON: serde_json's reason (`"expected value"`, `"trailing
/// characters"`, ...) and its position, line and column counted in bytes from 1
/// and 0 as serde_json counts them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub reason: &'static str,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for SyntaxError {
    /// `<reason> at line <l> column <c>`, as serde_json displays its errors.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at line {} column {}", self.reason, self.line, self.column)
    }
}

// serde_json's reasons, word for word.
const EOF_LIST: &str = "EOF while parsing a list";
const EOF_OBJECT: &str = "EOF while parsing an object";
const EOF_STRING: &str = "EOF while parsing a string";
const EOF_VALUE: &str = "EOF while parsing a value";
const EXPECTED_COLON: &str = "expected `:`";
const EXPECTED_LIST_COMMA_OR_END: &str = "expected `,` or `]`";
const EXPECTED_OBJECT_COMMA_OR_END: &str = "expected `,` or `}`";
const EXPECTED_IDENT: &str = "expected ident";
const EXPECTED_VALUE: &str = "expected value";
const INVALID_ESCAPE: &str = "invalid escape";
const INVALID_NUMBER: &str = "invalid number";
const NUMBER_OUT_OF_RANGE: &str = "number out of range";
const CONTROL_CHARACTER: &str = "control character (\\u0000-\\u001F) found while parsing a string";
const KEY_MUST_BE_A_STRING: &str = "key must be a string";
const LONE_SURROGATE: &str = "lone leading surrogate in hex escape";
const TRAILING_COMMA: &str = "trailing comma";
const TRAILING_CHARACTERS: &str = "trailing characters";
const UNEXPECTED_END_OF_HEX_ESCAPE: &str = "unexpected end of hex escape";
const RECURSION_LIMIT_EXCEEDED: &str = "recursion limit exceeded";

/// [`parse`] without the nesting bound: the value of JSON text, as
/// `serde_json::from_str::<Value>` reads it.
pub fn parse_value(text: &str) -> std::result::Result<Value, SyntaxError> {
    parse_with_depth(text).map(|(value, _)| value)
}

/// The value of JSON text and its nesting depth (1 for a scalar or an empty
/// container, one more per level of containers around the deepest value), as
/// [`check_depth`] counts it, so that no second walk over the value is needed.
///
/// Recursive descent, one [`Parser::value`] call per level, bounded by
/// [`RECURSION_LIMIT`] as serde_json bounds its own recursion: no input can
/// exhaust the call stack (which wasm does not even guard). An iterative parser
/// would allocate its stack of open containers on every call, which cost a
/// reduce about 1% more instructions (callgrind, `benches/profile.mjs`).
pub fn parse_with_depth(text: &str) -> std::result::Result<(Value, usize), SyntaxError> {
    let mut p = Parser { text, b: text.as_bytes(), i: 0, depth: 0 };
    let value = p.value(1)?;
    if p.whitespace().is_some() {
        return Err(p.peek_error(TRAILING_CHARACTERS));
    }
    Ok((value, p.depth))
}

/// The JSON value at the start of `text`, the offset where it ends and its
/// nesting depth (as [`parse_with_depth`] counts it); what follows is left
/// unread. It is the value a parse of any text that holds `text` from a value
/// position on finds there, so a member of a larger document can be read in
/// place without first finding where it ends.
pub fn parse_prefix(text: &str) -> std::result::Result<(Value, usize, usize), SyntaxError> {
    let mut p = Parser { text, b: text.as_bytes(), i: 0, depth: 0 };
    let value = p.value(1)?;
    Ok((value, p.i, p.depth))
}

/// The [`Order`] of JSON text that [`parse_prefix`] reads as a value; `Leaf`
/// for text it refuses. Read by the same parser, so its names are the keys
/// of that value.
pub fn order_of(text: &str) -> Order {
    let mut p = Parser { text, b: text.as_bytes(), i: 0, depth: 0 };
    p.order(1).unwrap_or_default()
}

/// The reading position in JSON text. Errors take their position from it the
/// way serde_json's do: [`Parser::error`] for a byte already consumed (at `i`),
/// [`Parser::peek_error`] for one only looked at (at `i + 1`).
struct Parser<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    /// The deepest level a value was found at so far.
    depth: usize,
}

impl Parser<'_> {
    /// The value that starts at the next byte that is not whitespace, `level`
    /// deep (1: the whole text).
    fn value(&mut self, level: usize) -> std::result::Result<Value, SyntaxError> {
        self.depth = self.depth.max(level);
        match self.whitespace() {
            None => Err(self.peek_error(EOF_VALUE)),
            Some(b'[' | b'{') if level > RECURSION_LIMIT => Err(self.peek_error(RECURSION_LIMIT_EXCEEDED)),
            Some(b'[') => {
                self.i += 1;
                self.array(level)
            }
            Some(b'{') => {
                self.i += 1;
                self.object(level)
            }
            Some(b'"') => {
                self.i += 1;
                self.string().map(Value::String)
            }
            Some(b'n') => self.ident(b"null", Value::Null),
            Some(b't') => self.ident(b"true", Value::Bool(true)),
            Some(b'f') => self.ident(b"false", Value::Bool(false)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.peek_error(EXPECTED_VALUE)),
        }
    }

    /// The shape of the value that starts at the next byte that is not
    /// whitespace: its arrays and objects walked here, its scalars read by
    /// [`Parser::value`].
    fn order(&mut self, level: usize) -> std::result::Result<Order, SyntaxError> {
        let close = match self.whitespace() {
            Some(b'[') if level <= RECURSION_LIMIT => b']',
            Some(b'{') if level <= RECURSION_LIMIT => b'}',
            _ => return self.value(level).map(|_| Order::Leaf),
        };
        self.i += 1;
        let mut items = Vec::new();
        let mut members: Vec<(String, Order)> = Vec::new();
        if self.whitespace() != Some(close) {
            loop {
                if close == b']' {
                    items.push(self.order(level + 1)?);
                } else {
                    if self.whitespace() != Some(b'"') {
                        return Err(self.peek_error(KEY_MUST_BE_A_STRING));
                    }
                    let key = self.key()?;
                    let shape = self.order(level + 1)?;
                    match members.iter_mut().find(|(k, _)| *k == key) {
                        Some(slot) => slot.1 = shape,
                        None => members.push((key, shape)),
                    }
                }
                match self.whitespace() {
                    Some(b',') => self.i += 1,
                    Some(b) if b == close => break,
                    _ => return Err(self.peek_error(EXPECTED_VALUE)),
                }
            }
        }
        self.i += 1;
        Ok(if close == b']' { Order::Array(items) } else { Order::Object(members) })
    }

    /// The rest of an array whose `[` was consumed, `level` deep.
    fn array(&mut self, level: usize) -> std::result::Result<Value, SyntaxError> {
        let mut items = Vec::new();
        match self.whitespace() {
            None => return Err(self.peek_error(EOF_LIST)),
            Some(b']') => {
                self.i += 1;
                return Ok(Value::Array(items));
            }
            Some(_) => {}
        }
        loop {
            items.push(self.value(level + 1)?);
            match self.whitespace() {
                Some(b',') => {
                    self.i += 1;
                    match self.whitespace() {
                        Some(b']') => return Err(self.peek_error(TRAILING_COMMA)),
                        Some(_) => {}
                        None => return Err(self.peek_error(EOF_VALUE)),
                    }
                }
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Array(items));
                }
                Some(_) => return Err(self.peek_error(EXPECTED_LIST_COMMA_OR_END)),
                None => return Err(self.peek_error(EOF_LIST)),
            }
        }
    }

    /// The rest of an object whose `{` was consumed, `level` deep.
    fn object(&mut self, level: usize) -> std::result::Result<Value, SyntaxError> {
        let mut map = Map::new();
        match self.whitespace() {
            None => return Err(self.peek_error(EOF_OBJECT)),
            Some(b'}') => {
                self.i += 1;
                return Ok(Value::Object(map));
            }
            Some(b'"') => {}
            Some(_) => return Err(self.peek_error(KEY_MUST_BE_A_STRING)),
        }
        loop {
            let key = self.key()?;
            let value = self.value(level + 1)?;
            // A key given twice keeps its last value, as serde_json does.
            map.insert(key, value);
            match self.whitespace() {
                Some(b',') => {
                    self.i += 1;
                    match self.whitespace() {
                        Some(b'"') => {}
                        Some(b'}') => return Err(self.peek_error(TRAILING_COMMA)),
                        Some(_) => return Err(self.peek_error(KEY_MUST_BE_A_STRING)),
                        None => return Err(self.peek_error(EOF_VALUE)),
                    }
                }
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(map));
                }
                Some(_) => return Err(self.peek_error(EXPECTED_OBJECT_COMMA_OR_END)),
                None => return Err(self.peek_error(EOF_OBJECT)),
            }
        }
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline(always)]
    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    /// The next byte that is not JSON whitespace, not consumed.
    #[inline]
    fn whitespace(&mut self) -> Option<u8> {
        while let Some(c) = self.peek() {
            if !matches!(c, b' ' | b'\n' | b'\t' | b'\r') {
                return Some(c);
            }
            self.i += 1;
        }
        None
    }

    #[cold]
    fn error(&self, reason: &'static str) -> SyntaxError {
        self.error_at(self.i, reason)
    }

    #[cold]
    fn peek_error(&self, reason: &'static str) -> SyntaxError {
        self.error_at((self.i + 1).min(self.b.len()), reason)
    }

    /// Line (from 1) and column (bytes since the line's start) of byte `at`.
    #[cold]
    fn error_at(&self, at: usize, reason: &'static str) -> SyntaxError {
        let before = &self.b[..at.min(self.b.len())];
        let line_start = before.iter().rposition(|&c| c == b'\n').map_or(0, |n| n + 1);
        let line = 1 + before[..line_start].iter().filter(|&&c| c == b'\n').count();
        SyntaxError { reason, line, column: at - line_start }
    }

    /// `null`, `true` or `false`, whose first byte was looked at.
    fn ident(&mut self, word: &[u8], value: Value) -> std::result::Result<Value, SyntaxError> {
        self.i += 1;
        for &want in &word[1..] {
            match self.next() {
                None => return Err(self.error(EOF_VALUE)),
                Some(c) if c != want => return Err(self.error(EXPECTED_IDENT)),
                Some(_) => {}
            }
        }
        Ok(value)
    }

    /// An object key, whose opening quote was looked at, and the colon after it.
    fn key(&mut self) -> std::result::Result<String, SyntaxError> {
        self.i += 1;
        let key = self.string()?;
        match self.whitespace() {
            Some(b':') => {
                self.i += 1;
                Ok(key)
            }
            Some(_) => Err(self.peek_error(EXPECTED_COLON)),
            None => Err(self.peek_error(EOF_OBJECT)),
        }
    }

    /// The rest of a string whose opening quote was consumed, through its
    /// closing quote.
    fn string(&mut self) -> std::result::Result<String, SyntaxError> {
        let mut out = String::new();
        let mut start = self.i;
        loop {
            // Eight bytes at a time while none of them ends the run of plain
            // text; then straight to the first that does.
            while let Some(word) = self.b.get(self.i..self.i + 8).and_then(|w| w.try_into().ok()).map(u64::from_le_bytes) {
                let m = escaped(word);
                if m != 0 {
                    self.i += (m.trailing_zeros() / 8) as usize;
                    break;
                }
                self.i += 8;
            }
            let Some(c) = self.peek() else {
                self.i = self.b.len();
                return Err(self.error(EOF_STRING));
            };
            match c {
                b'"' => {
                    // The text is a `str` and `start` and `i` are at ASCII
                    // bytes, so the run between them is whole characters.
                    let run = self.text.get(start..self.i).unwrap_or("");
                    self.i += 1;
                    if out.is_empty() {
                        return Ok(run.to_string());
                    }
                    out.push_str(run);
                    return Ok(out);
                }
                b'\\' => {
                    out.push_str(self.text.get(start..self.i).unwrap_or(""));
                    self.i += 1;
                    self.escape(&mut out)?;
                    start = self.i;
                }
                0x00..=0x1f => {
                    self.i += 1;
                    return Err(self.error(CONTROL_CHARACTER));
                }
                _ => self.i += 1,
            }
        }
    }

    /// One escape sequence, its backslash consumed, appended to `out`.
    fn escape(&mut self, out: &mut String) -> std::result::Result<(), SyntaxError> {
        let Some(c) = self.next() else { return Err(self.error(EOF_STRING)) };
        let ch = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode_escape(out),
            _ => return Err(self.error(INVALID_ESCAPE)),
        };
        out.push(ch);
        Ok(())
    }

    /// A `\uXXXX` escape, `\u` consumed: a character of the Basic Multilingual
    /// Plane, or a UTF-16 surrogate pair written as two escapes. A surrogate
    /// without its partner is an error, as it is for serde_json.
    #[cold]
    fn unicode_escape(&mut self, out: &mut String) -> std::result::Result<(), SyntaxError> {
        let high = self.hex4()?;
        let code = match high {
            0xdc00..=0xdfff => return Err(self.error(LONE_SURROGATE)),
            0xd800..=0xdbff => {
                for want in [b'\\', b'u'] {
                    match self.next() {
                        None => return Err(self.error(EOF_STRING)),
                        Some(c) if c != want => return Err(self.error(UNEXPECTED_END_OF_HEX_ESCAPE)),
                        Some(_) => {}
                    }
                }
                let low = self.hex4()?;
                if !(0xdc00..=0xdfff).contains(&low) {
                    return Err(self.error(LONE_SURROGATE));
                }
                0x1_0000 + (((high - 0xd800) << 10) | (low - 0xdc00))
            }
            _ => high,
        };
        // Never `None`: surrogates were handled above.
        out.push(char::from_u32(code).ok_or_else(|| self.error(LONE_SURROGATE))?);
        Ok(())
    }

    /// Four hex digits (either case).
    fn hex4(&mut self) -> std::result::Result<u32, SyntaxError> {
        let Some(digits) = self.b.get(self.i..self.i + 4) else {
            self.i = self.b.len();
            return Err(self.error(EOF_STRING));
        };
        self.i += 4;
        let mut v = 0;
        for &d in digits {
            let n = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return Err(self.error(INVALID_ESCAPE)),
            };
            v = (v << 4) | n as u32;
        }
        Ok(v)
    }

    /// A number, at its `-` or first digit. Integers stay integers when they
    /// fit (a `u64`, or an `i64` when negative); everything else is the `f64`
    /// nearest to the decimal text (`float::decimal`, as serde_json's
    /// `float_roundtrip` reads it). Out of range is an error, not infinity.
    fn number(&mut self) -> std::result::Result<Value, SyntaxError> {
        let start = self.i;
        let positive = self.peek() != Some(b'-');
        if !positive {
            self.i += 1;
        }
        // The integer part; `int` is its value while it fits in a u64.
        let mut int = Some(0u64);
        // Whether any digit (integer or fraction) is not 0.
        let mut nonzero = false;
        match self.next() {
            None => return Err(self.error(EOF_VALUE)),
            Some(b'0') => {
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.peek_error(INVALID_NUMBER));
                }
            }
            Some(c @ b'1'..=b'9') => {
                nonzero = true;
                int = Some((c - b'0') as u64);
                while let Some(c @ b'0'..=b'9') = self.peek() {
                    self.i += 1;
                    int = int.and_then(|v| v.checked_mul(10)).and_then(|v| v.checked_add((c - b'0') as u64));
                }
            }
            Some(_) => return Err(self.error(INVALID_NUMBER)),
        }
        let mut float = int.is_none();
        if self.peek() == Some(b'.') {
            self.i += 1;
            float = true;
            let digits = self.i;
            while let Some(c @ b'0'..=b'9') = self.peek() {
                nonzero |= c != b'0';
                self.i += 1;
            }
            if self.i == digits {
                let reason = if self.peek().is_some() { INVALID_NUMBER } else { EOF_VALUE };
                return Err(self.peek_error(reason));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            float = true;
            let positive_exp = match self.peek() {
                Some(b'+') => {
                    self.i += 1;
                    true
                }
                Some(b'-') => {
                    self.i += 1;
                    false
                }
                _ => true,
            };
            let mut exp = match self.next() {
                None => return Err(self.error(EOF_VALUE)),
                Some(c @ b'0'..=b'9') => (c - b'0') as i32,
                Some(_) => return Err(self.error(INVALID_NUMBER)),
            };
            while let Some(c @ b'0'..=b'9') = self.peek() {
                self.i += 1;
                match exp.checked_mul(10).and_then(|e| e.checked_add((c - b'0') as i32)) {
                    Some(e) => exp = e,
                    // An exponent beyond i32: infinity (an error, where the
                    // digit that overflowed is, as serde_json reports it) or zero.
                    None if nonzero && positive_exp => return Err(self.error(NUMBER_OUT_OF_RANGE)),
                    None => {
                        while let Some(b'0'..=b'9') = self.peek() {
                            self.i += 1;
                        }
                        return Ok(float_value(if positive { 0.0 } else { -0.0 }));
                    }
                }
            }
        }
        match int {
            Some(u) if !float && positive => return Ok(Value::Number(u.into())),
            // Negative integers down to i64::MIN; `-0` is a float, as in serde_json.
            Some(u) if !float && u != 0 && u <= 1 << 63 => return Ok(Value::Number((u as i64).wrapping_neg().into())),
            _ => {}
        }
        let f = float::decimal(self.b.get(start..self.i).unwrap_or_default());
        if f.is_infinite() {
            return Err(self.error(NUMBER_OUT_OF_RANGE));
        }
        Ok(float_value(f))
    }
}

/// A finite `f64` as a JSON number.
fn float_value(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

fn too_deep(what: &str) -> Error {
    Error::new(Code::NestingTooDeep, format!("{what} is nested deeper than {MAX_DEPTH} levels"))
}

/// Refuse values nested deeper than [`MAX_DEPTH`].
pub fn check_depth(value: &Value, what: &str) -> Result<()> {
    if deeper_than_max(value, 1) {
        return Err(too_deep(what));
    }
    Ok(())
}

/// Whether `value`, found at depth `d` of some JSON (1: the top), keeps that
/// JSON within [`MAX_DEPTH`] levels.
pub fn within_depth(value: &Value, d: usize) -> bool {
    !deeper_than_max(value, d)
}

/// Whether some value is nested deeper than `MAX_DEPTH` (`d` is the depth of
/// `value`). The recursion stops one level past the limit, so it is at most
/// `MAX_DEPTH + 1` frames deep whatever the value, and allocates nothing.
fn deeper_than_max(value: &Value, d: usize) -> bool {
    if d > MAX_DEPTH {
        return true;
    }
    match value {
        Value::Array(items) => items.iter().any(|i| deeper_than_max(i, d + 1)),
        Value::Object(map) => map.values().any(|i| deeper_than_max(i, d + 1)),
        _ => false,
    }
}
