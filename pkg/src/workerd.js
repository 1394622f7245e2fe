// Cloudflare Workers entry: workerd imports the .wasm as a compiled module (no fetch,
// no eval). Instantiation draws no random values, so it is safe at module load;
// newEventId() must be called inside a request. The lean module: the engine without
// hazard analysis and XState import (see scripts/build-wasm.sh).
import wasm from "../dist/lean/idem_bg.wasm";
import { initSync, Machine as LeanMachine } from "../dist/lean/idem.js";
import { checkedMachine } from "./checks.js";

initSync({ module: wasm });

/** The lean module's `Machine`, its arguments checked before they cross (checks.js). */
export const Machine = checkedMachine(LeanMachine);

export { newEventId, version } from "../dist/lean/idem.js";

export * from "./hosting.js";
