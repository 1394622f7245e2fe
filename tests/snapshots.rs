//! The snapshot is a versioned wire format: old snapshots stay loadable, other
//! machines' and corrupted snapshots are rejected with a clear code, and
//! restoring a snapshot never replays entry actions.

use idem::{Code, Machine};
use serde_json::{json, Value};

const V1_SNAPSHOT: &str = include_str!("fixtures/order-v1-format1.snapshot");
const V2_SNAPSHOT: &str = include_str!("fixtures/order-v1-format2.snapshot");
const V3_SNAPSHOT: &str = include_str!("fixtures/order-v1-format3.snapshot");
const V1_MACHINE: &str = include_str!("fixtures/order-v1.json");

fn v1() -> Machine {
    Machine::from_json(V1_MACHINE).unwrap()
}

fn ship() -> Value {
    json!({ "id": "s1", "type": "SHIP" })
}

/// Re-sign an edited snapshot body so only the edit, not the checksum, is tested.
fn resign(mut body: Value) -> String {
    body.as_object_mut().unwrap().remove("check");
    let mut text = serde_json::to_string(&body).unwrap();
    let h = idem::json::hash64(text.as_bytes());
    text.pop();
    format!("{text},\"check\":\"{h:016x}\"}}")
}

#[test]
fn format_1_written_by_0_1_still_loads_and_continues() {
    let m = v1();
    let o = m.reduce_in("order-7", Some(V1_SNAPSHOT), &ship(), 1_700_000_002_000);
    assert_eq!(o.status.as_str(), "applied");
    assert_eq!(o.state, json!("shipped"));
    assert_eq!(o.revision, 3);
    assert_eq!(o.upgraded_from, None);
    // Format 1 is read and rewritten as the current format, with the same content.
    let mut decoded = idem::Snapshot::decode(V1_SNAPSHOT, usize::MAX).unwrap();
    assert_eq!(decoded.format, 1);
    assert_eq!(decoded.encode(), V3_SNAPSHOT, "the same process written in format 3");
}

#[test]
fn format_2_written_by_0_1_still_loads_and_reencodes_byte_for_byte() {
    let m = v1();
    let mut decoded = idem::Snapshot::decode(V2_SNAPSHOT, usize::MAX).unwrap();
    assert_eq!(decoded.format, 2);
    assert_eq!(decoded.encode(), V3_SNAPSHOT, "rewritten in format 3 with the same content");
    assert!(V2_SNAPSHOT.is_ascii());
    let o = m.reduce_in("order-7", Some(V2_SNAPSHOT), &ship(), 1_700_000_002_000);
    assert_eq!((o.status.as_str(), o.revision), ("applied", 3));
    let dup = m.reduce_in("order-7", Some(V2_SNAPSHOT), &json!({ "id": "e2", "type": "PAYMENT_PARTIAL", "payload": { "paymentId": "p2", "amount": 60 } }), 1_700_000_002_000);
    assert_eq!((dup.status.as_str(), dup.response), ("duplicate", json!("recorded p2")));
}

#[test]
fn format_3_reencodes_byte_for_byte_and_keeps_its_prefix_when_appending() {
    let m = v1();
    let mut decoded = idem::Snapshot::decode(V3_SNAPSHOT, usize::MAX).unwrap();
    assert_eq!(decoded.format, 3);
    let (text, kept) = decoded.encode_from();
    assert_eq!(text, V3_SNAPSHOT);
    assert_eq!(kept, V3_SNAPSHOT.find('#').unwrap(), "everything up to the trailer is unchanged");
    // An applied event appends a record: the new text starts with the old records.
    let parts = m.reduce_parts("order-7", idem::reduce::Current::Text(V3_SNAPSHOT), &ship(), 1_700_000_002_000);
    assert_eq!(parts.split.map(|s| s.kept_prefix), Some(kept));
    let (o, _) = parts.joined();
    assert_eq!((o.status.as_str(), o.revision), ("applied", 3));
    let next = o.snapshot.unwrap();
    assert_eq!(next[..kept], V3_SNAPSHOT[..kept]);
    assert!(next.is_ascii());
    // What was kept is exactly what a fresh encode of the decoded text gives.
    let mut again = idem::Snapshot::decode(&next, usize::MAX).unwrap();
    assert_eq!(again.encode(), next);
}

