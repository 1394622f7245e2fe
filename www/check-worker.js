// The "Prove it" panel's check, off the page's thread: `machine.check` explores every schedule
// synchronously, so the page hands it to this module worker and stays responsive meanwhile.
//
// In:  { id, def, scenario, bounds }            one check of the definition `def`
// Out: { id, progress: { states, transitions, depth, seconds } }   while it runs (onProgress)
//      { id, verdict } | { id, error: { code, message } }          once, at the end

// The engine is imported inside the handler: web.js awaits its wasm at the top level, and a
// module worker whose evaluation is still pending would miss the page's first message.
let engine = null;

self.onmessage = async ({ data: { id, def, scenario, bounds } }) => {
  try {
    engine ??= import("../pkg/dist/js/web.js");
    const { Machine, loadAnalysis } = await engine;
    await loadAnalysis(); // the checker lives in the full module
    const machine = new Machine(def);
    const onProgress = (progress) => self.postMessage({ id, progress });
    self.postMessage({ id, verdict: machine.check(scenario, { ...bounds, onProgress }) });
  } catch (err) {
    self.postMessage({ id, error: { code: err?.code, message: String(err?.message ?? err) } });
  }
};
