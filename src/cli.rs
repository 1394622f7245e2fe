//! The command line, `idem reduce|run|inspect|lint|check`, as a function of its arguments and
//! an [`Io`]: the Rust binary (src/bin/idem.rs) runs it on the process's files, stdout, stderr
//! and monotonic clock, the package's `npx idem` (pkg/bin/idem.mjs, through the full wasm
//! module's `runCli`) on Node's. One implementation, so both give the same bytes, flags, exit
//! statuses and `--help`.
//!
//! ```text
//! idem reduce --machine M.json [--snapshot S.json] --event E.json --now MS --process ID
//! idem run    --machine M.json --events EVENTS.jsonl --process ID
//! idem inspect --machine M.json --snapshot S.json
//! idem lint MACHINE.json [--format text|json] [--xstate]
//! idem check MACHINE.json --scenario SCENARIO.jsonl [bounds...] | idem check --replay CE.json
//! ```
//! `idem --help` (`-h`, `help`) prints the usage and `idem --version` (`-V`) the version, as
//! plain text with exit status 0. Errors go to stderr as JSON `{ "code", "message" }` with a
//! non-zero exit status (2 for a usage error).

use crate::{Code, Error, Machine};
use serde_json::{json, Value};
use std::cell::RefCell;

/// What the command line reads and writes: the only way it reaches files, streams and time.
pub trait Io {
    /// The bytes of the file at `path`, or why it cannot be read (the message names no path).
    fn read_file(&mut self, path: &str) -> Result<Vec<u8>, String>;
    /// Write `text` to the file at `path` (`idem check --out`), or why it cannot be written.
    fn write_file(&mut self, path: &str, text: &str) -> Result<(), String>;
    /// Write `text` to stdout.
    fn out(&mut self, text: &str);
    /// Write `text` to stderr (errors, `idem check`'s progress lines).
    fn err(&mut self, text: &str);
    /// A monotonic clock in milliseconds, from any origin: `idem check`'s `--timeout` and the
    /// rate and seconds of its progress lines and report.
    fn now_ms(&mut self) -> f64;
}

const HELP: &str = "idem: statecharts that apply each event once in effect, however often it arrives

usage:
  idem reduce  --machine M.json [--snapshot S.txt] --event E.json --now MS --process ID
  idem run     --machine M.json --events EVENTS.jsonl --process ID
  idem inspect --machine M.json --snapshot S.txt
  idem lint    MACHINE.json [--format text|json] [--xstate]
  idem check   MACHINE.json --scenario SCENARIO.jsonl [--reorder all|N] [--expiries N]
               [--crashes N] [--effect-faults N] [--hosts N] [--fresh-resends N]
               [--property dedup|confluent] [--max-states N] [--timeout S]
               [--format text|json] [--out COUNTEREXAMPLE.json] [--process ID]
  idem check   --replay COUNTEREXAMPLE.json [--format text|json]
  idem --help | --version

commands:
  reduce   apply one event to a snapshot (none: a new process) at time MS; prints the outcome
           as JSON with the new snapshot; exit 1 when the event is rejected
  run      apply the events of a JSON Lines file in order (a line's \"now\" sets the clock);
           prints one outcome per line, then the final snapshot inspected
  inspect  print a snapshot as readable JSON (state, context, ledger, outbox, timers)
  lint     report the machine's duplicate-delivery hazards (--xstate: the JSON of an XState
           config); exit 1 when one is an error, for CI
  check    run the machine under every delivery schedule of a scenario within bounds and
           prove that each event is applied once in effect: exit 0 proved, 1 violated (with
           the shortest counterexample), 3 inconclusive (a limit was hit)

