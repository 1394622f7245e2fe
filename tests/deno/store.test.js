// The Deno KV store on real Deno KV (a SQLite file): the compare-and-set, the
// side records, and snapshots larger than Deno KV's 64 KiB value limit (in 16 KiB chunks).
import { assert, assertEquals, assertRejects } from "./assert.js";
import { Machine } from "../../pkg/src/deno.js";
import { apply, inspect } from "../../pkg/src/host.js";
import { CHUNK_BYTES, DENO_KV_LIMITS, DenoKvStore, StoreCorruptError, StoreLimitError } from "../../pkg/src/stores/denokv.js";
import { logThreeCommits } from "../../pkg/test/event-log.mjs";
import { demoMachine, eventually, note, notesMachine, pay, processKeys, tempKvPath } from "./helpers.js";

async function withKv(fn) {
  const tmp = await tempKvPath();
  const kv = await Deno.openKv(tmp.path);
  try {
    await fn(kv, tmp.path);
  } finally {
    kv.close();
    await tmp.cleanup();
  }
}

Deno.test("applied, duplicate, conflict, ignored: only an applied event writes; version = the head's versionstamp", () =>
  withKv(async (kv) => {
    const m = await demoMachine();
    const store = new DenoKvStore(kv, { machine: m });
    const first = await apply(store, m, "o1", pay("e1", "p1", 40));
    assertEquals(first.status, "applied");
    assertEquals(typeof first.version, "string");
    assertEquals(first.version, (await kv.get(["idem", "process", "o1", 0])).versionstamp);
    const again = await apply(store, m, "o1", pay("e1", "p1", 40));
    assertEquals(again.status, "duplicate");
    assertEquals(again.version, first.version, "a duplicate writes nothing");
    assertEquals(again.response, first.response);
    assertEquals((await apply(store, m, "o1", pay("e1", "p1", 41))).status, "conflict");
    assertEquals((await apply(store, m, "o1", { id: "e2", type: "SHIP" })).status, "ignored");
    assertEquals((await store.load("o1")).version, first.version);
    assertEquals((await inspect(store, m, "o1")).context.paid, 40);
    assertEquals(await store.load("nobody"), null);
  }));

Deno.test("a store keeps the snapshot it wrote: unchanged head -> the same string; another writer's commit -> read again", () =>
  withKv(async (kv) => {
    const m = await demoMachine();
    const a = new DenoKvStore(kv, { machine: m });
    const b = new DenoKvStore(kv, { machine: m });
    await apply(a, m, "o1", pay("e1", "p1", 40));
    const first = await a.load("o1");
    // A chunk changed behind the store's back, head unchanged: the store does not read it again (a
    // fresh store does), which shows the kept string is what it returns.
    const chunk = await kv.get(["idem", "process", "o1", 1]);
    const changed = chunk.value.slice();
    changed[0] = "X".charCodeAt(0);
    await kv.set(["idem", "process", "o1", 1], changed);
    const again = await a.load("o1");
    assertEquals(again.snapshot, first.snapshot);
    assertEquals(again.version, first.version);
    assertEquals((await new DenoKvStore(kv, { machine: m }).load("o1")).snapshot, "X" + first.snapshot.slice(1));
    await kv.set(["idem", "process", "o1", 1], chunk.value);
    // Another handle (another isolate) commits: the kept string is not returned any more.
    assertEquals((await apply(b, m, "o1", pay("e2", "p2", 10))).status, "applied");
    const fresh = await a.load("o1");
    assert(fresh.version !== first.version);
    assertEquals(m.inspect(fresh.snapshot).context.paid, 50);
    assertEquals((await apply(a, m, "o1", pay("e2", "p2", 10))).status, "duplicate");
    assertEquals((await apply(a, m, "o1", pay("e3", "p3", 5))).revision, 3);
  }));

Deno.test("a commit against a stale version is a conflict and writes nothing; creating an existing process too", () =>
  withKv(async (kv) => {
    const m = await demoMachine();
    const store = new DenoKvStore(kv, { machine: m });
    await apply(store, m, "o1", pay("e1", "p1"));
    const loaded = await store.load("o1");
    const a = m.reduce(loaded.snapshot, pay("e2", "p2"), Date.now(), "o1");
    const b = m.reduce(loaded.snapshot, pay("e3", "p3"), Date.now(), "o1");
    const other = new DenoKvStore(kv, { machine: m }); // a second writer with its own cache
    assertEquals((await store.commit("o1", loaded.version, a, { event: pay("e2", "p2") })).ok, true);
    assertEquals(await other.commit("o1", loaded.version, b, { event: pay("e3", "p3") }), { ok: false, conflict: true });
    assertEquals(await store.commit("o1", loaded.version, b, { event: pay("e3", "p3") }), { ok: false, conflict: true });
    assertEquals(await store.commit("o1", null, b, { event: pay("e3", "p3") }), { ok: false, conflict: true });
    assertEquals((await inspect(store, m, "o1")).context.payments, ["p1", "p2"]);
    assertEquals((await store.events("o1")).map((r) => r.eventId), ["e1", "e2"]);
    assertEquals(await store.eventRecord("o1", "e3"), null);
  }));

