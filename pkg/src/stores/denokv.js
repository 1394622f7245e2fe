// Deno KV store (local SQLite-backed KV and Deno Deploy's KV: the same API),
// and the glue that drives the outbox dispatcher from Deno KV's queue.
//
// Keys (prefix default "idem"):
//
//   [prefix, "process", id, 0]          head { revision, chunks, bytes, nextDueAt, updatedAt }
//   [prefix, "process", id, 1..n]       the snapshot's bytes, split into values of CHUNK_BYTES (16 KiB)
//   [prefix, "log", id, revision]       event log row (JSON), expires after the event's retention window
//   [prefix, "event", id, eventId]      replay record: { revision } of an event id's log row, same expiry
//
// Commit = ONE `kv.atomic()`: `check({ key: head, versionstamp: expected })`,
// then the head, the chunks that changed, the deletion of chunks the previous
// snapshot had beyond the new count, the two side records and (with
// `queue: true`) the dispatch message, all or nothing. A lost check
// (`ok: false`) is reported as `{ ok: false, conflict: true }` and the shared
// retry loop (host.js) reloads. Version = the head's versionstamp.
//
// Only the chunks that changed are set (`diffChunks`): when the expected version is the kept
// snapshot's and it is stored as this store cuts it (ASCII, every CHUNK_BYTES), a chunk whose
// characters are the stored ones is left alone; otherwise every chunk is set. Why CHUNK_BYTES
// and the limits: benches/RESULTS.md, "Store chunk sizes and limits".
//
// Local Deno KV is a SQLite file: several handles or processes on one file
// take turns for its write lock, and a turn not had in time fails with
// "database is locked" after SQLite rolled the operation back. The store
// tries such an operation again (the check still guards it) and, if the
// database stays busy, reports a conflict so the host loop backs off.
//
// A load is ONE range read (`list` over [prefix, "process", id]), so the head
// and its chunks always come from the same commit. Chunks that do not make the
// head's snapshot (one missing, their bytes not the head's count) make `load`
// throw a `StoreCorruptError` (code `snapshot_corrupt`, HTTP 500).
//
// A commit that would exceed Deno KV's limits for one atomic operation (DENO_KV_LIMITS) throws
// a `StoreLimitError` (`snapshot_too_large`, HTTP 507) before anything is sent; the check counts
// every chunk as set, so what is accepted does not depend on what the store keeps. Keep
// snapshots under `DenoKvStore.maxSnapshotBytes` with the machine's `retention.maxEntries` or
// `limits.maxSnapshotBytes`.

import { dispatch } from "../dispatch.js";
import { GroupCommitStore, KeptSnapshots, diffChunks, eventLogRow } from "./common.js";
import { StoreCorruptError, StoreLimitError } from "./limit.js";
import { eventsOptionsArg, invalidArgument, isBoolean, isRecord, isDuration, isFunction, optionalField, optionsArg, processIdArg, withMethods } from "../checks.js";

export { StoreCorruptError, StoreLimitError };

/** Deno KV's limits for one atomic operation (the defaults of Deno's KV config). */
export const DENO_KV_LIMITS = Object.freeze({
  maxValueBytes: 65_536,
  maxKeyBytes: 2_048,
  maxChecks: 100,
  maxMutations: 1_000,
  maxTotalMutationBytes: 819_200,
  maxTotalKeyBytes: 81_920,
  /** Longest delay of an enqueued message (30 days). */
  maxQueueDelayMs: 30 * 24 * 3_600_000,
});

/** Bytes per snapshot chunk (one value; a quarter of its limit: the last chunk is set on every event). */
export const CHUNK_BYTES = 16_384;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Encoded size of a key, as Deno KV counts it (its tuple encoding). */
export function keyBytes(key) {
  let n = 0;
  for (const part of key) {
    if (typeof part === "string") {
      const b = encoder.encode(part);
      n += 2 + b.length + b.filter((x) => x === 0).length;
    } else if (part instanceof Uint8Array) {
      n += 2 + part.length + part.filter((x) => x === 0).length;
    } else if (typeof part === "number") {
      n += 9;
    } else if (typeof part === "bigint") {
      n += 2 + Math.ceil(part.toString(16).length / 2) + 1;
    } else if (typeof part === "boolean") {
      n += 1;
    } else {
      throw new TypeError(`unsupported key part ${typeof part}`);
    }
  }
  return n;
}

