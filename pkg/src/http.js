// The HTTP mapping shared by every server host (Cloudflare Worker, Durable
// Object, Deno): a standard `Request -> Response` function, no runtime APIs.
//
//   GET  {base}/                          what this API is: machine, retention window, limits
//   POST {base}/processes/:id/events      apply an event; the event id is the Idempotency-Key header
//   GET  {base}/processes/:id             the process as `machine.inspect` shows it (+ version)
//   GET  {base}/processes/:id/events      the event log (?after=<revision>&limit=<n>)
//
// POST follows the IETF draft "The Idempotency-Key HTTP Header Field":
//
//   outcome                                   status  body
//   applied (the event created the process)   201     { processId, eventId, status, revision, response } + Location
//   applied                                   200     same shape
//   duplicate (a replay)                      the FIRST status and body, byte for byte, + `Idempotency-Replayed: true`
//   conflict (key reused, different request)  422     problem `id_conflict`
//   ignored (state does not accept it)        409     problem `event_not_accepted` (nothing recorded; a later
//                                                     delivery is judged afresh, unless the machine records ignored ids)
//   rejected                                  400 / 413 / 422 by engine code (see STATUS_BY_CODE), 500 for a bad stored snapshot or an engine fault (`internal_error`)
//   an event type the engine reports          422     problem `reserved_event_type` (`idem.*`, `<effect>.succeeded` / `.failed`)
//   contention outlasting the retries         409     problem `contention` + Retry-After (retry with the same key)
//   the store cannot hold the new snapshot    507     problem `snapshot_too_large` (nothing written)
//   the stored snapshot is damaged            500     problem `snapshot_corrupt` (nothing written; GETs too:
//   (a chunk missing or cut short)                    the store's StoreCorruptError)
//   missing Idempotency-Key                   400     problem `missing_idempotency_key`
//   malformed Idempotency-Key                 400     problem `invalid_idempotency_key`
//   body not UTF-8, or not JSON               400     problem `invalid_json` (a fatal decoder: nothing replaced by U+FFFD)
//   a number beyond f64's range (`1e309`)     400     problem `number_out_of_range` (the engine reads the body's own text)
//   body over the limit                       413     problem `request_too_large`
//   body not all sent within the deadline     408     problem `request_timeout` (`bodyTimeoutMs`, default 10 s)
//   URL over the limit                        414     problem `uri_too_long` (`maxUrlBytes`, default 8 KiB)
//   headers over the limit                    431     problem `headers_too_large` (`maxHeaderBytes`, default 16 KiB)
//   a method a route does not answer          405     problem `method_not_allowed` + Allow
//   a Content-Type that is not JSON           415     problem `unsupported_media_type`
//
// The body is handed to the engine as the client's own JSON text (only the
// event id from the header is written in front of it when the body has none):
// no JSON.parse/JSON.stringify round trip changes a number or a string on the
// way. The fingerprint that tells a replay from a reused key is the engine's:
// it compares the payload's JSON values, key order aside, and a number written
// as an integer (`1`, `0`) is not the same value as one written with a
// fraction or an exponent (`1.0`, `1e0`, `-0`), which are floats: `1.0` and
// `1e0` are one number, `-0` and `-0.0` one, but `1` vs `1.0` and `0` vs `-0`
// under one key are `id_conflict` (422). The engine keeps a payload as it was
// sent and may pass it on (to the context, a response, an effect), so two
// spellings that could reach a gateway differently are not taken for one.
//
// Errors are `application/problem+json` (RFC 9457) with a stable `code`
// member. Every event response carries `Idem-Outcome: <engine status>`, and
// answers from the engine `Idem-Attempts: <load-reduce-commit tries>`.
//
// Window of protection (published at `GET {base}/`): an event id is remembered
// for the machine's retention window (`retention.defaultMs`, or the window of
// its type in `retention.perType`) and at most `retention.maxEntries` ids per
// process. A copy that arrives after that window is judged afresh by the
// state chart (usually `ignored`, 409).
//
// Idempotency-Key values: 1–128 characters of `A–Z a–z 0–9 . _ ~ -`, bare or
// as a structured-field string (`"…"`). `/`, `#` and `:` are refused because
// the ids the engine chooses for its own reports (`<process>/<event>:0#1:started`,
// `after:<state>:<ms>:<rev>`) use them, so a client can never occupy one.
// Event types starting with `idem.` are the engine's own, and
// `<effect>.succeeded` / `<effect>.failed` for the machine's effect types are
// raised by the engine when an effect finishes: clients cannot send either (422).

