#![cfg(feature = "analysis")]
//! The hazard analysis against its corpus (`tests/analysis/corpus.json`): every
//! planted hazard is found with the severity expected, the safe twins have no
//! hazard, and every witness, replayed here through `reduce` step by step,
//! shows the repeat being applied and changing the process a second time.

use idem::analyze::{self, Finding, Mode, Severity};
use idem::{Machine, Outcome};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/analysis")
}

fn read(rel: &str) -> String {
    let p = dir().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

fn manifest() -> Vec<Value> {
    let v: Value = serde_json::from_str(&read("corpus.json")).expect("corpus.json parses");
    v["machines"].as_array().expect("machines").clone()
}

/// A corpus entry: an idem definition, or an XState config to import first.
fn load(entry: &Value) -> (Machine, Vec<Finding>) {
    let file = entry["file"].as_str().expect("file");
    let text = read(file);
    if entry["xstate"].as_bool() == Some(true) {
        let imported = idem::xstate::import_json(&text).unwrap_or_else(|e| panic!("{file}: {e:?}"));
        let m = Machine::from_value(imported.definition).unwrap_or_else(|e| panic!("{file}: imported definition invalid: {e:?}"));
        (m, imported.diagnostics)
    } else {
        (Machine::from_json(&text).unwrap_or_else(|e| panic!("{file}: {e:?}")), Vec::new())
    }
}

fn hazards(findings: &[Finding]) -> Vec<String> {
    let mut v: Vec<String> = findings
        .iter()
        // `unrepresentable` and `unvalidated_payload` are about the definition
        // itself, not a repeat: no witness (tests/schemas.rs checks the latter).
        .filter(|f| f.severity != Severity::Info && f.code != "unrepresentable" && f.code != "unvalidated_payload")
        .map(|f| format!("{}:{}", f.code, f.severity.as_str()))
        .collect();
    v.sort();
    v
}

fn strings(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v.as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect()).unwrap_or_default();
    out.sort();
    out
}

#[test]
fn every_planted_hazard_is_found_and_safe_twins_have_none() {
    let entries = manifest();
    assert!(entries.len() >= 19, "the corpus shrank to {}", entries.len());
    for e in &entries {
        let file = e["file"].as_str().unwrap();
        let (m, _) = load(e);
        let findings = analyze::analyze(&m);
        assert_eq!(hazards(&findings), strings(&e["hazards"]), "{file}: hazards differ; findings:\n{}", analyze::to_text(&m.id, &findings));
        let info: Vec<&str> = findings.iter().filter(|f| f.severity == Severity::Info).map(|f| f.code.as_str()).collect();
        for want in strings(&e["info"]) {
            assert!(info.contains(&want.as_str()), "{file}: missing info {want}; got {info:?}");
        }
    }
}

#[test]
fn every_hazardous_machine_has_a_safe_twin_in_the_corpus() {
    let entries = manifest();
    let mut twins = 0;
    for e in &entries {
        let Some(twin) = e["twin"].as_str() else { continue };
        let t = entries.iter().find(|x| x["file"] == twin).unwrap_or_else(|| panic!("twin {twin} is not in the corpus"));
        assert!(strings(&t["hazards"]).is_empty(), "twin {twin} is expected to be safe");
        assert!(!strings(&e["hazards"]).is_empty(), "{} has a twin but no hazard", e["file"]);
        twins += 1;
    }
    assert!(twins >= 9, "{twins} hazardous machines with twins");
}

#[test]
fn the_seeds_examples_get_the_seeds_verdicts() {
    // Fragile: the counter. A second delivery of the same partial payment inflates the total.
    let fragile = Machine::from_json(&read("fragile-order.json")).unwrap();
    let f = analyze::analyze(&fragile);
    let acc = f.iter().find(|x| x.code == "accumulating_assign").expect("the counter is found");
    assert_eq!(acc.severity, Severity::Error);
    assert_eq!(acc.event.as_deref(), Some("PAYMENT_PARTIAL"));
    assert_eq!(acc.site.as_deref(), Some("states.pending.on.PAYMENT_PARTIAL.actions[0].assign.paid"));
    let re = f.iter().find(|x| x.code == "reaccept").expect("the re-acceptance is found");
    assert_eq!((re.state.as_str(), re.severity), ("pending", Severity::Error));
    assert_eq!(re.transitions, vec!["states.pending.on.PAYMENT_PARTIAL".to_string()]);
    // With the CLI: non-zero exit so CI fails.
    // Robust: the set. No hazard, and the guard is recognised as what protects it.
    let robust = Machine::from_json(&read("../machines/order.json")).unwrap();
    let r = analyze::analyze(&robust);
    assert_eq!(analyze::counts(&r).0 + analyze::counts(&r).1, 0, "{}", analyze::to_text(&robust.id, &r));
    let g = r.iter().find(|x| x.code == "identity_guarded").expect("identity_guarded");
    assert_eq!(g.event.as_deref(), Some("PAYMENT_PARTIAL"));
    assert!(g.message.contains("context.payments"), "{}", g.message);
}

