//! `checkMachine`: `idem check` for the package's `machine.check(scenario, options)`
//! (pkg/src/analysis.js), in the full module only. The verdict is the CLI's JSON
//! object; the clock for the time limit and the progress reports is the host's
//! (`Date.now()`), read here at the boundary, never by the checker.

use super::{js_error, json_text, to_js};
use crate::check::explore::{self, Options, Property};
use crate::check::model::Bounds;
use crate::check::{report, scenario::Scenario};
use crate::error::{Code, Error};
use crate::Machine;
use serde_json::Value;
use wasm_bindgen::prelude::*;

/// Steps between two `onProgress` calls (and two looks at the time limit).
const PROGRESS_EVERY: u64 = 5_000;

fn bad(what: &str) -> JsValue {
    js_error(&Error::new(Code::Usage, format!("check options: {what}")))
}

/// Run the checker on `definition` (a definition object) and `scenario` (JSON
/// Lines: events and `{"advance": ms}` lines) with `options` (`reorder`,
/// `expiries`, `crashes`, `effectFaults`, `hosts`, `freshResends`, `property`,
/// `maxStates`, `timeout` in seconds, `process`); `on_progress` receives
/// `{states, transitions, depth, seconds}` every 5,000 steps (often enough
/// for a page to show a check of a few thousand states moving).
///
/// ```js
/// const verdict = machine.check(scenario, { expiries: 1, onProgress: (p) => console.log(p.states) });
/// if (verdict.verdict === "violated") console.log(verdict.counterexample.steps);
/// ```
#[wasm_bindgen(js_name = checkMachine)]
pub fn check_machine(definition: JsValue, scenario: &str, options: JsValue, on_progress: Option<js_sys::Function>) -> Result<JsValue, JsValue> {
    let m = Machine::from_json(&json_text(&definition, "definition")?).map_err(|e| js_error(&e))?;
    let s = Scenario::parse(&m, scenario).map_err(|e| js_error(&e))?;
    let o: Value = if options.is_undefined() || options.is_null() {
        Value::Null
    } else {
        serde_wasm_bindgen::from_value(options).map_err(|_| bad("must be an object"))?
    };
    let mut bounds = Bounds::defaults(s.events().count());
    let count = |name: &str, v: &Value| v.as_u64().and_then(|n| u8::try_from(n).ok()).ok_or_else(|| bad(&format!("{name} must be a whole number from 0 to 255, got {}", crate::json::to_text(v))));
    let mut opts = Options { bounds: bounds.clone(), property: Property::Dedup, max_states: 10_000_000, timeout_s: None, process: "p1".into(), progress_every: PROGRESS_EVERY };
    if let Some(map) = o.as_object() {
        for (k, v) in map {
            match k.as_str() {
                "reorder" => {
                    bounds.reorder = match v {
                        Value::String(s) if s == "all" => None,
                        _ => Some(v.as_u64().filter(|&w| w >= 1).ok_or_else(|| bad(&format!("reorder must be \"all\" or a window of 1 or more, got {}", crate::json::to_text(v))))? as usize),
                    }
                }
                "expiries" => bounds.expiries = count(k, v)?,
                "crashes" => bounds.crashes = count(k, v)?,
                "effectFaults" => bounds.effect_faults = count(k, v)?,
                "hosts" => bounds.hosts = count(k, v)?.clamp(1, 8),
                "freshResends" => bounds.fresh_resends = count(k, v)?,
                "property" => {
                    opts.property = match v.as_str() {
                        Some("dedup") => Property::Dedup,
                        Some("confluent") => Property::Confluent,
                        _ => return Err(bad(&format!("property must be \"dedup\" or \"confluent\", got {}", crate::json::to_text(v)))),
                    }
                }
                "maxStates" => opts.max_states = v.as_u64().ok_or_else(|| bad(&format!("maxStates must be a whole number, got {}", crate::json::to_text(v))))?,
                "timeout" => opts.timeout_s = Some(v.as_f64().filter(|t| *t > 0.0).ok_or_else(|| bad(&format!("timeout must be a positive number of seconds, got {}", crate::json::to_text(v))))?),
                "process" => opts.process = v.as_str().filter(|p| !p.is_empty()).ok_or_else(|| bad("process must be a non-empty string"))?.to_string(),
                "onProgress" => {}
                other => return Err(bad(&format!("unknown option \"{other}\""))),
            }
        }
    }
    opts.bounds = bounds;
    let t0 = js_sys::Date::now();
    let mut elapsed = || (js_sys::Date::now() - t0) / 1000.0;
    let mut progress = |p: &explore::Progress| {
        if let Some(f) = &on_progress {
            let v = serde_json::json!({ "states": p.distinct, "transitions": p.states, "depth": p.depth, "seconds": p.seconds });
            let _ = f.call1(&JsValue::NULL, &to_js(&v));
        }
    };
    let r = explore::check(&m, &s, &opts, &mut elapsed, &mut progress);
    Ok(to_js(&report::to_json(&r, &opts)))
}
