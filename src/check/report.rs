//! A verdict as people read it (`--format text`) and as tools read it (JSON:
//! the CLI's `--format json`, `--out`, and the package's `machine.check`).

use super::explore::{action_json, collision_estimate, Options, Report, Verdict};
use super::model::Bounds;
use super::sim::world::Faults;
use serde_json::{json, Value};

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn fault_names(f: Faults) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (on, name) in [
        (f.no_compare_and_set, "no-cas"),
        (f.effects_before_commit, "effects-before-commit"),
        (f.ignore_claim, "ignore-claim"),
        (f.gateway_without_keys, "no-keys"),
    ] {
        if on {
            out.push(name);
        }
    }
    out
}

/// Set the planted host defect `name` (the simulator's `SIM_FAULT` names).
pub fn plant(f: &mut Faults, name: &str) -> bool {
    match name {
        "no-cas" => f.no_compare_and_set = true,
        "effects-before-commit" => f.effects_before_commit = true,
        "ignore-claim" => f.ignore_claim = true,
        "no-keys" => f.gateway_without_keys = true,
        _ => return false,
    }
    true
}

pub fn bounds_json(b: &Bounds) -> Value {
    json!({
        "deliveries": "unbounded",
        "reorder": b.reorder.map_or(json!("all"), |w| json!(w)),
        "expiries": b.expiries,
        "crashes": b.crashes,
        "effectFaults": b.effect_faults,
        "hosts": b.hosts,
        "freshResends": b.fresh_resends,
        "hostDefects": fault_names(b.faults),
    })
}

pub fn bounds_from_json(v: &Value) -> Option<Bounds> {
    let n = |k: &str| v[k].as_u64().and_then(|n| u8::try_from(n).ok());
    let mut faults = Faults::default();
    for name in v["hostDefects"].as_array()? {
        if !plant(&mut faults, name.as_str()?) {
            return None;
        }
    }
    Some(Bounds {
        reorder: match &v["reorder"] {
            Value::String(s) if s == "all" => None,
            other => Some(other.as_u64()? as usize),
        },
        expiries: n("expiries")?,
        crashes: n("crashes")?,
        effect_faults: n("effectFaults")?,
        hosts: n("hosts")?,
        fresh_resends: n("freshResends")?,
        faults,
    })
}

fn bounds_text(b: &Bounds) -> String {
    let mut s = format!(
        "deliveries unbounded, reorder {}, expiries {}, crashes {}, effect faults {}, hosts {}, fresh re-sends {}",
        b.reorder.map_or("all".to_string(), |w| format!("window {w}")),
        b.expiries,
        b.crashes,
        b.effect_faults,
        b.hosts,
        b.fresh_resends
    );
    let planted = fault_names(b.faults);
    if !planted.is_empty() {
        s.push_str(&format!(", planted host defects {}", planted.join(",")));
    }
    s
}

/// The verdict object (the same in the CLI's JSON and in JavaScript).
pub fn to_json(r: &Report, opts: &Options) -> Value {
    let p = &r.progress;
    let mut v = json!({
        "verdict": match r.verdict { Verdict::Proved => "proved", Verdict::Violated(_) => "violated", Verdict::Inconclusive(_) => "inconclusive" },
        "property": opts.property.as_str(),
        "bounds": bounds_json(&opts.bounds),
        "states": p.distinct,
        "transitions": p.states,
        "depth": p.depth,
        "seconds": (p.seconds * 1000.0).round() / 1000.0,
        "collisionProbability": collision_estimate(p.distinct),
    });
    match &r.verdict {
        Verdict::Proved => {}
        Verdict::Inconclusive(reason) => v["reason"] = json!(reason),
        Verdict::Violated(cx) => {
            v["counterexample"] = json!({
                "violation": cx.violation,
                "steps": cx.steps,
                "expected": cx.expected,
                "actual": cx.actual,
                "actions": cx.actions.iter().map(|&a| action_json(a)).collect::<Vec<_>>(),
                "run": cx.run,
            });
            if let Some(other) = &cx.other_order {
                v["counterexample"]["otherOrderSettlesIn"] = json!(other);
            }
        }
    }
    v
}

/// The final line: `proved: 2,451 states, depth 9, ... in 0.08 s`.
pub fn summary(r: &Report, opts: &Options) -> String {
    let p = &r.progress;
    let word = match &r.verdict {
        Verdict::Proved => "proved".to_string(),
        Verdict::Violated(_) => "violated".to_string(),
        Verdict::Inconclusive(why) => format!("inconclusive ({why})"),
    };
    let rate = if p.seconds > 0.0 { format!(", {} states/s", thousands((p.distinct as f64 / p.seconds) as u64)) } else { String::new() };
    format!(
        "{word}: {} states, depth {}, {} in {:.2} s{rate}; property {}, fingerprint collision probability < {:.0e}",
        thousands(p.distinct),
        p.depth,
        bounds_text(&opts.bounds),
        p.seconds,
        opts.property.as_str(),
        collision_estimate(p.distinct).max(1e-30)
    )
}

/// The whole text report; `replay` is the command that runs the counterexample again.
pub fn to_text(r: &Report, opts: &Options, replay: &str) -> String {
    let mut out = String::new();
    if let Verdict::Violated(cx) = &r.verdict {
        out.push_str(&format!("violation: {}\n\n", cx.violation));
        for s in &cx.steps {
            out.push_str(&format!("{:>3}. t={} {}", s["step"].as_u64().unwrap_or(0), s["now"], s["action"].as_str().unwrap_or("")));
            if let Some(status) = s["status"].as_str() {
                out.push_str(&format!(" -> {status}, state {}, response {}", s["state"], s["response"]));
            }
            out.push('\n');
        }
        if let Some(other) = &cx.other_order {
            out.push_str(&format!("\nanother order settles in {other}\n"));
        }
        out.push_str(&format!(
            "\nexpected (the same schedule with repeats removed):\n  value {}\n  context {}\n  effects emitted {}\n",
            cx.expected["value"], cx.expected["context"], cx.expected["effects"]
        ));
        out.push_str(&format!(
            "actual:\n  value {}\n  context {}\n  effects performed {}\n\n",
            cx.actual["value"], cx.actual["context"], cx.actual["effectsPerformed"]
        ));
        out.push_str("the events whose outcome stood, as `idem run` lines:\n");
        for line in &cx.run {
            out.push_str(&format!("  {line}\n"));
        }
        if !replay.is_empty() {
            out.push_str(&format!("replay: {replay}\n"));
        }
        out.push('\n');
    }
    out.push_str(&summary(r, opts));
    out.push('\n');
    out
}
