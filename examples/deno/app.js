// The idem demo server on Deno: the HTTP API (pkg/src/http.js, the same
// mapping as the Cloudflare Worker) over Deno KV (pkg/src/stores/denokv.js),
// effects dispatched from Deno KV's queue, and the demo page (www/) with the
// wasm package (pkg/) as static files. `main.js` runs it; tests import
// `createApp` too.
//
//   POST /processes/:id/events      apply an event (Idempotency-Key header = event id)
//   GET  /processes/:id             the process (machine.inspect + version)
//   GET  /processes/:id/events      the event log
//   GET  /api                       the API description (retention window, limits)
//   GET  /api/health                what this server serves (the demo page asks it)
//   GET  /, /pkg/...                the demo page and the wasm package
//
// Every request is first held to the limits of pkg/src/http.js (414 for a long
// URL, 431 for large headers, problem+json); a POST body has `bodyTimeoutMs`
// (BODY_TIMEOUT_MS, default 10 s) to arrive whole, else 408. Each route answers
// only its methods (405 with Allow). The Worker answers the same statuses.
//
// Who calls, as in the Worker: with `apiTokens` (API_TOKENS in main.js),
// "alice=<token>,bob=<token>", every process route wants `Authorization: Bearer
// <token>` (401 without a known one), each caller's Idempotency-Keys are its
// own, and GET shows a process's summary (no ledger, no outbox payloads).
// Without it the demo is open to anyone, one caller for all, and GET shows the
// process in full, as the demo page draws it.
//
// Which machine runs a process is demo configuration, as in the Worker: ids
// ending in "-fragile" run www/machines/order-fragile.json, "-robust-nokeys"
// run order-robust-nokeys.json (a gateway without idempotency keys: the
// dispatcher verifies), "-parallel" run order-parallel.json (payment and
// fulfilment regions), all others order-robust.json.

import { Machine } from "../../pkg/dist/js/deno.js";
import { createHttpApi, problem, refuseOversized } from "../../pkg/dist/js/http.js";
import { DenoKvQueue, DenoKvStore } from "../../pkg/dist/js/stores/denokv.js";
import { FakeGateway, gatewayEffects, httpGateway } from "../../pkg/dist/js/testing/fake-gateway.js";
import robust from "../../www/machines/order-robust.json" with { type: "json" };
import fragile from "../../www/machines/order-fragile.json" with { type: "json" };
import robustNokeys from "../../www/machines/order-robust-nokeys.json" with { type: "json" };
import parallel from "../../www/machines/order-parallel.json" with { type: "json" };

const DEFINITIONS = { robust, fragile, "robust-nokeys": robustNokeys, parallel };
/** The variant a process runs, by the end of its id. */
const VARIANT_SUFFIXES = [["-robust-nokeys", "robust-nokeys"], ["-fragile", "fragile"], ["-parallel", "parallel"]];
/** How long the gateway may take before the outcome is unknown (ms). */
const TIMEOUT_MS = 2_000;

/** Static mounts: URL prefix -> directory (file URLs, so this works on Deno Deploy too). */
const MOUNTS = [
  ["/pkg/src/", new URL("../../pkg/src/", import.meta.url)],
  ["/pkg/dist/", new URL("../../pkg/dist/", import.meta.url)],
  ["/", new URL("../../www/", import.meta.url)],
];

const TYPES = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  mjs: "text/javascript; charset=utf-8",
  json: "application/json; charset=utf-8",
  wasm: "application/wasm",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  ico: "image/x-icon",
  md: "text/markdown; charset=utf-8",
  ts: "text/plain; charset=utf-8",
  txt: "text/plain; charset=utf-8",
};

/** A file under one of the mounts, or null: no `..`, no hidden files, no encoded separators. */
function locate(pathname) {
  let path;
  try {
    path = decodeURIComponent(pathname);
  } catch {
    return null;
  }
  if (path.includes("\0") || path.includes("\\")) return null;
  if (path.endsWith("/")) path += "index.html";
  for (const [prefix, dir] of MOUNTS) {
    if (!path.startsWith(prefix)) continue;
    const rest = path.slice(prefix.length);
    if (rest.split("/").some((seg) => seg === "" || seg === "." || seg === ".." || seg.startsWith("."))) return null;
    return new URL(rest, dir);
  }
  return null;
}

async function serveFile(request, url) {
  const file = locate(url.pathname);
  if (!file) return problem(404, "not_found", `no route for ${url.pathname}`);
  try {
    const info = await Deno.stat(file);
    if (!info.isFile) return problem(404, "not_found", `no route for ${url.pathname}`);
    if (request.method !== "GET" && request.method !== "HEAD") {
      return problem(405, "method_not_allowed", "use GET or HEAD", {}, { allow: "GET, HEAD" });
    }
    const ext = file.pathname.split(".").pop();
    const headers = { "content-type": TYPES[ext] ?? "application/octet-stream", "cache-control": "no-cache" };
    if (request.method === "HEAD") return new Response(null, { headers: { ...headers, "content-length": String(info.size) } });
    const handle = await Deno.open(file, { read: true });
    return new Response(handle.readable, { headers: { ...headers, "content-length": String(info.size) } });
  } catch (err) {
    if (err instanceof Deno.errors.NotFound || err instanceof Deno.errors.NotADirectory) {
      return problem(404, "not_found", `no route for ${url.pathname}`);
    }
    throw err;
  }
}

