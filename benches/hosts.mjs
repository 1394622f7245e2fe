// Section 4 of the benchmarks: the hosts end to end, over HTTP, on the stores
// they ship with.
//
//   workerd + D1              the example Worker (examples/cloudflare) bundled by wrangler and run
//   workerd + Durable Object  by Miniflare on real workerd (tests/workerd/harness.mjs), routes
//                             /processes (D1) and /do/processes (one object per process)
//   Deno KV                   the Deno example server (examples/deno) started as its users start it,
//                             `deno task start` (tests/deno/server.js), on its own Deno KV file;
//                             driven by benches/hosts-deno.js, which this module runs under deno
//
// Per host, the same workload (`runHost`):
//   1. sequential, one process: blocks of applied events and of replays (copies of events already
//      applied), timed one request at a time from the client; the store's commits counted around
//      each block (see `walCommits`);
//   2. one hot process: N distinct events, each delivered twice, in a seeded random order, K
//      requests in flight; a copy that finds the process changed retries its compare-and-set
//      inside the host (Idem-Attempts), a 409 `contention` is sent again by the client;
//   3. a large process: L events (K in flight), then applied events one at a time with the bytes
//      the store's write-ahead log grew by per event: what an applied event writes when the
//      snapshot is large (hundreds of ledger entries), against its snapshot's size;
//   4. many processes: P processes × E events, K in flight (first events first).
// Every answer is checked (fresh `applied` exactly once per event, every other copy a replay, the
// final revision), so a figure never comes from a run that lost or doubled something.
//
// Writes are counted from the store's own files, not from the host: all three stores are SQLite
// databases in write-ahead-log mode on local disk (Miniflare keeps D1 and each Durable Object in
// its own SQLite file; local Deno KV is one SQLite file), and every committed write transaction
// appends frames to the WAL, the last one carrying a commit mark. Counting commit marks before and
// after a block counts the transactions that wrote, whatever wrote them. Local D1 (Miniflare's
// D1DatabaseObject) also commits a one-page update of workerd's own `_cf_METADATA` table on
// EVERY query, reads included; those commits are counted apart (they touch no table of the app).
//
//   node benches/hosts.mjs                 measure all three, print section 4 (also: --json FILE)
//   node benches/hosts.mjs --only workerd  (or denokv)
// benches/run.mjs imports `measureHosts` and `hostsSection` and prints section 4 from the same run.
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { median, quantile, table } from "./measure.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** The default workload (about 1,500 requests per host). */
export const DEFAULTS = Object.freeze({
  concurrency: 16,
  hotEvents: 200, // distinct events to the hot process, each delivered `copies` times
  copies: 2,
  processes: 200, // many processes ...
  perProcess: 2, // ... × events each
  blocks: 4, // sequential: blocks of `block` applied events, then `block` replays
  block: 10,
  largeEvents: 1_000, // events that make the large process's snapshot (a full ledger at the default cap)
  seed: 20_251_130,
});

// ---- SQLite write-ahead log ------------------------------------------------------------

/**
 * The committed transactions in a SQLite WAL file: the frames after the 32-byte header whose
 * salts match the header's (older frames left over from before a reset have other salts), grouped
 * into transactions by their commit marks (a frame whose "database size after commit" is not 0).
 * @param {Uint8Array | null} bytes the -wal file, or null when there is none
 * @param {{ ignorePage?: number | null }} [options] a page whose lone updates are bookkeeping
 * @returns {{ salt: string | null, commits: number, dataCommits: number, frames: number, frameBytes: number }}
 */
