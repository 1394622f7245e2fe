// The example server (examples/deno, started with `deno task start`) over real
// HTTP: the status table of the Cloudflare Worker's tests (tests/workerd/
// http.test.mjs, the same expectations through the same pkg/src/http.js),
// concurrency through the API, effects through Deno KV's queue against the
// fake gateways, and the static demo page.
import { assert, assertEquals } from "./assert.js";
import { eventually, tempKvPath } from "./helpers.js";
import { startServer } from "./server.js";
import { checkCases, checkInvalidPayload, checkNumberPairs, checkStalledBody, rawRequest } from "../http/hostile.mjs";

// One server for the file (a child process): the tests below share it.
const opts = { sanitizeOps: false, sanitizeResources: false };
let started = null;
const server = () => (started ??= startServer());
let n = 0;
const fresh = () => `http-${++n}`;
const pay = (paymentId, amount = 10) => ({ type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });
const isProblem = (res) => assertEquals(res.headers.get("content-type"), "application/problem+json");

Deno.test({ name: "the example server starts with `deno task start` and answers /api/health and the demo page", ...opts, fn: async () => {
  const w = await server();
  const health = await (await w.fetch("/api/health")).json();
  assertEquals(health.ok, true);
  assertEquals(health.store, "Deno KV");
  assert(health.runtime.startsWith("deno 2."), health.runtime);
  const page = await w.fetch("/");
  assertEquals(page.status, 200);
  assertEquals(page.headers.get("content-type"), "text/html; charset=utf-8");
  assert((await page.text()).includes("<script"), "the demo page");
  const wasm = await w.fetch("/pkg/dist/idem_bg.wasm");
  assertEquals(wasm.status, 200);
  assertEquals(wasm.headers.get("content-type"), "application/wasm");
  assert(WebAssembly.validate(new Uint8Array(await wasm.arrayBuffer())), "the wasm package, served whole");
  const entry = await w.fetch("/pkg/src/web.js");
  assertEquals(entry.headers.get("content-type"), "text/javascript; charset=utf-8");
  await entry.body?.cancel();
  for (const path of ["/pkg/%2e%2e/%2e%2e/etc/passwd", "/pkg/src/%2e%2e/package.json", "/.gitignore", "/pkg/dist/..%2f..%2fCargo.toml", "/nope.html"]) {
    const res = await w.fetch(path);
    assertEquals(res.status, 404, path);
    await res.body?.cancel();
  }
}});

Deno.test({ name: "applied, creating the process -> 201 with Location and the frozen response", ...opts, fn: async () => {
  const w = await server();
  const pid = fresh();
  const res = await w.post(`/processes/${pid}/events`, "k1", pay("p1"));
  assertEquals(res.status, 201);
  assertEquals(res.headers.get("location"), `/processes/${pid}`);
  assertEquals(res.headers.get("content-type"), "application/json");
  assertEquals(res.headers.get("idem-outcome"), "applied");
  assertEquals(await res.json(), { processId: pid, eventId: "k1", status: "applied", revision: 1, response: "recorded p1" });
}});

Deno.test({ name: "applied on an existing process -> 200", ...opts, fn: async () => {
  const w = await server();
  const pid = fresh();
  await (await w.post(`/processes/${pid}/events`, "k1", pay("p1"))).body?.cancel();
  const res = await w.post(`/processes/${pid}/events`, "k2", pay("p2"));
  assertEquals(res.status, 200);
  assertEquals((await res.json()).revision, 2);
}});

Deno.test({ name: "duplicate -> the first status and body, byte for byte, with Idempotency-Replayed: true", ...opts, fn: async () => {
  const w = await server();
  const pid = fresh();
  const first = await w.post(`/processes/${pid}/events`, "k1", pay("p1"));
  const body = await first.text();
  await (await w.post(`/processes/${pid}/events`, "k2", pay("p2"))).body?.cancel();
  const again = await w.post(`/processes/${pid}/events`, "k1", pay("p1"));
  assertEquals(again.status, 201);
  assertEquals(again.headers.get("idempotency-replayed"), "true");
  assertEquals(again.headers.get("idem-outcome"), "duplicate");
  assertEquals(await again.text(), body);
  assertEquals(first.headers.get("idempotency-replayed"), null);
}});

