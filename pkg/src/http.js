// The HTTP mapping shared by every server host (Cloudflare Worker, Durable
// Object, Deno): a standard `Request -> Response` function, no runtime APIs.
//
//   route                                 action      what
//   GET  {base}/                          "describe"  what this API is: machine, retention window, limits
//   POST {base}/processes/:id/events      "event"     apply an event; the event id is the Idempotency-Key header
//   GET  {base}/processes/:id             "read"      the process: state, context, revision, done, due times (+ version)
//   GET  {base}/processes/:id/events      "log"       the event log (?after=<revision>&limit=<n>)
//
// Who calls (the `authorize` option): every request that names a route is first
// handed to `authorize(request, { processId, action })` (processId null for
// "describe"), which answers the caller's principal, a string, or refuses:
// `null`/`undefined` is 401 `unauthorized` (+ `WWW-Authenticate: Bearer`),
// `false` 403 `forbidden`, a `Response` is sent as it is; a throw is 500
// `authorize_failed`, any other answer 500 `invalid_principal`. A refused
// request reads nothing from the store and writes nothing. Without the
// option every caller is one and the same: an Idempotency-Key is the
// process's, whoever sends it.
//
// With a principal, the event id recorded is the key scoped by it
// (`scopedEventId`), so two callers that send the same key are two events,
// each judged on its own; responses still say the key as it was sent.
//
// What GET shows (the `view` option): "summary" (the default) is the state,
// the context, the revision, done and the due times, and an event log without
// responses in which only the caller's own events carry their key; "full" adds
// the ledger (every event's id, fingerprint and frozen response), the outbox
// (effect payloads, results, errors) and the timers, as `machine.inspect`
// shows them, and the log's responses and recorded ids.
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
//   an event type the engine reports          422     problem `reserved_event_type` (`idem.effect.*`, `idem.after`, `<effect>.succeeded` / `.failed`)
//   contention outlasting the retries         409     problem `contention` + Retry-After (retry with the same key)
//   the store cannot hold the new snapshot    507     problem `snapshot_too_large` (nothing written)
//   the stored snapshot is damaged            500     problem `snapshot_corrupt` (nothing written; GETs too:
//   (a chunk missing or cut short)                    the store's StoreCorruptError)
//   no credentials (authorize answered null)  401     problem `unauthorized` + WWW-Authenticate (nothing read)
//   refused (authorize answered false)        403     problem `forbidden` (nothing read)
//   authorize threw / answered no principal   500     problem `authorize_failed` / `invalid_principal`
//   missing Idempotency-Key                   400     problem `missing_idempotency_key`
//   malformed Idempotency-Key                 400     problem `invalid_idempotency_key`
//   body not UTF-8, or not JSON               400     problem `invalid_json` (a fatal decoder: nothing replaced by U+FFFD)
//   a number beyond f64's range (`1e309`)     400     problem `number_out_of_range` (the engine reads the body's own text)
//   body over the limit                       413     problem `request_too_large`
//   body not all sent within the deadline     408     problem `request_timeout` (`bodyTimeoutMs`, default 10 s)
//   body that fails mid-way (client gone)      400     problem `unreadable_body` (nothing read, nothing stored)
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
// The engine's own event types (`idem.effect.*`, `idem.after`) and
// `<effect>.succeeded` / `<effect>.failed` for the machine's effect types are
// raised by the engine when an effect finishes: clients cannot send either (422).

import { IdemError } from "./error.js";
import {
  applyOptionsArg,
  described,
  invalidArgument,
  isFunction,
  isPositiveInteger,
  isRecord,
  jsonText,
  optionalField,
  storeArg,
  wellFormed,
  withMethods,
} from "./checks.js";
import { apply, ContentionError, EventText, isEngineEventType } from "./host.js";

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

