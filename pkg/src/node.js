// Node entry: the lean module (the engine built for speed, as the edge entries load it), read
// next to the generated bindings and instantiated synchronously. The hazard analysis and the
// XState import live in the full module, which is read and instantiated only when `analyze()` or
// `importXState` is first called: a server that only reduces never loads it.
import { readFileSync } from "node:fs";
import * as lean from "../dist/lean/idem.js";
import * as full from "../dist/idem.js";

lean.initSync({ module: readFileSync(new URL("../dist/lean/idem_bg.wasm", import.meta.url)) });

let fullReady = false;
function analysis() {
  if (!fullReady) {
    full.initSync({ module: readFileSync(new URL("../dist/idem_bg.wasm", import.meta.url)) });
    fullReady = true;
  }
  return full;
}

/** The full module's machine for each machine that was asked for its hazards (built once). */
const analysed = new WeakMap();

export class Machine extends lean.Machine {
  /**
   * The duplicate-delivery hazards of this machine (as `idem lint` reports them), errors first:
   * the full module builds the same definition and analyses it.
   */
  analyze() {
    let m = analysed.get(this);
    if (m === undefined) {
      m = new (analysis().Machine)(this.definition());
      analysed.set(this, m);
    }
    return m.analyze();
  }
}

/** Import the JSON form of an XState v5 config as an idem definition (see index.d.ts). */
export function importXState(config) {
  return analysis().importXState(config);
}

export { newEventId, version } from "../dist/lean/idem.js";

export * from "./hosting.js";
