// Writes the JSON form of each machine of this corpus, as an XState user has
// it: `JSON.stringify(machine.config)`. XState 5's built-in actions and guards
// are functions, which a plain JSON.stringify drops; `members` writes each
// function that has members of its own as `{ type, ...members }` (its `type`,
// or `xstate.<name>` for `and`, `or`, `not` and `stateIn`), so `raise`,
// `assign`, `sendTo`, `emit` and the guard combinators keep what they say.
// Numeric delays of the implementations (`setup({ delays })`, XState 4's
// options) are added to the config's `delays`, where the import reads them.
//
// Run from the repository root: node tests/xstate/make.mjs
// The XState 4 machines are written with XState 4, the devDependency `xstate4`
// (XSTATE4=<a directory> names another install).
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
  // XState 5 keeps implementations in `machine.implementations`, XState 4 in `machine.options`.
  const implementations = machine.implementations ?? machine.options;
  const delays = Object.entries(implementations?.delays ?? {}).filter(([, d]) => typeof d === "number");
  const config = delays.length ? { ...machine.config, delays: Object.fromEntries(delays) } : machine.config;
  writeFileSync(new URL(`${name}.json`, here), JSON.stringify(config, replacer, 2) + "\n");
  console.log(`wrote tests/xstate/${name}.json`);
}

for (const name of ["fetch-retry", "auth-flow", "media-player", "payment-v5"]) {
  const { default: make } = await import(new URL(`${name}.mjs`, here));
  write(name, make(xstate5), members);
}

const XSTATE4_MACHINES = ["checkout-v4", "subscription-v4", "booking-v4", "upload-v4", "onboarding-v4", "video-player-v4"];

{
  const xstate4 = createRequire(import.meta.url)(process.env.XSTATE4 ?? "xstate4");
  for (const name of XSTATE4_MACHINES) {
    const { default: make } = await import(new URL(`${name}.mjs`, here));
    // XState 4's action creators return plain objects: nothing to write out.
    write(name, make(xstate4), null);
  }
}
