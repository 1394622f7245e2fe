// The HTTP mapping with the memory store: one test per row of the status table.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Machine } from "../src/node.js";
import { IdemError } from "../src/error.js";
import {
  ACTIONS,
  createHttpApi,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_HEADER_BYTES,
  DEFAULT_MAX_URL_BYTES,
  parseIdempotencyKey,
  problem,
  RETRY_AFTER_MAX_SECONDS,
  refuseOversized,
  scopedEventId,
} from "../src/http.js";
import { isEngineEventType } from "../src/host.js";
import { MemoryStore } from "../src/stores/memory.js";
import { fixture } from "./helpers.mjs";

function setup(options = {}) {
  const store = options.store ?? new MemoryStore();
  const machine = new Machine(options.definition ?? fixture("checkout.json"));
  const api = createHttpApi({ machine, store, basePath: "/api", ...options.api });
  const post = (pid, key, body, headers = {}) =>
    api.handle(
      new Request(`http://x/api/processes/${pid}/events`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(key === null ? {} : { "idempotency-key": key }), ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      }),
    );
  const get = (path, headers = {}) => api.handle(new Request(`http://x/api${path}`, { headers }));
  return { store, machine, api, post, get };
}
const pay = (paymentId, amount = 10) => ({ type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });
const isProblem = (res) => assert.equal(res.headers.get("content-type"), "application/problem+json");

test("applied creating the process -> 201 with Location; later applied -> 200", async () => {
  const { post } = setup();
  const a = await post("o1", "k1", pay("p1"));
  assert.equal(a.status, 201);
  assert.equal(a.headers.get("location"), "/api/processes/o1");
  assert.deepEqual(await a.json(), { processId: "o1", eventId: "k1", status: "applied", revision: 1, response: "recorded p1" });
  const b = await post("o1", "k2", pay("p2"));
  assert.equal(b.status, 200);
  assert.equal((await b.json()).revision, 2);
  assert.equal(b.headers.get("idempotency-replayed"), null);
});

test("duplicate -> the first status and body, byte for byte, marked as a replay", async () => {
  const { post, store } = setup();
  const first = await post("o1", "k1", pay("p1"));
  const firstBody = await first.text();
  await post("o1", "k2", pay("p2"));
  const writes = store.writes;
  const again = await post("o1", "k1", pay("p1"));
  assert.equal(again.status, first.status);
  assert.equal(await again.text(), firstBody);
  assert.equal(again.headers.get("idempotency-replayed"), "true");
  assert.equal(again.headers.get("location"), first.headers.get("location"));
  assert.equal(store.writes, writes);
  // The key may also be sent as a structured-field string.
  const quoted = await post("o1", '"k1"', pay("p1"));
  assert.equal(await quoted.text(), firstBody);
});

test("missing Idempotency-Key -> 400 missing_idempotency_key", async () => {
  const { post } = setup();
  const res = await post("o1", null, pay("p1"));
  assert.equal(res.status, 400);
  isProblem(res);
  assert.equal((await res.json()).code, "missing_idempotency_key");
});

test("malformed Idempotency-Key or process id -> 400", async () => {
  const { post } = setup();
  for (const key of ["", "a b", "has/slash", "x".repeat(129), "o1/c1:0#1:started"]) {
    const res = await post("o1", key, pay("p1"));
    assert.equal(res.status, 400, key);
    assert.equal((await res.json()).code, "invalid_idempotency_key");
  }
  const res = await post("-bad", "k1", pay("p1"));
  assert.equal(res.status, 400);
  assert.equal((await res.json()).code, "invalid_process_id");
});

test("key reused with a different payload -> 422 id_conflict", async () => {
  const { post } = setup();
  await post("o1", "k1", pay("p1", 10));
  const res = await post("o1", "k1", pay("p1", 99));
  assert.equal(res.status, 422);
  isProblem(res);
  const body = await res.json();
  assert.equal(body.code, "id_conflict");
  assert.equal(body.eventId, "k1");
});

test("ignored (the state does not accept the event) -> 409 event_not_accepted, nothing recorded", async () => {
  const { post, store } = setup();
  await post("o1", "k1", pay("p1"));
  const res = await post("o1", "k2", { type: "SHIP" });
  assert.equal(res.status, 409);
  assert.equal(res.headers.get("idem-outcome"), "ignored");
  assert.equal((await res.json()).code, "event_not_accepted");
  assert.equal(store.writes, 1);
});

test("a machine that records ignored ids replays the first 409 as a replay", async () => {
  const def = fixture("checkout.json");
  def.recordIgnored = true;
  const { post, store } = setup({ definition: def });
  await post("o1", "k1", pay("p1"));
  const first = await post("o1", "k2", { type: "SHIP" });
  assert.equal(first.status, 409);
  assert.equal(store.writes, 2, "the ignored id was recorded");
  const again = await post("o1", "k2", { type: "SHIP" });
  assert.equal(again.status, 409);
  assert.equal(again.headers.get("idempotency-replayed"), "true");
  assert.equal(await again.text(), await first.text());
});

