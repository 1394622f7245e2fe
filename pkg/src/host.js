// The host loop every runtime shares, `apply`: load -> reduce -> commit (only when the snapshot
// changed), retrying a lost compare-and-set. Every business decision is the engine's. Most of
// this file is the scheduling around that loop in one isolate: the calls for one process wait
// in a lane and start from what the call before them read or wrote (a guess the
// compare-and-set still checks), and when the store has `commitMany` the calls waiting in a
// lane are committed together (group commit).
//
// A store is any object with `load` and `commit` (see `Store` in index.d.ts); `commit` is a
// compare-and-set on the version (null: the process must not exist yet). With
// `commitMany(processId, expectedVersion, [{ outcome, extras }, ...])`, the same for several
// changed outcomes in order (the last one's snapshot stored, each logged, all or nothing).

import { IdemError } from "./error.js";
import { applyOptionsArg, clockArg, eventArg, invalidArgument, machineArg, processIdArg, storeArg } from "./checks.js";

/** Default number of compare-and-set retries after the first try. */
export const DEFAULT_MAX_RETRIES = 16;

/**
 * Thrown by {@link apply} when every compare-and-set try lost to another
 * writer. Safe to retry with the same event id (HTTP maps it to 409).
 */
export class ContentionError extends IdemError {
  /**
   * @param {string} processId
   * @param {number} attempts
   */
  constructor(processId, attempts) {
    super("contention", `process "${processId}" changed under ${attempts} consecutive attempts; retry with the same event id`);
    this.processId = processId;
    this.attempts = attempts;
  }
}

/** The type prefix of the dispatcher's attempt reports (the engine's `EFFECT_REPORT_PREFIX`, src/engine/machine.rs). */
export const EFFECT_REPORT_PREFIX = "idem.effect.";
/** The type of a due timer's event (the engine's `TIMER_EVENT`, src/engine/machine.rs). */
export const TIMER_EVENT = "idem.after";

/**
 * Whether `type` is one the engine reserves for its own events (attempt reports, timers): the
 * dispatcher sends them, a client never may. Any other type, `idem.`-prefixed or not, is the
 * machine's to accept or refuse.
 * @param {string} type
 */
export function isEngineEventType(type) {
  return type.startsWith(EFFECT_REPORT_PREFIX) || type === TIMER_EVENT;
}

/**
 * An event given as its JSON text, with the id and type the stores log beside it: `apply` hands
 * the text itself to `machine.reduce`, so the engine reads what the client sent (its numbers, its
 * strings) and its limits decide. The HTTP API passes request bodies this way.
 *
 * ```js
 * await apply(store, machine, "order-42", new EventText(key, "PAY", `{"id":"${key}","type":"PAY","payload":{"amount":1.50}}`));
 * ```
 */
export class EventText {
  /**
   * @param {string} id the event id the text carries
   * @param {string} type the event type the text carries (for the stores' event log)
   * @param {string} text the event's JSON text, `{ id, type, payload }`
   */
  constructor(id, type, text) {
    for (const [name, v] of [["id", id], ["type", type], ["text", text]]) {
      if (typeof v !== "string") throw invalidArgument(name, "a string", v);
    }
    this.id = id;
    this.type = type;
    this.text = text;
  }
}


/**
 * The host's clock: a function returning ms, or a fixed number (`Date.now()` when undefined).
 * Anything else, or a function that returns anything but a number of ms, is an `invalid_argument`
 * (a clock given as the string "123" must not become some other time).
 * @param {(() => number) | number | undefined} now
 * @returns {number}
 */
export function readClock(now) {
  return clockArg(now, "now");
}

/**
 * What `machine.reduce` is given for an event `apply` takes: an `EventText`'s text, a string as it
 * is, an object as the JSON text it writes, made once on arrival (every try reduces that text; the
 * stores log the event as it was given).
 * @param {unknown} event
 * @returns {string}
 */
const reducedText = (event) => (event instanceof EventText ? eventArg(event.text, "event.text") : eventArg(event));

/**
 * Full-jitter exponential backoff before retry `n` (1-based), in ms. Random
 * values are drawn here, inside a call, never at module load (workerd forbids
 * that), and the engine never sees them.
 * @param {number} n
 * @param {number} baseMs
 * @param {number} capMs
 */
