import { test } from "node:test";
import assert from "node:assert/strict";
import { apply, inspect } from "../src/host.js";
import { dispatch, unknownOutcome } from "../src/dispatch.js";
import { MemoryStore } from "../src/stores/memory.js";
import { FakeGateway, gatewayEffects } from "../src/testing/fake-gateway.js";
import { checkoutMachine, manualClock, recording } from "./helpers.mjs";

const checkout = (id = "c1", amount = 40) => ({ id, type: "CHECKOUT", payload: { amount, currency: "eur" } });

/** Dispatch until nothing more can happen now, moving the clock to each due time (at most `rounds` times). */
async function drive(store, machine, pid, options, rounds = 10) {
  const steps = [];
  for (let i = 0; i < rounds; i++) {
    const r = await dispatch(store, machine, pid, options);
    steps.push(...r.steps);
    if (r.nextDueAt === null) break;
    options.now.set(Math.max(options.now(), r.nextDueAt));
  }
  return steps;
}

test("charge -> lost response -> retry with the same key -> success: the gateway charged once", async () => {
  const store = new MemoryStore();
  const m = checkoutMachine();
  const now = manualClock();
  const gw = new FakeGateway();
  gw.failNext("drop");
  await apply(store, m, "o1", checkout(), { now });
  const first = await dispatch(store, m, "o1", { ...gatewayEffects(gw), now });
  assert.deepEqual(first.steps.map((s) => s.result), ["unknown"]);
  assert.equal(gw.chargeCount(), 1, "the gateway did charge, the response was lost");
  assert.ok(first.nextDueAt > now(), "the retry is scheduled by backoff, not immediate");
  assert.equal((await inspect(store, m, "o1")).value, "charging");

  now.set(first.nextDueAt);
  const second = await dispatch(store, m, "o1", { ...gatewayEffects(gw), now });
  assert.deepEqual(second.steps.map((s) => s.result), ["succeeded"]);
  const view = await inspect(store, m, "o1");
  assert.equal(view.value, "paid");
  assert.equal(gw.chargeCount(), 1);
  assert.equal(gw.requests, 2);
  assert.equal(view.context.charge.chargeId, [...gw.charges.keys()][0]);
  assert.equal(second.nextDueAt, null);
});

test("handlers run only after the commit that emitted the effect, with the attempt recorded in flight", async () => {
  const store = new MemoryStore();
  const m = checkoutMachine();
  const now = manualClock();
  const seen = [];
  // Nothing committed yet: nothing to dispatch.
  const before = await dispatch(store, m, "o1", { handlers: { charge: () => seen.push("too early") }, now });
  assert.equal(before.steps.length, 0);
  await apply(store, m, "o1", checkout(), { now });
  await dispatch(store, m, "o1", {
    now,
    handlers: {
      charge: async (payload, meta) => {
        const view = await inspect(store, m, "o1");
        seen.push({ state: view.value, effect: view.outbox[0].state, attempt: meta.attempt, key: meta.key, attemptId: meta.attemptId, payload });
        return { chargeId: "x" };
      },
    },
  });
  assert.deepEqual(seen, [{ state: "charging", effect: "in_flight", attempt: 1, key: "o1/c1:0", attemptId: "o1/c1:0#1", payload: { amount: 40, currency: "eur" } }]);
});

test("non-idempotent gateway: lost response -> verifying -> found -> succeeded, charged once", async () => {
  const store = new MemoryStore();
  const m = checkoutMachine({ idempotent: false });
  const now = manualClock();
  const gw = new FakeGateway({ idempotent: false });
  gw.failNext("drop");
  await apply(store, m, "o1", checkout(), { now });
  const r1 = await dispatch(store, m, "o1", { ...gatewayEffects(gw), now, maxRounds: 1 });
  assert.deepEqual(r1.steps.map((s) => s.result), ["unknown"]);
  const mid = await inspect(store, m, "o1");
  assert.equal(mid.outbox[0].state, "verifying", "the verify step is visible in the snapshot");
  const steps = await drive(store, m, "o1", { ...gatewayEffects(gw), now });
  assert.deepEqual(steps.map((s) => s.result), ["verified-exists"]);
  assert.equal((await inspect(store, m, "o1")).value, "paid");
  assert.equal(gw.chargeCount(), 1);
});

test("non-idempotent gateway: unknown before it charged -> verified absent -> new attempt -> charged once", async () => {
  const store = new MemoryStore();
  const m = checkoutMachine({ idempotent: false });
  const now = manualClock();
  const gw = new FakeGateway({ idempotent: false });
  const fx = gatewayEffects(gw);
  let calls = 0;
  const handlers = {
    charge: (payload, meta) => {
      calls++;
      if (calls === 1) throw unknownOutcome(new Error("connection reset before sending"));
      return fx.handlers.charge(payload, meta);
    },
  };
  await apply(store, m, "o1", checkout(), { now });
  const steps = await drive(store, m, "o1", { handlers, verifiers: fx.verifiers, now });
  assert.deepEqual(steps.map((s) => s.result), ["unknown", "verified-absent", "succeeded"]);
  assert.equal((await inspect(store, m, "o1")).value, "paid");
  assert.equal(gw.chargeCount(), 1);
  // Without verification, a blind retry of a non-idempotent call would have charged twice:
  const blind = new FakeGateway({ idempotent: false });
  blind.failNext("drop");
  await blind.charge({ amount: 40, reference: "k" }, { idempotencyKey: "k" }).catch(() => {});
  await blind.charge({ amount: 40, reference: "k" }, { idempotencyKey: "k" });
  assert.equal(blind.chargeCount(), 2);
});

