//! The JSON writers (`idem::json::write_json`, `to_text`, `push_u64`, `push_f64`)
//! and the `Value`s `idem::json::to_value` builds, against serde_json's writer
//! and `to_value`: the same text byte for byte, the same value, on hand-picked
//! and generated values (floats from random bits, integers at their bounds,
//! control characters and non-ASCII in strings and keys, nesting).
//!
//! `PROPTEST_CASES=100000 cargo test --release --test json_writer` explores further.

use idem::json;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::{json, Map, Number, Value};
use std::collections::BTreeMap;

fn config(cases: u32) -> Config {
    let d = Config::default();
    Config {
        cases: if std::env::var("PROPTEST_CASES").is_ok() { d.cases } else { cases },
        rng_seed: if std::env::var("PROPTEST_RNG_SEED").is_ok() { d.rng_seed } else { RngSeed::Fixed(0x3717) },
        failure_persistence: None,
        ..d
    }
}

/// `v` with every object's members in key order (maps keep the order they were
/// written in; idem writes every object's members in key order).
fn sorted(v: &Value) -> Value {
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

/// What `write_json` and `to_text` write for `v`, checked to be serde_json's
/// text of `v` with its members in key order.
fn check(v: &Value) {
    let want = serde_json::to_string(&sorted(v)).unwrap();
    let mut got = b"prefix".to_vec();
    json::write_json(v, &mut got);
    assert_eq!(String::from_utf8(got).unwrap(), format!("prefix{want}"));
    assert_eq!(json::to_text(v), want);
    // The canonical form is the same text.
    let mut canonical = Vec::new();
    json::write_canonical(v, &mut canonical);
    assert_eq!(String::from_utf8(canonical).unwrap(), want);
}

fn float(f: f64) -> Value {
    Value::Number(Number::from_f64(f).unwrap())
}

#[test]
fn hand_picked_values_are_written_as_serde_json_writes_them() {
    let mut all: String = (0u8..=0x7f).map(char::from).collect();
    all.push_str("\u{e9}\u{2028}\u{2029}\u{1F600}\u{FFFF}\u{10FFFF}\u{feff}");
    let values = [
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(-1),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(i64::MAX),
        json!(""),
        json!(all),
        json!({ all.clone(): all.clone(), "": [], "\u{0}": {}, "a\"b": [null, {"\\": "/"}] }),
        json!([]),
        json!({}),
        json!([[[]], {"a": {"b": {"c": [1, -2, 3.5]}}}]),
        json!({"z": 1, "a": 2, "\u{e9}": 3, "B": 4, "b": 5, "\u{1F600}": 6, "\u{ffff}": 7}),
    ];
    for v in &values {
        check(v);
    }
    let floats = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.1,
        0.1 + 0.2,
        1.5,
        100.0,
        1e15,
        1e16,
        1e17,
        1e21,
        1e22,
        1e-5,
        1e-6,
        1e-7,
        123456789.125,
        9007199254740993.0,
        18446744073709551616.0,
        -9223372036854775808.0,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        f64::EPSILON,
        5e-324,
        -5e-324,
        f64::from_bits(0x000f_ffff_ffff_ffff),
        1.7976931348623157e308,
        std::f64::consts::PI,
        -std::f64::consts::E,
    ];
    for f in floats {
        check(&float(f));
        check(&json!([f, {"f": f}]));
        let mut got = Vec::new();
        json::push_f64(f, &mut got);
        assert_eq!(String::from_utf8(got).unwrap(), serde_json::to_string(&f).unwrap(), "{f:e}");
    }
    // Every power of two and its neighbours, as integers and as floats.
    for b in 0..64 {
        for u in [(1u64 << b) - 1, 1u64 << b, (1u64 << b) + 1] {
            check(&json!(u));
            check(&json!(-(u as i128).min(1 << 63) as i64));
            check(&float(u as f64));
            check(&float(-(u as f64) / 3.0));
            let mut got = Vec::new();
            json::push_u64(u, &mut got);
            assert_eq!(String::from_utf8(got).unwrap(), u.to_string());
        }
    }
    for e in -330..=310 {
        for m in [1.0, 1.5, 2.0, 4.940_656_458_412_465, 9.999999999999999, 3.0 / 7.0] {
            let f = m * 10f64.powi(e);
            if f.is_finite() && f != 0.0 {
                check(&float(f));
            }
        }
    }
}