export function jitteredBackoff(n, baseMs = 2, capMs = 200) {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(n, 16));
  return Math.random() * ceiling;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long a call holding a process's lane may go without finishing before the calls queued behind it stop waiting (ms). */
export const DEFAULT_LANE_STALL_MS = 2_000;

// Lanes: the calls to `apply` for one process through one store, in this
// isolate, run one at a time, in arrival order. Racing copies in one isolate
// would otherwise all load the same version, all reduce, and all but one lose
// the compare-and-set, back off and load again: a hot process under retries
// spends its store round trips on losers. In a lane the next call starts when
// the previous one is done, and it starts from what that call read or wrote,
// so an applied event costs one commit and no load. The compare-and-set is
// still what makes a write safe: other isolates, processes and threads are not
// in the lane, and a guess they made stale loses it and loads as before.
// An answer that writes nothing is read from the store, not given from the
// guess, with one exception: a duplicate, when the guess was read or written
// after the call arrived. The store then held that state at an instant within
// the call, so the answer (the first response, and the state, revision and
// version of that instant) is one the call could have had from a read of its
// own. An ignored, rejected or conflicting event is always read again: a write
// from elsewhere since the guess could make it apply.
//
// A lane exists while calls are in it. A call that holds it for more than
// `laneStallMs` (a store that hangs, or a request cancelled while it waited
// for its turn) lets the calls behind it go on their own, racing as without
// lanes, so one stuck call never holds up the others for long. Each waiting
// call watches the clock with a timer of its own (a timer belongs to the
// request that set it in Workers) and every arriving call checks it too.
/** @type {WeakMap<object, Map<string, Lane>>} */
const lanes = new WeakMap();

/** Orders, in this isolate, the arrival of each call and the start of each store call. */
let ticks = 0;

/**
 * The most calls one commit takes: the one holding the lane and those queued behind it. Kept
 * small because a store's one commit grows with it: D1 counts each statement of a batch against
 * a Worker's queries per request (50 on the free plan), and 8 log rows, the changed chunks and the
 * row stay well under that.
 */
const MAX_GROUP = 8;

/**
 * Where a try starts: the lane's guess when there is one (what the call before read or wrote; no
 * store call), else a load. `seen` is the tick at which the store call behind it started.
 * @param {any} store
 * @param {string} processId
 * @param {{ loaded: { snapshot: any, version: any } | null, seen: number } | null} guess
 */
async function startTry(store, processId, guess) {
  if (guess !== null) return { loaded: guess.loaded, seen: guess.seen, guessed: true };
  const seen = ++ticks;
  return { loaded: await store.load(processId), seen, guessed: false };
}

/**
 * Whether an outcome that writes nothing may be answered from where the try started: always from
 * a load; from a guess, only a duplicate, and only when the store call behind the guess started
 * after the call arrived (see above). Otherwise the try reads the store and reduces again.
 * @param {{ seen: number, guessed: boolean }} start
 * @param {import("./index.d.ts").Outcome} out
 * @param {number} arrived the tick at which the call arrived
 */
const answerable = (start, out, arrived) => !start.guessed || (out.status === "duplicate" && start.seen > arrived);

/**
 * One call to `apply`, as a lane sees it.
 * @typedef {{ machine: import("./index.d.ts").MachineLike, event: import("./index.d.ts").Event, text: string, options: import("./index.d.ts").ApplyOptions, arrived: number }} Call
 */
/**
 * What a call taken into another's group gets instead of its turn.
 * @typedef {{ outcome: import("./index.d.ts").AppliedOutcome } | { error: unknown }} Settled
 */

