// Regenerates the XState corpus: real XState v5 machines, written out in the
// JSON form an XState user has (`JSON.stringify(machine.config)`).
// Run from the repository root: node tests/analysis/xstate/make.mjs
import { writeFileSync } from "node:fs";
import { assign, setup } from "xstate";

const here = new URL(".", import.meta.url);
const write = (name, machine) =>
  writeFileSync(new URL(name, here), JSON.stringify(machine.config, null, 2) + "\n");

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
