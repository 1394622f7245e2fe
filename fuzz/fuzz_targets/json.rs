//! JSON text: idem's parser against serde_json's. Where serde_json reads a
//! value, idem reads the same one (integers of the same kind, floats bit for
//! bit); where it refuses the text, idem refuses it with the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Equal, and equal in kind: the same number variant, floats with the same bits.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            (x.as_u64(), x.as_i64(), x.as_f64().map(f64::to_bits), x.is_f64())
                == (y.as_u64(), y.as_i64(), y.as_f64().map(f64::to_bits), y.is_f64())
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((kx, vx), (ky, vy))| kx == ky && same(vx, vy))
        }
        _ => a == b,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match (idem::json::parse_value(text), serde_json::from_str::<Value>(text)) {
        (Ok(a), Ok(b)) => assert!(same(&a, &b), "{text:?}: idem {a}, serde_json {b}"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text:?}"),
        (a, b) => panic!("{text:?}: idem {a:?}, serde_json {b:?}"),
    }
});