/// The context before and after each step, and each step's outcome.
struct Replay {
    outcomes: Vec<Outcome>,
    before: Vec<Value>,
    after: Vec<Value>,
}

fn context_of(m: &Machine, snap: Option<&str>) -> Value {
    match snap {
        Some(s) => idem::inspect(m, s).expect("snapshot decodes")["context"].clone(),
        None => m.initial_context.clone(),
    }
}

fn replay(m: &Machine, steps: &[analyze::Step], label: &str) -> (Replay, Option<String>) {
    let mut snap: Option<String> = None;
    let mut r = Replay { outcomes: Vec::new(), before: Vec::new(), after: Vec::new() };
    for (i, s) in steps.iter().enumerate() {
        r.before.push(context_of(m, snap.as_deref()));
        let o = m.reduce(snap.as_deref(), &s.event, s.now);
        assert_eq!(o.status.as_str(), "applied", "{label}: step {} ({}) not applied: {:?}", i + 1, s.event, o.error);
        snap = o.snapshot.clone().or(snap);
        r.after.push(context_of(m, snap.as_deref()));
        r.outcomes.push(o);
    }
    (r, snap)
}

fn effects(o: &Outcome) -> Vec<(String, String, bool)> {
    o.effects.iter().map(|e| (e.effect_type.clone(), e.key.clone(), e.idempotent)).collect()
}

