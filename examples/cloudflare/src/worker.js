// The idem demo Worker: the HTTP API (pkg/src/http.js) over three Cloudflare
// stores, the outbox dispatcher after a commit that leaves work due, and the demo page (www/)
// as static assets.
//
//   /processes/:id[/events]        D1 (the default; the page's "worker" mode uses it)
//   /do/processes/:id[/events]     the process's own Durable Object (its storage)
//   /kv/processes/:id[/events]     Workers KV, written only by the process's Durable Object
//   /kv-direct/processes/:id/...   Workers KV written by any Worker instance: UNSAFE (lost
//                                  updates under concurrency); only when UNSAFE_KV_DIRECT = "1"
//   /api/health                    what this Worker serves
//   GET /api, /do, /kv             the API description (retention window, limits)
//
// Every request is first held to the limits of pkg/src/http.js (414 for a long
// URL, 431 for large headers, problem+json); a POST body has `bodyTimeoutMs`
// (the BODY_TIMEOUT_MS var, default 10 s) to arrive whole, else 408. Each route
// answers only its methods (405 with Allow), as the Deno server does.
//
// Which machine runs a process is demo configuration: ids ending in
// "-fragile" run www/machines/order-fragile.json, "-robust-nokeys" run
// order-robust-nokeys.json (its charges go to a gateway without idempotency
// keys, so the dispatcher verifies), "-parallel" run order-parallel.json (payment
// and fulfilment regions), all others order-robust.json.
//
// Who calls: with the API_TOKENS secret set (`wrangler secret put API_TOKENS`;
// locally `.dev.vars` or `wrangler dev --var`), as "alice=<token>,bob=<token>",
// every process route wants `Authorization: Bearer <token>` (401 without a known one),
// each caller's Idempotency-Keys are its own, and GET shows a process's summary
// (no ledger, no outbox payloads). Without it the demo is open to anyone, one
// caller for all, and GET shows the process in full, as the demo page draws it.
//
// The payment gateway is the `GATEWAY` service binding when there is one
// (tests bind a fake gateway served over HTTP), otherwise in-process fake
// gateways (demo only: their books live in the isolate's memory).

import { DurableObject } from "cloudflare:workers";
import { Machine } from "../../../pkg/dist/js/workerd.js";
import { createHttpApi, problem, PROCESS_ID_PATTERN, refuseOversized } from "../../../pkg/dist/js/http.js";
import { dispatch } from "../../../pkg/dist/js/dispatch.js";
import { D1Store } from "../../../pkg/dist/js/stores/d1.js";
import { KVStore } from "../../../pkg/dist/js/stores/kv.js";
import { DurableObjectStore } from "../../../pkg/dist/js/stores/durable.js";
import { FakeGateway, gatewayEffects, httpGateway } from "../../../pkg/dist/js/testing/fake-gateway.js";
import robust from "../../../www/machines/order-robust.json";
import fragile from "../../../www/machines/order-fragile.json";
import robustNokeys from "../../../www/machines/order-robust-nokeys.json";
import parallel from "../../../www/machines/order-parallel.json";

const DEFINITIONS = { robust, fragile, "robust-nokeys": robustNokeys, parallel };
/** The variant a process runs, by the end of its id. */
const VARIANT_SUFFIXES = [["-robust-nokeys", "robust-nokeys"], ["-fragile", "fragile"], ["-parallel", "parallel"]];
/** Dispatcher: how long the gateway may take before the outcome is unknown (ms). */
const TIMEOUT_MS = 2_000;
/** After a commit, wait in the background for retries due this soon (ms); later ones go to the cron / alarm. */
const FOLLOW_UP_MS = 10_000;

const machines = {}; // each built on its first use, inside a request
function machineFor(processId) {
  const variant = VARIANT_SUFFIXES.find(([suffix]) => processId.endsWith(suffix))?.[1] ?? "robust";
  return { variant, machine: (machines[variant] ??= new Machine(DEFINITIONS[variant])) };
}

