// Node entry: read the wasm next to the generated bindings and instantiate it synchronously.
import { readFileSync } from "node:fs";
import { initSync } from "../dist/idem.js";

initSync({ module: readFileSync(new URL("../dist/idem_bg.wasm", import.meta.url)) });

export { Machine, importXState, newEventId, version } from "../dist/idem.js";

export * from "./hosting.js";