export function walCommits(bytes, { ignorePage = null } = {}) {
  const none = { salt: null, commits: 0, dataCommits: 0, frames: 0, frameBytes: 0 };
  if (!bytes || bytes.length < 32) return none;
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = dv.getUint32(0);
  if (magic !== 0x377f0682 && magic !== 0x377f0683) throw new Error("not a SQLite WAL file");
  const pageSize = dv.getUint32(8);
  const s1 = dv.getUint32(16);
  const s2 = dv.getUint32(20);
  let frames = 0;
  let commits = 0;
  let dataCommits = 0;
  let touchesData = false;
  for (let off = 32; off + 24 + pageSize <= bytes.length; off += 24 + pageSize) {
    if (dv.getUint32(off + 8) !== s1 || dv.getUint32(off + 12) !== s2) break;
    frames++;
    const page = dv.getUint32(off);
    // The bookkeeping page is a one-page table only while it is a leaf (type 0x0d).
    if (page !== ignorePage || bytes[off + 24] !== 0x0d) touchesData = true;
    if (dv.getUint32(off + 4) !== 0) {
      commits++;
      if (touchesData) dataCommits++;
      touchesData = false;
    }
  }
  return { salt: `${s1}:${s2}`, commits, dataCommits, frames, frameBytes: 24 + pageSize };
}

/** Read a database's WAL (null when it has none yet). */
export function readWal(dbFile, options) {
  const wal = `${dbFile}-wal`;
  return walCommits(existsSync(wal) ? readFileSync(wal) : null, options);
}

/** Commits (and bytes appended) between two readings, or null when the WAL was reset (checkpointed and restarted) between them. */
function walDelta(a, b) {
  if (a.salt !== null && a.salt !== b.salt) return null;
  return { commits: b.commits - a.commits, dataCommits: b.dataCommits - a.dataCommits, bytes: (b.frames - a.frames) * b.frameBytes };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Wait until a file stops growing (background work after a request: dispatch, alarms). */
export async function settle(file) {
  const size = () => {
    try {
      return statSync(file).size;
    } catch {
      return -1;
    }
  };
  let last = size();
  for (let i = 0; i < 40; i++) {
    await sleep(30);
    const now = size();
    if (now === last) return;
    last = now;
  }
}

// ---- workload --------------------------------------------------------------------------

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle(xs, rnd) {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}

/**
 * A payment that keeps the order collecting: 0.25 each, so even 200 of them stay under the
 * order's total of 100 and no effect (charge) runs while the hosts are measured.
 */
const payment = (id, amount = 0.25) => ({ type: "PAYMENT_PARTIAL", payload: { paymentId: id, amount } });
/** The large process's payments: 0.05 each, so its 1,000 and more stay under the total too. */
const LARGE_AMOUNT = 0.05;

/**
 * Deliver one event until it is answered: a 409 `contention` (the host ran out of
 * compare-and-set tries) is sent again with the same key, as a client would.
 */
async function deliver(client, base, pid, id, tally, amount) {
  for (let tries = 0; ; tries++) {
    const r = await client.post(`${base}/processes/${pid}/events`, id, payment(id, amount));
    if (r.status === 409 && r.code === "contention" && tries < 50) {
      tally.contention409++;
      await sleep(5 + Math.random() * 20);
      continue;
    }
    if (r.outcome === "applied" && (r.status === 200 || r.status === 201)) tally.applied++;
    else if (r.outcome === "duplicate" && r.replayed) tally.duplicates++;
    else throw new Error(`${pid}/${id}: unexpected answer ${r.status} ${r.outcome} ${r.text.slice(0, 200)}`);
    tally.attempts += r.attempts;
    tally.requests++;
    return r;
  }
}

/** Run `jobs` (functions returning promises) with at most `concurrency` in flight. */
async function pool(jobs, concurrency) {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) await jobs[next++]();
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, jobs.length) }, worker));
}

const newTally = () => ({ requests: 0, applied: 0, duplicates: 0, attempts: 0, contention409: 0 });

/**
 * The whole workload against one host.
 * @param {{
 *   name: string,
 *   base: string,                                  // "" or "/do"
 *   client: { post(path, key, body): Promise<{status, code, outcome, replayed, attempts, text}>, get(path): Promise<any> },
 *   store: (pid: string) => { file: string, ignorePage?: number | null }, // the SQLite file holding the process
 *   prefix: string,                                // process ids are unique per run
 *   opts?: Partial<typeof DEFAULTS>,
 *   log?: (msg: string) => void,
 * }} host
 */