/** A plain object's size as a Deno KV value: V8 serialization, bounded from above. */
function objectBytes(value) {
  return 2 * JSON.stringify(value).length + 64;
}

/** Retention window of an event type, from `machine.retention()`. */
function windowOf(retention, type) {
  const ms = retention?.perType?.[type] ?? retention?.defaultMs;
  return typeof ms === "number" && ms > 0 ? ms : undefined;
}

/** The dispatch message this module enqueues. */
export function isDispatchMessage(msg) {
  return !!msg && typeof msg === "object" && msg.idem === "dispatch" && typeof msg.processId === "string";
}

/**
 * A local (SQLite) Deno KV database shared by several handles or processes
 * answers "database is locked" when another one holds the write lock. The
 * operation did not happen (SQLite rolled it back); it is safe to try again.
 */
export function isBusy(err) {
  return /database is locked|database is busy|SQLITE_BUSY/i.test(String(err?.message ?? err));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Run `fn`, trying again (with jitter) while the database is busy, at most `tries` times. */
async function whileBusy(fn, tries = 50, onBusy = undefined) {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!isBusy(err) || i >= tries) throw err;
      onBusy?.();
      await sleep(1 + Math.random() * Math.min(50, 2 * i));
    }
  }
}

/** Whether chunk values (`{ value }`, `bytes` in all) are cut as `commit` cuts them: every CHUNK_BYTES. */
function isCut(parts, bytes) {
  if (parts.length !== Math.max(1, Math.ceil(bytes / CHUNK_BYTES))) return false;
  return parts.every((p, i) => p.value.byteLength === Math.min(CHUNK_BYTES, bytes - i * CHUNK_BYTES));
}

/**
 * A snapshot cut into chunks of CHUNK_BYTES bytes, as `commit` stores them: `{ chunks, bytes, ascii,
 * parts: [{ value, size, same }] }`. `stored`: the characters the stored chunks hold, one byte
 * each (the kept snapshot, when cut so), or null. A chunk whose characters are the stored chunk's is `same` and is
 * not encoded (`value` undefined): with an ASCII snapshot only the chunks that changed are turned
 * into bytes, not the whole text on every commit. A snapshot that is not ASCII (the engine's are)
 * is encoded whole and cut by bytes.
 * @param {string} text
 * @param {string | null} stored
 */
export function cutChunks(text, stored) {
  if (stored !== null) {
    const chunks = Math.max(1, Math.ceil(text.length / CHUNK_BYTES));
    const parts = [];
    for (const c of diffChunks(text, CHUNK_BYTES, stored, chunks)) {
      // The stored chunk is these characters, one byte each: ASCII, and not to be sent again.
      if (c.same) {
        parts.push({ value: undefined, size: c.text.length, same: true });
        continue;
      }
      const value = encoder.encode(c.text);
      // A character that is not ASCII: chunks are cut by bytes, so cut the whole again.
      if (value.byteLength !== c.text.length) return cutChunks(text, null);
      parts.push({ value, size: value.byteLength, same: false });
    }
    return { chunks, bytes: text.length, ascii: true, parts };
  }
  const all = encoder.encode(text);
  const chunks = Math.max(1, Math.ceil(all.length / CHUNK_BYTES));
  const parts = [];
  for (let i = 0; i < chunks; i++) {
    const value = all.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES);
    parts.push({ value, size: value.byteLength, same: false });
  }
  // ASCII only (the engine escapes the rest): each character is one byte.
  return { chunks, bytes: all.length, ascii: all.length === text.length, parts };
}

/** Delay (ms) of a message meant to run at `at`, from `now`, within Deno KV's bounds. */
function delayFor(at, now) {
  return Math.min(Math.max(0, Math.ceil(at - now)), DENO_KV_LIMITS.maxQueueDelayMs);
}

/**
 * @implements {import("../index.d.ts").Store}
 */
