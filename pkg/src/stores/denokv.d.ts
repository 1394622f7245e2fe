// Types for stores/denokv.js (Deno KV: the store and the queue glue). The Deno
// KV handle is typed structurally (the methods used here), so these declarations
// need no Deno type library; a `Deno.Kv` satisfies `DenoKvLike`.
import type { CommitExtras, CommitResult, DispatchOptions, DispatchReport, EventLogRow, MachineLike, Outcome, Retention, Store } from "../index.d.ts";

// As Deno's own `KvKeyPart` (which lists `symbol` too): the entries a `Deno.Kv` returns carry
// keys of that type, so a narrower one here would make a `Deno.Kv` no `DenoKvLike`.
type KvKeyPart = string | number | bigint | boolean | Uint8Array | symbol;
type KvKey = readonly KvKeyPart[];
interface KvEntry<T> {
  key: KvKey;
  value: T | null;
  versionstamp: string | null;
}
interface KvAtomic {
  check(...checks: { key: KvKey; versionstamp: string | null }[]): KvAtomic;
  set(key: KvKey, value: unknown, options?: { expireIn?: number }): KvAtomic;
  delete(key: KvKey): KvAtomic;
  enqueue(value: unknown, options?: { delay?: number; keysIfUndelivered?: KvKey[]; backoffSchedule?: number[] }): KvAtomic;
  commit(): Promise<{ ok: true; versionstamp: string } | { ok: false }>;
}

/** The part of `Deno.Kv` this module uses. */
export interface DenoKvLike {
  get<T = unknown>(key: KvKey, options?: { consistency?: "strong" | "eventual" }): Promise<KvEntry<T>>;
  list<T = unknown>(
    selector: { prefix: KvKey; start?: KvKey; end?: KvKey },
    options?: { limit?: number; batchSize?: number; consistency?: "strong" | "eventual" },
  ): AsyncIterable<KvEntry<T>>;
  atomic(): KvAtomic;
  enqueue(value: unknown, options?: { delay?: number }): Promise<{ ok: true; versionstamp: string }>;
  listenQueue(handler: (value: unknown) => Promise<void> | void): Promise<void>;
}

/** Deno KV's limits for one atomic operation (the defaults of Deno's KV config). */
export declare const DENO_KV_LIMITS: Readonly<{
  maxValueBytes: 65536;
  maxKeyBytes: 2048;
  maxChecks: 100;
  maxMutations: 1000;
  maxTotalMutationBytes: 819200;
  maxTotalKeyBytes: 81920;
  maxQueueDelayMs: number;
}>;
/** Bytes per snapshot chunk (one Deno KV value). */
export declare const CHUNK_BYTES: 16384;

export { StoreCorruptError, StoreLimitError } from "./limit.js";

/** Encoded size of a Deno KV key, as Deno KV counts it. */
export declare function keyBytes(key: KvKey): number;
/**
 * A snapshot cut into chunks of `CHUNK_BYTES` bytes, as `commit` stores them. `stored`: the
 * characters the stored chunks hold (one byte each), or null; a chunk equal to its stored one is
 * `same` and not encoded (`value` undefined).
 */
export declare function cutChunks(
  text: string,
  stored: string | null,
): { chunks: number; bytes: number; ascii: boolean; parts: Array<{ value: Uint8Array | undefined; size: number; same: boolean }> };
/** Whether an error is a busy local (SQLite) database: the operation did not happen and may be tried again. */
export declare function isBusy(err: unknown): boolean;
/** Whether a queue message is a dispatch message of this module. */
export declare function isDispatchMessage(msg: unknown): msg is DispatchMessage;

export interface DispatchMessage {
  idem: "dispatch";
  processId: string;
  /** When the work is due (ms). */
  at: number;
}

export interface DenoKvStoreOptions {
  /** First key part of every key (default "idem"). */
  prefix?: string;
  /** Whose `retention()` sets the side records' `expireIn`. */
  machine?: { retention(): Retention };
  machineFor?: (processId: string) => { retention(): Retention };
  /** Enqueue a dispatch message for `outcome.nextDueAt` in the commit's atomic operation. */
  queue?: boolean;
}

/**
 * Deno KV store: the head's versionstamp is the version; a commit is one
 * atomic operation (check + head + chunks + side records [+ message]);
 * snapshots are split into 16 KiB values. A commit sets only the chunks whose
 * bytes changed when the store kept the snapshot of the expected version (the
 * one it last loaded or committed) and both are ASCII; otherwise every chunk.
 * Its limits check counts every chunk as set either way.
 */
export declare class DenoKvStore implements Store {
  constructor(kv: DenoKvLike, options?: DenoKvStoreOptions);
  /** Largest snapshot (bytes) that fits one commit whatever the event (722 764). */
  static maxSnapshotBytes: number;
  readonly kv: DenoKvLike;
  readonly prefix: string;
  readonly queue: boolean;
  /** Operations tried again because the local database was busy. */
  busyRetries: number;
  /** Snapshot chunks set by the commits that landed. */
  chunkWrites: number;
  /** Snapshot chunks those commits left alone: their stored bytes were the new snapshot's. */
  chunksSkipped: number;
  /** Bytes of the snapshot chunks set by the commits that landed (not the head or the side records). */
  chunkBytesWritten: number;
  load(processId: string): Promise<{ snapshot: string; version: string } | null>;
  commit(processId: string, expectedVersion: string | null, outcome: Outcome, extras?: CommitExtras): Promise<CommitResult>;
  /** Several changed outcomes in one atomic commit (see `Store.commitMany`): `apply` uses it for the calls waiting in a lane. */
  commitMany(processId: string, expectedVersion: string | null, steps: Array<{ outcome: Outcome; extras?: CommitExtras }>): Promise<CommitResult>;
  /** The event log, oldest first (rows expire after their type's retention window). */
  events(processId: string, options?: { after?: number; limit?: number }): Promise<EventLogRow[]>;
  /** The first outcome of an event id while its retention window lasts, or null. */
  eventRecord(processId: string, eventId: string): Promise<EventLogRow | null>;
}

export interface DenoKvQueueConfig {
  store: Store;
  machineFor: (processId: string) => MachineLike;
  options?: (processId: string) => DispatchOptions;
  now?: () => number;
  onReport?: (processId: string, report: DispatchReport) => void;
}

/** Runs the outbox dispatcher for dispatch messages delivered by Deno KV's queue (at least once). */
export declare class DenoKvQueue {
  constructor(kv: DenoKvLike, config: DenoKvQueueConfig);
  /** Messages handled by this instance. */
  delivered: number;
  /** Enqueue a dispatch of `processId` at `at` (default now). */
  kick(processId: string, at?: number): Promise<void>;
  /** Handle one message: false when it is not a dispatch message, true once dispatched. */
  handle(msg: unknown): Promise<boolean>;
  /** `kv.listenQueue` with this handler. */
  listen(): Promise<void>;
}
