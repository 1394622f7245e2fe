//! From candidates to findings: the witness each finding keeps, the action
//! sites a repeat ran, the information findings for the transitions no
//! repeat showed hazardous, and the message and fix of each.

use super::exprs::{identity_guard, reads};
use super::findings::{short, Finding, Mode, Severity};
use super::graph::{accepting, closure, is_external, landing, sites, AccSite, Owner};
use super::search::{Candidate, RepeatKind, Search};
use crate::machine::{Kind, Machine, StateIdx, Transition};
use std::collections::{BTreeMap, BTreeSet, HashSet};

impl<'m> Search<'m> {
    pub(super) fn findings(&self) -> Vec<Finding> {
        let m = self.m;
        let mut out = Vec::new();
        let mut hazard_t1: HashSet<Option<String>> = HashSet::new();

        // Transition findings: one per (kind, first transition, repeat transition),
        // keeping the witness that shows the most.
        let mut best: BTreeMap<(u8, Option<String>, String), &Candidate> = BTreeMap::new();
        for c in &self.candidates {
            let k = (if c.kind == RepeatKind::Immediate { 0 } else { 1 }, c.t1.clone(), c.t2.clone());
            let better = match best.get(&k) {
                None => true,
                Some(b) => {
                    let (cw, bw) = (c.witness.shows.weight(), b.witness.shows.weight());
                    cw > bw || (cw == bw && c.witness.mode == Mode::LateDuplicate && b.witness.mode != Mode::LateDuplicate)
                }
            };
            if better {
                best.insert(k, c);
            }
        }
        let known: HashSet<(u8, String)> = best.keys().filter(|(_, t1, _)| t1.is_some()).map(|(k, _, t2)| (*k, t2.clone())).collect();
        best.retain(|(k, t1, t2), _| t1.is_some() || !known.contains(&(*k, t2.clone())));
        for c in best.values() {
            hazard_t1.insert(c.t1.clone());
            out.push(self.transition_finding(c));
        }

        // Action findings. An accumulating field doubled by a repeat is reported
        // once per repeat, at the sites that repeat ran; sites no repeat reaches
        // are reported once per field as information.
        let (acc, eff) = sites(m);
        let mut fields: Vec<&str> = acc.iter().map(|s| s.field.as_str()).collect();
        fields.sort();
        fields.dedup();
        for field in fields {
            let here: Vec<&AccSite> = acc.iter().filter(|s| s.field == field).collect();
            let mut covered: Vec<&str> = Vec::new();
            for c in best.values() {
                if !c.witness.shows.changes.iter().any(|ch| ch.field == field) {
                    continue;
                }
                // In the order the repeat ran them; unguarded sites first.
                let mut ran: Vec<&AccSite> = c.footprint.iter().flat_map(|o| here.iter().copied().filter(move |s| &s.owner == o)).collect();
                ran.sort_by_key(|s| s.guarded_by.is_some());
                let Some(first) = ran.first() else { continue };
                covered.extend(ran.iter().map(|s| s.path.as_str()));
                let also: Vec<&str> = ran[1..].iter().map(|s| s.path.as_str()).collect();
                out.push(Finding {
                    code: "accumulating_assign".into(),
                    severity: kind_severity(c.kind),
                    state: m.states[first.state].path.clone(),
                    event: Some(c.event.clone()),
                    transitions: chain(&c.t1, &c.t2),
                    site: Some(first.path.clone()),
                    message: format!(
                        "context.{field} is computed from its own previous value with no guard checking an identified set: a counter \
                         cannot tell whether it already counted this event{also}. {how}, and {shows}",
                        also = if also.is_empty() { String::new() } else { format!(" (the repeat also runs {})", also.join(", ")) },
                        how = mode_text(c, m),
                        shows = c.witness.shows.summary()
                    ),
                    fix: format!(
                        "Record identified facts instead of a running total: keep the ids in a set and guard the transition with \
                         {{\"!\": {{\"in\": [{{\"var\": \"event.payload.<id>\"}}, {{\"var\": \"context.<seen>\"}}]}}}}, appending the id with \
                         `merge` in the same assign; then adding to {field} only happens for a new id."
                    ),
                    retention_ms: Some(m.retention_for(&c.event)),
                    cycle: Vec::new(),
                    witness: Some(c.witness.clone()),
                });
            }
            let latent: Vec<&&AccSite> = here.iter().filter(|s| s.guarded_by.is_none() && !covered.contains(&s.path.as_str())).collect();
            if let Some(first) = latent.first() {
                let paths: Vec<&str> = latent.iter().map(|s| s.path.as_str()).collect();
                out.push(Finding {
                    code: "accumulating_assign".into(),
                    severity: Severity::Info,
                    state: m.states[first.state].path.clone(),
                    event: None,
                    transitions: owner_path(&first.owner).into_iter().collect(),
                    site: Some(first.path.clone()),
                    message: format!(
                        "context.{field} accumulates from its previous value without an identified-set guard ({}); no repeat within the \
                         search bounds reaches {}, so the topology protects it today, but it doubles the day its event becomes legal again",
                        paths.join(", "),
                        if paths.len() > 1 { "them" } else { "it" }
                    ),
                    fix: "Prefer a set of identified facts (ids) over a running total, guarded by `!in`.".into(),
                    retention_ms: None,
                    cycle: Vec::new(),
                    witness: None,
                });
            }
        }
        for s in &eff {
            let emitted =
                |c: &Candidate| c.footprint.contains(&s.owner) && c.witness.shows.effects.iter().any(|e| e.effect_type == s.effect_type);
            if !s.idempotent {
                let hit = self.best_candidate(emitted, &s.owner);
                out.push(match hit {
                    Some(c) => Finding {
                        code: "unverified_effect".into(),
                        severity: kind_severity(c.kind),
                        state: m.states[s.state].path.clone(),
                        event: Some(c.event.clone()),
                        transitions: chain(&c.t1, &c.t2),
                        site: Some(s.path.clone()),
                        message: format!(
                            "effect `{}` is declared idempotent: false, and a repeat emits it again. The provider cannot recognise the \
                             second emission, and the outbox's verify step only settles the unknown outcome of one emission, so the \
                             operation happens twice. {}, and {}",
                            s.effect_type,
                            mode_text(c, m),
                            c.witness.shows.summary()
                        ),
                        fix:
                            "Make the emitting transition refuse its repeat (an identified-set guard, or a target that does not accept the \
                              event), or use a provider operation that honours an idempotency key derived from a business id."
                                .into(),
                        retention_ms: Some(m.retention_for(&c.event)),
                        cycle: Vec::new(),
                        witness: Some(c.witness.clone()),
                    },
                    None => Finding {
                        code: "unverified_effect".into(),
                        severity: Severity::Info,
                        state: m.states[s.state].path.clone(),
                        event: None,
                        transitions: owner_path(&s.owner).into_iter().collect(),
                        site: Some(s.path.clone()),
                        message: format!(
                            "effect `{t}` is not idempotent: after an unknown outcome the outbox asks the host's verifier for `{t}` before \
                             any new attempt, and no repeat within the search bounds emits it twice",
                            t = s.effect_type
                        ),
                        fix: format!(
                            "Register a verifier for `{}` in the host (it answers whether the operation with this key exists).",
                            s.effect_type
                        ),
                        retention_ms: None,
                        cycle: Vec::new(),
                        witness: None,
                    },
                });
            }
            if let Some(k) = &s.custom_key {
                // Same event, a different key: the provider cannot recognise it.
                let unstable = |c: &Candidate| {
                    if !c.footprint.contains(&s.owner) {
                        return false;
                    }
                    let same_event = c.witness.mode == Mode::LateDuplicate || !reads(k, "event.id");
                    same_event
                        && c.witness.shows.effects.iter().any(|e| {
                            e.effect_type == s.effect_type && c.original_effects.iter().any(|(t, key)| *t == s.effect_type && *key != e.key)
                        })
                };
                if let Some(c) = self.best_candidate(unstable, &s.owner) {
                    let keys: Vec<&str> = c.original_effects.iter().filter(|(t, _)| *t == s.effect_type).map(|(_, k)| k.as_str()).collect();
                    let new: Vec<&str> =
                        c.witness.shows.effects.iter().filter(|e| e.effect_type == s.effect_type).map(|e| e.key.as_str()).collect();
                    out.push(Finding {
                        code: "unstable_effect_key".into(),
                        severity: kind_severity(c.kind),
                        state: m.states[s.state].path.clone(),
                        event: Some(c.event.clone()),
                        transitions: chain(&c.t1, &c.t2),
                        site: Some(format!("{}.key", s.path)),
                        message: format!(
                            "the key of effect `{}` ({}) changes between deliveries of the same event: the original emitted key {:?}, the \
                             repeat emits {:?}, so neither the outbox nor the provider can tell it is the same operation. {}",
                            s.effect_type,
                            short(k),
                            keys,
                            new,
                            mode_text(c, m)
                        ),
                        fix: "Derive the key from the event's identity ({\"cat\": [\"<type>-\", {\"var\": \"event.id\"}]}) or from a business id \
                              in the payload, never from context that changes."
                            .into(),
                        retention_ms: Some(m.retention_for(&c.event)),
                        cycle: Vec::new(),
                        witness: Some(c.witness.clone()),
                    });
                }
            }
        }

        // Information: every external transition not already shown hazardous.
        for s in &m.states {
            for (ev, ts) in &s.on {
                if !is_external(m, ev) || self.raised.contains(ev) {
                    continue;
                }
                for t in ts {
                    if hazard_t1.contains(&Some(t.json_path.clone())) {
                        continue;
                    }
                    out.push(self.info_finding(t, ev));
                }
            }
        }
        out
    }