check explores, breadth first, every schedule of one process built from: delivering any
scenario event (a delivered id stays deliverable forever, so any number of redeliveries is
covered), in any order (--reorder all, the default up to 7 events) or with a first delivery
at most N-1 places ahead (--reorder N; 3 beyond 7 events); 2 hosts (--hosts) racing
load -> reduce -> commit (compare-and-set) -> reply, and dispatching due effects (claim,
gateway call, result reported; verify for providers without keys); a crash between any two
host steps (--crashes 1); gateway answers failed, lost or given twice (--effect-faults 1);
the clock moving to the next timer or retry, to a scenario {\"advance\": ms} line, or past an
id's retention window (--expiries 1); re-sends under a fresh id (--fresh-resends 0).
Property dedup: at every step the store's state value and context equal those of the same
schedule with repeats removed (a repeat: a delivery after the id's first recorded outcome;
fresh re-sends count as repeats), no effect reaches the gateway twice or before a commit
emitted it, a repeat emits nothing, and a reply to a repeat is the frozen response (past its
retention window a repeat may be answered by the topology: ignored). --property confluent
also requires every order to settle in the same state. States are fingerprinted exactly
(XXH3-128 over the stored snapshot's exact text, which idem writes deterministically, the
hosts, the reference, the gateway and the clock; the collision probability is printed). \"proved\" covers only these bounds and this scenario: not other
events, other payloads, more crashes or faults, or a host that breaks the store's contract.
Time moves only when every host is idle and nothing is due, so a late dispatcher and a lease that
runs out under a live host are not explored. --max-states (default 10,000,000) and --timeout
(seconds) end a run as inconclusive. --host-defect no-cas|effects-before-commit|ignore-claim|no-keys
plants one of the simulator's host defects, to watch the checker find it.

The process id (--process) names the process the events belong to: its effects' idempotency
keys start with it, so two processes that reuse an event id never share one.

Errors go to stderr as JSON { \"code\", \"message\" }; a usage error exits 2.
";

/// Run the command line `args` (without the program's name) against `io`; the exit status.
/// An error is written to stderr as JSON `{ "code", "message" }` with status 2.
pub fn run(args: &[String], io: &mut dyn Io) -> u8 {
    match command(args, io) {
        Ok(code) => code,
        Err(e) => {
            io.err(&format!("{}\n", e.to_json()));
            2
        }
    }
}

fn usage(msg: &str) -> Error {
    Error::new(Code::Usage, format!("{msg} (idem --help prints the usage)"))
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
}

/// The `--process` id that `reduce` and `run` require (effect keys are prefixed with it).
fn process(args: &[String]) -> Result<&str, Error> {
    match flag(args, "--process") {
        None => Err(usage("--process is required")),
        Some("") => Err(usage("--process must not be empty")),
        Some(id) => Ok(id),
    }
}

fn read(io: &mut dyn Io, path: &str) -> Result<String, Error> {
    let bytes = io.read_file(path).map_err(|e| Error::new(Code::Io, format!("cannot read {path}: {e}")))?;
    String::from_utf8(bytes).map_err(|e| Error::new(Code::InvalidJson, format!("{path} is not valid utf-8 (byte {})", e.utf8_error().valid_up_to())))
}

fn machine(args: &[String], io: &mut dyn Io) -> Result<Machine, Error> {
    let path = flag(args, "--machine").ok_or_else(|| usage("--machine is required"))?;
    Machine::from_json(&read(io, path)?)
}

fn command(args: &[String], io: &mut dyn Io) -> Result<u8, Error> {
    let Some(cmd) = args.first() else { return Err(usage("missing command")) };
    // Help wins wherever it is asked for (`idem lint --help`), as in other tools.
    if args.iter().any(|a| a == "--help" || a == "-h") || cmd == "help" {
        io.out(HELP);
        return Ok(0);
    }
    match cmd.as_str() {
        "version" | "--version" | "-V" => {
            io.out(&format!("idem {}\n", crate::version()));
            Ok(0)
        }
        "reduce" => {
            let process = process(args)?;
            let m = machine(args, io)?;
            let snapshot = flag(args, "--snapshot").map(|p| read(io, p)).transpose()?;
            let event_path = flag(args, "--event").ok_or_else(|| usage("--event is required"))?;
            let now: u64 = flag(args, "--now")
                .ok_or_else(|| usage("--now is required"))?
                .parse()
                .map_err(|_| usage("--now must be whole milliseconds"))?;
            let o = m.reduce_in(process, snapshot.as_deref().map(str::trim_end), &read(io, event_path)?, now);
            let mut v = o.to_json(false);
            if let Some(s) = &o.snapshot {
                v["snapshot"] = Value::String(s.clone());
            }
            io.out(&format!("{v}\n"));
            Ok(if o.error.is_some() && o.status.as_str() == "rejected" { 1 } else { 0 })
        }
        "run" => {
            let process = process(args)?;
            let m = machine(args, io)?;
            let events_path = flag(args, "--events").ok_or_else(|| usage("--events is required"))?;
            let text = read(io, events_path)?;
            let mut snapshot: Option<String> = None;
            let mut now = 0u64;
            for (i, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let mut v = crate::json::parse(line, Code::InvalidEvent, &format!("event on line {}", i + 1))?;
                now = match v.as_object_mut().and_then(|o| o.remove("now")) {
                    Some(n) => n.as_u64().ok_or_else(|| Error::new(Code::InvalidEvent, format!("now on line {} must be whole ms", i + 1)))?,
                    None => now + 1,
                };
                let o = m.reduce_in(process, snapshot.as_deref(), &v, now);
                io.out(&format!("{}\n", o.to_json(false)));
                if let Some(s) = o.snapshot {
                    snapshot = Some(s);
                }
            }
            let last = match &snapshot {
                Some(s) => crate::inspect(&m, s)?,
                None => Value::Null,
            };
            io.out(&format!("{}\n", json!({ "snapshot": last })));
            Ok(0)
        }
        "inspect" => {
            let m = machine(args, io)?;
            let s = read(io, flag(args, "--snapshot").ok_or_else(|| usage("--snapshot is required"))?)?;
            io.out(&format!("{}\n", crate::inspect(&m, s.trim_end())?));
            Ok(0)
        }
        "lint" => lint(args, io),
        "check" => check(args, io),
        other => Err(usage(&format!("unknown command \"{other}\""))),
    }
}

/// `idem lint MACHINE.json [--format text|json] [--xstate]`: the duplicate-delivery
/// hazard analysis; exit status 1 when there is an error-severity finding, so CI fails.
fn lint(args: &[String], io: &mut dyn Io) -> Result<u8, Error> {
    let mut path = None;
    let mut format = "text";
    let mut xstate = false;
    let mut rest = args.iter().skip(1);
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--format" => format = rest.next().map(String::as_str).ok_or_else(|| usage("--format needs text or json"))?,
            "--xstate" => xstate = true,
            p if !p.starts_with("--") && path.is_none() => path = Some(p),
            other => return Err(usage(&format!("unexpected argument \"{other}\""))),
        }
    }
    if format != "text" && format != "json" {
        return Err(usage("--format must be text or json"));
    }
    let text = read(io, path.ok_or_else(|| usage("lint needs a machine file"))?)?;
    let (m, mut findings) = if xstate {
        let imported = crate::xstate::import_json(&text)?;
        (Machine::from_value(imported.definition)?, imported.diagnostics)
    } else {
        (Machine::from_json(&text)?, Vec::new())
    };
    findings.extend(crate::analyze::analyze(&m));
    crate::analyze::sort(&mut findings);
    if format == "json" {
        io.out(&format!("{}\n", crate::analyze::to_json(&m.id, &findings)));
    } else {
        io.out(&crate::analyze::to_text(&m.id, &findings));
    }
    let (errors, _, _) = crate::analyze::counts(&findings);
    Ok(if errors > 0 { 1 } else { 0 })
}

