// Browser entry: fetch and instantiate the wasm once, before anything is exported.
import init from "../dist/idem.js";

await init({ module_or_path: new URL("../dist/idem_bg.wasm", import.meta.url) });

export { Machine, importXState, newEventId, version } from "../dist/idem.js";

export * from "./hosting.js";