/// Replay one finding's witness and check that it shows what the finding claims.
fn check_witness(m: &Machine, f: &Finding, label: &str) {
    let w = f.witness.as_ref().expect("witness");
    assert_eq!(w.duplicate, w.steps.len() - 1, "{label}: the repeat is the last step");
    assert!(w.original < w.duplicate);
    let (orig, dup) = (&w.steps[w.original], &w.steps[w.duplicate]);
    assert_eq!((orig.role, dup.role), ("original", "duplicate"), "{label}");
    assert_eq!(orig.event["type"], dup.event["type"], "{label}: the repeat is the same event type");
    assert_eq!(orig.event["payload"], dup.event["payload"], "{label}: the repeat carries the same payload");
    let ty = orig.event["type"].as_str().unwrap();
    let window = m.retention_for(ty);
    let (r, _) = replay(m, &w.steps, label);

    // How the repeat arrives, and that the ledger does catch it otherwise.
    let (prefix, _) = replay(m, &w.steps[..w.duplicate], label);
    let snap_before_dup = prefix.outcomes.iter().rev().find_map(|o| o.snapshot.clone());
    match w.mode {
        Mode::LateDuplicate => {
            assert_eq!(orig.event["id"], dup.event["id"], "{label}: a late duplicate keeps its id");
            assert!(dup.now - orig.now > window, "{label}: the late duplicate arrives after the {window} ms window");
            let inside = orig.now + window.saturating_sub(1);
            let last = w.steps[w.duplicate - 1].now;
            if window > 0 && inside >= last {
                let o = m.reduce(snap_before_dup.as_deref(), &dup.event, inside);
                assert_eq!(o.status.as_str(), "duplicate", "{label}: inside the window the ledger catches the repeat");
            }
        }
        Mode::FreshId => {
            assert_ne!(orig.event["id"], dup.event["id"], "{label}: re-sent under a new id");
            let same_id = m.reduce(snap_before_dup.as_deref(), &orig.event, dup.now);
            if w.steps[w.original + 1..w.duplicate].is_empty() {
                assert_eq!(same_id.status.as_str(), "duplicate", "{label}: with its original id the repeat is a duplicate");
            }
        }
    }

    // What the repeat changed, exactly as the finding shows it.
    let d = w.duplicate;
    let shows = &w.shows;
    assert!(!shows.changes.is_empty() || !shows.effects.is_empty() || shows.moved_to.is_some(), "{label}: shows nothing");
    for ch in &shows.changes {
        assert_eq!(r.before[d][&ch.field], ch.before, "{label}: {} before the repeat", ch.field);
        assert_eq!(r.after[d][&ch.field], ch.after, "{label}: {} after the repeat", ch.field);
        assert_ne!(ch.before, ch.after, "{label}");
    }
    let shown: Vec<(String, String, bool)> = shows.effects.iter().map(|e| (e.effect_type.clone(), e.key.clone(), e.idempotent)).collect();
    assert_eq!(effects(&r.outcomes[d]), shown, "{label}: effects of the repeat");
    if let Some(v) = &shows.moved_to {
        assert_eq!(&r.outcomes[d].state, v, "{label}: state after the repeat");
        assert_ne!(&r.outcomes[d - 1].state, v, "{label}: the repeat moved the process");
    }

    // The claim of each code.
    let o = w.original;
    match f.code.as_str() {
        "accumulating_assign" => {
            let field = f.site.as_deref().and_then(|s| s.rsplit_once(".assign.")).map(|(_, x)| x).expect("assign site");
            // The original changed it too when the repeat took the same transition (in a
            // parallel state a repeat may take another one: the region that took the
            // original has moved on, and its parent's transition is the one left).
            if f.transitions.len() < 2 {
                assert_ne!(r.before[o][field], r.after[o][field], "{label}: the original changed {field}");
            }
            assert_ne!(r.before[d][field], r.after[d][field], "{label}: the repeat changed {field} again");
        }
        "unverified_effect" => {
            assert!(r.outcomes[d].effects.iter().any(|e| !e.idempotent), "{label}: the repeat emits the non-idempotent effect");
        }
        "unstable_effect_key" => {
            let originals = effects(&r.outcomes[o]);
            let again = effects(&r.outcomes[d]);
            let changed = again.iter().any(|(t, k, _)| originals.iter().any(|(t0, k0, _)| t0 == t && k0 != k));
            assert!(changed, "{label}: the same effect under another key: {originals:?} then {again:?}");
        }
        "cycle_reaccept" => {
            assert_eq!(w.mode, Mode::LateDuplicate, "{label}");
            assert!(w.duplicate - w.original >= 2, "{label}: events between the original and the repeat");
            assert!(!f.cycle.is_empty(), "{label}: the cycle is described");
            assert_eq!(f.retention_ms, Some(window), "{label}: the retention that guards it");
        }
        "reaccept" | "reenter_reruns" => {
            let doubled = !shows.changes.is_empty() || !shows.effects.is_empty();
            assert_eq!(f.severity == Severity::Error, doubled, "{label}: error exactly when context or effects repeat");
        }
        other => panic!("{label}: unexpected hazard code {other} with a witness"),
    }
    // Where both emit the same effect type, it has happened twice.
    let first: Vec<String> = r.outcomes[o].effects.iter().map(|e| e.effect_type.clone()).collect();
    for e in &r.outcomes[d].effects {
        if first.contains(&e.effect_type) {
            let keys: Vec<&str> = r.outcomes[o].effects.iter().map(|x| x.key.as_str()).collect();
            assert!(!keys.contains(&e.key.as_str()), "{label}: a second emission carries its own key");
        }
    }
}

#[test]
fn every_witness_replays_through_reduce() {
    let mut witnesses = 0;
    let mut by_code = std::collections::BTreeMap::<String, usize>::new();
    for e in manifest() {
        let file = e["file"].as_str().unwrap();
        let (m, _) = load(&e);
        for f in analyze::analyze(&m) {
            if f.severity == Severity::Info || f.code == "unvalidated_payload" {
                assert!(f.witness.is_none(), "{file}: information carries no witness");
                continue;
            }
            assert!(f.witness.is_some(), "{file}: hazard {} without a witness", f.code);
            check_witness(&m, &f, &format!("{file} {} {:?}", f.code, f.transitions));
            witnesses += 1;
            *by_code.entry(f.code.clone()).or_default() += 1;
        }
    }
    for code in ["reaccept", "reenter_reruns", "cycle_reaccept", "accumulating_assign", "unverified_effect", "unstable_effect_key"] {
        assert!(by_code.contains_key(code), "no replayed witness for {code}: {by_code:?}");
    }
    let planted: usize = manifest().iter().map(|e| strings(&e["hazards"]).len()).sum();
    assert_eq!(witnesses, planted, "one replayed witness per planted hazard");
    assert!(planted >= 18, "{planted} planted hazards");
}

