// Who calls, as both example servers must answer it when API_TOKENS names the callers: each
// caller's Idempotency-Keys are its own, a request without a known bearer token is refused
// before anything is read or written, and GET shows no caller another's key or response.
// No imports: the same file runs under Node (tests/workerd) and Deno (tests/deno), through
// the harness's `fetch(path, init)`.

/** The API_TOKENS value both servers are started with: two callers. */
export const API_TOKENS = "alice=tok-alice-7f3a, bob=tok-bob-91c2";
const auth = { alice: "Bearer tok-alice-7f3a", bob: "Bearer tok-bob-91c2" };

function fail(message) {
  throw new Error(message);
}
function equal(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) fail(`${what}: expected ${e}, got ${a}`);
}

const pay = (paymentId, amount) => JSON.stringify({ type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });

/** POST an event as `who` (a name of `auth`, or a raw Authorization value, or null for none). */
function post(server, path, key, body, who) {
  const headers = { "content-type": "application/json", "idempotency-key": key };
  const authorization = who === null ? null : (auth[who] ?? who);
  if (authorization !== null) headers.authorization = authorization;
  return server.fetch(path, { method: "POST", headers, body });
}
function get(server, path, who) {
  return server.fetch(path, who === null ? {} : { headers: { authorization: auth[who] } });
}

/**
 * Alice and Bob send the same key to one process: two events, each applied on its own, each
 * replay its own caller's first answer, byte for byte; the key in every answer is the one sent.
 * @param {{ fetch: (path: string, init?: RequestInit) => Promise<Response> }} server
 * @param {string} base the API's base path ("" or "/do", ...)
 * @param {string} pid a process id not used before
 */
export async function checkCrossCallerReplay(server, base, pid) {
  const path = `${base}/processes/${pid}/events`;
  const alice = await post(server, path, "k1", pay("p1", 10), "alice");
  equal(alice.status, 201, "alice's first event creates the process");
  const aliceBody = await alice.text();
  equal(JSON.parse(aliceBody), { processId: pid, eventId: "k1", status: "applied", revision: 1, response: "recorded p1" }, "alice's answer");
  const bob = await post(server, path, "k1", pay("p2", 5), "bob");
  equal([bob.status, bob.headers.get("idempotency-replayed")], [200, null], "bob's k1 is his own event, not a replay of alice's");
  const bobBody = await bob.text();
  equal(JSON.parse(bobBody), { processId: pid, eventId: "k1", status: "applied", revision: 2, response: "recorded p2" }, "bob's answer");
  for (const [who, body, status, first] of [["alice", pay("p1", 10), 201, aliceBody], ["bob", pay("p2", 5), 200, bobBody]]) {
    const again = await post(server, path, "k1", body, who);
    equal([again.status, again.headers.get("idempotency-replayed")], [status, "true"], `${who}'s retry is a replay`);
    equal(await again.text(), first, `${who}'s replay is ${who}'s first answer`);
  }
  // Alice's exact request, sent by Bob under a key of his that is new: judged by the state
  // (p1 is paid already), never answered from Alice's record.
  const copy = await post(server, path, "k2", pay("p1", 10), "bob");
  equal([copy.status, copy.headers.get("idem-outcome")], [409, "ignored"], "alice's payment sent again by bob");
  await copy.body?.cancel();
  const view = await (await get(server, `${base}/processes/${pid}`, "alice")).json();
  equal([view.revision, view.context.payments, view.context.paid], [2, ["p1", "p2"], 15], "both payments, once each");
}

/**
 * A POST without a token, with an unknown one, or with a malformed header: 401 problem+json with
 * `WWW-Authenticate: Bearer`, and nothing stored (the process does not exist afterwards).
 */
export async function checkUnauthorizedPost(server, base, pid) {
  const path = `${base}/processes/${pid}/events`;
  for (const who of [null, "Bearer tok-mallory", "tok-alice-7f3a", "Basic YWxpY2U6dG9rLWFsaWNlLTdmM2E="]) {
    const res = await post(server, path, "k1", pay("p1", 10), who);
    equal(res.status, 401, `POST with ${JSON.stringify(who)}`);
    equal(res.headers.get("content-type"), "application/problem+json", "a problem");
    equal(res.headers.get("www-authenticate"), "Bearer", "the challenge");
    equal((await res.json()).code, "unauthorized", "its code");
    for (const p of [`${base}/processes/${pid}`, `${base}/processes/${pid}/events`]) {
      const r = await server.fetch(p, who === null ? {} : { headers: { authorization: who } });
      equal(r.status, 401, `GET ${p} with ${JSON.stringify(who)}`);
      await r.body?.cancel();
    }
  }
  const after = await get(server, `${base}/processes/${pid}`, "alice");
  equal(after.status, 404, "nothing was stored: the process does not exist");
  await after.body?.cancel();
  // The key was not spent: alice's request with it is applied afresh.
  const first = await post(server, path, "k1", pay("p1", 10), "alice");
  equal([first.status, first.headers.get("idempotency-replayed")], [201, null], "the key is still free");
  await first.body?.cancel();
}

/**
 * GET as Bob after Alice's event: the process's state, context, revision and due times, and no
 * key or response of Alice's; the event log names Bob's own events only, by his key, with no
 * responses.
 */
export async function checkDefaultGet(server, base, pid) {
  const path = `${base}/processes/${pid}/events`;
  await (await post(server, path, "alice-key-1", pay("p1", 10), "alice")).body?.cancel();
  await (await post(server, path, "bob-key-1", pay("p2", 5), "bob")).body?.cancel();
  const res = await get(server, `${base}/processes/${pid}`, "bob");
  equal(res.status, 200, "bob reads the process");
  const text = await res.text();
  for (const secret of ["alice-key-1", "recorded p1", "recorded p2", "ledger", "outbox"]) {
    if (text.includes(secret)) fail(`GET shows ${JSON.stringify(secret)}: ${text}`);
  }
  const view = JSON.parse(text);
  equal([view.revision, view.done, view.context.payments, view.value], [2, false, ["p1", "p2"], { payment: "collecting" }], "the summary");
  equal([Array.isArray(view.due), "nextDueAt" in view], [true, true], "the due times");
  const log = await (await get(server, path, "bob")).json();
  equal(log.events.map((e) => [e.eventId, e.revision, e.status, "response" in e]), [[null, 1, "applied", false], ["bob-key-1", 2, "applied", false]], "bob's log");
  const aliceLog = await (await get(server, path, "alice")).json();
  equal(aliceLog.events.map((e) => e.eventId), ["alice-key-1", null], "alice's log");
}
