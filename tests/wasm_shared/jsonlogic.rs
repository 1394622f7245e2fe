//! The JSONLogic evaluator as the wasm module runs it, where `%` is the host's
//! own operator (`expr::rem`): the official suite, and remainders checked
//! against Rust's `fmod` in this test module.

use serde_json::{json, Value};
use wasm_bindgen_test::wasm_bindgen_test;

#[path = "../jsonlogic/suite.rs"]
mod suite;

#[wasm_bindgen_test]
fn official_suite_passes() {
    suite::official_suite_passes();
}

#[wasm_bindgen_test]
fn remainder_is_fmod() {
    let xs: [f64; 11] = [7.0, -7.0, 5.5, -5.5, 0.1, 1e300, -1e-300, 123456789.125, 9007199254740993.0, 3.0, 0.0];
    let ys: [f64; 9] = [2.0, -2.0, 0.3, 1e-3, 7e-310, 1e10, 2.5, -1e300, 3.0];
    for x in xs {
        for y in ys {
            let got = idem::expr::apply(&json!({ "%": [x, y] }), &Value::Null).unwrap();
            let want = x % y; // compiler_builtins' fmod, in this test module
            let want = if want.is_finite() { Some(want) } else { None };
            assert_eq!(got.as_f64(), want, "{x} % {y}: got {got}, want {want:?}");
        }
    }
    // A zero divisor gives NaN, which JSON cannot hold: the expression fails.
    let err = idem::expr::apply(&json!({ "%": [1, 0] }), &Value::Null).unwrap_err();
    assert_eq!(err.code, idem::Code::ExpressionFailed);
    assert_eq!(idem::expr::apply(&json!({ "%": ["8", "3"] }), &Value::Null).unwrap(), json!(2));
}
