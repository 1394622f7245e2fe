// XState 5 counting re-entered states as exited when it removes conflicting transitions: a copy of
// the installed XState (xstate-patch.mjs) whose one difference is that `removeConflictingTransitions`
// compares, for each transition, the states it exits and the active states it enters again, as
// idem's `remove_conflicting_transitions` does (src/engine/interpreter.rs). XState itself compares
// exit sets alone, so a transition to a history state that restores its own source (which exits
// nothing: its domain is the source) is taken beside one that exits that source. It is the
// documented difference `history-reentry-conflicts` made into XState.

import { patchedXState } from "./xstate-patch.mjs";

const ORIGINAL = "if (hasIntersection(computeExitSet([t1], stateNodeSet, historyValue), computeExitSet([t2], stateNodeSet, historyValue))) {";
const FOOTPRINTS = `const footprint = (t) => {
        const entered = new Set();
        computeEntrySet([t], historyValue, new Set(), entered);
        return [...computeExitSet([t], stateNodeSet, historyValue), ...[...entered].filter((s) => stateNodeSet.has(s))];
      };
      if (hasIntersection(footprint(t1), footprint(t2))) {`;

/** The replacement, `[original, replacement]`. */
export const REENTRY_CONFLICTS = [ORIGINAL, FOOTPRINTS];

/** The XState module (the names `import * as X from "xstate"` gives) whose conflicts count re-entered states. */
export function reentryConflictsXState() {
  return patchedXState("XState's conflict test in removeConflictingTransitions", ORIGINAL, FOOTPRINTS);
}