import { apply, ContentionError, EventText } from "./host.js";

/** Largest POST body accepted by default (bytes): the engine's 64 KiB payload limit plus room for the envelope. */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 + 1024;
/** How long a request's body may take to arrive, whole, by default (ms): a body that stalls gets 408. */
export const DEFAULT_BODY_TIMEOUT_MS = 10_000;
/** Longest request target (path and query) accepted by default (bytes): 414 beyond. */
export const DEFAULT_MAX_URL_BYTES = 8 * 1024;
/** Largest header section accepted by default (bytes, each field counted as `name: value\r\n`): 431 beyond. */
export const DEFAULT_MAX_HEADER_BYTES = 16 * 1024;
/** `Retry-After` on 409 contention: a whole number of seconds drawn from 1 to this, so clients that collided do not retry in step. */
export const RETRY_AFTER_MAX_SECONDS = 4;
export const KEY_PATTERN = /^[A-Za-z0-9._~-]{1,128}$/;
export const PROCESS_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._~-]{0,127}$/;
export const REPLAY_HEADER = "Idempotency-Replayed";
export const OUTCOME_HEADER = "Idem-Outcome";
/** Load-reduce-commit tries the request took (1 without contention). */
export const ATTEMPTS_HEADER = "Idem-Attempts";

/** HTTP status of a `rejected` outcome, by engine error code (others: 422). */
export const STATUS_BY_CODE = {
  invalid_json: 400,
  invalid_event: 400,
  missing_event_id: 400,
  missing_event_type: 400,
  event_id_too_long: 400,
  nesting_too_deep: 400,
  number_out_of_range: 400,
  payload_too_large: 413,
  unknown_event_type: 422,
  invalid_payload: 422,
  id_conflict: 422,
  expression_failed: 422,
  microstep_limit: 422,
  unknown_effect: 422,
  invalid_effect_report: 422,
  snapshot_too_large: 507,
  invalid_snapshot: 500,
  unsupported_snapshot_format: 500,
  wrong_machine: 500,
  missing_state: 500,
  internal_error: 500,
};

const TITLES = {
  400: "Bad Request",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  413: "Content Too Large",
  414: "URI Too Long",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  507: "Insufficient Storage",
};

/**
 * An `application/problem+json` response (RFC 9457) with a stable `code`.
 * @param {number} status
 * @param {string} code
 * @param {string} detail
 * @param {Record<string, unknown>} [extra] extension members
 * @param {Record<string, string>} [headers]
 */
export function problem(status, code, detail, extra = {}, headers = {}) {
  const body = { type: "about:blank", title: TITLES[status] ?? "Error", status, code, detail, ...extra };
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/problem+json", ...headers },
  });
}

