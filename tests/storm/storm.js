// The storm: the scenarios of the reliability simulator (tests/sim.rs) run
// against the real stores, over HTTP, with real concurrency. Runtime-neutral:
// the runners (workerd.test.mjs for D1 and Durable Objects on Miniflare,
// denokv.test.js for Deno KV behind the Deno example server) give it a client,
// the fake gateways' books and the engine; everything else is here.
//
// One storm, per store:
//
// - N processes (orders, www/machines/order-robust.json; a quarter of them the
//   "-robust-nokeys" variant whose gateway has no idempotency keys, so a lost
//   answer is verified). Their event ids collide on purpose (every process
//   has evt-1, evt-2, ...): ledgers are per process. One more, large order
//   (320 small payments) has a snapshot over several chunks of every store.
// - Each order's payments (distinct payment ids) are a random split of its
//   total; a charged order's payments add up to exactly 100 so EVERY one of
//   them is needed to reach `charging`, whatever the arrival order. Some
//   orders also get the same payment again under a new event id (the machine's
//   set guard applies one of the two, the other is not accepted), and some get
//   an impostor: an applied event's id reused with another payload, sent after
//   the original was answered (it must get 422 `id_conflict` and never apply).
// - Every event is delivered 1-5 times, the copies start at random times (so
//   they race and arrive out of order), many requests are in flight at once,
//   and some requests are aborted by the client after a random delay (the
//   response is lost whether or not the server committed); every copy's
//   sender retries with the same Idempotency-Key until it gets an answer.
// - The gateway is told to drop the response of, or answer too late to, the
//   first one or two charge calls of some orders (it charged anyway).
// - Once a charged order is paid: SHIP (1-5 copies), a late payment (not
//   accepted any more) and a late replay of an early payment (the first
//   answer, byte for byte). Uncharged orders get the late payment (applied)
//   and a SHIP that is not accepted.
//
// Then, for each process, from the store (GET /processes/:id and its event
// log): every distinct event applied exactly once or (when the machine says
// so) never; revisions 1..n with no gap; every answer for an applied event is
// the first one byte for byte; the stored process equals a clean single
// delivery of the logged events in log order, recomputed here with the wasm
// engine (the engine's own reports are rebuilt and matched to the stored
// ledger's fingerprints); every effect finished; one charge per charged order
// at the gateway and none for the others. `lost` and `doubled` must be 0.
//
// Seeded: `STORM_SEED=<n>` replays a plan (the interleaving is real, so it
// is not replayed step by step); `STORM_SCALE=<k>` multiplies the processes.

// ---------------------------------------------------------------------------
// Seeded randomness

