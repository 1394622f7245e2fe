// Shared helpers for the node tests of the hosts: machines, a manual clock and
// a store wrapper that records what was committed.
import { readFileSync } from "node:fs";
import { Machine } from "../src/node.js";

export const fixture = (name) => JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8"));
export const orderDefinition = () => JSON.parse(readFileSync(new URL("../../tests/machines/order.json", import.meta.url), "utf8"));

/** The checkout machine; `idempotent: false` makes its charge go through verification. */
export function checkoutMachine({ idempotent = true, maxAttempts } = {}) {
  const def = fixture("checkout.json");
  const effect = def.states.charging.entry[0].effect;
  effect.idempotent = idempotent;
  if (maxAttempts) effect.retry.maxAttempts = maxAttempts;
  return new Machine(def);
}

/** A clock the test moves by hand. */
export function manualClock(start = 1_700_000_000_000) {
  let t = start;
  const now = () => t;
  now.set = (v) => {
    t = v;
  };
  now.advance = (ms) => {
    t += ms;
  };
  return now;
}

/** Wrap a store to record every committed event, in order. */
export function recording(store) {
  const committed = [];
  return {
    committed,
    load: (id) => store.load(id),
    commit: async (id, expected, outcome, extras) => {
      const res = await store.commit(id, expected, outcome, extras);
      if (res.ok) committed.push({ event: extras?.event, status: outcome.status });
      return res;
    },
    events: store.events?.bind(store),
  };
}
