//! Property tests for the laws of reduce: determinism, a second delivery is a
//! duplicate with the first answer, and delivering every event k times ends
//! where delivering it once does.

use idem::Machine;
use proptest::prelude::*;
use serde_json::{json, Value};

fn order() -> Machine {
    Machine::from_json(include_str!("machines/order.json")).unwrap()
}

fn payment() -> Machine {
    Machine::from_json(include_str!("machines/payment.json")).unwrap()
}

/// Events drawn from the order process's vocabulary, with ids from a small pool
/// so that ids repeat, sometimes with other payloads.
fn order_event() -> impl Strategy<Value = Value> {
    let id = (0u8..12).prop_map(|i| format!("e{i}"));
    let pay = (id.clone(), 0u8..6, 1u32..80).prop_map(|(id, p, amount)| {
        json!({ "id": id, "type": "PAYMENT_PARTIAL", "payload": { "paymentId": format!("p{p}"), "amount": amount } })
    });
    let other = (id, prop_oneof![Just("SHIP"), Just("CANCEL")]).prop_map(|(id, t)| json!({ "id": id, "type": t }));
    prop_oneof![4 => pay, 1 => other]
}

/// Reduce `events` in order; every snapshot written is read by a fresh machine
/// (built from the definition's text, holding nothing of `m`'s), which must
/// find the state value the outcome answered and the context `m` reads.
fn run(m: &Machine, events: &[Value]) -> Option<String> {
    let fresh = Machine::from_json(&m.definition_json()).unwrap();
    let mut snap: Option<String> = None;
    for (i, e) in events.iter().enumerate() {
        let o = m.reduce_in("p", snap.as_deref(), e, 1_000 + i as u64);
        if let Some(s) = &o.snapshot {
            let (cold, warm) = (idem::inspect(&fresh, s).unwrap(), idem::inspect(m, s).unwrap());
            assert_eq!((&cold["value"], &cold["context"]), (&o.state, &warm["context"]), "read back by a fresh machine");
            snap = o.snapshot;
        }
    }
    snap
}

