// Types for `idem/stores/memory` (stores/memory.js): a store in memory, for tests and single-process tools.
export { MemoryStore } from "../index.js";
import type { MemoryStore } from "../index.js";

/** `new MemoryStore()`. */
export declare function memoryStore(): MemoryStore;
