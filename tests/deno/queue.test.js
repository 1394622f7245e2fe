// Effect dispatch through Deno KV's queue (kv.enqueue / kv.listenQueue), on
// real Deno KV, against the fake payment gateway (the outside world). The
// commit that emits an effect enqueues its dispatch message in the same atomic
// operation; delivery is at least once, and a second delivery is absorbed by
// the engine (the attempt's `started` report is a duplicate).
import { assert, assertEquals } from "./assert.js";
import { Machine } from "../../pkg/src/deno.js";
import { apply, inspect } from "../../pkg/src/host.js";
import { DenoKvQueue, DenoKvStore, isDispatchMessage } from "../../pkg/src/stores/denokv.js";
import { FakeGateway, gatewayEffects } from "../../pkg/src/testing/fake-gateway.js";
import { demoDefinition, eventually, pay, tempKvPath } from "./helpers.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The robust order machine; `retryBaseMs` shortens the charge's backoff (no jitter). */
async function orderMachine({ retryBaseMs } = {}) {
  const def = await demoDefinition("order-robust");
  if (retryBaseMs) {
    const effect = def.states.payment.states.charging.entry[0].effect;
    effect.retry = { maxAttempts: 4, baseMs: retryBaseMs, factor: 2, maxDelayMs: retryBaseMs * 8, jitter: 0 };
  }
  return new Machine(def);
}

/** Dispatcher options: the gateway's charge (optionally slowed down), and a ship handler. */
function effects(gateway, { chargeDelayMs = 0 } = {}) {
  const fx = gatewayEffects(gateway);
  const shipped = [];
  return {
    shipped,
    options: () => ({
      handlers: {
        charge: async (payload, meta) => {
          if (chargeDelayMs) await sleep(chargeDelayMs);
          return fx.handlers.charge(payload, meta);
        },
        ship: async (_payload, { key }) => {
          shipped.push(key);
          return { shipment: key };
        },
      },
      verifiers: fx.verifiers,
      timeoutMs: 5_000,
    }),
  };
}

/** A KV database, a store that enqueues due work on commit, and a queue listener on it. */
async function setup({ machine, gateway, chargeDelayMs, wrap } = {}) {
  const tmp = await tempKvPath();
  const kv = await Deno.openKv(tmp.path);
  const store = new DenoKvStore(kv, { machine, queue: true });
  // Record what each successful commit left due (the time its message was enqueued for).
  const commits = [];
  const commit = store.commit.bind(store);
  store.commit = async (processId, expected, outcome, extras) => {
    const res = await commit(processId, expected, outcome, extras);
    if (res.ok) commits.push({ processId, type: extras?.event?.type, nextDueAt: outcome.nextDueAt });
    return res;
  };
  const fx = effects(gateway, { chargeDelayMs });
  const deliveries = [];
  const reports = [];
  const queue = new DenoKvQueue(kv, {
    store,
    machineFor: () => machine,
    options: fx.options,
    onReport: (processId, report) => reports.push({ processId, report }),
  });
  const inFlight = new Set();
  const handler = (msg) => {
    deliveries.push({ msg, at: Date.now() });
    const p = wrap ? wrap(msg, () => queue.handle(msg)) : queue.handle(msg);
    inFlight.add(p);
    p.finally(() => inFlight.delete(p)).catch(() => {});
    return p;
  };
  const listening = kv.listenQueue(handler);
  return {
    kv,
    store,
    queue,
    fx,
    deliveries,
    reports,
    commits,
    async close() {
      // Let deliveries in progress finish (later messages stay in the file, which is removed).
      while (inFlight.size) await Promise.allSettled([...inFlight]);
      kv.close();
      await listening;
      await tmp.cleanup();
    },
  };
}

const full = (id = "pay-1") => pay(id, "p1", 100);
const chargeOf = (view) => view.outbox.find((e) => e.type === "charge");

Deno.test("a commit that emits an effect enqueues its dispatch in the same atomic operation; the listener charges once and ships", async () => {
  const machine = await orderMachine();
  const gateway = new FakeGateway();
  const t = await setup({ machine, gateway });
  try {
    const out = await apply(t.store, machine, "o1", full());
    assertEquals(out.status, "applied");
    assertEquals(out.state, { payment: "charging" });
    const view = await eventually(async () => {
      const v = await inspect(t.store, machine, "o1");
      return v.value === "paid" && v.outbox.every((e) => e.state === "succeeded") ? v : null;
    }, { what: "the order paid and shipped" });
    assertEquals(gateway.chargeCount(), 1);
    assertEquals(gateway.chargeCount(chargeOf(view).key), 1);
    assertEquals(t.fx.shipped.length, 1);
    assert(t.deliveries.every((d) => isDispatchMessage(d.msg)));
    assert(t.deliveries.length >= 1);
  } finally {
    await t.close();
  }
});

