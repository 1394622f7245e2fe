// Types for `idem/stores/kv` (stores/kv.js): Workers KV, with one writer per process.
export { KVStore } from "../index.js";
export type { KVNamespaceLike } from "../index.js";
