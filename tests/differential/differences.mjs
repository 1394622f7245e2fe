// The documented differences between idem and XState 5: where idem deliberately does not do what
// XState does. A disagreement is excused only when one of these recognises it at the step where it
// happens, from what XState did there (its microsteps); nothing else is excluded from the comparison.
// Each entry says why idem differs. Bugs are not listed here: they are regression cases.

export const DOCUMENTED = [
  {
    name: "root-reenter",
    reason:
      "XState runs the machine root's own exit and entry actions on a `reenter: true` transition " +
      "declared on the root. SCXML has no transitions on the root and never exits it before the " +
      "machine ends; idem re-enters the root's descendants only (issue 30).",
    applies: (step) => step.microsteps.some((m) => m.transitions.some((t) => t.sourceIsRoot && t.reenter)),
  },
  {
    name: "eventless-region-order",
    reason:
      "XState takes the eventless transitions of parallel regions in the order their states were " +
      "entered (its configuration is kept in entry order), not document order; idem follows SCXML and " +
      "uses document order, so the action order does not depend on the path that led to the configuration.",
    applies: (step) =>
      step.microsteps.some((m) => {
        const eventless = m.transitions.filter((t) => t.eventless);
        return eventless.some((t, i) => i > 0 && eventless[i - 1].order > t.order);
      }),
  },
];

/** The documented difference that excuses the disagreement at `difference.step`, if any. */
export function documented(result) {
  const step = result.xstate.steps[result.difference.step];
  return DOCUMENTED.find((d) => d.applies(step)) ?? null;
}