#[test]
fn format_3_damage_anywhere_is_caught() {
    let m = v1();
    for i in [0, 3, 6, 40, V3_SNAPSHOT.find('#').unwrap(), V3_SNAPSHOT.len() - 30, V3_SNAPSHOT.len() - 17, V3_SNAPSHOT.len() - 1] {
        let mut bytes = V3_SNAPSHOT.as_bytes().to_vec();
        bytes[i] = if bytes[i] == b'0' { b'1' } else { b'0' };
        let text = String::from_utf8(bytes).unwrap();
        let o = m.reduce(Some(&text), &ship(), 1_700_000_002_000);
        assert_eq!(o.error.map(|e| e.code), Some(Code::InvalidSnapshot), "byte {i} changed");
    }
    let truncated = &V3_SNAPSHOT[..V3_SNAPSHOT.len() - 40];
    assert_eq!(m.reduce(Some(truncated), &ship(), 0).error.map(|e| e.code), Some(Code::InvalidSnapshot));
}

#[test]
fn non_ascii_ids_and_payloads_stay_ascii_on_the_wire() {
    let m = v1();
    let e = json!({ "id": "événement-💳", "type": "PAYMENT_PARTIAL", "payload": { "paymentId": "paiement-ü", "amount": 5 } });
    let o = m.reduce(None, &e, 0);
    let s = o.snapshot.unwrap();
    assert!(s.is_ascii());
    let dup = m.reduce(Some(&s), &e, 1);
    assert_eq!(dup.status.as_str(), "duplicate");
    assert_eq!(idem::inspect(&m, &s).unwrap()["ledger"][0]["id"], json!("événement-💳"));
    assert_eq!(idem::inspect(&m, &s).unwrap()["context"]["payments"][0], json!("paiement-ü"));
}

#[test]
fn restoring_does_not_replay_entry_actions() {
    // `paid` emits a ship effect on entry; loading a snapshot in `paid` must not emit it again.
    let m = v1();
    let o = m.reduce_in("order-7", Some(V1_SNAPSHOT), &ship(), 1_700_000_002_000);
    assert!(o.effects.is_empty(), "{:?}", o.effects);
    let outbox = idem::inspect(&m, o.snapshot.as_deref().unwrap()).unwrap()["outbox"].clone();
    assert_eq!(outbox.as_array().unwrap().len(), 1, "the one ship effect from the original entry");
}

#[test]
fn a_newer_version_of_the_same_machine_accepts_a_state_it_still_has() {
    let v2 = V1_MACHINE.replace("\"version\": \"1\"", "\"version\": \"2\"").replace(
        "\"cancelled\": { \"type\": \"final\" }",
        "\"cancelled\": { \"type\": \"final\" }, \"refunded\": { \"type\": \"final\" }",
    );
    let m = Machine::from_json(&v2).unwrap();
    assert_eq!(m.version, "2");
    let o = m.reduce_in("order-7", Some(V1_SNAPSHOT), &ship(), 1_700_000_002_000);
    assert_eq!(o.status.as_str(), "applied");
    assert_eq!(o.upgraded_from.as_deref(), Some("1"));
    let after = idem::inspect(&m, o.snapshot.as_deref().unwrap()).unwrap();
    assert_eq!(after["machine"]["version"], json!("2"), "rewritten under the new version");
    // A duplicate answered from the old ledger also says where the snapshot came from.
    let dup = m.reduce_in("order-7", Some(V1_SNAPSHOT), &json!({ "id": "e1", "type": "PAYMENT_PARTIAL", "payload": { "paymentId": "p1", "amount": 40 } }), 1_700_000_002_000);
    assert_eq!(dup.status.as_str(), "duplicate");
    assert_eq!(dup.response, json!("recorded p1"));
}

#[test]
fn a_newer_version_without_the_state_rejects_with_missing_state() {
    let v3 = V1_MACHINE.replace("\"version\": \"1\"", "\"version\": \"3\"").replace("\"paid\": {", "\"settled\": {").replace("\"target\": \"paid\"", "\"target\": \"settled\"");
    let m = Machine::from_json(&v3).unwrap();
    let o = m.reduce_in("order-7", Some(V1_SNAPSHOT), &ship(), 1_700_000_002_000);
    assert_eq!(o.status.as_str(), "rejected");
    let e = o.error.unwrap();
    assert_eq!(e.code, Code::MissingState);
    assert!(e.message.contains("\"paid\""), "{}", e.message);
}