Deno.test("event log and replay records: who sent what and the first outcome, by revision and by event id", () =>
  withKv(async (kv) => {
    const m = await demoMachine();
    const store = new DenoKvStore(kv, { machine: m });
    const now = 1_800_000_000_000;
    await apply(store, m, "o1", pay("k1", "p1"), { now });
    await apply(store, m, "o1", pay("k1", "p1"), { now: now + 1 });
    await apply(store, m, "o1", pay("k2", "p2"), { now: now + 2 });
    const log = await store.events("o1");
    assertEquals(log, [
      { eventId: "k1", revision: 1, type: "PAYMENT_PARTIAL", status: "applied", response: "recorded p1", receivedAt: now },
      { eventId: "k2", revision: 2, type: "PAYMENT_PARTIAL", status: "applied", response: "recorded p2", receivedAt: now + 2 },
    ]);
    assertEquals((await store.events("o1", { after: 1 })).map((r) => r.revision), [2]);
    assertEquals((await store.events("o1", { limit: 1 })).map((r) => r.revision), [1]);
    assertEquals(await store.eventRecord("o1", "k2"), log[1]);
  }));

Deno.test("a snapshot of several hundred KiB is split into 16 KiB chunks in one commit, reassembled on load, and the next event applies", () =>
  withKv(async (kv) => {
    const m = notesMachine();
    const store = new DenoKvStore(kv, { machine: m });
    let last;
    for (let i = 0; i < 15; i++) {
      last = await apply(store, m, "big", note(i, 30_000));
      assertEquals(last.status, "applied");
    }
    const loaded = await store.load("big");
    const bytes = loaded.snapshot.length;
    console.log(`large snapshot: ${bytes} bytes in ${Math.ceil(bytes / CHUNK_BYTES)} chunks`);
    assert(bytes > 400 * 1024, `several hundred KiB (got ${bytes})`);
    assert(bytes > DENO_KV_LIMITS.maxValueBytes * 6);
    assertEquals(loaded.snapshot, last.snapshot, "the text stored is the text loaded");
    assertEquals(await kvText(kv, "big"), last.snapshot, "the chunks, read key by key, are the text in order");
    assertEquals((await processKeys(kv, "big")).length, 1 + Math.ceil(bytes / CHUNK_BYTES));
    const view = m.inspect(loaded.snapshot);
    assertEquals(view.context.n, 15);
    assertEquals(view.ledger.length, 15);
    assertEquals(view.ledger[3].response, note(3, 30_000).payload.note, "a response recorded in chunk 2 comes back whole");
    // The next event applies on the reassembled snapshot, and a copy of an old one is a duplicate.
    const next = await apply(store, m, "big", note(15, 10));
    assertEquals(next.status, "applied");
    assertEquals(next.revision, 16);
    const dup = await apply(store, m, "big", note(2, 30_000));
    assertEquals(dup.status, "duplicate");
    assertEquals(dup.response, note(2, 30_000).payload.note);
    assertEquals((await inspect(store, m, "big")).context.n, 16);
  }));

/** The snapshot text as the chunk values hold it, read key by key. */
async function kvText(kv, processId) {
  const head = await kv.get(["idem", "process", processId, 0]);
  let text = "";
  for (let i = 1; i <= head.value.chunks; i++) text += new TextDecoder().decode((await kv.get(["idem", "process", processId, i])).value);
  return text;
}

/** The error `load` throws, which must be a StoreCorruptError (snapshot_corrupt) for `processId`. */
async function corruptLoad(store, processId) {
  const err = await store.load(processId).then(
    (loaded) => {
      throw new Error(`a damaged snapshot loaded (${loaded?.snapshot.length} characters)`);
    },
    (e) => e,
  );
  assert(err instanceof StoreCorruptError, `expected a StoreCorruptError, got ${err}`);
  assertEquals(err.name, "IdemError");
  assertEquals(err.code, "snapshot_corrupt");
  assertEquals(err.processId, processId);
  return err;
}

