import { isDeepStrictEqual } from "node:util";

// The documented differences between idem and XState 5: where idem deliberately does not do what
// XState does. A disagreement is excused only when one of these recognises it at the step where it
// happens, from what XState did there (its microsteps); nothing else is excluded from the comparison.
// Each entry says why idem differs. Bugs are not listed here: they are regression cases.

export const DOCUMENTED = [
  {
    name: "eventless-region-order",
    reason:
      "XState takes the eventless transitions of parallel regions in the order their states were " +
      "entered (its configuration is kept in entry order), not document order; idem follows SCXML and " +
      "uses document order, so the action order does not depend on the path that led to the configuration.",
    applies: (microsteps, _kase, step, _rerun, result) =>
      microsteps.some((m) => {
        const eventless = m.transitions.filter((t) => t.eventless);
        return eventless.some((t, i) => i > 0 && eventless[i - 1].order > t.order);
      }) &&
      // And it is only that: the same state, and the same actions in another order.
      (!result || sameButOrder(result.idem[step], result.xstate.steps[step])),
  },
];

function sameButOrder(a, b) {
  if (!a || !b || a.taken !== b.taken || JSON.stringify(a.value) !== JSON.stringify(b.value)) return false;
  const { log: la = [], ...ra } = a.context ?? {};
  const { log: lb = [], ...rb } = b.context ?? {};
  const sorted = (l) => JSON.stringify([...l].sort());
  return isDeepStrictEqual(ra, rb) && sorted(la) === sorted(lb);
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