Deno.test("the same dispatch message delivered twice at once -> the gateway charges once; the second delivery is absorbed", async () => {
  const machine = await orderMachine();
  const gateway = new FakeGateway();
  const t = await setup({ machine, gateway, chargeDelayMs: 500 });
  try {
    // Commit without the transactional message (a store without `queue`), then deliver the
    // same message twice through the queue, at once.
    const plain = new DenoKvStore(t.kv, { machine });
    await apply(plain, machine, "o2", full());
    const message = { idem: "dispatch", processId: "o2", at: Date.now() };
    await Promise.all([t.kv.enqueue(message), t.kv.enqueue(message)]);
    const view = await eventually(async () => {
      const v = await inspect(t.store, machine, "o2");
      return v.value === "paid" && v.outbox.every((e) => e.state === "succeeded") ? v : null;
    }, { what: "the order paid and shipped" });
    const copies = await eventually(() => {
      const same = t.deliveries.filter((d) => JSON.stringify(d.msg) === JSON.stringify(message));
      return same.length >= 2 ? same : null;
    }, { what: "both copies delivered" });
    assertEquals(copies.length, 2);
    // The winner's report comes when its whole run (shipping included) ends; the other copy's run
    // reported before it, or finds nothing left to do when it comes later.
    const chargeSteps = () =>
      t.reports.filter((x) => x.processId === "o2").flatMap((r) => r.report.steps).filter((s) => s.kind === "attempt" && s.type === "charge");
    const attempts = await eventually(() => (chargeSteps().some((s) => s.result === "succeeded") ? chargeSteps() : null), {
      what: "the charging run reporting",
    });
    // The other copy either raced for the attempt and lost (`started` was a duplicate: skipped), or
    // found it in flight (not due while its lease runs): either way it did not call the gateway.
    assertEquals(attempts.filter((s) => s.result === "succeeded").length, 1, JSON.stringify(attempts));
    assert(attempts.every((s) => s.result === "succeeded" || s.result === "skipped"), JSON.stringify(attempts));
    console.log(`two deliveries of one message: charge steps ${JSON.stringify(attempts.map((s) => s.result))}`);
    assertEquals(gateway.requests, 1, "one call reached the gateway");
    assertEquals(gateway.chargeCount(), 1);
    assertEquals(chargeOf(view).attempts, 1);
    assertEquals(t.fx.shipped.length, 1, "the ship effect ran once too");
  } finally {
    await t.close();
  }
});

Deno.test("a delivery whose handler fails after the charge is delivered again by Deno KV -> still one charge", async () => {
  const machine = await orderMachine();
  const gateway = new FakeGateway();
  let crashed = null;
  const t = await setup({
    machine,
    gateway,
    // The first delivery runs the dispatcher (the charge happens) and then crashes before it is acknowledged.
    wrap: async (msg, run) => {
      await run();
      if (crashed === null) {
        crashed = JSON.stringify(msg);
        throw new Error("crash after the effect, before the message is acknowledged");
      }
    },
  });
  try {
    await apply(t.store, machine, "o3", full());
    const copies = await eventually(() => {
      const same = t.deliveries.filter((d) => JSON.stringify(d.msg) === crashed);
      return same.length >= 2 ? same : null;
    }, { what: "the crashed message delivered again" });
    const view = await eventually(async () => {
      const v = await inspect(t.store, machine, "o3");
      return v.value === "paid" && v.outbox.every((e) => e.state === "succeeded") ? v : null;
    }, { what: "the order paid and shipped" });
    assertEquals(copies.length, 2);
    assertEquals(gateway.requests, 1);
    assertEquals(gateway.chargeCount(), 1);
    assertEquals(chargeOf(view).attempts, 1);
  } finally {
    await t.close();
  }
});

Deno.test("a transient gateway failure is retried by a message delayed to the retry's due time; charged once", async () => {
  const machine = await orderMachine({ retryBaseMs: 300 });
  const gateway = new FakeGateway();
  gateway.failNext("transient");
  const t = await setup({ machine, gateway });
  try {
    await apply(t.store, machine, "o4", full());
    const view = await eventually(async () => {
      const v = await inspect(t.store, machine, "o4");
      return v.value === "paid" ? v : null;
    }, { what: "the order paid" });
    const charge = chargeOf(view);
    assertEquals(charge.attempts, 2);
    assertEquals(gateway.requests, 2, "one failed call, one that charged");
    assertEquals(gateway.chargeCount(), 1);
    // The failed attempt's commit left the retry due at `dueAt` and enqueued a message for then;
    // that message ran the retry, delivered no earlier than its due time.
    const failed = t.commits.find((c) => c.type === "idem.effect.failed");
    assert(failed && typeof failed.nextDueAt === "number", JSON.stringify(t.commits));
    const retry = t.deliveries.find((d) => d.msg.at === failed.nextDueAt);
    assert(retry, `a message for the retry's due time ${failed.nextDueAt}: ${JSON.stringify(t.deliveries.map((d) => d.msg.at))}`);
    assert(retry.at >= failed.nextDueAt, `delivered at ${retry.at}, due at ${failed.nextDueAt}`);
  } finally {
    await t.close();
  }
});
