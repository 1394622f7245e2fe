// The errors the stores throw, beyond what their database throws:
// `StoreLimitError` when an outcome cannot fit in one of their atomic writes
// (Deno KV, Durable Object storage; its code maps to HTTP 507), and
// `StoreCorruptError` when the stored chunks of a snapshot do not make one
// (a chunk missing or cut short; its code maps to HTTP 500).

/** Thrown by `commit` when an outcome cannot fit in the store's one atomic write. Nothing was written. */
export class StoreLimitError extends Error {
  /**
   * @param {string} message
   * @param {Record<string, unknown>} details
   */
  constructor(message, details = {}) {
    super(message);
    this.name = "IdemError";
    this.code = "snapshot_too_large";
    Object.assign(this, details);
  }
}

/**
 * Thrown by `load` when the stored chunks of a process's snapshot do not make a snapshot (a chunk
 * missing, one cut short, their bytes not the count the process's record says). Nothing is returned,
 * so nothing is reduced from it or written over it.
 */
export class StoreCorruptError extends Error {
  /**
   * @param {string} message
   * @param {Record<string, unknown>} details
   */
  constructor(message, details = {}) {
    super(message);
    this.name = "IdemError";
    this.code = "snapshot_corrupt";
    Object.assign(this, details);
  }
}
