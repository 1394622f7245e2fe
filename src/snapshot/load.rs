//! A snapshot checked against the machine that reduces it: the machine's id
//! (`wrong_machine`), its states when another version of the machine wrote it
//! (`missing_state`; `upgraded_from` when accepted), outbox attempts within
//! their retry policy, the history records (each must restore a configuration
//! below its parent: `invalid_snapshot`), the ledger's cap. Restoring a snapshot
//! runs no entry actions: the configuration is the one its state value names.
//! `reduce` refuses to produce a snapshot over the machine's `maxSnapshotBytes`,
//! so a process never grows past what it can load.

use super::*;

/// Decode a snapshot and check it belongs to `machine`.
pub fn load(machine: &Machine, text: &str) -> Result<Loaded> {
    check(machine, Snapshot::decode(text, machine.limits.max_snapshot_bytes)?)
}

/// As [`load()`], taking the text's buffer for the ledger (no copy of the records).
pub fn load_owned(machine: &Machine, text: String) -> Result<Loaded> {
    check(machine, Snapshot::decode_owned(text, machine.limits.max_snapshot_bytes)?)
}

pub(super) fn check(machine: &Machine, mut snap: Snapshot) -> Result<Loaded> {
    // A snapshot that names this machine by its own reference (the one shared
    // through `KNOWN` once written) needs no comparison; one that names it by
    // equal strings takes that reference, for the next time.
    let same = Arc::ptr_eq(&snap.machine, &machine.reference) || {
        if snap.machine.id != machine.id {
            return Err(wrong_machine(&snap.machine.id, &machine.id));
        }
        let same = snap.machine.hash == machine.hash;
        if same && snap.machine.version == machine.version {
            snap.machine = machine.reference.clone();
        }
        same
    };
    let config = match machine.config_of_value(&snap.state.value) {
        Some(c) => c,
        None if same => return Err(fail(Code::InvalidSnapshot, "snapshot state value does not name a state of its machine")),
        None => return Err(missing_state(&snap, machine)),
    };
    if machine.has_parallel() {
        // Stored with its members sorted; the value a process reports has its regions in document order.
        snap.state.value = machine.value_of_config(&config);
    }
    for (h, recorded) in &snap.state.history {
        let is_history = machine.state_by_path(h).is_some_and(|i| machine.states[i].kind == crate::machine::Kind::History);
        let names_states = recorded.as_array().is_some_and(|a| a.iter().all(|p| p.as_str().and_then(|p| machine.state_by_path(p)).is_some()));
        if !is_history || !names_states {
            return Err(fail(Code::InvalidSnapshot, "snapshot history does not name history states of its machine"));
        }
    }
    // Restoring a record must enter a configuration below the history's parent:
    // what the engine records when it exits that parent.
    for h in snap.state.history.keys() {
        if !restores_a_configuration(machine, h, &snap.state.history) {
            return Err(Error::new(Code::InvalidSnapshot, format!("snapshot history of \"{h}\" does not restore a configuration of its machine")));
        }
    }
    if !snap.state.context.is_object() {
        return Err(fail(Code::InvalidSnapshot, "snapshot context is not an object"));
    }
    if let Some(e) = snap.state.outbox.iter().find(|e| e.retry.max_attempts > crate::machine::MAX_ATTEMPTS || e.attempts > e.retry.max_attempts) {
        return Err(too_many_attempts(e));
    }
    let upgraded_from = (!same).then(|| snap.machine.version.clone());
    snap.ledger.set_cap(machine.retention.max_entries);
    Ok(Loaded { snap, config, upgraded_from })
}

/// Whether entering history state `h` (a history state of `machine`, its record
/// naming states of it) with `history` recorded enters states below its parent
/// only, each compound state with one child and each parallel state with every
/// region (one of the parent's regions a newer version of the machine added is
/// entered by default, as it would be when the history is entered).
fn restores_a_configuration(machine: &Machine, h: &str, history: &Map<String, Value>) -> bool {
    let Some(h) = machine.state_by_path(h) else { return false };
    let Some(parent) = machine.states[h].parent else { return false };
    let recorded = history.get(&machine.states[h].path).and_then(|r| r.as_array()).map_or(&[][..], Vec::as_slice);
    let inside = |p: &Value| {
        p.as_str().and_then(|p| machine.state_by_path(p)).is_some_and(|r| machine.is_descendant(r, parent) && machine.states[r].kind != crate::machine::Kind::History)
    };
    if recorded.is_empty() || !recorded.iter().all(inside) {
        return false;
    }
    let entry = crate::interpreter::Entry { m: machine, history };
    let mut states = vec![parent];
    entry.add_descendant_states_to_enter(h, &mut states);
    if machine.states[parent].kind == crate::machine::Kind::Parallel {
        entry.enter_missing_regions(parent, &mut states);
    }
    states.sort_unstable();
    states.dedup();
    machine.misfit(&states, parent).is_none()
}
