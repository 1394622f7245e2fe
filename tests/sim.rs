//! The seeded simulator: many random executions of real processes through hosts
//! that crash, race and retry, over a store with compare-and-set, with every
//! invariant checked at the end of each execution.
//!
//! ```text
//! cargo test --test sim                                           fixed seeds, bounded time
//! SIM_SEEDS=100000 cargo test --release --test sim -- --nocapture   a longer run
//! SIM_SEED=42 cargo test --test sim -- --nocapture                  replay one seed with its trace
//! SIM_FAULT=no-cas cargo test --test sim -- --nocapture             watch the checks catch a defect
//! ```
//! (`SIM_FAULT`: `no-cas`, `effects-before-commit`, `ignore-claim`, `no-keys`.)
//! A failing seed is shrunk (chaos knobs turned off, events dropped, as long as
//! it still fails) and printed with its trace and the command that replays it
//! (`SIM_SEED=.. SIM_SHRINK=.. SIM_DROP=..`).

#![cfg(feature = "analysis")]

use idem::check::report::{fault_names, plant};
use idem::check::sim::workload::SHRINK_BITS;
use idem::check::sim::world::{kind_of, run, Faults, Machines, Opts, Stats};
use idem::Machine;
use std::time::Instant;

/// The two machines of the workload.
fn machines() -> Machines {
    Machines {
        order: Machine::from_json(include_str!("machines/order.json")).expect("order.json"),
        checkout: Machine::from_json(include_str!("sim/checkout.json")).expect("checkout.json"),
    }
}

/// Seeds run by `cargo test` (debug build, two cores: well under 20 s).
const DEFAULT_SEEDS: u64 = 400;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        let v = v.trim();
        let parsed = match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => v.parse(),
        };
        parsed.unwrap_or_else(|_| panic!("{name}={v} is not a number"))
    })
}

/// `SIM_FAULT`: run with a deliberate defect, to watch the checks catch it (the
/// names `idem check --host-defect` takes).
fn env_faults() -> Faults {
    let mut f = Faults::default();
    for name in std::env::var("SIM_FAULT").unwrap_or_default().split(',').filter(|s| !s.is_empty()) {
        if !plant(&mut f, name.trim()) {
            panic!("SIM_FAULT={name}: expected no-cas, effects-before-commit, ignore-claim or no-keys");
        }
    }
    f
}

fn env_drop() -> Vec<usize> {
    std::env::var("SIM_DROP")
        .map(|v| v.split(',').filter(|s| !s.trim().is_empty()).map(|s| s.trim().parse().expect("SIM_DROP: indices")).collect())
        .unwrap_or_default()
}

fn fails(machines: &Machines, seed: u64, opts: &Opts) -> bool {
    !run(machines, seed, opts).violations.is_empty()
}

/// Turn chaos off and drop events while the seed still fails.
fn shrink(machines: &Machines, seed: u64, faults: Faults) -> Opts {
    let mut opts = Opts { faults, ..Opts::default() };
    for &(bit, _) in SHRINK_BITS {
        let t = Opts { shrink: opts.shrink | bit, ..opts.clone() };
        if fails(machines, seed, &t) {
            opts = t;
        }
    }
    let planned = run(machines, seed, &opts).planned;
    for i in 0..planned {
        let mut t = opts.clone();
        t.drop.push(i);
        if fails(machines, seed, &t) {
            opts = t;
        }
    }
    opts
}

fn replay_command(seed: u64, opts: &Opts) -> String {
    let mut cmd = format!("SIM_SEED={seed}");
    let faults = fault_names(opts.faults);
    if !faults.is_empty() {
        cmd.push_str(&format!(" SIM_FAULT={}", faults.join(",")));
    }
    if opts.shrink != 0 {
        cmd.push_str(&format!(" SIM_SHRINK=0x{:x}", opts.shrink));
    }
    if !opts.drop.is_empty() {
        let d: Vec<String> = opts.drop.iter().map(|i| i.to_string()).collect();
        cmd.push_str(&format!(" SIM_DROP={}", d.join(",")));
    }
    cmd + " cargo test --test sim -- --nocapture"
}