    fn best_candidate(&self, pred: impl Fn(&Candidate) -> bool, owner: &Owner) -> Option<&Candidate> {
        let matching: Vec<&Candidate> = self.candidates.iter().filter(|c| pred(c)).collect();
        let rank = |c: &&Candidate| (c.kind != RepeatKind::Immediate, !c.footprint.contains(owner), c.witness.steps.len());
        matching.into_iter().min_by_key(rank)
    }

    fn transition_finding(&self, c: &Candidate) -> Finding {
        let m = self.m;
        let window = m.retention_for(&c.event);
        let shows = &c.witness.shows;
        let doubling = shows.is_doubling();
        let leaf = &m.states[c.leaf].path;
        let t2 = find_transition(m, &c.t2);
        let t2_source = t2.map(|t| m.states[t.source].path.clone()).unwrap_or_default();
        let t2_target_is_source = t2.is_some_and(|t| t.target().is_some_and(|tg| tg == t.source || m.is_descendant(tg, t.source)));
        let reenter = c.reenter && t2_target_is_source;
        let how = mode_text(c, m);
        let mut transitions = chain(&c.t1, &c.t2);
        if c.kind == RepeatKind::Cycle {
            let code = "cycle_reaccept";
            return Finding {
                code: code.into(),
                severity: Severity::Warning,
                state: leaf.clone(),
                event: Some(c.event.clone()),
                transitions,
                site: None,
                message: format!(
                    "after the cycle {} the process is back in `{leaf}`, where {ev} is legal again. The ledger remembers {ev} ids for {window} ms \
                     (retention{per}), so inside that window a repeat is a duplicate; a duplicate older than that is applied as new. {how}, and {}",
                    c.cycle.join(", "),
                    shows.summary(),
                    ev = c.event,
                    per = if m.retention.per_type.contains_key(&c.event) { format!(".perType.{}", c.event) } else { ".defaultMs".into() },
                ),
                fix: format!(
                    "Make each round identifiable: carry a round (generation) number in the event and guard {ev} with \
                     {{\"==\": [{{\"var\": \"event.payload.round\"}}, {{\"var\": \"context.round\"}}]}}, advancing context.round when the cycle \
                     closes; or keep {ev} ids longer than the longest time a sender may still redeliver (retention.perType.{ev}).",
                    ev = c.event
                ),
                retention_ms: Some(window),
                cycle: c.cycle.clone(),
                witness: Some(c.witness.clone()),
            };
        }
        let code = if reenter { "reenter_reruns" } else { "reaccept" };
        let severity = if doubling { Severity::Error } else { Severity::Warning };
        let t1 = c.t1.as_deref().and_then(|p| find_transition(m, p));
        let orig_target = t1.and_then(|t| t.target());
        let landed = orig_target.map(|tg| m.initial_leaf(tg));
        let history = t1.and_then(|t| t.targets.iter().copied().find(|&h| m.states[h].kind == Kind::History));
        // Another region that the original moved on, while this one stays.
        let regions = t2.and_then(|b| {
            c.originals.iter().filter(|p| **p != c.t2).filter_map(|p| find_transition(m, p)).find_map(|a| {
                let moved = !a.targets.is_empty();
                other_regions(m, a.source, b.source).filter(|_| moved).map(|r| (r, a.json_path.clone()))
            })
        });
        let where_ = if reenter {
            format!("`{}` re-enters `{t2_source}` (reenter: true), re-running its exit and entry actions", c.t2)
        } else if let Some(((moved, stayed), by)) = regions {
            format!(
                "the original {ev} moved region `{}` on (`{by}`), but region `{}` stays in `{leaf}` and accepts {ev} again",
                m.states[moved].path,
                m.states[stayed].path,
                ev = c.event
            )
        } else if c.t1.as_deref() == Some(c.t2.as_str()) && t2.is_some_and(|t| t.target().is_none()) {
            format!("the targetless transition stays in `{leaf}` and accepts {} again", c.event)
        } else if let Some(h) = history {
            format!(
                "`{}` enters history state `{}`, which restores `{leaf}`, and `{leaf}` accepts {} again",
                c.t1.as_deref().unwrap_or(""),
                m.states[h].path,
                c.event
            )
        } else if t2_source != *leaf && !t2_source.is_empty() {
            format!("`{leaf}` accepts {} again through its ancestor `{t2_source}`", c.event)
        } else if t2_source.is_empty() {
            format!("`{leaf}` accepts {} again through a machine-level transition", c.event)
        } else if landed.is_some_and(|l| l != c.leaf) {
            format!(
                "the process lands in `{}` and `always` steps take it to `{leaf}`, which accepts {} again",
                landed.map(|l| m.states[l].path.as_str()).unwrap_or(""),
                c.event
            )
        } else {
            format!("`{leaf}` accepts {} again", c.event)
        };
        let message = if doubling {
            format!("{where_}. {how}, and {}", shows.summary())
        } else {
            format!(
                "{where_}. {how}, and {} (it changes no context and emits nothing, but the repeat still advances the process)",
                shows.summary()
            )
        };
        let fix = if reenter {
            format!(
                "Drop `reenter: true` from `{}` (a transition to the state itself then runs only its own actions), or move the entry \
                 work onto the transition that first enters `{t2_source}`, or guard it with an identified set.",
                c.t2
            )
        } else {
            format!(
                "Make the repeat find nothing to do: remove {ev} from `{leaf}` if it only repeats the first step, or guard `{}` with an \
                 identified set ({{\"!\": {{\"in\": [{{\"var\": \"event.payload.<id>\"}}, {{\"var\": \"context.<seen>\"}}]}}}}) and record \
                 the id in the same assign; keep {ev} ids at least as long as senders may redeliver (retention.perType.{ev}).",
                c.t2,
                ev = c.event
            )
        };
        transitions.dedup();
        Finding {
            code: code.into(),
            severity,
            state: leaf.clone(),
            event: Some(c.event.clone()),
            transitions,
            site: None,
            message,
            fix,
            retention_ms: Some(window),
            cycle: Vec::new(),
            witness: Some(c.witness.clone()),
        }
    }