/// Exit status of `idem check` when a limit ended the run before a verdict.
const INCONCLUSIVE: u8 = 3;

fn number<T: std::str::FromStr>(v: Option<&String>, name: &str, what: &str) -> Result<T, Error> {
    v.and_then(|s| s.parse().ok()).ok_or_else(|| usage(&format!("{name} needs {what}")))
}

/// `idem check MACHINE.json --scenario S.jsonl [bounds]` or `idem check --replay CE.json`.
fn check(args: &[String], io: &mut dyn Io) -> Result<u8, Error> {
    use crate::check::explore::{self, Options, Property, Verdict};
    use crate::check::{model::Bounds, report, scenario::Scenario};
    let mut path = None;
    let mut scenario_path = None;
    let mut replay_path = None;
    let mut out_path = None;
    let mut format = "text";
    let mut process = "p1".to_string();
    let mut property = Property::Dedup;
    let mut max_states: u64 = 10_000_000;
    let mut timeout = None;
    let mut set: Vec<(&str, &String)> = Vec::new();
    let mut rest = args.iter().skip(1);
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--scenario" => scenario_path = Some(rest.next().ok_or_else(|| usage("--scenario needs a file"))?),
            "--replay" => replay_path = Some(rest.next().ok_or_else(|| usage("--replay needs a file"))?),
            "--out" => out_path = Some(rest.next().ok_or_else(|| usage("--out needs a file"))?),
            "--process" => process = rest.next().filter(|p| !p.is_empty()).ok_or_else(|| usage("--process needs an id"))?.clone(),
            "--format" => format = rest.next().map(String::as_str).ok_or_else(|| usage("--format needs text or json"))?,
            "--property" => {
                property = match rest.next().map(String::as_str) {
                    Some("dedup") => Property::Dedup,
                    Some("confluent") => Property::Confluent,
                    _ => return Err(usage("--property must be dedup or confluent")),
                }
            }
            "--max-states" => max_states = number(rest.next(), "--max-states", "a whole number")?,
            "--timeout" => {
                let s: f64 = number(rest.next(), "--timeout", "seconds")?;
                if !(s > 0.0 && s.is_finite()) {
                    return Err(usage("--timeout must be a positive number of seconds"));
                }
                timeout = Some(s);
            }
            "--reorder" | "--expiries" | "--crashes" | "--effect-faults" | "--hosts" | "--fresh-resends" | "--host-defect" => {
                let v = rest.next().ok_or_else(|| usage(&format!("{a} needs a value")))?;
                set.push((a.as_str(), v));
            }
            p if !p.starts_with("--") && path.is_none() => path = Some(p.to_string()),
            other => return Err(usage(&format!("unexpected argument \"{other}\""))),
        }
    }
    if format != "text" && format != "json" {
        return Err(usage("--format must be text or json"));
    }
    let mut ce_other: Option<String> = None;
    let (m, scenario, opts, actions) = if let Some(ce) = replay_path {
        if path.is_some() || scenario_path.is_some() || !set.is_empty() {
            return Err(usage("--replay takes the counterexample file alone: it holds the machine, scenario and bounds"));
        }
        let v = crate::json::parse(&read(io, ce)?, Code::InvalidJson, ce)?;
        let bad = |what: &str| Error::new(Code::InvalidJson, format!("{ce}: {what} is missing or malformed (not a file written by idem check --out)"));
        let m = Machine::from_value(v["machine"].clone())?;
        let scenario = Scenario::parse(&m, v["scenario"].as_str().ok_or_else(|| bad("scenario"))?)?;
        let bounds = report::bounds_from_json(&v["bounds"]).ok_or_else(|| bad("bounds"))?;
        let property = if v["property"] == "confluent" { Property::Confluent } else { Property::Dedup };
        let process = v["process"].as_str().ok_or_else(|| bad("process"))?.to_string();
        ce_other = v["counterexample"]["otherOrderSettlesIn"].as_str().map(String::from);
        let actions = v["counterexample"]["actions"].as_array().ok_or_else(|| bad("counterexample.actions"))?;
        let actions = actions.iter().map(explore::action_from_json).collect::<Option<Vec<_>>>().ok_or_else(|| bad("an action"))?;
        (m, scenario, Options { bounds, property, max_states, timeout_s: timeout, process, progress_every: explore::PROGRESS_EVERY }, Some(actions))
    } else {
        let path = path.ok_or_else(|| usage("check needs a machine file"))?;
        let m = Machine::from_json(&read(io, &path)?)?;
        let scenario_path = scenario_path.ok_or_else(|| usage("--scenario is required"))?;
        let scenario = Scenario::parse(&m, &read(io, scenario_path)?)?;
        let mut bounds = Bounds::defaults(scenario.events().count());
        for (name, v) in set {
            let count = || number::<u8>(Some(v), name, "a whole number from 0 to 255");
            match name {
                "--reorder" if v == "all" => bounds.reorder = None,
                "--reorder" => bounds.reorder = Some(number::<usize>(Some(v), name, "all or a window of 1 or more").and_then(|w| if w == 0 { Err(usage("--reorder needs all or a window of 1 or more")) } else { Ok(w) })?),
                "--expiries" => bounds.expiries = count()?,
                "--crashes" => bounds.crashes = count()?,
                "--effect-faults" => bounds.effect_faults = count()?,
                "--hosts" => bounds.hosts = count()?.clamp(1, 8),
                "--fresh-resends" => bounds.fresh_resends = count()?,
                _ => {
                    if !report::plant(&mut bounds.faults, v) {
                        return Err(usage("--host-defect must be no-cas, effects-before-commit, ignore-claim or no-keys"));
                    }
                }
            }
        }
        (m, scenario, Options { bounds, property, max_states, timeout_s: timeout, process, progress_every: explore::PROGRESS_EVERY }, None)
    };
    // The time limit and the progress lines both go through `io` (the checker reads no clock);
    // `explore::check` calls the two one at a time, never one inside the other.
    let io = RefCell::new(io);
    let t0 = io.borrow_mut().now_ms();
    let mut elapsed = || (io.borrow_mut().now_ms() - t0) / 1000.0;
    let r = match &actions {
        Some(actions) => {
            let cx = explore::replay(&m, &scenario, &opts, actions, ce_other.clone());
            let verdict = match cx {
                Some(cx) => Verdict::Violated(Box::new(cx)),
                None => Verdict::Proved,
            };
            let progress = explore::Progress { states: actions.len() as u64, distinct: actions.len() as u64, depth: actions.len() as u32, seconds: elapsed() };
            explore::Report { verdict, progress, reduces: 0 }
        }
        None => explore::check(&m, &scenario, &opts, &mut elapsed, &mut |p| {
            let rate = if p.seconds > 0.0 { (p.distinct as f64 / p.seconds) as u64 } else { 0 };
            io.borrow_mut().err(&format!(
                "checking: {} states ({} steps), depth {}, {} states/s, {:.1} s\n",
                report::thousands(p.distinct),
                report::thousands(p.states),
                p.depth,
                report::thousands(rate),
                p.seconds
            ));
        }),
    };
    let io = io.into_inner();
    let mut v = report::to_json(&r, &opts);
    let replay = match (&r.verdict, out_path) {
        (Verdict::Violated(_), Some(file)) => {
            let mut file_json = v.clone();
            file_json["machine"] = crate::json::parse(&m.definition_json(), Code::InvalidJson, "definition")?;
            file_json["scenario"] = json!(scenario_text(&scenario));
            file_json["process"] = json!(opts.process);
            io.write_file(file, &format!("{file_json}\n")).map_err(|e| Error::new(Code::Io, format!("cannot write {file}: {e}")))?;
            format!("idem check --replay {file}")
        }
        _ => String::new(),
    };
    if actions.is_some() && matches!(r.verdict, Verdict::Proved) {
        // The trace no longer breaks the property (the machine or the host was fixed).
        v["verdict"] = json!("not reproduced");
    }
    if format == "json" {
        io.out(&format!("{v}\n"));
    } else if actions.is_some() && matches!(r.verdict, Verdict::Proved) {
        io.out(&format!("not reproduced: the {} recorded steps no longer break the property\n", r.progress.states));
    } else {
        io.out(&report::to_text(&r, &opts, &replay));
    }
    Ok(match r.verdict {
        Verdict::Proved => 0,
        Verdict::Violated(_) => 1,
        Verdict::Inconclusive(_) => INCONCLUSIVE,
    })
}

/// A scenario written back as the JSON Lines it was read from.
fn scenario_text(s: &crate::check::scenario::Scenario) -> String {
    use crate::check::scenario::Line;
    s.lines
        .iter()
        .map(|l| match l {
            Line::Event(e) => e.to_string(),
            Line::Advance(ms) => json!({ "advance": ms }).to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}
