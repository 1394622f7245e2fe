//! Native throughput of `idem::Machine::reduce` (no criterion: `Instant` and medians).
//!
//! ```text
//! cargo bench --bench idem                      human-readable table
//! cargo bench --bench idem -- --json            the same figures as JSON (read by benches/run.mjs)
//!         [--emit DIR]                          also write DIR/machine.json and DIR/idem-<N>.snap
//!         [--sizes 0,100,1000] [--budget-ms 400]
//! cargo bench --bench idem -- --smoke           every measurement once, checking outcomes (no timing)
//! cargo bench --bench idem -- --phases          where a round trip's time goes, phase by phase
//! cargo bench --bench idem -- --profile N [--iters K] [--dup]
//!                                               K round trips (fresh event, or a duplicate) at
//!                                               ledger size N and nothing else, in `profile_loop`:
//!                                               run it under callgrind or perf
//! ```
//!
//! Build it as benches/run.mjs does, in its own target dir and with panic=unwind
//! (with the release profile's panic=abort, `cargo bench` links the cdylib lib
//! twice into the same file names and the two links race, rust-lang/cargo#6313):
//!
//! ```text
//! CARGO_TARGET_DIR=target/bench CARGO_PROFILE_RELEASE_PANIC=unwind cargo bench --bench idem -- --phases
//! ```
//!
//! The machine is tests/machines/order.json with three changes, made here and
//! nowhere else (benches/run.mjs reads the result from `--emit`):
//! `retention.maxEntries` = 1,000,000 so a ledger can hold 100,000 ids,
//! `limits.maxSnapshotBytes` = 64 MiB (100,000 entries are about 19 MB in wire
//! format 1, over the 16 MiB default), and a
//! `NOTE` event (`assign` of `lastNote`) that is applied without growing the
//! context, so the ledger can be filled to N entries while the context stays
//! small: ledger size is then the only thing that varies.

use idem::{Machine, Snapshot};
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Host time of the first NOTE event; event i of the ledger is applied at T0 + i.
const T0: u64 = 1_700_000_000_000;
/// Host time of every measured event (all NOTE entries are still live: 24 h retention).
const NOW: u64 = T0 + 1_000_000;
/// Ledgers up to this size are built by reducing real events one by one; larger
/// ones are synthesized entry by entry (see `synthesize`), after checking that the
/// synthesizer reproduces a real one byte for byte.
const REAL_MAX: usize = 1_000;
const DEFAULT_SIZES: &[usize] = &[0, 100, 1_000, 10_000, 100_000];

fn bench_machine_json() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/machines/order.json");
    let text = std::fs::read_to_string(path).expect("read tests/machines/order.json");
    let mut def: Value = serde_json::from_str(&text).expect("order.json is json");
    def["retention"]["maxEntries"] = json!(1_000_000);
    def["limits"] = json!({ "maxSnapshotBytes": 64 << 20 });
    def["context"]["lastNote"] = Value::Null;
    def["states"]["pending"]["on"]["NOTE"] =
        json!({ "actions": [{ "assign": { "lastNote": { "var": "event.payload.n" } } }] });
    serde_json::to_string_pretty(&def).unwrap()
}

fn note_id(i: usize) -> String {
    format!("01JBENCHNOTE{i:014}")
}

fn note_event(i: usize) -> Value {
    json!({ "id": note_id(i), "type": "NOTE", "payload": { "n": i } })
}

pub fn fresh_event() -> Value {
    json!({ "id": "01JBENCHFRESH0000000000000", "type": "PAYMENT_PARTIAL", "payload": { "paymentId": "q-1", "amount": 1 } })
}

/// The duplicate probed at ledger size n: the entry in the middle of the ledger.
fn dup_index(n: usize) -> usize {
    n / 2
}

/// A snapshot whose ledger holds n NOTE events, built by reducing them one by one.
fn build_real(m: &Machine, n: usize) -> String {
    if n == 0 {
        return empty_snapshot(m);
    }
    let mut snap: Option<String> = None;
    for i in 0..n {
        let o = m.reduce(snap.as_deref(), &note_event(i), T0 + i as u64);
        assert_eq!(o.status.as_str(), "applied", "building the ledger: event {i}: {:?}", o.error);
        snap = o.snapshot;
    }
    snap.unwrap()
}