#[test]
fn witnesses_replay_on_every_machine_in_the_repository() {
    // Beyond the corpus: whatever the analysis claims about the other machines
    // of the repository (examples, scenario machines, the demo's), it can show.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in ["tests/machines", "www/machines"] {
        if let Ok(entries) = std::fs::read_dir(root.join(d)) {
            files.extend(entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")));
        }
    }
    files.sort();
    let mut replayed = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let Ok(m) = Machine::from_json(&text) else { continue };
        for f in analyze::analyze(&m).iter().filter(|f| f.severity != Severity::Info && f.code != "unvalidated_payload") {
            check_witness(&m, f, &format!("{} {} {:?}", path.display(), f.code, f.transitions));
            replayed += 1;
        }
    }
    assert!(files.len() >= 5 && replayed >= 5, "{} machines, {replayed} witnesses", files.len());
}

#[test]
fn witnesses_say_how_the_repeat_arrives() {
    let m = Machine::from_json(&read("fragile-order.json")).unwrap();
    let f = analyze::analyze(&m);
    let re = f.iter().find(|x| x.code == "reaccept").unwrap();
    let w = re.witness.as_ref().unwrap();
    assert_eq!(w.mode, Mode::LateDuplicate);
    assert!(re.message.contains("same id") && re.message.contains("3600000 ms retention"), "{}", re.message);
    let m = Machine::from_json(&read("unverified-effect.json")).unwrap();
    let f = analyze::analyze(&m);
    let u = f.iter().find(|x| x.code == "unverified_effect").unwrap();
    assert_eq!(u.witness.as_ref().unwrap().mode, Mode::FreshId);
    assert!(u.message.contains("new id"), "{}", u.message);
}

#[test]
fn cycles_report_the_cycle_and_the_retention_that_guards_them() {
    let m = Machine::from_json(&read("cycle.json")).unwrap();
    let f = analyze::analyze(&m);
    let c = f.iter().find(|x| x.code == "cycle_reaccept" && x.event.as_deref() == Some("CANCEL")).expect("CANCEL cycle");
    assert_eq!(c.retention_ms, Some(600_000));
    assert_eq!(c.cycle, vec!["cancelled --REACTIVATE--> active".to_string()]);
    assert!(c.message.contains("retention.perType.CANCEL"), "{}", c.message);
    let w = c.witness.as_ref().unwrap();
    let roles: Vec<&str> = w.steps.iter().map(|s| s.role).collect();
    assert_eq!(roles, vec!["original", "cycle", "duplicate"]);
}

#[test]
fn findings_are_deterministic_documented_and_serialize() {
    for e in manifest() {
        let (m, _) = load(&e);
        let a = analyze::analyze(&m);
        let b = analyze::analyze(&m);
        assert_eq!(a, b, "{}: the analysis is deterministic", e["file"]);
        for f in &a {
            let (_, max, _) = analyze::CODES.iter().find(|(c, ..)| *c == f.code).unwrap_or_else(|| panic!("undocumented code {}", f.code));
            assert!(f.severity >= *max, "{}: {} is at most {:?}", e["file"], f.code, max);
            assert!(!f.message.is_empty());
            if f.severity != Severity::Info {
                assert!(!f.fix.is_empty(), "{}: {} needs a fix", e["file"], f.code);
                assert!(!f.transitions.is_empty(), "{}: {} names its transitions", e["file"], f.code);
            }
        }
        let doc = analyze::to_json(&m.id, &a);
        let (errors, warnings, info) = analyze::counts(&a);
        assert_eq!(doc["summary"], json!({ "errors": errors, "warnings": warnings, "info": info }));
        for (i, f) in a.iter().enumerate() {
            let j = &doc["findings"][i];
            assert_eq!(j["code"], f.code.as_str());
            assert_eq!(j["severity"], f.severity.as_str());
            if let Some(w) = &f.witness {
                assert_eq!(j["witness"]["steps"].as_array().unwrap().len(), w.steps.len());
                assert!(j["witness"]["mode"] == "late_duplicate" || j["witness"]["mode"] == "fresh_id");
                assert!(j["witness"]["steps"][0]["event"]["id"].is_string());
            }
        }
    }
}

