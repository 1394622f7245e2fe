// The errors the stores throw, beyond what their database throws:
// `StoreLimitError` when an outcome cannot fit in one of their atomic writes
// (Deno KV, Durable Object storage; its code maps to HTTP 507), and
// `StoreCorruptError` when the stored chunks of a snapshot do not make one
// (a chunk missing or cut short; its code maps to HTTP 500).

import { IdemError } from "../error.js";

/** A store's error: its stable `code`, and the details as its own properties. */
class StoreError extends IdemError {
  /**
   * @param {string} code
   * @param {string} message
   * @param {Record<string, unknown>} details
   */
  constructor(code, message, details) {
    super(code, message);
    Object.assign(this, details);
  }
}

/** Thrown by `commit` when an outcome cannot fit in the store's one atomic write. Nothing was written. */
export class StoreLimitError extends StoreError {
  /**
   * @param {string} message
   * @param {Record<string, unknown>} details
   */
  constructor(message, details = {}) {
    super("snapshot_too_large", message, details);
  }
}

/**
 * Thrown by `load` when the stored chunks of a process's snapshot do not make a snapshot (a chunk
 * missing, one cut short, their bytes not the count the process's record says). Nothing is returned,
 * so nothing is reduced from it or written over it.
 */
export class StoreCorruptError extends StoreError {
  /**
   * @param {string} message
   * @param {Record<string, unknown>} details
   */
  constructor(message, details = {}) {
    super("snapshot_corrupt", message, details);
  }
}