/// A string: mostly ASCII, with control characters, escapes and non-ASCII
/// characters of every UTF-8 length mixed in.
fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{0,12}",
        "[ -~]{0,24}",
        "[\u{0}-\u{1f}\"\\\\/\u{7f}]{0,12}",
        "[a-z\u{0}-\u{1f}\"\\\\\u{7f}\u{80}-\u{7ff}\u{800}-\u{ffff}\u{10000}-\u{10ffff}]{0,24}",
        any::<String>(),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (0u32..64).prop_map(|b| Value::from(1u64 << b)),
        (0u32..64).prop_map(|b| Value::from(-(1i128 << b).max(i64::MIN as i128) as i64)),
        // Any finite float, from its bits.
        any::<u64>().prop_filter_map("finite", |bits| Number::from_f64(f64::from_bits(bits)).map(Value::Number)),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        (-1_000_000i64..1_000_000, 0u32..8).prop_map(|(m, e)| float(m as f64 / 10f64.powi(e as i32))),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::Bool), number(), string().prop_map(Value::String)];
    leaf.prop_recursive(6, 96, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((string(), inner), 0..8).prop_map(|members| Value::Object(members.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(config(4_000))]

    #[test]
    fn generated_values_are_written_as_serde_json_writes_them(v in value()) {
        check(&v);
    }

    #[test]
    fn floats_are_written_as_serde_json_writes_them(bits in any::<u64>()) {
        let f = f64::from_bits(bits);
        if f.is_finite() {
            check(&float(f));
            let mut got = Vec::new();
            json::push_f64(f, &mut got);
            prop_assert_eq!(String::from_utf8(got).unwrap(), serde_json::to_string(&f).unwrap());
        }
    }

    #[test]
    fn integers_are_written_as_serde_json_writes_them(u in any::<u64>(), i in any::<i64>()) {
        check(&json!(u));
        check(&json!(i));
        let mut got = Vec::new();
        json::push_u64(u, &mut got);
        prop_assert_eq!(String::from_utf8(got).unwrap(), serde_json::to_string(&u).unwrap());
    }

}

proptest! {
    #![proptest_config(config(1_000))]

    #[test]
    fn values_are_built_as_serde_json_builds_them(
        u in any::<u64>(), w in any::<u32>(), z in any::<usize>(), i in any::<i64>(), b in any::<bool>(), s in string(), v in value(),
        o in prop::option::of(value()), list in prop::collection::vec(string(), 0..4), map in prop::collection::btree_map(string(), any::<u64>(), 0..4),
    ) {
        prop_assert_eq!(json::to_value(&u), serde_json::to_value(u).unwrap());
        prop_assert_eq!(json::to_value(&w), serde_json::to_value(w).unwrap());
        prop_assert_eq!(json::to_value(&z), serde_json::to_value(z).unwrap());
        prop_assert_eq!(json::to_value(&i), serde_json::to_value(i).unwrap());
        prop_assert_eq!(json::to_value(&b), serde_json::to_value(b).unwrap());
        prop_assert_eq!(json::to_value(s.as_str()), serde_json::to_value(s.as_str()).unwrap());
        prop_assert_eq!(json::to_value(&s), serde_json::to_value(&s).unwrap());
        prop_assert_eq!(json::to_value(&&s), serde_json::to_value(&s).unwrap());
        prop_assert_eq!(json::to_value(&v), serde_json::to_value(&v).unwrap());
        prop_assert_eq!(json::to_value(&o), serde_json::to_value(&o).unwrap());
        prop_assert_eq!(json::to_value(&list), serde_json::to_value(&list).unwrap());
        prop_assert_eq!(json::to_value(list.as_slice()), serde_json::to_value(list.as_slice()).unwrap());
        prop_assert_eq!(json::to_value(&map), serde_json::to_value(&map).unwrap());
        let maps: BTreeMap<String, Value> = map.iter().map(|(k, n)| (k.clone(), json!([n, v.clone()]))).collect();
        prop_assert_eq!(json::to_value(&maps), serde_json::to_value(&maps).unwrap());
    }
}

/// Integers keep serde_json's kind: a non-negative `i64` is the same `Number`
/// as the `u64`, so values compare equal and print the same.
#[test]
fn integer_kinds_match_serde_json() {
    for i in [0i64, 1, -1, i64::MAX, i64::MIN] {
        let ours = json::to_value(&i);
        let theirs = serde_json::to_value(i).unwrap();
        assert_eq!((ours.is_u64(), ours.is_i64(), ours.is_f64()), (theirs.is_u64(), theirs.is_i64(), theirs.is_f64()));
    }
}
