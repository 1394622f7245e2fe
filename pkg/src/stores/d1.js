// Cloudflare D1 store. Schema: pkg/d1/migrations/, shipped as idem/d1/migrations (0001_init.sql,
// 0002_snapshot_chunks.sql).
//
// One row per process (`processes`) with a revision, and an event log
// (`events`) with UNIQUE(process_id, event_id) and UNIQUE(process_id, revision).
//
// The snapshot is cut into chunks of CHUNK characters from its start: the full
// chunks are rows of `snapshot_chunks` (process_id, idx), the rest (shorter
// than a chunk) is the process row's `snapshot`, and the row's `chunks` says
// how many chunk rows there are. A snapshot shorter than a chunk is the row
// alone, as a row written before chunks existed is (chunks = 0, the whole
// text in `snapshot`): such a row reads the same and is cut into chunks by its
// next commit. The engine appends a record per event near the end of the text
// and rewrites the front only when it drops old records, so a commit writes the
// row (its tail always changes) and, most of the time, no chunk at all.
//
// A commit is ONE `db.batch([...])`, which D1 runs as a transaction: if any
// statement fails, none of them takes effect.
//
//   create: INSERT the process row (fails if it exists: PRIMARY KEY)
//   update: UPDATE ... WHERE process_id = ? AND revision = <expected>
//   both:   INSERT the event-log row of each event (one; several when `apply`
//           commits the calls waiting in a lane together, `commitMany`), whose
//           `revision` is its own, read only if the process row is *as this
//           batch left it*:
//             (SELECT <its revision> FROM processes
//               WHERE process_id = ? AND revision = <new> AND last_event_id = <the last event's id>)
//   then:   upsert the chunks whose text changed (each records the revision
//           that wrote it), and DELETE the chunks at or beyond the new count
//           when the snapshot may have had more
//
// A conditional UPDATE that matches no row is not an error in SQLite (it
// changes 0 rows and the batch would commit), so the log insert is what turns
// a lost race into a failure: when the UPDATE did not happen, the subquery
// finds no row, the revision is NULL, NOT NULL fails and the batch rolls back.
// If another writer got the same new revision first, the insert also hits
// UNIQUE(process_id, revision); a second copy of an applied event hits
// UNIQUE(process_id, event_id). Any constraint failure is reported as
// `{ ok: false, conflict: true }` and the host loop reloads and reduces again.
// The log insert comes second, before any chunk statement, so a writer that
// lost stops there and touches no chunk; a chunk statement that fails (the
// last ones) rolls back the row and the log with it.
//
// Which chunks changed is known exactly when the store keeps the snapshot at
// the expected revision, stored in chunks of this size (it wrote it, or read it
// cut that way): those are compared and only the different ones written (and
// nothing deleted unless the kept snapshot had more chunks). Otherwise (a
// create, another writer's revision, a row from before chunks) every chunk is
// written and the ones beyond the count deleted. A commit at the expected
// revision leaves the chunks as that revision's commit did, because every
// batch that moves the revision writes its chunks with it or not at all.
//
// CHUNK is 16 Ki characters. Snapshots are ASCII in practice, and a chunk is
// at most 48 KiB of UTF-8 in any case: under D1's 100 KB statement and 2 MB
// row limits whichever way bound values count. Smaller chunks write a little
// less per event (the tail the engine rewrites is ~8 KiB at a full default
// ledger: 19 KiB per event at 16 Ki, 16 at 8 Ki, 14 at 4 Ki, counting chunk
// rows and the row's tail) but need more statements when every chunk is
// written (a 116 KiB snapshot: 7 chunk rows at 16 Ki, 29 at 4 Ki; D1 counts
// each statement against a Worker's queries per invocation, 50 on the free
// plan) and more rows to read.
//
// Version = revision.
//
// The store keeps the snapshots it last read or wrote (16 processes, 8 MiB):
// `load` asks for the snapshot only when the row's revision is not the kept
// one, in the same query (one statement: the row joined with its chunks, a
// consistent read), and otherwise returns the kept string itself, which
// the engine reduces from its decoded copy. Keep one store per isolate.
//
// A row whose chunk rows are not all there (a row deleted or lost behind the
// store's back) makes `load` throw a `StoreCorruptError` (code
// `snapshot_corrupt`, HTTP 500) naming the process and the revision.

import { KeptSnapshots } from "./kept.js";
import { eventsOptionsArg, invalidArgument, isCount, nowArg, processIdArg, stepsArg, versionArg, withMethods } from "../checks.js";
import { StoreCorruptError } from "./limit.js";

export { StoreCorruptError };

const CONSTRAINT = /constraint/i;

/** Characters per chunk row. */
export const CHUNK = 16 * 1024;