#[test]
fn another_machines_snapshot_is_rejected() {
    let door = Machine::from_json(include_str!("machines/door.json")).unwrap();
    let o = door.reduce(Some(V1_SNAPSHOT), &json!({ "id": "x", "type": "OPEN" }), 0);
    assert_eq!(o.status.as_str(), "rejected");
    assert_eq!(o.error.unwrap().code, Code::WrongMachine);
}

#[test]
fn corrupted_snapshots_are_rejected_never_reinterpreted() {
    let m = v1();
    let reject = |text: &str| {
        let o = m.reduce(Some(text), &ship(), 0);
        assert_eq!(o.status.as_str(), "rejected", "accepted {text:?}");
        assert!(o.snapshot.is_none());
        o.error.unwrap().code
    };
    // Every single-bit flip anywhere is caught.
    let bytes = V1_SNAPSHOT.as_bytes();
    for i in (0..bytes.len()).step_by(7) {
        for bit in [0x01u8, 0x10] {
            let mut b = bytes.to_vec();
            b[i] ^= bit;
            if let Ok(text) = String::from_utf8(b) {
                let code = reject(&text);
                assert!(matches!(code, Code::InvalidSnapshot), "byte {i}: {code}");
            }
        }
    }
    // Truncations at every length.
    for n in 0..V1_SNAPSHOT.len() {
        if V1_SNAPSHOT.is_char_boundary(n) {
            assert_eq!(reject(&V1_SNAPSHOT[..n]), Code::InvalidSnapshot);
        }
    }
    // A validly signed snapshot whose state is not in the machine.
    let mut body: Value = serde_json::from_str(V1_SNAPSHOT).unwrap();
    body["value"] = json!("nowhere");
    assert_eq!(reject(&resign(body)), Code::InvalidSnapshot);
    // A validly signed snapshot whose fields are not format 1's.
    let mut body: Value = serde_json::from_str(V1_SNAPSHOT).unwrap();
    body["revision"] = json!("two");
    assert_eq!(reject(&resign(body)), Code::InvalidSnapshot);
}

#[test]
fn a_newer_format_is_refused_with_its_own_code() {
    let mut body: Value = serde_json::from_str(V1_SNAPSHOT).unwrap();
    body["format"] = json!(4);
    let o = v1().reduce(Some(&resign(body)), &ship(), 0);
    assert_eq!(o.error.unwrap().code, Code::UnsupportedSnapshotFormat);
}

#[test]
fn snapshots_over_the_limit_are_neither_written_nor_read() {
    let limited = V1_MACHINE.replace("\"retention\":", "\"limits\": { \"maxSnapshotBytes\": 1024 }, \"retention\":");
    let m = Machine::from_json(&limited).unwrap();
    let roomy = Machine::from_json(V1_MACHINE).unwrap();
    let pay = |i: u32| json!({ "id": format!("e{i}"), "type": "PAYMENT_PARTIAL", "payload": { "paymentId": format!("p{i}"), "amount": 1 } });
    // Grow a snapshot past 1 KiB with the roomy machine, then feed it to the limited one.
    let mut s = None;
    for i in 0..10 {
        s = roomy.reduce(s.as_deref(), &pay(i), 0).snapshot.or(s);
    }
    let big = s.unwrap();
    assert!(big.len() > 1024);
    let o = m.reduce(Some(&big), &pay(99), 0);
    assert_eq!(o.error.unwrap().code, Code::SnapshotTooLarge);
    // The limited machine refuses to produce what it could not read back.
    let mut s: Option<String> = None;
    let mut refused = None;
    for i in 0..20 {
        let o = m.reduce(s.as_deref(), &pay(i), 0);
        match o.snapshot {
            Some(next) => s = Some(next),
            None => {
                refused = Some(o);
                break;
            }
        }
    }
    let o = refused.expect("the snapshot outgrew its limit");
    assert_eq!(o.status.as_str(), "rejected");
    assert_eq!(o.error.unwrap().code, Code::SnapshotTooLarge);
    assert!(s.unwrap().len() <= 1024);
}