export async function runHost({ name, base, client, store, prefix, opts = {}, log = () => {} }) {
  const o = { ...DEFAULTS, ...opts };
  const rnd = mulberry32(o.seed);
  const out = { name, workload: o };

  // 1. Sequential: latency of an applied event and of a replay; commits counted per block.
  log(`${name}: sequential applied events and replays, commits counted from the store`);
  {
    const pid = `${prefix}-seq`;
    const tally = newTally();
    const applied = [];
    for (let i = 0; i < 5; i++) {
      await deliver(client, base, pid, `w${i}`, tally); // warm-up (creates the process and its object)
      applied.push(`w${i}`);
    }
    for (let i = 0; i < 5; i++) await deliver(client, base, pid, applied[i], tally);
    const lat = { applied: [], duplicate: [] };
    const commits = { applied: { n: 0, commits: 0, dataCommits: 0, bytes: 0 }, duplicate: { n: 0, commits: 0, dataCommits: 0, bytes: 0 }, resets: 0 };
    const versions = [];
    const count = (kind, d, n) => {
      if (d === null) {
        commits.resets++; // a checkpoint restarted the log: this block is not counted
        return;
      }
      commits[kind].n += n;
      commits[kind].commits += d.commits;
      commits[kind].dataCommits += d.dataCommits;
      commits[kind].bytes += d.bytes;
    };
    for (let b = 0; b < o.blocks; b++) {
      const s = store(pid);
      await settle(`${s.file}-wal`);
      const w0 = readWal(s.file, s);
      for (let i = 0; i < o.block; i++) {
        const id = `a${b}-${i}`;
        const t = performance.now();
        const r = await deliver(client, base, pid, id, tally);
        lat.applied.push(performance.now() - t);
        if (r.outcome !== "applied") throw new Error(`${name}: ${id} was not applied`);
        applied.push(id);
      }
      await settle(`${s.file}-wal`);
      const before = await client.get(`${base}/processes/${pid}`);
      await settle(`${s.file}-wal`);
      const w1 = readWal(s.file, s);
      for (let i = 0; i < o.block; i++) {
        const id = applied[Math.floor(rnd() * applied.length)];
        const t = performance.now();
        const r = await deliver(client, base, pid, id, tally);
        lat.duplicate.push(performance.now() - t);
        if (r.outcome !== "duplicate") throw new Error(`${name}: the copy of ${id} was not a duplicate`);
      }
      await settle(`${s.file}-wal`);
      const w2 = readWal(s.file, s);
      const after = await client.get(`${base}/processes/${pid}`);
      count("applied", walDelta(w0, w1), o.block);
      count("duplicate", walDelta(w1, w2), o.block);
      versions.push({ revision: [before.revision, after.revision], version: [before.version, after.version] });
    }
    const ms = (xs) => ({ medianMs: median(xs), p95Ms: quantile(xs, 0.95), n: xs.length });
    out.sequential = {
      applied: ms(lat.applied),
      duplicate: ms(lat.duplicate),
      commits,
      versions,
      versionsUnchanged: versions.every((v) => v.revision[0] === v.revision[1] && v.version[0] === v.version[1]),
    };
  }

  // 2. One hot process, concurrent delivery, every event twice.
  log(`${name}: one hot process, ${o.hotEvents} events × ${o.copies} copies, ${o.concurrency} in flight`);
  {
    const pid = `${prefix}-hot`;
    const tally = newTally();
    const order = shuffle(Array.from({ length: o.hotEvents * o.copies }, (_, k) => k % o.hotEvents), rnd);
    const t = performance.now();
    await pool(order.map((i) => () => deliver(client, base, pid, `h${i}`, tally)), o.concurrency);
    const wallMs = performance.now() - t;
    const final = await client.get(`${base}/processes/${pid}`);
    if (tally.applied !== o.hotEvents || tally.duplicates !== o.hotEvents * (o.copies - 1) || final.revision !== o.hotEvents) {
      throw new Error(`${name} hot process: applied ${tally.applied}, replays ${tally.duplicates}, revision ${final.revision}`);
    }
    out.hot = { ...tally, wallMs, eventsPerSec: (o.hotEvents * 1000) / wallMs, requestsPerSec: (tally.requests * 1000) / wallMs, revision: final.revision };
    store(pid); // the hot process's file, known from here on (a Durable Object's own file)
  }

  // 3. A large process (before the many processes, whose objects' files would hide its own): what an applied event writes when the snapshot is large.
  log(`${name}: a large process, ${o.largeEvents} events, then ${o.block} applied one at a time, bytes written counted`);
  {
    const pid = `${prefix}-large`;
    const tally = newTally();
    // The first event alone: it creates the process (on the Durable Object host, its object and
    // file, which `store` finds as the one new file), the rest with K in flight.
    await deliver(client, base, pid, "L0", tally, LARGE_AMOUNT);
    const s = store(pid);
    await pool(Array.from({ length: o.largeEvents - 1 }, (_, i) => () => deliver(client, base, pid, `L${i + 1}`, tally, LARGE_AMOUNT)), o.concurrency);
    let d = null;
    // A checkpoint that restarts the log in the middle spoils the count: measure again (at most 3 times).
    for (let round = 0; round < 3 && d === null; round++) {
      await settle(`${s.file}-wal`);
      const w0 = readWal(s.file, s);
      for (let i = 0; i < o.block; i++) {
        const r = await deliver(client, base, pid, `Lx${round}-${i}`, tally, LARGE_AMOUNT);
        if (r.outcome !== "applied") throw new Error(`${name}: Lx${round}-${i} was not applied`);
      }
      await settle(`${s.file}-wal`);
      d = walDelta(w0, readWal(s.file, s));
    }
    const final = await client.get(`${base}/processes/${pid}`);
    if (final.revision !== tally.applied) throw new Error(`${name} large process: revision ${final.revision}, applied ${tally.applied}`);
    out.large = { events: final.revision, n: o.block, ...(d ?? { commits: NaN, dataCommits: NaN, bytes: NaN }) };
  }
  // 4. Many processes.
  log(`${name}: ${o.processes} processes × ${o.perProcess} events, ${o.concurrency} in flight`);
  {
    const tally = newTally();
    const jobs = [];
    for (let e = 0; e < o.perProcess; e++) {
      for (let p = 0; p < o.processes; p++) jobs.push(() => deliver(client, base, `${prefix}-m${p}`, `e${e}`, tally));
    }
    const t = performance.now();
    await pool(jobs, o.concurrency);
    const wallMs = performance.now() - t;
    const sample = await client.get(`${base}/processes/${prefix}-m${o.processes - 1}`);
    if (tally.applied !== o.processes * o.perProcess || sample.revision !== o.perProcess) {
      throw new Error(`${name} many processes: applied ${tally.applied}, last process at revision ${sample.revision}`);
    }
    out.many = { ...tally, wallMs, eventsPerSec: (tally.applied * 1000) / wallMs };
  }

  return out;
}

