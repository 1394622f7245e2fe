// The host loop every runtime shares: load -> reduce -> commit (only when the
// snapshot changed) -> return the outcome. It holds no business logic: every
// decision is in the engine; this file only moves bytes and retries a lost
// compare-and-set.
//
// A store is any object with two methods (see `Store` in index.d.ts):
//
//   load(processId)   -> { snapshot: string, version } | null
//   commit(processId, expectedVersion /* null to create */, outcome, extras)
//                     -> { ok: true, version } | { ok: false, conflict: true }
//
// `commit` must be a compare-and-set: it writes `outcome.snapshot` only if the
// stored version still equals `expectedVersion` (or, for `null`, only if the
// process does not exist yet), and it reports a conflict otherwise. Nothing
// else is asked of a store, which is why the same loop runs on D1, Workers KV,
// Durable Objects, Deno KV, IndexedDB and memory.

/** Default number of compare-and-set retries after the first try. */
export const DEFAULT_MAX_RETRIES = 16;

/**
 * Thrown by {@link apply} when every compare-and-set try lost to another
 * writer. Safe to retry with the same event id (HTTP maps it to 409).
 */
export class ContentionError extends Error {
  /**
   * @param {string} processId
   * @param {number} attempts
   */
  constructor(processId, attempts) {
    super(`process "${processId}" changed under ${attempts} consecutive attempts; retry with the same event id`);
    this.name = "IdemError";
    this.code = "contention";
    this.processId = processId;
    this.attempts = attempts;
  }
}

/**
 * The host's clock: a function returning ms, or a fixed number.
 * @param {(() => number) | number | undefined} now
 * @returns {number}
 */
export function readClock(now) {
  if (typeof now === "function") return now();
  if (typeof now === "number") return now;
  return Date.now();
}

/**
 * Full-jitter exponential backoff before retry `n` (1-based), in ms. Random
 * values are drawn here, inside a call, never at module load (workerd forbids
 * that), and the engine never sees them.
 * @param {number} n
 * @param {number} baseMs
 * @param {number} capMs
 */
export function jitteredBackoff(n, baseMs = 2, capMs = 200) {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(n, 16));
  return Math.random() * ceiling;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Apply one event to one process, exactly once in effect.
 *
 * load -> `machine.reduce(snapshot, event, now, processId)` -> if `changed`,
 * `store.commit(processId, version, outcome, { event, now })`; on a conflict,
 * reload and reduce again (bounded, with jittered backoff): a concurrent copy
 * of the same event is then found in the ledger and comes back as a
 * `duplicate`. A duplicate, conflict, ignored or rejected event costs one
 * read and no write.
 *
 * ```js
 * const out = await apply(store, machine, "order-42", { id: key, type: "PAY", payload });
 * out.status;   // "applied" | "duplicate" | "conflict" | "ignored" | "rejected"
 * out.version;  // the store's version after this call (null if the process does not exist)
 * ```
 *
 * @param {import("./index.d.ts").Store} store
 * @param {import("./index.d.ts").MachineLike} machine
 * @param {string} processId
 * @param {import("./index.d.ts").Event} event
 * @param {import("./index.d.ts").ApplyOptions} [options]
 * @returns {Promise<import("./index.d.ts").AppliedOutcome>}
 * @throws {ContentionError} when every try lost the compare-and-set
 */
export async function apply(store, machine, processId, event, options = {}) {
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  const backoff = options.backoff ?? jitteredBackoff;
  for (let attempt = 0; ; attempt++) {
    const loaded = await store.load(processId);
    const now = readClock(options.now);
    const out = machine.reduce(loaded ? loaded.snapshot : null, event, now, processId);
    if (!out.changed) {
      out.version = loaded ? loaded.version : null;
      out.attempts = attempt + 1;
      return out;
    }
    const expected = loaded ? loaded.version : null;
    const res = await store.commit(processId, expected, out, { event, now });
    if (res.ok) {
      out.version = res.version;
      out.attempts = attempt + 1;
      return out;
    }
    options.onConflict?.({ processId, event, attempt: attempt + 1 });
    if (attempt >= maxRetries) throw new ContentionError(processId, attempt + 1);
    await sleep(backoff(attempt + 1));
  }
}

/**
 * Read a process as a plain object (`machine.inspect`) plus its store version,
 * or `null` when it does not exist.
 * @param {import("./index.d.ts").Store} store
 * @param {import("./index.d.ts").MachineLike} machine
 * @param {string} processId
 */
export async function inspect(store, machine, processId) {
  const loaded = await store.load(processId);
  if (!loaded) return null;
  return { ...machine.inspect(loaded.snapshot), version: loaded.version };
}