Deno.test({ name: "missing Idempotency-Key -> 400 missing_idempotency_key; malformed key or process id -> 400", ...opts, fn: async () => {
  const w = await server();
  const res = await w.post(`/processes/${fresh()}/events`, null, pay("p1"));
  assertEquals(res.status, 400);
  isProblem(res);
  assertEquals((await res.json()).code, "missing_idempotency_key");
  const bad = await w.post(`/processes/${fresh()}/events`, "a/b#c", pay("p1"));
  assertEquals(bad.status, 400);
  assertEquals((await bad.json()).code, "invalid_idempotency_key");
  const pid = await w.post(`/processes/${"x".repeat(200)}/events`, "k1", pay("p1"));
  assertEquals(pid.status, 400);
  assertEquals((await pid.json()).code, "invalid_process_id");
}});

Deno.test({ name: "key reused with a different payload -> 422 id_conflict", ...opts, fn: async () => {
  const w = await server();
  const pid = fresh();
  await (await w.post(`/processes/${pid}/events`, "k1", pay("p1", 10))).body?.cancel();
  const res = await w.post(`/processes/${pid}/events`, "k1", pay("p1", 11));
  assertEquals(res.status, 422);
  isProblem(res);
  assertEquals((await res.json()).code, "id_conflict");
}});

Deno.test({ name: "ignored (not accepted in the current state) -> 409 event_not_accepted, nothing written", ...opts, fn: async () => {
  const w = await server();
  const pid = fresh();
  await (await w.post(`/processes/${pid}/events`, "k1", pay("p1"))).body?.cancel();
  const res = await w.post(`/processes/${pid}/events`, "k2", { type: "SHIP" });
  assertEquals(res.status, 409);
  isProblem(res);
  assertEquals((await res.json()).code, "event_not_accepted");
  const view = await (await w.fetch(`/processes/${pid}`)).json();
  assertEquals(view.revision, 1);
}});

Deno.test({ name: "rejected: unknown event type -> 422, missing type -> 400, payload over the engine limit -> 413", ...opts, fn: async () => {
  const w = await server();
  const pid = fresh();
  const unknown = await w.post(`/processes/${pid}/events`, "k1", { type: "NOPE" });
  assertEquals(unknown.status, 422);
  assertEquals((await unknown.json()).code, "unknown_event_type");
  const noType = await w.post(`/processes/${pid}/events`, "k2", { payload: {} });
  assertEquals(noType.status, 400);
  assertEquals((await noType.json()).code, "missing_event_type");
  const big = await w.post(`/processes/${pid}/events`, "k3", { type: "PAYMENT_PARTIAL", payload: { paymentId: "p", pad: "x".repeat(64 * 1024) } });
  assertEquals(big.status, 413);
  assertEquals((await big.json()).code, "payload_too_large");
}});

Deno.test({ name: "client events reserved to the engine -> 422 reserved_event_type", ...opts, fn: async () => {
  const w = await server();
  // An effect's outcome: refused by the engine (a rejected outcome, nothing written).
  const res = await w.post(`/processes/${fresh()}/events`, "k1", { type: "charge.succeeded", payload: {} });
  assertEquals(res.status, 422);
  assertEquals(res.headers.get("idem-outcome"), "rejected");
  assertEquals((await res.json()).code, "reserved_event_type");
  // The engine's own reports: refused by the host before the store is read.
  const report = await w.post(`/processes/${fresh()}/events`, "k2", { type: "idem.effect.unknown", payload: {} });
  assertEquals(report.status, 422);
  assertEquals((await report.json()).code, "reserved_event_type");
}});

