//! JSON helpers: strict parsing with a nesting bound, canonical form and fingerprints.
//!
//! The parser is our own rather than serde_json's: it builds a
//! `serde_json::Value` directly, so the wasm module carries neither serde's
//! deserialization machinery nor the float formatting its error messages pull
//! in. It reads exactly what `serde_json::from_str::<Value>` reads, into the
//! same `Value`, and refuses everything else with serde_json's reason and
//! position (`tests/json_parser.rs` checks both against serde_json).
//!
//! The writers are our own too ([`write_json`], [`write_canonical`], [`to_value`]
//! for building values): they write what serde_json's writer writes, byte for
//! byte, and build the `Value`s its `to_value` builds, without serde's
//! serialization machinery in the wasm module (`tests/json_writer.rs`).

use crate::error::{Code, Error, Result};
use crate::float;
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

/// Canonical JSON: object keys sorted by code point, no insignificant whitespace.
/// Independent of how the parser orders maps, so fingerprints never depend on it.
pub fn canonical(value: &Value, out: &mut String) {
    let mut bytes = std::mem::take(out).into_bytes();
    write_canonical(value, &mut bytes);
    *out = utf8(bytes);
}

/// JSON text of `value`, appended to `out`: object members sorted by key (maps
/// keep the order they were written in, so that a definition's states keep
/// their document order; everything idem writes has its keys sorted, as it
/// always had), strings escaped by [`write_str`], integers in decimal, floats
/// by zmij as serde_json formats them. The same text as [`write_canonical`].
pub fn write_json(value: &Value, out: &mut Vec<u8>) {
    write_value(value, out, true);
}

/// A finite `f64` as serde_json writes it (the formatter it calls, zmij, called
/// the same way). A `Value` holds no other: `Number::from_f64` refuses
/// infinities and NaN.
pub fn push_f64(f: f64, out: &mut Vec<u8>) {
    let mut buffer = zmij::Buffer::new();
    out.extend_from_slice(buffer.format_finite(f).as_bytes());
}

/// Compact JSON text of `value`, as its `Display` writes it. Not through
/// `Display`, which is serde_json's serializer (see [`write_json`]).
pub fn to_text(value: &Value) -> String {
    let mut out = Vec::with_capacity(128);
    write_json(value, &mut out);
    utf8(out)
}

/// A JSON object from `"key": value` pairs, each value as serde_json
/// serializes it: serde_json's `json!` for one flat object, through
/// [`to_value`] (values built directly, see [`ToValue`]) rather than
/// serde_json's `to_value(..).unwrap()`, which is what `json!` expands to:
/// that would keep serde's serializer and the formatting of serde_json's error
/// in the wasm module. A nested object is another `object!`.
macro_rules! object {
    ($($body:tt)*) => {
        serde_json::Value::Object($crate::json::members! { $($body)* })
    };
}
pub(crate) use object;

/// [`object!`]'s map, for an object that gets more members before it is done
/// (`Value`'s `IndexMut` would add them too, but its panic message formats
/// the key with `{:?}`, which keeps core's string escaping in the wasm module).
macro_rules! members {
    ($($key:literal: $value:expr),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut map = serde_json::Map::new();
        $(map.insert(String::from($key), $crate::json::to_value(&$value));)*
        map
    }};
}
pub(crate) use members;

/// `value` as a JSON value, the value serde_json's `to_value` makes of it,
/// built directly (see [`ToValue`]).
pub fn to_value<T: ToValue + ?Sized>(value: &T) -> Value {
    value.to_value()
}

/// What `object!` and [`to_value`] take: a type made into the `Value` that
/// serde_json's `to_value` makes of it (strings, booleans, integers, `Value`s,
/// `None` as null, sequences as arrays, maps with string keys as objects), built
/// directly rather than through serde's serializer, which then stays out of the
/// wasm module. The snapshot's structs implement it in `snapshot.rs`.
pub trait ToValue {
    fn to_value(&self) -> Value;
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::String(self.to_string())
    }
}

impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::String(self.clone())
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
}

macro_rules! to_value_int {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                Value::Number(Number::from(*self))
            }
        }
    )*};
}
to_value_int!(u32, u64, usize, i64);

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::to_value)
    }
}

impl<T: ToValue> ToValue for [T] {
    fn to_value(&self) -> Value {
        Value::Array(self.iter().map(T::to_value).collect())
    }
}

impl<T: ToValue> ToValue for Vec<T> {
    fn to_value(&self) -> Value {
        self.as_slice().to_value()
    }
}

