//! Machine definitions: any text. When it loads, run a few events of each type
//! it accepts, then dispatch what is due (effects, verifications, timers).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let m = match idem::Machine::from_json(text) {
        Ok(m) => m,
        Err(e) => {
            assert!(idem::Code::ALL.contains(&e.code));
            return;
        }
    };
    let mut snap: Option<String> = None;
    let mut now = 1_000;
    let types: Vec<String> = m.event_types.iter().take(8).cloned().collect();
    for round in 0..2u8 {
        for (i, t) in types.iter().enumerate() {
            now += 1_000;
            let e = json!({ "id": format!("e{round}-{i}"), "type": t, "payload": { "n": i, "s": t } });
            snap = common::step(&m, snap.as_deref(), &e, now).or(snap);
            snap = common::dispatch(&m, snap, now + 600_000, &data[..data.len().min(4)]);
        }
    }
});