test("rejected -> 400 / 413 / 422 by code", async () => {
  const { post } = setup();
  const unknown = await post("o1", "k1", { type: "NOPE" });
  assert.equal(unknown.status, 422);
  assert.equal((await unknown.json()).code, "unknown_event_type");
  const noType = await post("o1", "k2", { payload: {} });
  assert.equal(noType.status, 400);
  assert.equal((await noType.json()).code, "missing_event_type");
  const extra = await post("o1", "k3", { type: "SHIP", bogus: 1 });
  assert.equal(extra.status, 400);
  assert.equal((await extra.json()).code, "invalid_event");
  const big = await post("o1", "k4", { type: "PAYMENT_PARTIAL", payload: { paymentId: "p", pad: "x".repeat(64 * 1024) } });
  assert.equal(big.status, 413);
  assert.equal((await big.json()).code, "payload_too_large");
  const notJson = await post("o1", "k5", "{");
  assert.equal(notJson.status, 400);
  assert.equal((await notJson.json()).code, "invalid_json");
});

test("client events the engine reserves -> 422 reserved_event_type", async () => {
  const { post } = setup();
  for (const type of ["idem.effect.succeeded", "charge.succeeded", "charge.failed"]) {
    const res = await post("o1", "k1", { type, payload: { key: "x" } });
    assert.equal(res.status, 422, type);
    assert.equal((await res.json()).code, "reserved_event_type");
  }
});

test("the API refuses exactly the types the engine reserves; any other idem.* type is the machine's to judge", async () => {
  const { post, machine } = setup();
  const types = ["idem.after", "idem.effect.started", "idem.effect.anything", "idem.other", "idem.afterwards", "idem.effect", "idem."];
  for (const type of types) {
    // The engine's answer to the type from outside, under an id no report uses: only a reserved
    // type gets past the check for types the machine accepts.
    const engine = machine.reduce(null, { id: "outside", type, payload: {} }, 0, "probe");
    const engineReserves = engine.error?.code !== "unknown_event_type";
    assert.equal(isEngineEventType(type), engineReserves, type);
    const res = await post("o1", `k-${type.replace(/[^a-z]/g, "")}`, { type, payload: {} });
    const body = await res.json();
    assert.equal(body.code, engineReserves ? "reserved_event_type" : "unknown_event_type", type);
    assert.equal(res.status, 422, type);
  }
});

test("body over the limit -> 413 request_too_large; wrong media type -> 415", async () => {
  const { post } = setup();
  const res = await post("o1", "k1", JSON.stringify({ type: "SHIP", payload: { pad: "x".repeat(DEFAULT_MAX_BODY_BYTES) } }));
  assert.equal(res.status, 413);
  assert.equal((await res.json()).code, "request_too_large");
  const text = await post("o1", "k2", "hello", { "content-type": "text/plain" });
  assert.equal(text.status, 415);
});

test("contention outlasting the retries -> 409 contention with Retry-After", async () => {
  const inner = new MemoryStore();
  const store = { load: (id) => inner.load(id), commit: async () => ({ ok: false, conflict: true }) };
  const { post } = setup({ store, api: { maxRetries: 2, backoff: () => 0 } });
  const res = await post("o1", "k1", pay("p1"));
  assert.equal(res.status, 409);
  assert.equal((await res.json()).code, "contention");
  assert.equal(res.headers.get("idem-attempts"), "3", "the first try and two retries");
  // Retry-After carries jitter: whole seconds from 1 to RETRY_AFTER_MAX_SECONDS, so clients that
  // collided do not come back in step.
  const seen = new Set([res.headers.get("retry-after")]);
  for (let i = 0; i < 40; i++) {
    const again = await post("o1", "k1", pay("p1"));
    assert.equal(again.status, 409);
    seen.add(again.headers.get("retry-after"));
  }
  for (const v of seen) assert.ok(/^[1-9]$/.test(v) && Number(v) <= RETRY_AFTER_MAX_SECONDS, `Retry-After ${v}`);
  assert.ok(seen.size >= 2, `41 answers, one Retry-After: ${[...seen]}`);
});

// --- Nothing silently altered: the body is read strictly and reaches the engine as sent. ---

/** POST raw bytes (a Uint8Array or a string) as the body. */
const postBytes = (api, pid, key, bytes, headers = {}) =>
  api.handle(new Request(`http://x/api/processes/${pid}/events`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key, ...headers },
    body: bytes,
  }));
const utf8 = (s) => new TextEncoder().encode(s);
/** `{"type":"PAYMENT_PARTIAL","payload":{"paymentId":"<id>","amount":<amount as written>}}` */
const payText = (paymentId, amount) => `{"type":"PAYMENT_PARTIAL","payload":{"paymentId":"${paymentId}","amount":${amount}}}`;

test("invalid UTF-8 in the body -> 400 invalid_json (never replaced by U+FFFD), nothing recorded", async () => {
  const { api, store } = setup();
  const before = utf8(payText("p-X", 1));
  const at = before.indexOf("X".charCodeAt(0));
  const cases = {
    "a lone 0xff": [0xff],
    "a cut sequence": [0xc3],
    "an overlong slash": [0xc0, 0xaf],
    "a surrogate encoded": [0xed, 0xa0, 0x80],
  };
  for (const [name, bad] of Object.entries(cases)) {
    const bytes = new Uint8Array([...before.subarray(0, at), ...bad, ...before.subarray(at + 1)]);
    const res = await postBytes(api, "o1", "k1", bytes);
    assert.equal(res.status, 400, name);
    isProblem(res);
    const body = await res.json();
    assert.equal(body.code, "invalid_json", name);
    assert.match(body.detail, /utf-8/);
  }
  assert.equal(store.writes, 0);
  // The same text with the character well formed is applied.
  assert.equal((await postBytes(api, "o1", "k1", utf8(payText("p-é", 1)))).status, 201);
});