impl<T: ToValue> ToValue for std::collections::BTreeMap<String, T> {
    fn to_value(&self) -> Value {
        // One insert at a time: collecting into a map sorts its items first,
        // which would bring a sort into the wasm module.
        let mut map = Map::new();
        for (k, v) in self {
            map.insert(k.clone(), v.to_value());
        }
        Value::Object(map)
    }
}

/// Bytes written by the JSON writers here, which write UTF-8 only, as a
/// `String`. Checked, and a failure panics without formatting the error, which
/// would keep core's string escaping in the wasm module.
pub fn utf8(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(_) => unreachable!("the JSON writers write UTF-8"),
    }
}

/// JSON text of a string, quotes and escapes exactly as serde_json writes them:
/// `\"`, `\\`, `\b \t \n \f \r`, other control characters as `\u00xx`
/// (lowercase), everything else (DEL and non-ASCII included) as it is.
pub fn write_str(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    // Eight bytes at a time while none of them is escaped.
    let mut i = 0;
    while i < bytes.len() && plain(bytes, i) {
        i += 8;
    }
    out.reserve(bytes.len() + 2);
    if i >= bytes.len() {
        // Nothing to escape (the usual): the quotes and the bytes written at
        // once, not as three appends.
        let at = out.len();
        // SAFETY: `reserve` left room for `bytes.len() + 2` bytes from `at`,
        // and all of them are written before the length takes them in.
        unsafe {
            let p = out.as_mut_ptr().add(at);
            p.write(b'"');
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.add(1), bytes.len());
            p.add(bytes.len() + 1).write(b'"');
            out.set_len(at + bytes.len() + 2);
        }
        return;
    }
    out.push(b'"');
    let mut start = 0;
    while i < bytes.len() {
        if plain(bytes, i) {
            i += 8;
            continue;
        }
        let b = bytes[i];
        i += 1;
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x09 => b't',
            0x0a => b'n',
            0x0c => b'f',
            0x0d => b'r',
            0x00..=0x1f => b'u',
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i - 1]);
        start = i;
        if short == b'u' {
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 0xf) as usize]]);
        } else {
            out.extend_from_slice(&[b'\\', short]);
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// The bytes of `word` that `write_str` escapes, each marked by its high bit:
/// control characters (below 0x20), `"` and `\\`. The lowest mark is always
/// one of them (so it is not zero exactly when one is there): a borrow in
/// `x - ONES` starts only at a byte that is zero, and in `word - 0x20..` only
/// at a byte below 0x20, and only bytes above it can be marked by mistake;
/// bytes from 0x80 on are never marked.
#[inline(always)]
fn escaped(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    control | zero_byte(word ^ (ONES * b'"' as u64)) | zero_byte(word ^ (ONES * b'\\' as u64))
}

/// Whether none of the (at most) eight bytes of `b` from `i` is escaped.
#[inline(always)]
fn plain(b: &[u8], i: usize) -> bool {
    let word = match b.get(i..i + 8).and_then(|w| w.try_into().ok()) {
        Some(w) => u64::from_le_bytes(w),
        None => last_word(b, i),
    };
    escaped(word) == 0
}

/// The last bytes of `b`, from `i` (fewer than eight), as a word whose other
/// bytes are spaces, which are never escaped: most strings end, or are, shorter
/// than eight bytes, read in one or two loads rather than byte by byte.
#[inline(always)]
fn last_word(b: &[u8], i: usize) -> u64 {
    const SPACES: u64 = 0x2020_2020_2020_2020;
    let n = b.len() - i;
    if n >= 8 || n == 0 {
        return SPACES;
    }
    let end = b.len();
    if let Some(w) = end.checked_sub(8).and_then(|at| b.get(at..)).and_then(|w| w.try_into().ok()) {
        // The last eight, those before `i` made spaces.
        let keep = !0u64 << ((8 - n) * 8);
        return (u64::from_le_bytes(w) & keep) | (SPACES & !keep);
    }
    // Two loads that overlap when `n` is not a power of two.
    let u32_at = |at: usize| b.get(at..at + 4).and_then(|w| w.try_into().ok()).map_or(0, u32::from_le_bytes) as u64;
    let u16_at = |at: usize| b.get(at..at + 2).and_then(|w| w.try_into().ok()).map_or(0, u16::from_le_bytes) as u64;
    let w = match n {
        4.. => u32_at(i) | u32_at(end - 4) << ((n - 4) * 8),
        2.. => u16_at(i) | u16_at(end - 2) << ((n - 2) * 8),
        _ => b.get(i).map_or(0, |&c| c as u64),
    };
    w | SPACES << (n * 8)
}

/// JSON text of a scalar (null, boolean, number, string) as serde_json writes it.
fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Integers in decimal as itoa writes them; floats as serde_json writes them.
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => push_u64(u, out),
            (None, Some(i)) => {
                out.push(b'-');
                push_u64(i.unsigned_abs(), out);
            }
            _ => match n.as_f64() {
                Some(f) => push_f64(f, out),
                None => out.extend_from_slice(b"null"),
            },
        },
        Value::String(s) => write_str(s, out),
        Value::Array(_) | Value::Object(_) => write_json(value, out),
    }
}