/// The minimal failing execution of `seed`, as text.
fn explain(machines: &Machines, seed: u64, faults: Faults) -> String {
    let opts = shrink(machines, seed, faults);
    let off: Vec<&str> = SHRINK_BITS.iter().filter(|(b, _)| opts.shrink & b != 0).map(|(_, n)| *n).collect();
    let r = run(machines, seed, &Opts { trace: true, ..opts.clone() });
    let mut out = format!(
        "seed {seed} ({}) violates {} invariant(s); shrunk to: {}{}\n",
        r.kind.name(),
        r.violations.len(),
        if off.is_empty() { "all chaos needed".to_string() } else { off.join(", ") },
        if opts.drop.is_empty() { String::new() } else { format!(", events {:?} dropped", opts.drop) }
    );
    for v in &r.violations {
        out.push_str(&format!("  - {v}\n"));
    }
    out.push_str(&format!("replay: {}\ntrace:\n", replay_command(seed, &opts)));
    for line in &r.trace {
        out.push_str(&format!("  {line}\n"));
    }
    out
}

fn summary(s: &Stats, violations: usize, secs: f64) -> String {
    let points: Vec<String> = s.crash_points.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!(
        "sim: executions={} events={} deliveries={} duplicates_absorbed={} conflicts_retried={} crashes_injected={} \
         effects_performed={} commits={} lost_replies={} gateway_timeouts={} verifications={} leases_expired={} timers_fired={} \
         violations={violations} in {secs:.1}s\nsim: crashes by point: {}",
        s.executions,
        s.events,
        s.deliveries,
        s.duplicates,
        s.conflicts,
        s.crashes,
        s.effects,
        s.commits,
        s.lost_replies,
        s.timeouts,
        s.verifies,
        s.expired,
        s.timers,
        points.join("; ")
    )
}

/// Run `seeds` executions from `start` on all cores; return totals and the failing seeds.
fn run_many(start: u64, seeds: u64, faults: Faults, stop_at_first: bool) -> (Stats, Vec<u64>) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8) as u64;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let results: Vec<(Stats, Vec<u64>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let stop = &stop;
                scope.spawn(move || {
                    let machines = machines();
                    let mut stats = Stats::default();
                    let mut failing = Vec::new();
                    let opts = Opts { faults, ..Opts::default() };
                    let mut seed = start + t;
                    while seed < start + seeds && !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let r = run(&machines, seed, &opts);
                        stats.add(&r.stats);
                        if !r.violations.is_empty() {
                            failing.push(seed);
                            if stop_at_first {
                                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                        seed += threads;
                    }
                    (stats, failing)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("simulator thread")).collect()
    });
    let mut total = Stats::default();
    let mut failing = Vec::new();
    for (s, f) in results {
        total.add(&s);
        failing.extend(f);
    }
    failing.sort();
    (total, failing)
}

#[test]
fn simulated_executions_keep_every_invariant() {
    let machines = machines();
    if let Some(seed) = env_u64("SIM_SEED") {
        let opts = Opts { shrink: env_u64("SIM_SHRINK").unwrap_or(0) as u32, drop: env_drop(), trace: true, faults: env_faults() };
        let r = run(&machines, seed, &opts);
        for line in &r.trace {
            println!("{line}");
        }
        println!("{}", summary(&r.stats, r.violations.len(), 0.0));
        assert!(r.violations.is_empty(), "seed {seed} violates:\n  - {}", r.violations.join("\n  - "));
        return;
    }
    let seeds = env_u64("SIM_SEEDS").unwrap_or(DEFAULT_SEEDS);
    let start = env_u64("SIM_START").unwrap_or(0);
    let t0 = Instant::now();
    let faults = env_faults();
    let (stats, failing) = run_many(start, seeds, faults, false);
    println!("{}", summary(&stats, failing.len(), t0.elapsed().as_secs_f64()));
    assert_eq!(stats.executions, seeds);
    if let Some(&seed) = failing.first() {
        let shown: Vec<u64> = failing.iter().copied().take(20).collect();
        panic!("{} of {seeds} executions violate invariants (seeds {shown:?}...)\n{}", failing.len(), explain(&machines, seed, faults));
    }
    // The executions exercised what they claim to (the chaos is real, not vacuous).
    assert!(stats.duplicates > 0 && stats.conflicts > 0 && stats.crashes > 0 && stats.effects > 0);
    assert!(stats.verifies > 0 && stats.expired > 0 && stats.timers > 0 && stats.lost_replies > 0 && stats.timeouts > 0);
    assert!(stats.crash_points.len() >= 7, "crashes at every step: {:?}", stats.crash_points);
}