#[test]
fn a_region_that_takes_the_event_again_while_another_moves_is_found() {
    let m = Machine::from_json(&read("parallel-reaccept.json")).unwrap();
    let f = analyze::analyze(&m);
    let re = f.iter().find(|x| x.code == "reaccept").expect("the re-accepting region is found");
    assert_eq!((re.state.as_str(), re.severity), ("open.fulfilment.packing", Severity::Error));
    assert_eq!(re.transitions, vec!["states.open.states.fulfilment.states.packing.on.PAY".to_string()]);
    assert!(
        re.message.contains("moved region `open.payment` on") && re.message.contains("region `open.fulfilment` stays"),
        "{}",
        re.message
    );
    let w = re.witness.as_ref().unwrap();
    assert_eq!(w.shows.effects.iter().map(|e| e.effect_type.as_str()).collect::<Vec<_>>(), vec!["notifyWarehouse"]);
    check_witness(&m, re, "parallel-reaccept");
    // The original moved both regions' state value; the repeat only fulfilment's effect.
    let (r, _) = replay(&m, &w.steps, "parallel-reaccept");
    assert_eq!(r.outcomes[w.original].state, json!({ "open": { "payment": "paid", "fulfilment": "packing" } }));

    // The safe twin: payment raises PAID for fulfilment, SHIP waits for payment
    // (in_state), onDone closes the order. PAID is raised, never sent from outside.
    let m = Machine::from_json(&read("parallel-safe.json")).unwrap();
    let f = analyze::analyze(&m);
    assert_eq!(hazards(&f), Vec::<String>::new(), "{}", analyze::to_text(&m.id, &f));
    assert!(f.iter().all(|x| x.event.as_deref() != Some("PAID")), "{}", analyze::to_text(&m.id, &f));
    assert!(f.iter().any(|x| x.event.as_deref() == Some("PAY")), "PAY is reported on as information");
}

#[test]
fn a_history_state_that_restores_a_state_taking_the_event_again_is_found() {
    let m = Machine::from_json(&read("history-reaccept.json")).unwrap();
    let f = analyze::analyze(&m);
    let path = vec!["states.failed.on.RETRY".to_string(), "states.work.states.uploading.on.RETRY".to_string()];
    let re = f.iter().find(|x| x.code == "reaccept" && x.transitions == path).expect("the history path is found");
    assert_eq!((re.state.as_str(), re.severity), ("work.uploading", Severity::Error));
    assert!(re.message.contains("enters history state `work.hist`, which restores `work.uploading`"), "{}", re.message);
    check_witness(&m, re, "history-reaccept");
    // The witness goes to uploading, fails, and retries: the history restores uploading.
    let w = re.witness.as_ref().unwrap();
    let types: Vec<&str> = w.steps.iter().map(|s| s.event["type"].as_str().unwrap()).collect();
    assert_eq!(types, vec!["PICK", "FAIL", "RETRY", "RETRY"]);
    let (r, _) = replay(&m, &w.steps, "history-reaccept");
    assert_eq!(r.outcomes[w.original].state, json!({ "work": "uploading" }));
    // Without the history state (RETRY back to `work`, which starts in
    // `selecting`) that path does not exist.
    let mut def: Value = serde_json::from_str(&read("history-reaccept.json")).unwrap();
    def["states"]["failed"]["on"]["RETRY"] = json!("work");
    let plain = Machine::from_value(def).unwrap();
    let g = analyze::analyze(&plain);
    assert!(!g.iter().any(|x| x.code == "reaccept" && x.transitions == path), "{}", analyze::to_text(&plain.id, &g));
}

#[test]
fn a_targetless_repeat_only_changes_nothing_and_is_not_a_hazard() {
    // The repeat is applied, but sets the same value again: no claim is made.
    let m = Machine::from_json(&read("reenter-safe.json")).unwrap();
    let f = analyze::analyze(&m);
    let u = f.iter().find(|x| x.code == "reaccept_unconfirmed").expect("reaccept_unconfirmed");
    assert!(u.message.contains("changed no context"), "{}", u.message);
}

// ---------------------------------------------------------------------------
// XState import