/** 32-bit hash of a string (FNV-1a, then a finaliser). */
export function hash32(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** mulberry32: small, fast, good enough to draw a plan. */
export class Rng {
  /** A stream named `label` of the run `seed` (independent of the order other streams are drawn in). */
  static of(seed, label) {
    return new Rng(hash32(`${seed}:${label}`));
  }

  constructor(state) {
    this.state = state >>> 0;
  }

  next() {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [lo, hi]. */
  int(lo, hi) {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p) {
    return this.next() < p;
  }

  pick(list) {
    return list[Math.floor(this.next() * list.length)];
  }
}

/** The run's seed: `STORM_SEED`, else a fresh one (printed, so a failure can be replayed). */
export function seedFrom(value) {
  if (value !== undefined && value !== "") {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new Error(`STORM_SEED must be an integer from 0 to 2^32-1, not ${value}`);
    return n;
  }
  return Math.floor(Math.random() * 0xffffffff);
}

/** `STORM_SCALE` (default 1). */
export function scaleFrom(value) {
  if (value === undefined || value === "") return 1;
  const n = Number(value);
  if (!(n > 0) || n > 1000) throw new Error(`STORM_SCALE must be a positive number, not ${value}`);
  return n;
}

// ---------------------------------------------------------------------------
// The plan

/** Processes per store at scale 1 (on 2 shared cores the default run of the three stores takes about half a minute). */
export const BASE_PROCESSES = 40;
/** Payments per order: 2 to this many. */
export const MAX_PAYMENTS = 6;
/** Payments of the one large order per storm (0.25 each: it stays unpaid). */
export const BULK_PAYMENTS = 320;
/** Copies of one event start within this many ms of the event's own start. */
export const SPREAD_MS = 200;
/** Probability that one try of a delivery is aborted by the client. */
export const ABORT_P = 0.2;
/** A retrying sender gives up (and that is a violation) after this many tries of one copy. */
export const MAX_SENDS = 60;
/** The examples' dispatcher timeout (examples/cloudflare and examples/deno: TIMEOUT_MS). */
export const DISPATCH_TIMEOUT_MS = 2_000;
/** A "timeout" gateway fault answers this late: after the dispatcher gave up. */
export const GATEWAY_LATE_MS = 2_500;

/** `n` positive integers adding up to `total`, in random order. */
function split(r, total, n) {
  const cuts = new Set();
  while (cuts.size < n - 1) cuts.add(r.int(1, total - 1));
  const points = [0, ...[...cuts].sort((a, b) => a - b), total];
  return points.slice(1).map((p, i) => p - points[i]);
}

/** The copies the network makes of one delivery: start times and which tries the client aborts (after how long). */
function copies(r, start, max = 5) {
  return Array.from({ length: r.int(1, max) }, () => ({
    at: start + r.int(0, SPREAD_MS),
    aborts: Array.from({ length: 3 }, () => (r.chance(ABORT_P) ? r.int(0, 40) : null)),
  }));
}

/**
 * Draw a storm.
 * @param {number} seed
 * @param {number} [scale]
 */
export function planStorm(seed, scale = 1) {
  const r = Rng.of(seed, "plan");
  const processes = [];
  const n = Math.max(1, Math.round(BASE_PROCESSES * scale));
  for (let i = 0; i < n; i++) {
    const nokeys = r.chance(0.25);
    const pid = `o${i + 1}${nokeys ? "-robust-nokeys" : ""}`;
    const charged = r.chance(0.7);
    const m = r.int(2, MAX_PAYMENTS);
    const total = charged ? 100 : r.int(40, 98);
    const start = r.int(0, 200);
    const pay = (id, paymentId, amount) => ({ id, type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });
    const events = split(r, total, m).map((amount, k) => ({
      ...pay(`evt-${k + 1}`, `pay-${k + 1}`, amount),
      role: "payment",
      copies: copies(r, start + r.int(0, 150)),
    }));
    // The same payment under a new event id: the set guard applies exactly one of the two.
    if (r.chance(0.3)) {
      const of = events[r.int(0, m - 1)];
      of.aliased = true;
      events.push({ ...pay(`evt-${m + 1}`, of.payload.paymentId, of.payload.amount), role: "alias", of: of.id, copies: copies(r, start + r.int(0, 150)) });
    }
    const plain = events.filter((e) => e.role === "payment" && !e.aliased);
    // An applied event's id reused with another payload, after the original was answered.
    let impostor = null;
    if (r.chance(0.3) && plain.length > 0) {
      const of = r.pick(plain);
      impostor = { ...pay(of.id, of.payload.paymentId, of.payload.amount + 7), role: "impostor", copies: copies(r, r.int(0, 100), 2) };
    }
    // Gateway faults for this order's first charge calls (never more than the retry policy absorbs).
    const faults = [];
    if (charged && r.chance(0.45)) {
      faults.push(r.pick(["drop", "timeout"]));
      if (r.chance(0.25)) faults.push(r.pick(["drop", "timeout"]));
    }
    // After the storm (a charged order: once it is paid).
    const late = [
      { id: "evt-ship", type: "SHIP", payload: { carrier: "post" }, role: "ship", copies: copies(r, r.int(0, 100), charged ? 5 : 1) },
      { ...pay("evt-late", "pay-late", 1), role: "late", copies: copies(r, r.int(0, 100), 2) },
    ];
    if (plain.length > 0) {
      const of = r.pick(plain);
      late.push({ id: of.id, type: of.type, payload: of.payload, role: "replay", copies: copies(r, r.int(0, 100), 1) });
    }
    processes.push({ pid, nokeys, charged, total, events, impostor, faults, late });
  }
  // One large order: many small payments, so that its snapshot spans several chunks of every store
  // (D1 and Deno KV cut at 16 KiB, Durable Objects at 32 Ki characters) and the stores' chunked writes
  // meet the same copies, aborts and retries. Its payments start over two seconds, up to 3 copies each.
  {
    const pay = (k) => ({ id: `evt-${k}`, type: "PAYMENT_PARTIAL", payload: { paymentId: `pay-${k}`, amount: 0.25 } });
    const events = Array.from({ length: BULK_PAYMENTS }, (_, k) => ({ ...pay(k + 1), role: "payment", copies: copies(r, r.int(0, 2_000), 3) }));
    const late = [
      { id: "evt-ship", type: "SHIP", payload: { carrier: "post" }, role: "ship", copies: copies(r, r.int(0, 100), 1) },
      { id: "evt-late", type: "PAYMENT_PARTIAL", payload: { paymentId: "pay-late", amount: 1 }, role: "late", copies: copies(r, r.int(0, 100), 2) },
      { ...pay(r.int(1, BULK_PAYMENTS)), role: "replay", copies: copies(r, r.int(0, 100), 1) },
    ];
    processes.push({ pid: "bulk-1", nokeys: false, charged: false, total: BULK_PAYMENTS * 0.25, events, impostor: null, faults: [], late });
  }
  return { seed, scale, processes };
}

// ---------------------------------------------------------------------------
// The outside world: gateway faults per order

/**
 * Make `gateway` (a FakeGateway) misbehave on the first charge calls of the
 * orders whose plan says so: the fault is queued right before the call that
 * takes it (FakeGateway takes its next fault synchronously when called).
 * A "timeout" answers after the dispatcher gave up; a "drop" loses the answer.
 * Either way the gateway charged.
 */
export function injectFaults(gateway, plan, totals) {
  const byPid = new Map(plan.processes.map((p) => [p.pid, p.faults]));
  const calls = new Map();
  const charge = gateway.charge.bind(gateway);
  gateway.timeoutMs = GATEWAY_LATE_MS;
  gateway.charge = (request, options = {}) => {
    const reference = String(request?.reference ?? options.idempotencyKey ?? "");
    const n = calls.get(reference) ?? 0;
    calls.set(reference, n + 1);
    const fault = byPid.get(reference.split("/")[0])?.[n];
    if (fault) {
      gateway.faults.unshift(fault);
      totals.faults++;
    }
    return charge(request, options);
  };
}

// ---------------------------------------------------------------------------
// Running

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** At most `n` at once. */
function limiter(n) {
  let active = 0;
  const waiting = [];
  return async (fn) => {
    if (active >= n) await new Promise((resolve) => waiting.push(resolve));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

export function newTotals() {
  return {
    processes: 0,
    events: 0,
    deliveries: 0,
    answers: 0,
    applied: 0,
    replays: 0,
    ignored: 0,
    conflictsRetried: 0,
    contention: 0,
    idConflicts: 0,
    aborts: 0,
    abortsCommitted: 0,
    serverErrors: 0,
    networkErrors: 0,
    charges: 0,
    ships: 0,
    gatewayCalls: 0,
    faults: 0,
    sweeps: 0,
    logRows: 0,
    engineRows: 0,
    lost: 0,
    doubled: 0,
    wrong: 0,
  };
}

/**
 * Run one storm against one store and check it.
 *
 * @param {{
 *   name: string,
 *   plan: ReturnType<typeof planStorm>,
 *   post: (path: string, key: string, body: string, init: { signal: AbortSignal, hint: number }) => Promise<Response>,
 *   get: (path: string) => Promise<Response>,
 *   base?: string,                     // path prefix of the store's API ("" for D1, "/do")
 *   gateways: { keys: object, nokeys: object },   // FakeGateway instances whose books are read
 *   machineFor: (pid: string) => { reduce: Function, inspect: Function, due: Function },
 *   sweep?: () => Promise<unknown>,    // what the host runs on a schedule (the Worker's cron), if anything
 *   inFlight?: number,
 *   settleMs?: number,
 *   log?: (line: string) => void,
 * }} config
 * @returns {Promise<{ totals: ReturnType<typeof newTotals>, violations: { kind: string, text: string }[], ms: number }>}
 */
export async function runStorm(config) {
  const started = Date.now();
  const { plan, base = "", gateways } = config;
  const totals = newTotals();
  const violations = [];
  const violate = (kind, text) => {
    violations.push({ kind, text });
    totals[kind]++;
  };
  injectFaults(gateways.keys, plan, totals);
  injectFaults(gateways.nokeys, plan, totals);
  const limit = limiter(config.inFlight ?? 32);
  const settleMs = (config.settleMs ?? 45_000) * Math.max(1, Math.sqrt(plan.scale));
  const deadline = started + settleMs + 30_000;

  /** Every answer, per process and event id: { role, copy, status, replayed, outcome, code, body, retried, afterAbort }. */
  const answers = new Map();
  const answersOf = (pid, id) => answers.get(`${pid} ${id}`) ?? [];

  /** One try of one delivery: the answer, or { aborted } / { network } when the client never saw one. */
  async function tryOnce(proc, ev, abortAfter, hint) {
    return limit(async () => {
      totals.deliveries++;
      const ac = new AbortController();
      const timer = abortAfter === null ? null : setTimeout(() => ac.abort(), abortAfter);
      try {
        const res = await config.post(`${base}/processes/${proc.pid}/events`, ev.id, JSON.stringify({ type: ev.type, payload: ev.payload }), {
          signal: ac.signal,
          hint,
        });
        const body = await res.text();
        return {
          status: res.status,
          replayed: res.headers.get("idempotency-replayed") === "true",
          outcome: res.headers.get("idem-outcome"),
          attempts: Number(res.headers.get("idem-attempts") ?? 1),
          body,
        };
      } catch (err) {
        if (ac.signal.aborted) return { aborted: true };
        return { network: String(err?.message ?? err) };
      } finally {
        if (timer !== null) clearTimeout(timer);
      }
    });
  }

  /** One copy of an event: sent (and re-sent with the same key) until it gets an answer. */
  async function deliver(proc, ev, c, k) {
    const r = Rng.of(plan.seed, `send ${proc.pid} ${ev.role} ${ev.id} ${k}`);
    await sleep(c.at);
    let lostBefore = false;
    for (let n = 0; n < MAX_SENDS; n++) {
      const res = await tryOnce(proc, ev, c.aborts[n] ?? null, r.int(0, 1 << 30));
      if (res.aborted || res.network) {
        if (res.aborted) totals.aborts++;
        else totals.networkErrors++;
        lostBefore = true;
        await sleep(r.int(2, 30));
        continue;
      }
      if (res.attempts > 1) totals.conflictsRetried += res.attempts - 1;
      let code = null;
      if (res.status >= 400) {
        try {
          code = JSON.parse(res.body).code ?? null;
        } catch {
          code = null;
        }
      }
      if (res.status === 409 && code === "contention") {
        // Every compare-and-set try lost: the API says to retry with the same key.
        totals.contention++;
        await sleep(r.int(5, 50) * (n + 1));
        continue;
      }
      if (res.status >= 500) {
        totals.serverErrors++;
        violate("wrong", `${proc.pid}: ${ev.role} ${ev.id} got ${res.status}: ${res.body.slice(0, 200)}`);
        await sleep(r.int(5, 50));
        continue;
      }
      totals.answers++;
      if (res.replayed) totals.replays++;
      if (res.status === 409 && code === "event_not_accepted") totals.ignored++;
      if (res.status === 422 && code === "id_conflict") totals.idConflicts++;
      const a = { role: ev.role, copy: k, ...res, code, afterLoss: lostBefore };
      const key = `${proc.pid} ${ev.id}`;
      if (!answers.has(key)) answers.set(key, []);
      answers.get(key).push(a);
      return a;
    }
    violate("lost", `${proc.pid}: ${ev.role} ${ev.id} copy ${k} got no answer in ${MAX_SENDS} tries`);
    return null;
  }

  const deliverAll = (proc, ev) => Promise.all(ev.copies.map((c, k) => deliver(proc, ev, c, k)));

  async function view(pid) {
    const res = await config.get(`${base}/processes/${pid}`);
    if (res.status === 404) {
      await res.body?.cancel();
      return null;
    }
    if (res.status !== 200) throw new Error(`GET ${pid}: ${res.status} ${await res.text()}`);
    return res.json();
  }

  // The host's schedule (the Worker's cron, every minute in production): here it runs every
  // 0.2-0.8 s through the whole storm, so its dispatchers race those that requests started.
  let storming = true;
  const sweeper = (async () => {
    if (!config.sweep) return;
    const r = Rng.of(plan.seed, "sweep");
    while (storming) {
      await sleep(r.int(200, 800));
      totals.sweeps++;
      await config.sweep();
    }
  })();

  /** Poll a process until `done(view)` holds; null when the deadline passed. */
  async function until(pid, done) {
    while (Date.now() < deadline) {
      const v = await view(pid);
      if (v && done(v)) return v;
      await sleep(150);
    }
    return null;
  }

  const isPaid = (v) => v.value === "paid" || v.value === "shipped";
  const settled = (v) => v.outbox.every((e) => e.state === "succeeded" || e.state === "failed");

  async function runProcess(proc) {
    // The storm: every payment (and alias), the impostor once its original is answered.
    const storm = proc.events.map((ev) => deliverAll(proc, ev));
    if (proc.impostor) {
      const original = storm[proc.events.findIndex((e) => e.id === proc.impostor.id)];
      storm.push(original.then(() => deliverAll(proc, proc.impostor)));
    }
    await Promise.all(storm);
    if (proc.charged) {
      const v = await until(proc.pid, (x) => isPaid(x) || x.value === "review" || x.value === "cancelled");
      if (!v || !isPaid(v)) {
        violate("lost", `${proc.pid}: every payment answered but the order is not paid (${JSON.stringify(v?.value ?? null)}; outbox ${JSON.stringify(v?.outbox ?? null)})`);
        return;
      }
    }
    await Promise.all(proc.late.map((ev) => deliverAll(proc, ev)));
    const v = await until(proc.pid, (x) => settled(x) && (!proc.charged || x.value === "shipped"));
    if (!v) violate("lost", `${proc.pid}: did not settle within ${Math.round(settleMs / 1000)} s`);
  }

  await Promise.all(plan.processes.map((p) => runProcess(p)));
  storming = false;
  await sweeper;
  const stormMs = Date.now() - started;

  // ---- checks, from the store ----
  for (const proc of plan.processes) {
    totals.processes++;
    await checkProcess(proc);
  }
  checkGateways();
  for (const g of [gateways.keys, gateways.nokeys]) totals.gatewayCalls += g.requests;
  return { totals, violations, ms: Date.now() - started, stormMs };

  async function eventLog(pid) {
    const rows = [];
    let after = 0;
    for (;;) {
      const res = await config.get(`${base}/processes/${pid}/events?after=${after}&limit=1000`);
      if (res.status !== 200) throw new Error(`GET ${pid} events: ${res.status} ${await res.text()}`);
      const page = await res.json();
      rows.push(...page.events);
      if (page.next === null || page.events.length === 0) return rows;
      after = page.next;
    }
  }

  async function checkProcess(proc) {
    const { pid } = proc;
    const stored = await view(pid);
    if (!stored) {
      violate("lost", `${pid}: the process does not exist`);
      return;
    }
    const log = await eventLog(pid);
    totals.logRows += log.length;
    totals.engineRows += log.filter((r) => r.type?.startsWith("idem.")).length;

    // Revisions 1..n, no gap, no repeat; the process is at n.
    log.forEach((row, i) => {
      if (row.revision !== i + 1) violate(row.revision < i + 1 ? "doubled" : "lost", `${pid}: log row ${i + 1} has revision ${row.revision}`);
    });
    if (stored.revision !== log.length) violate("lost", `${pid}: at revision ${stored.revision} with ${log.length} log rows`);
    const seen = new Map();
    for (const row of log) {
      if (seen.has(row.eventId)) violate("doubled", `${pid}: ${row.eventId} logged at revisions ${seen.get(row.eventId)} and ${row.revision}`);
      seen.set(row.eventId, row.revision);
    }

    // Every distinct event of the plan: applied exactly once, or (the machine decides) never; its answers agree.
    const planned = new Map();
    for (const ev of [...proc.events, ...proc.late]) if (ev.role !== "replay") planned.set(ev.id, ev);
    const alias = proc.events.find((e) => e.role === "alias");
    const expected = (ev) => {
      if (ev.role === "payment" && ev.aliased) return "one of two";
      if (ev.role === "alias") return "one of two";
      if (ev.role === "ship") return proc.charged ? "applied" : "ignored";
      if (ev.role === "late") return proc.charged ? "ignored" : "applied";
      return "applied";
    };
    for (const ev of planned.values()) {
      const mine = answersOf(pid, ev.id).filter((a) => a.role === ev.role || (ev.role === "payment" && a.role === "replay"));
      const inLog = seen.has(ev.id);
      const fresh = mine.filter((a) => a.outcome === "applied");
      const ok = mine.filter((a) => a.status === 200 || a.status === 201);
      const notAccepted = mine.filter((a) => a.status === 409 && a.code === "event_not_accepted");
      const other = mine.filter((a) => !ok.includes(a) && !notAccepted.includes(a));
      const copies = ev.copies.length + (ev.role === "payment" ? proc.late.filter((l) => l.role === "replay" && l.id === ev.id).reduce((n, l) => n + l.copies.length, 0) : 0);
      if (mine.length !== copies) violate("lost", `${pid}: ${ev.id} (${ev.role}) has ${mine.length} answers for ${copies} copies`);
      if (inLog && fresh.length === 0) totals.abortsCommitted++; // applied by a request whose answer was lost
      if (fresh.length > 1) violate("doubled", `${pid}: ${ev.id} answered "applied" (not a replay) ${fresh.length} times`);
      if (other.length > 0) violate("wrong", `${pid}: ${ev.id} (${ev.role}) answered ${other.map((a) => `${a.status} ${a.code}`).join(", ")}`);
      if (ok.length > 0 && !inLog) violate("lost", `${pid}: ${ev.id} answered ${ok[0].status} but is not in the event log`);
      if (inLog && notAccepted.length > 0) violate("wrong", `${pid}: ${ev.id} is in the log but was also answered 409 event_not_accepted`);
      if (ok.length > 0 && new Set(ok.map((a) => `${a.status} ${a.body}`)).size > 1) {
        violate("wrong", `${pid}: ${ev.id} got different answers: ${[...new Set(ok.map((a) => `${a.status} ${a.body}`))].join(" | ")}`);
      }
      if (ok.length > 0 && inLog) {
        const rev = JSON.parse(ok[0].body).revision;
        if (rev !== seen.get(ev.id)) violate("wrong", `${pid}: ${ev.id} answered revision ${rev}, logged at ${seen.get(ev.id)}`);
      }
      const want = expected(ev);
      if (want === "applied" && !inLog) violate("lost", `${pid}: ${ev.id} (${ev.role}) was never applied`);
      if (want === "ignored" && inLog) violate("wrong", `${pid}: ${ev.id} (${ev.role}) was applied; the machine does not accept it in this state`);
    }
    if (alias) {
      const pair = [alias.of, alias.id].filter((id) => seen.has(id));
      if (pair.length === 0) violate("lost", `${pid}: neither ${alias.of} nor its alias ${alias.id} was applied`);
      if (pair.length === 2) violate("doubled", `${pid}: payment ${alias.payload.paymentId} applied twice (${pair.join(", ")})`);
    }
    for (const r of proc.late.filter((l) => l.role === "replay")) {
      const late = answersOf(pid, r.id).filter((a) => a.role === "replay");
      for (const a of late) if (!a.replayed) violate("wrong", `${pid}: the late copy of ${r.id} was not answered as a replay (${a.status} ${a.outcome})`);
    }
    if (proc.impostor) {
      const im = answersOf(pid, proc.impostor.id).filter((a) => a.role === "impostor");
      for (const a of im) if (!(a.status === 422 && a.code === "id_conflict")) violate("wrong", `${pid}: impostor ${proc.impostor.id} answered ${a.status} ${a.code}`);
    }
    // No event in the log that no sender sent.
    for (const row of log) {
      if (!row.type?.startsWith("idem.") && !planned.has(row.eventId)) violate("wrong", `${pid}: log holds ${row.eventId} (${row.type}), which nobody sent`);
    }

    // The stored process equals a clean single delivery of the logged events, in log order.
    replay(proc, stored, log);

    // Business facts and effects.
    const ctx = stored.context;
    const want = proc.total + (proc.charged ? 0 : 1);
    if (ctx.paid !== want) violate(ctx.paid > want ? "doubled" : "lost", `${pid}: paid ${ctx.paid}, the distinct payments add up to ${want}`);
    if (new Set(ctx.payments).size !== ctx.payments.length) violate("doubled", `${pid}: payments ${JSON.stringify(ctx.payments)} hold a duplicate`);
    const gw = proc.nokeys ? gateways.nokeys : gateways.keys;
    const mineCharges = [...gw.charges.values()].filter((c) => String(c.reference).startsWith(`${pid}/`));
    const chargeFx = stored.outbox.filter((e) => e.type === "charge");
    const shipFx = stored.outbox.filter((e) => e.type === "ship");
    totals.ships += shipFx.filter((e) => e.state === "succeeded").length;
    for (const e of stored.outbox) if (e.state !== "succeeded") violate("lost", `${pid}: effect ${e.key} (${e.type}) ended ${e.state}`);
    if (proc.charged) {
      if (stored.value !== "shipped") violate("lost", `${pid}: ends in ${JSON.stringify(stored.value)}, not "shipped"`);
      if (chargeFx.length !== 1 || shipFx.length !== 1) violate(chargeFx.length + shipFx.length > 2 ? "doubled" : "lost", `${pid}: outbox has ${chargeFx.length} charge(s), ${shipFx.length} ship(s)`);
      if (mineCharges.length !== 1) violate(mineCharges.length > 1 ? "doubled" : "lost", `${pid}: the gateway holds ${mineCharges.length} charges for this order`);
      const fx = chargeFx[0];
      if (fx && mineCharges.length === 1) {
        const c = mineCharges[0];
        if (c.reference !== fx.key || gw.chargeCount(fx.key) !== 1) violate("doubled", `${pid}: charge ${c.id} has reference ${c.reference}, the effect key is ${fx.key}`);
        if (c.amount !== 100) violate("wrong", `${pid}: charged ${c.amount}, not 100`);
        if (fx.result?.chargeId !== c.id) violate("wrong", `${pid}: the effect recorded charge ${fx.result?.chargeId}, the gateway made ${c.id}`);
      }
    } else {
      if (JSON.stringify(stored.value) !== JSON.stringify({ payment: "collecting" })) violate("wrong", `${pid}: ends in ${JSON.stringify(stored.value)}`);
      if (mineCharges.length !== 0 || stored.outbox.length !== 0) violate("doubled", `${pid}: ${mineCharges.length} charge(s) at the gateway and ${stored.outbox.length} effect(s) for an order never paid in full`);
    }
  }

  /**
   * Recompute the process from its log with the engine: each row's event (a
   * client's from the plan; the engine's own reports rebuilt, choosing the
   * candidate whose ledger fingerprint is the stored one) reduced at the row's
   * time must be applied at the row's revision with the row's response, and
   * the result must equal the stored process.
   */
  function replay(proc, stored, log) {
    const { pid } = proc;
    const m = config.machineFor(pid);
    const ledger = new Map(stored.ledger.map((e) => [e.id, e]));
    const outbox = new Map(stored.outbox.map((e) => [e.key, e]));
    const planned = new Map([...proc.events, ...proc.late].filter((e) => e.role !== "replay").map((e) => [e.id, e]));
    let snap = null;
    for (const row of log) {
      const engine = row.type?.startsWith("idem.");
      const cands = engine ? engineCandidates(m, snap, row, outbox) : planned.has(row.eventId) ? [strip(planned.get(row.eventId))] : [];
      const ledgerId = engine ? `idem:${row.eventId}` : row.eventId;
      const want = ledger.get(ledgerId);
      let chosen = null;
      for (const ev of cands) {
        const out = m.reduce(snap, ev, row.receivedAt, pid);
        if (out.status !== "applied" || !out.changed) continue;
        const entry = m.inspect(out.snapshot).ledger.find((e) => e.id === ledgerId);
        if (!want || entry?.fp === want.fp) {
          chosen = out;
          break;
        }
      }
      if (!chosen) {
        violate("wrong", `${pid}: log row ${row.revision} (${row.eventId}, ${row.type}): no ${engine ? "engine report" : "sent event"} reproduces it from the previous revision (${cands.length} candidate(s))`);
        return;
      }
      if (chosen.revision !== row.revision) violate("wrong", `${pid}: ${row.eventId} applies at revision ${chosen.revision} in a clean delivery, ${row.revision} in the log`);
      if (canonical(chosen.response ?? null) !== canonical(row.response ?? null)) {
        violate("wrong", `${pid}: ${row.eventId} responded ${canonical(row.response)}, a clean delivery ${canonical(chosen.response)}`);
      }
      snap = chosen.snapshot;
    }
    const clean = snap === null ? null : m.inspect(snap);
    const { processId: _p, version: _v, ...have } = stored;
    if (canonical(clean) !== canonical(have)) {
      violate("wrong", `${pid}: the stored process differs from a clean delivery of its log:\n  stored ${canonical(have).slice(0, 600)}\n  clean  ${canonical(clean).slice(0, 600)}`);
    }
  }

  function checkGateways() {
    for (const [name, g] of Object.entries(gateways)) {
      totals.charges += g.charges.size;
      const refs = new Map();
      for (const c of g.charges.values()) refs.set(c.reference, (refs.get(c.reference) ?? 0) + 1);
      for (const [ref, n] of refs) if (n > 1) violate("doubled", `gateway ${name}: ${n} charges for ${ref}`);
      const known = new Set(plan.processes.map((p) => p.pid));
      for (const ref of refs.keys()) if (!known.has(String(ref).split("/")[0])) violate("wrong", `gateway ${name}: a charge for ${ref}, no such order`);
    }
  }
}

/** An event as sent (no plan fields). */
function strip(ev) {
  return { id: ev.id, type: ev.type, payload: ev.payload };
}

/**
 * The events the dispatcher may have reported for an engine log row: what the
 * engine listed as due then (attempt `started`, lease `expire` reports,
 * timers), and the results the dispatcher builds (dispatch.js), with the
 * answers the gateway can give (the effect's recorded result; a timeout or a
 * lost answer as the dispatcher describes them).
 */
function engineCandidates(m, snap, row, outbox) {
  const out = [];
  if (snap !== null) {
    for (const item of m.due(snap, row.receivedAt)) {
      for (const ev of [item.started, item.report, item.event]) if (ev && ev.id === row.eventId) out.push(ev);
    }
  }
  const match = /^(.*)#(\d+):(started|result|verify)$/.exec(row.eventId);
  if (!match) return out;
  const key = match[1];
  const attempt = Number(match[2]);
  if (row.type === "idem.effect.started") out.push({ id: row.eventId, type: row.type, payload: { key, attempt } });
  const fx = outbox.get(key);
  const errors = [
    { message: `no answer within ${DISPATCH_TIMEOUT_MS} ms`, code: "timeout" },
    { message: "status 504", code: "http_error" },
    ...(fx?.error !== undefined ? [fx.error] : []),
  ];
  const ev = (payload) => ({ id: row.eventId, type: row.type, payload });
  switch (row.type) {
    case "idem.effect.succeeded":
      out.push(ev({ key, attempt, result: fx?.result ?? null }));
      break;
    case "idem.effect.unknown":
      for (const error of errors) out.push(ev({ key, attempt, error }));
      break;
    case "idem.effect.failed":
      for (const retryable of [true, false]) for (const error of errors) out.push(ev({ key, attempt, retryable, error }));
      break;
    case "idem.effect.verified":
      out.push(ev({ key, attempt, exists: true, result: fx?.result ?? null }));
      out.push(ev({ key, attempt, exists: false }));
      break;
  }
  return out;
}

/** JSON with sorted keys (to compare values whatever their key order). */
export function canonical(value) {
  return JSON.stringify(value, (_k, v) =>
    v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
  );
}

/** The totals line of one store. */
export function totalsLine(name, plan, result) {
  const t = result.totals;
  return [
    `storm ${name}: seed=${plan.seed} scale=${plan.scale} processes=${t.processes} events=${countEvents(plan)}`,
    `deliveries=${t.deliveries} duplicates_absorbed=${t.replays} not_accepted=${t.ignored}`,
    `conflicts_retried=${t.conflictsRetried} contention_409=${t.contention} id_conflict_422=${t.idConflicts}`,
    `aborts=${t.aborts} (applied but answer lost: ${t.abortsCommitted})`,
    `effects=${t.charges + t.ships} (charges ${t.charges}, ships ${t.ships}; gateway calls ${t.gatewayCalls}, faults ${t.faults})`,
    `log_rows=${t.logRows} (engine ${t.engineRows})${t.sweeps ? ` cron_runs=${t.sweeps}` : ""} server_errors=${t.serverErrors}`,
    `lost=${t.lost} doubled=${t.doubled} wrong=${t.wrong} in ${(result.ms / 1000).toFixed(1)}s`,
  ].join(" ");
}

/** Distinct events of a plan (per process; impostors and late replays are copies, not events). */
export function countEvents(plan) {
  return plan.processes.reduce((n, p) => n + p.events.length + p.late.filter((l) => l.role !== "replay").length, 0);
}

/** Violations as lines (at most `max`). */
export function violationLines(result, max = 40) {
  const lines = result.violations.slice(0, max).map((v) => `  [${v.kind}] ${v.text}`);
  if (result.violations.length > max) lines.push(`  ... and ${result.violations.length - max} more`);
  return lines;
}
