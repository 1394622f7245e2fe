//! The JSON parser (`idem::json`) against serde_json, on hand-picked and
//! generated text: where serde_json reads a value ours reads the same value
//! (integers as integers of the same kind, floats bit for bit), and where
//! serde_json refuses the text ours refuses it with the same message, reason
//! and position. `parse`, with its nesting bound, is checked against what it
//! was when it called serde_json: the same code and message for every input.
//!
//! `PROPTEST_CASES=100000 cargo test --release --test json_parser` explores further.

use idem::json::{self, MAX_DEPTH};
use idem::{Code, Error};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::Value;

fn config(cases: u32) -> Config {
    let d = Config::default();
    Config {
        cases: if std::env::var("PROPTEST_CASES").is_ok() { d.cases } else { cases },
        rng_seed: if std::env::var("PROPTEST_RNG_SEED").is_ok() { d.rng_seed } else { RngSeed::Fixed(0x150A) },
        failure_persistence: None,
        ..d
    }
}

/// Equal values, and equal in kind: the same number variant (u64, i64, f64),
/// floats with the same bits (`-0.0` is not `0.0`), keys in the same order.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            (x.as_u64().is_some(), x.as_i64().is_some(), x.is_f64()) == (y.as_u64().is_some(), y.as_i64().is_some(), y.is_f64())
                && x.as_u64() == y.as_u64()
                && x.as_i64() == y.as_i64()
                && x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits)
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((kx, vx), (ky, vy))| kx == ky && same(vx, vy))
        }
        _ => a == b,
    }
}

/// `json::parse` as it was: serde_json, then the depth check.
fn old_parse(text: &str, code: Code, what: &str) -> Result<Value, Error> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        // As `json::parse` says: a number beyond f64 is `number_out_of_range`, except in a snapshot.
        let out_of_range = e.to_string().starts_with("number out of range") && code != Code::InvalidSnapshot;
        Error::new(if out_of_range { Code::NumberOutOfRange } else { code }, format!("{what} is not valid json: {e}"))
    })?;
    json::check_depth(&value, what)?;
    Ok(value)
}

/// Ours and serde_json's agree on `text`; true when it is JSON.
fn agrees(text: &str) -> bool {
    let ours = json::parse_value(text);
    let theirs = serde_json::from_str::<Value>(text);
    let ok = match (&ours, &theirs) {
        (Ok(a), Ok(b)) => {
            assert!(same(a, b), "{text:?}: ours {a}, serde_json {b}");
            true
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string(), "{text:?}");
            false
        }
        _ => panic!("{text:?}: ours {ours:?}, serde_json {theirs:?}"),
    };
    // The depth it reports is the one `check_depth` and `within_depth` find.
    if let (Ok((v, depth)), Ok(_)) = (json::parse_with_depth(text), &theirs) {
        assert_eq!(json::check_depth(&v, "x").is_ok(), depth <= MAX_DEPTH, "{text:?}");
        assert_eq!(json::within_depth(&v, 2), depth < MAX_DEPTH, "{text:?}");
    }
    match (json::parse(text, Code::InvalidEvent, "event"), old_parse(text, Code::InvalidEvent, "event")) {
        (Ok(a), Ok(b)) => assert!(same(&a, &b), "{text:?}"),
        (a, b) => assert_eq!(a.err(), b.err(), "{text:?}"),
    }
    ok
}

