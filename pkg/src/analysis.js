// What the node and web entries share: they reduce with the lean module (the engine built for
// speed) and keep the hazard analysis and the XState import in the full module, which the
// node entry reads on first use and the web entry fetches on `loadAnalysis()`.

import { checkedMachine, jsonArg } from "./checks.js";
import { hostedNames } from "./implementations.js";

/**
 * The entry's `Machine` and `importXState` over the lean module's `Machine`, their arguments
 * checked (checks.js).
 * @param {{ Machine: new (definition: unknown) => { definition(): unknown } }} lean
 * @param {() => { Machine: new (definition: unknown) => { analyze(): unknown }, importXState(config: unknown): unknown, checkMachine(definition: unknown, scenario: string, options: unknown, onProgress?: Function): unknown }} full
 *   the full module's exports, instantiated (it throws when they cannot be had now)
 */
export function withAnalysis(lean, full) {
  /** The full module's machine for each machine that was asked for its hazards (built once). */
  const analysed = new WeakMap();

  class Machine extends checkedMachine(lean.Machine) {
    /**
     * The duplicate-delivery hazards of this machine (as `idem lint` reports them), errors first:
     * the full module builds the same definition and analyses it.
     */
    analyze() {
      let m = analysed.get(this);
      if (m === undefined) {
        // Through the checked class's own method: `this` must be a machine that is not freed.
        // Its functions by name only: the analysis cannot read them.
        m = new (full().Machine)(Machine.prototype.definition.call(this), hostedNames.get(this));
        analysed.set(this, m);
      }
      return m.analyze();
    }

    /**
     * Every delivery schedule of `scenario` within bounds (`idem check`; see index.d.ts): the
     * verdict object the CLI prints with `--format json`. `scenario` is JSON Lines text or an
     * array of events and `{ advance: ms }` lines.
     */
    check(scenario, options = {}) {
      const lines = Array.isArray(scenario) ? scenario.map((l) => JSON.stringify(l)).join("\n") : scenario;
      const { onProgress, ...bounds } = options ?? {};
      return full().checkMachine(this.definition(), lines, bounds, typeof onProgress === "function" ? onProgress : undefined);
    }
  }

  /** Import the JSON form of an XState v5 config as an idem definition (see index.d.ts). */
  function importXState(config) {
    return full().importXState(jsonArg(config, "config"));
  }

  return { Machine, importXState };
}
