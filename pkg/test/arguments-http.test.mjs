// The HTTP API at its edges: `createHttpApi` with random options, and its handler (`handle`,
// `matches`), `refuseOversized`, `problem`, `parseIdempotencyKey` and `scopedEventId` with odd
// arguments (the generator of arguments.test.mjs) and odd requests: real Requests with odd URLs,
// methods, headers and bodies (huge, cut short, not UTF-8, not JSON, JSON of the wrong shape, a
// stream that fails), objects shaped as requests, and `authorize` functions that answer odd
// values or throw.
//
// Property: every call answers or throws an IdemError with a code (never a bare TypeError, never
// a WebAssembly.RuntimeError). A Request (with an absolute URL) sent to an API made with good
// options is always answered, never thrown at: a problem+json whose `status` is the response's
// and whose `code` is a stable one (a 2xx is JSON), and never a 500 unless `authorize` failed
// (threw, or answered no principal), or a Response that `authorize` made itself. Afterwards the
// same API instances serve a known stream of requests byte for byte as fresh ones do.
//
//   SEED=123 node --test pkg/test/arguments-http.test.mjs        replay one run (the seed is printed)
//   HTTP_CALLS=100000 node --test pkg/test/arguments-http.test.mjs more calls
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as idem from "../src/node.js";
import * as lean from "../dist/lean/idem.js";
import { checkedMachine } from "../src/checks.js";
import { createHttpApi, parseIdempotencyKey, problem, refuseOversized, scopedEventId } from "../src/http.js";
import { argumentsFor, BIG, badThrow, describeArg, oddValues, offline, pools, T0 } from "./arguments.mjs";
import { rng } from "../../tests/differential/rng.mjs";

const { IdemError } = idem;
const SEED = process.env.SEED !== undefined ? Number(process.env.SEED) >>> 0 : (Math.random() * 2 ** 32) >>> 0;
const CALLS = Number(process.env.HTTP_CALLS ?? 24_000);
const CHECKOUT = JSON.parse(readFileSync(new URL("./fixtures/checkout.json", import.meta.url), "utf8"));
const LeanMachine = checkedMachine(lean.Machine);

/** The codes a problem may carry (every code http.js answers, and the engine's rejections). */
const CODES = new Set([
  "not_found", "method_not_allowed", "invalid_process_id", "process_not_found", "invalid_query", "uri_too_long", "headers_too_large",
  "missing_idempotency_key", "invalid_idempotency_key", "unsupported_media_type", "request_too_large", "request_timeout", "unreadable_body",
  "invalid_json", "invalid_event", "reserved_event_type", "event_not_accepted", "id_conflict", "contention",
  "unauthorized", "forbidden", "authorize_failed", "invalid_principal",
  "missing_event_id", "missing_event_type", "event_id_too_long", "nesting_too_deep", "number_out_of_range", "payload_too_large",
  "unknown_event_type", "invalid_payload", "expression_failed", "microstep_limit", "unknown_effect", "invalid_effect_report",
]);
/** The 500s a request may get from an API made with good options: `authorize` failed. */
const SERVER_FAULTS = new Set(["authorize_failed", "invalid_principal"]);

/**
 * What `authorize` answers, by the request's `x-auth` header: a principal (at once or later),
 * no credentials, a refusal, a Response of its own, or something that is no principal, or a throw.
 */
const ANSWERS = {
  alice: () => "alice",
  bob: async () => "bob",
  none: () => null,
  missing: () => undefined,
  no: () => false,
  own: () => new Response("go away", { status: 418, headers: { "x-own": "1" } }),
  number: () => 5,
  empty: () => "",
  long: () => "p".repeat(300),
  surrogate: () => "a\uDC00",
  object: () => ({ principal: "alice" }),
  throws: () => {
    throw new Error("token service down");
  },
  rejects: async () => {
    throw new TypeError("token service down");
  },
  thenable: () => ({ then: () => { throw new Error("no"); } }),
};
const authorize = (request) => (ANSWERS[request.headers.get("x-auth")] ?? ANSWERS.none)();

