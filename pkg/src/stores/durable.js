// Cloudflare Durable Object store: the snapshot lives in the storage of the
// object that owns the process (one object per process id, so requests for a
// process are serialised by the platform). It also keeps the event log.
//
// `commit` reads the version and writes { snapshot, version, log row } with one
// multi-key `put`, which Durable Object storage applies atomically. While a
// storage operation is in flight the object's input gate holds back other
// events, and the check and the write run without yielding to other I/O, so
// the compare-and-set is exact. Version = revision.
//
// Limits: a value is at most 128 KiB on key-value-backed objects (2 MiB on
// SQLite-backed ones); the snapshot must fit (machine limits.maxSnapshotBytes).
//
// The store keeps the snapshot it last read or wrote, with its version. Keep one
// store for the object's lifetime: `load` then reads only the version, and when
// it is unchanged returns that very string, which the engine recognises and
// reduces from its decoded copy instead of decoding the text again.

const pad = (n) => String(n).padStart(12, "0");

/**
 * @implements {import("../index.d.ts").Store}
 */
export class DurableObjectStore {
  /**
   * @param {DurableObjectStorage} storage `ctx.storage` of the object
   * @param {string} [processId] the one process this object owns (checked on every call when given)
   */
  constructor(storage, processId) {
    this.storage = storage;
    this.processId = processId;
    /** @type {{ snapshot: string, version: number } | null} the snapshot last read or written */
    this.kept = null;
  }

  check(processId) {
    if (this.processId !== undefined && processId !== this.processId) {
      throw new Error(`this object owns process "${this.processId}", not "${processId}"`);
    }
  }

  /** @param {string} processId */
  async load(processId) {
    this.check(processId);
    if (this.kept) {
      const version = await this.storage.get("version");
      if (version === this.kept.version) return { snapshot: this.kept.snapshot, version };
    }
    const got = await this.storage.get(["snapshot", "version"]);
    const snapshot = got.get("snapshot");
    if (snapshot === undefined) return (this.kept = null);
    this.kept = { snapshot, version: got.get("version") };
    return { ...this.kept };
  }

  /**
   * @param {string} processId
   * @param {number | null} expectedVersion
   * @param {import("../index.d.ts").Outcome} outcome
   * @param {import("../index.d.ts").CommitExtras} [extras]
   */
  async commit(processId, expectedVersion, outcome, extras = {}) {
    this.check(processId);
    const current = (await this.storage.get("version")) ?? null;
    if (current !== expectedVersion) return { ok: false, conflict: true };
    const version = outcome.revision;
    const entries = { snapshot: outcome.snapshot, version };
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
    this.kept = null;
    await this.storage.put(entries);
    this.kept = { snapshot: outcome.snapshot, version };
    return { ok: true, version };
  }

  /**
   * The event log, oldest first.
   * @param {string} processId
   * @param {{ after?: number, limit?: number }} [options]
   */
  async events(processId, options = {}) {
    this.check(processId);
    const rows = await this.storage.list({
      start: `log:${pad((options.after ?? 0) + 1)}`,
      end: "log;",
      limit: options.limit ?? 100,
    });
    return [...rows.values()];
  }
}
