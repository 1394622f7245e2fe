// Concurrent deliveries on one Deno KV database (a SQLite file), from several
// Web Workers (threads, each with its own Deno KV handle and engine) and from
// several handles in one isolate. The store's only defence is the atomic
// versionstamp check; the engine's ledger turns a lost race into a duplicate.
import { assert, assertEquals } from "./assert.js";
import { DenoKvStore } from "../../pkg/src/stores/denokv.js";
import { apply, inspect } from "../../pkg/src/host.js";
import { demoMachine, pay, tempKvPath } from "./helpers.js";

const WORKERS = 4;

/** Start `n` workers on the database at `path`; resolves when each has opened it. */
async function startWorkers(n, path) {
  const workers = [];
  const loaded = [];
  for (let i = 0; i < n; i++) {
    const w = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
    loaded.push(new Promise((resolve, reject) => {
      w.onmessage = ({ data }) => data.kind === "loaded" && resolve();
      w.onerror = (e) => reject(e.error ?? new Error(e.message));
    }));
    workers.push(w);
  }
  await Promise.all(loaded);
  await Promise.all(workers.map((w) => call(w, { kind: "open", path }, "ready")));
  return workers;
}

/** Send a message to a worker and wait for its answer of kind `expect`. */
function call(worker, message, expect) {
  return new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => {
      if (data.kind === "error") reject(new Error(data.message));
      else if (data.kind === expect) resolve(data);
    };
    worker.onerror = (e) => reject(e.error ?? new Error(e.message));
    worker.postMessage(message);
  });
}

async function stopWorkers(workers) {
  await Promise.all(workers.map((w) => call(w, { kind: "close" }, "closed").catch(() => {})));
  for (const w of workers) w.terminate();
}

async function withDb(fn) {
  const tmp = await tempKvPath();
  const kv = await Deno.openKv(tmp.path);
  const workers = await startWorkers(WORKERS, tmp.path);
  try {
    await fn({ kv, workers, path: tmp.path });
  } finally {
    await stopWorkers(workers);
    kv.close();
    await tmp.cleanup();
  }
}

Deno.test(`the same event delivered 40 times at once from ${WORKERS} worker threads -> exactly one applied, 39 duplicates with its response`, () =>
  withDb(async ({ kv, workers }) => {
    const m = await demoMachine();
    const event = pay("evt-1", "p1", 40);
    const replies = await Promise.all(workers.map((w) => call(w, { kind: "deliver", processId: "same", events: Array(10).fill(event) }, "delivered")));
    const answers = replies.flatMap((a) => a.results);
    const retries = answers.reduce((n, a) => n + a.attempts - 1, 0);
    const busy = replies.reduce((n, r) => n + r.busyRetries, 0);
    console.log(`40 copies of one event from ${WORKERS} threads: ${retries} compare-and-set retries, ${busy} busy-database retries`);
    assertEquals(answers.length, 40);
    const applied = answers.filter((a) => a.status === "applied");
    const duplicates = answers.filter((a) => a.status === "duplicate");
    assertEquals(applied.length, 1, JSON.stringify(answers.map((a) => a.status)));
    assertEquals(duplicates.length, 39);
    for (const d of duplicates) assertEquals(d.response, "recorded p1");
    assertEquals(applied[0].revision, 1);
    const store = new DenoKvStore(kv, { machine: m });
    const view = await inspect(store, m, "same");
    assertEquals(view.revision, 1);
    assertEquals(view.context.paid, 40);
    assertEquals((await store.events("same")).map((r) => [r.eventId, r.revision]), [["evt-1", 1]]);
  }));

Deno.test(`50 distinct events, each delivered twice at once from different threads -> all applied once, nothing lost, revisions contiguous`, () =>
  withDb(async ({ kv, workers }) => {
    const m = await demoMachine();
    const ids = Array.from({ length: 50 }, (_, i) => i);
    // Copy 1 of event i goes to worker i % 4, copy 2 to worker (i + 1) % 4: the two copies always race across threads.
    const plan = workers.map(() => []);
    for (const i of ids) {
      plan[i % WORKERS].push(pay(`evt-${i}`, `p${i}`, 1));
      plan[(i + 1) % WORKERS].push(pay(`evt-${i}`, `p${i}`, 1));
    }
    const replies = await Promise.all(workers.map((w, k) => call(w, { kind: "deliver", processId: "many", events: plan[k] }, "delivered")));
    const answers = replies.flatMap((a) => a.results);
    const retries = answers.reduce((n, a) => n + a.attempts - 1, 0);
    const most = Math.max(...answers.map((a) => a.attempts));
    const busy = replies.reduce((n, r) => n + r.busyRetries, 0);
    console.log(`100 deliveries of 50 events from ${WORKERS} threads: ${retries} compare-and-set retries (at most ${most} tries for one delivery), ${busy} busy-database retries`);
    assertEquals(answers.length, 100);
    assertEquals(answers.filter((a) => a.status === "applied").length, 50);
    assertEquals(answers.filter((a) => a.status === "duplicate").length, 50);
    for (const i of ids) {
      const mine = answers.filter((a) => a.id === `evt-${i}`);
      assertEquals(mine.map((a) => a.status).sort(), ["applied", "duplicate"], `evt-${i}`);
    }
    const store = new DenoKvStore(kv, { machine: m });
    const view = await inspect(store, m, "many");
    assertEquals(view.revision, 50);
    assertEquals(view.context.paid, 50, "nothing lost: 50 payments of 1");
    assertEquals([...view.context.payments].sort(), ids.map((i) => `p${i}`).sort());
    const log = await store.events("many", { limit: 1000 });
    assertEquals(log.map((r) => r.revision), ids.map((i) => i + 1), "revisions 1..50, no gap, no repeat");
    assertEquals(log.map((r) => r.eventId).sort(), ids.map((i) => `evt-${i}`).sort());
    assertEquals(
      answers.filter((a) => a.status === "applied").map((a) => a.revision).sort((a, b) => a - b),
      ids.map((i) => i + 1),
      "each applied delivery got its own revision",
    );
  }));

Deno.test("several Deno KV handles on one file in one isolate: 50 events twice each -> all applied once", async () => {
  const tmp = await tempKvPath();
  const handles = await Promise.all(Array.from({ length: 5 }, () => Deno.openKv(tmp.path)));
  try {
    const m = await demoMachine();
    const stores = handles.map((kv) => new DenoKvStore(kv, { machine: m }));
    const deliveries = [];
    for (let i = 0; i < 50; i++) {
      for (const copy of [0, 1]) deliveries.push(apply(stores[(i + copy * 2) % stores.length], m, "handles", pay(`e${i}`, `p${i}`), { maxRetries: 200 }));
    }
    const outs = await Promise.all(deliveries);
    assertEquals(outs.filter((o) => o.status === "applied").length, 50);
    assertEquals(outs.filter((o) => o.status === "duplicate").length, 50);
    const conflicts = outs.reduce((n, o) => n + o.attempts - 1, 0);
    assert(conflicts > 0, "racing handles must lose compare-and-sets (otherwise this test shows nothing)");
    const view = await inspect(stores[0], m, "handles");
    assertEquals(view.revision, 50);
    assertEquals(view.context.payments.length, 50);
    assertEquals((await stores[4].events("handles", { limit: 1000 })).map((r) => r.revision), Array.from({ length: 50 }, (_, i) => i + 1));
  } finally {
    for (const kv of handles) kv.close();
    await tmp.cleanup();
  }
});