/** A body stream that gives `chunks` and then fails (a client that went away), or never ends. */
function stream(chunks, end) {
  return new ReadableStream({
    pull(controller) {
      if (chunks.length > 0) controller.enqueue(chunks.shift());
      else if (end === "error") controller.error(new Error("connection reset"));
      else if (end === "close") controller.close();
      // "hang": never ends; the body's deadline answers
    },
  });
}

/** Odd requests: mostly real Requests to the routes, with odd parts; some objects shaped as one. */
function requests(r, odd, origins, accepted) {
  const pid = () => r.pick(["p-0", "p-1", "p-2", "p-3", "o1", `q-${r.int(0, 1e6)}`, "x".repeat(128), "x".repeat(129), "-bad", "a%2Fb", "%00", "é", "..", "p-1.", "a~b"]);
  const path = () =>
    r.pick([
      () => "/api/",
      () => "/api",
      () => "/api//",
      () => `/api/processes/${pid()}/events`,
      () => `/api/processes/${pid()}/events/`,
      () => `/api/processes/${pid()}`,
      () => `/api/processes/${pid()}/events?after=${r.pick(["0", "1", "-1", "x", "1.5", "1e3", ""])}&limit=${r.pick(["1", "0", "1000", "5000", "NaN", "2"])}`,
      () => `/api/processes/${pid()}/events/extra`,
      () => "/api/processes/",
      () => "/apix/processes/p-1/events",
      () => "/other",
      () => `/api/processes/${"x".repeat(9000)}`,
      () => "/api/processes/p-1/../p-2/events",
    ])();
  const method = () => r.pick(["GET", "POST", "POST", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "FOO"]);
  const key = () => r.pick([undefined, "", "k1", "k2", `k${r.int(0, 20)}`, '"k1"', '"k1', "a b", "x".repeat(129), "o1/c1:0#1:started", "k:1", "é"]);
  const event = () =>
    r.pick([
      () => ({ type: "PAYMENT_PARTIAL", payload: { paymentId: `p${r.int(0, 5)}`, amount: r.int(0, 50) } }),
      () => ({ type: "CHECKOUT", payload: { amount: r.int(1, 50), currency: "eur" } }),
      () => ({ type: r.pick(["RETRY", "NOPE", "SHIP", "RESOLVE", "idem.effect.succeeded", "charge.succeeded", "charge.failed", "", 5, null]) }),
      () => ({ id: r.pick(["k1", "other"]), type: "PAYMENT_PARTIAL", payload: { paymentId: "p1", amount: 1 } }),
      () => ({ type: "PAYMENT_PARTIAL", payload: { paymentId: "p1", amount: "abc" } }),
      () => ({ type: "PAYMENT_PARTIAL", payload: r.pick([null, [], "x", 1e300, { deep: [[[[[[]]]]]] }]) }),
    ])();
  const body = () =>
    r.pick([
      () => JSON.stringify(event()),
      () => JSON.stringify(event()),
      () => JSON.stringify(event()),
      () => r.pick(["", "{", "null", "[]", "5", '"text"', "{}", '{"type":"PAYMENT_PARTIAL","payload":{"amount":1e309}}', "[".repeat(10_000), '{"a":1,"a":2}']),
      () => new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
      () => JSON.stringify({ type: "PAYMENT_PARTIAL", payload: { paymentId: "p1", note: BIG } }),
      () => stream([new TextEncoder().encode('{"type":"PAY')], "error"),
      () => stream(["not bytes"], "close"),
      () => stream([new TextEncoder().encode('{"type":"NOPE"}')], "close"),
    ])();
  const headers = () => {
    const h = new Headers();
    const k = key();
    if (k !== undefined) h.set("idempotency-key", k);
    const ct = r.pick(["application/json", "application/json", "application/merge-patch+json", "text/plain", "application/jsonx", undefined]);
    if (ct !== undefined) h.set("content-type", ct);
    if (r.chance(0.6)) h.set("x-auth", r.pick(Object.keys(ANSWERS)));
    if (r.chance(0.05)) h.set("content-length", r.pick(["0", "999999999", "-1", "abc"]));
    if (r.chance(0.03)) h.set("x-big", "v".repeat(17 * 1024));
    return h;
  };
  // An event as a client sends it, but for one odd part (or none): it gets as far as the engine.
  // [url, method, headers, body] of aimed requests, for a client's retry: any that was sent, or one
  // that was answered 2xx (`accepted`, filled by the caller through `origins`), so every run retries
  // requests the engine took and sees replays, whatever the seed.
  const sent = [];
  const again = (list) => {
    const [url, m, headers, text] = r.pick(list);
    const req = new Request(url, { method: m, headers, body: text });
    origins.set(req, [url, m, headers, text]);
    return req;
  };
  const aimed = () => {
    if (accepted.length > 0 && r.chance(0.1)) return again(accepted);
    if (sent.length > 0 && r.chance(0.2)) return again(sent);
    const h = new Headers({ "content-type": "application/json", "idempotency-key": r.pick(["k1", "k2", `k${r.int(0, 20)}`, '"k3"']) });
    if (r.chance(0.6)) h.set("x-auth", r.pick(["alice", "bob", "alice", "bob", ...Object.keys(ANSWERS)]));
    const odd = r.int(0, 6);
    if (odd === 0) h.set("idempotency-key", key() ?? "");
    if (odd === 1) h.delete("content-type");
    const init = { method: odd === 2 ? method() : "POST", headers: h };
    if (init.method !== "GET" && init.method !== "HEAD") init.body = odd === 3 ? body() : JSON.stringify(event());
    if (init.body instanceof ReadableStream) init.duplex = "half";
    const url = `http://x/api/processes/${odd === 4 ? pid() : r.pick(["p-0", "p-1", "p-2", "p-3"])}/events`;
    const req = new Request(url, init);
    if (typeof init.body === "string") {
      sent[sent.length < 32 ? sent.length : r.int(0, 31)] = [url, init.method, [...h], init.body];
      origins.set(req, [url, init.method, [...h], init.body]);
    }
    return req;
  };
  const real = () => {
    if (r.chance(0.4)) return aimed();
    const m = method();
    const init = { method: m, headers: headers() };
    if (m !== "GET" && m !== "HEAD" && r.chance(0.9)) {
      init.body = body();
      if (init.body instanceof ReadableStream) init.duplex = "half";
    }
    return new Request(`http://x${path()}`, init);
  };
  const shaped = () => ({
    url: r.pick(["http://x/api/", "/api/", `http://x/api/processes/${pid()}/events`, "not a url", "http://x/api/processes/p-1"]),
    method: method(),
    headers: r.chance(0.7) ? headers() : { get: () => r.pick([5, null, "k1", {}]), *[Symbol.iterator]() {} },
    body: r.pick([null, undefined, stream([new TextEncoder().encode("{}")], "close"), { getReader: () => r.pick([5, null, { read: () => null }]) }]),
  });
  return () => (r.chance(0.8) ? real() : r.chance(0.6) ? shaped() : odd());
}

