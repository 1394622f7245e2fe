// Cloudflare Workers KV store: one key per process holding the snapshot text (ledger
// included, so the applied mark and the new state are one value), its revision in the key's
// metadata. Version = revision.
//
// SAFE ONLY WITH ONE WRITER PER PROCESS: Workers KV has no compare-and-set and is eventually
// consistent, so `commit`'s version check is a read then a write, and two writers that read
// the same version both "succeed" (a lost update; tests/workerd/kv-race.test.mjs shows it).
// Put one writer in front of each process: a Durable Object per process with
// `singleWriter: true` (the check then runs in the object's memory, where it is atomic, as
// examples/cloudflare does), or a queue consumer that takes a process's messages one at a time.

import { commitArgs, isBoolean, optionalField, optionsArg, processIdArg, versionArg, withMethods } from "../checks.js";

const PREFIX = "process:";

/**
 * @implements {import("../index.d.ts").Store}
 */
export class KVStore {
  /**
   * @param {KVNamespace} kv the binding (`env.KV`)
   * @param {{ singleWriter?: boolean, prefix?: string }} [options]
   *   `singleWriter: true` when this instance is the only writer of its
   *   processes (one Durable Object per process): versions are then checked
   *   and reserved in memory, atomically, and loads see this writer's own
   *   latest commit even where KV has not caught up yet.
   */
  constructor(kv, options = {}) {
    this.kv = withMethods(kv, "kv", ["getWithMetadata", "put"], "a Workers KV binding (env.KV)");
    const o = optionsArg(options);
    this.prefix = optionalField(o, "prefix", (v) => typeof v === "string", "a string") ?? PREFIX;
    this.singleWriter = optionalField(o, "singleWriter", isBoolean, "true or false") ?? false;
    /** @type {Map<string, { snapshot: string, version: number } | "writing">} single-writer cache */
    this.cache = new Map();
  }

  key(processId) {
    return this.prefix + processId;
  }

  async read(processId) {
    const { value, metadata } = await this.kv.getWithMetadata(this.key(processId), { type: "text" });
    return value === null ? null : { snapshot: value, version: metadata?.version ?? 0 };
  }

  /** @param {string} processId */
  async load(processId) {
    processIdArg(processId);
    if (this.singleWriter) {
      const hit = this.cache.get(processId);
      if (hit && hit !== "writing") return { ...hit };
      const row = await this.read(processId);
      if (row && !this.cache.has(processId)) this.cache.set(processId, row);
      return row;
    }
    return this.read(processId);
  }

  /**
   * @param {string} processId
   * @param {number | null} expectedVersion
   * @param {import("../index.d.ts").Outcome} outcome
   */
  async commit(processId, expectedVersion, outcome) {
    processIdArg(processId);
    versionArg(expectedVersion);
    commitArgs(outcome, undefined);
    const version = outcome.revision;
    if (this.singleWriter) {
      // Check and reserve synchronously: nothing can interleave between them.
      const hit = this.cache.get(processId);
      const current = hit === undefined ? undefined : hit === "writing" ? "writing" : hit.version;
      if (current === "writing") return { ok: false, conflict: true };
      if (current !== undefined && current !== expectedVersion) return { ok: false, conflict: true };
      this.cache.set(processId, "writing");
      try {
        if (current === undefined) {
          // First write seen by this instance: compare with what KV has.
          const row = await this.read(processId);
          if ((row ? row.version : null) !== expectedVersion) {
            if (row) this.cache.set(processId, row);
            else this.cache.delete(processId);
            return { ok: false, conflict: true };
          }
        }
        await this.kv.put(this.key(processId), outcome.snapshot, { metadata: { version } });
        this.cache.set(processId, { snapshot: outcome.snapshot, version });
        return { ok: true, version };
      } catch (err) {
        this.cache.delete(processId);
        throw err;
      }
    }
    // Several writers: a read-then-write check. NOT atomic (see the top of this file).
    const row = await this.read(processId);
    if ((row ? row.version : null) !== expectedVersion) return { ok: false, conflict: true };
    await this.kv.put(this.key(processId), outcome.snapshot, { metadata: { version } });
    return { ok: true, version };
  }
}
