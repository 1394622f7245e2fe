// Section 2c of benches/run.mjs: what a parallel state costs per event. The same order
// written two ways, each run by idem (its JSON definition) and by XState 5 (the same
// machine with functions for guards and assigns), with the dedup ledger of section 2:
//
//   flat:        collecting → paid → packed → shipped, one state at a time;
//   two regions: open = payment (collecting → paid) ∥ fulfilment (packing → packed →
//                shipped, SHIP only while payment is in paid: `in_state` / `stateIn`),
//                and when both regions are final the parallel state's onDone → complete.
//
// Both take the same four events, each a serverless round trip from the stored text the
// previous one left (payment p1, payment p2 reaching the total and emitting `charge`,
// PACKED, SHIP emitting `ship`), after a first event that creates the process; one timed
// call is the four, so its figure divided by four is a cost per event.
import { assign, createMachine, initialTransition, stateIn, transition } from "xstate";

const notIn = { "!": { in: [{ var: "event.payload.paymentId" }, { var: "context.payments" }] } };
const record = [
  { assign: {
      payments: { merge: [{ var: "context.payments" }, [{ var: "event.payload.paymentId" }]] },
      paid: { "+": [{ var: "context.paid" }, { var: "event.payload.amount" }] },
  } },
  { respond: { cat: ["recorded ", { var: "event.payload.paymentId" }] } },
];
const reached = { ">=": [{ var: "context.paid" }, { var: "context.total" }] };
const charge = { effect: { type: "charge", payload: { amount: { var: "context.paid" }, currency: "eur" } } };
const ship = { effect: { type: "ship", payload: { eachKey: { payments: { var: "context.payments" } } } } };
const context = { total: 100, paid: 0, payments: [] };

/** idem's definitions (JSON), by machine. */
export const definitions = {
  flat: {
    id: "order",
    initial: "collecting",
    context,
    states: {
      collecting: { on: { PAYMENT_PARTIAL: [{ guard: notIn, actions: record }] }, always: [{ guard: reached, target: "paid" }] },
      paid: { entry: [charge], on: { PACKED: "packed" } },
      packed: { on: { SHIP: "shipped" } },
      shipped: { type: "final", entry: [ship] },
    },
  },
  parallel: {
    id: "order",
    initial: "open",
    context,
    states: {
      open: {
        type: "parallel",
        states: {
          payment: {
            initial: "collecting",
            states: {
              collecting: { on: { PAYMENT_PARTIAL: [{ guard: notIn, actions: record }] }, always: [{ guard: reached, target: "paid" }] },
              paid: { type: "final", entry: [charge] },
            },
          },
          fulfilment: {
            initial: "packing",
            states: {
              packing: { on: { PACKED: "packed" } },
              packed: { on: { SHIP: [{ guard: { in_state: "#order.open.payment.paid" }, target: "shipped" }] } },
              shipped: { type: "final", entry: [ship] },
            },
          },
        },
        onDone: "complete",
      },
      complete: { type: "final" },
    },
  },
};

// ---- XState: the same machines ------------------------------------------------------
const xsPay = {
  guard: ({ context, event }) => !context.payments.includes(event.payload.paymentId),
  actions: assign({
    payments: ({ context, event }) => [...context.payments, event.payload.paymentId],
    paid: ({ context, event }) => context.paid + event.payload.amount,
  }),
};
const xsReached = ({ context }) => context.paid >= context.total;
const xsCharge = { type: "charge", params: ({ context }) => ({ amount: context.paid, currency: "eur" }) };
const xsShip = { type: "ship", params: ({ context }) => ({ payments: context.payments }) };