/// `bytes` appended to `out`, out of line: for the writers off the per-event
/// path (`inspect`, `due`), where each literal piece of JSON would otherwise
/// bring its own copy of `Vec`'s growth code.
#[inline(never)]
pub fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(bytes);
}

/// `v` in decimal, as serde_json writes a `u64`.
pub fn push_u64(mut v: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// As [`write_json`], but each object's members in the order the map keeps
/// them: for a state value, whose parallel regions are in document order.
pub fn write_in_order(value: &Value, out: &mut Vec<u8>) {
    write_value(value, out, false);
}

/// [`canonical`], appended to bytes; writes no intermediate strings.
pub fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    write_value(value, out, true);
}

/// [`write_json`] and, when `canonical`, [`write_canonical`]: one copy of the
/// code for both (they differ only for a map that does not iterate in key order).
fn write_value(value: &Value, out: &mut Vec<u8>, canonical: bool) {
    match value {
        Value::Object(map) => {
            // Code point order is byte order in UTF-8, the order of `String`'s `Ord`.
            // serde_json's map already iterates in it (a BTreeMap unless its
            // `preserve_order` feature is on), so sorting is needed only when
            // not: the order is checked as the members are written.
            let start = out.len();
            out.push(b'{');
            let mut prev: Option<&String> = None;
            for (k, v) in map {
                if let Some(p) = prev {
                    // Keys whose first bytes differ are ordered by those alone.
                    if canonical && p.as_bytes().first() >= k.as_bytes().first() && p >= k {
                        out.truncate(start);
                        return write_sorted(map, out);
                    }
                    out.push(b',');
                }
                prev = Some(k);
                write_str(k, out);
                out.push(b':');
                write_value(v, out, canonical);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out, canonical);
            }
            out.push(b']');
        }
        other => write_scalar(other, out),
    }
}

/// The canonical JSON of an object whose map does not iterate in key order.
fn write_sorted(map: &Map<String, Value>, out: &mut Vec<u8>) {
    // Insertion sort: never run with serde_json's default map, and small,
    // where a library sort would add its own code to the module.
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    for i in 1..entries.len() {
        let mut j = i;
        while j > 0 && entries[j - 1].0 > entries[j].0 {
            entries.swap(j - 1, j);
            j -= 1;
        }
    }
    out.push(b'{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(k, out);
        out.push(b':');
        write_canonical(v, out);
    }
    out.push(b'}');
}

/// 128-bit xxh3 of the canonical JSON of `type` and `payload`, as 32 hex digits.
pub fn fingerprint(event_type: &str, payload: &Value) -> String {
    fingerprint_sized(event_type, payload).0
}

/// [`fingerprint`], and the length of the payload's canonical JSON: the length
/// of its compact JSON as serde_json writes it, since serde_json's maps iterate
/// in key order (so the canonical form is that text; see the tests).
pub fn fingerprint_sized(event_type: &str, payload: &Value) -> (String, usize) {
    let (fp, size) = fingerprint_digits(event_type, payload);
    (String::from(&*fp), size)
}

/// A fingerprint's 32 hex digits, held in place rather than in a `String` of
/// their own (read as a `str`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint([u8; 32]);

impl std::ops::Deref for Fingerprint {
    type Target = str;

    fn deref(&self) -> &str {
        // SAFETY: only `fingerprint_digits` makes one, of hex digits (ASCII).
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }
}

