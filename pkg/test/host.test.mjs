import { test } from "node:test";
import assert from "node:assert/strict";
import { Machine } from "../src/node.js";
import { apply, ContentionError, inspect } from "../src/host.js";
import { MemoryStore } from "../src/stores/memory.js";
import { orderDefinition, checkoutMachine, manualClock } from "./helpers.mjs";

const pay = (id, paymentId, amount = 1) => ({ id, type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });

test("applied, then the same event again is a duplicate that costs a read and no write", async () => {
  const store = new MemoryStore();
  const m = new Machine(orderDefinition());
  const now = manualClock();
  const first = await apply(store, m, "o1", pay("e1", "p1", 40), { now });
  assert.equal(first.status, "applied");
  assert.equal(first.version, 1);
  assert.equal(store.writes, 1);
  const again = await apply(store, m, "o1", pay("e1", "p1", 40), { now });
  assert.equal(again.status, "duplicate");
  assert.deepEqual(again.response, first.response);
  assert.equal(store.writes, 1, "a duplicate must not write");
  assert.equal((await inspect(store, m, "o1")).context.paid, 40);
});

test("conflict, ignored and rejected write nothing", async () => {
  const store = new MemoryStore();
  const m = new Machine(orderDefinition());
  await apply(store, m, "o1", pay("e1", "p1", 40));
  const conflict = await apply(store, m, "o1", pay("e1", "p1", 41));
  assert.equal(conflict.status, "conflict");
  assert.equal(conflict.error.code, "id_conflict");
  const rejected = await apply(store, m, "o1", { id: "e2", type: "NOPE" });
  assert.equal(rejected.status, "rejected");
  assert.equal(rejected.error.code, "unknown_event_type");
  const ignored = await apply(store, m, "o1", { id: "e3", type: "SHIP" });
  assert.equal(ignored.status, "ignored");
  assert.equal(store.writes, 1);
});

test("an event a new process ignores does not create it", async () => {
  const store = new MemoryStore();
  const m = new Machine(orderDefinition());
  const out = await apply(store, m, "fresh", { id: "e1", type: "SHIP" });
  assert.equal(out.status, "ignored");
  assert.equal(await store.load("fresh"), null);
});

// The races below are what calls from different isolates (or with `lane: false`) meet: every copy
// loads the same version and all but one lose the compare-and-set.
test("50 concurrent deliveries of one event: one applied, 49 duplicates with the first response, one write", async () => {
  const store = new MemoryStore();
  const m = new Machine(orderDefinition());
  const outs = await Promise.all(Array.from({ length: 50 }, () => apply(store, m, "o1", pay("e1", "p1", 40), { lane: false })));
  const applied = outs.filter((o) => o.status === "applied");
  const dups = outs.filter((o) => o.status === "duplicate");
  assert.equal(applied.length, 1);
  assert.equal(dups.length, 49);
  for (const d of dups) assert.deepEqual(d.response, applied[0].response);
  assert.equal(store.writes, 1);
  assert.ok(store.conflicts > 0, "the race really happened (some compare-and-set lost)");
  assert.equal((await store.events("o1")).length, 1);
});

test("50 distinct events delivered concurrently twice each: all applied once, revisions contiguous", async () => {
  const store = new MemoryStore();
  const m = checkoutMachine();
  const events = Array.from({ length: 50 }, (_, i) => pay(`e${i}`, `p${i}`, 1));
  const deliveries = [...events, ...events]; // both copies in flight together
  const outs = await Promise.all(deliveries.map((e) => apply(store, m, "o1", e, { maxRetries: 200, lane: false })));
  assert.ok(store.conflicts > 0, "the race really happened");
  assert.equal(outs.filter((o) => o.status === "applied").length, 50);
  assert.equal(outs.filter((o) => o.status === "duplicate").length, 50);
  const view = await inspect(store, m, "o1");
  assert.equal(view.context.paid, 50);
  assert.deepEqual([...view.context.payments].sort(), events.map((e) => e.payload.paymentId).sort());
  const revisions = (await store.events("o1", { limit: 1000 })).map((r) => r.revision);
  assert.deepEqual(revisions, Array.from({ length: 50 }, (_, i) => i + 1));
});

