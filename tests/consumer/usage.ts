// A TypeScript program as a user writes it against the installed package: the README's
// quick example, then each subpath. tests/consumer/consumer.test.mjs copies it into a fresh
// project and runs `tsc --strict --noEmit` with `module: nodenext` (never run, only checked).
// Each `@ts-expect-error` asserts that the types refuse a mistake: a declaration that grew
// loose enough to accept it (or an import without types, which is `any`) fails the check.
import { Machine, newEventId, type Event, type Json, type Outcome, type Store } from "idem";
import { apply, ContentionError, DEFAULT_MAX_RETRIES, EventText, type AppliedOutcome } from "idem/host";
import { dispatch, retryable, TimeoutError, type DispatchReport, type Handler } from "idem/dispatch";
import { createHttpApi, parseIdempotencyKey, refuseOversized, DEFAULT_BODY_TIMEOUT_MS, REPLAY_HEADER, type HttpApi } from "idem/http";
import { MemoryStore } from "idem/stores/memory";
import { D1Store, StoreCorruptError, type D1DatabaseLike } from "idem/stores/d1";
import { KVStore, type KVNamespaceLike } from "idem/stores/kv";
import { DurableObjectStore, StoreLimitError, MAX_CHUNKS, type DurableObjectStorageLike } from "idem/stores/durable";
import { DenoKvStore, DenoKvQueue, type DenoKvLike } from "idem/stores/denokv";
import { openIndexedDBStore, type IndexedDBStore } from "idem/stores/indexeddb";
import { FakeGateway, gatewayEffects, GatewayError } from "idem/testing/fake-gateway";

const order = new Machine({
  id: "order",
  initial: "pending",
  context: { total: 100, paid: 0, payments: [] },
  states: {
    pending: {
      on: {
        PAY: {
          guard: { "!": { in: [{ var: "event.payload.paymentId" }, { var: "context.payments" }] } },
          actions: [
            { assign: { paid: { "+": [{ var: "context.paid" }, { var: "event.payload.amount" }] } } },
            { respond: { cat: ["received ", { var: "event.payload.amount" }] } },
          ],
        },
      },
      always: [{ guard: { ">=": [{ var: "context.paid" }, { var: "context.total" }] }, target: "paid" }],
    },
    paid: { entry: [{ effect: { type: "ship", payload: { var: "context.payments" } } }] },
  },
});

const pay: Event = { id: "pay-1", type: "PAY", payload: { paymentId: "p1", amount: 60 } };
const first: Outcome = order.reduce(null, pay, Date.now(), "order-42");
const response: Json = first.response;
// @ts-expect-error the snapshot is null for a process that does not exist: check `changed` first
const mustCheck: string = first.snapshot;
// @ts-expect-error an event needs an id
const noId: Event = { type: "PAY" };
// @ts-expect-error a reduce needs its process id (the engine throws `missing_process_id` without one)
order.reduce(null, pay, Date.now());

const store = new MemoryStore();
const paid: AppliedOutcome = await apply(store, order, "order-42", { id: newEventId(), type: "PAY", payload: { paymentId: "p2", amount: 40 } });
// @ts-expect-error a process id is a string
await apply(store, order, 42, pay);
const retries: 16 = DEFAULT_MAX_RETRIES;
const lost: boolean = new Error("x") instanceof ContentionError;
// An event as the JSON text a request carried: the engine reads the text itself.
const asSent: AppliedOutcome = await apply(store, order, "order-42", new EventText("pay-3", "PAY", '{"id":"pay-3","type":"PAY","payload":{"paymentId":"p3","amount":1.50}}'));

// Effects: handlers by effect type, each given the effect's idempotency key.
const ship: Handler = async (payload, { key }) => ({ shipped: payload, key });
const report: DispatchReport = await dispatch(store, order, "order-42", { handlers: { ship }, timeoutMs: 5_000 });
// @ts-expect-error an option the dispatcher does not have
await dispatch(store, order, "order-42", { handler: { ship } });
const transient = retryable(new TimeoutError(10));

// HTTP.
const api: HttpApi = createHttpApi({ machine: order, store, basePath: "/api", afterCommit: (id) => dispatch(store, order, id, { handlers: { ship } }) });
const quiet: HttpApi = createHttpApi({ machine: order, store, afterCommit: null, onWarning: (message: string) => void message });
const strict: HttpApi = createHttpApi({ machine: order, store, afterCommit: null, bodyTimeoutMs: 2 * DEFAULT_BODY_TIMEOUT_MS, maxUrlBytes: 4096, maxHeaderBytes: 8192 });
const refused: Response | null = refuseOversized(new Request("http://x/static/app.js"), { maxUrlBytes: 4096 });
const reply: Response = await api.handle(new Request("http://x/api/"), { waitUntil: (p) => void p });
// @ts-expect-error createHttpApi needs a store
createHttpApi({ machine: order });
const key = parseIdempotencyKey("pay-1");
const replayed: "Idempotency-Replayed" = REPLAY_HEADER;

// The stores take what their platform hands over, typed by the parts they use.
declare const db: D1DatabaseLike;
declare const kvNamespace: KVNamespaceLike;
declare const storage: DurableObjectStorageLike;
declare const denoKv: DenoKvLike;
const stores: Store[] = [new D1Store(db), new KVStore(kvNamespace, { singleWriter: true }), new DurableObjectStore(storage, "order-42"), new DenoKvStore(denoKv, { machine: order, queue: true })];
const due: Promise<string[]> = new D1Store(db).due(Date.now());
// @ts-expect-error a D1 binding, not a connection string
new D1Store("sqlite://orders");
const queue = new DenoKvQueue(denoKv, { store: stores[3]!, machineFor: () => order });
const browser: IndexedDBStore = await openIndexedDBStore({ name: "orders" });
const errors: Array<"snapshot_corrupt" | "snapshot_too_large"> = [new StoreCorruptError().code, new StoreLimitError().code];
const chunks: 125 = MAX_CHUNKS;

// Testing effects under faults.
const gateway = new FakeGateway({ idempotent: true }).failNext("timeout");
const { handlers } = gatewayEffects(gateway, "charge");
const declined = new GatewayError(402, "card_declined", "declined");

export const used = [response, mustCheck, noId, paid, retries, lost, asSent, report, transient, quiet, strict, refused, reply, key, replayed, due, queue, browser, errors, chunks, handlers, declined];
