// Deno entry (local and Deno Deploy): read the wasm shipped with the package, no bundler.
// The lean module: the engine without hazard analysis and XState import (see scripts/build-wasm.sh).
import { initSync, Machine as LeanMachine } from "../dist/lean/idem.js";
import { checkedMachine } from "./checks.js";

const url = new URL("../dist/lean/idem_bg.wasm", import.meta.url);
const bytes = url.protocol === "file:" ? await Deno.readFile(url) : new Uint8Array(await (await fetch(url)).arrayBuffer());
initSync({ module: bytes });

/** The lean module's `Machine`, its arguments checked before they cross (checks.js). */
export const Machine = checkedMachine(LeanMachine);

export { newEventId, version } from "../dist/lean/idem.js";

export * from "./hosting.js";