#[test]
fn xstate_configs_are_imported_with_diagnostics_and_analysed() {
    let checkout = idem::xstate::import_json(&read("xstate/checkout.json")).unwrap();
    let mut sites: Vec<&str> = checkout.diagnostics.iter().filter_map(|d| d.site.as_deref()).collect();
    sites.sort();
    assert_eq!(
        sites,
        vec![
            "states.paid.after.shippingDeadline",
            "states.paid.entry[0]",
            "states.paid.entry[1]",
            "states.pending.always.guard",
            "states.pending.on.PAYMENT.actions[0]",
            "states.pending.on.PAYMENT.actions[1]",
        ]
    );
    assert!(checkout.diagnostics.iter().all(|d| d.code == "unrepresentable" && d.severity == Severity::Warning));
    let guard = checkout.diagnostics.iter().find(|d| d.site.as_deref() == Some("states.pending.always.guard")).unwrap();
    assert!(guard.message.contains("isPaidInFull"), "{}", guard.message);
    // Imported, the named guard stays a name, implemented by a stand-in flag the event carries
    // (never the string as a literal, always true); the config loaded as an idem definition,
    // without implementations, is refused at that guard.
    let always = &checkout.definition["states"]["pending"]["always"];
    let imported = if always.is_array() { &always[0]["guard"] } else { &always["guard"] };
    assert_eq!(imported, &json!("isPaidInFull"));
    let stand_in = &checkout.definition["implementations"]["guards"]["isPaidInFull"];
    assert_eq!(stand_in, &json!({ "===": [{ "var": "event.payload.$guard.isPaidInFull" }, true] }));
    assert_eq!(checkout.needs.guards, vec!["isPaidInFull"]);
    let raw = json!({ "id": "x", "initial": "a", "states": { "a": { "always": { "guard": "isPaidInFull", "target": "b" } }, "b": {} } });
    let err = Machine::from_value(raw.clone()).unwrap_err();
    assert_eq!((err.code, err.path.as_deref()), (idem::Code::Unimplemented, Some("states.a.always.guard")), "{err}");
    assert!(Machine::from_value(idem::xstate::import(&raw).unwrap().definition).is_ok());
    // The topology is still there, and named actions run again on a repeat.
    let def = &checkout.definition;
    assert_eq!(def["states"]["paid"]["on"]["RETRY_NOTIFY"], json!({ "target": "paid", "reenter": true }));
    assert_eq!(def["states"]["paid"]["after"]["60000"], json!({ "target": "paid", "reenter": true }));
    assert_eq!(def["states"]["pending"]["on"]["PAYMENT"]["actions"][0], json!("recordPayment"));
    assert_eq!(def["implementations"]["actions"]["recordPayment"], json!([{ "effect": { "type": "recordPayment" } }]));
    let m = Machine::from_value(checkout.definition).unwrap();
    let f = analyze::analyze(&m);
    // The warning: a first SHIP while pending is taken by `always` (its guard,
    // a flag the event carries, reads SHIP), and a late copy then ships.
    assert_eq!(hazards(&f), vec!["reaccept:error", "reaccept:warning", "reenter_reruns:error"]);
    for h in f.iter().filter(|x| x.severity != Severity::Info) {
        check_witness(&m, h, &format!("xstate checkout {}", h.code));
    }
    let reenter = f.iter().find(|x| x.code == "reenter_reruns").unwrap();
    let emitted: Vec<&str> = reenter.witness.as_ref().unwrap().shows.effects.iter().map(|e| e.effect_type.as_str()).collect();
    assert!(emitted.contains(&"notifyShipping"), "{emitted:?}");

    let signup = idem::xstate::import_json(&read("xstate/signup.json")).unwrap();
    assert_eq!(signup.diagnostics.len(), 2, "two named actions");
    let m = Machine::from_value(signup.definition).unwrap();
    let f = analyze::analyze(&m);
    assert!(hazards(&f).is_empty(), "{}", analyze::to_text(&m.id, &f));
    assert_eq!(f.iter().filter(|x| x.code == "topology_protected").count(), 3);
}