    fn info_finding(&self, t: &Transition, ev: &str) -> Finding {
        let m = self.m;
        let state = m.states[t.source].path.clone();
        let reached = closure(m, &landing(m, t), false);
        let again: Vec<&Transition> = reached.iter().flat_map(|&l| accepting(m, l, ev)).collect();
        let base = |code: &str, message: String, fix: &str| Finding {
            code: code.into(),
            severity: Severity::Info,
            state: state.clone(),
            event: Some(ev.to_string()),
            transitions: vec![t.json_path.clone()],
            site: None,
            message,
            fix: fix.into(),
            retention_ms: None,
            cycle: Vec::new(),
            witness: None,
        };
        if again.is_empty() {
            let names: Vec<&str> = reached.iter().map(|&l| m.states[l].path.as_str()).collect();
            return base(
                "topology_protected",
                format!(
                    "protected by topology alone: after `{}` no reachable state ({}) accepts {ev}, so a repeat of any age, with any id, is ignored",
                    t.json_path,
                    names.join(", ")
                ),
                "",
            );
        }
        let mut guards: Vec<String> = Vec::new();
        let all_guarded = again.iter().all(|a| match identity_guard(m, a) {
            Some(s) => {
                if !guards.contains(&s) {
                    guards.push(s);
                }
                true
            }
            None => false,
        });
        if all_guarded {
            return base(
                "identity_guarded",
                format!(
                    "{ev} is accepted again after `{}`, but only by transitions that check the event against an identified set or round \
                     (context.{}) and record it: a repeat is refused by the guard, however old it is",
                    t.json_path,
                    guards.join(", context.")
                ),
                "",
            );
        }
        let taken = self.taken.get(&t.json_path);
        let detail = match taken {
            None => format!(
                "the search (depth {}, {} configurations) never took this transition with the payloads it tried, so nothing is claimed",
                self.b.depth, self.b.nodes
            ),
            Some(tk) if tk.repeat_applied_harmless => {
                "a repeat was applied in the search but changed no context, emitted nothing and did not move the process".to_string()
            }
            Some(_) => "every repeat tried in the search was refused by a guard or ignored".to_string(),
        };
        let places: BTreeSet<&str> = again.iter().map(|a| a.json_path.as_str()).collect();
        base(
            "reaccept_unconfirmed",
            format!(
                "{ev} can be accepted again after `{}` (by {}), yet no repeat within the search bounds changes anything: {detail}",
                t.json_path,
                places.into_iter().collect::<Vec<_>>().join(", ")
            ),
            "If the guards are what protects it, consider checking an identified set explicitly so the protection is visible.",
        )
    }
}

