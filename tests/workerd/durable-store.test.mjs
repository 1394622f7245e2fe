// The Durable Object store (pkg/src/stores/durable.js) on real workerd: the snapshot
// in chunks, only the changed chunks written, and objects written in the earlier
// single-value form still loaded and carried on.
//
// The Worker runs as it ships, under a wrapper module (test code, not the
// Worker's) whose ProcessObject subclass adds three things: GET
// /do/processes/:id/__storage lists the object's storage keys (a string value
// as its length) and its store's write counters, DELETE
// /do/processes/:id/__storage?key=<key> deletes one key (damage, as a store
// cannot), and with LEGACY_STORE = "1" the object commits through the
// store as earlier releases wrote it (the whole snapshot under `snapshot`).
// Writes are measured from the object's own SQLite file: the bytes its
// write-ahead log grows by per applied event.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, startWorker } from "./harness.mjs";
import { logThreeCommits } from "../../pkg/test/event-log.mjs";
import { MemoryStore } from "../../pkg/src/stores/memory.js";
import { Machine } from "../../pkg/src/node.js";
import { settle, walCommits } from "../../benches/hosts.mjs";

const WRAPPER = {
  name: "durable-store-wrapper",
  source: `
import * as bundle from "./worker.js";
export default bundle.default;

// The shared event-log scenario (pkg/test/event-log.mjs), inlined: the Worker's modules are its bundle and this file.
${readFileSync(new URL("../../pkg/test/event-log.mjs", import.meta.url), "utf8").replace(/^export /gm, "")}

// The store as earlier releases wrote it: { snapshot, version, log row } in one put.
class LegacyStore {
  constructor(storage) { this.storage = storage; }
  async load() {
    const got = await this.storage.get(["snapshot", "version"]);
    const snapshot = got.get("snapshot");
    return snapshot === undefined ? null : { snapshot, version: got.get("version") };
  }
  async commit(_pid, expectedVersion, outcome, extras = {}) {
    const current = (await this.storage.get("version")) ?? null;
    if (current !== expectedVersion) return { ok: false, conflict: true };
    const version = outcome.revision;
    const entries = { snapshot: outcome.snapshot, version };
    if (extras.event) {
      entries["log:" + String(version).padStart(12, "0")] = {
        eventId: extras.event.id, revision: version, type: extras.event.type,
        status: outcome.status, response: outcome.response ?? null, receivedAt: extras.now ?? null,
      };
    }
    await this.storage.put(entries);
    return { ok: true, version };
  }
  async events() { return []; }
}

export class ProcessObject extends bundle.ProcessObject {
  store() {
    if (this.env.LEGACY_STORE === "1") return (this.legacy ??= new LegacyStore(this.ctx.storage));
    return super.store();
  }
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname.endsWith("/__event-log") && request.method === "POST") {
      // The shared event-log scenario on this object's store, replaying the outcomes the engine gave in the test.
      const processId = url.pathname.split("/")[3];
      this.meta ??= { processId, mode: "do" };
      const outcomes = await request.json();
      const replay = { reduce: () => outcomes.shift() };
      const event = (i) => ({ id: "e" + i, type: "PAYMENT_PARTIAL", payload: {} });
      return Response.json(await logThreeCommits(this.store(), replay, processId, event));
    }
    if (url.pathname.endsWith("/__storage") && request.method === "DELETE") {
      return Response.json({ deleted: await this.ctx.storage.delete(url.searchParams.get("key")) });
    }
    if (url.pathname.endsWith("/__storage")) {
      const keys = {};
      for (const [k, v] of await this.ctx.storage.list()) {
        if (!k.startsWith("log:")) keys[k] = typeof v === "string" ? v.length : v;
      }
      const store = this.doStore ? { chunkWrites: this.doStore.chunkWrites, chunksSkipped: this.doStore.chunksSkipped } : null;
      return Response.json({ keys, store });
    }
    return super.fetch(request);
  }
}
`,
};

/** PAYMENT_PARTIAL of 0 on the fragile machine: the context stays put, the ledger grows by the id and its response. */
const pay = (i, size) => ({ type: "PAYMENT_PARTIAL", payload: { paymentId: `p${i}-${"x".repeat(size)}`, amount: 0 } });
const keyOf = (i) => `evt-${String(i).padStart(5, "0")}`;

const start = (persist, vars = {}) => startWorker({ persist, wrapper: WRAPPER, vars });
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "idem-do-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

async function inspectStorage(w, pid) {
  const res = await w.fetch(`/do/processes/${pid}/__storage`);
  assert.equal(res.status, 200);
  return res.json();
}
const storage = async (w, pid) => (await inspectStorage(w, pid)).keys;