class Lane {
  /**
   * @param {Map<string, Lane>} byId
   * @param {string} processId
   * @param {number} stallMs
   */
  constructor(byId, processId, stallMs) {
    this.byId = byId;
    this.processId = processId;
    this.stallMs = stallMs;
    /** @type {object | null} the call holding the lane */
    this.holder = null;
    this.heldAt = 0;
    /** @type {{ turn: object, call: Call, go: (result: boolean | Settled) => void }[]} */
    this.queue = [];
    /** @type {Set<{ go: (result: boolean | Settled) => void }>} calls the holder took into its group, not yet settled */
    this.taken = new Set();
    /**
     * What the last call read or wrote, or null when unknown: `{ loaded, seen }`, `loaded` null for no
     * such process, `seen` the tick at which the store call that read or wrote it started.
     * @type {{ loaded: { snapshot: any, version: any } | null, seen: number } | null}
     */
    this.known = null;
  }

  /** @param {object} turn */
  hold(turn) {
    this.holder = turn;
    this.heldAt = Date.now();
  }

  /** How long the holder may still take (ms); 0 or less: it stalled. */
  left() {
    return this.heldAt + this.stallMs - Date.now();
  }

  /**
   * The holder took too long: the calls queued behind it, and those it took into its group, go on
   * their own, and the lane is gone. (Should the group's commit land after all, a call that went
   * alone finds its event in the ledger, or its own commit makes the group's lose.)
   */
  stalled() {
    this.holder = null;
    if (this.byId.get(this.processId) === this) this.byId.delete(this.processId);
    for (const w of this.queue.splice(0)) w.go(false);
    for (const t of this.taken) t.go(false);
    this.taken.clear();
  }

  /** @param {object} turn */
  leave(turn) {
    if (this.holder !== turn) return; // it stalled: the others went on already
    const next = this.queue.shift();
    if (next) {
      this.hold(next.turn);
      next.go(true);
      return;
    }
    this.holder = null;
    if (this.byId.get(this.processId) === this) this.byId.delete(this.processId);
  }
}

/**
 * Wait for this call's turn in the process's lane, or for its outcome when the call holding the
 * lane takes it into its group.
 * @param {object} store
 * @param {string} processId
 * @param {number} stallMs
 * @param {Call} call
 * @returns {Promise<{ lane: Lane, turn: object, held: boolean, settled?: Settled }>} `held` false: the
 *   lane stalled, go on alone (or `settled`: done by another call)
 */
async function enterLane(store, processId, stallMs, call) {
  let byId = lanes.get(store);
  if (!byId) lanes.set(store, (byId = new Map()));
  const turn = {};
  // A lane in the map is always held (it goes when its last call leaves or it stalls).
  const current = byId.get(processId);
  if (current === undefined || current.left() <= 0) {
    current?.stalled();
    const lane = new Lane(byId, processId, stallMs);
    byId.set(processId, lane);
    lane.hold(turn);
    return { lane, turn, held: true };
  }
  const waiting = current;
  /** @type {boolean | Settled} */
  const result = await new Promise((resolve) => {
    let timer;
    const watch = () => {
      const left = waiting.left();
      if (left <= 0) waiting.stalled();
      else timer = setTimeout(watch, left + 1);
    };
    waiting.queue.push({
      turn,
      call,
      go: (result) => {
        clearTimeout(timer);
        resolve(result);
      },
    });
    timer = setTimeout(watch, Math.max(waiting.left(), 0) + 1);
  });
  if (typeof result === "boolean") return { lane: waiting, turn, held: result };
  return { lane: waiting, turn, held: false, settled: result };
}

/**
 * Apply one event to one process, exactly once in effect.
 *
 * load -> `machine.reduce(snapshot, event, now, processId)` -> if `changed`,
 * `store.commit(processId, version, outcome, { event, now })`; on a conflict,
 * reload and reduce again (bounded, with jittered backoff): a concurrent copy
 * of the same event is then found in the ledger and comes back as a
 * `duplicate`. A duplicate, conflict, ignored or rejected event costs at most
 * one read and no write.
 *
 * Calls for one process through one store wait for each other in this
 * isolate (a lane, see above; `lane: false` turns it off): a call that waited
 * commits from what the previous one left, without a load, and a duplicate
 * that waited answers from it when it was read or written after the call
 * arrived.
 *
 * ```js
 * const out = await apply(store, machine, "order-42", { id: key, type: "PAY", payload });
 * out.status;   // "applied" | "duplicate" | "conflict" | "ignored" | "rejected"
 * out.version;  // the store's version after this call (null if the process does not exist)
 * ```
 *
 * @param {import("./index.d.ts").Store} store
 * @param {import("./index.d.ts").MachineLike} machine
 * @param {string} processId
 * @param {import("./index.d.ts").Event} event
 * @param {import("./index.d.ts").ApplyOptions} [options]
 * @returns {Promise<import("./index.d.ts").AppliedOutcome>}
 * @throws {ContentionError} when every try lost the compare-and-set
 */