/**
 * The size of the large process's snapshot after `events` payments (the events of `runHost`'s
 * block 4, reduced by the lean module on the same machine definition; times have a fixed width, so
 * the size is the hosts' own).
 */
export async function largeSnapshotBytes(events, block = DEFAULTS.block) {
  const dir = path.join(ROOT, "pkg", "dist", "lean");
  const glue = await import(pathToFileURL(path.join(dir, "idem.js")).href);
  glue.initSync({ module: readFileSync(path.join(dir, "idem_bg.wasm")) });
  const m = new glue.Machine(readFileSync(path.join(ROOT, "www", "machines", "order-robust.json"), "utf8"));
  let s = null;
  const ids = [...Array.from({ length: events - block }, (_, i) => `L${i}`), ...Array.from({ length: block }, (_, i) => `Lx0-${i}`)];
  const now = Date.now();
  for (const id of ids) {
    const o = m.reduce(s, { id, ...payment(id, LARGE_AMOUNT) }, now, "large");
    if (o.status !== "applied") throw new Error(`large snapshot: ${id} ${o.status}`);
    s = o.snapshot;
  }
  return new TextEncoder().encode(s).length;
}

/** What a host answered, in the shape `runHost` reads. */
export async function readAnswer(response) {
  const text = await response.text();
  let code;
  if (response.status >= 400) {
    try {
      code = JSON.parse(text).code;
    } catch {
      /* not a problem body */
    }
  }
  return {
    status: response.status,
    code,
    outcome: response.headers.get("idem-outcome"),
    replayed: response.headers.get("idempotency-replayed") === "true",
    attempts: Number(response.headers.get("idem-attempts") ?? 1),
    text,
  };
}

