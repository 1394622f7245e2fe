// The outbox dispatcher every host reuses. It performs the work the engine
// says is due (`machine.due(snapshot, now)`) and reports every step back
// through the same load -> reduce -> commit loop (`apply`), with the event ids
// the engine chose, so that:
//
// - a handler never runs before the commit of the event that emitted its
//   effect (the dispatcher only sees effects it loads from the store);
// - two dispatchers racing for the same attempt are told apart by the ledger:
//   only one `started` report applies, the other is a duplicate and skips;
// - a result reported twice is a duplicate, never a second transition.
//
// The dispatcher decides nothing about the business: it only classifies what
// the outside world answered (resolved / threw retryable / threw permanent /
// did not answer in time) and lets the engine decide what follows.

import { apply, EFFECT_REPORT_PREFIX } from "./host.js";
import { clockArg, dispatchOptionsArg, invalidArgument, jsonText, isDuration, machineArg, processIdArg, storeArg, storedSnapshotArg } from "./checks.js";

/** Default time a handler or verifier may take before its outcome is `unknown` (ms). */
export const DEFAULT_TIMEOUT_MS = 10_000;
/** Default bound on due-work rounds per `dispatch` call. */
export const DEFAULT_MAX_ROUNDS = 16;

/** Raised (internally) when a handler does not answer within `timeoutMs`. */
export class TimeoutError extends Error {
  constructor(ms) {
    super(`no answer within ${ms} ms`);
    this.name = "TimeoutError";
    this.code = "timeout";
  }
}

/**
 * Mark an error so the dispatcher reports it as retryable (`failed` with
 * `retryable: true`); errors are permanent unless they carry `retryable: true`.
 * @template {Error} E
 * @param {E} err
 * @returns {E & { retryable: true }}
 */
export function retryable(err) {
  return Object.assign(err, { retryable: true });
}

/**
 * Mark an error as an unknown outcome (the operation may or may not have
 * happened: a lost response, a connection reset after sending).
 * @template {Error} E
 * @param {E} err
 * @returns {E & { unknown: true }}
 */
export function unknownOutcome(err) {
  return Object.assign(err, { unknown: true });
}

function withTimeout(promise, ms) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(ms)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** JSON-safe description of a thrown value, stored in the outbox. */
function describe(err) {
  if (err && typeof err === "object") {
    const out = { message: String(err.message ?? err) };
    if (err.code !== undefined) out.code = String(err.code);
    return out;
  }
  return { message: String(err) };
}

/**
 * What a handler resolved (or a verifier found), as the JSON its report carries (undefined
 * becomes null). A value JSON cannot write (a BigInt, a cycle, a function, a `toJSON` that
 * throws) is the handler's fault and the same on every try: an `IdemError` `invalid_result`,
 * which the attempt reports as a permanent failure, as it would the handler's own error (the
 * failure's `error.code` says the handler did answer), and a verifier's answer as a verifier
 * error (nothing reported, the item stays due).
 * @param {unknown} v
 * @param {string} what the value, for the message: `the charge handler's result`
 */
function jsonValue(v, what) {
  return v === undefined ? null : JSON.parse(jsonText(v, what, { code: "invalid_result" }));
}

/** The id of the report a due item leads to: the item's identity within one dispatch call. */
function itemId(item) {
  switch (item.kind) {
    case "attempt":
      return item.started.id;
    case "verify":
      return item.resultId;
    case "expire":
      return item.report.id;
    case "timer":
      return item.event.id;
    default:
      return `${item.kind}:${item.key}`;
  }
}

/** Default delay before work this host could not do (no handler, verifier error) is due again (ms). */
export const DEFAULT_STUCK_RETRY_MS = 30_000;

/**
 * Earliest due time of unfinished work in a snapshot, or null. Items listed in
 * `stuck` (ids of items this host could not do) count as due at `stuckAt`.
 * @param {import("./index.d.ts").MachineLike} machine
 * @param {string} snapshot
 * @param {Set<string>} [stuck]
 * @param {number} [stuckAt]
 * @returns {number | null}
 */
export function nextDueAt(machine, snapshot, stuck = new Set(), stuckAt = 0) {
  machineArg(machine);
  storedSnapshotArg(snapshot);
  if (!(stuck instanceof Set)) throw invalidArgument("stuck", "a Set of item ids", stuck);
  if (!isDuration(stuckAt)) throw invalidArgument("stuckAt", "a number of ms", stuckAt);
  let min = null;
  for (const item of machine.due(snapshot, Number.MAX_SAFE_INTEGER)) {
    const at = stuck.has(itemId(item)) ? Math.max(item.dueAt, stuckAt) : item.dueAt;
    if (typeof at === "number" && (min === null || at < min)) min = at;
  }
  return min;
}

