// Typed definitions: a definition written `as const` gives
// the events it accepts, each with the payload its `events` schema describes, and its context;
// `tsc -p tests/types` checks this file (never run). Each `@ts-expect-error` asserts a refusal.
import { Machine, type ContextOf, type Event, type EventOf, type EventTypeOf, type InternalEvent, type Json } from "idem";
import { apply } from "idem/host";
import { dispatch } from "idem/dispatch";
import { createHttpApi } from "idem/http";
import { MemoryStore } from "idem/stores/memory";

const order = {
  id: "order",
  initial: "pending",
  context: { total: 100, paid: 0, payments: [], owner: { name: "ann", vip: false } },
  events: {
    PAY: {
      payload: {
        type: "object",
        properties: { paymentId: { type: "string" }, amount: { type: "number" }, note: { type: "string" } },
        required: ["paymentId", "amount"],
        additionalProperties: false,
      },
    },
    REFUND: { payload: { type: ["object", "null"], properties: { reason: { type: "string" } } } },
    // Declared, handled by no state yet: accepted (the engine ignores it).
    PING: { description: "liveness" },
  },
  on: { CANCEL: ".cancelled" },
  states: {
    pending: {
      on: { PAY: { actions: [{ assign: { paid: { "+": [{ var: "context.paid" }, { var: "event.payload.amount" }] } } }] } },
      initial: "open",
      states: { open: { on: { NOTE: "open", "xstate.done.state.order.pending": "open" } } },
    },
    cancelled: {
      entry: [{ effect: { type: "refund", payload: { var: "context.paid" } } }],
      on: { REFUND: "cancelled", "refund.succeeded": "cancelled", "refund.failed": { guard: "mayRetry", target: "cancelled" } },
    },
  },
} as const;

// The event types: every `on` key at any depth and every declared type, internal ones apart.
type Types = EventTypeOf<typeof order>;
const types: Types[] = ["PAY", "REFUND", "PING", "CANCEL", "NOTE"];
// @ts-expect-error xstate.* is an internal event, not one of the definition's own types
const internal: Types = "xstate.done.state.order.pending";
// @ts-expect-error not a type the definition names
const unnamed: Types = "SHIP";
// @ts-expect-error an effect's outcome is raised by the outbox, never sent (reserved_event)
const outcome: Types = "refund.succeeded";

const machine = new Machine(order);
const now = Date.now();

// Accepted: the payload its schema describes; an optional payload may be left out.
machine.reduce(null, { id: "p1", type: "PAY", payload: { paymentId: "x", amount: 40 } }, now, "o1");
machine.reduce(null, { id: "p2", type: "PAY", payload: { paymentId: "x", amount: 40, note: "half" } }, now, "o1");
machine.reduce(null, { id: "r1", type: "REFUND" }, now, "o1");
machine.reduce(null, { id: "r2", type: "REFUND", payload: { reason: "late" } }, now, "o1");
machine.reduce(null, { id: "r3", type: "REFUND", payload: null }, now, "o1");
machine.reduce(null, { id: "c1", type: "CANCEL" }, now, "o1");
machine.reduce(null, { id: "c2", type: "CANCEL", payload: { any: ["json"] } }, now, "o1");
machine.reduce(null, { id: "n1", type: "PING" }, now, "o1");
// JSON text is read by the engine, unchecked here.
machine.reduce(null, '{"id":"t1","type":"PAYY"}', now, "o1");
// Internal events (a timer, an effect report) as the hosts hand them back.
const timer: InternalEvent = { id: "idem:t", type: "idem.after" };
machine.reduce(null, timer, now, "o1");

// Refused at compile time.
// @ts-expect-error a misspelt event type
machine.reduce(null, { id: "p3", type: "PAYY", payload: { paymentId: "x", amount: 40 } }, now, "o1");
// @ts-expect-error a required payload field is missing
machine.reduce(null, { id: "p4", type: "PAY", payload: { paymentId: "x" } }, now, "o1");
// @ts-expect-error the payload is required (its schema is an object, so a missing payload is refused)
machine.reduce(null, { id: "p5", type: "PAY" }, now, "o1");
// @ts-expect-error a field of the wrong type
machine.reduce(null, { id: "p6", type: "PAY", payload: { paymentId: "x", amount: "40" } }, now, "o1");
// @ts-expect-error a field the schema does not allow (additionalProperties: false)
machine.reduce(null, { id: "p7", type: "PAY", payload: { paymentId: "x", amount: 40, extra: 1 } }, now, "o1");
// @ts-expect-error an untyped Event: its type could be anything
machine.reduce(null, { id: "e", type: "PAY" } as Event, now, "o1");
// @ts-expect-error event ids stay strings
machine.reduce(null, { id: 7, type: "CANCEL" }, now, "o1");
// @ts-expect-error an effect's outcome is the outbox's to raise
machine.reduce(null, { id: "o1", type: "refund.failed", payload: null }, now, "o1");
// @ts-expect-error reduceBytes takes the same events
machine.reduceBytes(null, { id: "b1", type: "SHIPP" }, now, "o1");