test("contention that outlasts the retries throws ContentionError with code contention", async () => {
  const inner = new MemoryStore();
  const m = new Machine(orderDefinition());
  await apply(inner, m, "o1", pay("e0", "p0", 1));
  // Every commit loses: another writer always got there first.
  const store = { load: (id) => inner.load(id), commit: async () => ({ ok: false, conflict: true }) };
  const conflicts = [];
  await assert.rejects(
    apply(store, m, "o1", pay("e1", "p1", 1), { maxRetries: 3, backoff: () => 0, onConflict: (c) => conflicts.push(c.attempt) }),
    (err) => err instanceof ContentionError && err.code === "contention" && err.attempts === 4,
  );
  assert.deepEqual(conflicts, [1, 2, 3, 4]);
});

/** A memory store that counts its loads; `afterCommit` runs once a commit has landed, before it returns. */
function counting(inner = new MemoryStore(), afterCommit = null) {
  const store = {
    loads: 0,
    load: (id) => {
      store.loads++;
      return inner.load(id);
    },
    commit: async (id, expected, outcome, extras) => {
      const res = await inner.commit(id, expected, outcome, extras);
      if (res.ok && afterCommit) await afterCommit(extras.event);
      return res;
    },
    events: (id, o) => inner.events(id, o),
  };
  return store;
}

test("calls for one process in one isolate wait in its lane: no lost compare-and-set, and an applied event or a duplicate that waited loads nothing", async () => {
  const inner = new MemoryStore();
  const store = counting(inner);
  const m = checkoutMachine();
  const events = Array.from({ length: 50 }, (_, i) => pay(`e${i}`, `p${i}`, 1));
  const outs = await Promise.all([...events, ...events].map((e) => apply(store, m, "o1", e)));
  assert.equal(outs.filter((o) => o.status === "applied").length, 50);
  assert.equal(outs.filter((o) => o.status === "duplicate").length, 50);
  assert.equal(inner.conflicts, 0, "no compare-and-set lost");
  assert.equal(inner.writes, 50);
  assert.ok(outs.every((o) => o.attempts === 1));
  // The first call loads. The 49 applied events after it commit from what the call before wrote, and
  // the 50 duplicates answer from it: every call arrived before that write started.
  assert.equal(store.loads, 1);
  // One at a time, in arrival order.
  const log = await inner.events("o1", { limit: 1000 });
  assert.deepEqual(log.map((r) => r.eventId), events.map((e) => e.id));
  assert.deepEqual(log.map((r) => r.revision), Array.from({ length: 50 }, (_, i) => i + 1));
  assert.equal((await inspect(store, m, "o1")).context.paid, 50);
});

test("in a lane, another writer's commit makes the guess lose: the call loads and lands after it", async () => {
  const inner = new MemoryStore();
  const m = new Machine(orderDefinition());
  const other = counting(inner); // another isolate: its own store object, the same rows
  let once = false;
  const store = counting(inner, async (event) => {
    if (event.id !== "e1" || once) return;
    once = true;
    assert.equal((await apply(other, m, "o1", pay("x1", "px", 5))).status, "applied");
  });
  const conflicts = [];
  const onConflict = (c) => conflicts.push(c.event.id);
  const [a, b] = await Promise.all([apply(store, m, "o1", pay("e1", "p1", 10), { onConflict }), apply(store, m, "o1", pay("e2", "p2", 20), { onConflict })]);
  assert.equal(a.status, "applied");
  assert.equal(b.status, "applied");
  assert.equal(b.attempts, 2, "the guess lost its compare-and-set");
  assert.deepEqual(conflicts, ["e2"]);
  assert.deepEqual((await inner.events("o1")).map((r) => `${r.eventId}@${r.revision}`), ["e1@1", "x1@2", "e2@3"]);
  assert.equal((await inspect(store, m, "o1")).context.paid, 35);
});

test("in a lane, an answer that writes nothing is read from the store, never from the guess", async () => {
  const inner = new MemoryStore();
  const m = new Machine(orderDefinition());
  const other = counting(inner);
  const store = counting(inner, async (event) => {
    // Another isolate completes the payment while SHIP waits behind e1: SHIP is no longer ignored.
    if (event.id === "e1") assert.equal((await apply(other, m, "o1", pay("x1", "px", 60))).status, "applied");
  });
  const [a, ship] = await Promise.all([apply(store, m, "o1", pay("e1", "p1", 40)), apply(store, m, "o1", { id: "s1", type: "SHIP" })]);
  assert.equal(a.status, "applied");
  assert.equal(ship.status, "applied", "the guess (pending) would have ignored SHIP; the store says paid");
  assert.equal(ship.state, "shipped");
  assert.equal(ship.attempts, 1);
  assert.equal(inner.conflicts, 0);
});

