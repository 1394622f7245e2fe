// The peers idem is measured against, with the same semantics as the bench
// machine (tests/machines/order.json plus NOTE, see benches/idem.rs):
//   - XState v5: the order machine, driven with the pure `transition()`, plus a
//     hand-written dedup ledger (event id -> frozen response);
//   - a hand-written plain JavaScript reducer with the same ledger.
// Both store one JSON text per process: { snapshot|state, revision, ledger }.
import { assign, createMachine, initialTransition, transition } from "xstate";

// ---- events (ids match benches/idem.rs, so the snapshots it emits line up) ----
export const T0 = 1_700_000_000_000;
export const NOW = T0 + 1_000_000;
export const noteId = (i) => `01JBENCHNOTE${String(i).padStart(14, "0")}`;
export const noteEvent = (i) => ({ id: noteId(i), type: "NOTE", payload: { n: i } });
export const freshEvent = () => ({
  id: "01JBENCHFRESH0000000000000",
  type: "PAYMENT_PARTIAL",
  payload: { paymentId: "q-1", amount: 1 },
});
export const dupIndex = (n) => Math.floor(n / 2);

// The response idem freezes for each event: `respond` for payments, else the default.
function responseFor(event, value, revision) {
  return event.type === "PAYMENT_PARTIAL" ? `recorded ${event.payload.paymentId}` : { state: value, revision };
}

// ---- XState -------------------------------------------------------------------
// A plain function of `assign`, so the cold-start child can inline its source.
export function orderConfig(assign) {
  return {
    id: "order",
    initial: "pending",
    context: { total: 100, paid: 0, payments: [], lastNote: null },
    states: {
      pending: {
        on: {
          PAYMENT_PARTIAL: {
            guard: ({ context, event }) => !context.payments.includes(event.payload.paymentId),
            actions: assign({
              payments: ({ context, event }) => [...context.payments, event.payload.paymentId],
              paid: ({ context, event }) => context.paid + event.payload.amount,
            }),
          },
          CANCEL: "cancelled",
          NOTE: { actions: assign({ lastNote: ({ event }) => event.payload.n }) },
        },
        always: { guard: ({ context }) => context.paid >= context.total, target: "paid" },
      },
      paid: {
        entry: { type: "ship", params: ({ context }) => ({ payments: context.payments }) },
        on: { SHIP: "shipped" },
      },
      shipped: { type: "final" },
      cancelled: { type: "final" },
    },
  };
}

export const xstateOrder = createMachine(orderConfig(assign));

const xstateEffects = (actions) =>
  actions.filter((a) => a.type === "ship").map((a) => ({ type: a.type, payload: a.params.payments }));

/** In memory: ledger Map + transition(); returns [nextSnapshot, outcome]. */
export function xstatePure(snap, ledger, revision, event) {
  const seen = ledger.get(event.id);
  if (seen !== undefined) return [snap, { status: "duplicate", response: seen }];
  const [next, actions] = transition(xstateOrder, snap, event);
  if (next === snap) return [snap, { status: "ignored", response: null }];
  const response = Object.freeze(responseFor(event, next.value, revision + 1));
  ledger.set(event.id, response);
  return [next, { status: "applied", response, effects: xstateEffects(actions) }];
}

export function xstateInitial() {
  return initialTransition(xstateOrder)[0];
}

/** Serverless round trip: stored JSON text in, outcome + JSON text out. */
export function xstateRoundTrip(stored, event) {
  const rec = JSON.parse(stored);
  if (Object.hasOwn(rec.ledger, event.id)) {
    return { status: "duplicate", changed: false, response: rec.ledger[event.id], snapshot: stored };
  }
  const snap = xstateOrder.resolveState({ value: rec.snapshot.value, context: rec.snapshot.context });
  const [next, actions] = transition(xstateOrder, snap, event);
  if (next === snap) return { status: "ignored", changed: false, response: null, snapshot: stored };
  rec.revision += 1;
  const response = responseFor(event, next.value, rec.revision);
  rec.snapshot = xstateOrder.getPersistedSnapshot(next);
  rec.ledger[event.id] = response;
  return { status: "applied", changed: true, response, effects: xstateEffects(actions), snapshot: JSON.stringify(rec) };
}

