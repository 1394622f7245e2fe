// A second copy of the installed XState with a line or two replaced: the copies that make a documented
// difference (differences.mjs) into XState, so that a disagreement with idem the copy does not show
// is that difference and nothing else.
//
// The copy is the CommonJS build `import "xstate"` loads in Node, compiled again from its files
// with the lines replaced; each must be found exactly once, so an XState upgrade that moves it
// fails here rather than silently comparing against an unpatched copy.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import { compileFunction } from "node:vm";

const require = createRequire(import.meta.url);
const copies = new Map();

/**
 * The XState module (the names `import * as X from "xstate"` gives) with `original`, a piece of its
 * CommonJS build, replaced by `replacement`; `more` are further `[original, replacement]` pairs,
 * each replaced the same way. `what` names the change in errors.
 */
export function patchedXState(what, original, replacement, ...more) {
  const pairs = [[original, replacement], ...more];
  const key = JSON.stringify(pairs);
  const known = copies.get(key);
  if (known) return known;
  const entry = require.resolve("xstate");
  const modules = new Map();
  const patched = pairs.map(() => 0);
  const load = (file) => {
    const loaded = modules.get(file);
    if (loaded) return loaded.exports;
    let source = readFileSync(file, "utf8");
    pairs.forEach(([from, to], i) => {
      const found = source.split(from).length - 1;
      if (found > 1) throw new Error(`${file}: ${what} (${JSON.stringify(from)}) appears ${found} times`);
      if (found === 1) {
        source = source.replace(from, () => to);
        patched[i]++;
      }
    });
    const module = { exports: {} };
    modules.set(file, module);
    const local = (spec) => (spec.startsWith(".") ? load(resolve(dirname(file), spec)) : require(spec));
    compileFunction(source, ["exports", "require", "module", "__filename", "__dirname"], { filename: file })(
      module.exports, local, module, file, dirname(file),
    );
    return module.exports;
  };
  const xstate = load(entry);
  pairs.forEach(([from], i) => {
    if (patched[i] !== 1) throw new Error(`${what} (${JSON.stringify(from)}) was not found in ${dirname(entry)}: update the patch`);
  });
  copies.set(key, xstate);
  return xstate;
}