test("in a lane, a duplicate is answered from the guess only when the guess was read after it arrived", async () => {
  const inner = new MemoryStore();
  const m = new Machine(orderDefinition());
  const other = counting(inner); // another isolate
  await apply(other, m, "o1", pay("e1", "p1", 10));
  // A store whose loads wait at a gate once the rows are read, so a call can arrive between a read and its answer.
  let gate = null;
  const store = counting(inner);
  const load = store.load;
  store.load = async (id) => {
    const row = await load(id);
    if (gate) await gate;
    return row;
  };
  let open;
  gate = new Promise((r) => (open = r));
  const first = apply(store, m, "o1", pay("e1", "p1", 10)); // reads revision 1, then waits at the gate
  await new Promise((r) => setTimeout(r, 5));
  const second = apply(store, m, "o1", pay("e1", "p1", 10)); // arrives after that read started
  assert.equal((await apply(other, m, "o1", pay("e2", "p2", 20))).status, "applied"); // revision 2, elsewhere
  gate = null;
  open();
  const [a, b] = await Promise.all([first, second]);
  assert.deepEqual([a.status, a.revision, a.version], ["duplicate", 1, 1]);
  // The guess (revision 1) was read before the second call arrived: it reads the store again.
  assert.deepEqual([b.status, b.revision, b.version, b.response], ["duplicate", 2, 2, a.response]);
  assert.equal(store.loads, 2);
  // A third copy behind a read that started after it arrived is answered from that read.
  gate = new Promise((r) => (open = r));
  const c = apply(store, m, "o1", pay("e1", "p1", 10));
  const d = apply(store, m, "o1", pay("e1", "p1", 10));
  open();
  assert.deepEqual((await Promise.all([c, d])).map((o) => `${o.status}@${o.revision}`), ["duplicate@2", "duplicate@2"]);
  assert.equal(store.loads, 3, "one read for both copies");
});

test("a call stuck in the store holds its lane only laneStallMs: the calls behind it go on and nothing is lost", async () => {
  const inner = new MemoryStore();
  const m = new Machine(orderDefinition());
  let release;
  const stuck = new Promise((r) => (release = r));
  let first = true;
  const store = {
    load: async (id) => {
      if (first) {
        first = false;
        await stuck; // a store call that hangs
      }
      return inner.load(id);
    },
    commit: (...a) => inner.commit(...a),
  };
  const opts = { laneStallMs: 30 };
  const slow = apply(store, m, "o1", pay("e1", "p1", 10), opts);
  const fast = await Promise.all([apply(store, m, "o1", pay("e2", "p2", 20), opts), apply(store, m, "o1", pay("e3", "p3", 30), opts)]);
  assert.deepEqual(fast.map((o) => o.status), ["applied", "applied"]);
  release();
  assert.equal((await slow).status, "applied");
  assert.equal((await inspect(inner, m, "o1")).context.paid, 60);
  assert.equal((await inner.events("o1")).length, 3);
  // The lane is usable again: a later call runs at once.
  assert.equal((await apply(store, m, "o1", pay("e4", "p4", 1), opts)).status, "applied");
});

test("after a store's error in a lane the next call loads: the error may have left the store changed", async () => {
  const inner = new MemoryStore();
  const m = new Machine(orderDefinition());
  const store = counting(inner);
  let commits = 0;
  const failing = {
    load: (id) => store.load(id),
    commit: async (...a) => {
      if (++commits === 2) throw new Error("store unavailable");
      return store.commit(...a);
    },
  };
  const outs = await Promise.allSettled([1, 2, 3].map((i) => apply(failing, m, "o1", pay(`e${i}`, `p${i}`, 10))));
  assert.deepEqual(outs.map((o) => o.status), ["fulfilled", "rejected", "fulfilled"]);
  assert.equal(outs[2].value.status, "applied");
  // e1 loads; e2 commits from e1's write without a load and fails; e3 does not trust e2's turn and loads.
  assert.equal(store.loads, 2);
  assert.deepEqual((await inner.events("o1")).map((r) => r.eventId), ["e1", "e3"]);
});

test("a store that says it is serial (a Durable Object's) gets no lane: its calls run as they come", async () => {
  const inner = new MemoryStore();
  const m = checkoutMachine();
  const store = { serial: true, load: (id) => inner.load(id), commit: (...a) => inner.commit(...a) };
  const outs = await Promise.all(Array.from({ length: 10 }, (_, i) => apply(store, m, "o1", pay(`e${i}`, `p${i}`, 1), { maxRetries: 200 })));
  assert.ok(outs.every((o) => o.status === "applied"));
  assert.ok(inner.conflicts > 0, "the calls raced: no lane ordered them");
});

