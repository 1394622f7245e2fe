//! `idem`: drive the engine from a shell.
//!
//! ```text
//! idem reduce --machine M.json [--snapshot S.json] --event E.json --now MS --process ID
//! idem run    --machine M.json --events EVENTS.jsonl --process ID
//! idem inspect --machine M.json --snapshot S.json
//! idem lint MACHINE.json [--format text|json] [--xstate]
//! ```
//! `idem --help` (`-h`, `help`) prints the usage and `idem --version` (`-V`) the version, as
//! plain text with exit status 0. Errors go to stderr as JSON `{ "code", "message" }` with a
//! non-zero exit status (2 for a usage error).

use idem::{Code, Error, Machine};
use serde_json::{json, Value};
use std::io::Write;
use std::process::ExitCode;

const HELP: &str = "idem: statecharts that apply each event once in effect, however often it arrives

usage:
  idem reduce  --machine M.json [--snapshot S.txt] --event E.json --now MS --process ID
  idem run     --machine M.json --events EVENTS.jsonl --process ID
  idem inspect --machine M.json --snapshot S.txt
  idem lint    MACHINE.json [--format text|json] [--xstate]
  idem --help | --version

commands:
  reduce   apply one event to a snapshot (none: a new process) at time MS; prints the outcome
           as JSON with the new snapshot; exit 1 when the event is rejected
  run      apply the events of a JSON Lines file in order (a line's \"now\" sets the clock);
           prints one outcome per line, then the final snapshot inspected
  inspect  print a snapshot as readable JSON (state, context, ledger, outbox, timers)
  lint     report the machine's duplicate-delivery hazards (--xstate: the JSON of an XState
           config); exit 1 when one is an error, for CI

The process id (--process) names the process the events belong to: its effects' idempotency
keys start with it, so two processes that reuse an event id never share one.

Errors go to stderr as JSON { \"code\", \"message\" }; a usage error exits 2.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}", e.to_json());
            ExitCode::from(2)
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

fn read(path: &str) -> Result<String, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::new(Code::Io, format!("cannot read {path}: {e}")))?;
    String::from_utf8(bytes).map_err(|e| Error::new(Code::InvalidJson, format!("{path} is not valid utf-8 (byte {})", e.utf8_error().valid_up_to())))
}

fn machine(args: &[String]) -> Result<Machine, Error> {
    let path = flag(args, "--machine").ok_or_else(|| usage("--machine is required"))?;
    Machine::from_json(&read(path)?)
}

fn run(args: &[String]) -> Result<ExitCode, Error> {
    let Some(cmd) = args.first() else { return Err(usage("missing command")) };
    let out = std::io::stdout();
    let mut out = out.lock();
    // Help wins wherever it is asked for (`idem lint --help`), as in other tools.
    if args.iter().any(|a| a == "--help" || a == "-h") || cmd == "help" {
        write!(out, "{HELP}").ok();
        return Ok(ExitCode::SUCCESS);
    }
    match cmd.as_str() {
        "version" | "--version" | "-V" => {
            writeln!(out, "idem {}", idem::version()).ok();
            Ok(ExitCode::SUCCESS)
        }
        "reduce" => {
            let process = process(args)?;
            let m = machine(args)?;
            let snapshot = flag(args, "--snapshot").map(read).transpose()?;
            let event_path = flag(args, "--event").ok_or_else(|| usage("--event is required"))?;
            let now: u64 = flag(args, "--now")
                .ok_or_else(|| usage("--now is required"))?
                .parse()
                .map_err(|_| usage("--now must be whole milliseconds"))?;
            let o = m.reduce_text(process, snapshot.as_deref().map(str::trim_end), &read(event_path)?, now);
            let mut v = o.to_json(false);
            if let Some(s) = &o.snapshot {
                v["snapshot"] = Value::String(s.clone());
            }
            writeln!(out, "{v}").ok();
            Ok(if o.error.is_some() && o.status.as_str() == "rejected" { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        "run" => {
            let process = process(args)?;
            let m = machine(args)?;
            let events_path = flag(args, "--events").ok_or_else(|| usage("--events is required"))?;
            let text = read(events_path)?;
            let mut snapshot: Option<String> = None;
            let mut now = 0u64;
            for (i, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let mut v = idem::json::parse(line, Code::InvalidEvent, &format!("event on line {}", i + 1))?;
                now = match v.as_object_mut().and_then(|o| o.remove("now")) {
                    Some(n) => n.as_u64().ok_or_else(|| Error::new(Code::InvalidEvent, format!("now on line {} must be whole ms", i + 1)))?,
                    None => now + 1,
                };
                let o = m.reduce_in(process, snapshot.as_deref(), &v, now);
                writeln!(out, "{}", o.to_json(false)).ok();
                if let Some(s) = o.snapshot {
                    snapshot = Some(s);
                }
            }
            let last = match &snapshot {
                Some(s) => idem::inspect(&m, s)?,
                None => Value::Null,
            };
            writeln!(out, "{}", json!({ "snapshot": last })).ok();
            Ok(ExitCode::SUCCESS)
        }
        "inspect" => {
            let m = machine(args)?;
            let s = read(flag(args, "--snapshot").ok_or_else(|| usage("--snapshot is required"))?)?;
            writeln!(out, "{}", idem::inspect(&m, s.trim_end())?).ok();
            Ok(ExitCode::SUCCESS)
        }
        "lint" => lint(args, &mut out),
        other => Err(usage(&format!("unknown command \"{other}\""))),
    }
}

/// `idem lint MACHINE.json [--format text|json] [--xstate]`: the duplicate-delivery
/// hazard analysis; exit status 1 when there is an error-severity finding, so CI fails.
fn lint(args: &[String], out: &mut impl Write) -> Result<ExitCode, Error> {
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
    let text = read(path.ok_or_else(|| usage("lint needs a machine file"))?)?;
    let (m, mut findings) = if xstate {
        let imported = idem::xstate::import_json(&text)?;
        (Machine::from_value(imported.definition)?, imported.diagnostics)
    } else {
        (Machine::from_json(&text)?, Vec::new())
    };
    findings.extend(idem::analyze::analyze(&m));
    idem::analyze::sort(&mut findings);
    if format == "json" {
        writeln!(out, "{}", idem::analyze::to_json(&m.id, &findings)).ok();
    } else {
        write!(out, "{}", idem::analyze::to_text(&m.id, &findings)).ok();
    }
    let (errors, _, _) = idem::analyze::counts(&findings);
    Ok(if errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
