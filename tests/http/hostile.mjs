// Hostile requests both example servers must answer alike (docs/hostile-inputs.md, "Over HTTP"):
// sent as raw bytes over a TCP socket, not through `fetch`, so that nothing on the client side
// repairs them first (a bad UTF-8 byte, a body that stops halfway). Plain `node:` modules, so the
// same file runs under Node (tests/workerd) and Deno (tests/deno).
import net from "node:net";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";

/**
 * One HTTP/1.1 request over a fresh connection, as bytes; resolves to the response once it is
 * whole. With `end: false` the request is left unfinished (the connection stays open, nothing
 * more is sent): what a stalled client does.
 * @param {{ host: string, port: number }} target
 * @param {{ method?: string, path: string, headers?: Record<string, string>, body?: Uint8Array | string, contentLength?: number, end?: boolean, timeoutMs?: number }} req
 * @returns {Promise<{ status: number, headers: Record<string, string>, text: string, ms: number }>}
 */
export function rawRequest(target, req) {
  const body = req.body === undefined ? Buffer.alloc(0) : Buffer.from(req.body);
  const headers = { host: `${target.host}:${target.port}`, connection: "close", ...(req.headers ?? {}) };
  if (req.body !== undefined || req.contentLength !== undefined) headers["content-length"] = String(req.contentLength ?? body.length);
  const head = `${req.method ?? "GET"} ${req.path} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n`;
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const socket = net.connect(target.port, target.host);
    let got = Buffer.alloc(0);
    let done = false;
    const finish = (err, value) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    const timer = setTimeout(() => finish(new Error(`no whole response within ${req.timeoutMs ?? 10_000} ms; got ${JSON.stringify(got.toString("latin1").slice(0, 200))}`)), req.timeoutMs ?? 10_000);
    const tryParse = (closed) => {
      const end = got.indexOf("\r\n\r\n");
      if (end < 0) return closed ? finish(new Error(`connection closed before a response: ${JSON.stringify(got.toString("latin1"))}`)) : undefined;
      const lines = got.subarray(0, end).toString("latin1").split("\r\n");
      const status = Number(lines[0].split(" ")[1]);
      const h = {};
      for (const l of lines.slice(1)) {
        const i = l.indexOf(":");
        h[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      let rest = got.subarray(end + 4);
      if (h["transfer-encoding"]?.includes("chunked")) {
        const parts = [];
        for (;;) {
          const eol = rest.indexOf("\r\n");
          if (eol < 0) return closed ? finish(new Error("cut chunked body")) : undefined;
          const size = parseInt(rest.subarray(0, eol).toString("latin1"), 16);
          if (size === 0) break;
          if (rest.length < eol + 2 + size + 2) return closed ? finish(new Error("cut chunked body")) : undefined;
          parts.push(rest.subarray(eol + 2, eol + 2 + size));
          rest = rest.subarray(eol + 2 + size + 2);
        }
        rest = Buffer.concat(parts);
      } else if (h["content-length"] !== undefined) {
        const n = Number(h["content-length"]);
        if (rest.length < n) return closed ? finish(new Error("cut body")) : undefined;
        rest = rest.subarray(0, n);
      } else if (!closed) {
        return undefined;
      }
      finish(null, { status, headers: h, text: rest.toString("utf8"), ms: Date.now() - t0 });
    };
    socket.on("data", (d) => {
      got = Buffer.concat([got, d]);
      tryParse(false);
    });
    socket.on("end", () => tryParse(true));
    socket.on("error", (err) => (got.length > 0 ? tryParse(true) : finish(err)));
    socket.write(Buffer.concat([Buffer.from(head, "latin1"), body]));
    if (req.end !== false) socket.end();
  });
}

/** `{"type":"PAYMENT_PARTIAL","payload":{"paymentId":"<id>","amount":<amount as written>}}` */
export const payText = (paymentId, amount) => `{"type":"PAYMENT_PARTIAL","payload":{"paymentId":"${paymentId}","amount":${amount}}}`;

/** `payText` as bytes, with `bad` in place of the first "X" of the payment id. */
function withBytes(bad) {
  const ok = Buffer.from(payText("pX", 1));
  const at = ok.indexOf("X");
  return Buffer.concat([ok.subarray(0, at), Buffer.from(bad), ok.subarray(at + 1)]);
}

const event = (pid, key, body) => ({
  method: "POST",
  path: `/processes/${pid}/events`,
  headers: { "content-type": "application/json", "idempotency-key": key },
  body,
});

/**
 * The hostile requests, each with the status and code both servers answer. `pid` keeps each
 * case's process apart from the others'.
 * @type {{ name: string, request: (pid: string) => object, status: number, code: string, allow?: string }[]}
 */