// ---- workerd (D1, Durable Object) ------------------------------------------------------

/** Both Cloudflare stores on one workerd (Miniflare): the Worker bundle, D1 at /processes, a Durable Object at /do. */
export async function measureWorkerd({ opts = {}, log = () => {} } = {}) {
  process.env.WRANGLER_SEND_METRICS = "false";
  const { startWorker } = await import("../tests/workerd/harness.mjs");
  const t0 = performance.now();
  const w = await startWorker();
  const startMs = performance.now() - t0;
  try {
    const client = {
      post: async (p, key, body) =>
        readAnswer(await w.fetch(p, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body: JSON.stringify(body) })),
      get: async (p) => {
        const r = await w.fetch(p);
        if (!r.ok) throw new Error(`GET ${p}: ${r.status} ${await r.text()}`);
        return r.json();
      },
    };
    const persist = w.mf.unsafeGetPersistPaths();
    const sqliteFiles = (dir) => {
      const out = [];
      for (const sub of existsSync(dir) ? readdirSync(dir) : []) {
        for (const f of readdirSync(path.join(dir, sub))) {
          if (f.endsWith(".sqlite") && f !== "metadata.sqlite") out.push(path.join(dir, sub, f));
        }
      }
      return out;
    };
    // D1: the database's file, and the page of workerd's `_cf_METADATA` table that every query updates.
    const [d1File, ...more] = sqliteFiles(persist.get("d1"));
    if (!d1File || more.length) throw new Error(`expected one D1 database file, found ${[d1File, ...more].join(", ")}`);
    const meta = await w.db.prepare("SELECT rootpage FROM sqlite_schema WHERE name = '_cf_METADATA'").first();
    const d1 = await runHost({ name: "workerd + D1", base: "", client, store: () => ({ file: d1File, ignorePage: meta?.rootpage ?? null }), prefix: "d1", opts, log });
    d1.startMs = startMs;
    d1.bookkeepingPage = meta?.rootpage ?? null;
    // Durable Object: one SQLite file per object, found once the process's first request created it.
    const doFiles = new Map();
    const known = new Set(sqliteFiles(persist.get("do")));
    const doStore = (pid) => {
      if (!doFiles.has(pid)) {
        const fresh = sqliteFiles(persist.get("do")).filter((f) => !known.has(f));
        if (fresh.length !== 1) throw new Error(`expected one new Durable Object file for ${pid}, found ${fresh.length}`);
        doFiles.set(pid, fresh[0]);
        known.add(fresh[0]);
      }
      return { file: doFiles.get(pid) };
    };
    const durableObject = await runHost({ name: "workerd + Durable Object", base: "/do", client, store: doStore, prefix: "do", opts, log });
    durableObject.startMs = startMs;
    return { d1, durableObject };
  } finally {
    await w.close();
  }
}

// ---- Deno KV (benches/hosts-deno.js under deno) -----------------------------------------

function denoBinary() {
  const local = path.join(ROOT, "node_modules", ".bin", "deno");
  return existsSync(local) ? local : "deno";
}

/** Run benches/hosts-deno.js under deno; it prints its figures as JSON on stdout. */
export function measureDenoKv({ opts = {}, log = () => {} } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(denoBinary(), ["run", "--allow-all", "--unstable-kv", path.join(ROOT, "benches", "hosts-deno.js"), JSON.stringify(opts)], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => {
      stderr += d;
      for (const line of String(d).split("\n")) if (line.startsWith("bench: ")) log(line.slice(7));
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`benches/hosts-deno.js exited with ${code}:\n${stderr.slice(-4000)}`));
      try {
        resolve(JSON.parse(stdout));
      } catch (err) {
        reject(new Error(`benches/hosts-deno.js printed no JSON: ${err.message}\n${stdout.slice(-2000)}`));
      }
    });
  });
}