/** The keys of a snapshot stored in `count` chunks, in order. */
const chunkKeys = (count) => Array.from({ length: count }, (_, i) => `snapshot:${String(i).padStart(3, "0")}`);

/** The stored form: chunk lengths in order, the old single value's length, the snapshot's length. */
function form(keys) {
  const chunks = Object.keys(keys).filter((k) => k.startsWith("snapshot:")).sort();
  const lengths = chunks.map((k) => keys[k]);
  return {
    count: keys.chunks,
    chunks,
    legacy: keys.snapshot,
    length: keys.snapshot ?? lengths.reduce((a, b) => a + b, 0),
  };
}

async function apply(w, pid, i, size) {
  const res = await w.post(`/do/processes/${pid}/events`, keyOf(i), pay(i, size));
  const body = await res.json();
  assert.ok(res.status === 200 || res.status === 201, `event ${i}: ${res.status} ${JSON.stringify(body)}`);
  assert.equal(res.headers.get("idempotency-replayed"), null, `event ${i} was applied before`);
  assert.equal(body.status, "applied");
  return body;
}

async function replay(w, pid, i, size) {
  const res = await w.post(`/do/processes/${pid}/events`, keyOf(i), pay(i, size));
  assert.equal(res.headers.get("idempotency-replayed"), "true", `event ${i} replayed`);
  return res.json();
}

async function state(w, pid) {
  const res = await w.fetch(`/do/processes/${pid}`);
  assert.equal(res.status, 200);
  return res.json();
}

test("a snapshot over several chunks: every event applies once, replays are duplicates, a restarted workerd loads it and goes on", async () => {
  const persist = tempDir();
  const pid = "chunks-1-fragile";
  const size = 1_500;
  const n = 120;
  let w;
  const bodies = [];
  try {
    w = await start(persist);
    for (let i = 1; i <= n; i++) bodies.push(await apply(w, pid, i, size));
    assert.deepEqual(bodies.map((b) => b.revision), Array.from({ length: n }, (_, i) => i + 1));
    for (const i of [1, 2, 40, n]) assert.deepEqual(await replay(w, pid, i, size), bodies[i - 1]);
    const f = form(await storage(w, pid));
    assert.ok(f.count >= 5, `${f.length} characters in ${f.count} chunks`);
    assert.equal(f.legacy, undefined);
    assert.deepEqual(f.chunks, chunkKeys(f.count));
    const before = await state(w, pid);
    assert.equal(before.revision, n);
    assert.equal(before.version, n);
    await w.close();

    // A new workerd on the same storage: a new object instance, whose store reads the chunks.
    w = await start(persist);
    assert.deepEqual(await state(w, pid), before);
    for (const i of [1, 60, n]) assert.deepEqual(await replay(w, pid, i, size), bodies[i - 1]);
    const next = await apply(w, pid, n + 1, size);
    assert.equal(next.revision, n + 1);
    assert.equal((await state(w, pid)).revision, n + 1);
  } finally {
    await w?.close();
  }
});

/** The object's SQLite file: the one file under the persist directory that is not workerd's metadata. */
function objectFile(persist) {
  const out = [];
  for (const sub of readdirSync(persist)) {
    for (const f of readdirSync(join(persist, sub))) if (f.endsWith(".sqlite") && f !== "metadata.sqlite") out.push(join(persist, sub, f));
  }
  assert.equal(out.length, 1, `one object file, found ${out.join(", ")}`);
  return out[0];
}

/** Frames in the WAL now (with its salt and page size), so two readings give the bytes written between them. */
function walNow(file) {
  const wal = `${file}-wal`;
  const bytes = existsSync(wal) ? readFileSync(wal) : null;
  const pageSize = bytes && bytes.length >= 32 ? new DataView(bytes.buffer, bytes.byteOffset).getUint32(8) : 0;
  return { ...walCommits(bytes), pageSize };
}

/** Median WAL bytes per applied event over `k` events (readings across a WAL reset are left out). */
async function walPerEvent(w, pid, file, from, k, size) {
  const samples = [];
  for (let i = from; i < from + k; i++) {
    await settle(`${file}-wal`);
    const a = walNow(file);
    await apply(w, pid, i, size);
    await settle(`${file}-wal`);
    const b = walNow(file);
    if (a.salt !== null && a.salt === b.salt) samples.push((b.frames - a.frames) * (24 + b.pageSize));
  }
  assert.ok(samples.length >= k / 2, `${samples.length} readings of ${k}`);
  samples.sort((x, y) => x - y);
  return samples[Math.floor(samples.length / 2)];
}