export class DenoKvStore extends GroupCommitStore {
  /**
   * ```js
   * const kv = await Deno.openKv();            // or Deno.openKv("./idem.sqlite")
   * const store = new DenoKvStore(kv, { machine, queue: true });
   * ```
   *
   * @param {Deno.Kv} kv
   * @param {{
   *   prefix?: string,
   *   machine?: { retention(): import("../index.d.ts").Retention },
   *   machineFor?: (processId: string) => { retention(): import("../index.d.ts").Retention },
   *   queue?: boolean,
   * }} [options]
   *   `machine` / `machineFor`: whose `retention()` sets how long side records
   *   live (`expireIn`: the window of the event's type, else `defaultMs`);
   *   `queue: true`: a commit that leaves work due (`outcome.nextDueAt`)
   *   enqueues a dispatch message for that time in the same atomic operation
   *   (see {@link DenoKvQueue}), so no effect waits on a lost kick.
   */
  constructor(kv, options = {}) {
    super();
    this.kv = withMethods(kv, "kv", ["get", "atomic", "list"], "a Deno.Kv (await Deno.openKv())");
    optionsArg(options);
    optionalField(options, "prefix", (v) => typeof v === "string", "a string");
    optionalField(options, "machine", (v) => typeof v?.retention === "function", "a Machine");
    optionalField(options, "machineFor", isFunction, "a function");
    optionalField(options, "queue", isBoolean, "true or false");
    this.prefix = options.prefix ?? "idem";
    this.machineFor = options.machineFor ?? (options.machine ? () => options.machine : null);
    this.queue = options.queue ?? false;
    /** Operations tried again because the (local) database was busy. */
    this.busyRetries = 0;
    this.onBusy = () => this.busyRetries++;
    /**
     * The last head seen per process: its version and chunk count (the chunks a commit on it deletes).
     * @type {Map<string, { version: string, chunks: number }>}
     */
    this.heads = new Map();
    /**
     * The snapshots last read or written: while a process's head is unchanged, `load` reads only
     * the head. `cut` when the chunks hold its characters one byte each, every CHUNK_BYTES.
     */
    this.kept = new KeptSnapshots();
    /** Snapshot chunks set by the commits that landed. */
    this.chunkWrites = 0;
    /** Snapshot chunks those commits left alone (their stored bytes were the new ones). */
    this.chunksSkipped = 0;
    /** Bytes of the snapshot chunks set by the commits that landed. */
    this.chunkBytesWritten = 0;
  }

  headKey(processId) {
    return [this.prefix, "process", processId, 0];
  }

  chunkKey(processId, i) {
    return [this.prefix, "process", processId, i];
  }

  remember(processId, version, chunks) {
    this.heads.delete(processId);
    this.heads.set(processId, { version, chunks });
    if (this.heads.size > 1_000) this.heads.delete(this.heads.keys().next().value);
  }

  /** @param {string} processId */
  async load(processId) {
    processIdArg(processId);
    const kept = this.kept.get(processId);
    if (kept) {
      const head = await whileBusy(() => this.kv.get(this.headKey(processId), { consistency: "strong" }), 50, this.onBusy);
      if (head.versionstamp === kept.version) return { snapshot: kept.snapshot, version: kept.version };
      this.kept.delete(processId);
    }
    const entries = await whileBusy(async () => {
      const got = [];
      const iter = this.kv.list({ prefix: [this.prefix, "process", processId] }, { batchSize: 1_000, consistency: "strong" });
      for await (const e of iter) got.push(e);
      return got;
    }, 50, this.onBusy);
    if (entries.length === 0 || entries[0].key[3] !== 0) return null;
    const head = entries[0];
    const { chunks, bytes } = head.value;
    const parts = entries.slice(1, 1 + chunks);
    const corrupt = (what, details) =>
      new StoreCorruptError(`process "${processId}": ${what} at version ${head.versionstamp}`, {
        processId,
        version: head.versionstamp,
        chunks,
        bytes,
        ...details,
      });
    if (parts.length !== chunks || parts.some((e, i) => e.key[3] !== i + 1)) {
      throw corrupt(`${parts.length} of ${chunks} snapshot chunks found`, { found: parts.length });
    }
    const all = new Uint8Array(bytes);
    let at = 0;
    for (const p of parts) {
      if (at + p.value.byteLength > bytes) throw corrupt(`snapshot chunks exceed ${bytes} bytes`, { bytesFound: at + p.value.byteLength });
      all.set(p.value, at);
      at += p.value.byteLength;
    }
    if (at !== bytes) throw corrupt(`snapshot chunks hold ${at} of ${bytes} bytes`, { bytesFound: at });
    const snapshot = decoder.decode(all);
    // The decoder turns a byte into one character only when it is ASCII or invalid (U+FFFD), and
    // drops a leading byte order mark: same length and no U+FFFD = the stored bytes are the characters.
    const exact = snapshot.length === bytes && !snapshot.includes("\uFFFD") && isCut(parts, bytes);
    this.remember(processId, head.versionstamp, chunks);
    this.kept.set(processId, head.versionstamp, snapshot, exact);
    return { snapshot, version: head.versionstamp };
  }