/** All three hosts, one after the other (so that they do not share the two cores). */
export async function measureHosts({ only = null, opts = {}, log = () => {} } = {}) {
  const t = performance.now();
  const res = {};
  const errors = {};
  if (!only || only === "workerd") {
    try {
      Object.assign(res, await measureWorkerd({ opts, log }));
    } catch (err) {
      errors.workerd = err?.stack ?? String(err);
    }
  }
  if (!only || only === "denokv") {
    try {
      res.denoKv = await measureDenoKv({ opts, log });
    } catch (err) {
      errors.denoKv = err?.stack ?? String(err);
    }
  }
  if (Object.keys(errors).length) res.errors = errors;
  const large = HOSTS.map(([k]) => res[k]?.large).find(Boolean);
  if (large) res.largeSnapshotBytes = await largeSnapshotBytes(large.events);
  res.totalMs = performance.now() - t;
  return res;
}

// ---- report ----------------------------------------------------------------------------

const HOSTS = [
  ["d1", "workerd + D1"],
  ["durableObject", "workerd + Durable Object"],
  ["denoKv", "Deno KV (`deno task start`)"],
];

/** Whether all three hosts were measured and committed nothing for their duplicates (null when not run). */
export function duplicatesWriteNothing(hosts) {
  if (!hosts) return null;
  const measured = HOSTS.map(([k]) => hosts[k]);
  return measured.every((h) => h) && measured.every((h) => h.sequential.commits.duplicate.n > 0 && h.sequential.commits.duplicate.dataCommits === 0 && h.sequential.versionsUnchanged);
}