/** Longest principal `authorize` may answer (characters): a user's or a tenant's id, not a token. */
export const MAX_PRINCIPAL_LENGTH = 256;
/** Whether `v` is a principal: a well-formed string of 1 to MAX_PRINCIPAL_LENGTH characters (a lone surrogate would let two read as one). */
const isPrincipal = (v) => typeof v === "string" && v !== "" && v.length <= MAX_PRINCIPAL_LENGTH && wellFormed(v);
/** What each action a request asks (as `authorize` is told it) is, for the messages of a refusal. */
const ASKED = {
  describe: () => "describe this API",
  event: (id) => `send events to process "${id}"`,
  read: (id) => `read process "${id}"`,
  log: (id) => `read the event log of process "${id}"`,
};
/** What a request asks, by route, as `authorize` is told: "describe", "event", "read", "log". */
export const ACTIONS = Object.freeze(Object.keys(ASKED));
/** What GET shows: the summary (default), or the ledger and outbox in full. */
export const VIEWS = Object.freeze(["summary", "full"]);

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
  // An argument the host handed the engine was wrong: the server's fault, never the client's.
  invalid_argument: 500,
};

const TITLES = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
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

// Argument checks: the shared ones are checks.js's (one message shape for every export:
// `invalid_argument`, path the argument's name, "<name> must be <expected>, got <what>"); what
// only this file takes (a Request, its options, the hooks) is checked here with them. A value
// that may be a secret (a token given as `authorize`, a principal, a request's URL) is described
// by its length alone.

/**
 * A request as `handle` and `refuseOversized` take it: a fetch `Request` (or an object shaped as
 * one: `url` absolute, `method`, iterable `headers` with `get`, `body` null or a stream).
 * @param {unknown} request
 * @returns {URL} its URL
 */
function requestArg(request) {
  const shaped =
    isRecord(request) &&
    typeof request.url === "string" &&
    typeof request.method === "string" &&
    isRecord(request.headers) &&
    typeof request.headers.get === "function" &&
    typeof request.headers[Symbol.iterator] === "function" &&
    (request.body === null || request.body === undefined || typeof request.body.getReader === "function");
  if (!shaped) throw invalidArgument("request", "a Request", request);
  try {
    return new URL(request.url);
  } catch {
    throw invalidArgument("request.url", "an absolute URL", request.url, { conceal: true });
  }
}

/** What the HTTP API calls on its machine: what `apply` does, and `retention`, `eventTypes` for `GET {base}/`. */
const MACHINE_METHODS = ["reduce", "due", "inspect", "retention", "eventTypes"];

