// Types for `idem/stores/durable` (stores/durable.js): a Durable Object's storage, one object per process.
export { DurableObjectStore } from "../index.js";
export type { DurableObjectStorageLike } from "../index.js";
export { StoreCorruptError, StoreLimitError } from "./limit.js";

/** Characters per snapshot chunk. */
export declare const CHUNK_CHARS: 32768;
/** Chunks one snapshot may take (4,096,000 characters): more makes `commit` throw a `StoreLimitError`. */
export declare const MAX_CHUNKS: 125;
