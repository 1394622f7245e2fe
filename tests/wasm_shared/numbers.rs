//! Number text as the wasm module reads and writes it: the JSON parser's
//! decimals, JSONLogic's string-to-number (`float::js_string_to_number`) and
//! number-to-string (`expr::push_js_number`), all Rust, checked here against
//! core's `str::parse::<f64>` bit for bit and against the JavaScript engine
//! the test runs in (its own `Number(s)` and `String(x)`).

use idem::error::Code;
use idem::float::js_string_to_number;
use serde_json::Value;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

/// The JavaScript engine's global function `name` called on `arg`.
fn call_global(name: &str, arg: &JsValue) -> JsValue {
    let f: js_sys::Function = js_sys::Reflect::get(&js_sys::global(), &name.into()).expect("a global").into();
    f.call1(&JsValue::NULL, arg).expect("no throw")
}

/// The JavaScript engine's `Number(s)`.
fn js_number(s: &str) -> f64 {
    call_global("Number", &JsValue::from_str(s)).as_f64().expect("a number")
}

/// The JavaScript engine's `String(x)`.
fn js_string(x: f64) -> String {
    call_global("String", &JsValue::from_f64(x)).as_string().expect("a string")
}

/// `Number(s)` in Rust and in the engine: the same bits, or both NaN.
fn same_as_engine(s: &str) {
    let (ours, js) = (js_string_to_number(s), js_number(s));
    assert!(ours.to_bits() == js.to_bits() || (ours.is_nan() && js.is_nan()), "Number({s:?}): ours {ours:e}, engine {js:e}");
}

const HARD: &[&str] = &[
    "0", "-0", "0.0", "-0.0", "0e999999", "-0e-999999", "1", "-1", "19.99", "0.5", "1e3", "1e22", "1e23", "9007199254740992",
    "9007199254740993", "9007199254740994", "9007199254740995", "9007199254740993.0000000000000000000001",
    "9007199254740992.9999999999999999999999", "18014398509481986", "18014398509481987", "18014398509481990",
    "1.7976931348623157e308", "1.7976931348623158e308", "-1.7976931348623158e308", "2.2250738585072011e-308",
    "2.2250738585072012e-308", "2.2250738585072014e-308", "2.225073858507201136057409796709131975934819546351645648e-308",
    "4.9406564584124654e-324", "2.4703282292062327e-324", "2.4703282292062328e-324", "1e-400", "-1e-400", "1e-323", "1e-324",
    "3e-324", "1e308", "1e-308", "1e-307", "0.1", "0.2", "0.3", "0.30000000000000004", "123456789012345678901234567890",
    "1.00000000000000011102230246251565404236316680908203125", "1.00000000000000011102230246251565404236316680908203124",
    "1.00000000000000011102230246251565404236316680908203126", "123.456e-300", "7.2057594037927933e16", "8.98846567431158e307",
    "4.35", "1448997445238699", "5e-324", "1e-45", "3.4028235677973366e38", "0.000000000000000000000000000000000000000001",
    "100000000000000000000000000000000000000000000e-44", "1e0", "1e+0", "1e-0",
];

fn core(s: &str) -> f64 {
    s.parse().unwrap_or_else(|_| panic!("core refuses {s:?}"))
}

/// The number the engine's JSON parser reads from `s`.
fn json(s: &str) -> f64 {
    match idem::json::parse(s, Code::InvalidJson, "number") {
        Ok(Value::Number(n)) => n.as_f64().unwrap_or_else(|| panic!("{s}: not an f64")),
        other => panic!("{s}: {other:?}"),
    }
}

fn same(what: &str, s: &str, got: f64, want: f64) {
    assert_eq!(got.to_bits(), want.to_bits(), "{what} {s:?}: got {got:e}, core {want:e}");
}

#[wasm_bindgen_test]
fn hard_decimals_match_core() {
    for s in HARD {
        same("string to number", s, js_string_to_number(s), core(s));
        same("json", s, json(s), core(s));
    }
    // Out of range for JSON (its own code), infinite for StringToNumber.
    assert_eq!(idem::json::parse("1e400", Code::InvalidJson, "number").unwrap_err().code, Code::NumberOutOfRange);
    assert_eq!(js_string_to_number("-1e400"), f64::NEG_INFINITY);
}

#[wasm_bindgen_test]
fn random_decimals_match_core() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..20_000 {
        // 1 to 40 significant digits, a point somewhere, an exponent from -340 to 340.
        let digits = 1 + (next() % 40) as usize;
        let mut s: String = (0..digits).map(|_| char::from(b'0' + (next() % 10) as u8)).collect();
        let point = (next() % (digits as u64 + 1)) as usize;
        if point > 0 && point < digits {
            s.insert(point, '.');
        }
        if s.len() > 1 && s.starts_with('0') && !s.starts_with("0.") {
            s.replace_range(..1, "1");
        }
        let e = (next() % 681) as i64 - 340;
        let s = format!("{s}e{e}");
        let want = core(&s);
        same("string to number", &s, js_string_to_number(&s), want);
        same("engine", &s, js_number(&s), want);
        if want.is_finite() {
            same("json", &s, json(&s), want);
        }
    }
}