test("a number beyond f64's range -> 400 number_out_of_range from the engine, nothing recorded", async () => {
  const { api, store } = setup();
  for (const amount of ["1e309", "-1e309", "1e400", "2e308"]) {
    const res = await postBytes(api, "o1", "k1", payText("p1", amount));
    assert.equal(res.status, 400, amount);
    isProblem(res);
    const body = await res.json();
    assert.equal(body.code, "number_out_of_range", amount);
    assert.equal(res.headers.get("idem-outcome"), "rejected");
  }
  assert.equal(store.writes, 0);
  const max = await postBytes(api, "o1", "k1", payText("p1", "1.7976931348623157e308"));
  assert.equal(max.status, 201, "the largest double is a number");
});

test("the engine reads the body's own text: digits JSON.parse would round are kept, and compared", async () => {
  const { api, store } = setup();
  // 2^64 - 1: JSON.parse rounds it to 18446744073709552000; the engine reads it exactly.
  const first = await postBytes(api, "o1", "k1", `{"type":"CHECKOUT","payload":{"amount":18446744073709551615}}`);
  assert.equal(first.status, 201);
  const rounded = await postBytes(api, "o1", "k1", `{"type":"CHECKOUT","payload":{"amount":18446744073709552000}}`);
  assert.equal(rounded.status, 422, "another number under the same key");
  assert.equal((await rounded.json()).code, "id_conflict");
  const same = await postBytes(api, "o1", "k1", ` {"payload":{"amount":18446744073709551615}, "type":"CHECKOUT"}\n`);
  assert.equal(same.status, 201);
  assert.equal(same.headers.get("idempotency-replayed"), "true");
  // What is stored holds the digits as sent (inspect hands them to JSON.parse, which would round them).
  const { snapshot } = await store.load("o1");
  assert.ok(snapshot.includes('{"amount":18446744073709551615}'), "the stored context keeps the exact integer");
});

test("the fingerprint and numbers: 1.0 = 1e0 and -0 = -0.0, but 1 ≠ 1.0 and 0 ≠ -0 (decided in http.js)", async () => {
  const { api } = setup();
  // [first body's amount, a retry's amount under the same key, replay?]
  const table = [
    ["1", "1", true],
    ["1.0", "1e0", true],
    ["1e0", "10e-1", true],
    ["1.50", "1.5", true],
    ["-0", "-0.0", true],
    ["1", "1.0", false],
    ["1", "1e0", false],
    ["0", "-0", false],
    ["0", "0.0", false],
  ];
  for (const [i, [a, b, replay]] of table.entries()) {
    const key = `n${i}`;
    const first = await postBytes(api, "o1", key, payText(`q${i}`, a));
    assert.ok(first.status === 200 || first.status === 201, `${a}: ${first.status}`);
    const retry = await postBytes(api, "o1", key, payText(`q${i}`, b));
    if (replay) {
      assert.equal(retry.headers.get("idempotency-replayed"), "true", `${a} then ${b}`);
      assert.equal(retry.status, first.status);
    } else {
      assert.equal(retry.status, 422, `${a} then ${b}`);
      assert.equal((await retry.json()).code, "id_conflict", `${a} then ${b}`);
    }
  }
});

test("the id from the header goes in front of the body's own members; a body with the same id is taken as sent", async () => {
  const { api } = setup();
  const missingType = await postBytes(api, "o1", "k0", "{ }");
  assert.equal(missingType.status, 400);
  assert.equal((await missingType.json()).code, "missing_event_type");
  const spaced = await postBytes(api, "o1", "k1", `\r\n\t {  "type" : "PAYMENT_PARTIAL" , "payload" : {"paymentId":"p1","amount":1} } `);
  assert.equal(spaced.status, 201);
  const withId = await postBytes(api, "o1", "k2", `{"id":"k2","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p2","amount":1}}`);
  assert.equal(withId.status, 200);
  const otherId = await postBytes(api, "o1", "k3", `{"id":"k4","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p3","amount":1}}`);
  assert.equal(otherId.status, 400);
  // A key given twice: JSON.parse and the engine both keep the last value.
  const twice = await postBytes(api, "o1", "k5", `{"id":"k9","id":"k5","type":"PAYMENT_PARTIAL","payload":{"paymentId":"p5","amount":1}}`);
  assert.equal(twice.status, 200);
  const view = await (await api.handle(new Request("http://x/api/processes/o1/events"))).json();
  assert.deepEqual(view.events.map((e) => e.eventId), ["k1", "k2", "k5"]);
});

test("a body that stalls -> 408 request_timeout after bodyTimeoutMs, nothing recorded", async () => {
  const { api, store } = setup({ api: { bodyTimeoutMs: 200 } });
  let cancelled = false;
  const stalled = new ReadableStream({
    start(c) {
      c.enqueue(utf8('{"type":"PAYMENT_PA'));
    },
    cancel() {
      cancelled = true;
    },
  });
  const t0 = Date.now();
  const res = await api.handle(new Request("http://x/api/processes/o1/events", {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": "k1" },
    body: stalled,
    duplex: "half",
  }));
  const ms = Date.now() - t0;
  assert.equal(res.status, 408);
  isProblem(res);
  assert.equal((await res.json()).code, "request_timeout");
  assert.ok(ms >= 190 && ms < 2000, `answered after ${ms} ms`);
  assert.ok(cancelled, "the body is cancelled, not read further");
  assert.equal(store.writes, 0);
  // A body that trickles in slower than the deadline is cut off too (the deadline is for the whole body).
  let i = 0;
  const trickle = new ReadableStream({
    async pull(c) {
      await new Promise((r) => setTimeout(r, 50));
      c.enqueue(utf8(i++ === 0 ? "{" : " "));
    },
  });
  const slow = await api.handle(new Request("http://x/api/processes/o1/events", {
    method: "POST", headers: { "idempotency-key": "k2" }, body: trickle, duplex: "half",
  }));
  assert.equal(slow.status, 408);
});

