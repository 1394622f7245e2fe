// The HTTP status-code table on real workerd (the D1 route), one test per row.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Machine } from "../../pkg/src/node.js";
import { apply } from "../../pkg/src/host.js";
import { D1Store } from "../../pkg/src/stores/d1.js";
import { ROOT, startWorker } from "./harness.mjs";
import { checkCases, checkInvalidPayload, checkNumberPairs, checkStalledBody } from "../http/hostile.mjs";

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

test("no retries allowed: 20 concurrent writers to one process all land (they wait in its lane in the isolate)", async () => {
  const tight = await startWorker({ vars: { MAX_RETRIES: "0" } });
  try {
    const pid = "laned";
    const first = await Promise.all(Array.from({ length: 20 }, (_, i) => tight.post(`/processes/${pid}/events`, `k${i}`, pay(`p${i}`, 1))));
    // 201 for the event that created the process, 200 for the others: none is a 409.
    assert.deepEqual(first.map((r) => r.status).sort(), [...Array(19).fill(200), 201]);
    assert.deepEqual(first.map((r) => r.headers.get("idem-attempts")), Array(20).fill("1"));
    const view = await (await tight.fetch(`/processes/${pid}`)).json();
    assert.equal(view.context.payments.length, 20);
  } finally {
    await tight.close();
  }
});

test("contention that outlasts the retries -> 409 contention with Retry-After; retrying the same key then succeeds", async () => {
  // LANES=off: the isolate's requests race as requests in different isolates do.
  const tight = await startWorker({ vars: { MAX_RETRIES: "0", LANES: "off" } });
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
        const after = Number(r.headers.get("retry-after"));
        assert.ok(Number.isInteger(after) && after >= 1 && after <= 4, `Retry-After ${r.headers.get("retry-after")}: 1 to 4 s, jittered`);
        assert.equal(r.headers.get("idem-attempts"), "1", "MAX_RETRIES=0: one try");
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

/** workerd's own socket, for requests sent as raw bytes. */
async function socketOf(worker) {
  const url = await worker.mf.ready;
  return { host: url.hostname, port: Number(url.port) };
}

test("hostile requests as raw bytes (bad UTF-8, 1e309, long URL and headers, wrong methods) -> the Deno server's statuses and codes", async () => {
  await checkCases(await socketOf(w), "hostile");
});

test("numbers under one Idempotency-Key: 1.0 = 1e0 and -0 = -0.0 replay; 1 vs 1.0 and 0 vs -0 -> 422 id_conflict", async () => {
  await checkNumberPairs(await socketOf(w), "numbers");
});

test("a payload its schema refuses -> 422 invalid_payload naming the field; nothing recorded (the key then takes a valid payload)", async () => {
  await checkInvalidPayload(await socketOf(w), "schema");
});

test("a body that stalls -> 408 request_timeout after BODY_TIMEOUT_MS", async () => {
  const tight = await startWorker({ vars: { BODY_TIMEOUT_MS: "400" } });
  try {
    const ms = await checkStalledBody(await socketOf(tight), "stalled", 400);
    console.log(`a stalled body on workerd: 408 after ${ms} ms (BODY_TIMEOUT_MS=400)`);
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

test("a stored snapshot with a chunk row missing -> 500 snapshot_corrupt on POST and GET, nothing written", async () => {
  const pid = fresh();
  // Another isolate's store writes the process (the Worker's store keeps nothing of it): payment
  // ids of 20,000 characters make a snapshot of several 16 Ki chunk rows.
  const machine = new Machine(JSON.parse(readFileSync(join(ROOT, "www", "machines", "order-robust.json"), "utf8")));
  const other = new D1Store(w.db);
  for (const i of [1, 2]) {
    const out = await apply(other, machine, pid, { id: `k${i}`, ...pay(`p${i}`.padEnd(20_000, "x"), 0) }, { now: 1_000 + i });
    assert.equal(out.status, "applied");
  }
  const row = () => w.db.prepare("SELECT * FROM processes WHERE process_id = ?1").bind(pid).first();
  const chunkRows = async () => (await w.db.prepare("SELECT idx, revision FROM snapshot_chunks WHERE process_id = ?1 ORDER BY idx").bind(pid).all()).results;
  const log = async () => (await w.db.prepare("SELECT event_id, revision FROM events WHERE process_id = ?1 ORDER BY revision").bind(pid).all()).results;
  const stored = await row();
  assert.equal(stored.revision, 2);
  assert.ok(stored.chunks >= 3, `${stored.chunks} chunk rows`);
  await w.db.prepare("DELETE FROM snapshot_chunks WHERE process_id = ?1 AND idx = 1").bind(pid).run();
  const chunks = await chunkRows();

  const corrupt = async (res, extra = {}) => {
    assert.equal(res.status, 500);
    isProblem(res);
    const body = await res.json();
    assert.equal(body.code, "snapshot_corrupt");
    assert.equal(body.status, 500);
    assert.equal(body.processId, pid);
    for (const [k, v] of Object.entries(extra)) assert.equal(body[k], v, k);
    assert.match(body.detail, new RegExp(`stored snapshot of process "${pid}" is damaged`));
    assert.match(body.detail, /nothing was written/);
    assert.match(body.detail, new RegExp(`${stored.chunks - 1} of ${stored.chunks} snapshot chunks found at revision 2`));
  };
  await corrupt(await w.post(`/processes/${pid}/events`, "k3", pay("p3")), { eventId: "k3" });
  // A copy of an event already applied is not answered from the damaged snapshot either.
  await corrupt(await w.post(`/processes/${pid}/events`, "k2", pay("p2".padEnd(20_000, "x"), 0)), { eventId: "k2" });
  await corrupt(await w.fetch(`/processes/${pid}`));
  await corrupt(await w.fetch(`/processes/${pid}/events?after=2`));
  // Nothing was written: the row, its chunk rows and the log are as they were.
  assert.deepEqual(await row(), stored);
  assert.deepEqual(await chunkRows(), chunks);
  assert.deepEqual(await log(), [{ event_id: "k1", revision: 1 }, { event_id: "k2", revision: 2 }]);
  // The log itself needs no snapshot and still reads.
  const events = await w.fetch(`/processes/${pid}/events`);
  assert.equal(events.status, 200);
  assert.deepEqual((await events.json()).events.map((e) => e.eventId), ["k1", "k2"]);
});