#[test]
fn expired_ledger_records_are_dropped_in_batches_and_never_matched_meanwhile() {
    let m = v1();
    let mut s = idem::Snapshot::initial(&m, &m.initial_config(m.root()));
    let fp = idem::json::fingerprint("NOTE", &json!({}));
    for i in 0..16u64 {
        s.ledger.push(&format!("e{i}"), &fp, i, 100 + i, i + 1, false, &json!(null));
        s.ledger.prune(i, 1_000).unwrap();
    }
    let (first, _) = s.encode_from();
    // One record expired: it is kept (an eighth of 16 is 2) but never matched again.
    s.ledger.prune(100, 1_000).unwrap();
    assert_eq!(s.ledger.len(), 16);
    assert!(s.ledger.find("e0", 100).unwrap().is_none());
    assert!(s.ledger.find("e1", 100).unwrap().is_some());
    let (text, kept) = s.encode_from();
    assert_eq!(kept, first.find('#').unwrap(), "nothing dropped: the records are unchanged");
    assert_eq!(text[..kept], first[..kept]);
    // Two expired: a batch, both dropped, the text rewritten.
    s.ledger.prune(101, 1_000).unwrap();
    assert_eq!(s.ledger.len(), 14);
    assert!(s.ledger.find("e2", 101).unwrap().is_some());
    let (text, kept) = s.encode_from();
    assert_eq!(kept, 0);
    let mut back = idem::Snapshot::decode(&text, usize::MAX).unwrap();
    assert_eq!(back.ledger, s.ledger);
    assert_eq!(back.encode(), text);
    // The cap is exact: the oldest go at once.
    s.ledger.prune(101, 10).unwrap();
    assert_eq!(s.ledger.len(), 10);
    assert!(s.ledger.find("e5", 101).unwrap().is_none());
    assert!(s.ledger.find("e6", 101).unwrap().is_some());
}

#[test]
fn a_ledger_kept_decoded_finds_through_its_index_what_a_scan_finds() {
    // A ledger looked up a second time (a snapshot kept decoded between events)
    // is looked up through a hash index of its ids; one decoded for one event
    // is scanned. Seeded pushes, prunes (by the cap and by expiry), lookups and
    // a clock that sometimes goes back (so one id can have several records,
    // more than one of them live): both give the same record every time.
    let m = v1();
    let mut s = idem::Snapshot::initial(&m, &m.initial_config(m.root()));
    let fp = idem::json::fingerprint("NOTE", &json!({}));
    let long = "x".repeat(300);
    let ids: Vec<String> = (0..240)
        .map(|k| match k % 6 {
            0 => format!("01JEVENT{k:018}"),
            1 => format!("e{k}"),
            2 => format!("q\"uote\\{k}"),
            3 => format!("ünï-{k}-✓"),
            4 => format!("{long}{k}"),
            _ => format!("{k}-01JEVENT"),
        })
        .collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let (mut now, mut indexed, mut found, mut cap) = (1_000u64, 0, 0, m.retention.max_entries);
    for step in 0..2_500u64 {
        match next(20) {
            0 => {
                cap = 150 + next(200) as usize;
                s.ledger.prune(now, cap).unwrap();
            }
            1 => now = now.saturating_sub(next(300)),
            2..=4 => now += next(40),
            _ => {
                let id = &ids[next(ids.len() as u64) as usize];
                s.ledger.push(id, &fp, now, now + 1 + next(400), step + 1, next(5) == 0, &json!({ "step": step }));
            }
        }
        let text = s.encode();
        for _ in 0..3 {
            let id = &ids[next(ids.len() as u64) as usize];
            let got = s.ledger.find(id, now).unwrap();
            indexed += usize::from(s.ledger.is_indexed());
            let mut scanned = idem::Snapshot::decode(&text, usize::MAX).unwrap();
            scanned.ledger.set_cap(cap);
            let want = scanned.ledger.find(id, now).unwrap();
            assert!(!scanned.ledger.is_indexed());
            let read = |l: &idem::snapshot::Ledger, i: Option<usize>| i.map(|i| {
                let e = l.entry_at(i).unwrap();
                (e.at, e.exp, e.rev, e.response().unwrap())
            });
            assert_eq!(read(&s.ledger, got), read(&scanned.ledger, want), "step {step}, id {id:?}, now {now}");
            found += usize::from(got.is_some());
        }
    }
    assert!(indexed > 5_000, "the index answered {indexed} lookups");
    assert!(found > 1_000, "{found} lookups found a live record");
}