test("a long URL -> 414 uri_too_long; large headers -> 431 headers_too_large (problem+json, limits configurable)", async () => {
  const { api } = setup();
  const long = await api.handle(new Request(`http://x/api/processes/o1?pad=${"a".repeat(DEFAULT_MAX_URL_BYTES)}`));
  assert.equal(long.status, 414);
  isProblem(long);
  assert.equal((await long.json()).code, "uri_too_long");
  const fits = await api.handle(new Request(`http://x/api/processes/o1?pad=${"a".repeat(DEFAULT_MAX_URL_BYTES - 100)}`));
  assert.equal(fits.status, 404, "under the limit: routed (no such process)");
  const big = await api.handle(new Request("http://x/api/", { headers: { "x-pad": "a".repeat(DEFAULT_MAX_HEADER_BYTES) } }));
  assert.equal(big.status, 431);
  isProblem(big);
  assert.equal((await big.json()).code, "headers_too_large");
  const many = await api.handle(new Request("http://x/api/", { headers: Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`x-h${i}`, "a".repeat(20)])) }));
  assert.equal(many.status, 431, "many small headers count as well");
  const { api: tight } = setup({ api: { maxUrlBytes: 64, maxHeaderBytes: 256 } });
  assert.equal((await tight.handle(new Request(`http://x/api/processes/${"a".repeat(60)}`))).status, 414);
  assert.equal((await tight.handle(new Request("http://x/api/", { headers: { "x-pad": "a".repeat(300) } }))).status, 431);
  assert.equal(refuseOversized(new Request("http://x/api/")), null);
});

test("GET process, GET events, GET the API description, 404 and 405", async () => {
  const { post, get, api } = setup();
  await post("o1", "k1", pay("p1"));
  await post("o1", "k2", pay("p2"));
  const p = await get("/processes/o1");
  assert.equal(p.status, 200);
  const view = await p.json();
  assert.equal(view.value, "cart");
  assert.deepEqual(view.context.payments, ["p1", "p2"]);
  const ev = await (await get("/processes/o1/events")).json();
  assert.deepEqual(ev.events.map((e) => [e.eventId, e.revision, e.status]), [["k1", 1, "applied"], ["k2", 2, "applied"]]);
  const page = await (await get("/processes/o1/events?after=1&limit=1")).json();
  assert.deepEqual(page.events.map((e) => e.eventId), ["k2"]);
  assert.equal((await get("/processes/nobody")).status, 404);
  assert.equal((await get("/processes/nobody/events")).status, 404);
  const d = await (await get("/")).json();
  assert.equal(d.idempotency.windowMs, 86400000);
  assert.equal(d.machine.id, "checkout");
  const del = await api.handle(new Request("http://x/api/processes/o1", { method: "DELETE" }));
  assert.equal(del.status, 405);
});

test("afterCommit runs after the commit, handed to waitUntil; never for duplicates", async () => {
  const calls = [];
  const waited = [];
  const store = new MemoryStore();
  const machine = new Machine(fixture("checkout.json"));
  const api = createHttpApi({
    machine,
    store,
    afterCommit: async (pid, out) => calls.push([pid, out.status, (await store.load(pid)).version]),
  });
  const req = () =>
    new Request("http://x/processes/o1/events", {
      method: "POST",
      headers: { "idempotency-key": "k1", "content-type": "application/json" },
      body: JSON.stringify({ type: "CHECKOUT", payload: { amount: 5 } }),
    });
  await api.handle(req(), { waitUntil: (p) => waited.push(p) });
  await api.handle(req(), { waitUntil: (p) => waited.push(p) });
  await Promise.all(waited);
  assert.deepEqual(calls, [["o1", "applied", 1]]);
});

test("afterCommit that throws or rejects: onError is told, the answer is the commit's (the event is stored), a retry replays it", async () => {
  const boom = new Error("queue down");
  for (const afterCommit of [() => { throw boom; }, async () => { throw boom; }, () => ({ then: () => { throw boom; } })]) {
    const told = [];
    // onError that throws too: still the commit's answer.
    const { post, store } = setup({ api: { afterCommit, onError: (err) => { told.push(err); throw new Error("onError down"); } } });
    const first = await post("o1", "k1", { type: "CHECKOUT", payload: { amount: 5 } });
    assert.equal(first.status, 201);
    const body = await first.text();
    assert.equal(JSON.parse(body).status, "applied");
    assert.equal(store.writes, 1);
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.deepEqual(told, [boom]);
    const again = await post("o1", "k1", { type: "CHECKOUT", payload: { amount: 5 } });
    assert.deepEqual([again.status, await again.text(), again.headers.get("idempotency-replayed")], [201, body, "true"]);
    assert.equal(told.length, 1, "never for a duplicate");
  }
});

// --- Who calls: `authorize`, keys scoped by the caller, what GET shows ---

