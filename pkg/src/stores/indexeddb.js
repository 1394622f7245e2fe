// IndexedDB store for the browser. One readwrite transaction per commit: IndexedDB serialises
// readwrite transactions whose scopes overlap, so the compare-and-set on the version, read and
// written inside it, is exact across tabs. The event-log row is written in the same
// transaction, keyed by [processId, version]. Each row carries a random stamp: `load` asks the
// HEAD index whether the row still has the kept version and stamp and, if so, returns the kept
// string without reading the snapshot.
//
//   const store = await openIndexedDBStore({ name: "idem" });
//   const row = await store.load("order-42");            // null the first time
//   const out = machine.reduce(row?.snapshot ?? null, event, Date.now(), "order-42");
//   if (out.changed) await store.commit("order-42", row?.version ?? null, out, { event });

import { KeptSnapshots, eventLogRow } from "./common.js";
import { IdemError } from "../error.js";
import { eventsOptionsArg, optionalField, optionsArg, processIdArg } from "../checks.js";

const PROCESSES = "processes";
const LOG = "log";
// Schema 2 adds the index HEAD: a process's row by [id, version, stamp], so `load` can ask
// whether the row is still the one it kept, and `commit` can read the stored version, without
// reading the snapshot. Rows written by schema 1 have no stamp, are not in the index, and are
// read whole until rewritten.
const DB_VERSION = 2;
const HEAD = "head";

