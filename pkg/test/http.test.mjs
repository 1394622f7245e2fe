// The HTTP mapping with the memory store: one test per row of the status table.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Machine } from "../src/node.js";
import { createHttpApi, DEFAULT_MAX_BODY_BYTES } from "../src/http.js";
import { MemoryStore } from "../src/stores/memory.js";
import { fixture } from "./helpers.mjs";

function setup(options = {}) {
  const store = options.store ?? new MemoryStore();
  const machine = new Machine(options.definition ?? fixture("checkout.json"));
  const api = createHttpApi({ machine, store, basePath: "/api", ...options.api });
  const post = (pid, key, body, headers = {}) =>
    api.handle(
      new Request(`http://x/api/processes/${pid}/events`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(key === null ? {} : { "idempotency-key": key }), ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      }),
    );
  const get = (path) => api.handle(new Request(`http://x/api${path}`));
  return { store, machine, api, post, get };
}
const pay = (paymentId, amount = 10) => ({ type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });
const isProblem = (res) => assert.equal(res.headers.get("content-type"), "application/problem+json");

test("applied creating the process -> 201 with Location; later applied -> 200", async () => {
  const { post } = setup();
  const a = await post("o1", "k1", pay("p1"));
  assert.equal(a.status, 201);
  assert.equal(a.headers.get("location"), "/api/processes/o1");
  assert.deepEqual(await a.json(), { processId: "o1", eventId: "k1", status: "applied", revision: 1, response: "recorded p1" });
  const b = await post("o1", "k2", pay("p2"));
  assert.equal(b.status, 200);
  assert.equal((await b.json()).revision, 2);
  assert.equal(b.headers.get("idempotency-replayed"), null);
});

test("duplicate -> the first status and body, byte for byte, marked as a replay", async () => {
  const { post, store } = setup();
  const first = await post("o1", "k1", pay("p1"));
  const firstBody = await first.text();
  await post("o1", "k2", pay("p2"));
  const writes = store.writes;
  const again = await post("o1", "k1", pay("p1"));
  assert.equal(again.status, first.status);
  assert.equal(await again.text(), firstBody);
  assert.equal(again.headers.get("idempotency-replayed"), "true");
  assert.equal(again.headers.get("location"), first.headers.get("location"));
  assert.equal(store.writes, writes);
  // The key may also be sent as a structured-field string.
  const quoted = await post("o1", '"k1"', pay("p1"));
  assert.equal(await quoted.text(), firstBody);
});

test("missing Idempotency-Key -> 400 missing_idempotency_key", async () => {
  const { post } = setup();
  const res = await post("o1", null, pay("p1"));
  assert.equal(res.status, 400);
  isProblem(res);
  assert.equal((await res.json()).code, "missing_idempotency_key");
});

test("malformed Idempotency-Key or process id -> 400", async () => {
  const { post } = setup();
  for (const key of ["", "a b", "has/slash", "x".repeat(129), "o1/c1:0#1:started"]) {
    const res = await post("o1", key, pay("p1"));
    assert.equal(res.status, 400, key);
    assert.equal((await res.json()).code, "invalid_idempotency_key");
  }
  const res = await post("-bad", "k1", pay("p1"));
  assert.equal(res.status, 400);
  assert.equal((await res.json()).code, "invalid_process_id");
});

test("key reused with a different payload -> 422 id_conflict", async () => {
  const { post } = setup();
  await post("o1", "k1", pay("p1", 10));
  const res = await post("o1", "k1", pay("p1", 99));
  assert.equal(res.status, 422);
  isProblem(res);
  const body = await res.json();
  assert.equal(body.code, "id_conflict");
  assert.equal(body.eventId, "k1");
});

test("ignored (the state does not accept the event) -> 409 event_not_accepted, nothing recorded", async () => {
  const { post, store } = setup();
  await post("o1", "k1", pay("p1"));
  const res = await post("o1", "k2", { type: "SHIP" });
  assert.equal(res.status, 409);
  assert.equal(res.headers.get("idem-outcome"), "ignored");
  assert.equal((await res.json()).code, "event_not_accepted");
  assert.equal(store.writes, 1);
});

test("a machine that records ignored ids replays the first 409 as a replay", async () => {
  const def = fixture("checkout.json");
  def.recordIgnored = true;
  const { post, store } = setup({ definition: def });
  await post("o1", "k1", pay("p1"));
  const first = await post("o1", "k2", { type: "SHIP" });
  assert.equal(first.status, 409);
  assert.equal(store.writes, 2, "the ignored id was recorded");
  const again = await post("o1", "k2", { type: "SHIP" });
  assert.equal(again.status, 409);
  assert.equal(again.headers.get("idempotency-replayed"), "true");
  assert.equal(await again.text(), await first.text());
});

