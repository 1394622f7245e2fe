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
    if depth(value) > MAX_DEPTH {
        return Err(Error::new(
            Code::NestingTooDeep,
            format!("{what} is nested deeper than {MAX_DEPTH} levels"),
        ));
    }
    Ok(())
}

fn depth(value: &Value) -> usize {
    // Iterative, so a hostile value cannot exhaust the stack here.
    let mut max = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((v, d)) = stack.pop() {
        max = max.max(d);
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, d + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, d + 1))),
            _ => {}
        }
    }
    max
}

/// Canonical JSON: object keys sorted by code point, no insignificant whitespace.
/// Independent of how the parser orders maps, so fingerprints never depend on it.
pub fn canonical(value: &Value, out: &mut String) {
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
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// 128-bit xxh3 of the canonical JSON of `type` and `payload`, as 32 hex digits.
pub fn fingerprint(event_type: &str, payload: &Value) -> String {
    let mut s = String::with_capacity(64);
    s.push_str("{\"payload\":");
    canonical(payload, &mut s);
    s.push_str(",\"type\":");
    s.push_str(&Value::String(event_type.to_string()).to_string());
    s.push('}');
    hex128(xxhash_rust::xxh3::xxh3_128(s.as_bytes()))
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
    format!("{h:032x}")
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
