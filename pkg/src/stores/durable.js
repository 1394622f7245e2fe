// Cloudflare Durable Object store: the snapshot and the event log live in the storage of the
// object that owns the process (one object per process, so the platform runs its requests one
// at a time).
//
// Keys: `version` (the revision), `chunks` (their count), `snapshot:000`… (the snapshot,
// CHUNK_CHARS characters each), `log:<revision, 12 digits>` (event-log rows) and `snapshot`
// (the one-value form of earlier releases: read, and deleted by the next commit).
//
// `commit` reads `version` and `chunks`, then makes ONE `put` (version, count, the chunks that
// changed, the log row) and ONE `delete` (chunks beyond the new count) with no `await`
// between them: the storage submits them atomically and the input gate holds other events
// back during the read, so the compare-and-set is exact. A snapshot needing more than
// MAX_CHUNKS chunks (one `put` holds 128 keys) throws a `StoreLimitError` before anything is
// written; a missing or short chunk makes `load` throw a `StoreCorruptError`. Keep one store
// for the object's lifetime: `load` then reads only `version` while it is the kept one.
// Why CHUNK_CHARS and MAX_CHUNKS: benches/RESULTS.md, "Store chunk sizes and limits".

import { StoreCorruptError, StoreLimitError } from "./limit.js";
import { KeptSnapshots, diffChunks, eventLogRow } from "./common.js";
import { IdemError } from "../error.js";
import { commitArgs, eventsOptionsArg, processIdArg, versionArg, withMethods } from "../checks.js";

export { StoreCorruptError, StoreLimitError };

/** UTF-16 code units of snapshot text per chunk (one value). */
export const CHUNK_CHARS = 32_768;
/** Most chunks one commit's `put` can hold (128 keys less `version`, `chunks` and the log row). */
export const MAX_CHUNKS = 125;

const pad = (n) => String(n).padStart(12, "0");
const chunkKey = (i) => `snapshot:${String(i).padStart(3, "0")}`;
const chunkCount = (text) => Math.ceil(text.length / CHUNK_CHARS);

/**
 * @implements {import("../index.d.ts").Store}
 */
export class DurableObjectStore {
  /**
   * @param {DurableObjectStorage} storage `ctx.storage` of the object
   * @param {string} [processId] the one process this object owns (checked on every call when given)
   */
  constructor(storage, processId) {
    this.storage = withMethods(storage, "storage", ["get", "put", "delete", "list"], "a Durable Object's storage (ctx.storage)");
    this.processId = processId === undefined ? undefined : processIdArg(processId);
    /** The object runs its process's calls one at a time already: `apply` keeps no lane for it. */
    this.serial = true;
    /** The snapshot last read or written, and whether it is stored in chunks. */
    this.kept = new KeptSnapshots({ entries: 1 });
    /** Chunks written by commits. */
    this.chunkWrites = 0;
    /** Chunks commits left alone because the stored text was already theirs. */
    this.chunksSkipped = 0;
  }

  /** Throws unless `processId` is a process id, and this object's when it was given one. */
  check(processId) {
    processIdArg(processId);
    if (this.processId !== undefined && processId !== this.processId) {
      throw new IdemError("invalid_argument", `processId: this object owns process "${this.processId}", not "${processId}"`, { path: "processId" });
    }
  }

  /** @param {string} processId */
  async load(processId) {
    this.check(processId);
    const kept = this.kept.get(processId);
    if (kept) {
      const version = await this.storage.get("version");
      if (version === kept.version) return { snapshot: kept.snapshot, version };
    }
    this.kept.delete(processId);
    const got = await this.storage.get(["version", "chunks", "snapshot"]);
    const version = got.get("version");
    const count = got.get("chunks");
    if (count === undefined) {
      const snapshot = got.get("snapshot");
      if (snapshot === undefined) return null;
      this.kept.set(processId, version, snapshot, false);
      return { snapshot, version };
    }
    const keys = Array.from({ length: count }, (_, i) => chunkKey(i));
    const parts = count > 0 ? await this.storage.get(keys) : new Map();
    let snapshot = "";
    for (let i = 0; i < count; i++) {
      const part = parts.get(keys[i]);
      // Every chunk but the last is full: a missing or short one is a broken store, not a snapshot.
      if (typeof part !== "string" || (i < count - 1 && part.length !== CHUNK_CHARS) || part.length === 0) {
        throw new StoreCorruptError(
          `process "${processId}": snapshot chunk ${keys[i]} of ${count} is ${typeof part === "string" ? `${part.length} characters long` : "missing"} at revision ${version}`,
          { processId, version, chunks: count, chunk: keys[i] },
        );
      }
      snapshot += part;
    }
    this.kept.set(processId, version, snapshot, true);
    return { snapshot, version };
  }

  /**
   * @param {string} processId
   * @param {number | null} expectedVersion
   * @param {import("../index.d.ts").Outcome} outcome
   * @param {import("../index.d.ts").CommitExtras} [extras]
   */
  async commit(processId, expectedVersion, outcome, extras = {}) {
    this.check(processId);
    versionArg(expectedVersion);
    commitArgs(outcome, extras);
    const snapshot = outcome.snapshot;
    const count = chunkCount(snapshot);
    if (count > MAX_CHUNKS) {
      throw new StoreLimitError(
        `snapshot of ${snapshot.length} characters needs ${count} chunks; a Durable Object commit holds at most ${MAX_CHUNKS} (${MAX_CHUNKS * CHUNK_CHARS} characters)`,
        { processId, characters: snapshot.length, chunks: count, limit: MAX_CHUNKS },
      );
    }
    const got = await this.storage.get(["version", "chunks"]);
    const current = got.get("version") ?? null;
    if (current !== expectedVersion) return { ok: false, conflict: true };
    // The stored text is known exactly when it is the kept one; otherwise every chunk is written.
    const storedCount = got.get("chunks") ?? 0;
    const version = outcome.revision;
    const entries = { version, chunks: count };
    const changed = diffChunks(snapshot, CHUNK_CHARS, this.kept.stored(processId, current)).filter((c) => !c.same);
    for (const c of changed) entries[chunkKey(c.index)] = c.text;
    const row = eventLogRow({ outcome, extras });
    if (row !== null) entries[`log:${pad(version)}`] = row;
    const gone = [];
    for (let i = count; i < storedCount; i++) gone.push(chunkKey(i));
    // The single-value form of earlier releases: there is one exactly when a version has no chunk count.
    if (current !== null && got.get("chunks") === undefined) gone.push("snapshot");
    this.kept.delete(processId);
    // No `await` between the two writes: Durable Object storage submits them atomically.
    const writes = [this.storage.put(entries)];
    if (gone.length > 0) writes.push(this.storage.delete(gone));
    await Promise.all(writes);
    this.chunkWrites += changed.length;
    this.chunksSkipped += count - changed.length;
    this.kept.set(processId, version, snapshot, true);
    return { ok: true, version };
  }

  /**
   * The event log, oldest first.
   * @param {string} processId
   * @param {{ after?: number, limit?: number }} [options]
   */
  async events(processId, options = {}) {
    this.check(processId);
    eventsOptionsArg(options);
    const rows = await this.storage.list({
      start: `log:${pad((options.after ?? 0) + 1)}`,
      end: "log;",
      limit: options.limit ?? 100,
    });
    return [...rows.values()];
  }
}
