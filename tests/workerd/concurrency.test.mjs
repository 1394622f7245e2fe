// Concurrent deliveries on real workerd, for each store the Worker serves:
// D1 (/processes), the Durable Object's storage (/do) and Workers KV behind the
// Durable Object (/kv).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";

const STORES = [
  ["D1", ""],
  ["Durable Object", "/do"],
  ["KV behind a Durable Object", "/kv"],
];
const pay = (paymentId, amount = 1) => ({ type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });

let w;
before(async () => {
  w = await startWorker();
});
after(() => w?.close());

/** The event log as revisions, or the ledger's revisions where the store keeps no log (KV). */
async function logOf(base, pid) {
  const res = await w.fetch(`${base}/processes/${pid}/events?limit=1000`);
  assert.equal(res.status, 200);
  return (await res.json()).events;
}

for (const [name, base] of STORES) {
  test(`${name}: 50 concurrent deliveries of one event -> one applied, 49 identical replays, one log row`, async () => {
    const pid = `same-${base.slice(1) || "d1"}`;
    const responses = await Promise.all(Array.from({ length: 50 }, () => w.post(`${base}/processes/${pid}/events`, "evt-1", pay("p1", 40))));
    const answers = await Promise.all(
      responses.map(async (r) => ({
        status: r.status,
        replay: r.headers.get("idempotency-replayed"),
        outcome: r.headers.get("idem-outcome"),
        attempts: Number(r.headers.get("idem-attempts")),
        body: await r.text(),
      })),
    );
    const retries = answers.reduce((n, a) => n + a.attempts - 1, 0);
    console.log(`${name}: 50 copies of one event, ${retries} compare-and-set retries in total`);
    const applied = answers.filter((a) => a.outcome === "applied");
    const replays = answers.filter((a) => a.replay === "true");
    assert.equal(applied.length, 1, JSON.stringify(answers.map((a) => a.status)));
    assert.equal(replays.length, 49);
    for (const r of replays) {
      assert.equal(r.status, applied[0].status);
      assert.equal(r.body, applied[0].body);
      assert.equal(r.outcome, "duplicate");
    }
    assert.equal(applied[0].status, 201);
    const log = await logOf(base, pid);
    assert.deepEqual(log.map((e) => [e.eventId, e.revision]), [["evt-1", 1]]);
    const view = await (await w.fetch(`${base}/processes/${pid}`)).json();
    assert.equal(view.context.paid, 40);
  });

  test(`${name}: 50 distinct events delivered concurrently, twice each -> all applied once, revisions contiguous`, async () => {
    const pid = `many-${base.slice(1) || "d1"}`;
    const ids = Array.from({ length: 50 }, (_, i) => i);
    const deliveries = [...ids, ...ids].map((i) => w.post(`${base}/processes/${pid}/events`, `evt-${i}`, pay(`p${i}`, 1)));
    const responses = await Promise.all(deliveries);
    const outcomes = responses.map((r) => r.headers.get("idem-outcome"));
    const retries = responses.reduce((n, r) => n + Number(r.headers.get("idem-attempts")) - 1, 0);
    const most = Math.max(...responses.map((r) => Number(r.headers.get("idem-attempts"))));
    console.log(`${name}: 100 deliveries of 50 events, ${retries} compare-and-set retries in total, at most ${most} tries for one request`);
    assert.deepEqual(responses.filter((r) => r.status >= 300).map((r) => r.status), [], "every delivery succeeded");
    assert.equal(outcomes.filter((o) => o === "applied").length, 50);
    assert.equal(outcomes.filter((o) => o === "duplicate").length, 50);
    const view = await (await w.fetch(`${base}/processes/${pid}`)).json();
    assert.equal(view.revision, 50);
    assert.equal(view.context.paid, 50, "nothing lost: 50 payments of 1");
    assert.deepEqual([...view.context.payments].sort(), ids.map((i) => `p${i}`).sort());
    const log = await logOf(base, pid);
    assert.deepEqual(log.map((e) => e.revision), ids.map((i) => i + 1), "revisions 1..50, no gap, no repeat");
    assert.deepEqual(log.map((e) => e.eventId).sort(), ids.map((i) => `evt-${i}`).sort());
  });
}