/// When `a` and `b` lie in different regions of one parallel state: those regions.
fn other_regions(m: &Machine, a: StateIdx, b: StateIdx) -> Option<(StateIdx, StateIdx)> {
    let p = m.ancestors(a).skip(1).find(|&p| m.is_descendant(b, p))?;
    if m.states[p].kind != Kind::Parallel {
        return None;
    }
    let region = |s: StateIdx| m.ancestors(s).find(|&r| m.states[r].parent == Some(p));
    let (ra, rb) = (region(a)?, region(b)?);
    (ra != rb).then_some((ra, rb))
}

fn kind_severity(k: RepeatKind) -> Severity {
    match k {
        RepeatKind::Immediate => Severity::Error,
        RepeatKind::Cycle => Severity::Warning,
    }
}

fn chain(t1: &Option<String>, t2: &str) -> Vec<String> {
    let mut v: Vec<String> = t1.iter().cloned().collect();
    if v.last().map(String::as_str) != Some(t2) {
        v.push(t2.to_string());
    }
    v
}

fn owner_path(o: &Owner) -> Option<String> {
    match o {
        Owner::Transition(p) => Some(p.clone()),
        _ => None,
    }
}

fn find_transition<'m>(m: &'m Machine, path: &str) -> Option<&'m Transition> {
    m.states.iter().find_map(|s| {
        s.on.iter()
            .flat_map(|(_, ts)| ts.iter())
            .chain(s.always.iter())
            .chain(s.after.iter().flat_map(|(_, ts)| ts.iter()))
            .find(|t| t.json_path == path)
    })
}

/// How the witness's repeat arrives, in words.
fn mode_text(c: &Candidate, m: &Machine) -> String {
    let w = &c.witness;
    let orig = &w.steps[w.original];
    let dup = &w.steps[w.duplicate];
    let window = m.retention_for(&c.event);
    match w.mode {
        Mode::LateDuplicate => format!(
            "The witness redelivers {} with the same id \"{}\" {} ms after the original, past its {} ms retention (the ledger has \
             forgotten it)",
            c.event,
            orig.event["id"].as_str().unwrap_or(""),
            dup.now.saturating_sub(orig.now),
            window
        ),
        Mode::FreshId => format!(
            "The witness re-sends {} with the same payload under a new id \"{}\" (an originator without a stable id), {} ms later, well \
             inside the retention window",
            c.event,
            dup.event["id"].as_str().unwrap_or(""),
            dup.now.saturating_sub(orig.now)
        ),
    }
}
