// Deno entry (local and Deno Deploy): read the wasm shipped with the package, no bundler.
import { initSync } from "../dist/idem.js";

const url = new URL("../dist/idem_bg.wasm", import.meta.url);
const bytes = url.protocol === "file:" ? await Deno.readFile(url) : new Uint8Array(await (await fetch(url)).arrayBuffer());
initSync({ module: bytes });

export { Machine, newEventId, version } from "../dist/idem.js";
