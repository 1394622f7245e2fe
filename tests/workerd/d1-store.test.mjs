// The D1 store's compare-and-set on real D1 (workerd's local SQLite-backed D1,
// reached through Miniflare's binding): a stale or duplicate writer fails its
// whole batch, and nothing of it is left behind; a snapshot longer than a
// chunk is stored in chunk rows, and a commit writes only the ones that changed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Machine } from "../../pkg/src/node.js";
import { apply } from "../../pkg/src/host.js";
import { CHUNK, D1Store, StoreCorruptError } from "../../pkg/src/stores/d1.js";
import { ROOT, startD1, startWorker } from "./harness.mjs";
import { logThreeCommits } from "../../pkg/test/event-log.mjs";

const def = JSON.parse(readFileSync(join(ROOT, "www", "machines", "order-robust.json"), "utf8"));
const pay = (id, paymentId, amount = 1) => ({ id, type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });
let w;
let machine;
before(async () => {
  w = await startWorker();
  machine = new Machine(def);
});
after(() => w?.close());

const storedRows = async (pid) => (await w.db.prepare("SELECT event_id, revision FROM events WHERE process_id = ?1 ORDER BY revision").bind(pid).all()).results;

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
  assert.deepEqual(await storedRows("s1"), [{ event_id: "e1", revision: 1 }, { event_id: "e2", revision: 2 }]);
  assert.deepEqual(machine.inspect((await store.load("s1")).snapshot).context.payments, ["p1", "p2"]);
});

test("a second create of the same process fails (primary key) and logs nothing", async () => {
  const store = new D1Store(w.db);
  const a = machine.reduce(null, pay("e1", "p1"), 1, "s2");
  const b = machine.reduce(null, pay("e2", "p2"), 1, "s2");
  assert.equal((await store.commit("s2", null, a, { event: pay("e1", "p1"), now: 1 })).ok, true);
  assert.deepEqual(await store.commit("s2", null, b, { event: pay("e2", "p2"), now: 1 }), { ok: false, conflict: true });
  assert.deepEqual(await storedRows("s2"), [{ event_id: "e1", revision: 1 }]);
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
  assert.deepEqual(await storedRows("s3"), []);
  assert.deepEqual(machine.inspect((await store.load("s3")).snapshot).context.payments, ["p1", "p2"]);
});

