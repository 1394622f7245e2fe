//! What the analysis reports: the findings, the witnesses that show them and
//! what a repeat changed, and their text for a terminal (`to_text`) or a
//! program (`to_json`).

use serde::Serialize;
use serde_json::{json, Value};

/// Every code the analysis (and the XState import) can report, with its
/// highest severity and a one-line description. The strings are a public contract.
pub const CODES: &[(&str, Severity, &str)] = &[
    ("reaccept", Severity::Error, "the state reached accepts the same event again"),
    ("reenter_reruns", Severity::Error, "a reenter transition re-runs exit/entry actions on a repeated event"),
    ("cycle_reaccept", Severity::Warning, "after a cycle the event is legal again; a duplicate older than its retention is applied"),
    ("accumulating_assign", Severity::Error, "an assign accumulates from its own previous value without an identified-set guard"),
    ("unverified_effect", Severity::Error, "a non-idempotent effect can be emitted a second time"),
    ("unstable_effect_key", Severity::Error, "an effect key that changes between deliveries of the same event"),
    ("topology_protected", Severity::Info, "the event is never accepted again after this transition"),
    ("identity_guarded", Severity::Info, "the event is accepted again only through identified-set guards"),
    ("reaccept_unconfirmed", Severity::Info, "the event is accepted again but no repeat within the bounds changes anything"),
    ("unrepresentable", Severity::Warning, "part of an imported XState machine that cannot be expressed as data"),
    ("unvalidated_payload", Severity::Warning, "an assign does arithmetic on a payload field no schema declares numeric and required, or a raise of the event does not give"),
    ("opaque_implementation", Severity::Info, "a guard or action given as a function, which the analysis cannot read"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One finding: a hazard (error/warning) with the event sequence that shows it,
/// or a piece of information about what is safe and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub code: String,
    pub severity: Severity,
    /// Dotted path of the state concerned (`pending`, `active.paid`); empty for the root.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// JSON paths of the transitions involved, in the order they are taken.
    pub transitions: Vec<String>,
    /// JSON path of the action concerned, for findings about one action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    pub message: String,
    pub fix: String,
    /// The retention window (ms) of the event's type, where it is what guards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention_ms: Option<u64>,
    /// For `cycle_reaccept`: the steps of the cycle, `state --EVENT--> state`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cycle: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<Witness>,
}

/// How the repeat in a witness arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Same id, delivered after the ledger forgot it (past the retention window).
    LateDuplicate,
    /// Same type and payload under a new id, as an originator without stable ids sends it.
    FreshId,
}

/// A concrete event sequence: replaying `steps` through `reduce` (each at its
/// `now`) applies every step, and the last one (the repeat of step `original`)
/// changes what `shows` lists a second time.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Witness {
    pub mode: Mode,
    pub steps: Vec<Step>,
    pub original: usize,
    pub duplicate: usize,
    pub shows: Shows,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// `{ id, type, payload }`, exactly as it is reduced.
    pub event: Value,
    pub now: u64,
    /// `prefix`, `original`, `cycle`, `effect`, `timer` or `duplicate`.
    pub role: &'static str,
}

/// What the repeat changed (relative to the snapshot it was applied to).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Shows {
    /// Context fields the repeat changed, with their values before and after it.
    pub changes: Vec<Change>,
    /// Effects the repeat emitted (type and key).
    pub effects: Vec<ShownEffect>,
    /// The state value after the repeat, when the repeat moved the process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub field: String,
    pub before: Value,
    pub after: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShownEffect {
    #[serde(rename = "type")]
    pub effect_type: String,
    pub key: String,
    pub idempotent: bool,
}

impl Shows {
    pub(super) fn is_doubling(&self) -> bool {
        !self.changes.is_empty() || !self.effects.is_empty()
    }
    pub(super) fn weight(&self) -> usize {
        self.changes.len() + 2 * self.effects.len()
    }
    pub(super) fn summary(&self) -> String {
        let mut parts = Vec::new();
        for c in &self.changes {
            parts.push(format!("context.{} changes again ({} -> {})", c.field, short(&c.before), short(&c.after)));
        }
        for e in &self.effects {
            parts.push(format!("effect `{}` is emitted again (key \"{}\")", e.effect_type, e.key));
        }
        if let Some(v) = &self.moved_to {
            parts.push(format!("the process moves to {}", short(v)));
        }
        parts.join("; ")
    }
}

/// Sort findings: errors first, then warnings, then information; each group
/// by state, code and path.
pub fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        (a.severity, &a.state, &a.code, &a.transitions, &a.site).cmp(&(b.severity, &b.state, &b.code, &b.transitions, &b.site))
    });
}

/// Counts by severity: `(errors, warnings, info)`.
pub fn counts(findings: &[Finding]) -> (usize, usize, usize) {
    let n = |s| findings.iter().filter(|f| f.severity == s).count();
    (n(Severity::Error), n(Severity::Warning), n(Severity::Info))
}

/// The findings as one JSON document: `{ machine, findings, summary }`.
pub fn to_json(machine_id: &str, findings: &[Finding]) -> Value {
    let (e, w, i) = counts(findings);
    json!({
        "machine": machine_id,
        "findings": findings,
        "summary": { "errors": e, "warnings": w, "info": i },
    })
}

/// The findings as text for a terminal or a CI log.
pub fn to_text(machine_id: &str, findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let state = if f.state.is_empty() { "(machine)" } else { f.state.as_str() };
        let event = f.event.as_deref().map(|e| format!(" on {e}")).unwrap_or_default();
        out.push_str(&format!("{}[{}] {}{}: {}\n", f.severity.as_str(), f.code, state, event, f.message));
        for t in &f.transitions {
            out.push_str(&format!("  --> {t}\n"));
        }
        if let Some(site) = &f.site {
            out.push_str(&format!("  at  {site}\n"));
        }
        for c in &f.cycle {
            out.push_str(&format!("  cycle: {c}\n"));
        }
        if let Some(w) = &f.witness {
            let mode = match w.mode {
                Mode::LateDuplicate => "late duplicate",
                Mode::FreshId => "re-sent with a fresh id",
            };
            out.push_str(&format!("  witness ({mode}):\n"));
            for (i, s) in w.steps.iter().enumerate() {
                let e = &s.event;
                out.push_str(&format!(
                    "    {:>2}. now={} {:<9} {} id={} {}\n",
                    i + 1,
                    s.now,
                    s.role,
                    e["type"].as_str().unwrap_or(""),
                    e["id"].as_str().unwrap_or(""),
                    e["payload"]
                ));
            }
            out.push_str(&format!("    shows: {}\n", w.shows.summary()));
        }
        if !f.fix.is_empty() {
            out.push_str(&format!("  fix: {}\n", f.fix));
        }
        out.push('\n');
    }
    let (e, w, i) = counts(findings);
    out.push_str(&format!("{machine_id}: {e} error(s), {w} warning(s), {i} info\n"));
    out
}

pub(super) fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 60 {
        let mut cut = 57;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}...", &s[..cut])
    } else {
        s
    }
}