export const xstateMachines = {
  flat: createMachine({
    id: "order",
    initial: "collecting",
    context,
    states: {
      collecting: { on: { PAYMENT_PARTIAL: xsPay }, always: { guard: xsReached, target: "paid" } },
      paid: { entry: xsCharge, on: { PACKED: "packed" } },
      packed: { on: { SHIP: "shipped" } },
      shipped: { type: "final", entry: xsShip },
    },
  }),
  parallel: createMachine({
    id: "order",
    initial: "open",
    context,
    states: {
      open: {
        type: "parallel",
        states: {
          payment: {
            initial: "collecting",
            states: {
              collecting: { on: { PAYMENT_PARTIAL: xsPay }, always: { guard: xsReached, target: "paid" } },
              paid: { type: "final", entry: xsCharge },
            },
          },
          fulfilment: {
            initial: "packing",
            states: {
              packing: { on: { PACKED: "packed" } },
              packed: { on: { SHIP: { guard: stateIn("#order.open.payment.paid"), target: "shipped" } } },
              shipped: { type: "final", entry: xsShip },
            },
          },
        },
        onDone: "complete",
      },
      complete: { type: "final" },
    },
  }),
};

// ---- the script ----------------------------------------------------------------------
const id = (i) => `01JBENCHPARALLEL${String(i).padStart(10, "0")}`;
const pay = (i, paymentId, amount) => ({ id: id(i), type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });
/** The event that creates the process (not timed: a process's first event starts it). */
export const opening = pay(0, "p0", 0);
/** The four events both machines apply after it, in order. */
export const script = [pay(1, "p1", 60), pay(2, "p2", 40), { id: id(3), type: "PACKED", payload: {} }, { id: id(4), type: "SHIP", payload: {} }];

// The response idem freezes: `respond` for payments, else { state, revision }.
const responseFor = (event, value, revision) =>
  event.type === "PAYMENT_PARTIAL" ? `recorded ${event.payload.paymentId}` : { state: value, revision };
const EFFECTS = new Set(["charge", "ship"]);

/** XState's serverless round trip on `machine` (as peers.xstateRoundTrip on the bench order). */
export function xstateRoundTrip(machine, stored, event) {
  const rec = JSON.parse(stored);
  if (Object.hasOwn(rec.ledger, event.id)) {
    return { status: "duplicate", changed: false, response: rec.ledger[event.id], snapshot: stored };
  }
  const snap = machine.resolveState({ value: rec.snapshot.value, context: rec.snapshot.context });
  const [next, actions] = transition(machine, snap, event);
  if (next === snap) {
    return { status: "ignored", changed: false, response: null, snapshot: stored };
  }
  rec.revision += 1;
  const response = responseFor(event, next.value, rec.revision);
  rec.snapshot = machine.getPersistedSnapshot(next);
  rec.ledger[event.id] = response;
  const effects = actions.filter((a) => EFFECTS.has(a.type)).map((a) => ({ type: a.type, payload: a.params }));
  return { status: "applied", changed: true, response, effects, snapshot: JSON.stringify(rec) };
}

export const xstateInitialText = (machine) =>
  JSON.stringify({ snapshot: machine.getPersistedSnapshot(initialTransition(machine)[0]), revision: 0, ledger: {} });

export const xstateView = (stored) => {
  const rec = JSON.parse(stored);
  return { state: rec.snapshot.value, context: rec.snapshot.context, revision: rec.revision, ledger: Object.keys(rec.ledger).length };
};

/**
 * For each machine, the stored texts before each event of the script (idem's and XState's),
 * so every timed call starts from text, as a serverless host does.
 */
export function storedBefore(idemMachine, xsMachine, now, processId) {
  const idem = [idemMachine.reduce(null, opening, now, processId).snapshot];
  const xs = [xstateRoundTrip(xsMachine, xstateInitialText(xsMachine), opening).snapshot];
  for (const event of script.slice(0, -1)) {
    idem.push(idemMachine.reduce(idem[idem.length - 1], event, now, processId).snapshot);
    xs.push(xstateRoundTrip(xsMachine, xs[xs.length - 1], event).snapshot);
  }
  return { idem, xs };
}
