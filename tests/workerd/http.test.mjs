// The HTTP status-code table on real workerd (the D1 route), one test per row.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";

const pay = (paymentId, amount = 10) => ({ type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });
const isProblem = (res) => assert.equal(res.headers.get("content-type"), "application/problem+json");
let w;
let n = 0;
const fresh = () => `http-${++n}`;
before(async () => {
  w = await startWorker();
});
after(() => w?.close());

test("applied, creating the process -> 201 with Location and the frozen response", async () => {
  const pid = fresh();
  const res = await w.post(`/processes/${pid}/events`, "k1", pay("p1"));
  assert.equal(res.status, 201);
  assert.equal(res.headers.get("location"), `/processes/${pid}`);
  assert.equal(res.headers.get("content-type"), "application/json");
  assert.deepEqual(await res.json(), { processId: pid, eventId: "k1", status: "applied", revision: 1, response: "recorded p1" });
});

test("applied on an existing process -> 200", async () => {
  const pid = fresh();
  await w.post(`/processes/${pid}/events`, "k1", pay("p1"));
  const res = await w.post(`/processes/${pid}/events`, "k2", pay("p2"));
  assert.equal(res.status, 200);
  assert.equal((await res.json()).revision, 2);
});

test("duplicate -> the first status and body, byte for byte, with Idempotency-Replayed: true", async () => {
  const pid = fresh();
  const first = await w.post(`/processes/${pid}/events`, "k1", pay("p1"));
  const body = await first.text();
  await w.post(`/processes/${pid}/events`, "k2", pay("p2"));
  const again = await w.post(`/processes/${pid}/events`, "k1", pay("p1"));
  assert.equal(again.status, 201);
  assert.equal(again.headers.get("idempotency-replayed"), "true");
  assert.equal(await again.text(), body);
  assert.equal(first.headers.get("idempotency-replayed"), null);
});

test("missing Idempotency-Key -> 400 problem missing_idempotency_key", async () => {
  const res = await w.post(`/processes/${fresh()}/events`, null, pay("p1"));
  assert.equal(res.status, 400);
  isProblem(res);
  assert.equal((await res.json()).code, "missing_idempotency_key");
});

test("malformed Idempotency-Key -> 400 invalid_idempotency_key; malformed process id -> 400 invalid_process_id", async () => {
  const bad = await w.post(`/processes/${fresh()}/events`, "a/b#c", pay("p1"));
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).code, "invalid_idempotency_key");
  const pid = await w.post(`/processes/${"x".repeat(200)}/events`, "k1", pay("p1"));
  assert.equal(pid.status, 400);
  assert.equal((await pid.json()).code, "invalid_process_id");
});

test("key reused with a different payload -> 422 id_conflict", async () => {
  const pid = fresh();
  await w.post(`/processes/${pid}/events`, "k1", pay("p1", 10));
  const res = await w.post(`/processes/${pid}/events`, "k1", pay("p1", 11));
  assert.equal(res.status, 422);
  isProblem(res);
  assert.equal((await res.json()).code, "id_conflict");
});

test("ignored (not accepted in the current state) -> 409 event_not_accepted, nothing written", async () => {
  const pid = fresh();
  await w.post(`/processes/${pid}/events`, "k1", pay("p1"));
  const res = await w.post(`/processes/${pid}/events`, "k2", { type: "SHIP" });
  assert.equal(res.status, 409);
  isProblem(res);
  assert.equal((await res.json()).code, "event_not_accepted");
  const view = await (await w.fetch(`/processes/${pid}`)).json();
  assert.equal(view.revision, 1);
});

test("rejected: unknown event type -> 422, missing type -> 400, payload over the engine limit -> 413", async () => {
  const pid = fresh();
  const unknown = await w.post(`/processes/${pid}/events`, "k1", { type: "NOPE" });
  assert.equal(unknown.status, 422);
  assert.equal((await unknown.json()).code, "unknown_event_type");
  const noType = await w.post(`/processes/${pid}/events`, "k2", { payload: {} });
  assert.equal(noType.status, 400);
  assert.equal((await noType.json()).code, "missing_event_type");
  const big = await w.post(`/processes/${pid}/events`, "k3", { type: "PAYMENT_PARTIAL", payload: { paymentId: "p", pad: "x".repeat(64 * 1024) } });
  assert.equal(big.status, 413);
  assert.equal((await big.json()).code, "payload_too_large");
});

