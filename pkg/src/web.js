// Browser entry: fetch and instantiate the lean module (the engine built for speed, about 150 KiB
// gzip) before anything is exported. The hazard analysis and the XState import live in the
// full module (the engine again, with them, built for size), fetched only by
// `await loadAnalysis()`: a page that only reduces never downloads it.
import initLean, * as lean from "../dist/lean/idem.js";
import { withAnalysis } from "./analysis.js";
import { IdemError } from "./error.js";

await initLean({ module_or_path: new URL("../dist/lean/idem_bg.wasm", import.meta.url) });

/** @type {Promise<void> | null} */
let loading = null;
/** @type {any} the full module's bindings, once instantiated */
let full = null;

/**
 * Fetch and instantiate the full module (its bindings and its wasm), once: `machine.analyze()`
 * and `importXState` need it. A failed fetch is not remembered, so calling again tries again.
 */
export function loadAnalysis() {
  loading ??= (async () => {
    const bindings = await import("../dist/idem.js");
    await bindings.default({ module_or_path: new URL("../dist/idem_bg.wasm", import.meta.url) });
    full = bindings;
  })().catch((err) => {
    loading = null;
    throw err;
  });
  return loading;
}

function analysis() {
  if (full === null) {
    throw new IdemError("analysis_not_loaded", "the hazard analysis and the XState import are in a second module: await loadAnalysis() once before analyze() or importXState()");
  }
  return full;
}

export const { Machine, importXState } = withAnalysis(lean, analysis);

export { newEventId, version } from "../dist/lean/idem.js";

export * from "./hosting.js";
