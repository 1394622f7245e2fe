#![allow(dead_code)]
//! What every target checks after the engine accepted something: the laws a
//! host relies on. A violated law aborts like a panic, so libFuzzer keeps the input.

use idem::reduce::Current;
use idem::{Code, Machine, Status};
use serde_json::{json, Value};

/// Reduce `event`, check the outcome, and return the snapshot to continue from.
pub fn step(m: &Machine, snapshot: Option<&str>, event: &Value, now: u64) -> Option<String> {
    let o = m.reduce_in("p", snapshot, event, now);
    let twin = m.reduce_in("p", snapshot, event, now);
    assert_eq!(o.snapshot, twin.snapshot, "reduce is not deterministic");
    match o.status {
        Status::Rejected | Status::Conflict => {
            assert!(o.error.is_some() && o.snapshot.is_none(), "a refusal must carry an error and write nothing");
            assert_ne!(o.error.as_ref().map(|e| e.code), Some(Code::InternalError), "the engine is at fault: {:?}", o.error);
        }
        _ => assert!(o.error.is_none()),
    }
    let s = o.snapshot?;
    assert!(s.len() <= m.limits.max_snapshot_bytes, "wrote a snapshot over the limit");
    idem::inspect(m, &s).expect("a written snapshot loads");
    read_back_fresh(m, snapshot, event, now, &o.state, &s);
    idem::outbox::due(m, &s, now).expect("due() reads a written snapshot");
    if event["type"].as_str().is_some_and(|t| m.retention_for(t) > 0) {
        let again = m.reduce_in("p", Some(&s), event, now);
        assert_eq!(again.status, Status::Duplicate, "a second delivery must be a duplicate");
        assert_eq!(again.response, o.response, "a duplicate must get the first response");
    }
    Some(s)
}

/// A written snapshot read by a fresh machine (built from the definition's text,
/// sharing nothing with `m`) names the state the outcome answered, and the state,
/// context and configuration of the decoded copy a host keeps between events.
pub fn read_back_fresh(m: &Machine, before: Option<&str>, event: &Value, now: u64, state: &Value, written: &str) {
    let fresh = Machine::from_json(&m.definition_json()).expect("the definition loads again");
    let cold = idem::inspect(&fresh, written).expect("a fresh machine reads a written snapshot");
    assert_eq!(&cold["value"], state, "state value read back differs from the answer");
    let current = before.map_or(Current::None, Current::Text);
    let (again, resident) = m.reduce_with("p", current, &event.to_string(), now);
    assert_eq!(again.snapshot.as_deref(), Some(written), "reduce_with writes what reduce_in wrote");
    let resident = resident.expect("a decoded copy of the written snapshot");
    assert_eq!(cold["value"], resident.snap.state.value, "state value read back differs from the resident copy");
    assert_eq!(cold["context"], resident.snap.state.context, "context read back differs from the resident copy");
    assert_eq!(fresh.config_of_value(&cold["value"]), Some(resident.config), "configuration read back differs");
}

/// Perform whatever is due, with outcomes chosen by `luck`, reporting through `reduce`.
pub fn dispatch(m: &Machine, mut snapshot: Option<String>, now: u64, luck: &[u8]) -> Option<String> {
    let Some(s) = snapshot.clone() else { return None };
    let items = idem::outbox::due(m, &s, now).unwrap_or_default();
    for (i, item) in items.into_iter().take(4).enumerate() {
        let l = luck.get(i).copied().unwrap_or(0);
        let report = match item["kind"].as_str() {
            Some("attempt") => {
                snapshot = step(m, snapshot.as_deref(), &item["started"], now).or(snapshot);
                let (t, extra) = match l % 3 {
                    0 => ("idem.effect.succeeded", json!({ "result": l })),
                    1 => ("idem.effect.failed", json!({ "retryable": l % 2 == 0, "error": "no" })),
                    _ => ("idem.effect.unknown", json!({ "error": "timeout" })),
                };
                let mut payload = json!({ "key": item["key"], "attempt": item["attempt"] });
                payload.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
                json!({ "id": item["resultId"], "type": t, "payload": payload })
            }
            Some("verify") => json!({ "id": item["resultId"], "type": "idem.effect.verified",
                "payload": { "key": item["key"], "attempt": item["attempt"], "exists": l % 2 == 0 } }),
            Some("expire") => item["report"].clone(),
            Some("timer") => item["event"].clone(),
            other => panic!("due item of unknown kind {other:?}"),
        };
        snapshot = step(m, snapshot.as_deref(), &report, now).or(snapshot);
    }
    snapshot
}

pub fn order() -> Machine {
    Machine::from_json(include_str!("../../tests/machines/order.json")).unwrap()
}

pub fn checkout() -> Machine {
    Machine::from_json(include_str!("../../tests/sim/checkout.json")).unwrap()
}

/// Format 2 text with a valid checksum from `<JSON head>\n<ledger records>`:
/// a forged snapshot that passes the integrity check.
pub fn forge2(rest: &str) -> String {
    let (head, ledger) = rest.split_once('\n').unwrap_or((rest, ""));
    let mut text = format!("idem2 {} {}\n{head}\n{ledger}", head.len(), ledger.matches('\n').count());
    let h = idem::json::hash64(text.as_bytes());
    text.push_str(&format!("{h:016x}"));
    text
}

/// Format 3 text with a valid checksum from `<ledger records><#trailer>\n<JSON head>`.
pub fn forge3(rest: &str) -> String {
    let mut text = format!("idem3\n{rest}");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let h = idem::json::hash64(text.as_bytes());
    text.push_str(&format!("{h:016x}"));
    text
}

/// Re-sign a format 1 snapshot body (JSON): a forged snapshot that passes the integrity check.
pub fn forge(body: &str) -> String {
    let mut text = body.to_string();
    let h = idem::json::hash64(text.as_bytes());
    if text.ends_with('}') {
        text.pop();
    }
    text.push_str(&format!(",\"check\":\"{h:016x}\"}}"));
    text
}