export async function apply(store, machine, processId, event, options = {}) {
  storeArg(store);
  machineArg(machine);
  processIdArg(processId);
  const text = reducedText(event);
  applyOptionsArg(options);
  const arrived = ++ticks;
  if (options.lane === false || store.serial === true) return applyLoop(store, machine, processId, event, text, options, null, arrived);
  /** @type {Call} */
  const call = { machine, event, text, options, arrived };
  const { lane, turn, held, settled } = await enterLane(store, processId, options.laneStallMs ?? DEFAULT_LANE_STALL_MS, call);
  if (settled) {
    if ("error" in settled) throw settled.error;
    return settled.outcome;
  }
  if (!held) return applyLoop(store, machine, processId, event, text, options, null, arrived);
  try {
    const taken = typeof store.commitMany === "function" ? takeGroup(lane, machine) : [];
    if (taken.length === 0) return await applyLoop(store, machine, processId, event, text, options, lane, arrived);
    return await applyGroup(store, processId, lane, call, taken);
  } finally {
    lane.leave(turn);
  }
}

/**
 * The calls queued behind the holder that its commit can take along: the first ones in the
 * queue, in order, while they reduce with the same machine (at most MAX_GROUP in all).
 * @param {Lane} lane
 * @param {import("./index.d.ts").MachineLike} machine
 */
function takeGroup(lane, machine) {
  const taken = [];
  while (taken.length < MAX_GROUP - 1 && lane.queue.length > 0 && lane.queue[0].call.machine === machine) {
    const t = /** @type {(typeof lane.queue)[number]} */ (lane.queue.shift());
    lane.taken.add(t);
    taken.push(t);
  }
  return taken;
}

/**
 * The holder of a lane and the calls it took from the queue, with one commit: each event reduced
 * in turn from the snapshot the one before it left, and the changed outcomes written together by
 * `store.commitMany`, whose compare-and-set on the first one's version vouches for the whole chain,
 * answers that write nothing included (each call is then as if applied, in its order, at that
 * commit, after every one of them arrived). When nothing in the chain writes, the answers obey the
 * lane's rule for answers that write nothing. When the compare-and-set loses, or the store throws
 * (one event over a store's limit must not fail the others, and a commit whose answer was lost may
 * have landed: its events are then duplicates), each call goes again alone, in order.
 * @param {object} store
 * @param {string} processId
 * @param {Lane} lane
 * @param {Call} holder
 * @param {{ call: Call, go: (result: Settled) => void }[]} taken
 * @returns {Promise<import("./index.d.ts").AppliedOutcome>} the holder's outcome
 */
async function applyGroup(store, processId, lane, holder, taken) {
  const calls = [holder, ...taken.map((t) => t.call)];
  /** @type {Settled[] | null} */
  let settled;
  let lost = false;
  try {
    settled = await commitGroup(store, processId, lane, calls);
    lost = settled === null;
  } catch {
    lane.known = null;
    settled = null;
  }
  if (settled === null) {
    // Each call again alone, in order, from a fresh load.
    settled = [];
    for (const c of calls) {
      if (lost && c.options.onConflict) c.options.onConflict({ processId, event: c.event, attempt: 1 });
      try {
        settled.push({ outcome: await applyLoop(store, c.machine, processId, c.event, c.text, c.options, lane, c.arrived) });
      } catch (error) {
        settled.push({ error });
      }
    }
  }
  taken.forEach((t, i) => {
    lane.taken.delete(t);
    t.go(/** @type {Settled} */ (settled[i + 1]));
  });
  const own = /** @type {Settled} */ (settled[0]);
  if ("error" in own) throw own.error;
  return own.outcome;
}

