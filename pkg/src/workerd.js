// Cloudflare Workers entry: workerd imports the .wasm as a compiled module (no fetch,
// no eval). Instantiation draws no random values, so it is safe at module load;
// newEventId() must be called inside a request.
import wasm from "../dist/idem_bg.wasm";
import { initSync } from "../dist/idem.js";

initSync({ module: wasm });

export { Machine, newEventId, version } from "../dist/idem.js";
