// A charge effect dispatched after the commit reaches the fake gateway once,
// even when the Worker's response to the client is lost and the client
// retries, and even when the gateway's own response is lost too.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { eventually, startWorker } from "./harness.mjs";

let w;
before(async () => {
  w = await startWorker();
});
after(() => w?.close());

const full = (paymentId) => ({ type: "PAYMENT_PARTIAL", payload: { paymentId, amount: 100 } });
const view = async (base, pid) => (await w.fetch(`${base}/processes/${pid}`)).json();
const chargeOf = (v) => v.outbox.find((e) => e.type === "charge");

for (const [name, base] of [
  ["D1 (waitUntil dispatch)", ""],
  ["Durable Object (alarms)", "/do"],
]) {
  test(`${name}: lost Worker response + client retry + lost gateway response -> charged once`, async () => {
    const pid = `order-${base.slice(1) || "d1"}-robust`;
    w.gateways.keys.failNext("drop"); // the first charge goes through, its response is lost
    const before = w.gateways.keys.requests;
    // The client's request is applied and the charge dispatched after the commit, but the
    // client never sees the answer (a dropped connection): it retries with the same key.
    await w.post(`${base}/processes/${pid}/events`, "pay-1", full("p1")).then((r) => r.body?.cancel());
    const retry = await w.post(`${base}/processes/${pid}/events`, "pay-1", full("p1"));
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get("idempotency-replayed"), "true");
    const done = await eventually(async () => {
      const v = await view(base, pid);
      return v.value === "paid" ? v : null;
    }, { what: "the order reaching paid", tries: 400 });
    const charge = chargeOf(done);
    assert.equal(charge.state, "succeeded");
    assert.equal(charge.attempts, 2, "attempt 1 lost its response, attempt 2 reused the key");
    const key = charge.key;
    assert.equal(w.gateways.keys.chargeCount(key), 1, "one charge for the key");
    assert.equal(w.gateways.keys.requests - before, 2);
    assert.equal(charge.result.chargeId, [...w.gateways.keys.charges.values()].find((c) => c.reference === key).id);
  });
}

test("gateway without idempotency keys: lost gateway response -> verify finds the charge -> charged once", async () => {
  const pid = "order-d1-robust-nokeys";
  w.gateways.nokeys.failNext("drop");
  const res = await w.post(`/processes/${pid}/events`, "pay-1", full("p1"));
  assert.equal(res.status, 201);
  const done = await eventually(async () => {
    const v = await view("", pid);
    return chargeOf(v)?.state === "succeeded" ? v : null;
  }, { what: "the charge succeeding", tries: 400 });
  const charge = chargeOf(done);
  assert.equal(charge.attempts, 1, "no second attempt: verification found the first charge");
  assert.equal(w.gateways.nokeys.chargeCount(charge.key), 1);
  assert.equal(w.gateways.nokeys.chargeCount(), 1);
  const log = (await (await w.fetch(`/processes/${pid}/events`)).json()).events;
  assert.ok(log.some((e) => e.type === "idem.effect.verified"), "the verify step is in the event log");
});