/// The snapshot without ledger timing: what must not depend on how often events came.
fn essence(m: &Machine, snap: &Option<String>) -> Value {
    match snap {
        None => Value::Null,
        Some(s) => {
            let mut v = idem::inspect(m, s).unwrap();
            for e in v["ledger"].as_array_mut().unwrap() {
                e.as_object_mut().unwrap().retain(|k, _| k == "id" || k == "fp" || k == "response" || k == "rev");
            }
            for e in v["outbox"].as_array_mut().unwrap() {
                e.as_object_mut().unwrap().remove("createdAt");
                e.as_object_mut().unwrap().remove("dueAt");
            }
            for t in v["timers"].as_array_mut().unwrap() {
                t.as_object_mut().unwrap().remove("dueAt");
            }
            v
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn deterministic(events in prop::collection::vec(order_event(), 1..20)) {
        let m = order();
        prop_assert_eq!(run(&m, &events), run(&m, &events));
        let again = order();
        prop_assert_eq!(run(&m, &events), run(&again, &events));
    }

    #[test]
    fn second_delivery_is_a_duplicate_with_the_first_answer(
        prefix in prop::collection::vec(order_event(), 0..12),
        e in order_event(),
        later in 0u64..3_000_000, // within the shortest retention window (1 h)
    ) {
        let m = order();
        let s = run(&m, &prefix);
        let first = m.reduce_in("p", s.as_deref(), &e, 100_000);
        if first.status.as_str() == "applied" {
            let second = m.reduce_in("p", first.snapshot.as_deref(), &e, 100_000 + later);
            prop_assert_eq!(second.status.as_str(), "duplicate");
            prop_assert!(second.duplicate());
            prop_assert!(second.snapshot.is_none(), "a duplicate writes nothing");
            prop_assert_eq!(&second.response, &first.response);
            prop_assert_eq!(second.revision, first.revision);
            prop_assert!(second.effects.is_empty());
        } else {
            // Not applied: nothing written, and the same answer again.
            prop_assert!(first.snapshot.is_none());
            let second = m.reduce_in("p", s.as_deref(), &e, 100_000 + later);
            prop_assert_eq!(second.status, first.status);
        }
    }

    #[test]
    fn k_deliveries_end_where_one_does(
        events in prop::collection::vec(order_event(), 1..16),
        copies in prop::collection::vec(1usize..5, 16),
        seed in any::<u64>(),
    ) {
        let m = order();
        // Every event delivered k times; retries interleave with later events
        // but a retry never overtakes the first delivery.
        let mut stream: Vec<(usize, Value)> = Vec::new();
        let mut rng = seed;
        for (i, e) in events.iter().enumerate() {
            stream.push((i, e.clone()));
            for _ in 1..copies[i] {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let at = stream.iter().position(|(j, _)| *j == i).unwrap() + 1 + (rng >> 33) as usize % 3;
                stream.insert(at.min(stream.len()), (i, e.clone()));
            }
        }
        let once = run(&m, &events);
        let many = run(&m, &stream.into_iter().map(|(_, e)| e).collect::<Vec<_>>());
        prop_assert_eq!(essence(&m, &once), essence(&m, &many));
    }

    #[test]
    fn effect_reports_delivered_twice_are_duplicates(outcome in 0u8..4, amount in 1u32..1000) {
        let m = payment();
        let s = m.reduce_in("pay", None, &json!({ "id": "c1", "type": "CHECKOUT", "payload": { "amount": amount } }), 0).snapshot;
        let item = idem::outbox::due(&m, s.as_deref().unwrap(), 0).unwrap().remove(0);
        let s = m.reduce_in("pay", s.as_deref(), &item["started"], 0).snapshot;
        let key = item["key"].clone();
        let report = match outcome {
            0 => json!({ "type": "idem.effect.succeeded", "payload": { "key": key, "attempt": 1, "result": { "id": "ch" } } }),
            1 => json!({ "type": "idem.effect.failed", "payload": { "key": key, "attempt": 1, "retryable": true } }),
            2 => json!({ "type": "idem.effect.failed", "payload": { "key": key, "attempt": 1, "retryable": false } }),
            _ => json!({ "type": "idem.effect.unknown", "payload": { "key": key, "attempt": 1 } }),
        };
        let mut report = report;
        report["id"] = item["resultId"].clone();
        let first = m.reduce_in("pay", s.as_deref(), &report, 10);
        prop_assert_eq!(first.status.as_str(), "applied");
        let second = m.reduce_in("pay", first.snapshot.as_deref(), &report, 20);
        prop_assert_eq!(second.status.as_str(), "duplicate");
        prop_assert_eq!(second.response, first.response);
    }
}

#[test]
fn backoff_schedule_is_the_same_on_every_run() {
    let m = Machine::from_json(
        &include_str!("machines/payment.json").replace("\"jitter\": 0", "\"jitter\": 0.5"),
    )
    .unwrap();
    let schedule = || {
        let mut s = m.reduce_in("pay", None, &json!({ "id": "c1", "type": "CHECKOUT", "payload": { "amount": 5 } }), 0).snapshot;
        let mut dues = Vec::new();
        let mut now = 0;
        for n in 1..=2 {
            let item = idem::outbox::due(&m, s.as_deref().unwrap(), now).unwrap().remove(0);
            s = m.reduce_in("pay", s.as_deref(), &item["started"], now).snapshot;
            let o = m.reduce_in(
                "pay",
                s.as_deref(),
                &json!({ "id": item["resultId"], "type": "idem.effect.failed", "payload": { "key": item["key"], "attempt": n, "retryable": true } }),
                now,
            );
            dues.push(o.next_due_at.unwrap() - now);
            now = o.next_due_at.unwrap();
            s = o.snapshot;
        }
        dues
    };
    let a = schedule();
    assert_eq!(a, schedule());
    // 1 s then 2 s, each less up to half of it as jitter
    assert!((500..=1000).contains(&a[0]) && (1000..=2000).contains(&a[1]), "{a:?}");
}
