// Who calls, on Deno: the example server (`deno task start`) with API_TOKENS naming two callers,
// over real HTTP and Deno KV. The scenarios are tests/http/callers.mjs, which the Worker passes too.
import { assertEquals } from "./assert.js";
import { startServer } from "./server.js";
import { API_TOKENS, checkCrossCallerReplay, checkDefaultGet, checkUnauthorizedPost } from "../http/callers.mjs";

const opts = { sanitizeOps: false, sanitizeResources: false };
let started = null;
const server = () => (started ??= startServer({ env: { API_TOKENS } }));
let n = 0;
const fresh = () => `callers-${++n}`;

Deno.test({ name: "two callers sending one Idempotency-Key are two events; each replay is the caller's own", ...opts, fn: async () => {
  await checkCrossCallerReplay(await server(), "", fresh());
}});

Deno.test({ name: "a POST without a known bearer token -> 401 problem, nothing stored, the key not spent", ...opts, fn: async () => {
  await checkUnauthorizedPost(await server(), "", fresh());
}});

Deno.test({ name: "GET shows the summary, no other caller's key or response; the log names the caller's own events", ...opts, fn: async () => {
  await checkDefaultGet(await server(), "", fresh());
}});

Deno.test({ name: "the API description stays anyone's, and says an Idempotency-Key is the caller's", ...opts, fn: async () => {
  const res = await (await server()).fetch("/api");
  assertEquals(res.status, 200);
  assertEquals((await res.json()).idempotency.keyScope, "caller");
}});

Deno.test({ name: "the server stops on SIGTERM", ...opts, fn: async () => {
  const w = await server();
  started = null;
  const status = await w.stop();
  assertEquals(status.success || status.signal === "SIGTERM", true, JSON.stringify(status));
}});