test("an applied event writes the chunks that changed, not the whole snapshot (the object's SQLite WAL)", async (t) => {
  const persist = tempDir();
  const pid = "chunks-2-fragile";
  const size = 4_000;
  let w;
  try {
    w = await start(persist);
    let i = 1;
    const grow = async (chars) => {
      while (form(await storage(w, pid)).length < chars) await apply(w, pid, i++, size);
    };
    const figures = {};
    for (const target of [150_000, 600_000]) {
      await grow(target);
      const file = objectFile(persist);
      const { keys, store: c0 } = await inspectStorage(w, pid);
      const snapshot = form(keys).length;
      const perEvent = await walPerEvent(w, pid, file, i, 8, size);
      i += 8;
      const { store: c1 } = await inspectStorage(w, pid);
      const written = (c1.chunkWrites - c0.chunkWrites) / 8;
      const skipped = (c1.chunksSkipped - c0.chunksSkipped) / 8;
      figures[target] = { snapshot, perEvent, written, skipped };
      t.diagnostic(`snapshot ${snapshot} characters: ${perEvent} WAL bytes per applied event (median of 8); chunks written ${written}, skipped ${skipped} per event`);
      // The store's own counters agree: one or two chunks per event (three when a record straddles a boundary).
      assert.ok(written >= 1 && written <= 3 && skipped >= keys.chunks - 3, JSON.stringify(figures[target]));
    }
    // The whole snapshot would be at least its own size in pages; the changed chunks (one or two
    // of 32 KiB, with their b-tree pages and the log row) are a fraction of it at 600 KB.
    const big = figures[600_000];
    assert.ok(big.perEvent < big.snapshot / 4, `${big.perEvent} WAL bytes per event at a ${big.snapshot}-character snapshot`);
    // And they do not grow with the snapshot.
    assert.ok(big.perEvent < 2 * figures[150_000].perEvent + 16_384, JSON.stringify(figures));
  } finally {
    await w?.close();
  }
});

test("an object written in the single-value form loads, carries on, and holds the chunked form only after its next event", async () => {
  const persist = tempDir();
  const pid = "chunks-3-fragile";
  const size = 3_000;
  const n = 40;
  let w;
  const bodies = [];
  try {
    w = await start(persist, { LEGACY_STORE: "1" });
    for (let i = 1; i <= n; i++) bodies.push(await apply(w, pid, i, size));
    const old = form(await storage(w, pid));
    assert.ok(old.legacy > 100_000, `the single value holds ${old.legacy} characters`);
    assert.equal(old.count, undefined);
    assert.deepEqual(old.chunks, []);
    const before = await state(w, pid);
    await w.close();

    w = await start(persist);
    assert.deepEqual(await state(w, pid), before);
    for (const i of [1, n]) assert.deepEqual(await replay(w, pid, i, size), bodies[i - 1]);
    // Still the single-value form: replays write nothing.
    assert.equal(form(await storage(w, pid)).legacy, old.legacy);
    const next = await apply(w, pid, n + 1, size);
    assert.equal(next.revision, n + 1);
    const now = form(await storage(w, pid));
    assert.equal(now.legacy, undefined, "the single value is deleted with the first chunked commit");
    assert.ok(now.count >= 4 && now.chunks.length === now.count, JSON.stringify(now));
    assert.ok(now.length > old.legacy);
    await w.close();

    // The chunked form loads in a fresh object too.
    w = await start(persist);
    const after = await state(w, pid);
    assert.equal(after.revision, n + 1);
    for (const i of [1, n + 1]) await replay(w, pid, i, size);
    assert.equal((await apply(w, pid, n + 2, size)).revision, n + 2);
  } finally {
    await w?.close();
  }
});

test("a ledger at its cap drops its oldest records: the snapshot shrinks and the chunks beyond its new count are deleted", async () => {
  const persist = tempDir();
  const pid = "chunks-4-fragile";
  const size = 300;
  let w;
  try {
    w = await start(persist);
    // The fragile machine keeps 1,000 ids and drops forgotten records from the text an eighth of that at a time.
    let most = 0;
    let shrunk = null;
    for (let i = 1; i <= 1_150; i++) {
      await apply(w, pid, i, size);
      if (i >= 990 && i % 10 === 0) {
        const f = form(await storage(w, pid));
        assert.deepEqual(f.chunks, chunkKeys(f.count), `after event ${i}`);
        if (f.count < most) shrunk ??= { at: i, from: most, to: f.count };
        most = Math.max(most, f.count);
      }
    }
    assert.ok(shrunk, `the snapshot never lost a chunk (at most ${most})`);
    await w.close();
    w = await start(persist);
    assert.equal((await state(w, pid)).revision, 1_150);
    await replay(w, pid, 1_150, size);
    assert.equal((await apply(w, pid, 1_151, size)).revision, 1_151);
  } finally {
    await w?.close();
  }
});