#[test]
fn one_seed_replays_the_same_execution() {
    let machines = machines();
    for seed in [3, 4] {
        let opts = Opts { trace: true, ..Opts::default() };
        let (a, b) = (run(&machines, seed, &opts), run(&machines, seed, &opts));
        assert!(a.trace.len() > 10);
        assert_eq!(a.trace, b.trace);
        assert_eq!(format!("{:?}", a.stats), format!("{:?}", b.stats));
    }
}

/// The checks have teeth: each deliberate defect is caught within a few hundred seeds.
fn caught(faults: Faults, expect: &[&str]) -> String {
    let (_, failing) = run_many(0, 400, faults, true);
    let seed = *failing.first().unwrap_or_else(|| panic!("no seed caught {faults:?}"));
    let machines = machines();
    let r = run(&machines, seed, &Opts { faults, ..Opts::default() });
    assert!(
        r.violations.iter().any(|v| expect.iter().any(|e| v.contains(e))),
        "seed {seed} caught {faults:?} with unexpected violations: {:?}",
        r.violations
    );
    explain(&machines, seed, faults)
}

#[test]
fn the_checks_catch_a_store_without_compare_and_set() {
    let text = caught(
        Faults { no_compare_and_set: true, ..Faults::default() },
        &["clean delivery", "applied 2 times", "revision", "store version"],
    );
    assert!(text.contains("replay: SIM_SEED=") && text.contains("trace:"), "{text}");
}

#[test]
fn the_checks_catch_effects_performed_before_the_commit() {
    caught(
        Faults { effects_before_commit: true, ..Faults::default() },
        &["no committed event emitted it", "under different keys"],
    );
}

#[test]
fn the_checks_catch_a_dispatcher_that_ignores_another_ones_claim() {
    caught(Faults { ignore_claim: true, ..Faults::default() }, &["performed 2 times at the provider"]);
}

#[test]
fn the_checks_catch_a_gateway_that_ignores_idempotency_keys() {
    caught(Faults { gateway_without_keys: true, ..Faults::default() }, &["times at the provider"]);
}

#[test]
fn seeds_alternate_between_the_two_machines() {
    assert_ne!(kind_of(0), kind_of(1));
}

#[test]
fn every_snapshot_is_read_back_in_a_fresh_machine() {
    use idem::check::sim::world::read_back;
    let m = machines().order;
    let fresh = Machine::from_json(&m.definition_json()).unwrap();
    let pay = serde_json::json!({ "id": "e1", "type": "PAYMENT_PARTIAL", "payload": { "paymentId": "p1", "amount": 40 } });
    let o = m.reduce_in("o1", None, &pay, 1_000);
    let s = o.snapshot.clone().expect("applied");
    assert_eq!(read_back(&fresh, &s, &o), Ok(()));
    // An answer that does not match what was written is caught, as is a snapshot the machine cannot read.
    let mut wrong = o.clone();
    wrong.state = serde_json::json!("paid");
    assert!(read_back(&fresh, &s, &wrong).unwrap_err().contains("reads back in state"));
    wrong = o.clone();
    wrong.revision = 7;
    assert!(read_back(&fresh, &s, &wrong).unwrap_err().contains("revision"));
    let other = machines().checkout;
    assert!(read_back(&other, &s, &o).unwrap_err().contains("cannot be read back by a fresh machine"));
}
