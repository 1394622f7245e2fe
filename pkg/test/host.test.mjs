import { test } from "node:test";
import assert from "node:assert/strict";
import { Machine } from "../src/node.js";
import { apply, ContentionError, inspect } from "../src/host.js";
import { MemoryStore } from "../src/stores/memory.js";
import { orderDefinition, checkoutMachine, manualClock } from "./helpers.mjs";

const pay = (id, paymentId, amount = 1) => ({ id, type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });

test("applied, then the same event again is a duplicate that costs a read and no write", async () => {
  const store = new MemoryStore();
  const m = new Machine(orderDefinition());
  const now = manualClock();
  const first = await apply(store, m, "o1", pay("e1", "p1", 40), { now });
  assert.equal(first.status, "applied");
  assert.equal(first.version, 1);
  assert.equal(store.writes, 1);
  const again = await apply(store, m, "o1", pay("e1", "p1", 40), { now });
  assert.equal(again.status, "duplicate");
  assert.deepEqual(again.response, first.response);
  assert.equal(store.writes, 1, "a duplicate must not write");
  assert.equal((await inspect(store, m, "o1")).context.paid, 40);
});

test("conflict, ignored and rejected write nothing", async () => {
  const store = new MemoryStore();
  const m = new Machine(orderDefinition());
  await apply(store, m, "o1", pay("e1", "p1", 40));
  const conflict = await apply(store, m, "o1", pay("e1", "p1", 41));
  assert.equal(conflict.status, "conflict");
  assert.equal(conflict.error.code, "id_conflict");
  const rejected = await apply(store, m, "o1", { id: "e2", type: "NOPE" });
  assert.equal(rejected.status, "rejected");
  assert.equal(rejected.error.code, "unknown_event_type");
  const ignored = await apply(store, m, "o1", { id: "e3", type: "SHIP" });
  assert.equal(ignored.status, "ignored");
  assert.equal(store.writes, 1);
});

test("an event a new process ignores does not create it", async () => {
  const store = new MemoryStore();
  const m = new Machine(orderDefinition());
  const out = await apply(store, m, "fresh", { id: "e1", type: "SHIP" });
  assert.equal(out.status, "ignored");
  assert.equal(await store.load("fresh"), null);
});

test("50 concurrent deliveries of one event: one applied, 49 duplicates with the first response, one write", async () => {
  const store = new MemoryStore();
  const m = new Machine(orderDefinition());
  const outs = await Promise.all(Array.from({ length: 50 }, () => apply(store, m, "o1", pay("e1", "p1", 40))));
  const applied = outs.filter((o) => o.status === "applied");
  const dups = outs.filter((o) => o.status === "duplicate");
  assert.equal(applied.length, 1);
  assert.equal(dups.length, 49);
  for (const d of dups) assert.deepEqual(d.response, applied[0].response);
  assert.equal(store.writes, 1);
  assert.ok(store.conflicts > 0, "the race really happened (some compare-and-set lost)");
  assert.equal((await store.events("o1")).length, 1);
});

test("50 distinct events delivered concurrently twice each: all applied once, revisions contiguous", async () => {
  const store = new MemoryStore();
  const m = checkoutMachine();
  const events = Array.from({ length: 50 }, (_, i) => pay(`e${i}`, `p${i}`, 1));
  const deliveries = [...events, ...events]; // both copies in flight together
  const outs = await Promise.all(deliveries.map((e) => apply(store, m, "o1", e, { maxRetries: 200 })));
  assert.equal(outs.filter((o) => o.status === "applied").length, 50);
  assert.equal(outs.filter((o) => o.status === "duplicate").length, 50);
  const view = await inspect(store, m, "o1");
  assert.equal(view.context.paid, 50);
  assert.deepEqual([...view.context.payments].sort(), events.map((e) => e.payload.paymentId).sort());
  const revisions = (await store.events("o1", { limit: 1000 })).map((r) => r.revision);
  assert.deepEqual(revisions, Array.from({ length: 50 }, (_, i) => i + 1));
});

test("contention that outlasts the retries throws ContentionError with code contention", async () => {
  const inner = new MemoryStore();
  const m = new Machine(orderDefinition());
  await apply(inner, m, "o1", pay("e0", "p0", 1));
  // Every commit loses: another writer always got there first.
  const store = { load: (id) => inner.load(id), commit: async () => ({ ok: false, conflict: true }) };
  const conflicts = [];
  await assert.rejects(
    apply(store, m, "o1", pay("e1", "p1", 1), { maxRetries: 3, backoff: () => 0, onConflict: (c) => conflicts.push(c.attempt) }),
    (err) => err instanceof ContentionError && err.code === "contention" && err.attempts === 4,
  );
  assert.deepEqual(conflicts, [1, 2, 3, 4]);
});
