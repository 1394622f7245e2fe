// Cloudflare Workers entry: workerd imports the .wasm as a compiled module (no fetch,
// no eval). Instantiation draws no random values, so it is safe at module load;
// newEventId() must be called inside a request. The lean module: the engine without
// hazard analysis and XState import (see scripts/build-wasm.sh).
import wasm from "../dist/lean/idem_bg.wasm";
import { initSync } from "../dist/lean/idem.js";

initSync({ module: wasm });

export { Machine, newEventId, version } from "../dist/lean/idem.js";

export * from "./hosting.js";