#[test]
fn xstate_features_without_an_idem_equivalent_are_reported_not_dropped() {
    let config = json!({
        "id": "x",
        "initial": "a",
        "types": {},
        "states": {
            "a": {
                "type": "parallel",
                "states": {
                    "left": { "initial": "l1", "states": { "l1": { "on": { "GO": "l2" } }, "l2": {} } },
                    "right": { "initial": "r1", "states": { "r1": {} } }
                },
                "on": { "*": "b", "item.*": "b", "STOP": null, "BACK": { "target": "b", "internal": false, "cond": "ok" } }
            },
            "b": {
                "initial": "b1",
                "states": { "b1": { "on": { "UNDO": "hist" } }, "hist": { "type": "history" } },
                "entry": [{ "type": "xstate.log" }, { "type": "xstate.raise" }, { "assign": { "n": 1 } }],
                "on": { "NEXT": { "target": "c", "guard": { "==": [{ "var": "context.n" }, 1] }, "actions": { "respond": "ok" } } },
                "onDone": "c"
            },
            "c": { "type": "final" }
        }
    });
    let out = idem::xstate::import(&config).unwrap();
    let d = |site: &str| {
        out.diagnostics
            .iter()
            .find(|x| x.site.as_deref() == Some(site))
            .unwrap_or_else(|| panic!("no diagnostic at {site}: {:#?}", out.diagnostics))
    };
    assert!(d("states.a.on.*").message.contains("wildcard"));
    assert!(d("states.a.on.item.*").message.contains("wildcard"));
    assert!(d("states.a.on.STOP").message.contains("null"));
    assert_eq!(d("states.a.on.BACK.internal").severity, Severity::Info);
    assert!(d("states.a.on.BACK.cond").message.contains("v4"));
    let at_cond: Vec<&Finding> = out.diagnostics.iter().filter(|x| x.site.as_deref() == Some("states.a.on.BACK.cond")).collect();
    assert_eq!(at_cond.len(), 2, "v4 syntax noted, and the named guard `ok` modelled");
    assert!(at_cond[1].message.contains("guard `ok`"), "{}", at_cond[1].message);
    assert_eq!(d("states.b.entry[0]").severity, Severity::Info);
    assert!(d("states.b.entry[1]").message.contains("xstate.raise"));
    assert_eq!(d("types").severity, Severity::Info);
    let def = &out.definition;
    // BACK's own transition, then the wildcards', which XState tries after it.
    assert_eq!(def["states"]["a"]["on"]["BACK"][0]["reenter"], true);
    assert_eq!(def["states"]["a"]["on"]["BACK"][1], json!("b"));
    assert_eq!(def["states"]["b"]["entry"][0], json!({ "effect": { "type": "xstate.raise" } }), "the log is left out");
    assert_eq!(def["states"]["b"]["entry"][1], json!({ "assign": { "n": 1 } }), "idem data actions pass through");
    assert_eq!(def["states"]["b"]["on"]["NEXT"]["guard"], json!({ "==": [{ "var": "context.n" }, 1] }), "JSONLogic guards pass through");
    let m = Machine::from_value(out.definition.clone()).expect("the import is a valid idem definition");
    assert_eq!(m.id, "x");
    assert!(idem::xstate::import(&json!([1])).is_err());
}