test("a snapshot over 125 chunks is refused with 507 snapshot_too_large and nothing is written", async () => {
  const persist = tempDir();
  const pid = "chunks-5-fragile";
  const size = 60_000;
  let w;
  try {
    w = await start(persist);
    let i = 1;
    let refused = null;
    for (; i <= 100 && !refused; i++) {
      const res = await w.post(`/do/processes/${pid}/events`, keyOf(i), pay(i, size));
      if (res.status === 507) refused = await res.json();
      else assert.equal(res.status, i === 1 ? 201 : 200);
    }
    assert.ok(refused, "no event was refused");
    const last = i - 1;
    assert.equal(refused.code, "snapshot_too_large");
    const f = form(await storage(w, pid));
    assert.ok(f.count <= 125 && f.chunks.length === f.count, JSON.stringify(f));
    assert.equal((await state(w, pid)).revision, last - 1);
    // Nothing was written: the same event is refused again, not replayed.
    const again = await w.post(`/do/processes/${pid}/events`, keyOf(last), pay(last, size));
    assert.equal(again.status, 507);
    await w.close();
    w = await start(persist);
    assert.equal((await state(w, pid)).revision, last - 1);
    await replay(w, pid, last - 1, size);
  } finally {
    await w?.close();
  }
});

test("a chunk missing from storage: a restarted object answers 500 snapshot_corrupt to POST and GET, and writes nothing", async () => {
  const persist = tempDir();
  const pid = "chunks-6-fragile";
  const size = 20_000;
  const n = 4;
  let w;
  try {
    w = await start(persist);
    for (let i = 1; i <= n; i++) await apply(w, pid, i, size);
    const stored = await storage(w, pid);
    const f = form(stored);
    assert.ok(f.count >= 3 && f.chunks.length === f.count, JSON.stringify(f));
    const del = await w.fetch(`/do/processes/${pid}/__storage?key=snapshot:001`, { method: "DELETE" });
    assert.deepEqual(await del.json(), { deleted: true });
    await w.close();

    // A fresh object reads the chunks (the one that wrote them kept the snapshot).
    w = await start(persist);
    const corrupt = async (res, extra = {}) => {
      assert.equal(res.status, 500);
      assert.equal(res.headers.get("content-type"), "application/problem+json");
      const body = await res.json();
      assert.equal(body.code, "snapshot_corrupt");
      assert.equal(body.processId, pid);
      for (const [k, v] of Object.entries(extra)) assert.equal(body[k], v, k);
      assert.match(body.detail, /is damaged/);
      assert.match(body.detail, /nothing was written/);
      assert.match(body.detail, new RegExp(`snapshot chunk snapshot:001 of ${f.count} is missing at revision ${n}`));
    };
    await corrupt(await w.fetch(`/do/processes/${pid}`));
    await corrupt(await w.post(`/do/processes/${pid}/events`, keyOf(n + 1), pay(n + 1, size)), { eventId: keyOf(n + 1) });
    await corrupt(await w.post(`/do/processes/${pid}/events`, keyOf(n), pay(n, size)), { eventId: keyOf(n) });
    await corrupt(await w.fetch(`/do/processes/${pid}/events?after=${n}`));
    // Nothing was written: the same keys (the chunk still missing), the same log.
    const left = { ...stored };
    delete left["snapshot:001"];
    assert.deepEqual(await storage(w, pid), left);
    const log = await (await w.fetch(`/do/processes/${pid}/events`)).json();
    assert.deepEqual(log.events.map((e) => e.revision), Array.from({ length: n }, (_, i) => i + 1));
  } finally {
    await w?.close();
  }
});

test("the event log holds the row every store writes (pkg/test/event-log.mjs)", async () => {
  // The engine's outcomes for the scenario, recorded on the memory store, then committed by the object's store.
  const machine = new Machine(JSON.parse(readFileSync(join(ROOT, "www", "machines", "order-robust.json"), "utf8")));
  const outcomes = [];
  const recording = { reduce: (...args) => { const out = machine.reduce(...args); outcomes.push(out); return out; } };
  const event = (i) => ({ id: `e${i}`, type: "PAYMENT_PARTIAL", payload: { paymentId: `p${i}`, amount: 1 } });
  const memory = await logThreeCommits(new MemoryStore(), recording, "log1", event);
  const w = await start(tempDir());
  try {
    const res = await w.fetch("/do/processes/log1/__event-log", { method: "POST", body: JSON.stringify(outcomes) });
    assert.equal(res.status, 200);
    const { rows, expected } = await res.json();
    assert.deepEqual(rows, expected);
    assert.deepEqual(rows, memory.rows, "the same rows as the memory store's");
  } finally {
    await w.close();
  }
});
