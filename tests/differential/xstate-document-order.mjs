// XState 5 taking eventless transitions in document order: a second copy of the installed XState
// whose one difference is the order in which `selectEventlessTransitions` visits the active atomic
// states (sorted by document order, `StateNode.order`, instead of the order of the snapshot's
// `_nodes`, which is the order the states were entered in). It is the documented difference
// `eventless-region-order` made into XState: a disagreement with idem that this copy does not show
// is that difference and nothing else (differences.mjs).
//
// The copy is the CommonJS build `import "xstate"` loads in Node, compiled again from its files
// with one line replaced; the line must be found exactly once, so an XState upgrade that moves it
// fails here rather than silently comparing against an unpatched copy.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import { compileFunction } from "node:vm";

const require = createRequire(import.meta.url);

const ORIGINAL = "const atomicStates = nextState._nodes.filter(isAtomicStateNode);";
const DOCUMENT_ORDER = "const atomicStates = [...nextState._nodes].sort((a, b) => a.order - b.order).filter(isAtomicStateNode);";

let loaded = null;

/** The XState module (the names `import * as X from "xstate"` gives) with eventless transitions in document order. */
export function documentOrderXState() {
  if (loaded) return loaded;
  const entry = require.resolve("xstate");
  const modules = new Map();
  let patched = 0;
  const load = (file) => {
    const known = modules.get(file);
    if (known) return known.exports;
    let source = readFileSync(file, "utf8");
    const found = source.split(ORIGINAL).length - 1;
    if (found > 1) throw new Error(`${file}: XState's eventless selection appears ${found} times`);
    if (found === 1) {
      source = source.replace(ORIGINAL, DOCUMENT_ORDER);
      patched++;
    }
    const module = { exports: {} };
    modules.set(file, module);
    const local = (spec) => (spec.startsWith(".") ? load(resolve(dirname(file), spec)) : require(spec));
    compileFunction(source, ["exports", "require", "module", "__filename", "__dirname"], { filename: file })(
      module.exports, local, module, file, dirname(file),
    );
    return module.exports;
  };
  const xstate = load(entry);
  if (patched !== 1) {
    throw new Error(`XState's eventless selection (${JSON.stringify(ORIGINAL)}) was not found in ${dirname(entry)}: update ${import.meta.url}`);
  }
  loaded = xstate;
  return loaded;
}