  /**
   * Several changed outcomes of one process in one atomic commit (`apply` groups the calls waiting
   * in a lane): the head and the chunks hold the last one's snapshot, and each gets its log row and
   * event pointer. All of it is checked against Deno KV's limits before anything is sent.
   * @param {string} processId
   * @param {string | null} expectedVersion
   * @param {{ outcome: import("../index.d.ts").Outcome, extras?: import("../index.d.ts").CommitExtras }[]} steps
   */
  async commitSteps(processId, expectedVersion, steps) {
    const { outcome, extras = {} } = steps[steps.length - 1];
    const clock = Date.now();
    const now = extras.now ?? clock;
    const headKey = this.headKey(processId);

    // The chunk count of the snapshot being replaced (its extra chunks are deleted).
    let oldChunks = 0;
    if (expectedVersion !== null) {
      const known = this.heads.get(processId);
      if (known && known.version === expectedVersion) {
        oldChunks = known.chunks;
      } else {
        const head = await whileBusy(() => this.kv.get(headKey), 50, this.onBusy);
        if (head.versionstamp !== expectedVersion) return { ok: false, conflict: true };
        oldChunks = head.value.chunks;
      }
    }

    const text = outcome.snapshot;
    // The snapshot's chunks, each with its bytes unless they are the stored ones (`same`).
    const cut = cutChunks(text, this.kept.stored(processId, expectedVersion));
    const { chunks, bytes, ascii } = cut;
    const head = { revision: outcome.revision, chunks, bytes, nextDueAt: outcome.nextDueAt ?? null, updatedAt: now };

    /** @type {{ key: Deno.KvKey, value?: unknown, size: number, expireIn?: number, chunk?: boolean, same?: boolean }[]} */
    const sets = [{ key: headKey, value: head, size: objectBytes(head) }];
    cut.parts.forEach((p, i) => sets.push({ key: this.chunkKey(processId, i + 1), value: p.value, size: p.size, chunk: true, same: p.same }));
    const deletes = [];
    for (let i = chunks + 1; i <= oldChunks; i++) deletes.push(this.chunkKey(processId, i));

    const machine = steps.some((step) => step.extras?.event) ? this.machineFor?.(processId) : undefined;
    for (const step of steps) {
      const row = eventLogRow(step, clock);
      if (row === null) continue;
      const expireIn = windowOf(machine?.retention(), row.type);
      const text = encoder.encode(JSON.stringify(row));
      sets.push({ key: [this.prefix, "log", processId, row.revision], value: text, size: text.byteLength, expireIn });
      const pointer = { revision: row.revision };
      sets.push({ key: [this.prefix, "event", processId, row.eventId], value: pointer, size: objectBytes(pointer), expireIn });
    }

    let message = null;
    if (this.queue && typeof outcome.nextDueAt === "number") {
      message = { idem: "dispatch", processId, at: outcome.nextDueAt };
    }

    // Check every limit before anything is sent: the commit is all or nothing, and so is this answer.
    const checkBytes = keyBytes(headKey);
    let keyTotal = 0;
    let total = checkBytes;
    for (const s of sets) {
      const k = keyBytes(s.key);
      if (k > DENO_KV_LIMITS.maxKeyBytes) throw new StoreLimitError(`Deno KV key of ${k} bytes is over ${DENO_KV_LIMITS.maxKeyBytes} (process id or event id too long)`, { processId });
      if (s.size > DENO_KV_LIMITS.maxValueBytes) {
        throw new StoreLimitError(
          `process "${processId}": a record of ${s.size} bytes is over Deno KV's ${DENO_KV_LIMITS.maxValueBytes}-byte value limit (the event's response is too large); nothing was written`,
          { processId, bytes: s.size },
        );
      }
      keyTotal += k;
      total += 2 * k + s.size; // a set counts its key twice (as a mutation and with its value)
    }
    for (const d of deletes) total += keyBytes(d);
    const messageBytes = message ? objectBytes(message) : 0;
    total += messageBytes;
    const mutations = sets.length + deletes.length + (message ? 1 : 0);
    if (total > DENO_KV_LIMITS.maxTotalMutationBytes || keyTotal > DENO_KV_LIMITS.maxTotalKeyBytes || mutations > DENO_KV_LIMITS.maxMutations) {
      throw new StoreLimitError(
        `process "${processId}": the snapshot is ${bytes} bytes (${chunks} chunks of at most ${CHUNK_BYTES}); ` +
          `with its keys and side records one commit would be ${total} bytes, over Deno KV's ${DENO_KV_LIMITS.maxTotalMutationBytes}-byte ` +
          `limit for one atomic operation. Nothing was written. Lower the machine's retention.maxEntries (the ledger) ` +
          `or set limits.maxSnapshotBytes below ${DenoKvStore.maxSnapshotBytes} so the engine rejects the event instead.`,
        { processId, bytes, chunks, commitBytes: total, limit: DENO_KV_LIMITS.maxTotalMutationBytes },
      );
    }

    const op = this.kv.atomic().check({ key: headKey, versionstamp: expectedVersion });
    let skipped = 0;
    let written = 0;
    let writtenBytes = 0;
    for (const s of sets) {
      if (s.same) {
        skipped++;
        continue;
      }
      if (s.chunk) {
        written++;
        writtenBytes += s.size;
      }
      op.set(s.key, s.value, s.expireIn === undefined ? undefined : { expireIn: s.expireIn });
    }
    for (const d of deletes) op.delete(d);
    if (message) op.enqueue(message, { delay: delayFor(message.at, now) });
    let res;
    try {
      // Busy: SQLite rolled the transaction back; the same operation (with its check) can run again.
      res = await whileBusy(() => op.commit(), 20, this.onBusy);
    } catch (err) {
      if (isBusy(err)) {
        this.heads.delete(processId);
        this.kept.delete(processId);
        return { ok: false, conflict: true }; // still busy: the host loop backs off, reloads and retries
      }
      if (/too large|too many/i.test(String(err?.message))) {
        throw new StoreLimitError(`process "${processId}": Deno KV refused the commit (${err.message}); nothing was written`, { processId, cause: err });
      }
      throw err;
    }
    if (!res.ok) {
      this.heads.delete(processId);
      this.kept.delete(processId);
      return { ok: false, conflict: true };
    }
    this.chunkWrites += written;
    this.chunksSkipped += skipped;
    this.chunkBytesWritten += writtenBytes;
    this.remember(processId, res.versionstamp, chunks);
    this.kept.set(processId, res.versionstamp, text, ascii);
    return { ok: true, version: res.versionstamp };
  }