Deno.test("a chunk key missing: load throws a StoreCorruptError (snapshot_corrupt) naming the process, and the host loop writes nothing", () =>
  withKv(async (kv) => {
    const m = notesMachine();
    const store = new DenoKvStore(kv, { machine: m });
    for (let i = 0; i < 3; i++) assertEquals((await apply(store, m, "holed", note(i, 20_000))).status, "applied");
    const head = await kv.get(["idem", "process", "holed", 0]);
    assert(head.value.chunks >= 3, `${head.value.chunks} chunks`);
    await kv.delete(["idem", "process", "holed", 2]);
    const keys = await processKeys(kv, "holed");
    const err = await corruptLoad(new DenoKvStore(kv, { machine: m }), "holed");
    assertEquals(err.message, `process "holed": ${head.value.chunks - 1} of ${head.value.chunks} snapshot chunks found at version ${head.versionstamp}`);
    assertEquals(err.version, head.versionstamp);
    assertEquals(err.chunks, head.value.chunks);
    assertEquals(err.found, head.value.chunks - 1);
    // Through the host loop, with a store that never read it: thrown, nothing written.
    const other = new DenoKvStore(kv, { machine: m });
    const thrown = await apply(other, m, "holed", note(3, 10)).then(() => null, (e) => e);
    assert(thrown instanceof StoreCorruptError, `expected a StoreCorruptError, got ${thrown}`);
    assertEquals((await kv.get(["idem", "process", "holed", 0])).versionstamp, head.versionstamp);
    assertEquals(await processKeys(kv, "holed"), keys);
    assertEquals(await other.eventRecord("holed", "note-3"), null);
  }));

Deno.test("a chunk of the wrong length (the chunks' bytes are not the head's count): load throws a StoreCorruptError", () =>
  withKv(async (kv) => {
    const m = notesMachine();
    const store = new DenoKvStore(kv, { machine: m });
    for (let i = 0; i < 3; i++) assertEquals((await apply(store, m, "cut", note(i, 20_000))).status, "applied");
    const head = await kv.get(["idem", "process", "cut", 0]);
    const { chunks, bytes } = head.value;
    const key = (i) => ["idem", "process", "cut", i];
    const middle = (await kv.get(key(2))).value;
    // Shorter by ten bytes: the chunks hold fewer than the head's count.
    await kv.set(key(2), middle.slice(0, middle.byteLength - 10));
    let err = await corruptLoad(new DenoKvStore(kv, { machine: m }), "cut");
    assertEquals(err.message, `process "cut": snapshot chunks hold ${bytes - 10} of ${bytes} bytes at version ${head.versionstamp}`);
    assertEquals(err.bytes, bytes);
    assertEquals(err.bytesFound, bytes - 10);
    assertEquals(err.chunks, chunks);
    // Longer by ten bytes: they hold more.
    await kv.set(key(2), new Uint8Array([...middle, ...new Uint8Array(10).fill(120)]));
    err = await corruptLoad(new DenoKvStore(kv, { machine: m }), "cut");
    assert(err.message.startsWith(`process "cut": snapshot chunks exceed ${bytes} bytes at version `), err.message);
    // Restored, it loads.
    await kv.set(key(2), middle);
    assertEquals((await new DenoKvStore(kv, { machine: m }).load("cut")).snapshot, await kvText(kv, "cut"));
  }));

Deno.test("when the snapshot shrinks, the chunks it no longer needs are deleted in the same commit", () =>
  withKv(async (kv) => {
    const m = notesMachine({ maxEntries: 8 });
    const store = new DenoKvStore(kv, { machine: m });
    for (let i = 0; i < 8; i++) await apply(store, m, "shrink", note(i, 50_000));
    const bigKeys = (await processKeys(kv, "shrink")).length;
    assert(bigKeys >= 7, `${bigKeys} keys`);
    for (let i = 8; i < 16; i++) await apply(store, m, "shrink", note(i, 10)); // evicts the big entries
    const keys = await processKeys(kv, "shrink");
    assertEquals(keys.map((k) => k[3]), [0, 1]);
    const view = await inspect(store, m, "shrink");
    assertEquals(view.context.n, 16);
    assertEquals(view.ledger.map((e) => e.id), Array.from({ length: 8 }, (_, i) => `note-${i + 8}`));
  }));

Deno.test("a snapshot just under the store's published maximum commits, with a 60 KB response on top", () =>
  withKv(async (kv) => {
    const m = notesMachine();
    const store = new DenoKvStore(kv, { machine: m });
    const max = DenoKvStore.maxSnapshotBytes;
    const now = Date.now();
    // Grow with the engine alone to 60 KB under the maximum, then store one event whose
    // frozen response is 60 KB (the snapshot's ledger and the log row both hold it).
    let snapshot = null;
    let i = 0;
    const grow = (size) => (snapshot = m.reduce(snapshot, note(i++, size), now, "edge").snapshot);
    const room = () => max - (snapshot?.length ?? 0);
    while (room() > 61_300 + 61_200) grow(60_000);
    grow(room() - 61_300 - 200);
    const last = note(i, 60_000);
    const out = m.reduce(snapshot, last, now, "edge");
    assertEquals(out.response.length, 60_000);
    assert(out.snapshot.length <= max && out.snapshot.length > max - 2_000, `${out.snapshot.length}`);
    const res = await store.commit("edge", null, out, { event: last, now });
    assertEquals(res.ok, true);
    assertEquals((await store.load("edge")).snapshot, out.snapshot);
    console.log(`largest tested snapshot that commits: ${out.snapshot.length} bytes (published maximum ${max})`);
  }));