/** A bearer token per caller, as the examples read them from a secret. */
const TOKENS = { "tok-alice": "alice", "tok-bob": "bob", "tok-carol": "carol" };
const bearer = (request) => TOKENS[(request.headers.get("authorization") ?? "").replace(/^Bearer /, "")] ?? null;
const as = (token) => ({ authorization: `Bearer ${token}` });

/** A store that counts what the API asked of it. */
function countingStore() {
  const store = new MemoryStore();
  const calls = { load: 0, commit: 0, events: 0 };
  for (const name of Object.keys(calls)) {
    const f = store[name].bind(store);
    store[name] = (...args) => {
      calls[name]++;
      return f(...args);
    };
  }
  return { store, calls };
}

test("authorize: two callers sending the same key are two events; each replay is the caller's own", async () => {
  const { post, store, machine } = setup({ api: { authorize: bearer } });
  const alice = await post("o1", "k1", pay("p1", 10), as("tok-alice"));
  assert.equal(alice.status, 201);
  const aliceBody = await alice.text();
  assert.deepEqual(JSON.parse(aliceBody), { processId: "o1", eventId: "k1", status: "applied", revision: 1, response: "recorded p1" });
  // Bob's k1 is not Alice's: applied on its own, never her frozen answer.
  const bob = await post("o1", "k1", pay("p2", 5), as("tok-bob"));
  assert.equal(bob.status, 200);
  assert.equal(bob.headers.get("idempotency-replayed"), null);
  const bobBody = await bob.text();
  assert.deepEqual(JSON.parse(bobBody), { processId: "o1", eventId: "k1", status: "applied", revision: 2, response: "recorded p2" });
  // Each replay answers its own caller's first answer.
  const aliceAgain = await post("o1", "k1", pay("p1", 10), as("tok-alice"));
  assert.equal(aliceAgain.status, 201);
  assert.equal(aliceAgain.headers.get("idempotency-replayed"), "true");
  assert.equal(await aliceAgain.text(), aliceBody);
  const bobAgain = await post("o1", "k1", pay("p2", 5), as("tok-bob"));
  assert.equal(bobAgain.status, 200);
  assert.equal(bobAgain.headers.get("idempotency-replayed"), "true");
  assert.equal(await bobAgain.text(), bobBody);
  // Alice's exact request from Carol is Carol's event, judged by the state: p1 is paid already.
  const carol = await post("o1", "k1", pay("p1", 10), as("tok-carol"));
  assert.equal(carol.status, 409);
  assert.equal(carol.headers.get("idem-outcome"), "ignored");
  assert.deepEqual(await carol.json().then((p) => [p.code, p.eventId]), ["event_not_accepted", "k1"]);
  // Bob reusing his own key for another request is his conflict.
  const bobConflict = await post("o1", "k1", pay("p1", 10), as("tok-bob"));
  assert.equal(bobConflict.status, 422);
  assert.equal((await bobConflict.json()).code, "id_conflict");
  // The ledger holds each key under its caller's scope, and the context both payments.
  const v = machine.inspect((await store.load("o1")).snapshot);
  assert.deepEqual(v.ledger.map((e) => e.id), [await scopedEventId("alice", "k1"), await scopedEventId("bob", "k1")]);
  assert.deepEqual(v.context.payments, ["p1", "p2"]);
  assert.equal(v.context.paid, 15);
});

test("scopedEventId: one scope per principal, a fixed length, a separator no key contains", async () => {
  const a = await scopedEventId("alice", "k1");
  assert.match(a, /^[0-9a-f]{32}:k1$/);
  assert.equal(await scopedEventId("alice", "k1"), a, "the same principal and key, the same id");
  assert.notEqual(await scopedEventId("bob", "k1"), a);
  assert.notEqual(await scopedEventId("alice", "k2"), a);
  assert.equal((await scopedEventId("x".repeat(256), "k".repeat(128))).length, 33 + 128);
  for (const [principal, key] of [["", "k1"], ["a\uD800", "k1"], ["x".repeat(257), "k1"], [7, "k1"], ["alice", "a:b"], ["alice", ""]]) {
    await assert.rejects(scopedEventId(principal, key), (err) => err instanceof IdemError && err.code === "invalid_argument");
  }
});

test("authorize: a key sent in the body as well is recorded in the caller's scope too", async () => {
  const { post, store, machine } = setup({ api: { authorize: bearer } });
  const body = { id: "k1", ...pay("p1") };
  const first = await post("o1", "k1", body, as("tok-alice"));
  assert.equal(first.status, 201);
  assert.equal((await first.json()).eventId, "k1");
  const again = await post("o1", "k1", body, as("tok-alice"));
  assert.equal(again.headers.get("idempotency-replayed"), "true");
  const other = await post("o1", "k1", { id: "k1", ...pay("p2") }, as("tok-bob"));
  assert.equal(other.status, 200);
  const v = machine.inspect((await store.load("o1")).snapshot);
  assert.deepEqual(v.ledger.map((e) => e.id), [await scopedEventId("alice", "k1"), await scopedEventId("bob", "k1")]);
  // A body whose id is not the header's key is still refused, whoever sends it.
  const differs = await post("o1", "k1", { id: "k2", ...pay("p3") }, as("tok-alice"));
  assert.equal(differs.status, 400);
  assert.equal((await differs.json()).code, "invalid_event");
});