Deno.test({ name: "request body over the limit -> 413 request_too_large; not JSON -> 415 / 400", ...opts, fn: async () => {
  const w = await server();
  const pid = fresh();
  const huge = await w.post(`/processes/${pid}/events`, "k1", JSON.stringify({ type: "SHIP", pad: "x".repeat(100 * 1024) }));
  assertEquals(huge.status, 413);
  assertEquals((await huge.json()).code, "request_too_large");
  const text = await w.post(`/processes/${pid}/events`, "k2", "hi", { "content-type": "text/plain" });
  assertEquals(text.status, 415);
  await text.body?.cancel();
  const broken = await w.post(`/processes/${pid}/events`, "k3", "{");
  assertEquals(broken.status, 400);
  assertEquals((await broken.json()).code, "invalid_json");
}});

Deno.test({ name: "a snapshot Deno KV cannot hold in one commit -> 507 snapshot_too_large, nothing written", ...opts, fn: async () => {
  const w = await server();
  const pid = fresh();
  // Payment ids are kept in the context (a set): 60 KB ids make the snapshot grow by about 120 KB per payment.
  let res;
  let i = 0;
  do {
    res = await w.post(`/processes/${pid}/events`, `k${i}`, { type: "PAYMENT_PARTIAL", payload: { paymentId: `${i}`.padEnd(60_000, "x"), amount: 0 } });
    i++;
  } while (res.status < 300 && i < 20 && (await res.body?.cancel(), true));
  assertEquals(res.status, 507);
  isProblem(res);
  const body = await res.json();
  assertEquals(body.code, "snapshot_too_large");
  assert(/Nothing was written/.test(body.detail), body.detail);
  const view = await (await w.fetch(`/processes/${pid}`)).json();
  assertEquals(view.revision, i - 1, "the refused event left no trace");
  assertEquals(view.context.payments.length, i - 1);
  const log = await (await w.fetch(`/processes/${pid}/events?limit=1000`)).json();
  assertEquals(log.events.map((e) => e.revision), Array.from({ length: i - 1 }, (_, k) => k + 1));
}});

Deno.test({ name: "one server, no retries allowed: 20 concurrent writers to one process all land (they wait in its lane)", ...opts, fn: async () => {
  const tight = await startServer({ env: { MAX_RETRIES: "0" } });
  try {
    const pid = "laned";
    const first = await Promise.all(Array.from({ length: 20 }, (_, i) => tight.post(`/processes/${pid}/events`, `k${i}`, pay(`p${i}`, 1))));
    // 201 for the event that created the process, 200 for the others: none is a 409.
    assertEquals(first.map((r) => r.status).sort(), [...Array(19).fill(200), 201]);
    for (const r of first) {
      assertEquals(r.headers.get("idem-attempts"), "1");
      await r.body?.cancel();
    }
    const view = await (await tight.fetch(`/processes/${pid}`)).json();
    assertEquals(view.context.payments.length, 20);
  } finally {
    await tight.stop();
  }
}});

