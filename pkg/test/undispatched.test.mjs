// createHttpApi without a dispatcher: the first commit that leaves work due (an effect, a
// timer) says once that nothing performs it, instead of leaving it in the outbox in silence.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Machine } from "../src/node.js";
import { createHttpApi } from "../src/http.js";
import { MemoryStore } from "../src/stores/memory.js";
import { fixture } from "./helpers.mjs";

function setup(api = {}) {
  const warnings = [];
  const store = new MemoryStore();
  const machine = new Machine(fixture("checkout.json"));
  const http = createHttpApi({ machine, store, onWarning: (m) => warnings.push(m), ...api });
  const post = (pid, key, body) =>
    http.handle(
      new Request(`http://x/processes/${pid}/events`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify(body),
      }),
    );
  return { warnings, post };
}

/** The checkout machine's events: a payment (no work due), then a checkout (a charge effect due). */
const events = {
  before: [{ type: "PAYMENT_PARTIAL", payload: { paymentId: "p1", amount: 10 } }],
  effect: { type: "CHECKOUT", payload: { amount: 10, currency: "EUR" } },
};

test("without afterCommit, the first commit leaving work due warns once, naming the process", async () => {
  const { warnings, post } = setup();
  let i = 0;
  for (const body of events.before) assert.ok((await post("c1", `k${i++}`, body)).status < 300);
  assert.deepEqual(warnings, [], "no work due yet, no warning");
  assert.ok((await post("c1", `k${i++}`, events.effect)).status < 300);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /process "c1" has work due .* no afterCommit/);
  // Once per API: later processes with work due do not repeat it.
  for (const body of [...events.before, events.effect]) await post("c2", `k${i++}`, body);
  assert.equal(warnings.length, 1);
});

test("afterCommit, or afterCommit: null (dispatched elsewhere), keeps it quiet", async () => {
  for (const afterCommit of [null, () => undefined]) {
    const { warnings, post } = setup({ afterCommit });
    let i = 0;
    for (const body of [...events.before, events.effect]) assert.ok((await post("c1", `k${i++}`, body)).status < 300);
    assert.deepEqual(warnings, [], String(afterCommit));
  }
});
