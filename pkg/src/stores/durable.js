// Cloudflare Durable Object store: the snapshot lives in the storage of the
// object that owns the process (one object per process id, so requests for a
// process are serialised by the platform). It also keeps the event log.
//
// Keys:
//
//   version                      the revision of the stored snapshot (number)
//   chunks                       how many chunks the snapshot has (number)
//   snapshot:000 … snapshot:124  the snapshot text, CHUNK_CHARS characters per chunk (the last shorter)
//   log:<revision, 12 digits>    event log row
//   snapshot                     the whole snapshot as one value: the form earlier releases
//                                wrote; read, and deleted by the next commit
//
// `commit` reads the version (and the chunk count) and then writes, with no
// `await` between them, ONE multi-key `put` { version, chunks, changed chunks,
// log row } and ONE `delete` of the chunks beyond the new count (and of the old
// `snapshot` key). Durable Object storage submits writes made without an
// intervening `await` atomically ("automatic write coalescing"), and while a
// read is in flight the object's input gate holds back other events, so the
// reads followed by the writes behave as one transaction and the
// compare-and-set is exact. Version = revision.
//
// Only the chunks whose text changed are written. The engine's snapshot puts
// the ledger's records first and appends one per event, so an event usually
// changes the last chunk or two: the store compares the new text with the one
// it knows is stored (`kept`, the snapshot it last read or wrote, when its
// version is the stored one) chunk by chunk. Without that knowledge (a fresh
// object, the old single-value form) it writes every chunk.
//
// Limits: a value is at most 128 KiB on key-value-backed objects (2 MiB on
// SQLite-backed ones), and one `put` or `delete` takes at most 128 keys. A
// chunk is CHUNK_CHARS = 32,768 UTF-16 code units: V8 serialises a string in
// at most 2 bytes per code unit (64 KiB), and even UTF-8 would take at most 3
// (96 KiB), so any chunk fits a 128 KiB value. The put holds at most
// MAX_CHUNKS = 125 chunks next to `version`, `chunks` and the log row, so a
// snapshot may have up to 4,096,000 characters (4,000 KiB); a longer one makes
// `commit` throw a `StoreLimitError` (code `snapshot_too_large`, HTTP 507)
// before anything is written. Keep snapshots under it with the machine's
// `retention.maxEntries` or `limits.maxSnapshotBytes`. A chunk missing or cut
// short makes `load` throw a `StoreCorruptError` (code `snapshot_corrupt`,
// HTTP 500) naming the process, the revision and the chunk.
//
// The store keeps the snapshot it last read or wrote, with its version. Keep one
// store for the object's lifetime: `load` then reads only the version, and when
// it is unchanged returns that very string, which the engine recognises and
// reduces from its decoded copy instead of decoding the text again.

import { StoreCorruptError, StoreLimitError } from "./limit.js";
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
const chunkOf = (text, i) => text.slice(i * CHUNK_CHARS, (i + 1) * CHUNK_CHARS);

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
    /**
     * The snapshot last read or written, its version, and whether it is stored in chunks.
     * @type {{ snapshot: string, version: number, chunked: boolean } | null}
     */
    this.kept = null;
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
    if (this.kept) {
      const version = await this.storage.get("version");
      if (version === this.kept.version) return { snapshot: this.kept.snapshot, version };
    }
    this.kept = null;
    const got = await this.storage.get(["version", "chunks", "snapshot"]);
    const version = got.get("version");
    const count = got.get("chunks");
    if (count === undefined) {
      const snapshot = got.get("snapshot");
      if (snapshot === undefined) return null;
      this.kept = { snapshot, version, chunked: false };
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
    this.kept = { snapshot, version, chunked: true };
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
    const known = this.kept?.chunked && this.kept.version === current ? this.kept.snapshot : null;
    const storedCount = got.get("chunks") ?? 0;
    const version = outcome.revision;
    const entries = { version, chunks: count };
    let written = 0;
    for (let i = 0; i < count; i++) {
      const part = chunkOf(snapshot, i);
      if (known !== null && i < storedCount && chunkOf(known, i) === part) continue;
      entries[chunkKey(i)] = part;
      written++;
    }
    if (extras.event) {
      entries[`log:${pad(version)}`] = {
        eventId: extras.event.id,
        revision: version,
        type: extras.event.type,
        status: outcome.status,
        response: outcome.response ?? null,
        receivedAt: extras.now ?? null,
      };
    }
    const gone = [];
    for (let i = count; i < storedCount; i++) gone.push(chunkKey(i));
    // The single-value form of earlier releases: there is one exactly when a version has no chunk count.
    if (current !== null && got.get("chunks") === undefined) gone.push("snapshot");
    this.kept = null;
    // No `await` between the two writes: Durable Object storage submits them atomically.
    const writes = [this.storage.put(entries)];
    if (gone.length > 0) writes.push(this.storage.delete(gone));
    await Promise.all(writes);
    this.chunkWrites += written;
    this.chunksSkipped += count - written;
    this.kept = { snapshot, version, chunked: true };
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
