//! Hazard analysis: find the places where a machine's free protection against
//! duplicate delivery disappears, before production does.
//!
//! # What the ledger already covers, and what it does not
//!
//! `reduce` remembers every applied event id for the retention window of its
//! type (`retention.defaultMs`, `retention.perType`, at most
//! `retention.maxEntries` ids). A repeat inside that window is a `duplicate`
//! whatever the machine looks like. The hazards reported here are about what
//! happens *outside* that protection:
//!
//! - **a late duplicate**: the same event, same id, delivered after its ledger
//!   entry was forgotten (a queue that redelivers three weeks later, a replayed
//!   backup, an outbox that retries after the window);
//! - **a re-sent copy with a fresh id**: an originator that makes a new id on
//!   every retry (a form posted twice, a client library without stable ids).
//!
//! Past the ledger only the graph protects: an event that finds no transition
//! is ignored. The analysis looks for the cases where it does find one.
//!
//! # How it works, and why it is sound on what it claims
//!
//! The analysis is a bounded search over real runs. It drives the machine with
//! [`Machine::reduce`] itself — every event type with a few synthesised
//! payloads (values taken from the constants and context fields the guards
//! compare them with), firing timers and completing effects — and, after each
//! applied event, delivers that same event again: late (same id, just past its
//! retention), with a fresh id, and late again after a cycle of other events.
//! When a repeat is applied *and* changes the context, emits effects or moves
//! the process, the finding is reported with the exact event sequence that
//! shows it (its [`Witness`]); replaying that sequence through `reduce` shows
//! the change happening a second time. No hazard is reported without one.
//!
//! A node of the search is a configuration: one active state per region of
//! every active parallel state, and the history each history state recorded.
//! Raised events and done events are never sent from outside: `reduce`
//! follows them inside the macrostep of the event that raised them.
//!
//! Static reading of the definition adds what a search cannot prove alone:
//! which transitions are protected by topology (their event is never accepted
//! again — info), which re-acceptances are guarded by an identified set (info),
//! and which accumulating assigns are latent (they accumulate, but no repeat
//! reaches them — info). The search is bounded ([`Bounds`]): a hazard that
//! needs a longer prefix than the bound is missed, never invented.
//!
//! # Codes
//!
//! | code | severity | what |
//! |---|---|---|
//! | `reaccept` | error (warning when the repeat only moves the state) | the target (or an ancestor, or a state reached through `always`) accepts the event again |
//! | `reenter_reruns` | error | a `reenter` transition re-runs exit/entry actions on a repeat |
//! | `cycle_reaccept` | warning | after a cycle the event is legal again: a duplicate older than its retention is applied |
//! | `accumulating_assign` | error / warning (info when latent) | `x = x + …` or a list append with no identified-set guard, doubled by a repeat |
//! | `unverified_effect` | error / warning (info when no repeat emits it) | an `idempotent: false` effect emitted again: the provider cannot recognise it and verification only covers one emission |
//! | `unstable_effect_key` | error / warning | a custom effect key that changes between deliveries of the same event |
//! | `topology_protected` | info | the event is never accepted again after this transition |
//! | `identity_guarded` | info | the event is accepted again, but only through transitions guarded by an identified set |
//! | `reaccept_unconfirmed` | info | the event is accepted again, yet no repeat within the bounds changes anything |
//! | `unrepresentable` | warning / info | (XState import) something that cannot be expressed as data |
//! | `unvalidated_payload` | warning | an assign does arithmetic on a payload field no schema declares numeric and required, or a raise of the event does not give (src/analysis/unvalidated.rs) |
//! | `opaque_implementation` | info | a guard or action given as a function, which the analysis cannot read (src/analysis/analyze/opaque.rs) |

mod exprs;
mod findings;
mod graph;
mod opaque;
mod payloads;
mod report;
mod search;

pub use findings::{counts, sort, to_json, to_text, Change, Finding, Mode, Severity, ShownEffect, Shows, Step, Witness, CODES};

use crate::machine::Machine;
use search::Search;

/// Bounds of the search.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Longest prefix of events before the original event.
    pub depth: usize,
    /// Most distinct configurations visited by the prefix search.
    pub nodes: usize,
    /// Longest cycle (events between the original and its late duplicate).
    pub cycle_depth: usize,
    /// Most configurations visited looking for one cycle.
    pub cycle_nodes: usize,
    /// Hard cap on `reduce` calls for one analysis.
    pub reduces: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds { depth: 5, nodes: 300, cycle_depth: 4, cycle_nodes: 80, reduces: 60_000 }
    }
}

/// Analyze a machine with the default bounds. Findings are sorted: errors
/// first, then warnings, then information; each group by state and code.
///
/// ```
/// use idem::{analyze, Machine};
/// let m = Machine::from_json(r#"{ "id": "tab", "initial": "open", "context": { "total": 0 },
///   "states": { "open": { "on": { "ADD": { "actions": [
///     { "assign": { "total": { "+": [{ "var": "context.total" }, { "var": "event.payload.amount" }] } } } ] } } } } }"#).unwrap();
/// let findings = analyze::analyze(&m);
/// assert!(findings.iter().any(|f| f.code == "accumulating_assign" && f.severity == analyze::Severity::Error));
/// ```
pub fn analyze(m: &Machine) -> Vec<Finding> {
    analyze_with(m, Bounds::default())
}

/// Analyze with explicit bounds.
pub fn analyze_with(m: &Machine, bounds: Bounds) -> Vec<Finding> {
    let mut s = Search::new(m, bounds);
    s.run();
    let mut findings = s.findings();
    findings.extend(crate::unvalidated::findings(m));
    findings.extend(opaque::findings(m));
    sort(&mut findings);
    findings
}