#[test]
fn a_full_ledger_forgets_its_oldest_at_once_and_drops_them_in_batches() {
    // At its cap a ledger forgets the oldest record with each new one, but
    // keeps it in the text, never matched nor listed, until an eighth of the
    // cap is waiting: then they go together and the text is rewritten. Until
    // then each event only appends.
    let mut m = v1();
    m.retention.max_entries = 16;
    let fp = idem::json::fingerprint("NOTE", &json!({}));
    let mut s = idem::Snapshot::initial(&m, &m.initial_config(m.root()));
    let push = |s: &mut idem::Snapshot, i: u64| {
        s.ledger.push(&format!("e{i}"), &fp, i, 1_000_000, i + 1, false, &json!(i));
        s.ledger.prune(i, 16).unwrap();
    };
    for i in 0..16 {
        push(&mut s, i);
    }
    let (full, _) = s.encode_from();
    push(&mut s, 16);
    assert_eq!(s.ledger.len(), 17, "one over the cap waits in the text");
    assert!(s.ledger.find("e0", 16).unwrap().is_none(), "and is forgotten");
    assert!(s.ledger.find("e1", 16).unwrap().is_some());
    let listed: Vec<u64> = s.ledger.iter().map(|e| e.unwrap().at).collect();
    assert_eq!(listed, (1..17).collect::<Vec<u64>>(), "only the remembered are listed");
    let (text, kept) = s.encode_from();
    assert_eq!(kept, full.find('#').unwrap(), "the event appended");
    // Loaded for the machine, the text remembers the same.
    let loaded = idem::snapshot::load(&m, &text).unwrap();
    assert!(loaded.snap.ledger.clone().find("e0", 16).unwrap().is_none());
    assert_eq!(loaded.snap.ledger.iter().count(), 16);
    let inspected = idem::inspect(&m, &text).unwrap();
    assert_eq!(inspected["ledger"].as_array().unwrap().len(), 16);
    assert_eq!(inspected["ledger"][0]["id"], "e1");
    // The second one over is a batch (16 / 8): both go, the text is rewritten.
    push(&mut s, 17);
    assert_eq!(s.ledger.len(), 16);
    assert!(s.ledger.find("e1", 17).unwrap().is_none());
    assert!(s.ledger.find("e2", 17).unwrap().is_some());
    let (text, kept) = s.encode_from();
    assert_eq!(kept, 0);
    assert_eq!(idem::Snapshot::decode(&text, usize::MAX).unwrap().ledger, s.ledger);
}

#[test]
fn appending_keeps_the_checksum_right_as_the_ledger_grows_past_a_kilobyte() {
    // Encoding hashes short records again and keeps the stream of long ones:
    // either way, and across the length where one becomes the other, the text
    // is what encoding the same snapshot from scratch gives.
    let m = v1();
    let mut resident = idem::Snapshot::initial(&m, &m.initial_config(m.root()));
    let mut text = resident.encode();
    let fp = idem::json::fingerprint("NOTE", &json!({}));
    for i in 0..24u64 {
        let mut decoded = idem::Snapshot::decode(&text, usize::MAX).unwrap();
        for s in [&mut decoded, &mut resident] {
            s.ledger.push(&format!("event-{i:03}"), &fp, i, 1_000 + i, i + 1, false, &json!({ "note": i }));
        }
        let trailer = text.find('#').unwrap();
        let (next, kept) = decoded.encode_from();
        assert_eq!(kept, trailer, "record {i}: the records before it are kept");
        assert_eq!(next[..kept], text[..kept]);
        let (again, _) = resident.encode_from();
        assert_eq!(again, next, "record {i}: the snapshot kept in memory encodes the same");
        let mut fresh = idem::Snapshot::decode(&next, usize::MAX).unwrap();
        assert_eq!(fresh.encode(), next, "record {i}");
        text = next;
    }
    assert!(text.find('#').unwrap() > 2048, "the ledger grew past the length where its stream is kept");
}