/// The snapshot of a process in its initial state with an empty ledger (what a
/// process looks like once every entry has expired).
fn empty_snapshot(m: &Machine) -> String {
    Snapshot::initial(m, &m.initial_config(m.root())).encode()
}

/// The same snapshot as `build_real(m, n)`, written directly in the wire format:
/// reducing 100,000 events one by one costs O(n^2) while every reduce re-reads
/// the whole ledger. Checked against `build_real` before use.
fn synthesize(m: &Machine, n: usize) -> String {
    let mut s = Snapshot::initial(m, &m.initial_config(m.root()));
    for i in 0..n {
        let at = T0 + i as u64;
        s.ledger.push(
            &note_id(i),
            &idem::json::fingerprint("NOTE", &json!({ "n": i })),
            at,
            at + m.retention_for("NOTE"),
            i as u64 + 1,
            false,
            &json!({ "state": "pending", "revision": i + 1 }),
        );
    }
    if n > 0 {
        s.state.context["lastNote"] = json!(n - 1);
    }
    s.state.revision = n as u64;
    s.encode()
}

struct Snapshots {
    by_size: Vec<(usize, String)>,
    how: &'static str,
}

fn build_snapshots(m: &Machine, sizes: &[usize]) -> Snapshots {
    let check = 64.min(REAL_MAX);
    let faithful = synthesize(m, check) == build_real(m, check);
    let mut by_size = Vec::new();
    for &n in sizes {
        let s = if n <= REAL_MAX || !faithful { build_real(m, n) } else { synthesize(m, n) };
        by_size.push((n, s));
    }
    let how = if faithful {
        "reduced one by one up to 1000 entries, synthesized beyond (checked byte-equal to reduced at 64)"
    } else {
        "reduced one by one (the synthesizer no longer matches the wire format)"
    };
    Snapshots { by_size, how }
}

#[derive(Clone, Copy)]
struct Stats {
    median_ns: f64,
    p95_ns: f64,
    samples: usize,
    batch: usize,
}

/// Time `f`: batches sized so one batch lasts about 200 µs, at least 5 samples,
/// then more until `budget` is spent or `max_samples` are taken. Median and p95
/// of the per-call time of each batch.
fn measure<R>(budget: Duration, max_samples: usize, mut f: impl FnMut() -> R) -> Stats {
    let t = Instant::now();
    black_box(f());
    let one = t.elapsed().as_nanos().max(1) as usize;
    let batch = (200_000 / one).clamp(1, 100_000);
    let start = Instant::now();
    let mut samples = Vec::new();
    while samples.len() < 5 || (start.elapsed() < budget && samples.len() < max_samples) {
        let t = Instant::now();
        for _ in 0..batch {
            black_box(f());
        }
        samples.push(t.elapsed().as_nanos() as f64 / batch as f64);
    }
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Stats { median_ns: pick(0.5), p95_ns: pick(0.95), samples: samples.len(), batch }
}

fn stats_json(s: Stats) -> Value {
    json!({ "medianNs": s.median_ns, "p95Ns": s.p95_ns, "samples": s.samples, "batch": s.batch })
}

fn budget_for(n: usize, base: Duration) -> Duration {
    if n >= 100_000 { base * 3 } else { base }
}

struct Args {
    json: bool,
    smoke: bool,
    phases: bool,
    emit: Option<String>,
    sizes: Vec<usize>,
    budget: Duration,
    profile: Option<usize>,
    iters: usize,
    dup: bool,
}

fn parse_args() -> Args {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let get = |name: &str| argv.iter().position(|a| a == name).and_then(|i| argv.get(i + 1)).cloned();
    let has = |name: &str| argv.iter().any(|a| a == name);
    let sizes = get("--sizes")
        .map(|s| s.split(',').map(|x| x.trim().replace('_', "").parse().expect("--sizes: numbers")).collect())
        .unwrap_or_else(|| DEFAULT_SIZES.to_vec());
    Args {
        json: has("--json"),
        smoke: has("--smoke"),
        phases: has("--phases"),
        emit: get("--emit"),
        sizes,
        budget: Duration::from_millis(get("--budget-ms").map(|s| s.parse().expect("--budget-ms")).unwrap_or(400)),
        profile: get("--profile").map(|s| s.replace('_', "").parse().expect("--profile N")),
        iters: get("--iters").map(|s| s.parse().expect("--iters K")).unwrap_or(200),
        dup: has("--dup"),
    }
}

