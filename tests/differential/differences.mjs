import { strictly } from "./jsonlogic.mjs";
import { firstDifference, runXState } from "./runner.mjs";
import { documentOrderXState } from "./xstate-document-order.mjs";
import { domainBeforeExitXState, historyXState } from "./xstate-domain-before-exit.mjs";
import { reentryConflictsXState } from "./xstate-reentry-conflicts.mjs";

// The documented differences between idem and XState 5: where idem deliberately does not do what
// XState does. A disagreement is excused only when one of these recognises it at the step where it
// happens, from what XState did there (its microsteps), and proves it is that difference and
// nothing else; nothing else is excluded from the comparison. Each entry says why idem differs.
// Bugs are not listed here: they are regression cases.

export const DOCUMENTED = [
  {
    name: "eventless-region-order",
    reason:
      "XState takes the eventless transitions of parallel regions in the order of its configuration list, which " +
      "is the order their states were entered in (and which a microstep that re-enters exactly the same states " +
      "leaves as it was), not document order; idem follows SCXML and uses document order, so which of two " +
      "conflicting eventless transitions wins, and the order of their actions, do not depend on the path that " +
      "led to the configuration.",
    // XState took eventless transitions at the step where the two part, and the same XState taking
    // them in document order (xstate-document-order.mjs: one line of XState changed) does what idem
    // does at every step of the case: the choice between regions' eventless transitions is then
    // the whole disagreement, within one microstep (the order of their actions) or across
    // microsteps (which of two conflicting transitions won, and all that followed from it).
    applies: (microsteps, kase, _step, _rerun, result) =>
      microsteps.some((m) => m.transitions.some((t) => t.eventless)) && Boolean(result) && agreesWith(kase, result.idem, documentOrderXState()),
  },
  {
    name: "history-reentry-conflicts",
    reason:
      "A transition to a history state that restores its own source has that source as its domain in XState, so " +
      "it exits nothing, yet it enters its source again. XState removes conflicting transitions by their exit sets " +
      "alone and takes it beside a transition that exits the source, reaching a configuration that is not one: the " +
      "source without its ancestors (its state value fills them in, never entered) or beside a sibling the other " +
      "entered. idem counts the re-entered source among the states a transition exits when it removes conflicts, " +
      "so one of the two is taken (the descendant's, else the first in document order), and every configuration " +
      "it writes is one it reads back the same (issue 38).",
    // Some microstep up to the step where the two part took several transitions at once (the
    // conflict needs two), and the same XState counting re-entered states in its conflict test
    // (xstate-reentry-conflicts.mjs) does what idem does at every step of the case (or, for a case
    // that shows history-domain-before-exit too, the XState made into both).
    applies: (_microsteps, kase, step, _rerun, result) =>
      Boolean(result) &&
      [result.xstate.initial, ...result.xstate.steps.slice(0, step + 1)].some((s) => s.microsteps.some((m) => m.transitions.length > 1)) &&
      (agreesWith(kase, result.idem, reentryConflictsXState()) || agreesWith(kase, result.idem, historyXState())),
  },
  {
    name: "history-domain-before-exit",
    reason:
      "XState computes a transition's domain twice: for its exit set from the history recorded before the " +
      "microstep, and for its entry set from the history its exits just recorded. A history state of a parallel " +
      "state that has recorded nothing names its parent, which the transition exits; once exited, the parent's " +
      "regions are recorded, the domain becomes the parent, and XState enters the regions without it (its state " +
      "value fills it in; its entry actions never run). idem enters over the domain it exited, so the parent is " +
      "entered again.",
    // The same XState computing the entry set's domains from the history before the exits
    // (xstate-domain-before-exit.mjs) does what idem does at every step of the case (or, for a
    // case that shows history-reentry-conflicts too, the XState made into both).
    applies: (_microsteps, kase, _step, _rerun, result) =>
      Boolean(result) && (agreesWith(kase, result.idem, domainBeforeExitXState()) || agreesWith(kase, result.idem, historyXState())),
  },
  {
    name: "nan-where-idem-refuses",
    reason:
      "JSONLogic's reference (json-logic-js), which evaluates the XState side's expressions, gives NaN for `+` on a " +
      "value that is not a number, such as a payload field the event does not carry or a raised event without a " +
      "payload, and XState stores that NaN in the context (or, with the NaN in its guards, runs on until its " +
      "microstep limit); idem never makes a number up: arithmetic on a missing " +
      "value, null, a boolean, an array, an object or a string that is not a number fails the event " +
      "(`expression_failed`), which is rejected and writes nothing (docs/expressions.md).",
    // idem refused the event with expression_failed where XState stored a NaN, and XState with
    // idem's arithmetic (jsonlogic.mjs `strictly`) agrees with idem up to that step and fails
    // there: the arithmetic on a value that is not a number is the whole disagreement.
    applies: (_microsteps, kase, step, _rerun, result) => Boolean(result) && refusedWhereXStateStoredNaN(kase, step, result),
  },
];

/**
 * Whether idem refused step `at` of `result` where XState went on with a NaN (stored it, or failed
 * otherwise with it in its guards), and that alone.
 */
function refusedWhereXStateStoredNaN(kase, at, result) {
  const xs = result.xstate.steps[at];
  const wentOnWithNaN = holdsNaN(xs?.context) || (typeof xs?.error === "string" && !xs.error.includes("expression_failed"));
  if (result.idem[at]?.error !== "expression_failed" || !wentOnWithNaN) return false;
  const strict = strictly(() => runXState(kase.def, kase.events));
  const failed = strict.steps.findIndex((s) => s.error);
  return failed === at && strict.steps[at].error.includes("expression_failed") &&
    firstDifference(result.idem.slice(0, at), strict.steps.slice(0, at)) === null;
}

/** Whether a NaN is anywhere in `v`. */
function holdsNaN(v) {
  if (typeof v === "number") return Number.isNaN(v);
  if (v !== null && typeof v === "object") return Object.values(v).some(holdsNaN);
  return false;
}

/** Whether XState module `x` (a patched copy) agrees with idem's trace `idem` on `kase`. */
function agreesWith(kase, idem, x) {
  const xs = runXState(kase.def, kase.events, undefined, x);
  return firstDifference(idem, xs.steps) === null;
}

/**
 * The documented difference that excuses the disagreement of `result` (a `runCase` of `kase`) at
 * its first differing step, if any. XState's microsteps of that step are what the predicates read;
 * idem's first step includes the process's initial step, so XState's initial microsteps count
 * with every step up to idem's first applied one. `rerun` runs a variant of the case.
 */
export function documented(result, kase, rerun) {
  const at = result.difference.step;
  const created = result.idem.findIndex((s) => s.status === "applied");
  const microsteps = [
    ...(created === -1 || at <= created ? result.xstate.initial.microsteps : []),
    ...result.xstate.steps[at].microsteps,
  ];
  return DOCUMENTED.find((d) => d.applies(microsteps, kase, at, rerun, result)) ?? null;
}
