// XState 5 taking eventless transitions in document order: a copy of the installed XState
// (xstate-patch.mjs) whose one difference is the order in which `selectEventlessTransitions` visits
// the active atomic states (sorted by document order, `StateNode.order`, instead of the order of
// the snapshot's `_nodes`, which is the order the states were entered in). It is the documented
// difference `eventless-region-order` made into XState: a disagreement with idem that this copy
// does not show is that difference and nothing else (differences.mjs).

import { patchedXState } from "./xstate-patch.mjs";

const ORIGINAL = "const atomicStates = nextState._nodes.filter(isAtomicStateNode);";
const DOCUMENT_ORDER = "const atomicStates = [...nextState._nodes].sort((a, b) => a.order - b.order).filter(isAtomicStateNode);";

/** The XState module (the names `import * as X from "xstate"` gives) with eventless transitions in document order. */
export function documentOrderXState() {
  return patchedXState("XState's eventless selection", ORIGINAL, DOCUMENT_ORDER);
}