fn main() {
    let args = parse_args();
    let def = bench_machine_json();
    let m = Machine::from_json(&def).expect("bench machine is valid");

    if let Some(n) = args.profile {
        // Synthesized even below REAL_MAX (byte-equal, checked) to keep the
        // profiler's time on the loop; collect only `profile_loop` under callgrind:
        //   valgrind --tool=callgrind --toggle-collect='*profile_loop*' <bench> --profile N
        let check = 64.min(n);
        assert!(synthesize(&m, check) == build_real(&m, check), "synthesizer no longer matches the wire format");
        let base = if n == 0 { empty_snapshot(&m) } else { synthesize(&m, n) };
        let dup = args.dup;
        let ev = if dup { note_event(dup_index(n)) } else { fresh_event() };
        let t = Instant::now();
        profile_loop(&m, &base, &ev, args.iters);
        eprintln!(
            "profile: {} round trips ({}) at ledger {n} in {:?}",
            args.iters,
            if dup { "duplicate" } else { "fresh" },
            t.elapsed()
        );
        return;
    }

    let build_start = Instant::now();
    let snaps = build_snapshots(&m, &args.sizes);
    let build_time = build_start.elapsed();

    if let Some(dir) = &args.emit {
        std::fs::create_dir_all(dir).expect("create --emit dir");
        std::fs::write(format!("{dir}/machine.json"), &def).expect("write machine.json");
        for (n, s) in &snaps.by_size {
            std::fs::write(format!("{dir}/idem-{n}.snap"), s).expect("write snapshot");
        }
    }

    if args.smoke {
        smoke(&m, &snaps);
        return;
    }
    if args.phases {
        phases(&m, &snaps, args.budget);
        return;
    }

    let fresh = fresh_event();
    let mut rows = Vec::new();
    for (n, base) in &snaps.by_size {
        let n = *n;
        let budget = budget_for(n, args.budget);
        let max = if n >= 10_000 { 60 } else { 2_000 };
        let f = measure(budget, max, || m.reduce(Some(base), &fresh, NOW));
        let d = if n > 0 {
            let dup = note_event(dup_index(n));
            Some(measure(budget, max, || m.reduce(Some(base), &dup, NOW)))
        } else {
            None
        };
        let json = json_form(&m, base);
        let floor = measure(budget, max, || serde_json::from_str::<Value>(&json).unwrap().to_string());
        rows.push((n, base.len(), f, d, floor));
        if !args.json {
            eprintln!("measured ledger {n}");
        }
    }

    if args.json {
        let out = json!({
            "machineHash": m.hash,
            "snapshots": snaps.how,
            "buildMs": build_time.as_secs_f64() * 1e3,
            "roundTrip": rows.iter().map(|(n, bytes, f, d, floor)| json!({
                "ledger": n, "snapshotBytes": bytes,
                "fresh": stats_json(*f),
                "duplicate": d.map(stats_json),
                "jsonFloor": stats_json(*floor),
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string(&out).unwrap());
    } else {
        println!("idem native round trip: reduce(snapshot text, event, now) -> outcome + snapshot text");
        println!("snapshots: {} (built in {:.1?})", snaps.how, build_time);
        println!(
            "{:>8} {:>11} {:>14} {:>14} {:>14} {:>14} {:>14}",
            "ledger", "snap bytes", "fresh med", "fresh p95", "dup med", "serde floor", "fresh ops/s"
        );
        for (n, bytes, f, d, floor) in &rows {
            println!(
                "{:>8} {:>11} {:>14} {:>14} {:>14} {:>14} {:>14.0}",
                n,
                bytes,
                fmt_ns(f.median_ns),
                fmt_ns(f.p95_ns),
                d.map(|d| fmt_ns(d.median_ns)).unwrap_or_else(|| "-".into()),
                fmt_ns(floor.median_ns),
                1e9 / f.median_ns
            );
        }
    }
}

#[inline(never)]
fn profile_loop(m: &Machine, base: &str, ev: &Value, iters: usize) {
    for _ in 0..iters {
        black_box(m.reduce(Some(black_box(base)), ev, NOW));
    }
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// Each measurement once, checking what it returns; prints one JSON line that
/// benches/run.mjs compares with the peers.
fn smoke(m: &Machine, snaps: &Snapshots) {
    let fresh = fresh_event();
    let mut sizes = Vec::new();
    for (n, base) in &snaps.by_size {
        let o = m.reduce(Some(base), &fresh, NOW);
        assert_eq!(o.status.as_str(), "applied", "fresh at {n}: {:?}", o.error);
        assert_eq!(o.revision, *n as u64 + 1);
        assert_eq!(o.response, json!("recorded q-1"));
        let next = o.snapshot.expect("applied writes");
        let v = idem::inspect(m, &next).expect("inspect");
        assert_eq!(v["ledger"].as_array().unwrap().len(), n + 1);
        if *n > 0 {
            let k = dup_index(*n);
            let d = m.reduce(Some(base), &note_event(k), NOW);
            assert_eq!(d.status.as_str(), "duplicate", "dup at {n}");
            assert!(d.snapshot.is_none(), "a duplicate writes nothing");
            assert_eq!(d.response, json!({ "state": "pending", "revision": k + 1 }));
        }
        sizes.push(json!({ "ledger": n, "context": v["context"], "state": v["value"], "revision": v["revision"] }));
    }
    println!("{}", json!({ "machineHash": m.hash, "snapshots": snaps.how, "sizes": sizes }));
}

/// Where one round trip's time goes at each ledger size: the public pieces
/// `reduce` is made of, timed on their own (whatever the wire format), next to
/// the JSON floor of the same snapshot (its readable form parsed and written).
fn phases(m: &Machine, snaps: &Snapshots, budget: Duration) {
    let fresh = fresh_event();
    println!("idem native round trip, phase by phase (median per call)");
    println!(
        "{:>8} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}",
        "ledger", "reduce", "decode", "encode", "checksum", "rest", "dup reduce", "JSON floor"
    );
    for (n, base) in &snaps.by_size {
        let budget = budget_for(*n, budget);
        let max = 200;
        let total = measure(budget, max, || m.reduce(Some(base), &fresh, NOW)).median_ns;
        let dup = if *n > 0 {
            let ev = note_event(dup_index(*n));
            fmt_ns(measure(budget, max, || m.reduce(Some(base), &ev, NOW)).median_ns)
        } else {
            "-".into()
        };
        let decode = measure(budget, max, || Snapshot::decode(base, usize::MAX).unwrap()).median_ns;
        let next = m.reduce(Some(base), &fresh, NOW).snapshot.unwrap();
        let mut snap = Snapshot::decode(&next, usize::MAX).unwrap();
        let encode = measure(budget, max, || snap.encode()).median_ns;
        let check = measure(budget, max, || idem::json::hash64(next.as_bytes())).median_ns;
        let json = json_form(m, base);
        let floor = measure(budget, max, || serde_json::from_str::<Value>(&json).unwrap().to_string()).median_ns;
        println!(
            "{:>8} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}",
            n,
            fmt_ns(total),
            fmt_ns(decode),
            fmt_ns(encode),
            fmt_ns(check),
            fmt_ns(total - decode - encode),
            dup,
            fmt_ns(floor)
        );
    }
    println!("decode = Snapshot::decode (checksum included), encode = Snapshot::encode (checksum included),");
    println!("checksum = one xxh3 over the new snapshot, rest = reduce - decode - encode (the statechart, the ledger");
    println!("probe, the outcome); JSON floor = serde_json parse + write of the snapshot's readable JSON form.");
}

/// The snapshot's readable JSON form (what wire format 1 stored, without its checksum).
fn json_form(m: &Machine, snapshot: &str) -> String {
    idem::inspect(m, snapshot).expect("inspect").to_string()
}
