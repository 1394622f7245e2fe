// Deno entry (local and Deno Deploy): read the wasm shipped with the package, no bundler.
// The lean module: the engine without hazard analysis and XState import (see scripts/build-wasm.sh).
import { initSync } from "../dist/lean/idem.js";

const url = new URL("../dist/lean/idem_bg.wasm", import.meta.url);
const bytes = url.protocol === "file:" ? await Deno.readFile(url) : new Uint8Array(await (await fetch(url)).arrayBuffer());
initSync({ module: bytes });

export { Machine, newEventId, version } from "../dist/lean/idem.js";

export * from "./hosting.js";
