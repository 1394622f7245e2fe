// Runs the example server (examples/deno) as its users do, `deno task start`,
// in a child process on a free port with its own Deno KV file, and two fake
// payment gateways (with and without idempotency keys) served over HTTP from
// the test process: the outside world, whose books the tests read.
import { FakeGateway, gatewayFetch, NetworkError } from "../../pkg/src/testing/fake-gateway.js";
import { tempKvPath } from "./helpers.js";

const EXAMPLE = new URL("../../examples/deno/", import.meta.url);

/** Serve a fake gateway on a free port; a dropped response becomes a 504 from the network in front of it. */
export function serveGateway(gateway) {
  const handle = gatewayFetch(gateway);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    try {
      return await handle(request);
    } catch (err) {
      if (err instanceof NetworkError) return new Response("upstream connection reset", { status: 504 });
      throw err;
    }
  });
  return { server, url: `http://127.0.0.1:${server.addr.port}/` };
}

/**
 * Start the example server. Resolves once it listens.
 * @param {{ env?: Record<string, string> }} [options] extra environment (e.g. MAX_RETRIES)
 */
export async function startServer(options = {}) {
  const gateways = { keys: new FakeGateway(), nokeys: new FakeGateway({ idempotent: false }) };
  const served = { keys: serveGateway(gateways.keys), nokeys: serveGateway(gateways.nokeys) };
  const db = await tempKvPath();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["task", "start"],
    cwd: EXAMPLE,
    env: {
      PORT: "0",
      HOST: "127.0.0.1",
      IDEM_KV_PATH: db.path,
      GATEWAY_URL: served.keys.url,
      GATEWAY_NOKEYS_URL: served.nokeys.url,
      NO_COLOR: "1",
      ...(options.env ?? {}),
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();

  // Read its output: the first line that says where it listens, then keep draining (and keep it for errors).
  let output = "";
  const decoder = new TextDecoder();
  const drain = async (stream) => {
    for await (const chunk of stream) output += decoder.decode(chunk, { stream: true });
  };
  const draining = Promise.all([drain(child.stdout), drain(child.stderr)]);
  let port = null;
  for (let i = 0; i < 600 && port === null; i++) {
    const m = /listening on http:\/\/localhost:(\d+)\//.exec(output);
    if (m) port = Number(m[1]);
    else await new Promise((r) => setTimeout(r, 50));
  }
  if (port === null) {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    await child.status;
    await draining;
    throw new Error(`the example server did not start:\n${output}`);
  }
  const base = `http://127.0.0.1:${port}`;
  const fetchPath = (path, init) => fetch(`${base}${path}`, init);
  const post = (path, key, body, headers = {}) =>
    fetchPath(path, {
      method: "POST",
      headers: { "content-type": "application/json", ...(key === null ? {} : { "idempotency-key": key }), ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  return {
    base,
    fetch: fetchPath,
    post,
    gateways,
    output: () => output,
    /** SIGTERM, then wait for the exit; resolves to the exit status. */
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      const status = await child.status;
      await draining;
      await Promise.all([served.keys.server.shutdown(), served.nokeys.server.shutdown()]);
      await db.cleanup();
      return status;
    },
  };
}