#[test]
fn xstate_parallel_and_history_machines_are_imported_whole() {
    let out = idem::xstate::import_json(&read("xstate/order-parallel.json")).unwrap();
    let sites: Vec<&str> = out.diagnostics.iter().filter_map(|d| d.site.as_deref()).collect();
    assert_eq!(sites, vec!["states.open.states.fulfilment.states.waiting.on.PAID.actions"], "only the named action is code");
    let def = &out.definition;
    let open = &def["states"]["open"];
    assert_eq!(open["type"], "parallel");
    let regions: Vec<&String> = open["states"].as_object().unwrap().keys().collect();
    assert_eq!(regions, vec!["payment", "fulfilment", "hist"], "every region, in the order written");
    assert_eq!(open["states"]["hist"], json!({ "type": "history", "history": "deep", "target": "#orderParallel.open.payment.unpaid" }));
    assert_eq!(open["onDone"], "closed");
    let pay = &open["states"]["payment"]["states"]["unpaid"]["on"]["PAY"];
    assert_eq!(pay["actions"], json!([{ "raise": { "type": "PAID", "payload": { "preserve": { "via": "card" } } } }]));
    let ship = &open["states"]["fulfilment"]["states"]["ready"]["on"]["SHIP"];
    assert_eq!(ship["guard"], json!({ "in_state": "#orderParallel.open.payment.paid" }));
    assert_eq!(def["states"]["onHold"]["on"]["RESET"]["target"], json!(["#orderParallel.open.payment.unpaid", "#orderParallel.open.fulfilment.waiting"]));

    // It runs as XState runs it: PAY moves payment on and raises PAID, which fulfilment takes.
    let m = Machine::from_value(out.definition).unwrap();
    let paid = m.reduce(None, &json!({ "id": "p1", "type": "PAY" }), 1_000);
    assert_eq!(paid.state, json!({ "open": { "payment": "paid", "fulfilment": "packing" } }));
    assert_eq!(paid.effects.iter().map(|e| e.effect_type.as_str()).collect::<Vec<_>>(), vec!["notifyWarehouse"]);
    let held = m.reduce(paid.snapshot.as_deref(), &json!({ "id": "h1", "type": "HOLD" }), 2_000);
    let back = m.reduce(held.snapshot.as_deref(), &json!({ "id": "r1", "type": "RELEASE" }), 3_000);
    assert_eq!(back.state, paid.state, "the deep history restores both regions");

    let f = analyze::analyze(&m);
    assert_eq!(hazards(&f), vec!["cycle_reaccept:warning"; 5], "{}", analyze::to_text(&m.id, &f));
    for h in f.iter().filter(|x| x.severity != Severity::Info && x.code != "unrepresentable") {
        check_witness(&m, h, &format!("xstate order-parallel {} {:?}", h.code, h.transitions));
    }
    // A late PAY after a reset moves both regions again: fulfilment through the raised PAID.
    let pay = f.iter().find(|x| x.event.as_deref() == Some("PAY")).expect("PAY after a reset");
    let moved = pay.witness.as_ref().unwrap().shows.moved_to.clone();
    assert_eq!(moved, Some(json!({ "open": { "payment": "paid", "fulfilment": "packing" } })), "{}", pay.message);
    assert!(f.iter().all(|x| x.event.as_deref() != Some("PAID")), "PAID is raised, never sent from outside");

    // stateIn with a state value, and a raise whose event is a function.
    let config = json!({
        "id": "x", "type": "parallel",
        "states": {
            "a": { "initial": "a1", "states": { "a1": { "on": { "GO": { "target": "a2", "actions": [{ "type": "xstate.raise" }] } } }, "a2": {} } },
            "b": { "initial": "b1", "states": { "b1": { "on": { "GO": { "target": "b2", "guard": { "stateValue": { "a": "a2", "b": "b1" } } } } }, "b2": {} } }
        }
    });
    let out = idem::xstate::import(&config).unwrap();
    let go = &out.definition["states"]["b"]["states"]["b1"]["on"]["GO"];
    assert_eq!(go["guard"], json!({ "and": [{ "in_state": "#x.a.a2" }, { "in_state": "#x.b.b1" }] }));
    let raise = out.diagnostics.iter().find(|d| d.site.as_deref() == Some("states.a.states.a1.on.GO.actions[0]")).expect("raise diagnosed");
    assert!(raise.message.contains("computed by a function"), "{}", raise.message);
    assert!(Machine::from_value(out.definition).is_ok());
}

// ---------------------------------------------------------------------------
// The command line

fn lint(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_idem")).arg("lint").args(args).current_dir(dir()).output().expect("idem runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn idem_lint_fails_ci_on_errors_only() {
    let (code, text) = lint(&["fragile-order.json"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("error[reaccept] pending on PAYMENT_PARTIAL"), "{text}");
    assert!(text.contains("witness (late duplicate)"), "{text}");
    assert!(text.contains("order: 2 error(s), 1 warning(s), 2 info"), "{text}");

    let (code, text) = lint(&["../machines/order.json"]);
    assert_eq!(code, 0, "{text}");
    let (code, text) = lint(&["cycle.json"]);
    assert_eq!(code, 0, "warnings alone do not fail: {text}");
    assert!(text.contains("warning[cycle_reaccept]"), "{text}");

    let (code, text) = lint(&["--format", "json", "unstable-key.json"]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&text).expect("json output");
    assert_eq!(v["machine"], "mailer");
    assert_eq!(v["summary"]["errors"], 3);
    assert!(v["findings"].as_array().unwrap().iter().any(|f| f["code"] == "unstable_effect_key"));

    let (code, text) = lint(&["--xstate", "xstate/checkout.json", "--format", "json"]);
    assert_eq!(code, 1, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["summary"]["warnings"], 7, "the invoke is an effect now, not a warning");
    assert_eq!(v["findings"][0]["severity"], "error", "sorted: errors first");
    let (code, text) = lint(&["--xstate", "xstate/order-parallel.json"]);
    assert_eq!(code, 0, "a parallel machine with warnings only: {text}");
    assert!(text.contains("orderParallel: 0 error(s), 6 warning(s)"), "{text}");

    let (code, text) = lint(&["--format", "yaml", "cycle.json"]);
    assert_eq!(code, 2);
    assert!(text.contains("\"code\":\"usage\""), "{text}");
    let (code, _) = lint(&[]);
    assert_eq!(code, 2);
    let (code, text) = lint(&["missing.json"]);
    assert_eq!(code, 2);
    assert!(text.contains("\"code\":\"io\""), "{text}");
}
