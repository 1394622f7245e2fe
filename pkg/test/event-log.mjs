// The event-log row every store writes (`EventLogRow` in pkg/src/index.d.ts), as one scenario
// each store's suite runs on its own platform: an event with the host's clock, an event
// without it (the store's clock, a number), and a commit with no event (not logged).

/**
 * Commit three outcomes of `processId` through `store` and read its log back.
 * @param {import("../src/index.d.ts").Store} store
 * @param {{ reduce: Function }} machine
 * @param {string} processId
 * @param {(i: number) => { id: string, type: string, payload?: unknown }} eventOf the i-th event (1, 2, 3), each applied
 * @returns {Promise<{ rows: unknown[], expected: unknown[] }>} the rows with a store clock's
 *   `receivedAt` written as "store clock", and the rows every store must give
 */
export async function logThreeCommits(store, machine, processId, eventOf) {
  const [e1, e2, e3] = [1, 2, 3].map(eventOf);
  const o1 = machine.reduce(null, e1, 1_000, processId);
  await committed(store.commit(processId, null, o1, { event: e1, now: 1_000 }));
  const l1 = await store.load(processId);
  const o2 = machine.reduce(l1.snapshot, e2, 2_000, processId);
  await committed(store.commit(processId, l1.version, o2, { event: e2 }));
  const l2 = await store.load(processId);
  const o3 = machine.reduce(l2.snapshot, e3, 3_000, processId);
  await committed(store.commit(processId, l2.version, o3, {}));
  const rowOf = (e, o, receivedAt) => ({ eventId: e.id, revision: o.revision, type: e.type, status: o.status, response: o.response ?? null, receivedAt });
  const rows = (await store.events(processId)).map((r) => ({ ...r, receivedAt: r.receivedAt === 1_000 ? 1_000 : typeof r.receivedAt === "number" ? "store clock" : r.receivedAt }));
  return { rows, expected: [rowOf(e1, o1, 1_000), rowOf(e2, o2, "store clock")] };
}

async function committed(result) {
  const r = await result;
  if (!r.ok) throw new Error(`commit refused: ${JSON.stringify(r)}`);
}
