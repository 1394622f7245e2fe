// What every store does the same way: the event-log row of a commit, the
// chunks of a snapshot that differ from the stored ones, the snapshots a store
// last read or wrote, and `commit` as a `commitMany` of one step. Each store's
// own file holds only its platform's code.

import { processIdArg, stepsArg, versionArg } from "../checks.js";

/**
 * A store that commits several changed outcomes of one process as one compare-and-set
 * (`commitMany`: `apply` groups the calls waiting in a lane), and one outcome as a group of one.
 * A subclass writes `commitSteps(processId, expectedVersion, steps)`, called with checked arguments.
 */
export class GroupCommitStore {
  /**
   * @param {string} processId
   * @param {unknown} expectedVersion
   * @param {import("../index.d.ts").Outcome} outcome
   * @param {import("../index.d.ts").CommitExtras} [extras]
   * @returns {Promise<import("../index.d.ts").CommitResult>}
   */
  commit(processId, expectedVersion, outcome, extras = {}) {
    return this.commitMany(processId, expectedVersion, [{ outcome, extras }]);
  }

  /**
   * The last step's snapshot stored, each step's event logged, all or nothing.
   * @param {string} processId
   * @param {unknown} expectedVersion
   * @param {{ outcome: import("../index.d.ts").Outcome, extras?: import("../index.d.ts").CommitExtras }[]} steps
   * @returns {Promise<import("../index.d.ts").CommitResult>}
   */
  async commitMany(processId, expectedVersion, steps) {
    processIdArg(processId);
    versionArg(expectedVersion);
    stepsArg(steps);
    return /** @type {any} */ (this).commitSteps(processId, expectedVersion, steps);
  }
}

/**
 * The event-log row of one committed step (see `EventLogRow` in index.d.ts), or null for a
 * commit that carries no event: such a commit is logged nowhere. `receivedAt` is the host's
 * clock at the reduce (`extras.now`), else the store's clock at the commit, so every row has one.
 * @param {{ outcome: import("../index.d.ts").Outcome, extras?: import("../index.d.ts").CommitExtras }} step
 * @param {number} [now] the store's clock, read once per commit
 * @returns {import("../index.d.ts").EventLogRow | null}
 */
export function eventLogRow({ outcome, extras }, now = Date.now()) {
  const event = extras?.event;
  if (!event) return null;
  return {
    eventId: event.id,
    revision: outcome.revision,
    type: event.type,
    status: outcome.status,
    response: outcome.response ?? null,
    receivedAt: extras.now ?? now,
  };
}

/**
 * The first `count` chunks of `text`, `size` characters each (the last may be shorter), each
 * marked `same` when `stored` (the text the stored chunks hold, cut the same way; null when not
 * known) has these very characters at this place: a commit leaves such a chunk as it is.
 * @param {string} text
 * @param {number} size
 * @param {string | null} stored
 * @param {number} [count]
 * @returns {{ index: number, text: string, same: boolean }[]}
 */
export function diffChunks(text, size, stored, count = Math.ceil(text.length / size)) {
  const chunks = [];
  for (let index = 0; index < count; index++) {
    const from = index * size;
    const part = text.slice(from, from + size);
    const same = stored !== null && from < stored.length && stored.slice(from, from + size) === part;
    chunks.push({ index, text: part, same });
  }
  return chunks;
}

/**
 * The snapshots a store last read or wrote, per process, with their version, for the most recent
 * processes. While a process's stored version is unchanged, the store returns the kept string
 * itself instead of reading the snapshot again, and the engine recognises that very string and
 * reduces from the decoded copy it keeps. An entry marked `cut` is also what the store's chunks
 * hold at that version, cut as the store cuts them, so a commit on it writes only the chunks that
 * changed (`diffChunks`).
 */
export class KeptSnapshots {
  /** @param {{ entries?: number, maxChars?: number }} [options] */
  constructor({ entries = 16, maxChars = 8 << 20 } = {}) {
    this.entries = entries;
    this.maxChars = maxChars;
    /** @type {Map<string, { version: unknown, snapshot: string, cut: boolean }>} oldest first */
    this.map = new Map();
  }

  /** @param {string} processId */
  get(processId) {
    return this.map.get(processId);
  }

  /** @param {string} processId */
  delete(processId) {
    this.map.delete(processId);
  }

  /**
   * The text the store's chunks hold at `version`, when it is kept and cut as the store cuts
   * it; else null (then every chunk is written).
   * @param {string} processId
   * @param {unknown} version
   */
  stored(processId, version) {
    const kept = this.map.get(processId);
    return kept && kept.cut && version !== null && kept.version === version ? kept.snapshot : null;
  }

  /**
   * @param {string} processId
   * @param {unknown} version
   * @param {string} snapshot
   * @param {boolean} [cut] whether the store's chunks hold `snapshot` cut as it cuts them
   */
  set(processId, version, snapshot, cut = false) {
    this.map.delete(processId);
    if (typeof snapshot !== "string" || snapshot.length > this.maxChars) return;
    this.map.set(processId, { version, snapshot, cut });
    let total = 0;
    for (const k of this.map.values()) total += k.snapshot.length;
    while (this.map.size > this.entries || total > this.maxChars) {
      const [oldest, k] = this.map.entries().next().value;
      this.map.delete(oldest);
      total -= k.snapshot.length;
    }
  }
}
