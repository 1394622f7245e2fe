// Shared helpers for the Deno host tests: a Deno KV database in a temporary
// SQLite file (real Deno KV, no mocks), the demo machines, small machines for
// the large-snapshot cases, and polling.
import { Machine } from "../../pkg/src/deno.js";

export const ROOT = new URL("../../", import.meta.url);

/** A fresh directory with a KV database path in it; `cleanup()` removes it. */
export async function tempKvPath(name = "idem.sqlite") {
  const dir = await Deno.makeTempDir({ prefix: "idem-denokv-" });
  return { dir, path: `${dir}/${name}`, cleanup: () => Deno.remove(dir, { recursive: true }).catch(() => {}) };
}

/** A machine definition from www/machines/ (the demo's order machines). */
export async function demoDefinition(name = "order-robust") {
  return JSON.parse(await Deno.readTextFile(new URL(`www/machines/${name}.json`, ROOT)));
}

export async function demoMachine(name = "order-robust") {
  return new Machine(await demoDefinition(name));
}

/**
 * A machine that records every NOTE with its payload's `note` as the frozen
 * response, and remembers up to `maxEntries` ids: its snapshot grows by about
 * the note's length per event (the ledger keeps each response).
 */
export function notesMachine({ maxEntries = 100_000, maxSnapshotBytes } = {}) {
  const def = {
    id: "notes",
    version: "1",
    initial: "open",
    context: { n: 0 },
    retention: { defaultMs: 86_400_000, perType: { NOTE: 3_600_000 }, maxEntries },
    states: {
      open: {
        on: {
          NOTE: { actions: [{ assign: { n: { "+": [{ var: "context.n" }, 1] } } }, { respond: { var: "event.payload.note" } }] },
        },
      },
    },
  };
  if (maxSnapshotBytes) def.limits = { maxSnapshotBytes };
  return new Machine(def);
}

export const note = (i, bytes) => ({ id: `note-${i}`, type: "NOTE", payload: { note: `${i}:`.padEnd(bytes, "x") } });

export const pay = (id, paymentId, amount = 1) => ({ id, type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });

/** Every key of a process in the store (head and chunks). */
export async function processKeys(kv, processId, prefix = "idem") {
  const keys = [];
  for await (const e of kv.list({ prefix: [prefix, "process", processId] })) keys.push(e.key);
  return keys;
}

/** Poll `fn` until it returns a truthy value (or throw after `tries`). */
export async function eventually(fn, { tries = 300, everyMs = 50, what = "condition" } = {}) {
  let last;
  for (let i = 0; i < tries; i++) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`${what} did not hold; last value: ${JSON.stringify(last)}`);
}
