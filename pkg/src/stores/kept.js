// The snapshots a store last read or wrote, per process, with their version,
// for the most recent processes. While a process's stored version is unchanged,
// the store returns the kept string itself instead of reading the snapshot
// again, and the engine recognises that very string and reduces from the
// decoded copy it keeps (no copy into wasm memory, no decode).

export class KeptSnapshots {
  /** @param {{ entries?: number, maxChars?: number }} [options] */
  constructor({ entries = 16, maxChars = 8 << 20 } = {}) {
    this.entries = entries;
    this.maxChars = maxChars;
    /** @type {Map<string, { version: unknown, snapshot: string }>} oldest first */
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
   * @param {string} processId
   * @param {unknown} version
   * @param {string} snapshot
   */
  set(processId, version, snapshot) {
    this.map.delete(processId);
    if (typeof snapshot !== "string" || snapshot.length > this.maxChars) return;
    this.map.set(processId, { version, snapshot });
    let total = 0;
    for (const k of this.map.values()) total += k.snapshot.length;
    while (this.map.size > this.entries || total > this.maxChars) {
      const [oldest, k] = this.map.entries().next().value;
      this.map.delete(oldest);
      total -= k.snapshot.length;
    }
  }
}
