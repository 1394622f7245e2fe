// Writes the JSON form of each machine of this corpus, as an XState user has
// it: `JSON.stringify(machine.config)`. XState 5's built-in actions and guards
// are functions, which a plain JSON.stringify drops; `members` writes each
// function that has members of its own as `{ type, ...members }` (its `type`,
// or `xstate.<name>` for `and`, `or`, `not` and `stateIn`), so `raise`,
// `assign`, `sendTo`, `emit` and the guard combinators keep what they say.
// Numeric delays of `setup({ delays })` are added to the config's `delays`,
// where the import reads them.
//
// Run from the repository root: node tests/xstate/make.mjs
// The XState 4 machine needs XState 4 (`npm i xstate@4.38.3` in a directory of
// your choice): XSTATE4=<that directory>/node_modules/xstate node tests/xstate/make.mjs
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as xstate5 from "xstate";

const here = new URL(".", import.meta.url);

export const members = (_key, v) => {
  if (typeof v !== "function") return v;
  const own = Object.entries(v).filter(([, x]) => typeof x !== "function");
  if (own.length === 0) return undefined;
  return { type: v.type ?? `xstate.${v.name}`, ...Object.fromEntries(own) };
};

function write(name, machine, replacer) {
  const delays = Object.entries(machine.implementations?.delays ?? {}).filter(([, d]) => typeof d === "number");
  const config = delays.length ? { ...machine.config, delays: Object.fromEntries(delays) } : machine.config;
  writeFileSync(new URL(`${name}.json`, here), JSON.stringify(config, replacer, 2) + "\n");
  console.log(`wrote tests/xstate/${name}.json`);
}

for (const name of ["fetch-retry", "auth-flow", "media-player"]) {
  const { default: make } = await import(new URL(`${name}.mjs`, here));
  write(name, make(xstate5), members);
}

if (process.env.XSTATE4) {
  const xstate4 = createRequire(import.meta.url)(process.env.XSTATE4);
  const { default: make } = await import(new URL("checkout-v4.mjs", here));
  // XState 4's action creators return plain objects: nothing to write out.
  write("checkout-v4", make(xstate4), null);
} else {
  console.log("checkout-v4.json left as it is (set XSTATE4 to an XState 4 install to write it)");
}
