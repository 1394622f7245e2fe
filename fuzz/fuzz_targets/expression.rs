//! Expressions: JSON text `[rule, data]`, compiled and evaluated by idem's JSONLogic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Array(pair)) = serde_json::from_slice::<Value>(data) else { return };
    let (Some(rule), data) = (pair.first(), pair.get(1).cloned().unwrap_or(Value::Null)) else { return };
    if let Err(e) = idem::expr::apply(rule, &data) {
        assert!(idem::Code::ALL.contains(&e.code));
    }
});
