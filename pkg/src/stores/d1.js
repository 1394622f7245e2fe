// Cloudflare D1 store. Schema: pkg/d1/migrations/, shipped as idem/d1/migrations.
//
// A process is a row of `processes` (revision, the snapshot's tail, its chunk count) and the
// full chunks of CHUNK characters of its snapshot, rows of `snapshot_chunks`; each event is a
// row of `events`, UNIQUE by (process, event id) and by (process, revision). A commit is ONE
// `db.batch`, which D1 runs as a transaction:
//
//   the process row: INSERT (create) or UPDATE ... WHERE revision = <expected>
//   each step's log row, whose NOT NULL revision is read back only if the process row is as
//     this batch left it (revision and last event id): a lost race fails here and rolls back
//   the chunks that changed (`diffChunks`), and a DELETE of those beyond the new count
//
// A conditional UPDATE that matches nothing is no error in SQLite, so the log insert is what
// makes the batch a compare-and-set; a constraint failure is reported as a conflict. A commit
// with no event still writes a guard row (id `revision-<N>`, type `unknown`), which `events`
// leaves out. Version = revision. Why CHUNK: benches/RESULTS.md, "Store chunk sizes and limits".
//
// Keep one store per isolate: it keeps the snapshots it last read or wrote, `load` then reads
// the row alone while its revision is the kept one. Chunk rows that do not make the snapshot
// make `load` throw a `StoreCorruptError` (`snapshot_corrupt`, HTTP 500).

import { GroupCommitStore, KeptSnapshots, diffChunks, eventLogRow } from "./common.js";
import { eventsOptionsArg, invalidArgument, isCount, nowArg, processIdArg, withMethods } from "../checks.js";
import { StoreCorruptError } from "./limit.js";

export { StoreCorruptError };

/**
 * The log row of a commit that carries no event: the batch's guard needs one (see the header),
 * and `events` leaves it out.
 * @param {{ outcome: import("../index.d.ts").Outcome }} step
 * @param {number} now
 */
function guardRow({ outcome }, now) {
  return { eventId: `revision-${outcome.revision}`, revision: outcome.revision, type: "unknown", status: outcome.status, response: null, receivedAt: now };
}

const CONSTRAINT = /constraint/i;

/** Characters per chunk row. */
export const CHUNK = 16 * 1024;

/**
 * @implements {import("../index.d.ts").Store}
 */
export class D1Store extends GroupCommitStore {
  /**
   * @param {D1Database} db the binding (`env.DB`)
   */
  constructor(db) {
    super();
    this.db = withMethods(db, "db", ["prepare", "batch"], "a D1 binding (env.DB)");
    this.kept = new KeptSnapshots();
    /** Chunk rows written by commits. */
    this.chunkWrites = 0;
    /** Chunks left as they were by commits, because their text had not changed. */
    this.chunksSkipped = 0;
  }

  /** @param {string} processId */
  async load(processId) {
    processIdArg(processId);
    const kept = this.kept.get(processId);
    const { results: rows } = await this.db
      .prepare(
        `SELECT p.revision, p.chunks, CASE WHEN p.revision = ?2 THEN NULL ELSE p.snapshot END AS tail, c.idx, c.text
           FROM processes p
           LEFT JOIN snapshot_chunks c ON p.revision <> ?2 AND c.process_id = p.process_id AND c.idx < p.chunks
          WHERE p.process_id = ?1
          ORDER BY c.idx`,
      )
      .bind(processId, kept ? kept.version : -1)
      .all();
    if (rows.length === 0) {
      this.kept.delete(processId);
      return null;
    }
    const { revision, chunks, tail } = rows[0];
    if (tail === null && kept && kept.version === revision) return { snapshot: kept.snapshot, version: revision };
    const parts = rows.filter((r) => r.idx !== null);
    if (parts.length !== chunks || parts.some((r, i) => r.idx !== i)) {
      this.kept.delete(processId);
      throw new StoreCorruptError(`process "${processId}": ${parts.length} of ${chunks} snapshot chunks found at revision ${revision}`, {
        processId,
        version: revision,
        chunks,
        found: parts.length,
      });
    }
    const snapshot = parts.map((r) => r.text).join("") + tail;
    // Cut as this store cuts it (not so for a row from before chunks longer than a chunk).
    const cut = tail.length < CHUNK && parts.every((r) => r.text.length === CHUNK);
    this.kept.set(processId, revision, snapshot, cut);
    return { snapshot, version: revision };
  }