for (const grouped of [false, true]) {
test(`lanes under random schedules${grouped ? ", commits grouped" : ""}: three isolates, slow store calls, errors before and after a write, stalls; every event applied once, nothing hangs`, async () => {
  // A seeded generator, so a failure replays.
  let seed = 20_261_201;
  const rand = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  const delay = () => new Promise((r) => setTimeout(r, rand() < 0.7 ? 0 : Math.floor(rand() * 6)));
  const m = checkoutMachine();
  let groups = 0;
  for (let round = 0; round < 8; round++) {
    const inner = new MemoryStore();
    /** A store call that is slow at random, and fails at random before or after it writes. */
    const flaky = async (write) => {
      await delay();
      if (rand() < 0.05) throw new Error("store unavailable");
      const res = await write();
      await delay(); // the answer can come back late,
      if (rand() < 0.05) throw new Error("store unavailable"); // or not at all, the write done
      return res;
    };
    // Each isolate has its own store object (so its own lanes) over the same rows.
    const isolates = Array.from({ length: 3 }, () => ({
      load: async (id) => {
        await delay();
        return inner.load(id);
      },
      commit: (...a) => flaky(() => inner.commit(...a)),
      ...(grouped
        ? {
            commitMany: (id, expected, steps) => {
              if (steps.length > 1) groups++;
              return flaky(() => inner.commitMany(id, expected, steps));
            },
          }
        : {}),
    }));
    const events = Array.from({ length: 30 }, (_, i) => pay(`r${round}e${i}`, `r${round}p${i}`, 1));
    const deliveries = [];
    for (const e of events) for (let c = 0; c < 1 + Math.floor(rand() * 3); c++) deliveries.push(e);
    const send = async (e) => {
      // A delivery that meets a store error is sent again, as a client retries with the same id.
      for (;;) {
        const store = isolates[Math.floor(rand() * isolates.length)];
        try {
          return await apply(store, m, "p", e, { maxRetries: 500, backoff: () => rand() * 2, laneStallMs: 20 });
        } catch (err) {
          if (err.message !== "store unavailable") throw err;
        }
      }
    };
    const outs = await Promise.all(deliveries.map(send));
    assert.ok(outs.every((o) => o.status === "applied" || o.status === "duplicate"), JSON.stringify(outs.map((o) => o.status)));
    const log = await inner.events("p", { limit: 1000 });
    assert.deepEqual(log.map((r) => r.eventId).sort(), events.map((e) => e.id).sort(), "each event applied exactly once");
    assert.deepEqual(log.map((r) => r.revision), Array.from({ length: events.length }, (_, i) => i + 1));
    assert.equal((await inspect(inner, m, "p")).context.paid, events.length);
  }
  if (grouped) assert.ok(groups > 0, "some commits took several events");
});
}

test("a lane's waiting calls are committed together: the same outcomes and log as one by one, one read, fewer writes", async () => {
  const m = checkoutMachine();
  const events = Array.from({ length: 50 }, (_, i) => pay(`e${i}`, `p${i}`, 1));
  const deliveries = [...events, ...events];
  // One by one (no lane), the reference.
  const serial = new MemoryStore();
  const expected = [];
  for (const e of deliveries) expected.push(await apply(serial, m, "o1", e, { lane: false, now: 1000 }));
  // All at once through a lane, on a store that takes several outcomes per commit.
  const inner = new MemoryStore();
  const store = counting(inner);
  store.commitMany = (...a) => inner.commitMany(...a);
  const outs = await Promise.all(deliveries.map((e) => apply(store, m, "o1", e, { now: 1000 })));
  const strip = (o) => ({ ...o, version: undefined, attempts: undefined, snapshot: undefined });
  assert.deepEqual(outs.map(strip), expected.map(strip), "each outcome as one by one");
  assert.equal((await inner.load("o1")).snapshot, (await serial.load("o1")).snapshot, "the same snapshot, byte for byte");
  assert.deepEqual(await inner.events("o1", { limit: 1000 }), await serial.events("o1", { limit: 1000 }), "the same log");
  assert.equal(store.loads, 1);
  assert.equal(inner.conflicts, 0);
  assert.ok(inner.writes < 10, `${inner.writes} writes for 50 applied events`);
  assert.ok(outs.every((o) => o.attempts === 1));
  // Every call answers with the store's version after the commit that carried it.
  assert.equal(outs[outs.length - 1].version, (await inner.load("o1")).version);
});

