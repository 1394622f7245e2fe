//! Events: any text, reduced against the two real machines, fresh and mid-process.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use std::sync::OnceLock;

#[path = "common.rs"]
mod common;

struct Fixture {
    machines: Vec<idem::Machine>,
    snapshots: Vec<Option<String>>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let (o, c) = (common::order(), common::checkout());
        let pay = json!({ "id": "f1", "type": "PAYMENT_PARTIAL", "payload": { "paymentId": "p1", "amount": 100 } });
        let o1 = o.reduce_in("p", None, &pay, 10).snapshot;
        let add = json!({ "id": "f1", "type": "ADD_ITEM", "payload": { "sku": "s1", "price": 10 } });
        let c1 = c.reduce_in("p", None, &add, 10).snapshot;
        let c2 = c.reduce_in("p", c1.as_deref(), &json!({ "id": "f2", "type": "CHECKOUT" }), 11).snapshot;
        Fixture { machines: vec![o, c], snapshots: vec![None, o1, None, c1, c2] }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let f = fixture();
    for (i, snap) in f.snapshots.iter().enumerate() {
        let m = &f.machines[if i < 2 { 0 } else { 1 }];
        let o = m.reduce_in("p", snap.as_deref(), text, 1_000);
        if let Some(e) = &o.error {
            assert!(idem::Code::ALL.contains(&e.code));
        }
        // Through the checking path as well, when the text is JSON.
        if let Ok(v) = serde_json::from_str::<Value>(text) {
            let next = common::step(m, snap.as_deref(), &v, 1_000).or(snap.clone());
            common::dispatch(m, next, 700_000, data);
        }
    }
});