test("authorize: the effect keys of a caller's event come from its scoped id, the same on every retry", async () => {
  const effects = [];
  const { post } = setup({ api: { authorize: bearer, afterCommit: (_pid, out) => effects.push(...out.effects.map((e) => e.key)) } });
  const checkout = { type: "CHECKOUT", payload: { amount: 5 } };
  assert.equal((await post("o1", "c1", checkout, as("tok-alice"))).status, 201);
  assert.equal((await post("o1", "c1", checkout, as("tok-alice"))).headers.get("idempotency-replayed"), "true");
  assert.deepEqual(effects, [`o1/${await scopedEventId("alice", "c1")}:0`]);
});

test("authorize refuses: null -> 401 + WWW-Authenticate, false -> 403, a Response as it is; nothing read, written or consumed", async () => {
  const { store, calls } = countingStore();
  const answers = { none: null, undef: undefined, no: false, custom: new Response("slow down", { status: 429, headers: { "retry-after": "7" } }) };
  const { post, get, api } = setup({ store, api: { authorize: (request) => answers[request.headers.get("x-who")] } });
  for (const [who, status, code] of [["none", 401, "unauthorized"], ["undef", 401, "unauthorized"], ["no", 403, "forbidden"]]) {
    const request = new Request("http://x/api/processes/o1/events", {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": "k1", "x-who": who },
      body: JSON.stringify(pay("p1")),
    });
    const res = await api.handle(request);
    assert.equal(res.status, status, who);
    isProblem(res);
    assert.equal((await res.json()).code, code);
    assert.equal(res.headers.get("www-authenticate"), status === 401 ? "Bearer" : null);
    assert.equal(request.bodyUsed, false, "the body is not read for a refused caller");
    for (const path of ["/processes/o1", "/processes/o1/events", "/"]) {
      const r = await get(path, { "x-who": who });
      assert.equal(r.status, status, `${who} GET ${path}`);
    }
  }
  const custom = await post("o1", "k1", pay("p1"), { "x-who": "custom" });
  assert.equal(custom.status, 429);
  assert.equal(custom.headers.get("retry-after"), "7");
  assert.deepEqual(calls, { load: 0, commit: 0, events: 0 });
});

test("authorize that throws -> 500 authorize_failed (onError told); an answer that is no principal -> 500 invalid_principal; nothing stored", async () => {
  const { store, calls } = countingStore();
  const seen = [];
  const boom = new Error("token service down");
  const { post } = setup({ store, api: { authorize: async () => { throw boom; }, onError: (err) => seen.push(err) } });
  const res = await post("o1", "k1", pay("p1"));
  assert.equal(res.status, 500);
  isProblem(res);
  const p = await res.json();
  assert.equal(p.code, "authorize_failed");
  assert.doesNotMatch(p.detail, /token service/, "the error's message stays on the server");
  assert.deepEqual(seen, [boom]);
  for (const [answer, said] of [["", "an empty string"], ["x".repeat(257), "a string of 257 characters"], ["a\uDC00b", "a string of 3 characters"], [42, "the number 42"], [true, "true"], [{ id: "alice" }, "an object"], [["alice"], "an array"]]) {
    const { post: send } = setup({ store, api: { authorize: () => answer } });
    const bad = await send("o1", "k1", pay("p1"));
    assert.equal(bad.status, 500, said);
    const body = await bad.json();
    assert.equal(body.code, "invalid_principal");
    assert.ok(body.detail.endsWith(`it answered ${said}`), body.detail);
  }
  assert.deepEqual(calls, { load: 0, commit: 0, events: 0 });
});

test("authorize is asked once per request, with the route's action and process id; route errors are answered before it", async () => {
  const asked = [];
  const { post, get, api } = setup({ api: { authorize: async (request, context) => (asked.push([request.method, context]), "alice") } });
  await post("o1", "k1", pay("p1"));
  await get("/processes/o1");
  await get("/processes/o1/events");
  await get("/");
  assert.deepEqual(asked, [
    ["POST", { processId: "o1", action: "event" }],
    ["GET", { processId: "o1", action: "read" }],
    ["GET", { processId: "o1", action: "log" }],
    ["GET", { processId: null, action: "describe" }],
  ]);
  asked.length = 0;
  assert.equal((await get("/nowhere")).status, 404);
  assert.equal((await get("/processes/-bad")).status, 400);
  assert.equal((await api.handle(new Request("http://x/api/processes/o1", { method: "DELETE" }))).status, 405);
  assert.deepEqual(asked, []);
  assert.equal((await (await get("/")).json()).idempotency.keyScope, "caller");
  assert.equal((await (await setup().get("/")).json()).idempotency.keyScope, "process");
});

