// Workers KV has no compare-and-set: two writers that race on one process
// lose updates. This test demonstrates it (the loss is the expected result),
// and shows that the same traffic behind the process's Durable Object (one
// writer) loses nothing.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";

const pay = (paymentId) => ({ type: "PAYMENT_PARTIAL", payload: { paymentId, amount: 1 } });
let w;
before(async () => {
  w = await startWorker({ kvDirect: true });
});
after(() => w?.close());

async function race(base, pid, n) {
  const responses = await Promise.all(Array.from({ length: n }, (_, i) => w.post(`${base}/processes/${pid}/events`, `k${i}`, pay(`p${i}`))));
  const applied = responses.filter((r) => r.headers.get("idem-outcome") === "applied").length;
  const view = await (await w.fetch(`${base}/processes/${pid}`)).json();
  return { applied, kept: view.context.payments.length, revision: view.revision };
}

test("KV written by racing Worker instances loses updates that were each answered 'applied'", async () => {
  const r = await race("/kv-direct", "race", 20);
  console.log(`KV without a single writer: ${r.applied} answered applied, ${r.kept} kept, ${r.applied - r.kept} lost`);
  assert.equal(r.applied, 20, "every writer believed its write succeeded");
  assert.ok(r.kept < r.applied, `lost updates expected: ${r.kept} kept of ${r.applied}`);
});

test("the same race behind the process's Durable Object (one writer) keeps every update", async () => {
  const r = await race("/kv", "race", 20);
  assert.equal(r.applied, 20);
  assert.equal(r.kept, 20);
  assert.equal(r.revision, 20);
});
