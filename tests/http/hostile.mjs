// Hostile requests both example servers must answer alike (docs/hostile-inputs.md, "Over HTTP"):
// sent as raw bytes over a TCP socket, not through `fetch`, so that nothing on the client side
// repairs them first (a bad UTF-8 byte, a body that stops halfway). No imports: the same file runs
// under Node (tests/workerd, through node:net) and Deno (tests/deno, through Deno.connect).

const encoder = new TextEncoder();
const bytesOf = (v) => (typeof v === "string" ? encoder.encode(v) : v);
const latin1 = (b) => Array.from(b, (c) => String.fromCharCode(c)).join("");
const concat = (a, b) => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
};
/** Index of `needle` (ASCII) in `b`, or -1. */
function find(b, needle, from = 0) {
  outer: for (let i = from; i + needle.length <= b.length; i++) {
    for (let j = 0; j < needle.length; j++) if (b[i + j] !== needle.charCodeAt(j)) continue outer;
    return i;
  }
  return -1;
}

function fail(message) {
  throw new Error(message);
}
function check(ok, what) {
  if (!ok) fail(what);
}
function equal(actual, expected, what) {
  if (actual !== expected) fail(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

/** A TCP connection: `write`, `chunks()` (what arrives), `close`. */
async function connect({ host, port }) {
  if (globalThis.Deno) {
    const conn = await Deno.connect({ hostname: host, port });
    return {
      async write(b) {
        for (let at = 0; at < b.length; ) at += await conn.write(b.subarray(at));
      },
      async *chunks() {
        const buf = new Uint8Array(65536);
        for (;;) {
          let n;
          try {
            n = await conn.read(buf);
          } catch {
            return;
          }
          if (n === null) return;
          yield buf.slice(0, n);
        }
      },
      close: () => {
        try {
          conn.close();
        } catch { /* closed */ }
      },
    };
  }
  const spec = "node:net"; // not a literal import: Deno never resolves it
  const net = await import(spec);
  const socket = net.connect(port, host);
  await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  return {
    write: (b) => new Promise((resolve) => socket.write(b, () => resolve())),
    async *chunks() {
      try {
        for await (const d of socket) yield new Uint8Array(d);
      } catch { /* reset */ }
    },
    close: () => socket.destroy(),
  };
}

/**
 * One HTTP/1.1 request over a fresh connection, as bytes; resolves to the response once it is
 * whole. A `contentLength` larger than the body leaves the request unfinished (nothing more is
 * sent, the connection stays open): what a stalled client does.
 * @param {{ host: string, port: number }} target
 * @param {{ method?: string, path: string, headers?: Record<string, string>, body?: Uint8Array | string, contentLength?: number, timeoutMs?: number }} req
 * @returns {Promise<{ status: number, headers: Record<string, string>, text: string, ms: number }>}
 */
export async function rawRequest(target, req) {
  const body = req.body === undefined ? new Uint8Array(0) : bytesOf(req.body);
  const headers = { host: `${target.host}:${target.port}`, connection: "close", ...(req.headers ?? {}) };
  if (req.body !== undefined || req.contentLength !== undefined) headers["content-length"] = String(req.contentLength ?? body.length);
  const head = `${req.method ?? "GET"} ${req.path} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n`;
  const t0 = Date.now();
  const conn = await connect(target);
  const timeoutMs = req.timeoutMs ?? 10_000;
  let got = new Uint8Array(0);
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no whole response within ${timeoutMs} ms; got ${JSON.stringify(latin1(got).slice(0, 200))}`)), timeoutMs);
  });
  const receive = (async () => {
    // The write side stays open: hyper (Deno.serve) drops a request whose client half-closes before
    // the answer is written. `connection: close` ends the exchange after the response instead.
    await conn.write(concat(bytesOf(head), body));
    for await (const chunk of conn.chunks()) {
      got = concat(got, chunk);
      const res = parse(got, false);
      if (res) return res;
    }
    return parse(got, true) ?? fail(`connection closed before a whole response: ${JSON.stringify(latin1(got).slice(0, 200))}`);
  })();
  try {
    const res = await Promise.race([receive, late]);
    return { ...res, ms: Date.now() - t0 };
  } finally {
    clearTimeout(timer);
    conn.close();
    receive.catch(() => {});
  }
}

/** The response in `got`, or null while it is not whole (`closed`: nothing more will come). */
function parse(got, closed) {
  const end = find(got, "\r\n\r\n");
  if (end < 0) return null;
  const lines = latin1(got.subarray(0, end)).split("\r\n");
  const status = Number(lines[0].split(" ")[1]);
  const headers = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(":");
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  let rest = got.subarray(end + 4);
  if (headers["transfer-encoding"]?.includes("chunked")) {
    let text = new Uint8Array(0);
    for (;;) {
      const eol = find(rest, "\r\n");
      if (eol < 0) return null;
      const size = parseInt(latin1(rest.subarray(0, eol)), 16);
      if (size === 0) break;
      if (rest.length < eol + 2 + size + 2) return null;
      text = concat(text, rest.subarray(eol + 2, eol + 2 + size));
      rest = rest.subarray(eol + 2 + size + 2);
    }
    rest = text;
  } else if (headers["content-length"] !== undefined) {
    const n = Number(headers["content-length"]);
    if (rest.length < n) return null;
    rest = rest.subarray(0, n);
  } else if (!closed) {
    return null;
  }
  return { status, headers, text: new TextDecoder().decode(rest) };
}

/** `{"type":"PAYMENT_PARTIAL","payload":{"paymentId":"<id>","amount":<amount as written>}}` */
export const payText = (paymentId, amount) => `{"type":"PAYMENT_PARTIAL","payload":{"paymentId":"${paymentId}","amount":${amount}}}`;

/** `payText` as bytes, with `bad` in place of the first "X" of the payment id. */
function withBytes(bad) {
  const ok = encoder.encode(payText("pX", 1));
  const at = ok.indexOf("X".charCodeAt(0));
  return new Uint8Array([...ok.subarray(0, at), ...bad, ...ok.subarray(at + 1)]);
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
    // At most 128 fields: Deno.serve's HTTP layer refuses more before the handler runs (tests/deno/http.test.js).
    name: "80 headers of 220 bytes",
    request: (pid) => ({ path: `/processes/${pid}`, headers: Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`x-h${i}`, "a".repeat(210)])) }),
    status: 431,
    code: "headers_too_large",
  },
  { name: "POST /api", request: () => ({ method: "POST", path: "/api", headers: { "content-type": "application/json" }, body: "{}" }), status: 405, code: "method_not_allowed", allow: "GET" },
  { name: "POST /api/health", request: () => ({ method: "POST", path: "/api/health", body: "" }), status: 405, code: "method_not_allowed", allow: "GET, HEAD" },
  { name: "PUT on a process", request: (pid) => ({ method: "PUT", path: `/processes/${pid}`, body: "{}" }), status: 405, code: "method_not_allowed", allow: "GET" },
  { name: "DELETE on a process's events", request: (pid) => ({ method: "DELETE", path: `/processes/${pid}/events` }), status: 405, code: "method_not_allowed", allow: "GET, POST" },
  { name: "POST to no route", request: () => ({ method: "POST", path: "/nowhere.html", body: "" }), status: 404, code: "not_found" },
  { name: "a payment of \"abc\" (the machine's payload schema)", request: (pid) => event(pid, "k1", payText("p1", '"abc"')), status: 422, code: "invalid_payload" },
  { name: "a payment of -5 (minimum 0)", request: (pid) => event(pid, "k1", payText("p1", "-5")), status: 422, code: "invalid_payload" },
];

/**
 * A payload its schema refuses is 422 `invalid_payload` with the path of the violation, and
 * nothing is recorded: the same key with a valid payload afterwards is applied (201), not a
 * replay of the refusal nor an `id_conflict`.
 */
export async function checkInvalidPayload(target, pid) {
  const bad = await rawRequest(target, event(pid, "pay-1", payText("p1", '"abc"')));
  equal(bad.status, 422, bad.text);
  equal(bad.headers["content-type"], "application/problem+json", "invalid payload");
  const problem = JSON.parse(bad.text);
  equal(problem.code, "invalid_payload", "invalid payload");
  check(JSON.stringify(problem).includes("payload.amount"), `the problem names payload.amount: ${bad.text}`);
  const good = await rawRequest(target, event(pid, "pay-1", payText("p1", "40")));
  equal(good.status, 201, `the same key, valid: ${good.text}`);
  check(good.headers["idempotency-replayed"] !== "true", "not a replay");
}

/** Send every case; check its status, its problem+json body and code, its Allow header. */
export async function checkCases(target, prefix) {
  for (const [i, c] of CASES.entries()) {
    const res = await rawRequest(target, c.request(`${prefix}-${i}`)).catch((err) => fail(`${c.name}: ${err.message}`));
    equal(res.status, c.status, `${c.name}: ${res.status} ${res.text}`);
    equal(res.headers["content-type"], "application/problem+json", c.name);
    const body = JSON.parse(res.text);
    equal(body.code, c.code, c.name);
    equal(body.status, c.status, c.name);
    if (c.allow) equal(res.headers.allow, c.allow, c.name);
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
    check(first.status === 200 || first.status === 201, `${a}: ${first.status} ${first.text}`);
    const retry = await rawRequest(target, event(pid, `n${i}`, payText(`q${i}`, b)));
    if (replay) {
      equal(retry.status, first.status, `${a} then ${b}: ${retry.text}`);
      equal(retry.headers["idempotency-replayed"], "true", `${a} then ${b}`);
      equal(retry.text, first.text, `${a} then ${b}`);
    } else {
      equal(retry.status, 422, `${a} then ${b}: ${retry.text}`);
      equal(JSON.parse(retry.text).code, "id_conflict", `${a} then ${b}`);
    }
  }
}

/**
 * A POST whose body stops after 20 of its 200 declared bytes: 408 `request_timeout` once the
 * server's body deadline (`timeoutMs`) passes, while the connection is still open; nothing
 * recorded. Returns how long the answer took.
 */
export async function checkStalledBody(target, pid, timeoutMs) {
  const res = await rawRequest(target, { ...event(pid, "k1", payText("p1", 1).slice(0, 20)), contentLength: 200, timeoutMs: timeoutMs + 10_000 });
  equal(res.status, 408, res.text);
  equal(res.headers["content-type"], "application/problem+json");
  equal(JSON.parse(res.text).code, "request_timeout");
  check(res.ms >= timeoutMs - 50, `answered after ${res.ms} ms, before the ${timeoutMs} ms deadline`);
  const after = await rawRequest(target, { path: `/processes/${pid}` });
  equal(after.status, 404, "nothing was recorded");
  return res.ms;
}