test("GET by default: state, context, revision, done and due times; no ledger, no outbox payloads; view: full shows them", async () => {
  const now = 1_700_000_000_000;
  const { post, get } = setup({ api: { now, afterCommit: null } });
  await post("o1", "k1", pay("p1"));
  await post("o1", "c1", { type: "CHECKOUT", payload: { amount: 5, card: "4242" } });
  const view = await (await get("/processes/o1")).json();
  assert.deepEqual(Object.keys(view).sort(), ["context", "done", "due", "machine", "nextDueAt", "processId", "revision", "value", "version"]);
  assert.equal(view.value, "charging");
  assert.equal(view.revision, 2);
  assert.equal(view.done, false);
  assert.deepEqual(view.due, [{ kind: "effect", type: "charge", state: "pending", dueAt: now }]);
  assert.equal(view.nextDueAt, now);
  assert.doesNotMatch(JSON.stringify(view), /recorded p1|k1|c1/, "no response, no event id");
  const log = await (await get("/processes/o1/events")).json();
  assert.deepEqual(log.events.map((e) => [e.eventId, e.revision, e.status, "response" in e]), [["k1", 1, "applied", false], ["c1", 2, "applied", false]]);

  const full = setup({ store: undefined, api: { now, afterCommit: null, view: "full" } });
  await full.post("o1", "k1", pay("p1"));
  await full.post("o1", "c1", { type: "CHECKOUT", payload: { amount: 5, card: "4242" } });
  const whole = await (await full.get("/processes/o1")).json();
  assert.deepEqual(whole.ledger.map((e) => [e.id, e.response]), [["k1", "recorded p1"], ["c1", "charging"]]);
  assert.deepEqual(whole.outbox.map((e) => e.payload), [{ amount: 5, card: "4242" }]);
  const fullLog = await (await full.get("/processes/o1/events")).json();
  assert.deepEqual(fullLog.events.map((e) => e.response), ["recorded p1", "charging"]);
});

test("GET with authorize: no caller sees another's key or response; the log names only the caller's own events, by their key", async () => {
  const { post, get } = setup({ api: { authorize: bearer } });
  await post("o1", "alice-key", pay("p1"), as("tok-alice"));
  await post("o1", "bob-key", pay("p2"), as("tok-bob"));
  const seenByBob = await (await get("/processes/o1", as("tok-bob"))).text();
  assert.doesNotMatch(seenByBob, /alice-key|recorded p1|recorded p2/);
  assert.deepEqual(JSON.parse(seenByBob).context.payments, ["p1", "p2"]);
  const bobLog = await (await get("/processes/o1/events", as("tok-bob"))).json();
  assert.deepEqual(bobLog.events.map((e) => [e.eventId, e.revision, e.type]), [[null, 1, "PAYMENT_PARTIAL"], ["bob-key", 2, "PAYMENT_PARTIAL"]]);
  assert.doesNotMatch(JSON.stringify(bobLog), /alice-key|recorded/);
  const aliceLog = await (await get("/processes/o1/events", as("tok-alice"))).json();
  assert.deepEqual(aliceLog.events.map((e) => e.eventId), ["alice-key", null]);
  // A store without an event log (Workers KV): the ledger serves as the log, shown the same way.
  const memory = new MemoryStore();
  const bare = setup({ store: { load: (pid) => memory.load(pid), commit: (...args) => memory.commit(...args) }, api: { authorize: bearer } });
  await bare.post("o1", "alice-key", pay("p1"), as("tok-alice"));
  await bare.post("o1", "bob-key", pay("p2"), as("tok-bob"));
  const ledgerLog = await (await bare.get("/processes/o1/events", as("tok-bob"))).json();
  assert.deepEqual(ledgerLog.events.map((e) => [e.eventId, e.revision, "response" in e]), [[null, 1, false], ["bob-key", 2, false]]);
  // view: "full" is the operator's: the ids as recorded, scoped.
  const full = setup({ api: { authorize: bearer, view: "full" } });
  await full.post("o1", "alice-key", pay("p1"), as("tok-alice"));
  const rows = (await (await full.get("/processes/o1/events", as("tok-bob"))).json()).events;
  assert.deepEqual(rows.map((e) => [e.eventId, e.response]), [[await scopedEventId("alice", "alice-key"), "recorded p1"]]);
});

test("createHttpApi checks its options: invalid_argument naming the option and what it got", () => {
  const machine = new Machine(fixture("checkout.json"));
  const store = new MemoryStore();
  const cases = [
    [undefined, "options", "undefined"],
    [null, "options", "null"],
    [{ store }, "options.machine", "undefined"],
    [{ machine: fixture("checkout.json"), store }, "options.machine", "an object"],
    [{ machine }, "options.store", "undefined"],
    [{ machine, store: { load() {} } }, "options.store", "an object"],
    [{ machine, store, authorize: "Bearer x" }, "options.authorize", "a string of 8 characters"],
    [{ machine, store, view: "everything" }, "options.view", 'the string "everything"'],
    [{ machine, store, basePath: "api" }, "options.basePath", 'the string "api"'],
    [{ machine, store, maxBodyBytes: "65536" }, "options.maxBodyBytes", 'the string "65536"'],
    [{ machine, store, bodyTimeoutMs: 0 }, "options.bodyTimeoutMs", "the number 0"],
    [{ machine, store, maxUrlBytes: NaN }, "options.maxUrlBytes", "the number NaN"],
    [{ machine, store, afterCommit: true }, "options.afterCommit", "true"],
    [{ machine, store, onError: {} }, "options.onError", "an object"],
    [{ machine, store, maxRetries: -1 }, "options.maxRetries", "the number -1"],
    [{ machine, store, lane: "off" }, "options.lane", 'the string "off"'],
    [{ machine, store, now: "123" }, "options.now", 'the string "123"'],
  ];
  for (const [options, name, got] of cases) {
    assert.throws(
      () => createHttpApi(options),
      (err) => err instanceof IdemError && err.code === "invalid_argument" && err.path === name && err.message.startsWith(`${name} must be `) && err.message.endsWith(`, got ${got}`),
      `${name}: ${got}`,
    );
  }
});