export const CASES = [
  { name: "invalid UTF-8 (0xff) inside a JSON string", request: (pid) => event(pid, "k1", withBytes([0xff])), status: 400, code: "invalid_json" },
  { name: "a UTF-8 sequence cut short", request: (pid) => event(pid, "k1", withBytes([0xe2, 0x82])), status: 400, code: "invalid_json" },
  { name: "an overlong encoding", request: (pid) => event(pid, "k1", withBytes([0xc0, 0xaf])), status: 400, code: "invalid_json" },
  { name: "a UTF-16 surrogate encoded as UTF-8", request: (pid) => event(pid, "k1", withBytes([0xed, 0xa0, 0x80])), status: 400, code: "invalid_json" },
  { name: "a payment of 1e309", request: (pid) => event(pid, "k1", payText("p1", "1e309")), status: 400, code: "number_out_of_range" },
  { name: "a payment of -1e309", request: (pid) => event(pid, "k1", payText("p1", "-1e309")), status: 400, code: "number_out_of_range" },
  { name: "a payment of 1e400", request: (pid) => event(pid, "k1", payText("p1", "1e400")), status: 400, code: "number_out_of_range" },
  {
    name: "a request target of 9,000 bytes",
    request: (pid) => ({ path: `/processes/${pid}?pad=${"a".repeat(9000)}` }),
    status: 414,
    code: "uri_too_long",
  },
  {
    name: "a header of 20,000 bytes",
    request: (pid) => ({ path: `/processes/${pid}`, headers: { "x-pad": "a".repeat(20_000) } }),
    status: 431,
    code: "headers_too_large",
  },
  {
    name: "300 headers of 60 bytes",
    request: (pid) => ({ path: `/processes/${pid}`, headers: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`x-h${i}`, "a".repeat(50)])) }),
    status: 431,
    code: "headers_too_large",
  },
  { name: "POST /api", request: () => ({ method: "POST", path: "/api", headers: { "content-type": "application/json" }, body: "{}" }), status: 405, code: "method_not_allowed", allow: "GET" },
  { name: "POST /api/health", request: () => ({ method: "POST", path: "/api/health", body: "" }), status: 405, code: "method_not_allowed", allow: "GET, HEAD" },
  { name: "PUT on a process", request: (pid) => ({ method: "PUT", path: `/processes/${pid}`, body: "{}" }), status: 405, code: "method_not_allowed", allow: "GET" },
  { name: "DELETE on a process's events", request: (pid) => ({ method: "DELETE", path: `/processes/${pid}/events` }), status: 405, code: "method_not_allowed", allow: "GET, POST" },
  { name: "POST to no route", request: () => ({ method: "POST", path: "/nowhere.html", body: "" }), status: 404, code: "not_found" },
];

/** Send every case; check its status, its problem+json body and code, its Allow header. */
export async function checkCases(target, prefix) {
  for (const [i, c] of CASES.entries()) {
    const res = await rawRequest(target, c.request(`${prefix}-${i}`));
    assert.equal(res.status, c.status, `${c.name}: ${res.status} ${res.text}`);
    assert.equal(res.headers["content-type"], "application/problem+json", c.name);
    const body = JSON.parse(res.text);
    assert.equal(body.code, c.code, c.name);
    assert.equal(body.status, c.status, c.name);
    if (c.allow) assert.equal(res.headers.allow, c.allow, c.name);
  }
}

/**
 * Numbers and the fingerprint, as both servers decide (pkg/src/http.js): `1.0`, `1e0` and `10e-1`
 * are one float and `-0`, `-0.0` another, but an integer is not the float of the same value:
 * `1` then `1.0` under one key is `id_conflict`, as is `0` then `-0`.
 */
export const NUMBER_PAIRS = [
  ["1", "1", true],
  ["1.0", "1e0", true],
  ["1e0", "10e-1", true],
  ["-0", "-0.0", true],
  ["1", "1.0", false],
  ["1", "1e0", false],
  ["0", "-0", false],
];

/** Send each pair under one key: a replay (the first status, `Idempotency-Replayed`) or 422 `id_conflict`. */
export async function checkNumberPairs(target, pid) {
  for (const [i, [a, b, replay]] of NUMBER_PAIRS.entries()) {
    const first = await rawRequest(target, event(pid, `n${i}`, payText(`q${i}`, a)));
    assert.ok(first.status === 200 || first.status === 201, `${a}: ${first.status} ${first.text}`);
    const retry = await rawRequest(target, event(pid, `n${i}`, payText(`q${i}`, b)));
    if (replay) {
      assert.equal(retry.status, first.status, `${a} then ${b}: ${retry.text}`);
      assert.equal(retry.headers["idempotency-replayed"], "true", `${a} then ${b}`);
      assert.equal(retry.text, first.text, `${a} then ${b}`);
    } else {
      assert.equal(retry.status, 422, `${a} then ${b}: ${retry.text}`);
      assert.equal(JSON.parse(retry.text).code, "id_conflict", `${a} then ${b}`);
    }
  }
}

/**
 * A POST whose body stops after 20 of its 200 declared bytes: 408 `request_timeout` once the
 * server's body deadline (`timeoutMs`) passes, while the connection is still open; nothing
 * recorded. Returns how long the answer took.
 */
export async function checkStalledBody(target, pid, timeoutMs) {
  const res = await rawRequest(target, { ...event(pid, "k1", payText("p1", 1).slice(0, 20)), contentLength: 200, end: false, timeoutMs: timeoutMs + 10_000 });
  assert.equal(res.status, 408, res.text);
  assert.equal(res.headers["content-type"], "application/problem+json");
  assert.equal(JSON.parse(res.text).code, "request_timeout");
  assert.ok(res.ms >= timeoutMs - 50, `answered after ${res.ms} ms, before the ${timeoutMs} ms deadline`);
  const after = await rawRequest(target, { path: `/processes/${pid}` });
  assert.equal(after.status, 404, "nothing was recorded");
  return res.ms;
}