test("client events reserved to the engine -> 422 reserved_event_type", async () => {
  // An effect's outcome: refused by the engine (a rejected outcome, nothing written).
  const res = await w.post(`/processes/${fresh()}/events`, "k1", { type: "charge.succeeded", payload: {} });
  assert.equal(res.status, 422);
  assert.equal(res.headers.get("idem-outcome"), "rejected");
  assert.equal((await res.json()).code, "reserved_event_type");
  // The engine's own reports: refused by the host before the store is read.
  const report = await w.post(`/processes/${fresh()}/events`, "k2", { type: "idem.effect.unknown", payload: {} });
  assert.equal(report.status, 422);
  assert.equal((await report.json()).code, "reserved_event_type");
});

test("request body over the limit -> 413 request_too_large; not JSON -> 415 / 400", async () => {
  const pid = fresh();
  const huge = await w.post(`/processes/${pid}/events`, "k1", JSON.stringify({ type: "SHIP", pad: "x".repeat(100 * 1024) }));
  assert.equal(huge.status, 413);
  assert.equal((await huge.json()).code, "request_too_large");
  const text = await w.post(`/processes/${pid}/events`, "k2", "hi", { "content-type": "text/plain" });
  assert.equal(text.status, 415);
  const broken = await w.post(`/processes/${pid}/events`, "k3", "{");
  assert.equal(broken.status, 400);
  assert.equal((await broken.json()).code, "invalid_json");
});

test("contention that outlasts the retries -> 409 contention with Retry-After; retrying the same key then succeeds", async () => {
  const tight = await startWorker({ vars: { MAX_RETRIES: "0" } });
  try {
    const pid = "contended";
    const send = (i) => tight.post(`/processes/${pid}/events`, `k${i}`, pay(`p${i}`, 1));
    const first = await Promise.all(Array.from({ length: 20 }, (_, i) => send(i)));
    const lost = [];
    for (const [i, r] of first.entries()) {
      if (r.status === 409) {
        isProblem(r);
        const body = await r.json();
        assert.equal(body.code, "contention");
        assert.equal(r.headers.get("retry-after"), "1");
        lost.push(i);
      } else {
        assert.ok(r.status === 200 || r.status === 201, `status ${r.status}`);
      }
    }
    assert.ok(lost.length > 0, "with no retries allowed, 20 concurrent writers must collide");
    console.log(`contention: ${lost.length} of 20 concurrent requests got 409 with MAX_RETRIES=0`);
    for (const i of lost) {
      let r;
      do r = await send(i);
      while (r.status === 409);
      assert.ok(r.status === 200 || r.status === 201);
    }
    const view = await (await tight.fetch(`/processes/${pid}`)).json();
    assert.equal(view.context.payments.length, 20);
  } finally {
    await tight.close();
  }
});

test("GET /processes/:id -> 200 with state and context; unknown -> 404 process_not_found", async () => {
  const pid = fresh();
  await w.post(`/processes/${pid}/events`, "k1", pay("p1"));
  const res = await w.fetch(`/processes/${pid}`);
  assert.equal(res.status, 200);
  const view = await res.json();
  assert.deepEqual(view.value, { payment: "collecting" });
  assert.deepEqual(view.context.payments, ["p1"]);
  const missing = await w.fetch(`/processes/${fresh()}`);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).code, "process_not_found");
});

test("GET /processes/:id/events -> the event log with who sent what, when and the outcome", async () => {
  const pid = fresh();
  await w.post(`/processes/${pid}/events`, "k1", pay("p1"));
  await w.post(`/processes/${pid}/events`, "k1", pay("p1"));
  await w.post(`/processes/${pid}/events`, "k2", pay("p2"));
  const body = await (await w.fetch(`/processes/${pid}/events`)).json();
  assert.deepEqual(
    body.events.map((e) => [e.eventId, e.revision, e.type, e.status, e.response]),
    [["k1", 1, "PAYMENT_PARTIAL", "applied", "recorded p1"], ["k2", 2, "PAYMENT_PARTIAL", "applied", "recorded p2"]],
  );
  assert.ok(body.events.every((e) => typeof e.receivedAt === "number"));
});

test("wrong method -> 405; unknown route -> 404; the API description publishes the retention window", async () => {
  const del = await w.fetch(`/processes/${fresh()}`, { method: "DELETE" });
  assert.equal(del.status, 405);
  assert.equal(del.headers.get("allow"), "GET");
  assert.equal((await w.fetch("/nowhere")).status, 404);
  const api = await (await w.fetch("/api")).json();
  assert.equal(api.idempotency.header, "Idempotency-Key");
  assert.equal(api.idempotency.windowMs, 86400000);
  assert.equal(api.idempotency.windowMsByType.PAYMENT_PARTIAL, 3600000);
});