/** The options of one `createHttpApi` call: good ones, each sometimes odd, sometimes an odd key more. */
function randomOptions(r, odd, made) {
  const good = {
    machine: () => r.pick([made.machine, made.lean]),
    store: () => r.pick([made.store, new idem.MemoryStore(), { load: () => null, commit: () => ({ ok: true, version: 1 }) }, new idem.D1Store(offline())]),
    basePath: () => r.pick(["", "/api", "/api/", "/a b"]),
    maxBodyBytes: () => r.pick([1, 100, 70_000]),
    bodyTimeoutMs: () => r.pick([1, 1_000]),
    maxUrlBytes: () => r.pick([10, 8192]),
    maxHeaderBytes: () => r.pick([10, 20_000]),
    afterCommit: () => r.pick([null, () => 5, () => { throw new Error("queue down"); }, async () => { throw new Error("queue down"); }]),
    onError: () => () => {},
    onWarning: () => () => {},
    authorize: () => authorize,
    view: () => r.pick(["summary", "full"]),
    now: () => r.pick([() => T0, T0, () => "123", () => NaN]),
    maxRetries: () => r.int(0, 3),
    backoff: () => () => 0,
    lane: () => r.chance(0.5),
    laneStallMs: () => r.pick([0, 100]),
  };
  const options = { machine: good.machine(), store: good.store(), onError: () => {}, onWarning: () => {} };
  for (const [k, make] of Object.entries(good)) {
    if (r.chance(0.2)) options[k] = make();
    if (r.chance(0.03)) options[k] = odd();
  }
  if (r.chance(0.05)) options[`extra${r.int(0, 3)}`] = odd();
  return r.chance(0.05) ? odd() : options;
}

