// Named implementations against XState 5: a machine written with `setup({ guards, actions })`,
// its implementations functions (guards and actions with `params`), is turned into its JSON
// form, imported with `importXState` (the names kept, `needs` listing them), given the same
// implementations as data, and run by idem beside XState running the machine itself, on seeded
// random event streams: the state value and the context agree after every event.

import assert from "node:assert/strict";
import { test } from "node:test";
import { assign, createActor, setup } from "xstate";
import { importXState, Machine } from "../../pkg/src/node.js";
import { caseSeed, rng } from "./rng.mjs";

/** A cart, every piece of its code named, several used with params. */
const cart = setup({
  guards: {
    above: ({ event }, params) => event.amount > params.min,
    hasLines: ({ context }) => context.lines > 0,
    isVip: ({ context }) => context.total >= 100,
  },
  actions: {
    addLine: assign({ total: ({ context, event }) => context.total + event.amount, lines: ({ context }) => context.lines + 1 }),
    note: assign({ log: ({ context }, params) => [...context.log, params.what] }),
    clear: assign({ total: 0, lines: 0 }),
    discount: assign({ total: ({ context }, params) => context.total - params.off }),
  },
}).createMachine({
  id: "cart",
  initial: "open",
  context: { total: 0, lines: 0, log: [] },
  states: {
    open: {
      entry: { type: "note", params: { what: "open" } },
      on: {
        ADD: [
          { guard: { type: "above", params: { min: 50 } }, actions: ["addLine", { type: "note", params: { what: "big" } }] },
          { guard: { type: "above", params: { min: 0 } }, actions: "addLine" },
        ],
        CLEAR: { actions: "clear" },
        CHECKOUT: { target: "paying", guard: "hasLines" },
      },
    },
    paying: {
      exit: { type: "note", params: { what: "left paying" } },
      on: {
        PAID: [{ target: "done", guard: "isVip", actions: { type: "discount", params: { off: 10 } } }, { target: "done" }],
        CANCEL: "open",
      },
    },
    done: { on: { RESET: { target: "open", actions: "clear" } } },
  },
});

/** The same implementations as data: JSONLogic over context, event and params. */
const implementations = {
  guards: {
    above: { ">": [{ var: "event.payload.amount" }, { var: "params.min" }] },
    hasLines: { ">": [{ var: "context.lines" }, 0] },
    isVip: { ">=": [{ var: "context.total" }, 100] },
  },
  actions: {
    addLine: [{ assign: { total: { "+": [{ var: "context.total" }, { var: "event.payload.amount" }] }, lines: { "+": [{ var: "context.lines" }, 1] } } }],
    note: [{ assign: { log: { merge: [{ var: "context.log" }, [{ var: "params.what" }]] } } }],
    clear: [{ assign: { total: 0, lines: 0 } }],
    discount: [{ assign: { total: { "-": [{ var: "context.total" }, { var: "params.off" }] } } }],
  },
};

const TYPES = ["ADD", "ADD", "ADD", "CLEAR", "CHECKOUT", "PAID", "CANCEL", "RESET"];

function stream(seed, length) {
  const r = rng(seed);
  return Array.from({ length }, () => {
    const type = r.pick(TYPES);
    return type === "ADD" ? { type, amount: r.int(0, 80) } : { type };
  });
}

test("an imported machine keeps its names and lists what it needs", () => {
  const imported = importXState(JSON.stringify(cart.config));
  assert.deepEqual(imported.needs, { guards: ["above", "hasLines", "isVip"], actions: ["addLine", "clear", "discount", "note"] });
  const add = imported.definition.states.open.on.ADD;
  assert.deepEqual(add[0].guard, { type: "above", params: { min: 50 } });
  assert.deepEqual(add[0].actions, ["addLine", { type: "note", params: { what: "big" } }]);
  // Without implementations, the names are refused on load, every one listed.
  const { implementations: _standIns, ...bare } = imported.definition;
  assert.throws(() => new Machine(bare), (e) => e instanceof Error && e.code === "unimplemented" && /guard "above"/.test(e.message) && /action "discount"/.test(e.message));
});

test("with its implementations as data, idem agrees with XState after every event of random streams", () => {
  const { definition } = importXState(JSON.stringify(cart.config));
  const machine = new Machine({ ...definition, implementations });
  const CASES = 200;
  let applied = 0;
  for (let c = 0; c < CASES; c++) {
    const events = stream(caseSeed(7, c), 25);
    const actor = createActor(cart).start();
    let snapshot = null;
    events.forEach((e, i) => {
      actor.send(e);
      const { type, ...payload } = e;
      const out = machine.reduce(snapshot, { id: `e${i}`, type, payload }, 1_000 + i, `cart-${c}`);
      assert.notEqual(out.status, "rejected", `case ${c} event ${i}: ${JSON.stringify(out.error)}`);
      if (out.changed) snapshot = out.snapshot;
      if (out.status === "applied") applied++;
      const ours = { value: out.state, context: snapshot === null ? null : machine.inspect(snapshot).context };
      const theirs = actor.getSnapshot();
      // Before idem's first write, XState has run only the initial entry: compare from there.
      if (snapshot === null) return;
      assert.deepEqual(ours, { value: theirs.value, context: theirs.context }, `case ${c} after event ${i} ${JSON.stringify(e)}`);
    });
    actor.stop();
  }
  // Not vacuous: most events were taken.
  assert.ok(applied > CASES * 10, `only ${applied} events applied`);
});
