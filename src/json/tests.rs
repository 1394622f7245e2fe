//! The canonical form, the fingerprints and the writers against reference
//! implementations and serde_json; the parser's nesting bound.

use super::write::{escaped, write_sorted};
use super::*;
use crate::error::Code;
use serde_json::Value;
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