#[wasm_bindgen_test]
fn string_to_number_is_javascripts() {
    for (s, want) in [
        ("", 0.0),
        ("  12  ", 12.0),
        ("\u{a0}5\u{feff}", 5.0),
        ("\u{2028}-2.5e1\t", -25.0),
        ("0x1F", 31.0),
        ("0o17", 15.0),
        ("0b101", 5.0),
        ("+Infinity", f64::INFINITY),
        ("-Infinity", f64::NEG_INFINITY),
        (".5", 0.5),
        ("5.", 5.0),
    ] {
        assert_eq!(js_string_to_number(s).to_bits(), want.to_bits(), "{s:?}");
    }
    for s in ["abc", "1_000", "0x", "-0x10", "inf", "nan", "Infinityx", "1e", "\u{663}", "\u{85}1"] {
        assert!(js_string_to_number(s).is_nan(), "{s:?}");
    }
}

#[wasm_bindgen_test]
fn string_to_number_matches_the_engine() {
    for s in HARD {
        same_as_engine(s);
    }
    let spaces = ["", " ", "\t", "\n", "\u{b}", "\u{c}", "\r", "\u{a0}", "\u{1680}", "\u{2000}", "\u{200a}", "\u{2028}", "\u{2029}", "\u{202f}", "\u{205f}", "\u{3000}", "\u{feff}", "\u{85}", "\u{180e}", "\u{200b}"];
    let bodies = [
        "", "0", "-0", "+0", "5", "5.", ".5", ".", "+", "-", "e5", "1e", "1e+", "1e-", "1E5", "+1.5e-3", "-.5e1", "00012", "1_000", "1 2", "1e1.5",
        "Infinity", "+Infinity", "-Infinity", "infinity", "inf", "NaN", "nan", "Infinityx", "0x10", "0X1f", "0o17", "0O8", "0b101", "0B2", "0x", "0b",
        "-0x10", "+0x10", "0x1.8", "0x1p3", "0xg", "0x1fffffffffffff", "0x20000000000001", "0x20000000000003", "0xffffffffffffffffffff",
        "0x200000000000010000000000001", "0b11111111111111111111111111111111111111111111111111111111", "1e99999999999999999999999",
        "1e-99999999999999999999999", "0e99999999999999999999", "\u{663}", "١", "0x١",
    ];
    for body in bodies {
        for space in spaces {
            same_as_engine(&format!("{space}{body}"));
            same_as_engine(&format!("{body}{space}"));
        }
    }
    same_as_engine(&format!("0x1{}", "0".repeat(300)));
    same_as_engine(&format!("0x1{}", "0".repeat(255)));
}

#[wasm_bindgen_test]
fn number_to_string_matches_the_engine() {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for i in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Random bits, and numbers near the places where the form changes (1e21, 1e-7).
        let f = match i % 3 {
            0 => f64::from_bits(x),
            1 => (x % 1_000_000) as f64 * 10f64.powi((x >> 40) as i32 % 30 - 10),
            _ => (x >> 11) as f64 / (1u64 << (x % 64)) as f64,
        };
        if !f.is_finite() {
            continue;
        }
        let got = idem::expr::apply(&serde_json::json!({ "cat": [f] }), &Value::Null).unwrap();
        assert_eq!(got, Value::String(js_string(f)), "String({f:e})");
    }
}

#[wasm_bindgen_test]
fn numbers_become_strings_as_in_javascript() {
    // JSONLogic's `cat` joins numbers as JavaScript's String(x).
    let cases: &[(f64, &str)] = &[
        (0.1, "0.1"), (1e21, "1e+21"), (1e-7, "1e-7"), (123.0, "123"), (1.5e300, "1.5e+300"), (-0.0, "0"),
        (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
        (123456789012345680000.0, "123456789012345680000"), (0.000001, "0.000001"), (1.5, "1.5"),
        (-2.5e-10, "-2.5e-10"), (1e20, "100000000000000000000"), (123.456, "123.456"), (-1e21, "-1e+21"),
        (1.0 / 3.0, "0.3333333333333333"), (4.35, "4.35"), (12345678.9, "12345678.9"), (-1.2345678901234567e-308, "-1.2345678901234567e-308"),
    ];
    for &(x, js) in cases {
        let got = idem::expr::apply(&serde_json::json!({ "cat": ["<", x, ">"] }), &Value::Null).unwrap();
        assert_eq!(got, Value::String(format!("<{js}>")), "String({x:e})");
    }
}