test("handle, matches and refuseOversized take a Request: anything else is invalid_argument, never a TypeError", async () => {
  const { api } = setup();
  const odd = [undefined, null, "http://x/api/", 42, {}, { url: "http://x/api/" }, { url: "/api/", method: "GET", headers: new Headers(), body: null }, new URL("http://x/api/")];
  for (const request of odd) {
    await assert.rejects(api.handle(request), (err) => err instanceof IdemError && err.code === "invalid_argument" && /^request(\.url)? must be /.test(err.message));
    assert.throws(() => api.matches(request), (err) => err instanceof IdemError && err.code === "invalid_argument");
    assert.throws(() => refuseOversized(request), (err) => err instanceof IdemError && err.code === "invalid_argument");
  }
  for (const hooks of [null, 5, { waitUntil: "soon" }]) {
    await assert.rejects(api.handle(new Request("http://x/api/"), hooks), (err) => err instanceof IdemError && err.path === "hooks");
  }
  assert.throws(() => refuseOversized(new Request("http://x/"), { maxUrlBytes: "8k" }), (err) => err.path === "limits.maxUrlBytes");
  assert.throws(() => problem(200, "fine", "ok"), (err) => err instanceof IdemError && err.path === "status");
  assert.throws(() => parseIdempotencyKey(undefined), (err) => err instanceof IdemError && err.path === "raw");
});

test("a refusal says what was asked: 401 and 403 details name the action and the process", async () => {
  const { post, get } = setup({ api: { authorize: (request) => (request.headers.get("x-who") === "known" ? false : null) } });
  const details = [];
  for (const res of [await post("o1", "k1", pay("p1")), await get("/processes/o1"), await get("/processes/o1/events", { "x-who": "known" }), await get("/")]) {
    details.push([res.status, (await res.json()).detail]);
  }
  assert.deepEqual(details, [
    [401, 'the request carries no credentials this API accepts (to send events to process "o1")'],
    [401, 'the request carries no credentials this API accepts (to read process "o1")'],
    [403, 'this caller may not read the event log of process "o1"'],
    [401, "the request carries no credentials this API accepts (to describe this API)"],
  ]);
  assert.deepEqual(ACTIONS, ["describe", "event", "read", "log"]);
});

test("law: under authorize, every (caller, key) is answered by its own first answer, whatever others send", async () => {
  // Notes whose frozen response names the caller's text; callers pick keys from a small shared pool,
  // so keys collide across callers all the time. Seeded xorshift: the run is the same every time.
  const board = {
    id: "board", version: "1", initial: "open", context: { n: 0 },
    states: { open: { on: { NOTE: { actions: [{ assign: { n: { "+": [{ var: "context.n" }, 1] } } }, { respond: { var: "event.payload.text" } }] } } } },
  };
  const principals = ["alice", "bob", "carol", "dave"];
  const { api } = setup({ definition: board, api: { authorize: (r) => r.headers.get("x-principal") } });
  let seed = 0x2545f491;
  const next = (n) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const first = new Map(); // "pid principal key" -> [status, body]
  const applied = new Map(); // pid -> count of first deliveries
  for (let i = 0; i < 400; i++) {
    const pid = `b${next(3)}`;
    const who = principals[next(principals.length)];
    const key = `k${next(6)}`;
    const text = `${who} says ${key}`; // the same request on every retry of (who, key)
    const res = await api.handle(
      new Request(`http://x/api/processes/${pid}/events`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key, "x-principal": who },
        body: JSON.stringify({ type: "NOTE", payload: { text } }),
      }),
    );
    const body = await res.text();
    const seen = first.get(`${pid} ${who} ${key}`);
    if (seen) {
      assert.equal(res.headers.get("idempotency-replayed"), "true", `${pid} ${who} ${key}`);
      assert.deepEqual([res.status, body], seen, `${pid} ${who} ${key}: its own first answer`);
    } else {
      assert.equal(res.headers.get("idempotency-replayed"), null, `${pid} ${who} ${key}: a new event`);
      assert.equal(JSON.parse(body).response, text, `${pid} ${who} ${key}: its own response`);
      first.set(`${pid} ${who} ${key}`, [res.status, body]);
      applied.set(pid, (applied.get(pid) ?? 0) + 1);
    }
  }
  for (const [pid, n] of applied) {
    const view = await (await api.handle(new Request(`http://x/api/processes/${pid}`, { headers: { "x-principal": "alice" } }))).json();
    assert.equal(view.context.n, n, `${pid}: each (caller, key) applied once`);
  }
  assert.ok(first.size > 40 && first.size <= 3 * principals.length * 6, `${first.size} distinct (process, caller, key)`);
});

test("afterCommit failing after an applied and after a recorded ignored event: onError is told each time, no rejection is left unhandled", async () => {
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    const def = fixture("checkout.json");
    def.recordIgnored = true;
    const told = [];
    const afterCommit = async (_pid, out) => {
      throw new Error(`after ${out.status}`);
    };
    // No waitUntil (a host without one): the guarded promise is dropped, never left to reject.
    const { post, store } = setup({ definition: def, api: { afterCommit, onError: (err) => told.push(err.message) } });
    assert.equal((await post("o1", "k1", pay("p1"))).status, 201);
    assert.equal((await post("o1", "k2", { type: "SHIP" })).status, 409);
    assert.equal(store.writes, 2, "both were committed");
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(told, ["after applied", "after ignored"]);
    assert.deepEqual(unhandled, []);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});