Deno.test({ name: "contention that outlasts the retries -> 409 contention with Retry-After; retrying the same key then succeeds", ...opts, fn: async () => {
  // Two servers on one database, as two instances of a deploy: their calls share no lane and race.
  const db = await tempKvPath();
  const env = { MAX_RETRIES: "0", IDEM_KV_PATH: db.path };
  const servers = [await startServer({ env }), await startServer({ env })];
  try {
    const pid = "contended";
    const send = (i) => servers[i % 2].post(`/processes/${pid}/events`, `k${i}`, pay(`p${i}`, 1));
    const first = await Promise.all(Array.from({ length: 20 }, (_, i) => send(i)));
    const lost = [];
    for (const [i, r] of first.entries()) {
      if (r.status === 409) {
        isProblem(r);
        const body = await r.json();
        assertEquals(body.code, "contention");
        const after = Number(r.headers.get("retry-after"));
        assert(Number.isInteger(after) && after >= 1 && after <= 4, `Retry-After ${r.headers.get("retry-after")}: 1 to 4 s, jittered`);
        assertEquals(r.headers.get("idem-attempts"), "1", "MAX_RETRIES=0: one try");
        lost.push(i);
      } else {
        assert(r.status === 200 || r.status === 201, `status ${r.status}`);
        await r.body?.cancel();
      }
    }
    assert(lost.length > 0, "with no retries allowed, two servers' concurrent writers must collide");
    console.log(`contention: ${lost.length} of 20 concurrent requests to two servers got 409 with MAX_RETRIES=0`);
    for (const i of lost) {
      let r;
      do {
        r = await send(i);
        if (r.status === 409) await r.body?.cancel();
      } while (r.status === 409);
      assert(r.status === 200 || r.status === 201, `status ${r.status}`);
      await r.body?.cancel();
    }
    const view = await (await servers[0].fetch(`/processes/${pid}`)).json();
    assertEquals(view.context.payments.length, 20);
  } finally {
    for (const s of servers) await s.stop();
    await db.cleanup();
  }
}});

Deno.test({ name: "GET /processes/:id -> 200 with state and context; unknown -> 404 process_not_found", ...opts, fn: async () => {
  const w = await server();
  const pid = fresh();
  await (await w.post(`/processes/${pid}/events`, "k1", pay("p1"))).body?.cancel();
  const res = await w.fetch(`/processes/${pid}`);
  assertEquals(res.status, 200);
  const view = await res.json();
  assertEquals(view.value, { payment: "collecting" });
  assertEquals(view.context.payments, ["p1"]);
  assertEquals(typeof view.version, "string", "the version is Deno KV's versionstamp");
  const missing = await w.fetch(`/processes/${fresh()}`);
  assertEquals(missing.status, 404);
  assertEquals((await missing.json()).code, "process_not_found");
}});

Deno.test({ name: "GET /processes/:id/events -> the event log with who sent what, when and the outcome", ...opts, fn: async () => {
  const w = await server();
  const pid = fresh();
  for (const [k, p] of [["k1", "p1"], ["k1", "p1"], ["k2", "p2"]]) await (await w.post(`/processes/${pid}/events`, k, pay(p))).body?.cancel();
  const body = await (await w.fetch(`/processes/${pid}/events`)).json();
  assertEquals(
    body.events.map((e) => [e.eventId, e.revision, e.type, e.status, e.response]),
    [["k1", 1, "PAYMENT_PARTIAL", "applied", "recorded p1"], ["k2", 2, "PAYMENT_PARTIAL", "applied", "recorded p2"]],
  );
  assert(body.events.every((e) => typeof e.receivedAt === "number"));
}});

Deno.test({ name: "wrong method -> 405; unknown route -> 404; the API description publishes the retention window", ...opts, fn: async () => {
  const w = await server();
  const del = await w.fetch(`/processes/${fresh()}`, { method: "DELETE" });
  assertEquals(del.status, 405);
  assertEquals(del.headers.get("allow"), "GET");
  await del.body?.cancel();
  const nowhere = await w.fetch("/nowhere");
  assertEquals(nowhere.status, 404);
  await nowhere.body?.cancel();
  const api = await (await w.fetch("/api")).json();
  assertEquals(api.idempotency.header, "Idempotency-Key");
  assertEquals(api.idempotency.windowMs, 86400000);
  assertEquals(api.idempotency.windowMsByType.PAYMENT_PARTIAL, 3600000);
}});