#[test]
fn hand_picked_text_reads_as_serde_json_reads_it() {
    let texts = [
        // Numbers at the edges of each representation.
        "0", "-0", "-0.0", "0.0", "1", "-1", "0.1", "1e400", "-1e400", "1e-400", "-1e-400", "1E+2", "1e2", "1E-2", "1.5e308",
        "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308", "2.4703282292062327e-324",
        "2.4703282292062328e-324", "5e-324", "4.9406564584124654e-324", "18446744073709551615", "18446744073709551616",
        "-18446744073709551615", "-18446744073709551616", "9223372036854775807", "9223372036854775808",
        "-9223372036854775807", "-9223372036854775808", "-9223372036854775809", "100000000000000000000000000000",
        "0.30000000000000004", "123456789012345678901234567890.123456789e-10", "1e2147483647", "1e2147483648",
        "1e99999999999999999999", "0e99999999999999999999", "0.0e99999999999999999999", "-0e99999999999999999999",
        "1e-99999999999999999999", "-1e-99999999999999999999", "1e-2147483648", "1e-2147483649", "0.000000000000000000000000001e20",
        "18446744073709551615.5", "184467440737095516150.5e-1", "1.00000000000000000000000000000000000000000001",
        "9007199254740993", "9007199254740993.0", "1e0000000000000000000000000001", "1.0e+0000", "01", "-01", "00", "1.", "1.e3",
        ".5", "-", "--1", "+1", "1e", "1e+", "1e-", "1ee2", "1.5.", "0x10", "1_000", "Infinity", "NaN", "-Infinity", "1 2",
        "-a", "0a", "1.a", "1ea", "1e+a",
        // Literals.
        "null", "true", "false", "nul", "nulll", "tru", "fals", "falsee", "True", "n", "t", "f", "nxll", "[nul]", "[tru",
        // Strings and every escape.
        r#""""#, r#""a""#, r#""\"\\\/\b\f\n\r\t""#, r#""\u0000\u001f\u0020\u007f\u0080\u07ff\u0800\uffff""#, r#""\uD83D\uDE00""#,
        r#""\ud83d\ude00""#, r#""\ud800""#, r#""\udc00""#, r#""\ud800\u0041""#, r#""\ud800\ud800""#, r#""\ud800x""#, r#""\ud800\x""#,
        r#""\ud800\"#, r#""\ud800"#, r#""\ud8"#, r#""\u12"#, r#""\u12g4""#, r#""\uGGGG""#, r#""\x""#, r#""\"#, r#""\'""#, r#""\a""#,
        r#""\U0041""#, r#""abc"#, "\"", "\"\u{0}\"", "\"\u{1f}\"", "\"\t\"", "\"\n\"", "\"\u{7f}\"", "\"é\u{1F600}\u{10FFFF}\"",
        "\"\u{2028}\u{2029}\"", r#""\u00e9\u00E9""#, r#""a\u0062c\n""#, r#""\ud83d\ude00\ud83d\ude00x""#, r#""\udbff\udfff""#,
        r#""\ud800\udbff""#, r#""\ud800\ue000""#, "\"é\\q\"", "\"\\ué000\"", "\"abcdefghijklmnopqrstuvwxyz\\n0123456789\"",
        // Containers, whitespace, trailing text, duplicate keys.
        "[]", "{}", "[ ]", "{ }", "[1,2,3]", "[1,]", "[,1]", "[1 2]", "[1,,2]", "[", "]", "{", "}", "[1", "[1,", "{\"a\"", "{\"a\":",
        "{\"a\":1", "{\"a\":1,", "{\"a\" 1}", "{\"a\":1,}", "{\"a\":1 \"b\":2}", "{1:2}", "{a:1}", "{\"a\":1,2}", "{,}", "{\"a\":}",
        r#"{"a":1,"a":2}"#, r#"{"a":{"x":1},"a":[2]}"#, r#"{"b":1,"a":2,"c":{"z":[],"y":{}}}"#, r#"{"":null}"#, r#"[{"a":[{"b":[]}]}]"#,
        " \t\r\n1 \t\r\n", "\u{a0}1", "\u{feff}1", "\u{b}1", "\u{c}1", "1\u{0}", "", " ", "\n", "\n\n  x", "[1]\n]", "{} {}", "[]x",
        "\"a\"\"b\"", "[\n1,\n2\n,\n]", "{\n\"a\"\n:\n1\n,\n}", "\r\n\r\nnull x", "[1,\n\n  2,\n  tru]", "[\"é\", 1, x]",
    ];
    let accepted = texts.iter().filter(|t| agrees(t)).count();
    assert!(accepted > 60, "many of these are JSON ({accepted})");
    // Last wins among duplicate keys.
    assert_eq!(json::parse_value(r#"{"a":1,"a":2}"#).unwrap(), serde_json::json!({ "a": 2 }));
}

#[test]
fn long_numbers_read_as_serde_json_reads_them() {
    // Digit strings around halfway points, past the 800 significant digits the
    // reader keeps, and long runs of zeros on either side of the digits.
    for zeros in [0, 20, 760, 800, 1000, 20_000] {
        let z = "0".repeat(zeros);
        for text in [
            format!("9007199254740993.{z}"),
            format!("9007199254740993.{z}1"),
            format!("-9007199254740993{z}1e-{}", zeros + 1),
            format!("9007199254740992.{}", "9".repeat(zeros + 1)),
            format!("0.{z}1"),
            format!("-0.{z}17976931348623159e{}", zeros + 309),
            format!("1{z}"),
            format!("1{z}.5e-{zeros}"),
            format!("0.{z}e{zeros}"),
            format!("2.4703282292062327{z}1e-324"),
            format!("2.4703282292062327{z}e-324"),
        ] {
            agrees(&text);
        }
    }
}

#[test]
fn nesting_at_every_depth_around_the_bounds() {
    for depth in (1..=140).chain([1_000, 100_000]) {
        for (open, close, inner) in [("[", "]", "1"), ("[", "]", ""), ("{\"k\":", "}", "1"), ("{\"k\":", "}", "[]"), ("[{\"k\":", "}]", "{}")] {
            let text = open.repeat(depth) + inner + &close.repeat(depth);
            agrees(&text);
            // Unclosed, and closed with one bracket too many.
            agrees(&open.repeat(depth));
            agrees(&(text.clone() + close));
            // Too deep and also broken: which error wins is as it was.
            agrees(&(open.repeat(depth) + inner + "x"));
        }
    }
    // The codes `parse` gives: nesting_too_deep past 64 levels, the caller's
    // code past the parser's own limit (127 containers).
    let nested = |d: usize| "[".repeat(d) + &"]".repeat(d);
    assert!(json::parse(&nested(64), Code::InvalidEvent, "event").is_ok());
    assert_eq!(json::parse(&nested(65), Code::InvalidEvent, "event").unwrap_err().code, Code::NestingTooDeep);
    assert_eq!(json::parse(&nested(127), Code::InvalidEvent, "event").unwrap_err().code, Code::NestingTooDeep);
    let e = json::parse(&nested(128), Code::InvalidEvent, "event").unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (Code::InvalidEvent, "event is not valid json: recursion limit exceeded at line 1 column 128"));
}

/// Text a JSON value prints as, with whitespace and key order left to the
/// generator: many forms of the same values.
fn json_text() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| format!("{f:e}")),
        any::<f64>().prop_map(|f| f.to_string()),
        "-?(0|[1-9][0-9]{0,24})(\\.[0-9]{1,24})?([eE][+-]?[0-9]{1,4})?",
        "-?[0-9]{0,3}\\.?[0-9]{0,3}[eE]?[+-]?[0-9]{0,3}",
    ];
    let string = prop_oneof![
        "\"([a-zé\u{1F600} ]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4}|\\\\u[dD][89abAB][0-9a-fA-F]{2}\\\\u[dD][c-fC-F][0-9a-fA-F]{2})*\"",
        "\"[^\"\\\\]{0,8}\"",
        "\"(\\\\.|\\\\u[dD][0-9a-fA-F]{2}|[\u{0}-\u{1f}a])*\"?",
    ];
    let literal = prop_oneof![Just("null".to_string()), Just("true".to_string()), Just("false".to_string())];
    let leaf = prop_oneof![number, string.clone(), literal];
    let ws = "[ \t\r\n]{0,2}";
    leaf.prop_recursive(6, 64, 6, move |inner| {
        prop_oneof![
            (prop::collection::vec((ws, inner.clone(), ws), 0..6)).prop_map(|items| {
                let body: Vec<String> = items.into_iter().map(|(a, v, b)| format!("{a}{v}{b}")).collect();
                format!("[{}]", body.join(","))
            }),
            (prop::collection::vec((string.clone(), ws, inner, ws), 0..6)).prop_map(|members| {
                let body: Vec<String> = members.into_iter().map(|(k, a, v, b)| format!("{k}{a}:{b}{v}")).collect();
                format!("{{{}}}", body.join(","))
            }),
        ]
    })
}