Deno.test("the published maximum fits at the worst: 256-byte process and event ids, a 60 KB response, a queue message, every chunk set", () =>
  withKv(async (kv) => {
    const m = notesMachine();
    const store = new DenoKvStore(kv, { machine: m, queue: true });
    const max = DenoKvStore.maxSnapshotBytes;
    const pid = "p".repeat(256);
    const now = Date.now();
    let snapshot = null;
    let i = 0;
    const grow = (size) => (snapshot = m.reduce(snapshot, note(i++, size), now, pid).snapshot);
    const room = () => max - (snapshot?.length ?? 0);
    while (room() > 61_300 + 61_200) grow(60_000);
    grow(room() - 61_300 - 200);
    const last = { ...note(i, 60_000), id: `${i}-`.padEnd(256, "e") };
    const out = m.reduce(snapshot, last, now, pid);
    assertEquals(out.status, "applied");
    assert(out.snapshot.length <= max && out.snapshot.length > max - 2_000, `${out.snapshot.length}`);
    // A store that knows nothing of the process sets every chunk: the largest commit there is.
    const res = await store.commit(pid, null, { ...out, nextDueAt: now + 60_000 }, { event: last, now });
    assertEquals(res.ok, true);
    assertEquals(store.chunksSkipped, 0);
    assertEquals(store.chunkWrites, Math.ceil(out.snapshot.length / CHUNK_BYTES));
    assertEquals((await new DenoKvStore(kv, { machine: m }).load(pid)).snapshot, out.snapshot);
  }));