/// [`fingerprint_sized`], its digits in a [`Fingerprint`].
pub fn fingerprint_digits(event_type: &str, payload: &Value) -> (Fingerprint, usize) {
    let mut s = Vec::with_capacity(128);
    s.extend_from_slice(b"{\"payload\":");
    write_canonical(payload, &mut s);
    let size = s.len() - b"{\"payload\":".len();
    s.extend_from_slice(b",\"type\":");
    write_str(event_type, &mut s);
    s.push(b'}');
    let h = xxhash_rust::xxh3::xxh3_128(&s);
    let mut fp = [0u8; 32];
    fp[..16].copy_from_slice(&hex_digits((h >> 64) as u64));
    fp[16..].copy_from_slice(&hex_digits(h as u64));
    (Fingerprint(fp), size)
}

/// 64-bit xxh3 of bytes (used for deterministic jitter and content hashes).
pub fn hash64(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

pub fn hex128(h: u128) -> String {
    let mut out = Vec::with_capacity(32);
    push_hex128(h, &mut out);
    utf8(out)
}

/// The 32 lowercase hex digits of `h`, appended.
fn push_hex128(h: u128, out: &mut Vec<u8>) {
    out.extend_from_slice(&hex_digits((h >> 64) as u64));
    out.extend_from_slice(&hex_digits(h as u64));
}

/// The 16 lowercase hex digits of `v`, most significant first, all at once:
/// each nibble moved to a byte of its own, the most significant to the lowest
/// byte (little-endian order: wasm has no byte swap), then made its digit
/// without a table or a branch (a digit loop was a tenth of encoding a snapshot).
/// Each step is written out for both halves: at opt-level "z" a closure is a call.
pub(crate) fn hex_digits(v: u64) -> [u8; 16] {
    const L: u64 = 0x0101_0101_0101_0101;
    const BYTES: u64 = 0x0000_00ff_0000_00ff;
    const NIBBLES: u64 = 0x000f_000f_000f_000f;
    let (mut hi, mut lo) = (v >> 48 | (v >> 32 & 0xffff) << 32, v >> 16 & 0xffff | (v & 0xffff) << 32);
    hi = (hi >> 8 & BYTES) | (hi & BYTES) << 16;
    lo = (lo >> 8 & BYTES) | (lo & BYTES) << 16;
    hi = (hi >> 4 & NIBBLES) | (hi & NIBBLES) << 8;
    lo = (lo >> 4 & NIBBLES) | (lo & NIBBLES) << 8;
    // A nibble plus 6 carries into bit 4 exactly when its digit is a letter,
    // which is 39 places further on than `'0' + nibble`.
    hi += b'0' as u64 * L + ((hi + 6 * L) >> 4 & L) * 39;
    lo += b'0' as u64 * L + ((lo + 6 * L) >> 4 & L) * 39;
    (hi as u128 | (lo as u128) << 64).to_le_bytes()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fingerprint_ignores_key_order() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":{"y":2,"x":[1,{"q":1,"p":2}]}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":{"x":[1,{"p":2,"q":1}],"y":2},"b":1}"#).unwrap();
        assert_eq!(fingerprint("PAY", &a), fingerprint("PAY", &b));
        assert_ne!(fingerprint("PAY", &a), fingerprint("PAID", &a));
        assert_ne!(fingerprint("PAY", &json!({"b":2})), fingerprint("PAY", &json!({"b":1})));
    }

    /// The digits held in place are the hex of the 128-bit hash of the text.
    #[test]
    fn fingerprint_digits_are_the_hash_in_hex() {
        let big = Value::String("x".repeat(10_000));
        for payload in [json!({"a": 1}), big, json!({}), json!({"b": [1, 2, {"c": "d"}]}), json!(null)] {
            let (fp, size) = fingerprint_digits("PAY", &payload);
            let mut text = String::new();
            canonical_reference(&json!({"payload": payload, "type": "PAY"}), &mut text);
            let h = xxhash_rust::xxh3::xxh3_128(text.as_bytes());
            assert_eq!(&*fp, format!("{h:032x}"));
            assert!(fp.bytes().all(|b| b.is_ascii_hexdigit()));
            assert_eq!(size, serde_json::to_string(&sorted(&payload)).unwrap().len());
            assert_eq!(fingerprint_sized("PAY", &payload), (fp.to_string(), size));
        }
    }

    /// `v` with every object's members in key order: the text serde_json
    /// writes of it is then the text idem's writers write of `v`.
    pub(crate) fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut members: Vec<(&String, &Value)> = m.iter().collect();
                members.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(members.into_iter().map(|(k, v)| (k.clone(), sorted(v))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }

    /// The canonical form as it was first written (a `String` per key and per
    /// leaf): what every stored fingerprint was computed from.
    fn canonical_reference(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    canonical_reference(&map[k], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    canonical_reference(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }

    #[test]
    fn canonical_and_fingerprint_match_the_reference() {
        let values = [
            json!(null),
            json!({}),
            json!([]),
            json!({"paymentId": "q-1", "amount": 1}),
            json!({"z": [1, 2.5, -0.0, 1e300, -7, 18446744073709551615u64], "a": {"é": "\u{1F600}", "": null}}),
            json!({"ctl": "a\"b\\c\n\t\u{0001}\u{001f}/", "ß": true, "B": false, "b": [[], {}, [{}]]}),
            json!("just a string with \u{2028} in it"),
            json!(0.1 + 0.2),
        ];
        for v in &values {
            let mut want = String::new();
            canonical_reference(v, &mut want);
            let mut got = String::from("prefix");
            canonical(v, &mut got);
            assert_eq!(got, format!("prefix{want}"));
            let old = format!("{{\"payload\":{want},\"type\":{}}}", Value::String("T\"é".into()));
            assert_eq!(fingerprint("T\"é", v), format!("{:032x}", xxhash_rust::xxh3::xxh3_128(old.as_bytes())));
        }
        // Every ASCII character, and some beyond, escaped as serde_json escapes them.
        let mut all: String = (0u8..=0x7f).map(char::from).collect();
        all.push_str("é\u{2028}\u{1F600}\u{FFFF}");
        for s in [all.as_str(), "", "plain", "\\", "\"", "tail\u{1}"] {
            let mut got = Vec::new();
            write_str(s, &mut got);
            assert_eq!(String::from_utf8(got).unwrap(), Value::String(s.to_string()).to_string());
        }
        // Every byte value at every position of a word, among plain bytes
        // (ASCII and not), and strings of every length around the word size.
        for fill in [b'a', 0x7f, 0x80, 0xff, 0x21, 0x5d] {
            for pos in 0..8 {
                for b in 0..=255u8 {
                    let mut w = [fill; 8];
                    w[pos] = b;
                    let want = w.iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\');
                    let m = escaped(u64::from_le_bytes(w));
                    assert_eq!(m != 0, want, "{w:?}");
                    assert!(!want || m.trailing_zeros() / 8 == pos as u32, "{w:?}");
                }
            }
        }
        // Words of bytes near the escaped ones: the lowest mark is the first escaped byte.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let near = [0u8, 1, 0x1f, 0x20, 0x21, b'"', b'#', b'\\', 0x5b, 0x5d, 0x80, 0xa2, 0xff, b'a'];
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let w: [u8; 8] = std::array::from_fn(|k| near[((seed >> (k * 4)) & 0xf) as usize % near.len()]);
            let first = w.iter().position(|&c| c < 0x20 || c == b'"' || c == b'\\');
            let m = escaped(u64::from_le_bytes(w));
            assert_eq!((m != 0).then(|| m.trailing_zeros() as usize / 8), first, "{w:?}");
        }
        for len in 0..40 {
            for pos in 0..len {
                for c in ['"', '\\', '\n', '\u{1}', '\u{1f}', 'é', '\u{7f}', ' '] {
                    let mut s: String = "abcdefghijklmnopqrstuvwxyz0123456789ABCD"[..len].to_string();
                    s.replace_range(pos..pos + 1, &c.to_string());
                    let mut got = Vec::new();
                    write_str(&s, &mut got);
                    assert_eq!(String::from_utf8(got).unwrap(), Value::String(s.clone()).to_string());
                }
            }
        }
        for h in [0u128, 1, u128::MAX, 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210] {
            assert_eq!(hex128(h), format!("{h:032x}"));
        }
    }

    /// The payload size limit is on serde_json's compact text; the size
    /// `fingerprint_sized` gives is measured on the canonical text instead.
    #[test]
    fn canonical_length_is_compact_length() {
        let values = [
            json!(null),
            json!({}),
            json!([]),
            json!({"paymentId": "q-1", "amount": 1}),
            json!({"z": [1, 2.5, -0.0, 1e300, -7, 18446744073709551615u64, -9223372036854775808i64], "a": {"é": "\u{1F600}", "": null}}),
            json!({"ctl": "a\"b\\c\n\t\u{0001}\u{001f}\u{007f}/", "ß": true, "B": false, "b": [[], {}, [{}]]}),
            json!("just a string with \u{2028} in it"),
            json!([0.1 + 0.2, 1e-7, 5e-324, 1.7976931348623157e308, 123456789.125]),
        ];
        for v in &values {
            let compact = serde_json::to_string(&sorted(v)).unwrap();
            let mut canonical = Vec::new();
            write_canonical(v, &mut canonical);
            assert_eq!(String::from_utf8(canonical).unwrap(), compact);
            let (fp, size) = fingerprint_sized("T", v);
            assert_eq!((fp, size), (fingerprint("T", v), compact.len()));
        }
        // Keys given out of order still come out sorted, as serde_json writes them.
        let parsed: Value = serde_json::from_str(r#"{"b":1,"a":{"y":"\u00e9","x":[{"q":1,"p":2}]}}"#).unwrap();
        assert_eq!(fingerprint_sized("T", &parsed).1, serde_json::to_string(&sorted(&parsed)).unwrap().len());
    }

    /// The path for maps that do not iterate in key order (serde_json's
    /// `preserve_order`) writes what the ordered path writes.
    #[test]
    fn sorted_writer_agrees() {
        let v = json!({"b": 1, "a": {"y": [2, {"q": 1, "p": "\u{e9}"}], "x": null}, "": true, "ß": [], "B": {}});
        let (mut ordered, mut sorted) = (Vec::new(), Vec::new());
        write_canonical(&v, &mut ordered);
        write_sorted(v.as_object().unwrap(), &mut sorted);
        assert_eq!(String::from_utf8(sorted).unwrap(), String::from_utf8(ordered).unwrap());
    }

    #[test]
    fn hex_digits_are_format_x() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut values = vec![0, 1, 9, 10, 15, 16, u64::MAX, 0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210];
        for _ in 0..1000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            values.push(seed >> (seed % 64));
        }
        for v in values {
            assert_eq!(hex_digits(v).as_slice(), format!("{v:016x}").as_bytes(), "{v:#x}");
        }
    }

    #[test]
    fn integers_are_written_as_serde_json_writes_them() {
        let mut ints: Vec<i128> = vec![0, 1, 9, 10, 99, 100, 12345, u64::MAX as i128, i64::MIN as i128, -1, -10, -9_999];
        ints.extend((0..64).flat_map(|b| [(1i128 << b) - 1, 1i128 << b, -(1i128 << b)]));
        for i in ints {
            let v: Value = serde_json::from_str(&i.to_string()).unwrap();
            let mut got = Vec::new();
            write_canonical(&v, &mut got);
            assert_eq!(String::from_utf8(got).unwrap(), serde_json::to_string(&v).unwrap());
            if let Ok(u) = u64::try_from(i) {
                let mut got = Vec::new();
                push_u64(u, &mut got);
                assert_eq!(String::from_utf8(got).unwrap(), serde_json::to_string(&u).unwrap());
            }
        }
    }

    #[test]
    fn depth_is_bounded() {
        let deep = "[".repeat(70) + &"]".repeat(70);
        assert_eq!(parse(&deep, Code::InvalidEvent, "event").unwrap_err().code, Code::NestingTooDeep);
        let ok = "[".repeat(60) + &"]".repeat(60);
        assert!(parse(&ok, Code::InvalidEvent, "event").is_ok());
        let very_deep = "[".repeat(100_000);
        assert_eq!(parse(&very_deep, Code::InvalidEvent, "event").unwrap_err().code, Code::InvalidEvent);
    }
}

/// A ULID-shaped id: 48-bit millisecond time then 80 bits of `rand`, in
/// Crockford base32 (26 characters), so ids sort by creation time.
pub fn ulid(ms: u64, rand: [u8; 10]) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut n: u128 = ((ms as u128) & ((1 << 48) - 1)) << 80;
    for (i, b) in rand.iter().enumerate() {
        n |= (*b as u128) << (8 * (9 - i));
    }
    let mut out = [0u8; 26];
    for i in (0..26).rev() {
        out[i] = ALPHABET[(n & 31) as usize];
        n >>= 5;
    }
    utf8(out.to_vec())
}

#[cfg(test)]
mod ulid_tests {
    #[test]
    fn ulid_is_time_ordered_and_26_chars() {
        let a = super::ulid(1_700_000_000_000, [255; 10]);
        let b = super::ulid(1_700_000_000_001, [0; 10]);
        assert_eq!(a.len(), 26);
        assert!(a < b);
        assert_eq!(super::ulid(0, [0; 10]), "0".repeat(26));
    }
}