/**
 * What is wrong with `res`, the answer to a Request (null if nothing): a problem+json with its
 * status and a stable code, a 2xx in JSON, a 500 only where `authorize` failed.
 */
async function badAnswer(res, seen) {
  if (!(res instanceof Response)) return `not a Response: ${describeArg(res)}`;
  seen?.add(`${res.status} ${res.status < 300 ? (res.headers.get("idempotency-replayed") ? "replay" : "") : (res.headers.get("x-own") ? "own" : (await res.clone().json()).code)}`);
  if (res.headers.get("x-own") === "1") return res.status === 418 ? null : `authorize's own Response changed: ${res.status}`;
  const text = await res.text();
  const type = res.headers.get("content-type");
  if (res.status >= 200 && res.status < 300) {
    if (type !== "application/json") return `${res.status} with content-type ${type}`;
    JSON.parse(text);
    return null;
  }
  if (type !== "application/problem+json") return `${res.status} with content-type ${type}`;
  const body = JSON.parse(text);
  if (body.status !== res.status) return `problem status ${body.status} on a ${res.status}`;
  if (!CODES.has(body.code)) return `${res.status} with an unknown code ${body.code}`;
  if (res.status === 500 && !SERVER_FAULTS.has(body.code)) return `500 ${body.code}`;
  return null;
}

/** A known stream of requests to `api`, each answer as one line: status, the headers that matter, body. */
async function knownStream(api, base, withAuth) {
  const lines = [];
  const send = async (method, path, { key, body, auth } = {}) => {
    const headers = { "content-type": "application/json" };
    if (key !== undefined) headers["idempotency-key"] = key;
    if (withAuth) headers["x-auth"] = auth ?? "alice";
    const res = await api.handle(new Request(`http://x${base}${path}`, { method, headers, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) }));
    const kept = ["content-type", "location", "idempotency-replayed", "idem-outcome", "idem-attempts", "allow", "www-authenticate"].map((h) => res.headers.get(h));
    lines.push(JSON.stringify([method, path, res.status, kept, await res.text()]));
  };
  const pay = (paymentId, amount) => ({ type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });
  await send("GET", "/");
  for (const pid of ["stream-a", "stream-b"]) {
    await send("POST", `/processes/${pid}/events`, { key: "k0", body: pay("p0", 10) });
    await send("POST", `/processes/${pid}/events`, { key: "k1", body: pay("p1", 20) });
    await send("POST", `/processes/${pid}/events`, { key: "k0", body: pay("p0", 10) });
    await send("POST", `/processes/${pid}/events`, { key: "k0", body: pay("p0", 11) });
    await send("POST", `/processes/${pid}/events`, { key: "k0", body: pay("p0", 10), auth: "bob" });
    await send("POST", `/processes/${pid}/events`, { key: "k2", body: { type: "CHECKOUT", payload: { amount: 30, currency: "eur" } } });
    await send("POST", `/processes/${pid}/events`, { key: "k3", body: pay("p3", 5) });
    await send("POST", `/processes/${pid}/events`, { key: "k4", body: "{" });
    await send("POST", `/processes/${pid}/events`, { key: "k5", body: { type: "idem.effect.succeeded" } });
    await send("POST", `/processes/${pid}/events`, { key: "k6", body: pay("p6", 1), auth: "none" });
    await send("GET", `/processes/${pid}`);
    await send("GET", `/processes/${pid}/events?after=0&limit=3`);
  }
  await send("GET", "/processes/stream-none");
  return lines;
}