function json(status, body, headers = {}) {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

/** The Idempotency-Key header value: a bare token or a structured-field string. */
export function parseIdempotencyKey(raw) {
  if (raw === null) return { missing: true };
  let v = raw.trim();
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1).replace(/\\(["\\])/g, "$1");
  return KEY_PATTERN.test(v) ? { key: v } : { invalid: true };
}

/**
 * 414 or 431 problem when the request's target or its header section is over its limit, else null.
 * Every route of a host asks it first (`createHttpApi`'s `handle` does), static files included.
 * Header bytes are counted as they travel (`name: value\r\n` per field); a runtime's own, larger
 * limit may refuse a request before it gets here.
 * @param {Request} request
 * @param {{ maxUrlBytes?: number, maxHeaderBytes?: number }} [limits]
 * @returns {Response | null}
 */
export function refuseOversized(request, limits = {}) {
  const maxUrl = limits.maxUrlBytes ?? DEFAULT_MAX_URL_BYTES;
  const maxHeaders = limits.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
  const url = new URL(request.url);
  // The request target as sent: ASCII once parsed (anything else is percent-encoded).
  const target = url.pathname.length + url.search.length;
  if (target > maxUrl) {
    return problem(414, "uri_too_long", `the request target is ${target} bytes, more than the ${maxUrl} accepted`, { limit: maxUrl });
  }
  let size = 0;
  for (const [name, value] of request.headers) size += name.length + value.length + 4;
  if (size > maxHeaders) {
    return problem(431, "headers_too_large", `the request headers are ${size} bytes, more than the ${maxHeaders} accepted`, { limit: maxHeaders });
  }
  return null;
}

/** A whole number of seconds from 1 to RETRY_AFTER_MAX_SECONDS, drawn anew for each answer (never at module load). */
export function retryAfterSeconds() {
  return 1 + Math.floor(Math.random() * RETRY_AFTER_MAX_SECONDS);
}

/** Bytes of an oversized body read and discarded before answering 413 (so clients that are still sending see the answer). */
const DRAIN_BYTES = 1 << 20;

/** Thrown by `read` when the body's deadline passes. */
const TIMED_OUT = Symbol("timed out");

/**
 * The next chunk of a body, or TIMED_OUT thrown when the deadline (`Date.now()` ms) passes first.
 * @param {ReadableStreamDefaultReader<Uint8Array>} reader
 * @param {number} deadline
 */
async function read(reader, deadline) {
  const left = deadline - Date.now();
  if (left <= 0) throw TIMED_OUT;
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(TIMED_OUT), left);
  });
  try {
    return await Promise.race([reader.read(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Read the rest of a body and drop it, up to `limit` bytes or the deadline; then cancel. */
async function drain(reader, limit, deadline) {
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await read(reader, deadline);
      if (done) return;
      size += value.byteLength;
      if (size > limit) break;
    }
  } catch (err) {
    if (err !== TIMED_OUT) throw err;
  }
  reader.cancel().catch(() => {});
}

/**
 * Read a body whole, strictly: at most `max` bytes, within `timeoutMs`, and UTF-8 (a fatal decoder:
 * invalid bytes are refused, never replaced by U+FFFD).
 * @returns {Promise<{ text: string } | { tooLarge: true } | { timeout: true } | { notUtf8: true }>}
 */
async function readBody(request, max, timeoutMs) {
  if (!request.body) return { text: "" };
  const deadline = Date.now() + timeoutMs;
  const declared = Number(request.headers.get("content-length"));
  const reader = request.body.getReader();
  if (Number.isFinite(declared) && declared > max) {
    await drain(reader, DRAIN_BYTES, deadline);
    return { tooLarge: true };
  }
  const chunks = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await read(reader, deadline);
      if (done) break;
      size += value.byteLength;
      if (size > max) {
        await drain(reader, DRAIN_BYTES, deadline);
        return { tooLarge: true };
      }
      chunks.push(value);
    }
  } catch (err) {
    if (err !== TIMED_OUT) throw err;
    reader.cancel().catch(() => {});
    return { timeout: true };
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  try {
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(all) };
  } catch {
    return { notUtf8: true };
  }
}

/**
 * The event's JSON text for the engine: the body's own text, with `"id":<key>` written in front of
 * its members when it has no id (the header carries it). `body` is the same text parsed, to know
 * whether it has members.
 * @param {string} text
 * @param {object} body
 * @param {string} key
 */
function eventText(text, body, key) {
  if (Object.hasOwn(body, "id")) return text;
  const open = text.indexOf("{"); // JSON text that parsed to an object: only whitespace before it
  const id = `"id":${JSON.stringify(key)}`;
  return `${text.slice(0, open)}{${id}${Object.keys(body).length === 0 ? "" : ","}${text.slice(open + 1)}`;
}

/**
 * Build the HTTP API for one machine over one store.
 *
 * ```js
 * const api = createHttpApi({ machine, store: new D1Store(env.DB), basePath: "/api",
 *   afterCommit: (processId, outcome) => dispatch(store, machine, processId, effects) });
 * export default { fetch: (req, env, ctx) => api.handle(req, { waitUntil: (p) => ctx.waitUntil(p) }) };
 * ```
 *
 * `afterCommit(processId, outcome)` runs after every successful commit made
 * for a request (never before it, never for a duplicate); when it returns a
 * promise, that promise is handed to `waitUntil` so the reply is not delayed.
 *
 * @param {import("./index.d.ts").HttpApiOptions} options
 */
export function createHttpApi(options) {
  const { machine, store } = options;
  const base = (options.basePath ?? "").replace(/\/+$/, "");
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const bodyTimeout = options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS;
  // The engine's own reports (`idem.*`: effect attempts, timers) come from the
  // dispatcher, never from clients: refused here. An effect's outcome event
  // (`<effect>.succeeded` / `.failed`) the engine itself refuses from outside
  // (`reserved_event` at `type`), answered below the same way.
  const reserved = (type) => type.startsWith("idem.");
  const reservedType = (type, extra, headers) =>
    problem(422, "reserved_event_type", `event type "${type}" is reported by the engine, not by clients`, extra, headers);

  // With no `afterCommit`, nothing in this API performs effects or fires timers: say so
  // once, at the first commit that leaves work due, rather than leave it in the outbox
  // in silence. `afterCommit: null` says the work is dispatched elsewhere (a cron, an
  // alarm, a queue) and keeps this quiet.
  let undispatchedSaid = options.afterCommit !== undefined;
  function sayUndispatched(processId, out) {
    if (undispatchedSaid || !out.changed || out.nextDueAt === null) return;
    undispatchedSaid = true;
    (options.onWarning ?? console.warn)(
      `idem: process "${processId}" has work due (effects or timers) and createHttpApi has no afterCommit, so nothing dispatches it; ` +
        "pass afterCommit (e.g. dispatch), or afterCommit: null when a cron, an alarm or a queue dispatches",
    );
  }

  /** Frozen first answer for an event: from the applied outcome, or from the ledger for a replay. */
  function firstAnswer(processId, eventId, entry, eventType) {
    if (entry.status === "ignored") {
      return {
        status: 409,
        problem: ["event_not_accepted", `event type "${eventType}" is not accepted in the current state`, { processId, eventId }],
      };
    }
    const created = entry.rev === 1;
    const body = { processId, eventId, status: "applied", revision: entry.rev, response: entry.response ?? null };
    const headers = created ? { location: `${base}/processes/${processId}` } : {};
    return { status: created ? 201 : 200, body, headers };
  }

  /**
   * A store's `snapshot_corrupt` (the stored chunks do not make a snapshot) as a 500 problem;
   * any other error is thrown again.
   */
  function storeFailure(err, processId, extra = {}) {
    if (err?.code !== "snapshot_corrupt") throw err;
    return problem(
      500,
      "snapshot_corrupt",
      `the stored snapshot of process "${processId}" is damaged (${err.message}); nothing was written`,
      { processId, ...extra },
    );
  }

  function answer(a, outcomeStatus, replay, attempts) {
    const headers = { [OUTCOME_HEADER]: outcomeStatus, [ATTEMPTS_HEADER]: String(attempts), ...(a.headers ?? {}) };
    if (replay) headers[REPLAY_HEADER] = "true";
    if (a.problem) return problem(a.status, a.problem[0], a.problem[1], a.problem[2], headers);
    return json(a.status, a.body, headers);
  }

  async function postEvent(request, processId, hooks) {
    const k = parseIdempotencyKey(request.headers.get("idempotency-key"));
    if (k.missing) return problem(400, "missing_idempotency_key", "the Idempotency-Key header is required; reuse the same value when you retry");
    if (k.invalid) return problem(400, "invalid_idempotency_key", `Idempotency-Key must match ${KEY_PATTERN.source}`);
    const ct = request.headers.get("content-type");
    if (ct && !/^application\/([a-z0-9.+-]*\+)?json\b/i.test(ct)) {
      return problem(415, "unsupported_media_type", "the body must be application/json");
    }
    const read = await readBody(request, maxBody, bodyTimeout);
    if ("tooLarge" in read) return problem(413, "request_too_large", `the body is larger than ${maxBody} bytes`, { limit: maxBody });
    if ("timeout" in read) {
      return problem(408, "request_timeout", `the body did not arrive within ${bodyTimeout} ms; send it again with the same Idempotency-Key`, { limit: bodyTimeout });
    }
    if ("notUtf8" in read) return problem(400, "invalid_json", "the body is not valid utf-8");
    // Parsed here only to look at it (its shape, its id, its type); the engine reads the text itself.
    let body;
    try {
      body = JSON.parse(read.text);
    } catch {
      return problem(400, "invalid_json", "the body is not valid json");
    }
    if (!body || typeof body !== "object" || Array.isArray(body)) {
      return problem(400, "invalid_event", "the body must be an object { type, payload }");
    }
    if (Object.hasOwn(body, "id") && body.id !== k.key) {
      return problem(400, "invalid_event", "the body's id differs from the Idempotency-Key header; send the id in the header only");
    }
    if (typeof body.type === "string" && reserved(body.type)) return reservedType(body.type);
    const event = new EventText(k.key, typeof body.type === "string" ? body.type : "", eventText(read.text, body, k.key));

    let out;
    try {
      // The options are `apply`'s too (HttpApiOptions extends ApplyOptions); it reads only its own.
      out = await apply(store, machine, processId, event, options);
    } catch (err) {
      if (err instanceof ContentionError || err?.code === "contention") {
        const headers = { "retry-after": String(retryAfterSeconds()) };
        if (Number.isInteger(err.attempts)) headers[ATTEMPTS_HEADER] = String(err.attempts);
        return problem(409, "contention", err.message, { processId, eventId: k.key }, headers);
      }
      // A store that cannot hold the new snapshot refused it before writing anything (Deno KV's atomic limits).
      if (err?.code === "snapshot_too_large") {
        return problem(507, "snapshot_too_large", err.message, { processId, eventId: k.key });
      }
      return storeFailure(err, processId, { eventId: k.key });
    }

    switch (out.status) {
      case "applied": {
        sayUndispatched(processId, out);
        if (out.changed && options.afterCommit) {
          const p = options.afterCommit(processId, out);
          if (p && typeof p.then === "function") {
            const guarded = p.catch((err) => options.onError?.(err));
            if (hooks.waitUntil) hooks.waitUntil(guarded);
          }
        }
        const a = firstAnswer(processId, k.key, { status: "applied", rev: out.revision, response: out.response }, event.type);
        return answer(a, "applied", false, out.attempts);
      }
      case "duplicate": {
        // The engine says how the first delivery was recorded (`original`).
        const entry = { status: out.original.status, rev: out.original.revision, response: out.response };
        return answer(firstAnswer(processId, k.key, entry, event.type), "duplicate", true, out.attempts);
      }
      case "ignored": {
        sayUndispatched(processId, out);
        if (out.changed && options.afterCommit) {
          const p = options.afterCommit(processId, out);
          if (p && typeof p.then === "function" && hooks.waitUntil) hooks.waitUntil(p.catch((err) => options.onError?.(err)));
        }
        const a = firstAnswer(processId, k.key, { status: "ignored" }, event.type);
        return answer(a, "ignored", false, out.attempts);
      }
      case "conflict":
        return problem(
          422,
          "id_conflict",
          "this Idempotency-Key was already used for a different request (type or payload differ)",
          { processId, eventId: k.key },
          { [OUTCOME_HEADER]: "conflict" },
        );
      default: {
        const err = out.error ?? { code: "rejected", message: "the event was rejected" };
        if (err.code === "reserved_event" && err.path === "type") {
          return reservedType(event.type, { processId, eventId: k.key }, { [OUTCOME_HEADER]: "rejected" });
        }
        const status = STATUS_BY_CODE[err.code] ?? 422;
        const extra = { processId, eventId: k.key };
        if (err.path) extra.path = err.path;
        return problem(status, err.code, err.message, extra, { [OUTCOME_HEADER]: "rejected" });
      }
    }
  }

  async function getProcess(processId) {
    let loaded;
    try {
      loaded = await store.load(processId);
    } catch (err) {
      return storeFailure(err, processId);
    }
    if (!loaded) return problem(404, "process_not_found", `no process "${processId}"`, { processId });
    return json(200, { processId, version: loaded.version, ...machine.inspect(loaded.snapshot) });
  }

  async function getEvents(processId, url) {
    const after = Number(url.searchParams.get("after") ?? 0);
    const limit = Math.min(Number(url.searchParams.get("limit") ?? 100), 1000);
    if (!Number.isInteger(after) || after < 0 || !Number.isInteger(limit) || limit < 1) {
      return problem(400, "invalid_query", "after must be a revision (integer >= 0) and limit an integer from 1 to 1000");
    }
    try {
      return await eventLog(processId, after, limit);
    } catch (err) {
      return storeFailure(err, processId);
    }
  }

  async function eventLog(processId, after, limit) {
    let events;
    if (typeof store.events === "function") {
      events = await store.events(processId, { after, limit });
    } else {
      // Stores without a log: the ledger (the ids still remembered) is the log.
      const loaded = await store.load(processId);
      events = loaded
        ? machine
            .inspect(loaded.snapshot)
            .ledger.filter((e) => e.rev > after)
            .slice(0, limit)
            .map((e) => ({ eventId: e.id, revision: e.rev, type: null, status: e.status, response: e.response, receivedAt: e.at }))
        : [];
    }
    if (events.length === 0 && !(await store.load(processId))) {
      return problem(404, "process_not_found", `no process "${processId}"`, { processId });
    }
    const next = events.length === limit ? events[events.length - 1].revision : null;
    return json(200, { processId, events, next });
  }

  function describeApi() {
    const retention = machine.retention();
    return json(200, {
      machine: { id: machine.id, version: machine.version, hash: machine.hash },
      eventTypes: machine.eventTypes(),
      idempotency: {
        header: "Idempotency-Key",
        pattern: KEY_PATTERN.source,
        replayHeader: REPLAY_HEADER,
        windowMs: retention.defaultMs,
        windowMsByType: retention.perType,
        maxRememberedPerProcess: retention.maxEntries,
      },
      limits: { maxBodyBytes: maxBody, processIdPattern: PROCESS_ID_PATTERN.source },
      routes: {
        postEvent: `POST ${base}/processes/{id}/events`,
        getProcess: `GET ${base}/processes/{id}`,
        getEvents: `GET ${base}/processes/{id}/events?after={revision}&limit={n}`,
      },
    });
  }

  /**
   * Answer one request. Paths outside `basePath` get a 404 problem; use
   * `matches(request)` first to fall through to other routes (static assets).
   * @param {Request} request
   * @param {{ waitUntil?: (p: Promise<unknown>) => void }} [hooks]
   * @returns {Promise<Response>}
   */
  async function handle(request, hooks = {}) {
    const oversized = refuseOversized(request, options);
    if (oversized) return oversized;
    const url = new URL(request.url);
    const path = url.pathname.slice(base.length) || "/";
    if (!url.pathname.startsWith(base)) return problem(404, "not_found", `no route for ${url.pathname}`);
    if (path === "/") {
      if (request.method !== "GET") return problem(405, "method_not_allowed", "use GET", {}, { allow: "GET" });
      return describeApi();
    }
    const m = /^\/processes\/([^/]+)(\/events)?\/?$/.exec(path);
    if (!m) return problem(404, "not_found", `no route for ${url.pathname}`);
    const processId = m[1];
    if (!PROCESS_ID_PATTERN.test(processId)) {
      return problem(400, "invalid_process_id", `process ids must match ${PROCESS_ID_PATTERN.source}`);
    }
    if (m[2]) {
      if (request.method === "POST") return postEvent(request, processId, hooks);
      if (request.method === "GET") return getEvents(processId, url);
      return problem(405, "method_not_allowed", "use POST or GET", {}, { allow: "GET, POST" });
    }
    if (request.method === "GET") return getProcess(processId);
    return problem(405, "method_not_allowed", "use GET", {}, { allow: "GET" });
  }

  /** Whether a request is for this API (its path is under `basePath`). */
  function matches(request) {
    const p = new URL(request.url).pathname;
    return base === "" ? p === "/" || p.startsWith("/processes/") : p === base || p.startsWith(`${base}/`);
  }

  return { handle, matches };
}
