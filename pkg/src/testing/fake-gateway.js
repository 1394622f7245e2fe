// A fake payment gateway: the outside world for tests and demos. It behaves
// like a real one, not like the engine wishes it did:
//
// - the idempotent variant honours `Idempotency-Key`: the same key returns the
//   same charge and is counted once, even if the first response was lost; the
//   same key with different parameters is refused (422), as real gateways do;
// - the variant without idempotency keys creates a new charge on every call
//   and offers `findByReference(reference)` for the verify path;
// - it can be told to time out (answer late or never), drop the response
//   after charging, fail transiently (503, no charge) or fail permanently
//   (402 card declined, no charge), for the next N calls.
//
// It runs in-process (`new FakeGateway()`), and can be served over HTTP
// (`gatewayFetch(gateway)` is a standard `Request -> Response` handler; use it
// with `Deno.serve`, a Miniflare service binding or node's http server) and
// reached through `httpGateway(fetch, baseUrl)` with the same interface.
// `gatewayEffects(gateway)` gives the dispatcher its `charge` handler and
// verifier, classifying answers the way a production adapter would.

/** An error answered by the gateway (it has an HTTP status). */
import { invalidArgument, isBoolean, isCount, isDuration, optionalField, optionsArg } from "../checks.js";

const FAULTS = ["timeout", "drop", "transient", "permanent"];
/** The most faults one `failNext` queues (each is an entry in a list kept in memory). */
const MAX_FAULTS = 10_000;

export class GatewayError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.name = "GatewayError";
    this.status = status;
    this.code = code;
  }
}

/** The connection failed after the request was sent: the outcome is unknown. */
export class NetworkError extends Error {
  constructor(message = "connection reset before the response arrived") {
    super(message);
    this.name = "NetworkError";
    this.code = "network_error";
  }
}

/** @typedef {"timeout" | "drop" | "transient" | "permanent"} GatewayFault */

const canonical = (v) => JSON.stringify(v, Object.keys(v ?? {}).sort());

/**
 * An in-memory payment gateway.
 *
 * ```js
 * const gw = new FakeGateway();                 // honours idempotency keys
 * gw.failNext("drop");                          // next call: charge, then lose the response
 * await gw.charge({ amount: 40 }, { idempotencyKey: "k1" }).catch(() => {});
 * await gw.charge({ amount: 40 }, { idempotencyKey: "k1" });  // same charge back
 * gw.chargeCount();                             // 1
 * ```
 */
export class FakeGateway {
  /**
   * @param {{ idempotent?: boolean, timeoutMs?: number | null }} [options]
   *   `idempotent: false` ignores idempotency keys (a new charge per call);
   *   `timeoutMs` is how long a "timeout" fault waits before answering (null: never)
   */
  constructor(options = {}) {
    optionsArg(options);
    this.idempotent = optionalField(options, "idempotent", isBoolean, "true or false") ?? true;
    this.timeoutMs = optionalField(options, "timeoutMs", (v) => v === null || isDuration(v), "a number of ms or null") ?? null;
    /** @type {Map<string, object>} every charge made, by charge id */
    this.charges = new Map();
    /** @type {Map<string, { chargeId: string, request: string }>} */
    this.keys = new Map();
    /** @type {GatewayFault[]} faults for the next calls, in order */
    this.faults = [];
    /** Calls received (including failed and dropped ones). */
    this.requests = 0;
    this.seq = 0;
  }

  /**
   * Make the next `times` calls misbehave.
   * @param {GatewayFault} fault
   * @param {number} [times]
   */
  failNext(fault, times = 1) {
    if (!FAULTS.includes(/** @type {any} */ (fault))) throw invalidArgument("fault", `one of ${FAULTS.join(", ")}`, fault);
    if (!isCount(times) || times > MAX_FAULTS) throw invalidArgument("times", `a whole number up to ${MAX_FAULTS}`, times);
    for (let i = 0; i < times; i++) this.faults.push(fault);
    return this;
  }

  /** Number of charges made, optionally only those with this reference. */
  chargeCount(reference) {
    if (reference === undefined) return this.charges.size;
    return [...this.charges.values()].filter((c) => c.reference === reference).length;
  }

  /** Total amount charged. */
  total() {
    let sum = 0;
    for (const c of this.charges.values()) sum += c.amount;
    return sum;
  }

  /**
   * Create a charge.
   * @param {{ amount: number, currency?: string, reference?: string }} request
   * @param {{ idempotencyKey?: string }} [options]
   * @returns {Promise<{ id: string, amount: number, currency: string, reference: string | null, status: "succeeded" }>}
   */
  async charge(request, options = {}) {
    optionalField(optionsArg(options), "idempotencyKey", (v) => typeof v === "string", "a string");
    this.requests++;
    const fault = this.faults.shift();
    if (fault === "transient") throw new GatewayError(503, "temporarily_unavailable", "the gateway is temporarily unavailable");
    if (fault === "permanent") throw new GatewayError(402, "card_declined", "the card was declined");
    if (!request || typeof request.amount !== "number" || !(request.amount > 0)) {
      throw new GatewayError(400, "invalid_request", "amount must be a positive number");
    }
    const key = this.idempotent ? options.idempotencyKey : undefined;
    const body = canonical({ amount: request.amount, currency: request.currency ?? "eur", reference: request.reference ?? null });
    let charge;
    const prior = key !== undefined ? this.keys.get(key) : undefined;
    if (prior) {
      if (prior.request !== body) {
        throw new GatewayError(422, "idempotency_key_reused", "this idempotency key was used with different parameters");
      }
      charge = this.charges.get(prior.chargeId);
    } else {
      this.seq++;
      charge = {
        id: `ch_${String(this.seq).padStart(6, "0")}`,
        amount: request.amount,
        currency: request.currency ?? "eur",
        reference: request.reference ?? null,
        status: "succeeded",
      };
      this.charges.set(charge.id, charge);
      if (key !== undefined) this.keys.set(key, { chargeId: charge.id, request: body });
    }
    if (fault === "drop") throw new NetworkError();
    if (fault === "timeout") {
      if (this.timeoutMs === null) await new Promise(() => {});
      await new Promise((r) => setTimeout(r, this.timeoutMs));
    }
    return { ...charge };
  }

