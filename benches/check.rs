//! `idem check`'s figures (issue 34), printed, not asserted:
//!
//! ```text
//! cargo bench --bench checker
//! ```
//!
//! - order-robust on a 6-event scenario (4 payments, one a fresh id for a paid payment, SHIP,
//!   CANCEL), any order, unbounded deliveries, 1 expiry, 1 crash, 1 effect fault, 2 hosts:
//!   the time to proved, and distinct states per second;
//! - order-fragile: the time to its counterexample and its length;
//! - the simulator's four planted host defects: states and trace length to each.

use idem::check::explore::{self, Options, Property, Report, Verdict};
use idem::check::model::Bounds;
use idem::check::report;
use idem::check::scenario::Scenario;
use idem::Machine;
use std::time::Instant;

fn load(machine: &str, scenario: &str) -> (Machine, Scenario) {
    let root = env!("CARGO_MANIFEST_DIR");
    let m = Machine::from_json(&std::fs::read_to_string(format!("{root}/{machine}")).unwrap()).unwrap();
    let s = Scenario::parse(&m, &std::fs::read_to_string(format!("{root}/{scenario}")).unwrap()).unwrap();
    (m, s)
}

fn run(machine: &str, scenario: &str, set: impl FnOnce(&mut Bounds)) -> (Report, Options, f64) {
    let (m, s) = load(machine, scenario);
    let mut bounds = Bounds::defaults(s.events().count());
    set(&mut bounds);
    let opts = Options { bounds, property: Property::Dedup, max_states: 10_000_000, timeout_s: None, process: "p1".into(), progress_every: explore::PROGRESS_EVERY };
    let t0 = Instant::now();
    let r = explore::check(&m, &s, &opts, &mut || t0.elapsed().as_secs_f64(), &mut |_| {});
    (r, opts, t0.elapsed().as_secs_f64())
}

fn trace_len(r: &Report) -> usize {
    match &r.verdict {
        Verdict::Violated(cx) => cx.actions.len(),
        _ => 0,
    }
}

fn main() {
    let (r, opts, secs) = run("www/machines/order-robust.json", "tests/check/order-6.jsonl", |_| {});
    println!("order-robust, 6 events: {}", report::summary(&r, &opts));
    println!("  {:.2} s, {} distinct states/s, {} reduces", secs, report::thousands((r.progress.distinct as f64 / secs) as u64), r.reduces);
    for fresh in [0, 1] {
        let (r, opts, secs) = run("www/machines/order-fragile.json", "tests/check/order-fragile.jsonl", |b| {
            b.fresh_resends = fresh;
            if fresh == 1 {
                b.expiries = 0;
            }
        });
        println!("order-fragile, fresh re-sends {fresh}: {} actions in {:.2} ms; {}", trace_len(&r), secs * 1000.0, report::summary(&r, &opts));
    }
    for (defect, machine) in [
        ("no-cas", "www/machines/order-robust.json"),
        ("effects-before-commit", "www/machines/order-robust.json"),
        ("ignore-claim", "www/machines/order-robust-nokeys.json"),
        ("no-keys", "www/machines/order-robust.json"),
    ] {
        let (r, _, secs) = run(machine, "tests/check/order-3.jsonl", |b| {
            report::plant(&mut b.faults, defect);
        });
        let found = if matches!(r.verdict, Verdict::Violated(_)) { "found" } else { "NOT found" };
        println!("planted {defect}: {found}, {} actions, {} states, {:.3} s", trace_len(&r), report::thousands(r.progress.distinct), secs);
    }
}