  /**
   * The event log, oldest first (rows expire after their retention window).
   * @param {string} processId
   * @param {{ after?: number, limit?: number }} [options]
   * @returns {Promise<import("../index.d.ts").EventLogRow[]>}
   */
  async events(processId, options = {}) {
    processIdArg(processId);
    eventsOptionsArg(options);
    const prefix = [this.prefix, "log", processId];
    const rows = [];
    const iter = this.kv.list({ prefix, start: [...prefix, (options.after ?? 0) + 1] }, { limit: options.limit ?? 100 });
    for await (const e of iter) rows.push(JSON.parse(decoder.decode(e.value)));
    return rows;
  }

  /**
   * The first outcome of an event id (the replay record), while its retention
   * window lasts, or null.
   * @param {string} processId
   * @param {string} eventId
   * @returns {Promise<import("../index.d.ts").EventLogRow | null>}
   */
  async eventRecord(processId, eventId) {
    processIdArg(processId);
    if (typeof eventId !== "string") throw invalidArgument("eventId", "a string", eventId);
    const e = await this.kv.get([this.prefix, "event", processId, eventId]);
    if (e.value === null) return null;
    const row = await this.kv.get([this.prefix, "log", processId, e.value.revision]);
    return row.value === null ? null : JSON.parse(decoder.decode(row.value));
  }
}

/**
 * Largest snapshot (bytes) that always fits one commit, whatever the event:
 * the rest of the atomic limit is left for the keys (process and event ids of
 * up to 256 bytes, the default prefix), the event log row (up to one 64 KiB
 * value: it holds the frozen response) and the queue message. Those take at
 * most 69,046 bytes besides the chunks, and each chunk set counts its key
 * (at most 282 bytes) twice: with n = ceil(S / CHUNK_BYTES) chunks, a snapshot
 * of S bytes fits when S + 564 n <= 819,200 - 69,046. 722,764 bytes (45
 * chunks) does, with about 2 KB to spare for a longer prefix
 * (tests/deno/store.test.js commits it with 256-byte ids and a 60 KB
 * response). Set a machine's `limits.maxSnapshotBytes` at or under it and the
 * engine rejects an event whose snapshot would not fit (`snapshot_too_large`)
 * before the store sees it.
 */