test(`the HTTP API, called with random arguments and odd requests, answers or throws an IdemError with a code (SEED=${SEED})`, async () => {
  console.log(`http arguments fuzz: SEED=${SEED} HTTP_CALLS=${CALLS}`);
  const r = rng(SEED ^ 0x4177);
  const { good, snapshots } = pools(r);
  const made = { machine: new idem.Machine(CHECKOUT), lean: new LeanMachine(CHECKOUT), store: new idem.MemoryStore() };
  const ctx = { good, snapshots, machine: made.machine, raw: made.lean };
  const odd = oddValues(r, ctx);
  const origins = new WeakMap(); // an aimed Request → what it was made of
  const accepted = []; // aimed requests answered 2xx, for a client's retry
  const request = requests(r, odd, origins, accepted);
  /** Remembers an aimed request the API took, so that a later call retries it. */
  const remember = (req, res) => {
    if (res instanceof Response && res.status >= 200 && res.status < 300 && origins.has(req)) accepted[accepted.length < 32 ? accepted.length : r.int(0, 31)] = origins.get(req);
  };
  const told = { errors: 0, warnings: 0 };
  // afterCommit throws on one commit in three and rejects on another: the answers must not change.
  let commits = 0;
  const afterCommit = () => {
    commits++;
    if (commits % 3 === 0) throw new Error("queue down");
    return commits % 3 === 1 ? Promise.reject(new Error("queue down")) : Promise.resolve();
  };
  const common = { afterCommit, onError: () => told.errors++, onWarning: () => told.warnings++, now: () => T0 + 5_000 };
  // The APIs that take the odd requests (good options), and that serve the known stream after.
  const used = {
    plain: createHttpApi({ machine: made.machine, store: made.store, basePath: "/api", ...common }),
    callers: createHttpApi({ machine: made.lean, store: new idem.MemoryStore(), basePath: "/api", authorize, ...common }),
  };
  const hooks = () => (r.chance(0.9) ? r.pick([undefined, {}, { waitUntil: () => {} }, { waitUntil: () => { throw new Error("too late"); } }]) : odd());
  const goodHooks = (h) => h === undefined || (typeof h === "object" && h !== null && !Array.isArray(h) && (h.waitUntil === undefined || typeof h.waitUntil === "function"));

  /** [name, call()]: a call answers what is wrong with its answer (a string), or nothing. */
  const calls = [
    ["createHttpApi", async () => {
      const api = createHttpApi(randomOptions(r, odd, made));
      // An API that was made serves a request: it answers, or throws an IdemError with a code.
      const res = await api.handle(request());
      if (res instanceof Response) await res.arrayBuffer();
    }],
    ["handle", async () => {
      const req = request();
      const h = hooks();
      const res = await used.plain.handle(req, h);
      remember(req, res);
      return req instanceof Request && goodHooks(h) ? badAnswer(res, seen) : null;
    }],
    ["handle (authorize)", async () => {
      const req = request();
      const h = hooks();
      const res = await used.callers.handle(req, h);
      remember(req, res);
      return req instanceof Request && goodHooks(h) ? badAnswer(res, seen) : null;
    }],
    ["matches", () => void r.pick([used.plain, used.callers]).matches(r.chance(0.5) ? request() : odd())],
    ["refuseOversized", async () => {
      const res = refuseOversized(...argumentsFor(r, [request, () => ({ maxUrlBytes: r.pick([10, 100, 8192]), maxHeaderBytes: r.pick([10, 100, 16384]) })], odd));
      return res === null ? null : badAnswer(res);
    }],
    ["problem", () => void problem(...argumentsFor(r, [() => r.pick([400, 404, 422, 500, 599]), () => "some_code", () => "what went wrong", () => ({ processId: "p-1" }), () => ({ "x-a": "1" })], odd))],
    ["parseIdempotencyKey", () => void parseIdempotencyKey(r.chance(0.5) ? r.pick([null, "k1", '"k1"', " k1 ", '"a\\"b"', "x".repeat(200), ""]) : odd())],
    ["scopedEventId", async () => void (await scopedEventId(...argumentsFor(r, [() => r.pick(["alice", "bob", "é".repeat(3)]), () => r.pick(["k1", "k-2"])], odd)))],
  ];

  const counts = new Map();
  const failures = new Map();
  const seen = new Set(); // "status code" of the answers to Requests: how deep the run got
  const started = performance.now();
  for (let i = 0; i < CALLS; i++) {
    const [name, call] = calls[i % calls.length];
    counts.set(name, (counts.get(name) ?? 0) + 1);
    let bad = null;
    try {
      bad = (await call()) ?? null;
    } catch (err) {
      bad = name.startsWith("handle") && err?.code !== "invalid_argument" ? `threw ${err?.code}: ${err?.message}` : badThrow(err);
    }
    if (bad !== null && !failures.has(`${name}: ${bad}`)) failures.set(`${name}: ${bad}`, i);
  }
  const seconds = (performance.now() - started) / 1000;
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  console.log(`http arguments fuzz: ${total} calls to ${counts.size} functions in ${seconds.toFixed(1)} s (onError told ${told.errors} times)`);
  assert.deepEqual([...failures].slice(0, 10), [], `SEED=${SEED}: calls that threw without a code, or answers off the contract`);
  assert.ok(total >= 20_000 || process.env.HTTP_CALLS !== undefined, `${total} calls`);
  console.log(`http arguments fuzz: ${seen.size} kinds of answer: ${[...seen].sort().join(", ")}`);
  // The odd requests reach every layer: the route, authorize, the body, the engine, a replay.
  const deep = ["201 ", "200 ", " replay", "409 event_not_accepted", "422 id_conflict", "422 reserved_event_type", "400 invalid_json", "400 unreadable_body",
    "413 request_too_large", "415 unsupported_media_type", "401 unauthorized", "403 forbidden", "418 own", "500 authorize_failed", "500 invalid_principal",
    "405 method_not_allowed", "414 uri_too_long", "431 headers_too_large", "400 invalid_idempotency_key", "400 missing_idempotency_key", "404 process_not_found"];
  if (CALLS >= 20_000) assert.deepEqual(deep.filter((k) => ![...seen].some((answer) => answer === k || (k.startsWith(" ") && answer.endsWith(k)))), [], "answers the run never reached");

  // The same APIs serve the known stream as fresh ones do, byte for byte.
  const fresh = {
    plain: createHttpApi({ machine: new idem.Machine(CHECKOUT), store: new idem.MemoryStore(), basePath: "/api", ...common }),
    callers: createHttpApi({ machine: new LeanMachine(CHECKOUT), store: new idem.MemoryStore(), basePath: "/api", authorize, ...common }),
  };
  for (const [name, withAuth] of [["plain", false], ["callers", true]]) {
    const a = await knownStream(used[name], "/api", withAuth);
    const b = await knownStream(fresh[name], "/api", withAuth);
    assert.equal(a.length, b.length);
    a.forEach((line, i) => assert.equal(line, b[i], `${name} step ${i}`));
  }
});