  /**
   * Several changed outcomes of one process in one batch (`apply` groups the calls waiting in a
   * lane): the row and the chunks hold the last one's snapshot, and each gets its log row, whose
   * revision is its own but whose guard is the last one's (see the header): every row lands or
   * none does.
   * @param {string} processId
   * @param {number | null} expectedVersion
   * @param {{ outcome: import("../index.d.ts").Outcome, extras?: import("../index.d.ts").CommitExtras }[]} steps
   */
  async commitSteps(processId, expectedVersion, steps) {
    const last = steps[steps.length - 1];
    const now = Date.now();
    const rows = steps.map((step) => eventLogRow(step, now) ?? guardRow(step, now));
    const lastRow = rows[rows.length - 1];
    const revision = last.outcome.revision;
    const nextDue = last.outcome.nextDueAt ?? null;
    const text = last.outcome.snapshot;
    const count = Math.floor(text.length / CHUNK);
    const tail = text.slice(count * CHUNK);
    const before = this.kept.stored(processId, expectedVersion);
    const write =
      expectedVersion === null
        ? this.db
            .prepare(
              "INSERT INTO processes (process_id, revision, snapshot, chunks, updated_at, next_due_at, last_event_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .bind(processId, revision, tail, count, lastRow.receivedAt, nextDue, lastRow.eventId)
        : this.db
            .prepare(
              "UPDATE processes SET revision = ?2, snapshot = ?3, chunks = ?4, updated_at = ?5, next_due_at = ?6, last_event_id = ?7 WHERE process_id = ?1 AND revision = ?8",
            )
            .bind(processId, revision, tail, count, lastRow.receivedAt, nextDue, lastRow.eventId, expectedVersion);
    // Each log row's revision is its own, read back only if the row above holds the last step.
    const logs = rows.map((row) =>
      this.db
        .prepare(
          `INSERT INTO events (process_id, event_id, revision, type, status, response, received_at)
           VALUES (?1, ?2,
                   (SELECT ?8 FROM processes WHERE process_id = ?1 AND revision = ?3 AND last_event_id = ?9),
                   ?4, ?5, ?6, ?7)`,
        )
        .bind(processId, row.eventId, revision, row.type, row.status, JSON.stringify(row.response), row.receivedAt, row.revision, lastRow.eventId),
    );
    const chunks = diffChunks(text, CHUNK, before, count);
    const changed = chunks.filter((c) => !c.same);
    const statements = [
      write,
      ...logs,
      ...changed.map((c) =>
        this.db
          .prepare(
            `INSERT INTO snapshot_chunks (process_id, idx, text, revision) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (process_id, idx) DO UPDATE SET text = excluded.text, revision = excluded.revision`,
          )
          .bind(processId, c.index, c.text, revision),
      ),
    ];
    if (before === null || Math.floor(before.length / CHUNK) > count) {
      statements.push(this.db.prepare("DELETE FROM snapshot_chunks WHERE process_id = ?1 AND idx >= ?2").bind(processId, count));
    }
    try {
      await this.db.batch(statements);
    } catch (err) {
      this.kept.delete(processId);
      if (CONSTRAINT.test(String(err?.message ?? err)) || CONSTRAINT.test(String(err?.cause?.message ?? ""))) {
        return { ok: false, conflict: true };
      }
      throw err;
    }
    this.chunkWrites += changed.length;
    this.chunksSkipped += count - changed.length;
    this.kept.set(processId, revision, text, true);
    return { ok: true, version: revision };
  }

  /**
   * The event log, oldest first.
   * @param {string} processId
   * @param {{ after?: number, limit?: number }} [options]
   */
  async events(processId, options = {}) {
    processIdArg(processId);
    eventsOptionsArg(options);
    const { results } = await this.db
      .prepare(
        `SELECT event_id, revision, type, status, response, received_at FROM events
          WHERE process_id = ?1 AND revision > ?2 AND NOT (type = 'unknown' AND event_id = 'revision-' || revision)
          ORDER BY revision LIMIT ?3`,
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
    nowArg(now, "now");
    if (!isCount(limit)) throw invalidArgument("limit", "a whole number", limit);
    const { results } = await this.db
      .prepare("SELECT process_id FROM processes WHERE next_due_at IS NOT NULL AND next_due_at <= ?1 ORDER BY next_due_at LIMIT ?2")
      .bind(now, limit)
      .all();
    return results.map((r) => r.process_id);
  }
}