Deno.test({ name: "hostile requests as raw bytes (bad UTF-8, 1e309, long URL and headers, wrong methods) -> the Worker's statuses and codes", ...opts, fn: async () => {
  const w = await server();
  const target = { host: "127.0.0.1", port: Number(new URL(w.base).port) };
  await checkCases(target, "hostile");
  // FIXME(issue 27): past Deno.serve's own limits (more than 128 header fields; a URL or a header
  // of 64 KiB) its HTTP layer refuses the request before the handler runs: an empty 400, not
  // 414 / 431 problem+json. Asserted as it is today; under them, http.js answers (checkCases).
  const beyond = [
    { path: "/api", headers: Object.fromEntries(Array.from({ length: 130 }, (_, i) => [`x-h${i}`, "a"])) },
    { path: `/api?pad=${"a".repeat(64 * 1024)}` },
    { path: "/api", headers: { "x-pad": "a".repeat(64 * 1024) } },
  ];
  for (const req of beyond) {
    const res = await rawRequest(target, req);
    assertEquals([res.status, res.text, res.headers["content-type"]], [400, "", undefined]);
  }
  // The demo page's files answer GET and HEAD only.
  const del = await rawRequest(target, { method: "DELETE", path: "/" });
  assertEquals(del.status, 405);
  assertEquals(del.headers.allow, "GET, HEAD");
  assertEquals(JSON.parse(del.text).code, "method_not_allowed");
}});

Deno.test({ name: "numbers under one Idempotency-Key: 1.0 = 1e0 and -0 = -0.0 replay; 1 vs 1.0 and 0 vs -0 -> 422 id_conflict", ...opts, fn: async () => {
  const w = await server();
  await checkNumberPairs({ host: "127.0.0.1", port: Number(new URL(w.base).port) }, "numbers");
}});

Deno.test({ name: "a payload its schema refuses -> 422 invalid_payload naming the field; nothing recorded (the key then takes a valid payload)", ...opts, fn: async () => {
  const w = await server();
  await checkInvalidPayload({ host: "127.0.0.1", port: Number(new URL(w.base).port) }, "schema");
}});

Deno.test({ name: "a body that stalls -> 408 request_timeout after BODY_TIMEOUT_MS, the server not held", ...opts, fn: async () => {
  const s = await startServer({ env: { BODY_TIMEOUT_MS: "400" } });
  try {
    const target = { host: "127.0.0.1", port: Number(new URL(s.base).port) };
    const ms = await checkStalledBody(target, "stalled", 400);
    console.log(`a stalled body on Deno: 408 after ${ms} ms (BODY_TIMEOUT_MS=400)`);
  } finally {
    await s.stop();
  }
}});

Deno.test({ name: "50 concurrent deliveries of one event through the server -> one applied, 49 identical replays, one log row", ...opts, fn: async () => {
  const w = await server();
  const pid = fresh();
  const responses = await Promise.all(Array.from({ length: 50 }, () => w.post(`/processes/${pid}/events`, "evt-1", pay("p1", 40))));
  const answers = await Promise.all(
    responses.map(async (r) => ({ status: r.status, replay: r.headers.get("idempotency-replayed"), outcome: r.headers.get("idem-outcome"), body: await r.text() })),
  );
  const applied = answers.filter((a) => a.outcome === "applied");
  assertEquals(applied.length, 1, JSON.stringify(answers.map((a) => a.status)));
  assertEquals(applied[0].status, 201);
  const replays = answers.filter((a) => a.replay === "true");
  assertEquals(replays.length, 49);
  for (const r of replays) assertEquals([r.status, r.body, r.outcome], [201, applied[0].body, "duplicate"]);
  const log = (await (await w.fetch(`/processes/${pid}/events`)).json()).events;
  assertEquals(log.map((e) => [e.eventId, e.revision]), [["evt-1", 1]]);
}});

