// Who calls, on real workerd: the example Worker started with the API_TOKENS secret, its D1 and
// Durable Object routes. The scenarios are tests/http/callers.mjs, which the Deno server passes too.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./harness.mjs";
import { API_TOKENS, checkCrossCallerReplay, checkDefaultGet, checkUnauthorizedPost } from "../http/callers.mjs";

let w;
let n = 0;
const fresh = () => `callers-${++n}`;
before(async () => {
  w = await startWorker({ vars: { API_TOKENS } });
});
after(() => w?.close());

for (const [store, base] of [["D1", ""], ["a Durable Object", "/do"]]) {
  test(`${store}: two callers sending one Idempotency-Key are two events; each replay is the caller's own`, async () => {
    await checkCrossCallerReplay(w, base, fresh());
  });

  test(`${store}: a POST without a known bearer token -> 401 problem, nothing stored, the key not spent`, async () => {
    await checkUnauthorizedPost(w, base, fresh());
  });

  test(`${store}: GET shows the summary, no other caller's key or response; the log names the caller's own events`, async () => {
    await checkDefaultGet(w, base, fresh());
  });
}

test("D1: an unauthorized POST leaves no row in processes or events", async () => {
  const pid = fresh();
  const res = await w.post(`/processes/${pid}/events`, "k1", { type: "PAYMENT_PARTIAL", payload: { paymentId: "p1", amount: 1 } });
  assert.equal(res.status, 401);
  for (const table of ["processes", "events", "snapshot_chunks"]) {
    const { results } = await w.db.prepare(`SELECT count(*) AS n FROM ${table} WHERE process_id = ?`).bind(pid).all();
    assert.equal(results[0].n, 0, table);
  }
});

test("the API description stays anyone's, and says an Idempotency-Key is the caller's", async () => {
  for (const path of ["/api", "/do"]) {
    const res = await w.fetch(path);
    assert.equal(res.status, 200, path);
    assert.equal((await res.json()).idempotency.keyScope, "caller", path);
  }
});