/** The stored text after applying `events` in order (built in memory, stringified once). */
export function xstateStored(events) {
  let snap = xstateInitial();
  const ledger = new Map();
  let revision = 0;
  for (const e of events) {
    const [next, out] = xstatePure(snap, ledger, revision, e);
    if (out.status === "applied") revision += 1;
    snap = next;
  }
  return JSON.stringify({
    snapshot: xstateOrder.getPersistedSnapshot(snap),
    revision,
    ledger: Object.fromEntries(ledger),
  });
}

export const xstateView = (stored) => {
  const rec = JSON.parse(stored);
  return { state: rec.snapshot.value, context: rec.snapshot.context, revision: rec.revision, ledger: Object.keys(rec.ledger).length };
};

// ---- hand-written reducer ----------------------------------------------------------
export const jsInitial = () => ({ value: "pending", context: { total: 100, paid: 0, payments: [], lastNote: null } });

/** Pure reducer: returns the same object when the event is ignored. Effects in `effects`. */
export function jsReduce(state, event, effects) {
  const ctx = state.context;
  switch (state.value) {
    case "pending":
      switch (event.type) {
        case "PAYMENT_PARTIAL": {
          const { paymentId, amount } = event.payload;
          if (ctx.payments.includes(paymentId)) return state;
          const context = { ...ctx, payments: [...ctx.payments, paymentId], paid: ctx.paid + amount };
          if (context.paid >= context.total) {
            effects.push({ type: "ship", payload: context.payments });
            return { value: "paid", context };
          }
          return { value: "pending", context };
        }
        case "NOTE":
          return { value: "pending", context: { ...ctx, lastNote: event.payload.n } };
        case "CANCEL":
          return { value: "cancelled", context: ctx };
      }
      return state;
    case "paid":
      return event.type === "SHIP" ? { value: "shipped", context: ctx } : state;
    default:
      return state;
  }
}

export function jsPure(state, ledger, revision, event) {
  const seen = ledger.get(event.id);
  if (seen !== undefined) return [state, { status: "duplicate", response: seen }];
  const effects = [];
  const next = jsReduce(state, event, effects);
  if (next === state) return [state, { status: "ignored", response: null }];
  const response = Object.freeze(responseFor(event, next.value, revision + 1));
  ledger.set(event.id, response);
  return [next, { status: "applied", response, effects }];
}

export function jsRoundTrip(stored, event) {
  const rec = JSON.parse(stored);
  if (Object.hasOwn(rec.ledger, event.id)) {
    return { status: "duplicate", changed: false, response: rec.ledger[event.id], snapshot: stored };
  }
  const effects = [];
  const next = jsReduce(rec.state, event, effects);
  if (next === rec.state) return { status: "ignored", changed: false, response: null, snapshot: stored };
  rec.revision += 1;
  const response = responseFor(event, next.value, rec.revision);
  rec.state = next;
  rec.ledger[event.id] = response;
  return { status: "applied", changed: true, response, effects, snapshot: JSON.stringify(rec) };
}

export function jsStored(events) {
  let state = jsInitial();
  const ledger = new Map();
  let revision = 0;
  for (const e of events) {
    const [next, out] = jsPure(state, ledger, revision, e);
    if (out.status === "applied") revision += 1;
    state = next;
  }
  return JSON.stringify({ state, revision, ledger: Object.fromEntries(ledger) });
}

export const jsView = (stored) => {
  const rec = JSON.parse(stored);
  return { state: rec.state.value, context: rec.state.context, revision: rec.revision, ledger: Object.keys(rec.ledger).length };
};

// ---- idem (wasm) -------------------------------------------------------------------
export const idemView = (machine, snapshot) => {
  const v = machine.inspect(snapshot);
  return { state: v.value, context: v.context, revision: v.revision, ledger: v.ledger.length };
};

export function noteEvents(n) {
  const out = new Array(n);
  for (let i = 0; i < n; i++) out[i] = noteEvent(i);
  return out;
}