test("a group whose commit loses its compare-and-set, or whose store throws, goes again one by one", async () => {
  const m = new Machine(orderDefinition());
  const inner = new MemoryStore();
  const other = counting(inner); // another isolate
  const store = counting(inner);
  let raced = false;
  store.commitMany = async (...a) => {
    if (!raced) {
      raced = true; // another isolate writes first: the group's compare-and-set loses
      assert.equal((await apply(other, m, "o1", pay("x1", "px", 5))).status, "applied");
    }
    return inner.commitMany(...a);
  };
  const conflicts = [];
  const onConflict = (c) => conflicts.push(c.event.id);
  const calls = ["e1", "e2", "e3", "e4"].map((id, i) => apply(store, m, "o1", pay(id, `p${i}`, 10), { onConflict }));
  const outs = await Promise.all(calls);
  assert.deepEqual(outs.map((o) => o.status), ["applied", "applied", "applied", "applied"]);
  // The first call's turn began with the other three queued: it loaded and took them along.
  assert.deepEqual(conflicts, ["e1", "e2", "e3", "e4"], "the group lost once");
  assert.deepEqual((await inner.events("o1")).map((r) => `${r.eventId}@${r.revision}`), ["x1@1", "e1@2", "e2@3", "e3@4", "e4@5"]);

  // The group's commit throws after it landed (its answer lost): each call goes again alone, from a
  // load, and finds its event applied.
  store.commitMany = async (...a) => {
    await inner.commitMany(...a);
    throw new Error("store unavailable");
  };
  const loads = store.loads;
  const again = await Promise.all(["f1", "f2", "f3"].map((id, i) => apply(store, m, "o1", pay(id, `q${i}`, 1))));
  assert.deepEqual(again.map((o) => o.status), ["duplicate", "duplicate", "duplicate"]);
  assert.equal(store.loads, loads + 2, "the group's load, then one load for the three (duplicates read after they arrived)");
  // It throws before writing: each call goes again alone and lands (a plain commit).
  store.commitMany = async () => {
    throw new Error("store unavailable");
  };
  const alone = await Promise.all(["g1", "g2", "g3"].map((id, i) => apply(store, m, "o1", pay(id, `r${i}`, 1))));
  assert.deepEqual(alone.map((o) => o.status), ["applied", "applied", "applied"]);
  assert.deepEqual((await inner.events("o1")).map((r) => r.eventId), ["x1", "e1", "e2", "e3", "e4", "f1", "f2", "f3", "g1", "g2", "g3"]);
  assert.equal(conflicts.length, 4, "a store error is not a lost compare-and-set");
});

test("a group whose commit hangs past laneStallMs lets the calls it took go on alone; its late commit then loses, and each event lands once", async () => {
  const m = new Machine(orderDefinition());
  const inner = new MemoryStore();
  const store = counting(inner);
  let first = true;
  store.commitMany = async (...a) => {
    if (first) {
      first = false;
      await new Promise((r) => setTimeout(r, 100)); // the group's commit is slow, then lands (or tries to)
    }
    return inner.commitMany(...a);
  };
  const outs = await Promise.all(["e1", "e2", "e3", "e4"].map((id, i) => apply(store, m, "o1", pay(id, `p${i}`, 10), { laneStallMs: 20, backoff: () => 1 })));
  assert.deepEqual(outs.map((o) => o.status), ["applied", "applied", "applied", "applied"]);
  const log = (await inner.events("o1")).map((r) => r.eventId);
  assert.deepEqual([...log].sort(), ["e1", "e2", "e3", "e4"], "each event once");
  assert.equal(log[log.length - 1], "e1", "the holder's event landed last, after its group's commit lost");
  assert.equal((await inspect(inner, m, "o1")).context.paid, 40);
});

test("a group takes only the calls queued in a row with the holder's machine, and keeps their order", async () => {
  const a = checkoutMachine();
  const b = checkoutMachine(); // another Machine object for the same definition
  const inner = new MemoryStore();
  const store = counting(inner);
  const sizes = [];
  store.commitMany = (id, expected, steps) => {
    sizes.push(steps.length);
    return inner.commitMany(id, expected, steps);
  };
  const plan = [a, a, a, b, a, a];
  const outs = await Promise.all(plan.map((m, i) => apply(store, m, "o1", pay(`e${i}`, `p${i}`, 1))));
  assert.ok(outs.every((o) => o.status === "applied"));
  assert.deepEqual((await inner.events("o1")).map((r) => r.eventId), ["e0", "e1", "e2", "e3", "e4", "e5"]);
  // e0 takes e1 and e2 and stops at b's call; e3 goes alone (a plain commit); e4 takes e5.
  assert.deepEqual(sizes, [3, 2]);
});