test("a body that fails mid-way is 400 unreadable_body, nothing stored; a request-shaped object with a broken body too", async () => {
  const store = new idem.MemoryStore();
  const api = createHttpApi({ machine: new idem.Machine(CHECKOUT), store, afterCommit: null });
  const post = (body) =>
    api.handle(new Request("http://x/processes/o1/events", { method: "POST", headers: { "content-type": "application/json", "idempotency-key": "k1" }, body, duplex: "half" }));
  for (const body of [stream([new TextEncoder().encode('{"type":"PAY')], "error"), stream(["text, not bytes"], "close")]) {
    const res = await post(body);
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "unreadable_body");
  }
  const shaped = { url: "http://x/processes/o1/events", method: "POST", headers: new Headers({ "idempotency-key": "k1" }), body: { getReader: () => ({ read: () => null }) } };
  assert.equal((await (await api.handle(shaped)).json()).code, "unreadable_body");
  assert.equal(store.writes, 0);
  // The same key, sent whole, is a new event: nothing of the failed tries was recorded.
  const ok = await post(JSON.stringify({ type: "PAYMENT_PARTIAL", payload: { paymentId: "p1", amount: 1 } }));
  assert.equal(ok.status, 201);
});

test("an odd request or argument is an IdemError naming it; the HTTP API's options are checked at creation", async () => {
  const machine = new idem.Machine(CHECKOUT);
  const store = new idem.MemoryStore();
  const cases = [
    [() => createHttpApi(undefined), "options", "options must be an object { machine, store, ... }, got undefined"],
    [() => createHttpApi({}), "options.machine", "options.machine must be a Machine (an object with reduce, due, inspect, retention and eventTypes), got undefined"],
    [() => createHttpApi({ machine: 5, store }), "options.machine", "options.machine must be a Machine (an object with reduce, due, inspect, retention and eventTypes), got the number 5"],
    [() => createHttpApi({ machine, store: 5 }), "options.store", "options.store must be a store (an object with load and commit), got the number 5"],
    [() => createHttpApi({ machine, store, basePath: 5 }), "options.basePath", 'options.basePath must be a path starting with "/" (or ""), got the number 5'],
    [() => createHttpApi({ machine, store, now: "123" }), "options.now", 'options.now must be a function returning ms or a number of ms, got the string "123"'],
    [() => createHttpApi({ machine, store, afterCommit: 5 }), "options.afterCommit", "options.afterCommit must be a function or null, got the number 5"],
    [() => createHttpApi({ machine, store, maxBodyBytes: "1" }), "options.maxBodyBytes", 'options.maxBodyBytes must be a whole number of bytes above 0, got the string "1"'],
    [() => createHttpApi({ machine, store, authorize: "Bearer s3cret" }), "options.authorize", "options.authorize must be a function (request, { processId, action }) => principal, got a string of 13 characters"],
    [() => createHttpApi({ machine, store }).matches(undefined), "request", "request must be a Request, got undefined"],
    [() => refuseOversized({ url: "/x?token=s3cret", method: "GET", headers: new Headers(), body: null }), "request.url", "request.url must be an absolute URL, got a string of 15 characters"],
    [() => parseIdempotencyKey(5), "raw", "raw must be a header value (a string) or null, got the number 5"],
  ];
  for (const [call, path, message] of cases) {
    assert.throws(call, (err) => {
      assert.ok(err instanceof IdemError, String(err));
      assert.deepEqual([err.code, err.path, err.message], ["invalid_argument", path, message]);
      return true;
    });
  }
  const api = createHttpApi({ machine, store, afterCommit: null });
  for (const request of [undefined, "http://x/", {}]) {
    await assert.rejects(api.handle(request), { code: "invalid_argument", path: "request" });
  }
  await assert.rejects(scopedEventId("s3cret-token-".repeat(30), "k1"), { code: "invalid_argument", message: "principal must be a well-formed string of 1 to 256 characters, got a string of 390 characters" });
  assert.equal(store.writes, 0);
});
