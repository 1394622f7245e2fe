// Cloudflare D1 store. Schema: examples/cloudflare/migrations/0001_init.sql.
//
// One row per process (`processes`) with a revision, and an event log
// (`events`) with UNIQUE(process_id, event_id) and UNIQUE(process_id, revision).
// A commit is ONE `db.batch([...])`, which D1 runs as a transaction: if any
// statement fails, none of them takes effect.
//
//   create: INSERT the process row (fails if it exists: PRIMARY KEY)
//   update: UPDATE ... WHERE process_id = ? AND revision = <expected>
//   both:   INSERT the event-log row, whose `revision` is read back from the
//           process row *as this batch left it*:
//             (SELECT revision FROM processes
//               WHERE process_id = ? AND revision = <new> AND last_event_id = <event id>)
//
// A conditional UPDATE that matches no row is not an error in SQLite (it
// changes 0 rows and the batch would commit), so the log insert is what turns
// a lost race into a failure: when the UPDATE did not happen, the subquery
// finds no row, the revision is NULL, NOT NULL fails and the batch rolls back.
// If another writer got the same new revision first, the insert also hits
// UNIQUE(process_id, revision); a second copy of an applied event hits
// UNIQUE(process_id, event_id). Any constraint failure is reported as
// `{ ok: false, conflict: true }` and the host loop reloads and reduces again.
//
// Version = revision.
//
// The store keeps the snapshots it last read or wrote (16 processes, 8 MiB):
// `load` asks for the snapshot only when the row's revision is not the kept
// one, in the same query, and otherwise returns the kept string itself, which
// the engine reduces from its decoded copy. Keep one store per isolate.

import { KeptSnapshots } from "./kept.js";

const CONSTRAINT = /constraint/i;

/**
 * @implements {import("../index.d.ts").Store}
 */
export class D1Store {
  /**
   * @param {D1Database} db the binding (`env.DB`)
   */
  constructor(db) {
    this.db = db;
    this.kept = new KeptSnapshots();
  }

  /** @param {string} processId */
  async load(processId) {
    const kept = this.kept.get(processId);
    const row = await this.db
      .prepare("SELECT revision, CASE WHEN revision = ?2 THEN NULL ELSE snapshot END AS snapshot FROM processes WHERE process_id = ?1")
      .bind(processId, kept ? kept.version : -1)
      .first();
    if (!row) {
      this.kept.delete(processId);
      return null;
    }
    if (row.snapshot === null && kept && kept.version === row.revision) return { snapshot: kept.snapshot, version: row.revision };
    this.kept.set(processId, row.revision, row.snapshot);
    return { snapshot: row.snapshot, version: row.revision };
  }

  /**
   * @param {string} processId
   * @param {number | null} expectedVersion
   * @param {import("../index.d.ts").Outcome} outcome
   * @param {import("../index.d.ts").CommitExtras} [extras]
   */
  async commit(processId, expectedVersion, outcome, extras = {}) {
    const now = extras.now ?? Date.now();
    const event = extras.event ?? { id: `revision-${outcome.revision}`, type: "unknown" };
    const revision = outcome.revision;
    const nextDue = outcome.nextDueAt ?? null;
    const write =
      expectedVersion === null
        ? this.db
            .prepare(
              "INSERT INTO processes (process_id, revision, snapshot, updated_at, next_due_at, last_event_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .bind(processId, revision, outcome.snapshot, now, nextDue, event.id)
        : this.db
            .prepare(
              "UPDATE processes SET revision = ?2, snapshot = ?3, updated_at = ?4, next_due_at = ?5, last_event_id = ?6 WHERE process_id = ?1 AND revision = ?7",
            )
            .bind(processId, revision, outcome.snapshot, now, nextDue, event.id, expectedVersion);
    const log = this.db
      .prepare(
        `INSERT INTO events (process_id, event_id, revision, type, status, response, received_at)
         VALUES (?1, ?2,
                 (SELECT revision FROM processes WHERE process_id = ?1 AND revision = ?3 AND last_event_id = ?2),
                 ?4, ?5, ?6, ?7)`,
      )
      .bind(processId, event.id, revision, event.type, outcome.status, JSON.stringify(outcome.response ?? null), now);
    try {
      await this.db.batch([write, log]);
    } catch (err) {
      this.kept.delete(processId);
      if (CONSTRAINT.test(String(err?.message ?? err)) || CONSTRAINT.test(String(err?.cause?.message ?? ""))) {
        return { ok: false, conflict: true };
      }
      throw err;
    }
    this.kept.set(processId, revision, outcome.snapshot);
    return { ok: true, version: revision };
  }

  /**
   * The event log, oldest first.
   * @param {string} processId
   * @param {{ after?: number, limit?: number }} [options]
   */
  async events(processId, options = {}) {
    const { results } = await this.db
      .prepare(
        "SELECT event_id, revision, type, status, response, received_at FROM events WHERE process_id = ?1 AND revision > ?2 ORDER BY revision LIMIT ?3",
      )
      .bind(processId, options.after ?? 0, options.limit ?? 100)
      .all();
    return results.map((r) => ({
      eventId: r.event_id,
      revision: r.revision,
      type: r.type,
      status: r.status,
      response: r.response === null ? null : JSON.parse(r.response),
      receivedAt: r.received_at,
    }));
  }

  /**
   * Processes with work due at `now` (for a scheduled dispatcher), oldest due first.
   * @param {number} now
   * @param {number} [limit]
   * @returns {Promise<string[]>}
   */
  async due(now, limit = 100) {
    const { results } = await this.db
      .prepare("SELECT process_id FROM processes WHERE next_due_at IS NOT NULL AND next_due_at <= ?1 ORDER BY next_due_at LIMIT ?2")
      .bind(now, limit)
      .all();
    return results.map((r) => r.process_id);
  }
}