const utf8 = new TextEncoder();
const sha256 = async (text) =>
  Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", utf8.encode(text))), (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * `authorize` for bearer tokens given as "alice=<token>,bob=<token>": the caller a request's token
 * names, or null (401). The API description is anyone's. Tokens are looked up by their hash, so
 * how long a lookup takes says nothing about a token.
 * @param {string} spec
 */
function bearerTokens(spec) {
  const principals = (async () => {
    const map = new Map();
    for (const pair of spec.split(",")) {
      const at = pair.indexOf("=");
      const [principal, token] = [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
      if (at > 0 && principal && token) map.set(await sha256(token), principal);
    }
    return map;
  })();
  return async (request, { action }) => {
    if (action === "describe") return "anyone";
    const m = /^Bearer +(\S+)$/i.exec(request.headers.get("authorization") ?? "");
    return m ? ((await principals).get(await sha256(m[1])) ?? null) : null;
  };
}

/**
 * Build the server.
 *
 * @param {{
 *   kv: Deno.Kv,
 *   gatewayUrl?: string,        // the payment gateway honouring idempotency keys (else an in-process fake)
 *   gatewayNokeysUrl?: string,  // the gateway without idempotency keys, for "-robust-nokeys" processes
 *   maxRetries?: number,        // compare-and-set retries per request (default 64)
 *   bodyTimeoutMs?: number,     // how long a request body may take to arrive (default 10 s, then 408)
 *   apiTokens?: string,         // "alice=<token>,bob=<token>": callers by bearer token (else open to anyone)
 * }} config
 * @returns {{ fetch: (request: Request) => Promise<Response>, handleMessage: (msg: unknown) => Promise<boolean>, store: DenoKvStore, queue: DenoKvQueue }}
 */
export function createApp(config) {
  const { kv } = config;
  const maxRetries = config.maxRetries ?? 64;
  const machines = Object.fromEntries(Object.entries(DEFINITIONS).map(([k, d]) => [k, new Machine(d)]));
  const variantOf = (processId) => VARIANT_SUFFIXES.find(([suffix]) => processId.endsWith(suffix))?.[1] ?? "robust";
  const machineFor = (processId) => machines[variantOf(processId)];

  const gateways = {
    keys: config.gatewayUrl ? httpGateway((req) => fetch(req), config.gatewayUrl) : new FakeGateway(),
    nokeys: config.gatewayNokeysUrl ? httpGateway((req) => fetch(req), config.gatewayNokeysUrl) : new FakeGateway({ idempotent: false }),
  };
  const effects = Object.fromEntries(
    Object.keys(DEFINITIONS).map((variant) => {
      const fx = gatewayEffects(variant === "robust-nokeys" ? gateways.nokeys : gateways.keys);
      return [
        variant,
        {
          handlers: {
            // The charge effect carries the order's context; the gateway wants { amount, currency }.
            charge: (payload, meta) => fx.handlers.charge({ amount: payload?.amount ?? payload?.paid, currency: payload?.currency }, meta),
            ship: async (_payload, { key }) => ({ shipment: `sh_${key.slice(-8)}` }),
          },
          verifiers: fx.verifiers,
          timeoutMs: TIMEOUT_MS,
          maxRetries,
        },
      ];
    }),
  );

  // Every commit that leaves work due enqueues its dispatch message in the same atomic operation.
  const store = new DenoKvStore(kv, { machineFor, queue: true });
  const queue = new DenoKvQueue(kv, {
    store,
    machineFor,
    options: (processId) => effects[variantOf(processId)],
  });
  // Who may call and what GET shows (see the top of this file).
  const access = config.apiTokens ? { authorize: bearerTokens(config.apiTokens) } : { view: "full" };
  const apis = Object.fromEntries(
    Object.entries(machines).map(([variant, machine]) => [
      variant,
      // afterCommit: null: the store's commits enqueue their dispatch (queue: true).
      createHttpApi({ machine, store, maxRetries, bodyTimeoutMs: config.bodyTimeoutMs, afterCommit: null, onError: (err) => console.error("idem:", err), ...access }),
    ]),
  );

  async function fetchHandler(request) {
    const oversized = refuseOversized(request);
    if (oversized) return oversized;
    const url = new URL(request.url);
    const path = url.pathname;
    if (path === "/api/health" || path === "/health") {
      if (request.method !== "GET" && request.method !== "HEAD") {
        return problem(405, "method_not_allowed", "use GET or HEAD", {}, { allow: "GET, HEAD" });
      }
      return Response.json({
        ok: true,
        store: "Deno KV",
        runtime: `deno ${Deno.version.deno}`,
        machines: Object.fromEntries(Object.entries(DEFINITIONS).map(([k, d]) => [k, `${d.id}@${d.version}`])),
        gateway: config.gatewayUrl ? "http" : "in-process fake",
      });
    }
    if (path === "/api" || path === "/api/") {
      return apis.robust.handle(new Request(new URL("/", url), { method: request.method }));
    }
    if (path.startsWith("/processes/")) {
      const pid = path.slice("/processes/".length).split("/")[0];
      return apis[variantOf(pid)].handle(request);
    }
    return serveFile(request, url);
  }

  return {
    fetch: async (request) => {
      try {
        return await fetchHandler(request);
      } catch (err) {
        console.error("idem:", err);
        return problem(500, "internal_error", "the server failed; retrying with the same Idempotency-Key is safe");
      }
    },
    handleMessage: (msg) => queue.handle(msg),
    store,
    queue,
    gateways,
  };
}