// The event union narrows on `type`.
function amountOf(event: EventOf<typeof order>): number {
  switch (event.type) {
    case "PAY":
      return event.payload.amount;
    case "REFUND":
      return event.payload === undefined || event.payload === null ? 0 : -1;
    default:
      return 0;
  }
}

// The context, its literals widened.
type Context = ContextOf<typeof order>;
const context: Context = { total: 1, paid: 2, payments: [{ id: "p1" }], owner: { name: "bo", vip: true } };
// @ts-expect-error the context's fields keep their types (paid is a number)
const badContext: Context = { total: 1, paid: "2", payments: [], owner: { name: "bo", vip: true } };

// apply takes the machine's own events; dispatch and the HTTP API take a typed machine as any other.
const store = new MemoryStore();
await apply(store, machine, "o1", { id: "p8", type: "PAY", payload: { paymentId: "y", amount: 60 } });
// @ts-expect-error apply refuses a misspelt event type for a typed machine
await apply(store, machine, "o1", { id: "p9", type: "PAYY", payload: { paymentId: "y", amount: 60 } });
// @ts-expect-error apply refuses a payload missing a required field
await apply(store, machine, "o1", { id: "p10", type: "PAY", payload: { amount: 60 } });
await dispatch(store, machine, "o1", {});
const api = createHttpApi({ machine, store, afterCommit: null });

// The implementations' arguments are typed by the definition.
const implemented = new Machine(order, {
  guards: {
    isBig: ({ context, event }) => context.paid > 100 && event.type === "PAY" && event.payload.amount > 10,
    // An effect's outcome reaches the guards of the transitions that handle it.
    mayRetry: ({ event }) => event.type === "refund.failed" && event.payload !== null,
    // @ts-expect-error context has no field `unpaid`
    misspelt: ({ context }) => context.unpaid > 0,
  },
  actions: {
    addPaid: ({ context, event }) => (event.type === "PAY" ? { paid: context.paid + event.payload.amount } : {}),
    asData: ({ params }) => [{ respond: params ?? null }],
    // @ts-expect-error a context patch keeps the fields' types
    wrongPatch: () => ({ paid: "all" }),
  },
  delays: { retryDelay: ({ context }) => context.total * 10 },
});

// Data and functions mix, as in the definition's `implementations`.
new Machine(order, {
  guards: { isBig: { ">": [{ var: "context.paid" }, 100] }, mayRetry: ({ context }) => context.paid > 0 },
  actions: { addPaid: [{ assign: { paid: 0 } }], asData: ({ context }) => ({ paid: context.total }) },
  delays: { retryDelay: 1000 },
});
// @ts-expect-error an action given as data is a list of idem actions
new Machine(order, { actions: { addPaid: { assign: { paid: 0 } } } });

// A definition written inline without `as const` is not narrowed (as before: its id widens to
// string), so code written for untyped machines keeps compiling.
const inline = new Machine({ id: "toggle", initial: "off", states: { off: { on: { TOGGLE: "on" } }, on: { on: { TOGGLE: "off" } } } });
const anyEvent: Event = { id: "t1", type: "TOGGEL" };
inline.reduce(null, anyEvent, now, "t");
// The same inline, `as const`: narrowed.
const toggle = new Machine({ id: "toggle", initial: "off", states: { off: { on: { TOGGLE: "on" } }, on: { on: { TOGGLE: "off" } } } } as const);
toggle.reduce(null, { id: "t2", type: "TOGGLE" }, now, "t");
// @ts-expect-error a misspelt event type for an `as const` inline definition
toggle.reduce(null, { id: "t3", type: "TOGGEL" }, now, "t");

// Untyped definitions take any Event, as before: a parsed JSON value, a plain object, a JSON text.
const parsed = new Machine(JSON.parse('{"id":"m","initial":"a","states":{"a":{}}}'));
parsed.reduce(null, { id: "u1", type: "ANYTHING", payload: { x: 1 } }, now, "u");
const widened: { id: string; initial: string; states: { [k: string]: object } } = { id: "m", initial: "a", states: { a: {} } };
new Machine(widened).reduce(null, { id: "u2", type: "WHATEVER" }, now, "u");
const text = new Machine('{"id":"m","initial":"a","states":{"a":{}}}');
text.reduce(null, { id: "u3", type: "ANY" } as Event, now, "u");
const wideContext: ContextOf<typeof widened> = { anything: [1, "two"] };
const wideEvent: EventOf<Json> = { id: "u4", type: "X", payload: null };
// @ts-expect-error untyped machines still want JSON payloads
parsed.reduce(null, { id: "u5", type: "X", payload: { f: () => 1 } }, now, "u");
// A typed machine is still a Machine.
const plain: Machine = machine;

export const usedTyped = [types, internal, unnamed, outcome, amountOf, context, badContext, api, implemented, wideContext, wideEvent, plain];
