//! JSON helpers: bounded parsing, canonical form and fingerprints.

use crate::error::{Code, Error, Result};
use serde_json::Value;

/// Largest JSON nesting accepted anywhere input comes in.
pub const MAX_DEPTH: usize = 64;

/// Parse JSON text, mapping syntax errors to `code` and refusing deep nesting.
pub fn parse(text: &str, code: Code, what: &str) -> Result<Value> {
    // serde_json stops at 128 levels on its own; we refuse earlier with a clear code.
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Error::new(code, format!("{what} is not valid json: {e}")))?;
    check_depth(&value, what)?;
    Ok(value)
}

/// Refuse values nested deeper than [`MAX_DEPTH`].
pub fn check_depth(value: &Value, what: &str) -> Result<()> {
    if deeper_than_max(value, 1) {
        return Err(Error::new(
            Code::NestingTooDeep,
            format!("{what} is nested deeper than {MAX_DEPTH} levels"),
        ));
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
    *out = String::from_utf8(bytes).expect("JSON text is UTF-8");
}

/// JSON text of a string, quotes and escapes exactly as serde_json writes them:
/// `\"`, `\\`, `\b \t \n \f \r`, other control characters as `\u00xx`
/// (lowercase), everything else (DEL and non-ASCII included) as it is.
pub fn write_str(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Eight bytes at a time while none of them is escaped.
        if let Some(word) = bytes.get(i..i + 8).and_then(|w| w.try_into().ok()).map(u64::from_le_bytes) {
            if !any_escaped(word) {
                i += 8;
                continue;
            }
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

/// Whether any of the eight bytes of `word` is one `write_str` escapes: a
/// control character (below 0x20), `"` or `\\`. Exact (no false positives): a
/// borrow in `x - ONES` starts only at a byte that is zero, and in
/// `word - 0x20..` only at a byte below 0x20; bytes from 0x80 on never match.
fn any_escaped(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    control | zero_byte(word ^ (ONES * b'"' as u64)) | zero_byte(word ^ (ONES * b'\\' as u64)) != 0
}

/// JSON text of a scalar (null, boolean, number, string) as serde_json writes it.
fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    use std::io::Write;
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Integers in decimal as itoa writes them; floats as serde_json's
        // `Number` displays them, which is as it serializes them.
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => push_u64(u, out),
            (None, Some(i)) => {
                out.push(b'-');
                push_u64(i.unsigned_abs(), out);
            }
            _ => write!(out, "{n}").expect("writing to a Vec cannot fail"),
        },
        Value::String(s) => write_str(s, out),
        Value::Array(_) | Value::Object(_) => serde_json::to_writer(out, value).expect("writing to a Vec cannot fail"),
    }
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

/// [`canonical`], appended to bytes; writes no intermediate strings.
pub fn write_canonical(value: &Value, out: &mut Vec<u8>) {
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
                    if p >= k {
                        out.truncate(start);
                        return write_sorted(map, out);
                    }
                    out.push(b',');
                }
                prev = Some(k);
                write_str(k, out);
                out.push(b':');
                write_canonical(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        other => write_scalar(other, out),
    }
}

/// The canonical JSON of an object whose map does not iterate in key order.
fn write_sorted(map: &serde_json::Map<String, Value>, out: &mut Vec<u8>) {
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
    let mut s = Vec::with_capacity(128);
    s.extend_from_slice(b"{\"payload\":");
    write_canonical(payload, &mut s);
    let size = s.len() - b"{\"payload\":".len();
    s.extend_from_slice(b",\"type\":");
    write_str(event_type, &mut s);
    s.push(b'}');
    let h = xxhash_rust::xxh3::xxh3_128(&s);
    // The hex digits take the place of the text hashed, in its buffer.
    s.clear();
    push_hex128(h, &mut s);
    (String::from_utf8(s).expect("hex digits are ASCII"), size)
}

/// 64-bit xxh3 of bytes (used for deterministic jitter and content hashes).
pub fn hash64(bytes: &[u8]) -> u64 {
    // The streaming hasher gives the same value as the one-shot `xxh3_64`; the
    // snapshot checksum needs the streaming one, so one copy of the code serves both.
    let mut h = xxhash_rust::xxh3::Xxh3Default::new();
    h.update(bytes);
    h.digest()
}

pub fn hex128(h: u128) -> String {
    let mut out = Vec::with_capacity(32);
    push_hex128(h, &mut out);
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// The 32 lowercase hex digits of `h`, appended.
fn push_hex128(h: u128, out: &mut Vec<u8>) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = [0u8; 32];
    for (pair, b) in hex.chunks_exact_mut(2).zip(h.to_be_bytes()) {
        pair[0] = DIGITS[(b >> 4) as usize];
        pair[1] = DIGITS[(b & 0xf) as usize];
    }
    out.extend_from_slice(&hex);
}

#[cfg(test)]
mod tests {
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
                    assert_eq!(any_escaped(u64::from_le_bytes(w)), want, "{w:?}");
                }
            }
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
            let compact = serde_json::to_string(v).unwrap();
            let mut canonical = Vec::new();
            write_canonical(v, &mut canonical);
            assert_eq!(String::from_utf8(canonical).unwrap(), compact);
            let (fp, size) = fingerprint_sized("T", v);
            assert_eq!((fp, size), (fingerprint("T", v), compact.len()));
        }
        // Keys given out of order still come out sorted, as serde_json writes them.
        let parsed: Value = serde_json::from_str(r#"{"b":1,"a":{"y":"\u00e9","x":[{"q":1,"p":2}]}}"#).unwrap();
        assert_eq!(fingerprint_sized("T", &parsed).1, serde_json::to_string(&parsed).unwrap().len());
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
    String::from_utf8(out.to_vec()).expect("ascii")
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