/**
 * Run the work that is due for one process, after its commit.
 *
 * ```js
 * const report = await dispatch(store, machine, "order-42", {
 *   handlers: { charge: (payload, { key, attemptId }) => gateway.charge(payload, { idempotencyKey: key }) },
 *   verifiers: { charge: async (payload, { key }) => {
 *     const found = await gateway.findByReference(key);
 *     return { exists: !!found, result: found };
 *   } },
 * });
 * report.nextDueAt; // when to call dispatch again (an alarm, a queue delay, a timer), or null
 * ```
 *
 * Per due item:
 * - `attempt`: report `item.started`; if that is not `applied`, another
 *   dispatcher owns the attempt: skip. Otherwise call
 *   `handlers[item.type](item.payload, { key, attemptId, attempt })` and report
 *   `idem.effect.succeeded` (resolved), `idem.effect.failed` (threw; retryable
 *   when the error has `retryable: true`) or `idem.effect.unknown` (no answer
 *   within `timeoutMs`, or an error marked `unknown: true`) with id `item.resultId`.
 *   A result JSON cannot write (a BigInt, a cycle) is a permanent failure whose
 *   error has code `invalid_result`.
 * - `verify`: call `verifiers[item.type](item.payload, { key, attempt })`, which
 *   answers `{ exists, result? }`, and report `idem.effect.verified`. A verifier
 *   that throws, times out or finds a result JSON cannot write reports nothing
 *   (the item stays due).
 * - `expire`: report `item.report` as is (the attempt's lease ran out).
 * - `timer`: report `item.event` as is.
 *
 * Items whose type has no handler (or verifier) are left for a host that has
 * one and counted as `unhandled`; in `report.nextDueAt` they (and verifiers
 * that failed) count as due `stuckRetryMs` from now, so an alarm does not spin. The loop repeats while new work is due now
 * (a zero-delay retry, an effect emitted by `charge.succeeded`), at most
 * `maxRounds` times, and never runs the same item twice in one call.
 * Items run one after another, in the order the engine lists them.
 *
 * @param {import("./index.d.ts").Store} store
 * @param {import("./index.d.ts").MachineLike} machine
 * @param {string} processId
 * @param {import("./index.d.ts").DispatchOptions} [options]
 * @returns {Promise<import("./index.d.ts").DispatchReport>}
 */
export async function dispatch(store, machine, processId, options = {}) {
  storeArg(store);
  machineArg(machine);
  processIdArg(processId);
  dispatchOptionsArg(options);
  const handlers = options.handlers ?? {};
  const verifiers = options.verifiers ?? {};
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxRounds = options.maxRounds ?? DEFAULT_MAX_ROUNDS;
  const report = { steps: [], unhandled: 0, nextDueAt: null };
  const seen = new Set();
  const stuck = new Set();
  const step = (item, result, extra = {}) => {
    const s = { kind: item.kind, key: item.key ?? null, type: item.type ?? item.event?.type, attempt: item.attempt ?? null, result, ...extra };
    report.steps.push(s);
    options.onStep?.(s);
  };
  // The options are `apply`'s too (DispatchOptions extends ApplyOptions); it reads only its own.
  const send = (event) => apply(store, machine, processId, event, options);

  let loaded = await store.load(processId);
  for (let round = 0; loaded && round < maxRounds; round++) {
    const items = machine.due(loaded.snapshot, clockArg(options.now, "options.now")).filter((i) => !seen.has(itemId(i)));
    if (items.length === 0) break;
    for (const item of items) {
      seen.add(itemId(item));
      if (item.kind === "attempt") {
        const handler = handlers[item.type];
        if (!handler) {
          stuck.add(itemId(item));
          report.unhandled++;
          step(item, "unhandled");
          continue;
        }
        const started = await send(item.started);
        if (started.status !== "applied") {
          step(item, "skipped", { status: started.status });
          continue;
        }
        const meta = { key: item.key, attemptId: item.attemptId, attempt: item.attempt };
        let event;
        try {
          const result = await withTimeout(Promise.resolve().then(() => handler(item.payload, meta)), timeoutMs);
          event = { type: "idem.effect.succeeded", payload: { key: item.key, attempt: item.attempt, result: jsonValue(result, `the ${item.type} handler's result`) } };
        } catch (err) {
          if (err instanceof TimeoutError || err?.unknown === true) {
            event = { type: "idem.effect.unknown", payload: { key: item.key, attempt: item.attempt, error: describe(err) } };
          } else {
            const retry = err?.retryable === true;
            event = { type: "idem.effect.failed", payload: { key: item.key, attempt: item.attempt, retryable: retry, error: describe(err) } };
          }
        }
        const out = await send({ id: item.resultId, ...event });
        step(item, event.type.slice(EFFECT_REPORT_PREFIX.length), { status: out.status, state: out.state });
      } else if (item.kind === "verify") {
        const verifier = verifiers[item.type];
        if (!verifier) {
          stuck.add(itemId(item));
          report.unhandled++;
          step(item, "unhandled");
          continue;
        }
        let payload;
        try {
          const answer = await withTimeout(Promise.resolve().then(() => verifier(item.payload, { key: item.key, attempt: item.attempt })), timeoutMs);
          payload = { key: item.key, attempt: item.attempt, exists: answer?.exists === true };
          if (payload.exists) payload.result = jsonValue(answer.result, `the ${item.type} verifier's result`);
        } catch (err) {
          stuck.add(itemId(item));
          step(item, "verify-error", { error: describe(err) });
          continue;
        }
        const exists = payload.exists;
        const out = await send({ id: item.resultId, type: "idem.effect.verified", payload });
        step(item, exists ? "verified-exists" : "verified-absent", { status: out.status, state: out.state });
      } else if (item.kind === "expire") {
        const out = await send(item.report);
        step(item, "expired", { status: out.status, state: out.state });
      } else if (item.kind === "timer") {
        const out = await send(item.event);
        step(item, "timer", { status: out.status, state: out.state });
      }
    }
    loaded = await store.load(processId);
  }
  const stuckAt = clockArg(options.now, "options.now") + (options.stuckRetryMs ?? DEFAULT_STUCK_RETRY_MS);
  report.nextDueAt = loaded ? nextDueAt(machine, loaded.snapshot, stuck, stuckAt) : null;
  return report;
}
