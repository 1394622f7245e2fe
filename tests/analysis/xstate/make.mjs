// Regenerates the XState corpus: real XState v5 machines, written out in the
// JSON form an XState user has (`JSON.stringify(machine.config)`).
// Run from the repository root: node tests/analysis/xstate/make.mjs
import { writeFileSync } from "node:fs";
import { assign, raise, setup, stateIn } from "xstate";

const here = new URL(".", import.meta.url);
const write = (name, machine, replacer = null) =>
  writeFileSync(new URL(name, here), JSON.stringify(machine.config, replacer, 2) + "\n");

// `raise(...)` and `stateIn(...)` are functions, which a plain JSON.stringify
// drops; this replacer writes out the members that say what they do.
const builtins = (_key, v) => {
  if (typeof v !== "function") return v;
  if (v.type === "xstate.raise") return { type: v.type, event: v.event, delay: v.delay };
  if ("stateValue" in v) return { type: "xstate.stateIn", stateValue: v.stateValue };
  return undefined;
};

// Partial payments counted in a named action, a reminder re-run by a re-entering
// transition, a named delay, an inline assign (lost in JSON) and an invoked actor.
const checkout = setup({
  actions: {
    recordPayment: assign({ paid: ({ context, event }) => context.paid + event.amount }),
    sendReceipt: () => {},
    notifyShipping: () => {},
  },
  guards: { isPaidInFull: ({ context }) => context.paid >= context.total },
  delays: { shippingDeadline: 3 * 24 * 3600 * 1000 },
}).createMachine({
  id: "checkout",
  initial: "pending",
  context: { paid: 0, total: 100 },
  states: {
    pending: {
      on: {
        PAYMENT: { actions: ["recordPayment", { type: "sendReceipt", params: { channel: "email" } }] },
        CANCEL: "cancelled",
      },
      always: { guard: "isPaidInFull", target: "paid" },
    },
    paid: {
      entry: ["notifyShipping", assign({ notified: true })],
      on: {
        RETRY_NOTIFY: { target: "paid", reenter: true },
        SHIP: "shipped",
      },
      after: { shippingDeadline: "late", 60000: { target: "paid", reenter: true } },
    },
    late: { invoke: { src: "escalate" }, on: { SHIP: "shipped" } },
    shipped: { type: "final" },
    cancelled: { type: "final" },
  },
});
write("checkout.json", checkout);

// A safe one: every event leads somewhere that does not accept it again.
const signup = setup({
  actions: { createAccount: () => {}, sendWelcome: () => {} },
}).createMachine({
  id: "signup",
  initial: "form",
  states: {
    form: { on: { SUBMIT: { target: "verifying", actions: "createAccount" } } },
    verifying: { on: { VERIFIED: { target: "active", actions: "sendWelcome" }, EXPIRED: "expired" } },
    active: { type: "final" },
    expired: { type: "final" },
  },
});
write("signup.json", signup);

// Payment and fulfilment side by side (regions written payment first), a
// raised event between them, a stateIn guard, a deep history to come back
// from a hold, a transition with two targets and onDone.
const orderParallel = setup({
  actions: { notifyWarehouse: () => {} },
}).createMachine({
  id: "orderParallel",
  initial: "open",
  states: {
    open: {
      type: "parallel",
      states: {
        payment: {
          initial: "unpaid",
          states: {
            unpaid: { on: { PAY: { target: "paid", actions: raise({ type: "PAID", via: "card" }) } } },
            paid: { type: "final" },
          },
        },
        fulfilment: {
          initial: "waiting",
          states: {
            waiting: { on: { PAID: { target: "packing", actions: "notifyWarehouse" } } },
            packing: { on: { PACKED: "ready" } },
            ready: { on: { SHIP: { target: "shipped", guard: stateIn("#orderParallel.open.payment.paid") } } },
            shipped: { type: "final" },
          },
        },
        hist: { type: "history", history: "deep", target: "#orderParallel.open.payment.unpaid" },
      },
      on: { HOLD: "onHold" },
      onDone: "closed",
    },
    onHold: {
      on: {
        RELEASE: "#orderParallel.open.hist",
        RESET: { target: ["#orderParallel.open.payment.unpaid", "#orderParallel.open.fulfilment.waiting"] },
      },
    },
    closed: { type: "final" },
  },
});
write("order-parallel.json", orderParallel, builtins);