/** A new stamp for a written row: which write it was, even across a `clear()` that restarts versions. */
function stamp() {
  const bytes = new Uint8Array(12);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Open (or create) the database and return a store bound to it. */
export async function openIndexedDBStore(options = {}) {
  optionalField(optionsArg(options), "name", (v) => typeof v === "string", "a string");
  const { name = "idem", indexedDB: idb = globalThis.indexedDB } = options;
  if (!idb) throw new IdemError("store_unavailable", "IndexedDB is not available in this runtime");
  const db = await request(
    (() => {
      const req = idb.open(name, DB_VERSION);
      req.onupgradeneeded = () => {
        const db = req.result;
        const processes = db.objectStoreNames.contains(PROCESSES)
          ? /** @type {IDBTransaction} */ (req.transaction).objectStore(PROCESSES)
          : db.createObjectStore(PROCESSES, { keyPath: "id" });
        if (!processes.indexNames.contains(HEAD)) processes.createIndex(HEAD, ["id", "version", "stamp"]);
        if (!db.objectStoreNames.contains(LOG)) db.createObjectStore(LOG, { keyPath: ["processId", "version"] });
      };
      return req;
    })(),
  );
  // Another tab upgrading the schema asks us to let go.
  db.onversionchange = () => db.close();
  return new IndexedDBStore(db, name, idb);
}

export class IndexedDBStore {
  constructor(db, name, idb) {
    this.db = db;
    this.name = name;
    this.idb = idb;
    /** The rows this store last read or wrote: `version` is `[version, stamp]`. */
    this.kept = new KeptSnapshots();
  }

  /**
   * The stored snapshot and its version, or null when the process does not exist. While the
   * row is the one this store last read or wrote (same version and stamp: no other tab or
   * store wrote since), the kept string itself, without reading the snapshot: the engine then
   * reduces from the decoded copy it keeps.
   */
  async load(processId) {
    processIdArg(processId);
    const kept = this.kept.get(processId);
    if (kept) {
      const [version, keptStamp] = /** @type {[number, string]} */ (kept.version);
      const tx = this.db.transaction(PROCESSES, "readonly");
      const same = await request(tx.objectStore(PROCESSES).index(HEAD).count([processId, version, keptStamp]));
      if (same === 1) return { snapshot: kept.snapshot, version };
    }
    const tx = this.db.transaction(PROCESSES, "readonly");
    const row = await request(tx.objectStore(PROCESSES).get(processId));
    if (!row) {
      this.kept.delete(processId);
      return null;
    }
    if (typeof row.stamp === "string") this.kept.set(processId, [row.version, row.stamp], row.snapshot);
    else this.kept.delete(processId);
    return { snapshot: row.snapshot, version: row.version };
  }

  /**
   * Write `outcome.snapshot` if the stored version is still `expectedVersion`
   * (null: the process must not exist). One readwrite transaction.
   */
  commit(processId, expectedVersion, outcome, extras = {}) {
    try {
      processIdArg(processId);
    } catch (err) {
      return Promise.reject(err);
    }
    const snapshot = typeof outcome === "string" ? outcome : outcome?.snapshot;
    if (typeof snapshot !== "string") {
      return Promise.reject(new IdemError("store_bad_input", "commit needs an outcome with a snapshot string"));
    }
    return new Promise((resolve, reject) => {
      const tx = this.db.transaction([PROCESSES, LOG], "readwrite");
      const processes = tx.objectStore(PROCESSES);
      let result = null;
      /** @type {string | null} the new row's stamp */
      let written = null;
      /** @param {number | null} have the stored version (null: no such process) */
      const decide = (have) => {
        if (have !== (expectedVersion ?? null)) {
          result = { ok: false, conflict: true };
          return; // nothing written: the transaction commits empty
        }
        const version = (have ?? 0) + 1;
        written = stamp();
        processes.put({
          id: processId,
          snapshot,
          version,
          stamp: written,
          state: outcome?.state ?? null,
          revision: outcome?.revision ?? null,
          updatedAt: Date.now(),
        });
        // A bare snapshot string has no revision or status to log.
        const row = typeof outcome === "string" ? null : eventLogRow({ outcome, extras });
        if (row !== null) tx.objectStore(LOG).put({ processId, version, ...row });
        result = { ok: true, version };
      };
      // The stored version without reading the snapshot: the row's key in the index. A row
      // the first schema wrote (no stamp) is not in the index, so then the row is read whole.
      const head = processes.index(HEAD).openKeyCursor(IDBKeyRange.bound([processId], [processId, []]));
      head.onsuccess = () => {
        if (head.result) return decide(/** @type {[string, number, string]} */ (head.result.key)[1]);
        const whole = processes.get(processId);
        whole.onsuccess = () => decide(whole.result ? whole.result.version : null);
      };
      tx.oncomplete = () => {
        if (result?.ok) this.kept.set(processId, [result.version, written], snapshot);
        else this.kept.delete(processId);
        resolve(result);
      };
      tx.onerror = () => {
        this.kept.delete(processId);
        reject(tx.error ?? new Error("transaction failed"));
      };
      tx.onabort = () => {
        this.kept.delete(processId);
        reject(tx.error ?? new Error("transaction aborted"));
      };
    });
  }

  /** Ids of the stored processes. */
  async list() {
    const tx = this.db.transaction(PROCESSES, "readonly");
    return (await request(tx.objectStore(PROCESSES).getAllKeys())).map(String);
  }

  /**
   * The events committed for a process, oldest first:
   * [{ eventId, revision, type, status, response, receivedAt }] (as the in-memory store).
   * `after`: only rows whose revision is greater; `limit`: at most this many.
   */
  async events(processId, options = {}) {
    processIdArg(processId);
    const { after = 0, limit = 100 } = eventsOptionsArg(options);
    const tx = this.db.transaction(LOG, "readonly");
    const range = IDBKeyRange.bound([processId, 0], [processId, Infinity]);
    const rows = await request(tx.objectStore(LOG).getAll(range));
    return rows
      .filter((r) => (r.revision ?? 0) > after)
      .slice(0, limit)
      .map(({ eventId, revision, type, status, response, receivedAt }) => ({ eventId, revision, type, status, response, receivedAt }));
  }

  /** Remove every process and log entry (one transaction). */
  clear() {
    this.kept = new KeptSnapshots();
    return new Promise((resolve, reject) => {
      const tx = this.db.transaction([PROCESSES, LOG], "readwrite");
      tx.objectStore(PROCESSES).clear();
      tx.objectStore(LOG).clear();
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error ?? new Error("transaction aborted"));
    });
  }

  close() {
    this.db.close();
  }
}

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}