let localGateways = null;
/** The gateway a variant charges through: with idempotency keys, or without (the "-nokeys" variant). */
function gatewayFor(env, variant) {
  const keys = variant !== "robust-nokeys";
  if (env.GATEWAY) return httpGateway((req) => env.GATEWAY.fetch(req), keys ? "http://keys.gateway/" : "http://nokeys.gateway/");
  localGateways ??= { keys: new FakeGateway(), nokeys: new FakeGateway({ idempotent: false }) };
  return keys ? localGateways.keys : localGateways.nokeys;
}

/** The dispatcher's handlers: the charge effect carries the order's context; the gateway wants `{ amount }`. */
function effectsFor(env, variant) {
  const fx = gatewayEffects(gatewayFor(env, variant));
  return {
    handlers: {
      charge: (payload, meta) => fx.handlers.charge({ amount: payload?.amount ?? payload?.paid, currency: payload?.currency }, meta),
      ship: async (_payload, { key }) => ({ shipment: `sh_${key.slice(-8)}` }),
    },
    verifiers: fx.verifiers,
    timeoutMs: TIMEOUT_MS,
  };
}

const utf8 = new TextEncoder();
const sha256 = async (text) =>
  Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", utf8.encode(text))), (b) => b.toString(16).padStart(2, "0")).join("");

// { spec, principals: Map<sha256(token), principal> }, read once per value of API_TOKENS, inside a
// request and kept as a plain Map (a request must not wait on a promise another request made).
let tokens = null;
/**
 * The caller a request's bearer token names, or null (401). Tokens are looked up by their hash,
 * so how long a lookup takes says nothing about a token.
 */
