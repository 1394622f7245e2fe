// The D1 store's compare-and-set on real D1 (workerd's local SQLite-backed D1,
// reached through Miniflare's binding): a stale or duplicate writer fails its
// whole batch, and nothing of it is left behind.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Machine } from "../../pkg/src/node.js";
import { apply } from "../../pkg/src/host.js";
import { D1Store } from "../../pkg/src/stores/d1.js";
import { ROOT, startWorker } from "./harness.mjs";

const def = JSON.parse(readFileSync(join(ROOT, "www", "machines", "order-robust.json"), "utf8"));
const pay = (id, paymentId, amount = 1) => ({ id, type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });
let w;
let machine;
before(async () => {
  w = await startWorker();
  machine = new Machine(def);
});
after(() => w?.close());

const rows = async (pid) => (await w.db.prepare("SELECT event_id, revision FROM events WHERE process_id = ?1 ORDER BY revision").bind(pid).all()).results;

test("a writer that loaded an old revision fails its whole batch", async () => {
  const store = new D1Store(w.db);
  const now = 1_000;
  const first = machine.reduce(null, pay("e1", "p1"), now, "s1");
  assert.deepEqual(await store.commit("s1", null, first, { event: pay("e1", "p1"), now }), { ok: true, version: 1 });
  const loaded = await store.load("s1");
  // Two writers reduce different events from revision 1.
  const a = machine.reduce(loaded.snapshot, pay("e2", "p2"), now, "s1");
  const b = machine.reduce(loaded.snapshot, pay("e3", "p3"), now, "s1");
  assert.deepEqual(await store.commit("s1", 1, a, { event: pay("e2", "p2"), now }), { ok: true, version: 2 });
  assert.deepEqual(await store.commit("s1", 1, b, { event: pay("e3", "p3"), now }), { ok: false, conflict: true });
  assert.deepEqual(await rows("s1"), [{ event_id: "e1", revision: 1 }, { event_id: "e2", revision: 2 }]);
  assert.deepEqual(machine.inspect((await store.load("s1")).snapshot).context.payments, ["p1", "p2"]);
});

test("a second create of the same process fails (primary key) and logs nothing", async () => {
  const store = new D1Store(w.db);
  const a = machine.reduce(null, pay("e1", "p1"), 1, "s2");
  const b = machine.reduce(null, pay("e2", "p2"), 1, "s2");
  assert.equal((await store.commit("s2", null, a, { event: pay("e1", "p1"), now: 1 })).ok, true);
  assert.deepEqual(await store.commit("s2", null, b, { event: pay("e2", "p2"), now: 1 }), { ok: false, conflict: true });
  assert.deepEqual(await rows("s2"), [{ event_id: "e1", revision: 1 }]);
});

test("an UPDATE that matches no row fails the batch even when no UNIQUE constraint would (NOT NULL on the log)", async () => {
  const store = new D1Store(w.db);
  const e1 = pay("e1", "p1");
  const o1 = machine.reduce(null, e1, 1, "s3");
  await store.commit("s3", null, o1, { event: e1, now: 1 });
  const o2 = machine.reduce(o1.snapshot, pay("e2", "p2"), 1, "s3");
  await store.commit("s3", 1, o2, { event: pay("e2", "p2"), now: 1 });
  // Prune the log (as a retention job might): UNIQUE(process_id, revision) no longer guards revision 2.
  await w.db.prepare("DELETE FROM events WHERE process_id = 's3'").run();
  const stale = machine.reduce(o1.snapshot, pay("e3", "p3"), 1, "s3"); // from revision 1: also produces revision 2
  assert.deepEqual(await store.commit("s3", 1, stale, { event: pay("e3", "p3"), now: 1 }), { ok: false, conflict: true });
  assert.deepEqual(await rows("s3"), []);
  assert.deepEqual(machine.inspect((await store.load("s3")).snapshot).context.payments, ["p1", "p2"]);
});

test("the host loop over D1: a lost compare-and-set reloads and finds the duplicate in the ledger", async () => {
  const store = new D1Store(w.db);
  const outs = await Promise.all(Array.from({ length: 10 }, () => apply(store, machine, "s4", pay("e1", "p1"), { maxRetries: 64 })));
  assert.equal(outs.filter((o) => o.status === "applied").length, 1);
  assert.equal(outs.filter((o) => o.status === "duplicate").length, 9);
  assert.deepEqual(await rows("s4"), [{ event_id: "e1", revision: 1 }]);
});

test("when the UPDATE succeeds but the log insert fails (event id already logged), the UPDATE is rolled back", async () => {
  const store = new D1Store(w.db);
  const e1 = pay("e1", "p1");
  const o1 = machine.reduce(null, e1, 1, "s5");
  await store.commit("s5", null, o1, { event: e1, now: 1 });
  // A writer whose snapshot forgot e1 (another history) produces revision 2 for the same event id.
  const other = machine.reduce(null, pay("e0", "p0"), 1, "s5");
  const again = machine.reduce(other.snapshot, e1, 1, "s5");
  assert.equal(again.revision, 2);
  assert.deepEqual(await store.commit("s5", 1, again, { event: e1, now: 1 }), { ok: false, conflict: true });
  const row = await w.db.prepare("SELECT revision, last_event_id FROM processes WHERE process_id = 's5'").first();
  assert.deepEqual(row, { revision: 1, last_event_id: "e1" });
  assert.deepEqual(machine.inspect((await store.load("s5")).snapshot).context.payments, ["p1"]);
  assert.deepEqual(await rows("s5"), [{ event_id: "e1", revision: 1 }]);
});

test("a store keeps the snapshot it wrote: same revision -> the same string, not read again; another writer's commit -> read", async () => {
  const a = new D1Store(w.db);
  const b = new D1Store(w.db);
  const now = 5_000;
  const first = machine.reduce(null, pay("e1", "p1", 10), now, "k1");
  assert.equal((await a.commit("k1", null, first, { event: pay("e1", "p1", 10), now })).ok, true);
  const one = await a.load("k1");
  assert.equal(one.snapshot, first.snapshot);
  // The row's text changed behind the store's back, revision unchanged: the store does not read it again
  // (a fresh store does), which shows the kept string is what it returns.
  await w.db.prepare("UPDATE processes SET snapshot = 'changed' WHERE process_id = 'k1'").run();
  assert.equal((await a.load("k1")).snapshot, first.snapshot);
  assert.equal((await new D1Store(w.db).load("k1")).snapshot, "changed");
  await w.db.prepare("UPDATE processes SET snapshot = ?1 WHERE process_id = 'k1'").bind(first.snapshot).run();
  // Another writer (another isolate) moves the process on: the kept string is not returned any more.
  const fromB = await b.load("k1");
  const next = machine.reduce(fromB.snapshot, pay("e2", "p2", 5), now, "k1");
  assert.equal((await b.commit("k1", fromB.version, next, { event: pay("e2", "p2", 5), now })).ok, true);
  const two = await a.load("k1");
  assert.equal(two.version, 2);
  assert.equal(two.snapshot, next.snapshot);
  assert.deepEqual(machine.inspect(two.snapshot).context.payments, ["p1", "p2"]);
  // A commit that loses its race forgets the kept snapshot; the next load reads the row.
  const stale = machine.reduce(one.snapshot, pay("e3", "p3", 1), now, "k1");
  assert.deepEqual(await a.commit("k1", 1, stale, { event: pay("e3", "p3", 1), now }), { ok: false, conflict: true });
  assert.equal((await a.load("k1")).snapshot, next.snapshot);
});