Deno.test({ name: "50 distinct events delivered concurrently through the server, twice each -> all applied once, revisions contiguous", ...opts, fn: async () => {
  const w = await server();
  const pid = fresh();
  const ids = Array.from({ length: 50 }, (_, i) => i);
  const responses = await Promise.all([...ids, ...ids].map((i) => w.post(`/processes/${pid}/events`, `evt-${i}`, pay(`p${i}`, 1))));
  const outcomes = responses.map((r) => r.headers.get("idem-outcome"));
  const retries = responses.reduce((s, r) => s + Number(r.headers.get("idem-attempts")) - 1, 0);
  await Promise.all(responses.map((r) => r.body?.cancel()));
  console.log(`100 deliveries of 50 events through the server: ${retries} compare-and-set retries in total`);
  assertEquals(responses.filter((r) => r.status >= 300).map((r) => r.status), []);
  assertEquals(outcomes.filter((o) => o === "applied").length, 50);
  assertEquals(outcomes.filter((o) => o === "duplicate").length, 50);
  const view = await (await w.fetch(`/processes/${pid}`)).json();
  assertEquals(view.revision, 50);
  assertEquals(view.context.paid, 50, "nothing lost: 50 payments of 1");
  const log = (await (await w.fetch(`/processes/${pid}/events?limit=1000`)).json()).events;
  assertEquals(log.map((e) => e.revision), ids.map((i) => i + 1));
}});

const chargeOf = (v) => v.outbox.find((e) => e.type === "charge");
const full = (paymentId) => ({ type: "PAYMENT_PARTIAL", payload: { paymentId, amount: 100 } });

Deno.test({ name: "lost server response + client retry + lost gateway response -> charged once (the queue retries with the same key)", ...opts, fn: async () => {
  const w = await server();
  const pid = `${fresh()}-robust`;
  w.gateways.keys.failNext("drop"); // the first charge goes through, its response is lost
  const before = w.gateways.keys.requests;
  await (await w.post(`/processes/${pid}/events`, "pay-1", full("p1"))).body?.cancel(); // the client never reads it
  const retry = await w.post(`/processes/${pid}/events`, "pay-1", full("p1"));
  assertEquals(retry.status, 201);
  assertEquals(retry.headers.get("idempotency-replayed"), "true");
  await retry.body?.cancel();
  const done = await eventually(async () => {
    const v = await (await w.fetch(`/processes/${pid}`)).json();
    return v.value === "paid" && chargeOf(v).state === "succeeded" ? v : null;
  }, { what: "the order reaching paid", tries: 600 });
  const charge = chargeOf(done);
  assertEquals(charge.attempts, 2, "attempt 1 lost its response, attempt 2 reused the key");
  assertEquals(w.gateways.keys.chargeCount(charge.key), 1, "one charge for the key");
  assertEquals(w.gateways.keys.requests - before, 2);
}});

Deno.test({ name: "gateway without idempotency keys: lost gateway response -> verify finds the charge -> charged once", ...opts, fn: async () => {
  const w = await server();
  const pid = `${fresh()}-robust-nokeys`;
  w.gateways.nokeys.failNext("drop");
  const res = await w.post(`/processes/${pid}/events`, "pay-1", full("p1"));
  assertEquals(res.status, 201);
  await res.body?.cancel();
  const done = await eventually(async () => {
    const v = await (await w.fetch(`/processes/${pid}`)).json();
    return chargeOf(v)?.state === "succeeded" ? v : null;
  }, { what: "the charge succeeding", tries: 600 });
  const charge = chargeOf(done);
  assertEquals(charge.attempts, 1, "no second attempt: verification found the first charge");
  assertEquals(w.gateways.nokeys.chargeCount(charge.key), 1);
  const log = (await (await w.fetch(`/processes/${pid}/events`)).json()).events;
  assert(log.some((e) => e.type === "idem.effect.verified"), "the verify step is in the event log");
}});

Deno.test({ name: "the example server stops on SIGTERM", ...opts, fn: async () => {
  const w = await server();
  started = null;
  const status = await w.stop();
  assert(status.success || status.signal === "SIGTERM", JSON.stringify(status));
  const after = await fetch(`${w.base}/api/health`).then(() => "answered", () => "refused");
  assertEquals(after, "refused");
}});
