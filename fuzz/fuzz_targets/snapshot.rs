//! Snapshots: the input is either a whole snapshot text (integrity check and
//! decoding: truncated, bit-flipped, spliced), or a forged snapshot that gets a
//! valid checksum and so reaches the checks behind the integrity check: after
//! `#`, format 3's ledger records, its `#<count> <prune at>` trailer line and its
//! JSON head; after `@`, format 2's JSON head, a newline and its ledger records;
//! after `!`, a format 1 JSON body. Then the process continues.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use std::sync::OnceLock;

#[path = "common.rs"]
mod common;

/// The two machines, built once: building them for every input was most of
/// this target's time (a `Machine` holds no state between reduces).
fn machines() -> &'static [idem::Machine; 2] {
    static M: OnceLock<[idem::Machine; 2]> = OnceLock::new();
    M.get_or_init(|| [common::order(), common::checkout()])
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let snapshot = if let Some(rest) = text.strip_prefix('#') {
        common::forge3(rest)
    } else if let Some(rest) = text.strip_prefix('@') {
        common::forge2(rest)
    } else if let Some(body) = text.strip_prefix('!') {
        common::forge(body)
    } else {
        text.to_string()
    };
    for m in machines() {
        let _ = idem::inspect(m, &snapshot);
        let _ = idem::outbox::due(m, &snapshot, 0);
        let _ = idem::outbox::due(m, &snapshot, u64::MAX);
        let events = [
            json!({ "id": "z1", "type": "CANCEL" }),
            json!({ "id": "z2", "type": "PAYMENT_PARTIAL", "payload": { "paymentId": "p9", "amount": 50 } }),
            json!({ "id": "z3", "type": "ADD_ITEM", "payload": { "sku": "s9", "price": 5 } }),
            json!({ "id": "z4", "type": "CHECKOUT" }),
            json!({ "id": "z5", "type": "idem.after" }),
            json!({ "id": "z6", "type": "idem.effect.started", "payload": { "key": "p/f2:0" } }),
        ];
        if idem::inspect(m, &snapshot).is_err() {
            // A ledger record's lengths and fields are read when the record
            // is (docs/hostile-inputs.md): a forged one is refused then. A snapshot
            // that does not load at all is refused by every reduce.
            let loads = idem::snapshot::load(m, &snapshot).is_ok();
            for e in &events {
                let o = m.reduce_in("p", Some(&snapshot), e, 5_000);
                assert!(loads || (o.snapshot.is_none() && o.error.is_some()), "an unreadable snapshot was reduced");
            }
            continue;
        }
        let mut snap = Some(snapshot.clone());
        for e in &events {
            snap = common::step(m, snap.as_deref(), e, 5_000).or(snap);
        }
        common::dispatch(m, snap, 900_000, data);
    }
});