test("the host loop over D1: a lost compare-and-set reloads and finds the duplicate in the ledger", async () => {
  // One store per copy, as in ten isolates: their calls are in no common lane and race.
  const stores = Array.from({ length: 10 }, () => new D1Store(w.db));
  const outs = await Promise.all(stores.map((store) => apply(store, machine, "s4", pay("e1", "p1"), { maxRetries: 64 })));
  assert.ok(outs.some((o) => o.attempts > 1), "some copy lost the compare-and-set");
  assert.equal(outs.filter((o) => o.status === "applied").length, 1);
  assert.equal(outs.filter((o) => o.status === "duplicate").length, 9);
  assert.deepEqual(await storedRows("s4"), [{ event_id: "e1", revision: 1 }]);
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
  assert.deepEqual(await storedRows("s5"), [{ event_id: "e1", revision: 1 }]);
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
  // (A snapshot shorter than a chunk is the row's `snapshot` alone.)
  assert.equal((await w.db.prepare("SELECT chunks FROM processes WHERE process_id = 'k1'").first()).chunks, 0);
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

// ---- snapshots in chunks ---------------------------------------------------------------

const chunkRows = async (db, pid) =>
  (await db.prepare("SELECT idx, text, revision FROM snapshot_chunks WHERE process_id = ?1 ORDER BY idx").bind(pid).all()).results;
const processRow = async (db, pid) =>
  db.prepare("SELECT revision, snapshot, chunks, last_event_id FROM processes WHERE process_id = ?1").bind(pid).first();
/** The full chunks of a snapshot, as the store cuts it. */
const cut = (text) => Array.from({ length: Math.floor(text.length / CHUNK) }, (_, i) => text.slice(i * CHUNK, (i + 1) * CHUNK));
/** `n` payments reduced in memory, from `from`: a snapshot of a few chunks with ~700 of them. */
function payments(pid, n, { prefix = "b", from = null, now = 1_000 } = {}) {
  let out = { snapshot: from };
  for (let i = 0; i < n; i++) out = machine.reduce(out.snapshot, pay(`${prefix}${i}`, `${prefix}${i}`, 0.01), now + i, pid);
  return out;
}
/** Assert that the database holds `text` cut into chunks, the row its tail. */
async function assertStored(db, pid, text) {
  const row = await processRow(db, pid);
  const chunks = cut(text);
  assert.equal(row.chunks, chunks.length);
  assert.equal(row.snapshot, text.slice(chunks.length * CHUNK));
  assert.deepEqual((await chunkRows(db, pid)).map((r) => r.text), chunks);
}

test("a snapshot over several chunks: each event applied once, and a commit rewrites only the chunks whose text changed", async () => {
  const store = new D1Store(w.db);
  const start = payments("big", 700);
  assert.ok(start.snapshot.length > 4 * CHUNK, `snapshot of ${start.snapshot.length} characters`);
  assert.equal((await store.commit("big", null, start, { event: pay("b699", "b699", 0.01), now: 1 })).ok, true);
  await assertStored(w.db, "big", start.snapshot);
  assert.ok((await chunkRows(w.db, "big")).every((r) => r.revision === 700));
  assert.equal(store.chunkWrites, cut(start.snapshot).length);
  // Which revision last changed each chunk's text, followed event by event.
  const changedAt = cut(start.snapshot).map(() => 700);
  let text = start.snapshot;
  let written = 0;
  for (let i = 0; i < 12; i++) {
    const ev = pay(`more${i}`, `more${i}`, 0.01);
    const out = await apply(store, machine, "big", ev, { now: 10_000 + i });
    assert.equal(out.status, "applied");
    cut(out.snapshot).forEach((c, k) => {
      if (c !== cut(text)[k]) {
        changedAt[k] = out.revision;
        written++;
      }
    });
    text = out.snapshot;
  }
  // A copy of an applied event changes nothing.
  const again = await apply(store, machine, "big", pay("more3", "more3", 0.01), { now: 20_000 });
  assert.equal(again.status, "duplicate");
  assert.equal((await processRow(w.db, "big")).revision, 712);
  await assertStored(w.db, "big", text);
  // The database's own record: a chunk's revision is the one whose commit last wrote it, and the
  // chunks before the changed ones were not written again.
  assert.deepEqual((await chunkRows(w.db, "big")).map((r) => r.revision), changedAt);
  assert.ok(changedAt.filter((r) => r === 700).length >= 3, `chunks rewritten: ${changedAt}`);
  assert.equal(store.chunkWrites, cut(start.snapshot).length + written);
  assert.ok(store.chunksSkipped >= 12 * 3);
  // A fresh store reads the same text, and the engine goes on from it.
  const fresh = new D1Store(w.db);
  const loaded = await fresh.load("big");
  assert.equal(loaded.snapshot, text);
  assert.equal(loaded.version, 712);
  assert.equal(machine.inspect(loaded.snapshot).context.payments.length, 712);
  const next = await apply(fresh, machine, "big", pay("last", "last", 0.01), { now: 30_000 });
  assert.equal(next.status, "applied");
  assert.equal((await new D1Store(w.db).load("big")).snapshot, next.snapshot);
});

test("a lost race over chunks: the loser's whole batch rolls back, no chunk of its snapshot is left", async () => {
  const a = new D1Store(w.db);
  const b = new D1Store(w.db);
  const start = payments("race", 700);
  assert.equal((await a.commit("race", null, start, { event: pay("b699", "b699", 0.01), now: 1 })).ok, true);
  const fromB = await b.load("race");
  assert.equal(fromB.snapshot, start.snapshot);
  // The winner appends an event; the loser, at the same expected revision, holds a snapshot that
  // differs from the first chunk on (another history), so its batch would rewrite every chunk.
  const winner = machine.reduce(start.snapshot, pay("w1", "w1", 0.01), 5_000, "race");
  const loser = payments("race", 701, { prefix: "z" });
  assert.equal(loser.revision, winner.revision);
  assert.ok(cut(loser.snapshot).every((c, i) => c !== cut(winner.snapshot)[i]));
  assert.deepEqual(await a.commit("race", 700, winner, { event: pay("w1", "w1", 0.01), now: 5_000 }), { ok: true, version: 701 });
  const writes = b.chunkWrites;
  assert.deepEqual(await b.commit("race", 700, loser, { event: pay("z700", "z700", 0.01), now: 5_000 }), { ok: false, conflict: true });
  assert.equal(b.chunkWrites, writes);
  const row = await processRow(w.db, "race");
  assert.deepEqual([row.revision, row.last_event_id], [701, "w1"]);
  await assertStored(w.db, "race", winner.snapshot);
  const loserChunks = new Set(cut(loser.snapshot));
  assert.ok((await chunkRows(w.db, "race")).every((r) => !loserChunks.has(r.text)));
  assert.deepEqual(await storedRows("race"), [{ event_id: "b699", revision: 700 }, { event_id: "w1", revision: 701 }]);
  assert.equal((await new D1Store(w.db).load("race")).snapshot, winner.snapshot);
  assert.equal((await b.load("race")).snapshot, winner.snapshot);
});

test("a chunk statement that fails (after the row and the log) rolls back the row and the log with it", async () => {
  // A trigger refuses the second chunk of one process: the batch's last statements fail.
  await w.db.prepare("CREATE TRIGGER refuse_chunk BEFORE INSERT ON snapshot_chunks WHEN NEW.process_id = 'refused' AND NEW.idx = 1 BEGIN SELECT RAISE(ABORT, 'chunk refused'); END").run();
  try {
    const store = new D1Store(w.db);
    const start = payments("refused", 700);
    const res = await store.commit("refused", null, start, { event: pay("b699", "b699", 0.01), now: 1 }).catch((err) => err);
    assert.ok(res instanceof Error || res.ok === false, `commit returned ${JSON.stringify(res)}`);
    assert.equal(store.chunkWrites, 0);
    assert.equal(await processRow(w.db, "refused"), null);
    assert.deepEqual(await storedRows("refused"), []);
    assert.deepEqual(await chunkRows(w.db, "refused"), []);
    assert.equal(await store.load("refused"), null);
  } finally {
    await w.db.prepare("DROP TRIGGER refuse_chunk").run();
  }
});

test("a row written before chunks (the whole snapshot in the row) loads, goes on, and its next commit cuts it", async () => {
  const d1 = await startD1();
  try {
    await d1.migrate((f) => f === "0001_init.sql");
    // The process as the store wrote it before 0002_snapshot_chunks.sql: the whole snapshot in the row.
    const old = payments("old", 700);
    await d1.db.batch([
      d1.db
        .prepare("INSERT INTO processes (process_id, revision, snapshot, updated_at, next_due_at, last_event_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
        .bind("old", old.revision, old.snapshot, 1, null, "b699"),
      d1.db
        .prepare("INSERT INTO events (process_id, event_id, revision, type, status, response, received_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
        .bind("old", "b699", old.revision, "PAYMENT_PARTIAL", "applied", "null", 1),
    ]);
    await d1.migrate((f) => f !== "0001_init.sql");
    assert.deepEqual(await processRow(d1.db, "old"), { revision: 700, snapshot: old.snapshot, chunks: 0, last_event_id: "b699" });
    const store = new D1Store(d1.db);
    const loaded = await store.load("old");
    assert.deepEqual(loaded, { snapshot: old.snapshot, version: 700 });
    // The next commit writes every chunk (the row held none) and leaves the tail in the row.
    const out = await apply(store, machine, "old", pay("n1", "n1", 0.01), { now: 10_000 });
    assert.equal(out.status, "applied");
    await assertStored(d1.db, "old", out.snapshot);
    assert.ok((await chunkRows(d1.db, "old")).every((r) => r.revision === 701));
    assert.equal(store.chunkWrites, cut(out.snapshot).length);
    assert.equal(store.chunksSkipped, 0);
    // From then on it is a chunked process like any other.
    const two = await apply(store, machine, "old", pay("n2", "n2", 0.01), { now: 10_001 });
    assert.ok(store.chunksSkipped > 0);
    assert.equal((await new D1Store(d1.db).load("old")).snapshot, two.snapshot);
    assert.deepEqual(machine.inspect(two.snapshot).context.payments.slice(-3), ["b699", "n1", "n2"]);
  } finally {
    await d1.close();
  }
});

test("a snapshot that shrinks, its front rewritten as the ledger drops old records: the extra chunks are deleted", async () => {
  // A small ledger (16 entries) of large records: the snapshot grows to 8 chunks, then shrinks
  // as small events push the large records out, two at a time from the front.
  const notes = new Machine({
    id: "note",
    version: "1",
    initial: "open",
    context: { n: 0 },
    retention: { defaultMs: 86_400_000, maxEntries: 16 },
    states: { open: { on: { NOTE: { actions: [{ assign: { n: { "+": [{ var: "context.n" }, 1] } } }, { respond: { var: "event.payload.text" } }] } } } },
  });
  const store = new D1Store(w.db);
  const note = (i, size) => ({ id: `n${i}`, type: "NOTE", payload: { text: `${i}:`.padEnd(size, "x") } });
  const counts = [];
  let last = null;
  for (let i = 0; i < 40; i++) {
    last = await apply(store, notes, "notes", note(i, i < 16 ? 8_000 : 100), { now: 1_000 + i });
    assert.equal(last.status, "applied");
    const row = await processRow(w.db, "notes");
    counts.push(row.chunks);
    assert.equal((await chunkRows(w.db, "notes")).length, row.chunks);
  }
  assert.equal(Math.max(...counts), 7);
  assert.equal(counts.at(-1), 0);
  assert.ok(counts.some((c, i) => i > 0 && c < counts[i - 1] && c > 0), `chunk counts ${counts}`);
  await assertStored(w.db, "notes", last.snapshot);
  assert.deepEqual(await chunkRows(w.db, "notes"), []);
  const loaded = await new D1Store(w.db).load("notes");
  assert.equal(loaded.snapshot, last.snapshot);
  assert.equal(notes.inspect(loaded.snapshot).context.n, 40);
});

test("a shrink while the store does not know the stored chunks (another writer's revision) still deletes the extra ones", async () => {
  const a = new D1Store(w.db);
  const start = payments("shrink", 700);
  assert.equal((await a.commit("shrink", null, start, { event: pay("b699", "b699", 0.01), now: 1 })).ok, true);
  // An outcome at the next revision whose snapshot is shorter by every chunk (the store does not
  // read snapshots, it stores them), committed by a store that never read this process.
  const next = payments("shrink", 701, { prefix: "s" });
  const shorter = machine.reduce(null, pay("only", "only"), 1, "shrink");
  const smaller = { ...next, snapshot: shorter.snapshot };
  assert.deepEqual(await new D1Store(w.db).commit("shrink", 700, smaller, { event: pay("s700", "s700", 0.01), now: 2 }), { ok: true, version: 701 });
  assert.deepEqual(await chunkRows(w.db, "shrink"), []);
  assert.deepEqual(await a.load("shrink"), { snapshot: shorter.snapshot, version: 701 });
});

test("a chunk missing under a row: load throws a StoreCorruptError (snapshot_corrupt) naming the process, instead of returning a snapshot with a hole", async () => {
  const store = new D1Store(w.db);
  const start = payments("holed", 700);
  assert.equal((await store.commit("holed", null, start, { event: pay("b699", "b699", 0.01), now: 1 })).ok, true);
  await w.db.prepare("DELETE FROM snapshot_chunks WHERE process_id = 'holed' AND idx = 1").run();
  const n = cut(start.snapshot).length;
  const err = await new D1Store(w.db).load("holed").then(
    () => assert.fail("a snapshot with a hole loaded"),
    (e) => e,
  );
  assert.ok(err instanceof StoreCorruptError, `expected a StoreCorruptError, got ${err}`);
  assert.equal(err.name, "IdemError");
  assert.equal(err.code, "snapshot_corrupt");
  assert.equal(err.message, `process "holed": ${n - 1} of ${n} snapshot chunks found at revision 700`);
  assert.equal(err.processId, "holed");
  assert.equal(err.version, 700);
  assert.equal(err.chunks, n);
  assert.equal(err.found, n - 1);
  // The store that wrote it still has it (same revision: not read again).
  assert.equal((await store.load("holed")).snapshot, start.snapshot);
});

test("commitMany: several events in one batch, each logged at its own revision; a stale one writes nothing of any", async () => {
  const store = new D1Store(w.db);
  const events = [pay("e1", "p1"), pay("e2", "p2"), pay("e3", "p3")];
  let snapshot = null;
  const steps = events.map((event, i) => {
    const outcome = machine.reduce(snapshot, event, 10 + i, "s9");
    snapshot = outcome.snapshot;
    return { outcome, extras: { event, now: 10 + i } };
  });
  assert.deepEqual(await store.commitMany("s9", null, steps), { ok: true, version: 3 });
  assert.deepEqual(await storedRows("s9"), [
    { event_id: "e1", revision: 1 },
    { event_id: "e2", revision: 2 },
    { event_id: "e3", revision: 3 },
  ]);
  const received = (await w.db.prepare("SELECT received_at FROM events WHERE process_id = 's9' ORDER BY revision").all()).results;
  assert.deepEqual(received.map((r) => r.received_at), [10, 11, 12]);
  assert.equal((await new D1Store(w.db).load("s9")).snapshot, snapshot, "the last step's snapshot, read by another store");
  // Two more from revision 1: the row is at 3, so neither log row nor the row is written.
  let from1 = steps[0].outcome.snapshot;
  const stale = [pay("e4", "p4"), pay("e5", "p5")].map((event) => {
    const outcome = machine.reduce(from1, event, 20, "s9");
    from1 = outcome.snapshot;
    return { outcome, extras: { event, now: 20 } };
  });
  assert.deepEqual(await store.commitMany("s9", 1, stale), { ok: false, conflict: true });
  assert.deepEqual((await storedRows("s9")).map((r) => r.event_id), ["e1", "e2", "e3"]);
  assert.equal((await new D1Store(w.db).load("s9")).version, 3);
});

test("the host loop over D1: calls waiting in a lane are committed together, each event once, in order", async () => {
  const store = new D1Store(w.db);
  let batches = 0;
  const commitMany = store.commitMany.bind(store);
  store.commitMany = (id, expected, steps) => {
    if (steps.length > 1) batches++;
    return commitMany(id, expected, steps);
  };
  const events = Array.from({ length: 20 }, (_, i) => pay(`e${i}`, `p${i}`));
  const outs = await Promise.all([...events, ...events].map((e) => apply(store, machine, "s10", e)));
  assert.equal(outs.filter((o) => o.status === "applied").length, 20);
  assert.equal(outs.filter((o) => o.status === "duplicate").length, 20);
  assert.ok(batches > 0, "some batch carried several events");
  assert.deepEqual(await storedRows("s10"), events.map((e, i) => ({ event_id: e.id, revision: i + 1 })));
  assert.equal(machine.inspect((await new D1Store(w.db).load("s10")).snapshot).context.payments.length, 20);
});

test("the event log holds the row every store writes, and no guard row of a commit without an event", async () => {
  const event = (i) => pay(`e${i}`, `p${i}`);
  const { rows, expected } = await logThreeCommits(new D1Store(w.db), machine, "log1", event);
  assert.deepEqual(rows, expected);
  assert.deepEqual((await storedRows("log1")).map((r) => r.event_id), ["e1", "e2", "revision-3"], "the guard row is stored all the same");
});