Deno.test("over Deno KV's atomic limits: a clear StoreLimitError before anything is written", () =>
  withKv(async (kv) => {
    const m = notesMachine();
    const store = new DenoKvStore(kv, { machine: m, queue: true });
    let before;
    let keysBefore;
    let err = null;
    let i = 0;
    for (; i < 20 && err === null; i++) {
      before = await store.load("huge");
      keysBefore = await processKeys(kv, "huge");
      err = await apply(store, m, "huge", note(i, 60_000)).then(
        (out) => (assertEquals(out.status, "applied"), null),
        (e) => e,
      );
    }
    assert(err instanceof StoreLimitError, `expected a StoreLimitError, got ${err}`);
    assertEquals(err.code, "snapshot_too_large");
    assert(before.snapshot.length > 700 * 1024, `the last stored snapshot: ${before.snapshot.length} bytes`);
    assert(err.commitBytes > DENO_KV_LIMITS.maxTotalMutationBytes, `${err.commitBytes}`);
    assert(/over Deno KV's 819200-byte limit/.test(err.message), err.message);
    assert(/Nothing was written/.test(err.message), err.message);
    console.log(`over the limit: ${err.message}`);
    // Nothing written: same head, same chunks, no log row, no replay record, no queued message.
    const failed = `note-${i - 1}`;
    const after = await store.load("huge");
    assertEquals(after.version, before.version);
    assertEquals(after.snapshot, before.snapshot);
    assertEquals(await processKeys(kv, "huge"), keysBefore);
    assertEquals((await store.events("huge", { after: i - 1 })).length, 0);
    assertEquals(await store.eventRecord("huge", failed), null);
    // The process still works for events that fit.
    assertEquals((await apply(store, m, "huge", note(99, 10))).status, "applied");
  }));

Deno.test("with limits.maxSnapshotBytes at the store's maximum, the engine rejects the event instead: nothing thrown, nothing written", () =>
  withKv(async (kv) => {
    const m = notesMachine({ maxSnapshotBytes: DenoKvStore.maxSnapshotBytes });
    const store = new DenoKvStore(kv, { machine: m });
    let out;
    let i = 0;
    do out = await apply(store, m, "capped", note(i++, 60_000));
    while (out.status === "applied" && i < 20);
    assertEquals(out.status, "rejected");
    assertEquals(out.error.code, "snapshot_too_large");
    const view = await inspect(store, m, "capped");
    assertEquals(view.context.n, i - 1);
    assertEquals(view.revision, i - 1);
  }));

Deno.test("side records carry their type's retention window (expireIn): they go, the process stays", async () => {
  const tmp = await tempKvPath();
  const def = {
    id: "windows",
    version: "1",
    initial: "open",
    retention: { defaultMs: 86_400_000, perType: { BRIEF: 300 } },
    states: { open: { on: { BRIEF: { actions: [{ respond: "brief" }] }, LASTING: { actions: [{ respond: "lasting" }] } } } },
  };
  const m = new Machine(def);
  let kv = await Deno.openKv(tmp.path);
  try {
    const store = new DenoKvStore(kv, { machine: m });
    await apply(store, m, "w", { id: "b1", type: "BRIEF" });
    await apply(store, m, "w", { id: "l1", type: "LASTING" });
    assertEquals((await store.events("w")).map((r) => r.eventId), ["b1", "l1"]);
    // Local Deno KV deletes expired keys on a timer a handle schedules when it opens (and at
    // least every minute); a fresh handle collects these at their expiry time.
    kv.close();
    kv = await Deno.openKv(tmp.path);
    const fresh = new DenoKvStore(kv, { machine: m });
    await eventually(async () => (await fresh.eventRecord("w", "b1")) === null && (await fresh.events("w")).length === 1, {
      what: "the BRIEF records expiring",
      tries: 200,
    });
    assertEquals((await fresh.events("w")).map((r) => r.eventId), ["l1"], "the LASTING row (1 day) stays");
    assertEquals((await fresh.eventRecord("w", "l1")).response, "lasting");
    assertEquals((await kv.get(["idem", "event", "w", "b1"])).value, null, "the replay record went with its row");
    const view = await inspect(fresh, m, "w");
    assertEquals(view.revision, 2, "the snapshot has no expiry");
  } finally {
    kv.close();
    await tmp.cleanup();
  }
});

// ---- A commit sets only the chunks whose bytes changed ----

/** Versionstamps of a process's keys by their last part (0 = the head, 1.. = the chunks). */
async function stamps(kv, processId) {
  const out = [];
  for await (const e of kv.list({ prefix: ["idem", "process", processId] })) out[e.key[3]] = e.versionstamp;
  return out;
}

/** Index of the first character where two strings differ (the shorter one's length if none). */
function firstDiff(a, b) {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

const chunksOf = (text) => Math.max(1, Math.ceil(text.length / CHUNK_BYTES));

/**
 * One commit replaced `oldText` with `newText` (ASCII): the chunks wholly before the first changed
 * byte kept their versionstamps, the head and every other chunk carry the commit's, chunks beyond
 * the new count are gone, the counters say the same, and a store with nothing kept loads `newText`.
 * Returns the number of chunks left alone.
 */
async function checkCommit(kv, processId, { before, oldText, newText, version, store, counters }) {
  const after = await stamps(kv, processId);
  const unchanged = Math.min(Math.floor(firstDiff(oldText, newText) / CHUNK_BYTES), chunksOf(oldText), chunksOf(newText));
  assertEquals(after.length, 1 + chunksOf(newText), "one key per chunk, extra chunks deleted");
  assertEquals(after[0], version, "the head is set");
  for (let c = 1; c <= unchanged; c++) assertEquals(after[c], before[c], `chunk ${c} before the change is left alone`);
  for (let c = unchanged + 1; c < after.length; c++) assertEquals(after[c], version, `chunk ${c} from the change on is set`);
  assertEquals(store.chunksSkipped - counters.skipped, unchanged);
  assertEquals(store.chunkWrites - counters.writes, chunksOf(newText) - unchanged);
  assertEquals(store.chunkBytesWritten - counters.bytes, newText.length - unchanged * CHUNK_BYTES);
  const fresh = await new DenoKvStore(kv).load(processId);
  assertEquals(fresh.version, version);
  assert(fresh.snapshot === newText, "a store with nothing kept loads the snapshot the engine returned, byte for byte");
  return unchanged;
}

const countersOf = (store) => ({ writes: store.chunkWrites, skipped: store.chunksSkipped, bytes: store.chunkBytesWritten });

Deno.test("an applied event sets the head and the chunks from the new record on; the chunks before it keep their versionstamps", () =>
  withKv(async (kv) => {
    const m = notesMachine();
    const store = new DenoKvStore(kv, { machine: m });
    const now = 1_800_000_000_000;
    for (const [i, size] of [[0, 60_000], [1, 60_000], [2, 20_000]]) await apply(store, m, "p", note(i, size), { now });
    let loaded = await store.load("p");
    assert(chunksOf(loaded.snapshot) >= 3, `${loaded.snapshot.length} bytes`);
    let version = loaded.version;
    let text = loaded.snapshot;
    let left = 0;
    const setBefore = store.chunkWrites;
    for (let i = 3; i < 18; i++) {
      const before = await stamps(kv, "p");
      const counters = countersOf(store);
      const event = note(i, 5_000);
      let out;
      if (i % 2 === 0) {
        // The host loop: load (the kept string) -> reduce -> commit.
        out = await apply(store, m, "p", event, { now: now + i });
        assertEquals(out.attempts, 1);
      } else {
        // The engine reduces the text a store with nothing kept loaded; this store commits it.
        const fresh = await new DenoKvStore(kv).load("p");
        assertEquals(fresh.version, version);
        out = m.reduce(fresh.snapshot, event, now + i, "p");
        const res = await store.commit("p", version, out, { event, now: now + i });
        assertEquals(res.ok, true);
        out.version = res.version;
      }
      assertEquals(out.status, "applied");
      assert(out.version !== version);
      const unchanged = await checkCommit(kv, "p", { before, oldText: text, newText: out.snapshot, version: out.version, store, counters });
      assert(unchanged >= 2, `event ${i}: ${unchanged} chunks left alone of ${chunksOf(out.snapshot)}`);
      left += unchanged;
      version = out.version;
      text = out.snapshot;
    }
    assert(chunksOf(text) >= 4, "the snapshot grew across a chunk boundary on the way");
    assertEquals(m.inspect(text).context.n, 18);
    // The next event applies on what a store with nothing kept loads.
    const last = await apply(new DenoKvStore(kv, { machine: m }), m, "p", note(99, 10), { now: now + 99 });
    assertEquals(last.status, "applied");
    assertEquals(last.revision, 19);
    console.log(`15 events, snapshot up to ${text.length} bytes: ${left} chunks left alone, ${store.chunkWrites - setBefore} set`);
  }));

Deno.test("a store with nothing kept sets every chunk, and what it wrote loads the same", () =>
  withKv(async (kv) => {
    const m = notesMachine();
    const now = 1_800_000_000_000;
    const first = new DenoKvStore(kv, { machine: m });
    for (let i = 0; i < 4; i++) await apply(first, m, "p", note(i, 50_000), { now });
    const loaded = await first.load("p");
    assert(chunksOf(loaded.snapshot) >= 3);
    const before = await stamps(kv, "p");
    const other = new DenoKvStore(kv, { machine: m }); // nothing kept: it never read this process
    const event = note(4, 100);
    const out = m.reduce(loaded.snapshot, event, now + 4, "p");
    const res = await other.commit("p", loaded.version, out, { event, now: now + 4 });
    assertEquals(res.ok, true);
    const after = await stamps(kv, "p");
    assertEquals(after.length, 1 + chunksOf(out.snapshot));
    for (let c = 0; c < after.length; c++) {
      assert(after[c] !== before[c], `key ${c} set`);
      assertEquals(after[c], res.version);
    }
    assertEquals(other.chunksSkipped, 0);
    assertEquals(other.chunkWrites, chunksOf(out.snapshot));
    assertEquals(other.chunkBytesWritten, out.snapshot.length);
    assert((await new DenoKvStore(kv).load("p")).snapshot === out.snapshot);
    // The store that wrote before has another version kept: it reads again and applies.
    assertEquals((await apply(first, m, "p", note(5, 100), { now: now + 5 })).revision, 6);
    assert((await new DenoKvStore(kv).load("p")).snapshot === (await first.load("p")).snapshot);
  }));

Deno.test("a lost race writes nothing; the loser's retry through the host loop reads again and lands right", () =>
  withKv(async (kv) => {
    const m = notesMachine();
    const now = 1_800_000_000_000;
    const winner = new DenoKvStore(kv, { machine: m });
    const loser = new DenoKvStore(kv, { machine: m });
    for (let i = 0; i < 4; i++) await apply(winner, m, "p", note(i, 50_000), { now });
    await loser.load("p"); // both keep the same version
    // The loser loads, then the winner commits before the loser's commit: its first try loses the check.
    let raced = false;
    const commits = [];
    const racing = {
      load: async (pid) => {
        const got = await loser.load(pid);
        if (!raced) {
          raced = true;
          assertEquals((await apply(winner, m, pid, note("w", 100), { now: now + 1 })).status, "applied");
        }
        return got;
      },
      commit: async (pid, expected, out, extras) => {
        const before = await stamps(kv, pid);
        const counters = countersOf(loser);
        const res = await loser.commit(pid, expected, out, extras);
        commits.push({ res, before, after: await stamps(kv, pid), counters, counted: countersOf(loser) });
        return res;
      },
    };
    const out = await apply(racing, m, "p", note("l", 100), { now: now + 2 });
    assertEquals(out.status, "applied");
    assertEquals(out.attempts, 2);
    assertEquals(commits.length, 2);
    const [lost, won] = commits;
    assertEquals(lost.res, { ok: false, conflict: true });
    assertEquals(lost.after, lost.before, "the losing commit wrote nothing");
    assertEquals(lost.counted, lost.counters, "and counted nothing");
    assertEquals(won.res.ok, true);
    assert(won.counted.skipped - won.counters.skipped >= 2, "the retry, on the version it read again, left the unchanged chunks alone");
    const view = m.inspect((await new DenoKvStore(kv).load("p")).snapshot);
    assertEquals(view.ledger.map((e) => e.id), ["note-0", "note-1", "note-2", "note-3", "note-w", "note-l"]);
    assert((await new DenoKvStore(kv).load("p")).snapshot === out.snapshot);
    // The winner's kept copy is stale now: it reads again and its next commit lands.
    assertEquals((await apply(winner, m, "p", note(9, 100), { now: now + 3 })).revision, 7);
  }));

Deno.test("a prune rewrites the front (every chunk set) and a shrinking snapshot deletes the chunks beyond it; each loads the same", () =>
  withKv(async (kv) => {
    const m = notesMachine({ maxEntries: 16 });
    const store = new DenoKvStore(kv, { machine: m });
    const now = 1_800_000_000_000;
    let text = null;
    let version = null;
    let rewrites = 0;
    let appends = 0;
    let shrinks = 0;
    for (let i = 0; i < 40; i++) {
      const before = await stamps(kv, "p");
      const counters = countersOf(store);
      const out = await apply(store, m, "p", note(i, i < 24 ? 12_000 : 10), { now: now + i });
      assertEquals(out.status, "applied");
      if (text !== null) {
        const unchanged = await checkCommit(kv, "p", { before, oldText: text, newText: out.snapshot, version: out.version, store, counters });
        if (firstDiff(text, out.snapshot) < CHUNK_BYTES) rewrites++;
        else if (unchanged > 0) appends++;
        if (chunksOf(out.snapshot) < chunksOf(text)) shrinks++;
      }
      text = out.snapshot;
      version = out.version;
    }
    assert(rewrites >= 3, `${rewrites} commits rewrote the front`);
    assert(appends >= 10, `${appends} commits left chunks alone`);
    assert(shrinks >= 2, `${shrinks} commits shrank the snapshot`);
    assertEquals((await processKeys(kv, "p")).map((k) => k[3]), [0, 1]);
    const view = m.inspect((await new DenoKvStore(kv).load("p")).snapshot);
    assertEquals(view.ledger.map((e) => e.id), Array.from({ length: 16 }, (_, i) => `note-${i + 24}`));
    assertEquals((await store.load("p")).version, version);
  }));

Deno.test("chunks are left alone only when the store knows their bytes: not across non-ASCII text, not when cut otherwise", () =>
  withKv(async (kv) => {
    // The store does not read the snapshot text: any string shows what it writes.
    const body = "0123456789abcdef".repeat(196_608 / 16);
    const outcome = (snapshot, revision) => ({ snapshot, revision, status: "applied", changed: true, nextDueAt: null });
    const store = new DenoKvStore(kv);
    // Non-ASCII: "é" is two bytes, so every byte after it sits one place further than its character.
    const a = await store.commit("u", null, outcome("é" + body, 1));
    const counters = countersOf(store);
    const b = await store.commit("u", a.version, outcome("e" + body, 2));
    assertEquals(b.ok, true);
    assertEquals(store.chunksSkipped - counters.skipped, 0, "the stored bytes were not the characters");
    assertEquals((await new DenoKvStore(kv).load("u")).snapshot, "e" + body);
    const c = await store.commit("u", b.version, outcome("é" + body, 3));
    assertEquals(store.chunksSkipped - counters.skipped, 0, "nor are the new ones");
    assertEquals((await new DenoKvStore(kv).load("u")).snapshot, "é" + body);
    // From a loaded non-ASCII snapshot too.
    const reader = new DenoKvStore(kv);
    assertEquals((await reader.load("u")).version, c.version);
    await reader.commit("u", c.version, outcome("e" + body, 4));
    assertEquals(reader.chunksSkipped, 0);
    assertEquals((await new DenoKvStore(kv).load("u")).snapshot, "e" + body);

    // ASCII stored, and a character that is not ASCII appears after chunks that did not change:
    // every byte after it moves, so no chunk is left alone, those before it included.
    const w = new DenoKvStore(kv);
    const w1 = await w.commit("w", null, outcome(body, 1));
    const late = body.slice(0, 3 * CHUNK_BYTES + 5) + "é" + body.slice(3 * CHUNK_BYTES + 6);
    assertEquals((await w.commit("w", w1.version, outcome(late, 2))).ok, true);
    assertEquals(w.chunksSkipped, 0, "chunks before the non-ASCII one were skipped");
    assertEquals(w.chunkWrites, 2 * Math.ceil(body.length / CHUNK_BYTES) + 1);
    assertEquals((await new DenoKvStore(kv).load("w")).snapshot, late);

    // Another store committed after the one kept here: the kept text is not what is stored.
    const x = body.slice(0, 150_000);
    const s1 = new DenoKvStore(kv);
    const s2 = new DenoKvStore(kv);
    const v1 = await s1.commit("v", null, outcome(x, 1));
    const v2 = await s2.commit("v", v1.version, outcome("Y" + x.slice(1), 2));
    assertEquals(v2.ok, true);
    assertEquals((await s1.commit("v", v2.version, outcome(x + "!", 3))).ok, true);
    assertEquals(s1.chunksSkipped, 0, "the text kept is another version's");
    assertEquals((await new DenoKvStore(kv).load("v")).snapshot, x + "!");

    // Chunks cut every 50,000 bytes by another writer: same text, other boundaries.
    const text = body.slice(0, 150_000);
    const op = kv.atomic().set(["idem", "process", "cut", 0], { revision: 1, chunks: 3, bytes: text.length, nextDueAt: null, updatedAt: 0 });
    for (let i = 0; i < 3; i++) op.set(["idem", "process", "cut", i + 1], new TextEncoder().encode(text.slice(i * 50_000, (i + 1) * 50_000)));
    await op.commit();
    const cut = new DenoKvStore(kv);
    const loaded = await cut.load("cut");
    assertEquals(loaded.snapshot, text);
    const next = text.slice(0, -10) + "0123456789ABCDEF";
    assertEquals((await cut.commit("cut", loaded.version, outcome(next, 2))).ok, true);
    assertEquals(cut.chunksSkipped, 0);
    assertEquals(cut.chunkWrites, Math.ceil(next.length / CHUNK_BYTES));
    assertEquals((await new DenoKvStore(kv).load("cut")).snapshot, next);
    // Now cut as this store cuts: the next commit leaves every chunk but the last alone.
    const again = await cut.load("cut");
    assertEquals((await cut.commit("cut", again.version, outcome(next + "!", 3))).ok, true);
    assertEquals(cut.chunksSkipped, Math.ceil((next.length + 1) / CHUNK_BYTES) - 1);
    assertEquals((await new DenoKvStore(kv).load("cut")).snapshot, next + "!");
  }));

Deno.test("commitMany: several events in one atomic commit, each logged with its pointer; a stale one writes nothing of any", () =>
  withKv(async (kv) => {
    const m = await demoMachine();
    const store = new DenoKvStore(kv, { machine: m });
    const now = 1_800_000_000_000;
    let snapshot = null;
    const steps = ["k1", "k2", "k3"].map((id, i) => {
      const event = pay(id, `p${i}`);
      const outcome = m.reduce(snapshot, event, now + i, "o1");
      snapshot = outcome.snapshot;
      return { outcome, extras: { event, now: now + i } };
    });
    // k1 alone first, so that its version is one the stale commit below can name.
    const first = await store.commit("o1", null, steps[0].outcome, steps[0].extras);
    assertEquals(first.ok, true);
    const res = await store.commitMany("o1", first.version, steps.slice(1));
    assertEquals(res.ok, true);
    assertEquals(res.version, (await kv.get(["idem", "process", "o1", 0])).versionstamp);
    assertEquals((await store.events("o1")).map((r) => `${r.eventId}@${r.revision}@${r.receivedAt - now}`), ["k1@1@0", "k2@2@1", "k3@3@2"]);
    assertEquals((await store.eventRecord("o1", "k2")).revision, 2);
    assertEquals((await new DenoKvStore(kv, { machine: m }).load("o1")).snapshot, snapshot, "the last step's snapshot, read by another handle");
    // Two more from k1's version, which is no longer the head's: nothing written.
    let from1 = steps[0].outcome.snapshot;
    const stale = ["k4", "k5"].map((id, i) => {
      const event = pay(id, `q${i}`);
      const outcome = m.reduce(from1, event, now, "o1");
      from1 = outcome.snapshot;
      return { outcome, extras: { event, now } };
    });
    assertEquals(await store.commitMany("o1", first.version, stale), { ok: false, conflict: true });
    assertEquals((await store.events("o1")).map((r) => r.eventId), ["k1", "k2", "k3"]);
    assertEquals(await store.eventRecord("o1", "k4"), null);
  }));

Deno.test("the host loop over Deno KV: calls waiting in a lane are committed together, each event once, in order", () =>
  withKv(async (kv) => {
    const m = await demoMachine();
    const store = new DenoKvStore(kv, { machine: m });
    let batches = 0;
    const commitMany = store.commitMany.bind(store);
    store.commitMany = (id, expected, steps) => {
      if (steps.length > 1) batches++;
      return commitMany(id, expected, steps);
    };
    const events = Array.from({ length: 20 }, (_, i) => pay(`e${i}`, `p${i}`, 1));
    const outs = await Promise.all([...events, ...events].map((e) => apply(store, m, "o1", e)));
    assertEquals(outs.filter((o) => o.status === "applied").length, 20);
    assertEquals(outs.filter((o) => o.status === "duplicate").length, 20);
    assert(batches > 0, "some commit carried several events");
    assertEquals((await store.events("o1", { limit: 100 })).map((r) => `${r.eventId}@${r.revision}`), events.map((e, i) => `${e.id}@${i + 1}`));
  }));

Deno.test("the event log holds the row every store writes (pkg/test/event-log.mjs)", () =>
  withKv(async (kv) => {
    const m = await demoMachine();
    const event = (i) => pay(`e${i}`, `p${i}`);
    const { rows, expected } = await logThreeCommits(new DenoKvStore(kv, { machine: m }), m, "log1", event);
    assertEquals(rows, expected);
  }));