/** Section 4 as markdown lines (the table and what it measured). `hosts` null: not measured. */
export function hostsSection(hosts, { skipped = "" } = {}) {
  const out = [];
  const p = (s = "") => out.push(s);
  const header = ["host", "events/s, one hot process, concurrent delivery", "events/s, many processes", "duplicate cost vs applied", "writes per duplicate"];
  if (!hosts) {
    p(table(header, HOSTS.map(([, label]) => [label, ...Array(4).fill(`not measured (${skipped})`)]), ["l"]));
    return out.join("\n");
  }
  const fx = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
  const ms = (x) => `${x.toFixed(x >= 10 ? 1 : 2)} ms`;
  const rows = [];
  const details = [];
  for (const [key, label] of HOSTS) {
    const h = hosts[key];
    if (!h) {
      const failed = hosts.errors?.[key] ?? (key !== "denoKv" ? hosts.errors?.workerd : undefined);
      rows.push([label, ...Array(4).fill(failed ? "failed (see below)" : "not measured")]);
      continue;
    }
    const s = h.sequential;
    const c = s.commits;
    const perDup = c.duplicate.n ? c.duplicate.dataCommits / c.duplicate.n : NaN;
    rows.push([
      label,
      fx(h.hot.eventsPerSec),
      fx(h.many.eventsPerSec),
      `${ms(s.duplicate.medianMs)} vs ${ms(s.applied.medianMs)} (${(s.duplicate.medianMs / s.applied.medianMs).toFixed(2)}×)`,
      `${perDup === 0 ? "0" : perDup.toFixed(2)} (${c.duplicate.dataCommits} commits in ${c.duplicate.n}; applied: ${c.applied.dataCommits} in ${c.applied.n})`,
    ]);
    details.push([
      label,
      `${h.hot.requests} req in ${(h.hot.wallMs / 1000).toFixed(2)} s = ${fx(h.hot.requestsPerSec)} req/s; ${(h.hot.attempts / h.hot.requests).toFixed(2)} tries/req, ${h.hot.contention409} × 409`,
      `${h.many.requests} req in ${(h.many.wallMs / 1000).toFixed(2)} s; ${(h.many.attempts / h.many.requests).toFixed(2)} tries/req`,
      `p95 ${ms(s.duplicate.p95Ms)} vs ${ms(s.applied.p95Ms)} (n = ${s.duplicate.n}, ${s.applied.n})`,
      key === "d1"
        ? `revision unchanged: ${s.versionsUnchanged ? "yes" : "NO"}; + ${c.duplicate.commits - c.duplicate.dataCommits} \`_cf_METADATA\`-only commits (1 per query, reads too)`
        : key === "denoKv"
          ? `head versionstamp unchanged: ${s.versionsUnchanged ? "yes" : "NO"} (${s.versions[0].version[0]})`
          : `revision unchanged: ${s.versionsUnchanged ? "yes" : "NO"}`,
    ]);
  }
  p(table(header, rows, ["l"]));
  p();
  const any = HOSTS.map(([k]) => hosts[k]).find(Boolean);
  const w = any?.workload ?? DEFAULTS;
  p(`Hot process: ${w.hotEvents} distinct events to one process, each delivered ${w.copies}× in a seeded random order, ${w.concurrency} requests in flight; events/s = distinct events / wall time (the copies are served in the same time). Many processes: ${w.processes} processes × ${w.perProcess} events, ${w.concurrency} in flight. Duplicate cost: median latency of a replay against an applied event, one request at a time on one process (${w.blocks} blocks of ${w.block} applied events, then ${w.block} replays of events already applied), as the client sees it. Writes: committed write transactions counted in the store's SQLite write-ahead log around each block (D1: one file; Durable Object: the object's own file; Deno KV: its file), before and after the replays; the applied blocks show that the count sees writes. Every answer checked: each event applied once, every other copy a replay, final revisions as sent.`);
  p();
  p(table(["host", "hot process", "many processes", "latency p95 (replay vs applied)", "store evidence"], details, ["l", "l", "l", "l", "l"]));
  const written = HOSTS.filter(([k]) => hosts[k]?.large).map(([k, label]) => {
    const h = hosts[k];
    const a = h.sequential.commits.applied;
    const kb = (b) => (Number.isFinite(b) ? `${(b / 1024).toFixed(1)} KiB` : "n/a (log restarted)");
    const perLarge = h.large.bytes / h.large.n;
    return [label, kb(a.bytes / a.n), kb(perLarge), hosts.largeSnapshotBytes ? `${(perLarge / hosts.largeSnapshotBytes).toFixed(2)}×` : ""];
  });
  if (written.length) {
    p();
    const size = hosts.largeSnapshotBytes ? `, snapshot ${(hosts.largeSnapshotBytes / 1024).toFixed(1)} KiB` : "";
    const large = HOSTS.map(([k]) => hosts[k]?.large).find(Boolean);
    p(table(["host", "written per applied event, small process", `written per applied event, large process (${large.events} events${size})`, "large: written / snapshot"], written, ["l"]));
    p();
    p(`Bytes the store's write-ahead log grew by per applied event (frames × (24 + page size)): the sequential block's process (${w.blocks * w.block + 5} events or fewer), and the large process after ${large.events - large.n} events, ${large.n} applied one at a time. Every byte a commit changes is written as whole pages; the snapshot size is the engine's for the same events.`);
  }
  if (hosts.errors) for (const [k, e] of Object.entries(hosts.errors)) p(`\n${k} failed: ${e}`);
  p();
  p(`Started and measured in ${(hosts.totalMs / 1000).toFixed(1)} s (workerd start incl. the wrangler bundle: ${hosts.d1 ? (hosts.d1.startMs / 1000).toFixed(1) + " s" : "—"}; Deno KV server start: ${hosts.denoKv ? (hosts.denoKv.startMs / 1000).toFixed(1) + " s" : "—"}). Client and host share the machine's cores.`);
  return out.join("\n");
}

// ---- standalone ------------------------------------------------------------------------

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { parseArgs } = await import("node:util");
  const { values } = parseArgs({ options: { only: { type: "string" }, json: { type: "string" } } });
  const log = (msg) => process.stderr.write(`bench: ${msg}\n`);
  const hosts = await measureHosts({ only: values.only ?? null, log });
  console.log(hostsSection(hosts));
  if (values.json) writeFileSync(values.json, JSON.stringify(hosts, null, 2));
}
