// Types for stores/limit.js: the errors the stores throw beyond their database's own. Not a
// subpath of its own: stores/d1, stores/durable and stores/denokv export them.

import { IdemError } from "../index.js";

/** Thrown by `commit` when an outcome cannot fit in the store's one atomic write. Nothing was written. HTTP 507. */
export declare class StoreLimitError extends IdemError {
  constructor(message?: string, details?: Record<string, unknown>);
  readonly code: "snapshot_too_large";
  readonly processId?: string;
  /** The snapshot's (or a record's) size in bytes (Deno KV). */
  readonly bytes?: number;
  /** The snapshot's size in characters (a Durable Object). */
  readonly characters?: number;
  readonly chunks?: number;
  /** What the atomic operation would have weighed, as Deno KV counts it. */
  readonly commitBytes?: number;
  readonly limit?: number;
  /** The database's own error, when it refused the write. */
  readonly cause?: unknown;
}

/** Thrown by `load` when the stored chunks of a snapshot do not make one (a chunk missing or cut short). HTTP 500. */
export declare class StoreCorruptError extends IdemError {
  constructor(message?: string, details?: Record<string, unknown>);
  readonly code: "snapshot_corrupt";
  readonly processId?: string;
  /** The stored version (a revision, a versionstamp). */
  readonly version?: number | string;
  /** Chunks the process's head or row names. */
  readonly chunks?: number;
  /** The snapshot's size, as the head records it. */
  readonly bytes?: number;
  /** The chunk that is missing or cut short (a Durable Object). */
  readonly chunk?: string;
  /** Chunks found, when one is missing. */
  readonly found?: number;
  /** Bytes the chunks hold, when they are not the head's count. */
  readonly bytesFound?: number;
}