/// `text` with the bytes from `at` (wrapped to its length) to `at + len`
/// replaced by `with`; empty when the result is not UTF-8.
fn edited(text: String, at: usize, len: usize, with: &str) -> String {
    let mut b = text.into_bytes();
    let at = at % (b.len() + 1);
    let end = (at + len).min(b.len());
    b.splice(at..end, with.bytes());
    String::from_utf8(b).unwrap_or_default()
}

proptest! {
    #![proptest_config(config(4_000))]

    #[test]
    fn generated_json_reads_as_serde_json_reads_it(text in json_text()) {
        agrees(&text);
    }

    /// Generated JSON with a few edits, each one of the bytes that matter to a
    /// JSON reader put in, or some bytes taken out.
    #[test]
    fn edited_json_reads_as_serde_json_reads_it(
        text in json_text(),
        edits in prop::collection::vec((any::<usize>(), 0usize..3, prop::sample::select(vec![
            "", "\"", "\\", "[", "]", "{", "}", ",", ":", "0", "-", ".", "e", "+", " ", "\n", "\u{0}", "\u{1f}", "é", "u", "n", "x", "1",
        ])), 1..4),
    ) {
        let mut text = text;
        for (at, len, with) in edits {
            text = edited(text, at, len, with);
        }
        agrees(&text);
    }

    #[test]
    fn any_short_text_reads_as_serde_json_reads_it(text in "[\\[\\]{}\",:0-9eE+\\-. \t\r\nnultrfas\\\\/bu\u{0}\u{1f}é]{0,24}") {
        agrees(&text);
    }

    #[test]
    fn numbers_read_as_serde_json_reads_them(
        text in "-?(0|[1-9][0-9]{0,40})(\\.[0-9]{0,40})?([eE][+-]?[0-9]{0,25})?",
    ) {
        agrees(&text);
    }

    #[test]
    fn floats_read_back_bit_for_bit(f in any::<f64>()) {
        if f.is_finite() {
            agrees(&format!("{f:e}"));
            agrees(&format!("{f}"));
            agrees(&format!("{f:.30e}"));
            agrees(&serde_json::to_string(&f).unwrap());
        }
    }
}