DenoKvStore.maxSnapshotBytes = 722_764;

/**
 * Drives the outbox dispatcher (dispatch.js) from Deno KV's queue.
 *
 * ```js
 * const kv = await Deno.openKv();
 * const store = new DenoKvStore(kv, { machine, queue: true }); // commits enqueue their due work
 * const queue = new DenoKvQueue(kv, { store, machineFor: () => machine, options: () => ({ handlers, verifiers }) });
 * kv.listenQueue((msg) => queue.handle(msg));                   // or queue.listen()
 * ```
 *
 * Every commit that leaves work due enqueues `{ idem: "dispatch", processId, at }`
 * with `delay` = its due time (in the same atomic operation, when the store
 * has `queue: true`; `kick(processId)` enqueues one by hand). A delivered
 * message runs `dispatch` for its process; the reports it commits enqueue
 * the next messages (a retry's backoff, an attempt's lease). The handler
 * enqueues one more message itself only for work that stays due without a
 * commit: work this host has no handler for, a verifier that failed, or a
 * due time further than Deno KV's 30-day delay limit.
 *
 * Delivery is at least once: a message delivered twice runs `dispatch`
 * twice, and the engine absorbs the second (its `started` report is a
 * duplicate: the handler is not called again). A handler that throws makes
 * Deno KV deliver the message again.
 */
export class DenoKvQueue {
  /**
   * @param {Deno.Kv} kv
   * @param {{
   *   store: import("../index.d.ts").Store,
   *   machineFor: (processId: string) => import("../index.d.ts").MachineLike,
   *   options?: (processId: string) => import("../index.d.ts").DispatchOptions,
   *   now?: () => number,
   *   onReport?: (processId: string, report: import("../index.d.ts").DispatchReport) => void,
   * }} config
   */
  constructor(kv, config) {
    this.kv = withMethods(kv, "kv", ["enqueue", "listenQueue"], "a Deno.Kv (await Deno.openKv())");
    if (!isRecord(config)) throw invalidArgument("config", "an object { store, machineFor }", config);
    withMethods(config.store, "config.store", ["load", "commit"], "a store (an object with load and commit)");
    if (!isFunction(config.machineFor)) throw invalidArgument("config.machineFor", "a function", config.machineFor);
    for (const key of ["options", "now", "onReport"]) optionalField(config, key, isFunction, "a function", "config");
    this.kv = kv;
    this.store = config.store;
    this.machineFor = config.machineFor;
    this.options = config.options ?? (() => ({}));
    this.now = config.now ?? Date.now;
    this.onReport = config.onReport;
    /** Messages handled by this instance. */
    this.delivered = 0;
  }

  /**
   * Enqueue a dispatch of `processId` at `at` (ms; default now).
   * @param {string} processId
   * @param {number} [at]
   */
  async kick(processId, at = this.now()) {
    processIdArg(processId);
    if (!isDuration(at)) throw invalidArgument("at", "a number of ms", at);
    await this.kv.enqueue({ idem: "dispatch", processId, at }, { delay: delayFor(at, this.now()) });
  }

  /**
   * Handle one queue message. Resolves to false for messages that are not
   * this module's (so an app can route its own), true once handled.
   * @param {unknown} msg
   */
  async handle(msg) {
    if (!isDispatchMessage(msg)) return false;
    this.delivered++;
    const { processId } = msg;
    const machine = this.machineFor(processId);
    const report = await dispatch(this.store, machine, processId, this.options(processId));
    this.onReport?.(processId, report);
    if (report.nextDueAt !== null) {
      // Work this host could not do stays due: look again when the dispatcher says.
      const stuck = report.steps.some((s) => s.result === "unhandled" || s.result === "verify-error");
      // Woke before the work it was enqueued for (a delay clamped to 30 days): wait again.
      const early = report.steps.length === 0 && typeof msg.at === "number" && msg.at >= report.nextDueAt;
      // Otherwise every commit that left work due enqueued its own message.
      if (stuck || early) await this.kick(processId, report.nextDueAt);
    }
    return true;
  }

  /** `kv.listenQueue` with this handler (call it once per Deno KV handle). */
  listen() {
    return this.kv.listenQueue((msg) => this.handle(msg));
  }
}