  /**
   * Find a charge by the reference given when it was made (the verify path).
   * @param {string} reference
   */
  async findByReference(reference) {
    this.requests++;
    for (const c of this.charges.values()) if (c.reference === reference) return { ...c };
    return null;
  }
}

/**
 * Dispatcher handlers and verifiers for a `charge` effect whose payload is
 * `{ amount, currency? }`. The effect key is both the idempotency key and the
 * charge's reference. Answers are classified like a production adapter would:
 * a network error or a 502/504 is an unknown outcome; 429 and other 5xx are
 * retryable; other 4xx are permanent.
 *
 * @param {{ charge: FakeGateway["charge"], findByReference: FakeGateway["findByReference"] }} gateway
 * @param {string} [type] effect type (default "charge")
 */
export function gatewayEffects(gateway, type = "charge") {
  const classify = (err) => {
    if (err instanceof NetworkError || err?.name === "NetworkError") return Object.assign(err, { unknown: true });
    const status = err?.status;
    if (status === 502 || status === 504) return Object.assign(err, { unknown: true });
    if (status === 429 || (status >= 500 && status < 600)) return Object.assign(err, { retryable: true });
    return err;
  };
  return {
    handlers: {
      [type]: async (payload, { key }) => {
        try {
          const c = await gateway.charge({ amount: payload?.amount, currency: payload?.currency, reference: key }, { idempotencyKey: key });
          return { chargeId: c.id, amount: c.amount, currency: c.currency };
        } catch (err) {
          throw classify(err);
        }
      },
    },
    verifiers: {
      [type]: async (_payload, { key }) => {
        const c = await gateway.findByReference(key);
        return c ? { exists: true, result: { chargeId: c.id, amount: c.amount, currency: c.currency } } : { exists: false };
      },
    },
  };
}

const json = (status, body) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/**
 * Serve a gateway over HTTP with standard Request/Response:
 *
 * - `POST /charges` (`Idempotency-Key` header, body `{ amount, currency?, reference? }`) -> 201 charge
 * - `GET /charges?reference=R` -> 200 `{ data: [charge] }` (empty when none)
 * - `GET /stats` -> `{ charges, requests, total, byReference }`
 * - `POST /faults` body `{ fault, times? }` -> queue faults for the next calls
 *
 * A dropped response makes the handler throw a `NetworkError` (a server
 * wrapper turns that into a reset connection).
 * @param {FakeGateway} gateway
 * @returns {(request: Request) => Promise<Response>}
 */
export function gatewayFetch(gateway) {
  return async (request) => {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname === "/charges") {
      const body = await request.json().catch(() => null);
      try {
        const key = request.headers.get("idempotency-key") ?? undefined;
        return json(201, await gateway.charge(body ?? {}, { idempotencyKey: key }));
      } catch (err) {
        if (err instanceof GatewayError) return json(err.status, { error: { code: err.code, message: err.message } });
        throw err;
      }
    }
    if (request.method === "GET" && url.pathname === "/charges") {
      const found = await gateway.findByReference(url.searchParams.get("reference") ?? "");
      return json(200, { data: found ? [found] : [] });
    }
    if (request.method === "GET" && url.pathname === "/stats") {
      const byReference = {};
      for (const c of gateway.charges.values()) byReference[c.reference] = (byReference[c.reference] ?? 0) + 1;
      return json(200, { charges: gateway.chargeCount(), requests: gateway.requests, total: gateway.total(), byReference });
    }
    if (request.method === "POST" && url.pathname === "/faults") {
      const body = await request.json().catch(() => ({}));
      gateway.failNext(body.fault, body.times ?? 1);
      return json(200, { queued: gateway.faults.length });
    }
    return json(404, { error: { code: "not_found", message: "no such route" } });
  };
}

/**
 * A client for a gateway served by {@link gatewayFetch}, with the same
 * `charge` / `findByReference` interface as {@link FakeGateway}.
 * @param {(input: Request) => Promise<Response>} fetcher e.g. `globalThis.fetch` or a service binding's `fetch`
 * @param {string} baseUrl
 */
export function httpGateway(fetcher, baseUrl) {
  const url = (p) => new URL(p, baseUrl).toString();
  return {
    async charge(request, options = {}) {
      const headers = { "content-type": "application/json" };
      if (options.idempotencyKey !== undefined) headers["idempotency-key"] = options.idempotencyKey;
      let res;
      try {
        res = await fetcher(new Request(url("/charges"), { method: "POST", headers, body: JSON.stringify(request) }));
      } catch (err) {
        throw new NetworkError(String(err?.message ?? err));
      }
      const body = await res.json().catch(() => null);
      if (!res.ok) throw new GatewayError(res.status, body?.error?.code ?? "http_error", body?.error?.message ?? `status ${res.status}`);
      return body;
    },
    async findByReference(reference) {
      const res = await fetcher(new Request(url(`/charges?reference=${encodeURIComponent(reference)}`)));
      if (!res.ok) throw new GatewayError(res.status, "http_error", `status ${res.status}`);
      const body = await res.json();
      return body.data[0] ?? null;
    },
  };
}
