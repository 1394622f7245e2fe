// Types for stores/indexeddb.js (the browser's store).
import type { CommitExtras, CommitResult, EventLogRow, Outcome, Store } from "../index.d.ts";

/** Open (or create) the IndexedDB database `name` (default "idem") and return a store on it. */
export declare function openIndexedDBStore(options?: { name?: string; indexedDB?: IDBFactory }): Promise<IndexedDBStore>;

/**
 * One readwrite transaction per commit; the version compare-and-set happens inside it. Versions are 1, 2, 3, ...
 * `load` hands back the snapshot this store last read or wrote, without reading it, while no other store
 * (another tab) has written the process since.
 */
export declare class IndexedDBStore implements Store {
  readonly name: string;
  load(processId: string): Promise<{ snapshot: string; version: number } | null>;
  commit(processId: string, expectedVersion: number | null, outcome: Outcome | string, extras?: CommitExtras): Promise<CommitResult>;
  events(processId: string, options?: { after?: number; limit?: number }): Promise<EventLogRow[]>;
  /** Ids of the stored processes. */
  list(): Promise<string[]>;
  /** Remove every process and log row (one transaction). */
  clear(): Promise<void>;
  close(): void;
}
