// Entry point, locally (`deno task start`) and on Deno Deploy (entrypoint
// examples/deno/main.js). Environment (all optional):
//
//   PORT                  port to listen on (default 8000; 0 picks a free one)
//   HOST                  address to bind (default 0.0.0.0)
//   IDEM_KV_PATH          Deno KV database file (default: Deno.openKv()'s own database:
//                         the project's KV on Deno Deploy, a file in Deno's cache locally)
//   GATEWAY_URL           payment gateway honouring idempotency keys (default: an in-process fake)
//   GATEWAY_NOKEYS_URL    payment gateway without idempotency keys (default: an in-process fake)
//   MAX_RETRIES           compare-and-set retries per request (default 64)
//   BODY_TIMEOUT_MS       how long a request body may take to arrive, whole (default 10000; then 408)
//   API_TOKENS            callers by bearer token, "alice=<token>,bob=<token>" (a secret: on Deno Deploy,
//                         an environment variable of the project); each caller's Idempotency-Keys are its
//                         own and GET shows summaries. Unset: the demo is open to anyone
import { createApp } from "./app.js";

const env = (name) => Deno.env.get(name) || undefined;

const kv = await Deno.openKv(env("IDEM_KV_PATH"));
const app = createApp({
  kv,
  gatewayUrl: env("GATEWAY_URL"),
  gatewayNokeysUrl: env("GATEWAY_NOKEYS_URL"),
  maxRetries: env("MAX_RETRIES") === undefined ? undefined : Number(env("MAX_RETRIES")),
  bodyTimeoutMs: env("BODY_TIMEOUT_MS") === undefined ? undefined : Number(env("BODY_TIMEOUT_MS")),
  apiTokens: env("API_TOKENS"),
});

// Effects: every commit that leaves work due enqueued a message for its due time.
// (On Deno Deploy the queue listener must be registered at startup, as here.)
kv.listenQueue(async (msg) => {
  if (!(await app.handleMessage(msg))) console.warn("idem: ignored a queue message that is not a dispatch", msg);
});

const server = Deno.serve(
  {
    port: Number(env("PORT") ?? 8000),
    hostname: env("HOST"),
    onListen: ({ port }) => console.log(`idem on Deno ${Deno.version.deno} with Deno KV: listening on http://localhost:${port}/`),
  },
  app.fetch,
);

// Stop cleanly on Ctrl-C / SIGTERM: finish requests in progress, close the database.
for (const signal of ["SIGINT", "SIGTERM"]) {
  try {
    Deno.addSignalListener(signal, async () => {
      await server.shutdown();
      kv.close();
      Deno.exit(0);
    });
  } catch {
    // Signals are not available everywhere (Deno Deploy manages the process).
  }
}