/**
 * @implements {import("../index.d.ts").Store}
 */
export class D1Store {
  /**
   * @param {D1Database} db the binding (`env.DB`)
   */
  constructor(db) {
    this.db = withMethods(db, "db", ["prepare", "batch"], "a D1 binding (env.DB)");
    this.kept = new KeptSnapshots();
    /** Kept entries whose text is stored in chunks of CHUNK characters at their revision. */
    this.cut = new WeakSet();
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
    this.keep(processId, revision, snapshot, cut);
    return { snapshot, version: revision };
  }

  /**
   * @param {string} processId
   * @param {number | null} expectedVersion
   * @param {import("../index.d.ts").Outcome} outcome
   * @param {import("../index.d.ts").CommitExtras} [extras]
   */
  commit(processId, expectedVersion, outcome, extras = {}) {
    return this.commitMany(processId, expectedVersion, [{ outcome, extras }]);
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
  async commitMany(processId, expectedVersion, steps) {
    processIdArg(processId);
    versionArg(expectedVersion);
    stepsArg(steps);
    const last = steps[steps.length - 1];
    const eventOf = (step) => step.extras?.event ?? { id: `revision-${step.outcome.revision}`, type: "unknown" };
    const now = last.extras?.now ?? Date.now();
    const event = eventOf(last);
    const revision = last.outcome.revision;
    const nextDue = last.outcome.nextDueAt ?? null;
    const text = last.outcome.snapshot;
    const count = Math.floor(text.length / CHUNK);
    const tail = text.slice(count * CHUNK);
    // The snapshot the chunk rows hold now, when known (see the header).
    const kept = expectedVersion === null ? undefined : this.kept.get(processId);
    const before = kept && kept.version === expectedVersion && this.cut.has(kept) ? kept.snapshot : null;
    const write =
      expectedVersion === null
        ? this.db
            .prepare(
              "INSERT INTO processes (process_id, revision, snapshot, chunks, updated_at, next_due_at, last_event_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .bind(processId, revision, tail, count, now, nextDue, event.id)
        : this.db
            .prepare(
              "UPDATE processes SET revision = ?2, snapshot = ?3, chunks = ?4, updated_at = ?5, next_due_at = ?6, last_event_id = ?7 WHERE process_id = ?1 AND revision = ?8",
            )
            .bind(processId, revision, tail, count, now, nextDue, event.id, expectedVersion);
    // Each log row's revision is its own, read back only if the row above holds the last step.
    const logs = steps.map((step) => {
      const e = eventOf(step);
      return this.db
        .prepare(
          `INSERT INTO events (process_id, event_id, revision, type, status, response, received_at)
           VALUES (?1, ?2,
                   (SELECT ?8 FROM processes WHERE process_id = ?1 AND revision = ?3 AND last_event_id = ?9),
                   ?4, ?5, ?6, ?7)`,
        )
        .bind(processId, e.id, revision, e.type, step.outcome.status, JSON.stringify(step.outcome.response ?? null), step.extras?.now ?? now, step.outcome.revision, event.id);
    });
    const statements = [write, ...logs];
    let skipped = 0;
    for (let i = 0; i < count; i++) {
      const chunk = text.slice(i * CHUNK, (i + 1) * CHUNK);
      if (before !== null && before.length >= (i + 1) * CHUNK && before.startsWith(chunk, i * CHUNK)) {
        skipped++;
        continue;
      }
      statements.push(
        this.db
          .prepare(
            `INSERT INTO snapshot_chunks (process_id, idx, text, revision) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (process_id, idx) DO UPDATE SET text = excluded.text, revision = excluded.revision`,
          )
          .bind(processId, i, chunk, revision),
      );
    }
    const writes = statements.length - 1 - logs.length;
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
    this.chunkWrites += writes;
    this.chunksSkipped += skipped;
    this.keep(processId, revision, text, true);
    return { ok: true, version: revision };
  }

  /**
   * Keep a snapshot, and whether the store holds it in chunks of CHUNK characters.
   * @param {string} processId
   * @param {number} revision
   * @param {string} snapshot
   * @param {boolean} cut
   */
  keep(processId, revision, snapshot, cut) {
    this.kept.set(processId, revision, snapshot);
    const entry = this.kept.get(processId);
    if (entry && cut) this.cut.add(entry);
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
    nowArg(now, "now");
    if (!isCount(limit)) throw invalidArgument("limit", "a whole number", limit);
    const { results } = await this.db
      .prepare("SELECT process_id FROM processes WHERE next_due_at IS NOT NULL AND next_due_at <= ?1 ORDER BY next_due_at LIMIT ?2")
      .bind(now, limit)
      .all();
    return results.map((r) => r.process_id);
  }
}