test("exhausted retries escalate to review", async () => {
  const store = new MemoryStore();
  const m = checkoutMachine({ maxAttempts: 3 });
  const now = manualClock();
  const gw = new FakeGateway();
  gw.failNext("transient", 3);
  await apply(store, m, "o1", checkout(), { now });
  const steps = await drive(store, m, "o1", { ...gatewayEffects(gw), now });
  assert.deepEqual(steps.map((s) => s.result), ["failed", "failed", "failed"]);
  const view = await inspect(store, m, "o1");
  assert.equal(view.value, "review");
  assert.equal(view.context.failure.reason, "exhausted");
  assert.equal(view.context.failure.attempts, 3);
  assert.equal(gw.chargeCount(), 0);
  assert.equal(gw.requests, 3);
});

test("a permanent failure escalates at once", async () => {
  const store = new MemoryStore();
  const m = checkoutMachine();
  const now = manualClock();
  const gw = new FakeGateway();
  gw.failNext("permanent");
  await apply(store, m, "o1", checkout(), { now });
  const steps = await drive(store, m, "o1", { ...gatewayEffects(gw), now });
  assert.deepEqual(steps.map((s) => s.result), ["failed"]);
  const view = await inspect(store, m, "o1");
  assert.equal(view.value, "review");
  assert.equal(view.context.failure.reason, "permanent");
  assert.equal(view.context.failure.error.code, "card_declined");
});

test("a handler that does not answer in time is an unknown outcome, retried with the same key", async () => {
  const store = new MemoryStore();
  const m = checkoutMachine();
  const now = manualClock();
  const gw = new FakeGateway({ timeoutMs: null }); // a timed-out call never answers
  gw.failNext("timeout");
  await apply(store, m, "o1", checkout(), { now });
  const steps = await drive(store, m, "o1", { ...gatewayEffects(gw), now, timeoutMs: 20 });
  assert.deepEqual(steps.map((s) => s.result), ["unknown", "succeeded"]);
  assert.equal(gw.chargeCount(), 1);
  assert.equal((await inspect(store, m, "o1")).value, "paid");
});

test("every attempt result delivered twice is a duplicate, and writes nothing", async () => {
  const inner = new MemoryStore();
  const store = recording(inner);
  const m = checkoutMachine();
  const now = manualClock();
  const gw = new FakeGateway();
  gw.failNext("drop").failNext("transient");
  await apply(store, m, "o1", checkout(), { now });
  const steps = await drive(store, m, "o1", { ...gatewayEffects(gw), now });
  assert.deepEqual(steps.map((s) => s.result), ["unknown", "failed", "succeeded"]);
  const reports = store.committed.map((c) => c.event).filter((e) => e.type.startsWith("idem.effect."));
  assert.equal(reports.length, 6, "three started + three results");
  const writes = inner.writes;
  for (const e of reports) {
    const again = await apply(store, m, "o1", e, { now });
    assert.equal(again.status, "duplicate", `${e.id} again`);
  }
  assert.equal(inner.writes, writes);
  assert.equal(gw.chargeCount(), 1);
});

test("two dispatchers racing for one attempt: the gateway is called once", async () => {
  const store = new MemoryStore();
  const m = checkoutMachine();
  const now = manualClock();
  const gw = new FakeGateway();
  await apply(store, m, "o1", checkout(), { now });
  const [a, b] = await Promise.all([
    dispatch(store, m, "o1", { ...gatewayEffects(gw), now }),
    dispatch(store, m, "o1", { ...gatewayEffects(gw), now }),
  ]);
  const results = [...a.steps, ...b.steps].map((s) => s.result).sort();
  assert.deepEqual(results, ["skipped", "succeeded"]);
  assert.equal(gw.requests, 1);
  assert.equal(gw.chargeCount(), 1);
});

test("an effect without a handler is left pending and does not make the next due time spin", async () => {
  const store = new MemoryStore();
  const m = checkoutMachine();
  const now = manualClock();
  await apply(store, m, "o1", checkout(), { now });
  const r = await dispatch(store, m, "o1", { now, stuckRetryMs: 5000 });
  assert.equal(r.unhandled, 1);
  assert.equal(r.nextDueAt, now() + 5000);
  assert.equal((await inspect(store, m, "o1")).outbox[0].state, "pending");
});

test("the backoff schedule of a key is the same on every run", async () => {
  const schedule = async () => {
    const store = new MemoryStore();
    const m = checkoutMachine();
    const now = manualClock();
    const gw = new FakeGateway();
    gw.failNext("transient", 2);
    await apply(store, m, "o1", checkout(), { now });
    const dues = [];
    for (let i = 0; i < 3; i++) {
      const r = await dispatch(store, m, "o1", { ...gatewayEffects(gw), now });
      dues.push(r.nextDueAt === null ? null : r.nextDueAt - now());
      if (r.nextDueAt !== null) now.set(r.nextDueAt);
    }
    return dues;
  };
  const a = await schedule();
  assert.deepEqual(a, await schedule());
  assert.ok(a[0] > 0 && a[1] > a[0], `exponential: ${a}`);
  assert.equal(a[2], null);
});