/** `createHttpApi`'s own options: `[name, ok, expected]`, each optional (`apply`'s are checked by applyOptionsArg). */
const OPTION_RULES = [
  ["basePath", (v) => typeof v === "string" && (v === "" || /^\/[^?#]*$/.test(v)), 'a path starting with "/" (or "")'],
  ["maxBodyBytes", isPositiveInteger, "a whole number of bytes above 0"],
  ["bodyTimeoutMs", isPositiveInteger, "a whole number of ms above 0"],
  ["maxUrlBytes", isPositiveInteger, "a whole number of bytes above 0"],
  ["maxHeaderBytes", isPositiveInteger, "a whole number of bytes above 0"],
  ["afterCommit", (v) => v === null || isFunction(v), "a function or null"],
  ["onError", isFunction, "a function"],
  ["onWarning", isFunction, "a function"],
  ["view", (v) => VIEWS.includes(v), `one of ${VIEWS.map((v) => `"${v}"`).join(", ")}`],
];

/**
 * `createHttpApi`'s options, all checked at creation so that a mistake is found at start, not at
 * the first request: the machine and the store (required), this API's own, and `apply`'s, which
 * `apply` reads on every request.
 * @param {unknown} options
 */
function checkOptions(options) {
  if (!isRecord(options)) throw invalidArgument("options", "an object { machine, store, ... }", options);
  withMethods(options.machine, "options.machine", MACHINE_METHODS, "a Machine (an object with reduce, due, inspect, retention and eventTypes)");
  storeArg(options.store, "options.store");
  // A function, or the caller's mistake: a token given where the function belongs (not repeated).
  if (options.authorize !== undefined && !isFunction(options.authorize)) {
    throw invalidArgument("options.authorize", "a function (request, { processId, action }) => principal", options.authorize, { conceal: true });
  }
  for (const [key, ok, expected] of OPTION_RULES) optionalField(options, key, ok, expected);
  return applyOptionsArg(options);
}

/**
 * An `application/problem+json` response (RFC 9457) with a stable `code`.
 * @param {number} status
 * @param {string} code
 * @param {string} detail
 * @param {Record<string, unknown>} [extra] extension members
 * @param {Record<string, string>} [headers]
 */
export function problem(status, code, detail, extra = {}, headers = {}) {
  if (!Number.isInteger(status) || status < 400 || status > 599) throw invalidArgument("status", "an error status from 400 to 599", status);
  if (typeof code !== "string" || code === "") throw invalidArgument("code", "a non-empty string", code);
  if (typeof detail !== "string") throw invalidArgument("detail", "a string", detail);
  if (!isRecord(extra)) throw invalidArgument("extra", "an object", extra);
  if (!isRecord(headers)) throw invalidArgument("headers", "an object", headers);
  const body = jsonText({ type: "about:blank", title: TITLES[status] ?? "Error", status, code, detail, ...extra }, "extra");
  return response(status, body, { "content-type": "application/problem+json", ...headers });
}

/** A Response; headers that cannot be sent (a name or value HTTP does not allow) are `invalid_argument`. */
function response(status, body, headers) {
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== "string") throw invalidArgument(`headers.${name}`, "a string", value);
  }
  try {
    return new Response(body, { status, headers });
  } catch (cause) {
    throw new IdemError("invalid_argument", `headers cannot be sent: ${cause instanceof Error ? cause.message : String(cause)}`, { path: "headers", cause });
  }
}

function json(status, body, headers = {}) {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

/** The Idempotency-Key header value: a bare token or a structured-field string. */
export function parseIdempotencyKey(raw) {
  if (raw === null) return { missing: true };
  if (typeof raw !== "string") throw invalidArgument("raw", "a header value (a string) or null", raw);
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
  const url = requestArg(request);
  if (!isRecord(limits)) throw invalidArgument("limits", "an object { maxUrlBytes, maxHeaderBytes }", limits);
  for (const key of ["maxUrlBytes", "maxHeaderBytes"]) {
    if (limits[key] !== undefined && !isPositiveInteger(limits[key])) throw invalidArgument(`limits.${key}`, "a whole number of bytes above 0", limits[key]);
  }
  const maxUrl = limits.maxUrlBytes ?? DEFAULT_MAX_URL_BYTES;
  const maxHeaders = limits.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
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

/** Stop reading a body; a reader that cannot even be cancelled is left as it is. */
function cancel(reader) {
  try {
    Promise.resolve(reader.cancel()).catch(() => {});
  } catch {
    // nothing more to stop
  }
}

/**
 * Read the rest of a body and drop it, up to `limit` bytes or the deadline; then cancel. A body
 * that fails while draining is dropped as it is: the answer (413) does not depend on it.
 */
async function drain(reader, limit, deadline) {
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await read(reader, deadline);
      if (done) return;
      size += value instanceof Uint8Array ? value.byteLength : 0;
      if (size > limit) break;
    }
  } catch {
    // the deadline, or a stream that failed: stop draining
  }
  cancel(reader);
}

/**
 * Read a body whole, strictly: at most `max` bytes, within `timeoutMs`, and UTF-8 (a fatal decoder:
 * invalid bytes are refused, never replaced by U+FFFD). A body that cannot be read (the client
 * went away mid-body, a stream that fails or gives something other than bytes) is `unreadable`.
 * @returns {Promise<{ text: string } | { tooLarge: true } | { timeout: true } | { notUtf8: true } | { unreadable: true }>}
 */
async function readBody(request, max, timeoutMs) {
  if (!request.body) return { text: "" };
  const deadline = Date.now() + timeoutMs;
  const declared = Number(request.headers.get("content-length"));
  let reader;
  const chunks = [];
  let size = 0;
  try {
    reader = request.body.getReader();
    if (Number.isFinite(declared) && declared > max) {
      await drain(reader, DRAIN_BYTES, deadline);
      return { tooLarge: true };
    }
    for (;;) {
      const { done, value } = await read(reader, deadline);
      if (done) break;
      if (!(value instanceof Uint8Array)) throw new TypeError("a body chunk that is not bytes");
      size += value.byteLength;
      if (size > max) {
        await drain(reader, DRAIN_BYTES, deadline);
        return { tooLarge: true };
      }
      chunks.push(value);
    }
  } catch (err) {
    if (reader !== undefined) cancel(reader);
    return err === TIMED_OUT ? { timeout: true } : { unreadable: true };
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
 * The event's JSON text for the engine: the body's own text, with `"id":<id>` written in front of
 * its members when it has no id (the header carries it). A body that has one has the caller's key
 * there (checked before); when the recorded id is another (scoped by the caller), it is written
 * after the last member: a member given twice keeps its last value, in the engine's parser as in
 * JSON.parse. `body` is the same text parsed, to know whether it has members.
 * @param {string} text
 * @param {object} body
 * @param {string} id the event id recorded
 */
function eventText(text, body, id) {
  const member = `"id":${JSON.stringify(id)}`;
  if (Object.hasOwn(body, "id")) {
    if (body.id === id) return text;
    const close = text.lastIndexOf("}"); // JSON text that parsed to an object: only whitespace after it
    return `${text.slice(0, close)},${member}${text.slice(close)}`;
  }
  const open = text.indexOf("{"); // only whitespace before it
  return `${text.slice(0, open)}{${member}${Object.keys(body).length === 0 ? "" : ","}${text.slice(open + 1)}`;
}

const utf8 = new TextEncoder();
/** Hex digits of the principal's hash that scope its keys: 128 bits. */
const SCOPE_HEX = 32;

/** Scopes of the principals seen last (a pure function of the principal, so shared by every API). */
const scopes = new Map();
const MAX_SCOPES = 1024;

/**
 * The prefix of the event ids recorded for `principal`'s keys: the first 128 bits of SHA-256 of
 * the principal (as UTF-8), in hex, and `:`. Kept for the principals seen last: a caller's
 * retry is then answered without hashing again.
 * @param {string} principal
 */
async function scopeOf(principal) {
  const kept = scopes.get(principal);
  if (kept !== undefined) return kept;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", utf8.encode(principal)));
  let hex = "";
  for (const b of digest) hex += b.toString(16).padStart(2, "0");
  const scope = `${hex.slice(0, SCOPE_HEX)}:`;
  if (scopes.size >= MAX_SCOPES) scopes.clear();
  scopes.set(principal, scope);
  return scope;
}

/**
 * The event id recorded for an Idempotency-Key that `principal` sent: `<scope>:<key>`.
 *
 * The engine's ledger knows an event by its id alone, so a key is made the caller's by the id it
 * is recorded under (as Stripe-style stores index the user and the key together), in the host,
 * with no change to the engine. The scope has one length whatever the principal (the id stays
 * within the engine's 256 bytes: 33 and a key's 128), and `:` is never in a key (KEY_PATTERN), so
 * no key one caller sends can be read as another's id, nor as a scoped one. The same principal and
 * key always give the same id: a retry is a duplicate, and the effect keys made from the id
 * (`<process>/<id>:<n>`) are the same on every retry.
 * @param {string} principal
 * @param {string} key
 * @returns {Promise<string>}
 */
export async function scopedEventId(principal, key) {
  if (!isPrincipal(principal)) {
    throw invalidArgument("principal", `a well-formed string of 1 to ${MAX_PRINCIPAL_LENGTH} characters`, principal, { conceal: true });
  }
  if (typeof key !== "string" || !KEY_PATTERN.test(key)) throw invalidArgument("key", `an Idempotency-Key (${KEY_PATTERN.source})`, key);
  return `${await scopeOf(principal)}${key}`;
}

/**
 * What GET shows of a process by default: its state, context, revision, whether it is done and
 * when work is due (effects to perform or retry, timers), from `machine.inspect`. Not the ledger
 * (event ids, fingerprints, the responses frozen for every caller) nor the outbox's payloads,
 * results and errors, nor anything that names an event id.
 * @param {import("./index.d.ts").Inspection} v
 */
function summary(v) {
  const due = [
    ...v.outbox.filter((e) => typeof e.dueAt === "number").map((e) => ({ kind: "effect", type: e.type, state: e.state, dueAt: e.dueAt })),
    ...v.timers.map((t) => ({ kind: "timer", state: t.state, dueAt: t.dueAt })),
  ].sort((a, b) => a.dueAt - b.dueAt);
  return { machine: v.machine, value: v.value, context: v.context, revision: v.revision, done: v.done, nextDueAt: due[0]?.dueAt ?? null, due };
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
 * If it throws (or its promise rejects), `onError` is told and the reply is
 * still the commit's: the event is stored.
 *
 * `authorize(request, { processId, action })` says who calls (see the top of
 * this file): each caller's Idempotency-Keys are its own. `view: "full"` lets
 * GET show the ledger and the outbox whole.
 *
 * @param {import("./index.d.ts").HttpApiOptions} options
 */
export function createHttpApi(options) {
  const { machine, store, authorize } = checkOptions(options);
  const view = options.view ?? "summary";
  const base = (options.basePath ?? "").replace(/\/+$/, "");
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const bodyTimeout = options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS;
  // The engine's own events (`idem.effect.*` attempt reports, `idem.after` timers) come from the
  // dispatcher, never from clients: refused here. An effect's outcome event
  // (`<effect>.succeeded` / `.failed`) the engine itself refuses from outside
  // (`reserved_event` at `type`), answered below the same way.
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
    try {
      (options.onWarning ?? console.warn)(
        `idem: process "${processId}" has work due (effects or timers) and createHttpApi has no afterCommit, so nothing dispatches it; ` +
          "pass afterCommit (e.g. dispatch), or afterCommit: null when a cron, an alarm or a queue dispatches",
      );
    } catch (err) {
      reportError(err);
    }
  }

  /**
   * Tell `onError` (console.error without one) of a failure the answer does not carry. An
   * `onError` that throws in turn is dropped: it must not change what the request is answered.
   */
  function reportError(err) {
    try {
      (options.onError ?? console.error)(err);
    } catch {
      // nothing further to tell it to
    }
  }

  /**
   * After a commit made for a request: the undispatched-work warning, and `afterCommit`. The event
   * is stored whatever these do, so the answer is the commit's: an `afterCommit` that throws, or
   * whose promise rejects, is reported to `onError`, never answered as the request's failure (a
   * client told 500 would retry a key that is already applied). Its promise, guarded, goes to
   * `waitUntil` when the host gives one.
   */
  function afterCommitted(processId, out, hooks) {
    sayUndispatched(processId, out);
    if (!out.changed || !options.afterCommit) return;
    let p;
    try {
      p = options.afterCommit(processId, out);
    } catch (err) {
      reportError(err);
      return;
    }
    if (p !== null && (typeof p === "object" || typeof p === "function") && typeof p.then === "function") {
      const guarded = Promise.resolve(p).catch(reportError);
      try {
        hooks.waitUntil?.(guarded);
      } catch (err) {
        reportError(err); // a host that no longer takes work (the request is over): the answer stands
      }
    }
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

  /**
   * Who sends `request`, as `authorize` says: `{ principal, scope }` (null and "" without
   * `authorize`), or the Response that refuses the request. Asked before anything is read.
   * @returns {Promise<{ principal: string | null, scope: string } | Response>}
   */
  async function caller(request, processId, action) {
    if (!authorize) return { principal: null, scope: "" };
    const what = ASKED[action](processId);
    let who;
    try {
      who = await authorize(request, { processId, action });
    } catch (err) {
      reportError(err);
      return problem(500, "authorize_failed", `authorize failed on a request to ${what}; nothing was read or written`);
    }
    if (who === null || who === undefined) {
      return problem(401, "unauthorized", `the request carries no credentials this API accepts (to ${what})`, {}, { "www-authenticate": "Bearer" });
    }
    if (who === false) return problem(403, "forbidden", `this caller may not ${what}`);
    if (who instanceof Response) return who;
    if (!isPrincipal(who)) {
      return problem(
        500,
        "invalid_principal",
        `authorize must answer a principal (a well-formed string of 1 to ${MAX_PRINCIPAL_LENGTH} characters), null, false or a Response; it answered ${described(who, { conceal: true })}`,
      );
    }
    return { principal: who, scope: await scopeOf(who) };
  }

  async function postEvent(request, processId, hooks, who) {
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
    if ("unreadable" in read) return problem(400, "unreadable_body", "the body could not be read to its end; send it again with the same Idempotency-Key");
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
    if (typeof body.type === "string" && isEngineEventType(body.type)) return reservedType(body.type);
    // The id the event is recorded under: the caller's key, in the caller's scope (scopedEventId).
    const recorded = `${who.scope}${k.key}`;
    const event = new EventText(recorded, typeof body.type === "string" ? body.type : "", eventText(read.text, body, recorded));

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

    // One path for every outcome that committed (applied, or ignored and recorded): nothing else writes.
    afterCommitted(processId, out, hooks);
    switch (out.status) {
      case "applied": {
        const a = firstAnswer(processId, k.key, { status: "applied", rev: out.revision, response: out.response }, event.type);
        return answer(a, "applied", false, out.attempts);
      }
      case "duplicate": {
        // The engine says how the first delivery was recorded (`original`).
        const entry = { status: out.original.status, rev: out.original.revision, response: out.response };
        return answer(firstAnswer(processId, k.key, entry, event.type), "duplicate", true, out.attempts);
      }
      case "ignored": {
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
    const inspected = machine.inspect(loaded.snapshot);
    return json(200, { processId, version: loaded.version, ...(view === "full" ? inspected : summary(inspected)) });
  }

  async function getEvents(processId, url, who) {
    const after = Number(url.searchParams.get("after") ?? 0);
    const limit = Math.min(Number(url.searchParams.get("limit") ?? 100), 1000);
    if (!Number.isInteger(after) || after < 0 || !Number.isInteger(limit) || limit < 1) {
      return problem(400, "invalid_query", "after must be a revision (integer >= 0) and limit an integer from 1 to 1000");
    }
    try {
      return await eventLog(processId, after, limit, who);
    } catch (err) {
      return storeFailure(err, processId);
    }
  }

  async function eventLog(processId, after, limit, who) {
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
    return json(200, { processId, events: view === "full" ? events : events.map((e) => summaryRow(e, who)), next });
  }

  /**
   * A row of the event log as the summary shows it: no response, and an event id only where the
   * caller may see it: every id without `authorize`, else the caller's own events, by their key.
   */
  function summaryRow(row, who) {
    const { response: _response, ...rest } = row;
    if (who.principal === null) return rest;
    const own = typeof row.eventId === "string" && row.eventId.startsWith(who.scope);
    return { ...rest, eventId: own ? row.eventId.slice(who.scope.length) : null };
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
        // "caller": a key is the caller's (authorize); "process": one key is one event, whoever sends it.
        keyScope: authorize ? "caller" : "process",
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
    const url = requestArg(request);
    if (!isRecord(hooks) || (hooks.waitUntil !== undefined && !isFunction(hooks.waitUntil))) {
      throw invalidArgument("hooks", "an object { waitUntil?: function }", hooks);
    }
    const oversized = refuseOversized(request, options);
    if (oversized) return oversized;
    const path = url.pathname.slice(base.length) || "/";
    if (!url.pathname.startsWith(base)) return problem(404, "not_found", `no route for ${url.pathname}`);
    const route = routeOf(request.method, path, url);
    if (route instanceof Response) return route;
    const who = await caller(request, route.processId, route.action);
    if (who instanceof Response) return who;
    switch (route.action) {
      case "describe":
        return describeApi();
      case "event":
        return postEvent(request, route.processId, hooks, who);
      case "log":
        return getEvents(route.processId, url, who);
      default:
        return getProcess(route.processId);
    }
  }

  /**
   * The route a request names: `{ action, processId }`, or the 400/404/405 problem (answered before
   * `authorize` is asked: they depend on the path and the method alone).
   */
  function routeOf(method, path, url) {
    if (path === "/") {
      if (method !== "GET") return problem(405, "method_not_allowed", "use GET", {}, { allow: "GET" });
      return { action: "describe", processId: null };
    }
    const m = /^\/processes\/([^/]+)(\/events)?\/?$/.exec(path);
    if (!m) return problem(404, "not_found", `no route for ${url.pathname}`);
    const processId = m[1];
    if (!PROCESS_ID_PATTERN.test(processId)) {
      return problem(400, "invalid_process_id", `process ids must match ${PROCESS_ID_PATTERN.source}`);
    }
    if (m[2]) {
      if (method === "POST") return { action: "event", processId };
      if (method === "GET") return { action: "log", processId };
      return problem(405, "method_not_allowed", "use POST or GET", {}, { allow: "GET, POST" });
    }
    if (method === "GET") return { action: "read", processId };
    return problem(405, "method_not_allowed", "use GET", {}, { allow: "GET" });
  }

  /** Whether a request is for this API (its path is under `basePath`). */
  function matches(request) {
    const p = requestArg(request).pathname;
    return base === "" ? p === "/" || p.startsWith("/processes/") : p === base || p.startsWith(`${base}/`);
  }

  return { handle, matches };
}
