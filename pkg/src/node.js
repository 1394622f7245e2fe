// Node entry: the lean module (the engine built for speed, as the edge entries load it), read
// next to the generated bindings and instantiated synchronously. The hazard analysis and the
// XState import live in the full module, which is read and instantiated only when `analyze()` or
// `importXState` is first called: a server that only reduces never loads it.
import { readFileSync } from "node:fs";
import * as lean from "../dist/lean/idem.js";
import * as full from "../dist/idem.js";
import { withAnalysis } from "./analysis.js";

lean.initSync({ module: readFileSync(new URL("../dist/lean/idem_bg.wasm", import.meta.url)) });

let fullReady = false;
function analysis() {
  if (!fullReady) {
    full.initSync({ module: readFileSync(new URL("../dist/idem_bg.wasm", import.meta.url)) });
    fullReady = true;
  }
  return full;
}

export const { Machine, importXState } = withAnalysis(lean, analysis);

/** The full module, loaded now (in Node it also loads on first use; the web entry needs this call). */
export async function loadAnalysis() {
  analysis();
}

export { newEventId, version } from "../dist/lean/idem.js";

export * from "./hosting.js";