/**
 * One try of a group (see applyGroup): each call's settled outcome, or null when the commit lost its
 * compare-and-set.
 * @param {any} store
 * @param {string} processId
 * @param {Lane} lane
 * @param {Call[]} calls
 * @returns {Promise<Settled[] | null>}
 */
async function commitGroup(store, processId, lane, calls) {
  let guess = lane.known;
  lane.known = null;
  for (;;) {
    const start = await startTry(store, processId, guess);
    const base = start.loaded;
    guess = null;
    let snapshot = base ? base.snapshot : null;
    /** @type {Settled[]} */
    const settled = [];
    const steps = [];
    for (const c of calls) {
      try {
        const now = clockArg(c.options.now, "options.now");
        const out = c.machine.reduce(snapshot, c.text, now, processId);
        if (out.changed) {
          snapshot = out.snapshot;
          steps.push({ outcome: out, extras: { event: c.event, now } });
        }
        settled.push({ outcome: out });
      } catch (error) {
        settled.push({ error });
      }
    }
    /** @param {unknown} version */
    const done = (version) => {
      for (const r of settled) {
        if ("outcome" in r) {
          r.outcome.version = version;
          r.outcome.attempts = 1;
        }
      }
      return settled;
    };
    if (steps.length === 0) {
      if (!settled.every((r, i) => "error" in r || answerable(start, r.outcome, calls[i].arrived))) continue;
      lane.known = { loaded: base, seen: start.seen };
      return done(base ? base.version : null);
    }
    const committing = ++ticks;
    const res = await store.commitMany(processId, base ? base.version : null, steps);
    if (!res.ok) return null;
    lane.known = { loaded: { snapshot, version: res.version }, seen: committing };
    return done(res.version);
  }
}

/**
 * The host loop, in a lane (`lane`) or on its own (null).
 * @param {import("./index.d.ts").Store} store
 * @param {import("./index.d.ts").MachineLike} machine
 * @param {string} processId
 * @param {import("./index.d.ts").Event} event
 * @param {string} text what the machine reduces for it
 * @param {import("./index.d.ts").ApplyOptions} options
 * @param {Lane | null} lane
 * @param {number} arrived the tick at which the call arrived
 */
async function applyLoop(store, machine, processId, event, text, options, lane, arrived) {
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  const backoff = options.backoff ?? jitteredBackoff;
  // What the previous call in the lane read or wrote; unknown again unless this call succeeds.
  let guess = lane ? lane.known : null;
  if (lane) lane.known = null;
  for (let attempt = 0; ; attempt++) {
    const start = await startTry(store, processId, guess);
    const loaded = start.loaded;
    guess = null;
    const now = clockArg(options.now, "options.now");
    const out = machine.reduce(loaded ? loaded.snapshot : null, text, now, processId);
    if (!out.changed) {
      // Nothing to write, so nothing would check the guess: read the store instead (not a try).
      if (!answerable(start, out, arrived)) {
        attempt--;
        continue;
      }
      out.version = loaded ? loaded.version : null;
      out.attempts = attempt + 1;
      if (lane) lane.known = { loaded, seen: start.seen };
      return out;
    }
    const expected = loaded ? loaded.version : null;
    const committing = ++ticks;
    const res = await store.commit(processId, expected, out, { event, now });
    if (res.ok) {
      out.version = res.version;
      out.attempts = attempt + 1;
      if (lane) lane.known = { loaded: { snapshot: out.snapshot, version: res.version }, seen: committing };
      return out;
    }
    options.onConflict?.({ processId, event, attempt: attempt + 1 });
    if (attempt >= maxRetries) throw new ContentionError(processId, attempt + 1);
    await sleep(backoff(attempt + 1));
  }
}

/**
 * Read a process as a plain object (`machine.inspect`) plus its store version,
 * or `null` when it does not exist.
 * @param {import("./index.d.ts").Store} store
 * @param {import("./index.d.ts").MachineLike} machine
 * @param {string} processId
 */
export async function inspect(store, machine, processId) {
  storeArg(store);
  machineArg(machine);
  processIdArg(processId);
  const loaded = await store.load(processId);
  if (!loaded) return null;
  return { ...machine.inspect(loaded.snapshot), version: loaded.version };
}