test("rejected -> 400 / 413 / 422 by code", async () => {
  const { post } = setup();
  const unknown = await post("o1", "k1", { type: "NOPE" });
  assert.equal(unknown.status, 422);
  assert.equal((await unknown.json()).code, "unknown_event_type");
  const noType = await post("o1", "k2", { payload: {} });
  assert.equal(noType.status, 400);
  assert.equal((await noType.json()).code, "missing_event_type");
  const extra = await post("o1", "k3", { type: "SHIP", bogus: 1 });
  assert.equal(extra.status, 400);
  assert.equal((await extra.json()).code, "invalid_event");
  const big = await post("o1", "k4", { type: "PAYMENT_PARTIAL", payload: { paymentId: "p", pad: "x".repeat(64 * 1024) } });
  assert.equal(big.status, 413);
  assert.equal((await big.json()).code, "payload_too_large");
  const notJson = await post("o1", "k5", "{");
  assert.equal(notJson.status, 400);
  assert.equal((await notJson.json()).code, "invalid_json");
});

test("client events the engine reserves -> 422 reserved_event_type", async () => {
  const { post } = setup();
  for (const type of ["idem.effect.succeeded", "charge.succeeded", "charge.failed"]) {
    const res = await post("o1", "k1", { type, payload: { key: "x" } });
    assert.equal(res.status, 422, type);
    assert.equal((await res.json()).code, "reserved_event_type");
  }
});

test("body over the limit -> 413 request_too_large; wrong media type -> 415", async () => {
  const { post } = setup();
  const res = await post("o1", "k1", JSON.stringify({ type: "SHIP", payload: { pad: "x".repeat(DEFAULT_MAX_BODY_BYTES) } }));
  assert.equal(res.status, 413);
  assert.equal((await res.json()).code, "request_too_large");
  const text = await post("o1", "k2", "hello", { "content-type": "text/plain" });
  assert.equal(text.status, 415);
});

test("contention outlasting the retries -> 409 contention with Retry-After", async () => {
  const inner = new MemoryStore();
  const store = { load: (id) => inner.load(id), commit: async () => ({ ok: false, conflict: true }) };
  const { post } = setup({ store, api: { maxRetries: 2, backoff: () => 0 } });
  const res = await post("o1", "k1", pay("p1"));
  assert.equal(res.status, 409);
  assert.equal(res.headers.get("retry-after"), "1");
  assert.equal((await res.json()).code, "contention");
});

test("GET process, GET events, GET the API description, 404 and 405", async () => {
  const { post, get, api } = setup();
  await post("o1", "k1", pay("p1"));
  await post("o1", "k2", pay("p2"));
  const p = await get("/processes/o1");
  assert.equal(p.status, 200);
  const view = await p.json();
  assert.equal(view.value, "cart");
  assert.deepEqual(view.context.payments, ["p1", "p2"]);
  const ev = await (await get("/processes/o1/events")).json();
  assert.deepEqual(ev.events.map((e) => [e.eventId, e.revision, e.status]), [["k1", 1, "applied"], ["k2", 2, "applied"]]);
  const page = await (await get("/processes/o1/events?after=1&limit=1")).json();
  assert.deepEqual(page.events.map((e) => e.eventId), ["k2"]);
  assert.equal((await get("/processes/nobody")).status, 404);
  assert.equal((await get("/processes/nobody/events")).status, 404);
  const d = await (await get("/")).json();
  assert.equal(d.idempotency.windowMs, 86400000);
  assert.equal(d.machine.id, "checkout");
  const del = await api.handle(new Request("http://x/api/processes/o1", { method: "DELETE" }));
  assert.equal(del.status, 405);
});

test("afterCommit runs after the commit, handed to waitUntil; never for duplicates", async () => {
  const calls = [];
  const waited = [];
  const store = new MemoryStore();
  const machine = new Machine(fixture("checkout.json"));
  const api = createHttpApi({
    machine,
    store,
    afterCommit: async (pid, out) => calls.push([pid, out.status, (await store.load(pid)).version]),
  });
  const req = () =>
    new Request("http://x/processes/o1/events", {
      method: "POST",
      headers: { "idempotency-key": "k1", "content-type": "application/json" },
      body: JSON.stringify({ type: "CHECKOUT", payload: { amount: 5 } }),
    });
  await api.handle(req(), { waitUntil: (p) => waited.push(p) });
  await api.handle(req(), { waitUntil: (p) => waited.push(p) });
  await Promise.all(waited);
  assert.deepEqual(calls, [["o1", "applied", 1]]);
});