async function bearer(request, spec) {
  if (tokens?.spec !== spec) {
    const principals = new Map();
    for (const pair of spec.split(",")) {
      const at = pair.indexOf("=");
      const [principal, token] = [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
      if (at > 0 && principal && token) principals.set(await sha256(token), principal);
    }
    tokens = { spec, principals };
  }
  const m = /^Bearer +(\S+)$/i.exec(request.headers.get("authorization") ?? "");
  return m ? (tokens.principals.get(await sha256(m[1])) ?? null) : null;
}

/** The HTTP API's options for who may call (the API description is anyone's) and what GET shows (see the top of this file). */
const access = (env) =>
  env.API_TOKENS ? { authorize: (request, { action }) => (action === "describe" ? "anyone" : bearer(request, env.API_TOKENS)) } : { view: "full" };

/** Compare-and-set retries per request (the MAX_RETRIES var can lower it, e.g. to show 409 contention). */
const maxRetries = (env) => (env.MAX_RETRIES === undefined ? 64 : Number(env.MAX_RETRIES));
/**
 * The host loop's lanes (one call at a time per process in this isolate): on unless the LANES var
 * is "off", which makes this isolate's concurrent requests race as other isolates' do.
 */
const lane = (env) => env.LANES !== "off";
/** How long a request body may take to arrive, whole (ms; the BODY_TIMEOUT_MS var, default http.js's 10 s). */
const bodyTimeoutMs = (env) => (env.BODY_TIMEOUT_MS === undefined ? undefined : Number(env.BODY_TIMEOUT_MS));
const GET_ONLY = (detail) => problem(405, "method_not_allowed", detail, {}, { allow: "GET, HEAD" });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Whether a commit left work due within FOLLOW_UP_MS (an effect to perform now, a retry soon): only
 * then is the dispatcher run after it. Nothing due (most events) costs no read of the process; work
 * due later is the cron's.
 */
const dueSoon = (out) => out.nextDueAt !== null && out.nextDueAt - Date.now() <= FOLLOW_UP_MS;

/** Dispatch now, then keep following retries that are due within FOLLOW_UP_MS. */
async function dispatchAndFollow(store, machine, processId, options) {
  const deadline = Date.now() + 25_000;
  for (;;) {
    const report = await dispatch(store, machine, processId, options);
    const due = report.nextDueAt;
    if (due === null || due - Date.now() > FOLLOW_UP_MS || due > deadline) return report;
    await sleep(Math.max(0, due - Date.now()));
  }
}

// One D1 store per isolate (it keeps the snapshots it last read or wrote; see D1Store).
let d1Store = null;
function d1StoreFor(env) {
  if (d1Store?.db !== env.DB) d1Store = new D1Store(env.DB);
  return d1Store;
}

function processIdOf(pathname, base) {
  const m = new RegExp(`^${base}/processes/([^/]+)`).exec(pathname);
  return m ? m[1] : null;
}

async function d1Api(request, env, ctx, url) {
  const store = d1StoreFor(env);
  const pid = processIdOf(url.pathname, "");
  const { variant, machine } = machineFor(pid ?? "");
  const api = createHttpApi({
    machine,
    store,
    maxRetries: maxRetries(env),
    lane: lane(env),
    bodyTimeoutMs: bodyTimeoutMs(env),
    afterCommit: (processId, out) => (dueSoon(out) ? dispatchAndFollow(store, machine, processId, effectsFor(env, variant)) : undefined),
    onError: (err) => console.error("dispatch failed", err),
    ...access(env),
  });
  return api.handle(request, { waitUntil: (p) => ctx.waitUntil(p) });
}

/** The API description (GET only: the request's method is kept, so another one gets 405). */
function describe(basePath, request, env) {
  const { machine } = machineFor("");
  const nothing = { load: async () => null, commit: async () => ({ ok: false }) }; // the description reads no process
  const api = createHttpApi({ machine, store: nothing, basePath, ...access(env) });
  return api.handle(new Request(`http://x${basePath}/`, { method: request.method, headers: request.headers }));
}

export default {
  async fetch(request, env, ctx) {
    const oversized = refuseOversized(request);
    if (oversized) return oversized;
    const url = new URL(request.url);
    const path = url.pathname;
    if (path === "/api/health" || path === "/health") {
      if (request.method !== "GET" && request.method !== "HEAD") return GET_ONLY("use GET or HEAD");
      return Response.json({
        ok: true,
        store: "D1",
        stores: { d1: "/processes", durableObject: "/do/processes", kv: "/kv/processes" },
        machines: Object.fromEntries(Object.entries(DEFINITIONS).map(([k, d]) => [k, `${d.id}@${d.version}`])),
        gateway: env.GATEWAY ? "service binding" : "in-process fake",
      });
    }
    if (path === "/api" || path === "/api/") return describe("", request, env);
    if (path.startsWith("/processes/")) return d1Api(request, env, ctx, url);
    for (const mode of ["do", "kv"]) {
      if (path === `/${mode}` || path === `/${mode}/`) return describe(`/${mode}`, request, env);
      if (path.startsWith(`/${mode}/processes/`)) {
        const pid = processIdOf(path, `/${mode}`);
        if (!PROCESS_ID_PATTERN.test(pid)) return problem(400, "invalid_process_id", `process ids must match ${PROCESS_ID_PATTERN.source}`);
        const stub = env.PROCESS.get(env.PROCESS.idFromName(`${mode}:${pid}`));
        return stub.fetch(request);
      }
    }
    if (path.startsWith("/kv-direct/processes/") && env.UNSAFE_KV_DIRECT === "1") {
      const store = new KVStore(env.KV, { prefix: "direct:" });
      const { machine } = machineFor(processIdOf(path, "/kv-direct") ?? "");
      return createHttpApi({ machine, store, basePath: "/kv-direct", maxRetries: maxRetries(env), ...access(env) }).handle(request);
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      // A static file answers GET and HEAD only; a path that is none is not found, whatever the method.
      const found = env.ASSETS ? (await env.ASSETS.fetch(new Request(url, { method: "HEAD" }))).ok : false;
      return found ? GET_ONLY("use GET or HEAD") : problem(404, "not_found", `no route for ${path}`);
    }
    if (env.ASSETS) return env.ASSETS.fetch(request);
    return problem(404, "not_found", `no route for ${path}`);
  },

  /** Cron: dispatch the D1 processes whose effects or timers are due. */
  async scheduled(_controller, env, ctx) {
    const store = d1StoreFor(env);
    for (const pid of await store.due(Date.now())) {
      const { variant, machine } = machineFor(pid);
      ctx.waitUntil(dispatch(store, machine, pid, effectsFor(env, variant)).catch((err) => console.error("dispatch failed", pid, err)));
    }
  },
};

/**
 * One object per process id (named "<mode>:<process id>"). It serialises the
 * process's requests, stores the snapshot in its own transactional storage
 * ("do" mode) or is the single writer of the process's Workers KV key ("kv"
 * mode), and drives effect retries with alarms at their due times.
 */
export class ProcessObject extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.meta = null; // { processId, mode }
    this.metaStored = false;
    this.kvStore = null;
    this.doStore = null;
    this.dispatching = null;
    this.again = false;
  }

  store() {
    if (this.meta.mode === "kv") return (this.kvStore ??= new KVStore(this.env.KV, { singleWriter: true }));
    // One store for the object's lifetime: it keeps the last snapshot (see DurableObjectStore).
    return (this.doStore ??= new DurableObjectStore(this.ctx.storage, this.meta.processId));
  }

  async fetch(request) {
    const url = new URL(request.url);
    const mode = url.pathname.startsWith("/kv/") ? "kv" : "do";
    const processId = processIdOf(url.pathname, `/${mode}`);
    if (!this.meta) {
      this.meta = (await this.ctx.storage.get("meta")) ?? null;
      this.metaStored = this.meta !== null;
      this.meta ??= { processId, mode };
    }
    if (this.meta.processId !== processId || this.meta.mode !== mode) {
      return problem(400, "invalid_process_id", "this object serves another process");
    }
    const { machine } = machineFor(processId);
    const api = createHttpApi({
      machine,
      store: this.store(),
      basePath: `/${mode}`,
      maxRetries: maxRetries(this.env),
      bodyTimeoutMs: bodyTimeoutMs(this.env),
      // Nothing due at all: no dispatch to run, and an alarm left from earlier finds nothing when it rings.
      afterCommit: (_processId, out) => (out.nextDueAt === null ? undefined : this.kick()),
      onError: (err) => console.error("dispatch failed", err),
      ...access(this.env),
    });
    return api.handle(request, { waitUntil: (p) => this.ctx.waitUntil(p) });
  }

  /** Run the dispatcher (one at a time in this object), then set the alarm for what is due next. */
  kick() {
    if (this.dispatching) {
      this.again = true;
      return this.dispatching;
    }
    this.dispatching = (async () => {
      try {
        // Which process this object serves, for its alarm: stored before the first alarm is set,
        // and no sooner, so a request the API refuses (unauthorized, malformed) stores nothing.
        if (!this.metaStored) {
          await this.ctx.storage.put("meta", this.meta);
          this.metaStored = true;
        }
        do {
          this.again = false;
          const { variant, machine } = machineFor(this.meta.processId);
          const report = await dispatch(this.store(), machine, this.meta.processId, effectsFor(this.env, variant));
          if (report.nextDueAt === null) await this.ctx.storage.deleteAlarm();
          else await this.ctx.storage.setAlarm(report.nextDueAt);
        } while (this.again);
      } finally {
        this.dispatching = null;
      }
    })();
    return this.dispatching;
  }

  async alarm() {
    if (!this.meta) {
      this.meta = (await this.ctx.storage.get("meta")) ?? null;
      this.metaStored = this.meta !== null;
    }
    if (this.meta) await this.kick();
  }
}
