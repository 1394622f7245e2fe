// XState 5 entering over the domain its exit set was computed over: a copy of the installed XState
// (xstate-patch.mjs) whose one difference is that `computeEntrySet` takes each transition's domain
// from the history as it stood when the microstep began, before `exitStates` recorded history, as
// idem's `microstep` does (src/engine/interpreter.rs). XState itself takes it from the history just
// recorded: a history state of a parallel state that has recorded nothing names its parent (which
// the transition exits), but once the exit has recorded the regions the domain is the parent, and
// XState enters the regions without it (its state value fills it in; its entry actions never run).
// It is the documented difference `history-domain-before-exit` made into XState.

import { patchedXState } from "./xstate-patch.mjs";
import { REENTRY_CONFLICTS } from "./xstate-reentry-conflicts.mjs";

/** The history as the microstep began, kept before anything uses it. */
const STASH = [
  "let historyValue = currentSnapshot.historyValue;",
  "let historyValue = currentSnapshot.historyValue;\n    globalThis.__idemDomainHistory = historyValue;",
];
const USE = [
  "const domain = getTransitionDomain(t, historyValue);\n    for (const s of t.target || []) {",
  "const domain = getTransitionDomain(t, globalThis.__idemDomainHistory ?? historyValue);\n    for (const s of t.target || []) {",
];

/** The XState module (the names `import * as X from "xstate"` gives) entering over the exit's domains. */
export function domainBeforeExitXState() {
  return patchedXState("XState's transition domain in computeEntrySet", ...STASH, USE);
}

/**
 * XState with both history differences made into it (this one and `history-reentry-conflicts`),
 * for a case that shows both.
 */
export function historyXState() {
  return patchedXState("XState's history handling", ...STASH, USE, REENTRY_CONFLICTS);
}
