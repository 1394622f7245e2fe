// Runs the Cloudflare example Worker (examples/cloudflare) on real workerd
// through Miniflare's API, with real local D1, Workers KV and Durable Objects
// (no mocks). The Worker is bundled by wrangler exactly as `wrangler deploy`
// would bundle it; the D1 schema comes from the migration files.
//
// The payment gateway is the outside world, so it lives here, in node: two
// fake gateways (with and without idempotency keys) served over HTTP to the
// Worker's GATEWAY service binding (http://keys.gateway/, http://nokeys.gateway/).
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { FakeGateway, gatewayFetch, NetworkError } from "../../pkg/src/testing/fake-gateway.js";

export const ROOT = resolve(fileURLToPath(import.meta.url), "..", "..", "..");
const EXAMPLE = join(ROOT, "examples", "cloudflare");

let bundle = null;
/** Bundle the Worker once per test process (wrangler deploy --dry-run --outdir). */
export function buildWorker() {
  if (bundle) return bundle;
  // wrangler wants the static assets' directory (generated, not committed); the Worker's code
  // imports pkg/ itself, so assets assembled earlier serve as well as new ones.
  if (!existsSync(join(EXAMPLE, ".assets", "index.html"))) {
    execFileSync(process.execPath, [join(EXAMPLE, "build-assets.mjs")], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  }
  const out = mkdtempSync(join(tmpdir(), "idem-workerd-"));
  execFileSync(join(ROOT, "node_modules", ".bin", "wrangler"), ["deploy", "--dry-run", "--outdir", out, "--config", join(EXAMPLE, "wrangler.toml")], {
    cwd: ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  process.on("exit", () => rmSync(out, { recursive: true, force: true }));
  bundle = join(out, "worker.js");
  return bundle;
}

/**
 * The statements of the D1 migration files, in order (as `wrangler d1 migrations apply` runs them).
 * @param {(file: string) => boolean} [which] only the files it accepts (by name)
 */
export function migrationStatements(which = () => true) {
  const dir = join(ROOT, "pkg", "d1", "migrations");
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(".sql") && which(f))
    .sort();
  return files
    .map((f) => readFileSync(join(dir, f), "utf8"))
    .join("\n")
    .split("\n")
    .filter((l) => !l.trim().startsWith("--"))
    .map((l) => l.replace(/--.*$/, ""))
    .join("\n")
    .split(";")
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * Start the Worker. Returns `{ mf, fetch(path, init), post(path, key, body), gateways, close }`.
 * @param {{ kvDirect?: boolean, vars?: Record<string, string>, persist?: string, wrapper?: { name: string, source: string } }} [options]
 *   `vars` become Worker env vars; `persist` is a directory for the Durable Objects' storage (a
 *   second Worker started on it finds the objects as the first left them); `wrapper` is a module
 *   run as the entry instead of the bundle, next to it (it imports "./worker.js"): tests only
 */
export async function startWorker(options = {}) {
  let scriptPath = buildWorker();
  if (options.wrapper) {
    scriptPath = join(dirname(buildWorker()), `${options.wrapper.name}.js`);
    writeFileSync(scriptPath, options.wrapper.source);
  }
  const gateways = { keys: new FakeGateway(), nokeys: new FakeGateway({ idempotent: false }) };
  const serveKeys = gatewayFetch(gateways.keys);
  const serveNokeys = gatewayFetch(gateways.nokeys);
  const mf = new Miniflare({
    modules: true,
    scriptPath,
    modulesRoot: dirname(buildWorker()),
    // The bundle is an ES module also when a wrapper imports it (Miniflare takes other .js files for CommonJS).
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }, { type: "ESModule", include: ["**/worker.js"] }],
    compatibilityDate: "2025-09-01",
    d1Databases: { DB: "idem-test" },
    kvNamespaces: ["KV"],
    durableObjects: { PROCESS: { className: "ProcessObject", useSQLite: true } },
    ...(options.persist ? { durableObjectsPersist: options.persist } : {}),
    bindings: { ...(options.kvDirect ? { UNSAFE_KV_DIRECT: "1" } : {}), ...(options.vars ?? {}) },
    serviceBindings: {
      // A dropped response becomes a failed fetch in the Worker, like a reset connection.
      GATEWAY: async (request) => {
        const host = new URL(request.url).hostname;
        try {
          return await (host.startsWith("nokeys") ? serveNokeys : serveKeys)(request);
        } catch (err) {
          // The connection broke after the gateway charged: the Worker sees a 504 from the
          // network in front of it, whose outcome is unknown.
          if (err instanceof NetworkError) return new Response("upstream connection reset", { status: 504 });
          throw err;
        }
      },
    },
  });
  const db = await mf.getD1Database("DB");
  for (const stmt of migrationStatements()) await db.prepare(stmt).run();
  const fetch = (path, init) => mf.dispatchFetch(`http://localhost${path}`, init);
  // Warm up: the first request builds the machines, so that tests race on the stores, not on that.
  await (await fetch("/api")).arrayBuffer();
  const post = (path, key, body, headers = {}) =>
    fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json", ...(key === null ? {} : { "idempotency-key": key }), ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  return { mf, db, fetch, post, gateways, close: () => mf.dispose() };
}

/**
 * A bare Worker with a local D1 database and no schema yet, for tests of the schema's history.
 * Returns `{ db, migrate(which), close }`; `migrate` runs the migration files `which` accepts.
 */
export async function startD1() {
  const mf = new Miniflare({ modules: true, script: "export default { fetch: () => new Response('') }", compatibilityDate: "2025-09-01", d1Databases: { DB: "idem-bare" } });
  const db = await mf.getD1Database("DB");
  const migrate = async (which) => {
    for (const stmt of migrationStatements(which)) await db.prepare(stmt).run();
  };
  return { db, migrate, close: () => mf.dispose() };
}

/** Poll `fn` until it returns a truthy value (or throw after `tries`). */
export async function eventually(fn, { tries = 200, everyMs = 50, what = "condition" } = {}) {
  let last;
  for (let i = 0; i < tries; i++) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`${what} did not hold; last value: ${JSON.stringify(last)}`);
}
