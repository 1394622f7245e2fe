// In-memory store: the reference implementation of the store contract, for
// tests and for single-process tools. Versions are revisions (1, 2, 3, ...).
// It also keeps the event log the HTTP API serves (`events`).

import { GroupCommitStore, eventLogRow } from "./common.js";
import { eventsOptionsArg, processIdArg } from "../checks.js";

/**
 * @implements {import("../index.d.ts").Store}
 */
export class MemoryStore extends GroupCommitStore {
  constructor() {
    super();
    /** @type {Map<string, { snapshot: string, version: number }>} */
    this.rows = new Map();
    /** @type {Map<string, import("../index.d.ts").EventLogRow[]>} */
    this.log = new Map();
    /** Number of successful commits (tests use it to show that duplicates cost no write). */
    this.writes = 0;
    /** Number of commits refused because the version moved. */
    this.conflicts = 0;
  }

  /** @param {string} processId */
  async load(processId) {
    processIdArg(processId);
    const row = this.rows.get(processId);
    return row ? { snapshot: row.snapshot, version: row.version } : null;
  }

  /**
   * Several changed outcomes of one process in one compare-and-set (`apply` groups the calls
   * waiting in a lane): the last one's snapshot is stored, and each gets its log row. The version
   * moves by one per outcome, as if they had been committed one by one; `writes` counts one.
   * @param {string} processId
   * @param {number | null} expectedVersion
   * @param {{ outcome: import("../index.d.ts").Outcome, extras?: import("../index.d.ts").CommitExtras }[]} steps
   * @returns {Promise<import("../index.d.ts").CommitResult>}
   */
  async commitSteps(processId, expectedVersion, steps) {
    const row = this.rows.get(processId);
    const current = row ? row.version : null;
    if (current !== expectedVersion) {
      this.conflicts++;
      return { ok: false, conflict: true };
    }
    const version = (current ?? 0) + steps.length;
    this.rows.set(processId, { snapshot: steps[steps.length - 1].outcome.snapshot, version });
    const now = Date.now();
    for (const step of steps) this.logRow(processId, eventLogRow(step, now));
    this.writes++;
    return { ok: true, version };
  }

  /**
   * @param {string} processId
   * @param {import("../index.d.ts").EventLogRow | null} row
   */
  logRow(processId, row) {
    if (row === null) return;
    const rows = this.log.get(processId) ?? [];
    rows.push(row);
    this.log.set(processId, rows);
  }

  /**
   * The event log of a process, oldest first.
   * @param {string} processId
   * @param {{ after?: number, limit?: number }} [options] revisions after `after`, at most `limit`
   */
  async events(processId, options = {}) {
    processIdArg(processId);
    eventsOptionsArg(options);
    const after = options.after ?? 0;
    const limit = options.limit ?? 100;
    return (this.log.get(processId) ?? []).filter((r) => r.revision > after).slice(0, limit);
  }
}

/** @returns {MemoryStore} */
export function memoryStore() {
  return new MemoryStore();
}
