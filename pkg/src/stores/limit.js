// The error a store throws when an outcome cannot fit in one of its atomic
// writes (Deno KV, Durable Object storage). Its code maps to HTTP 507.

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
