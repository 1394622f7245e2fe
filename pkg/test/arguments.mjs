// The argument generator the property tests share (arguments.test.mjs, arguments-http.test.mjs):
// good values per kind, the odd values (wrong types, wrong shapes, edge numbers, hostile
// objects), the arguments of one call, and what a throw must be.
import { readFileSync } from "node:fs";
import * as idem from "../src/node.js";

const { IdemError } = idem;

export const machineText = (name) => readFileSync(new URL(`../../tests/machines/${name}`, import.meta.url), "utf8");
export const PAYMENT = JSON.parse(machineText("payment.json"));
export const ORDER = JSON.parse(machineText("order.json"));

export const T0 = 1_700_000_000_000;
export const BIG = "x".repeat(100 * 1024);
const cyclic = { id: "e1", type: "CHECKOUT" };
cyclic.self = cyclic;

/** Good values per kind, and the snapshots the run has made so far (to pass back). */
export function pools(r) {
  const snapshots = [];
  const keep = (out) => {
    if (out && (typeof out.snapshot === "string" || out.snapshot instanceof Uint8Array)) {
      if (snapshots.length < 16) snapshots.push(out.snapshot);
      else snapshots[r.int(0, 15)] = out.snapshot;
    }
  };
  const event = () =>
    r.pick([
      () => ({ id: `e${r.int(0, 39)}`, type: "CHECKOUT", payload: { amount: r.int(0, 99) } }),
      () => ({ id: `e${r.int(0, 39)}`, type: r.pick(["RETRY", "NOPE", "charge.failed"]) }),
      () => ({ id: `e${r.int(0, 39)}`, type: "PAYMENT_PARTIAL", payload: { paymentId: `p${r.int(0, 4)}`, amount: 40 } }),
      () => JSON.stringify({ id: `e${r.int(0, 39)}`, type: "CHECKOUT", payload: { amount: 5 } }),
    ])();
  const good = {
    processId: () => `p-${r.int(0, 7)}`,
    now: () => T0 + r.int(0, 199_999),
    event,
    snapshot: () => (snapshots.length > 0 && r.chance(0.7) ? r.pick(snapshots) : null),
    stored: () => (snapshots.length > 0 ? r.pick(snapshots) : "idem3\n"),
    definition: () => r.pick([PAYMENT, ORDER, machineText("payment.json")]),
  };
  return { good, keep, snapshots };
}

/** Every odd value the run draws from: wrong types, wrong shapes, edge numbers, hostile objects. */
export function oddValues(r, ctx) {
  const list = [
    () => undefined,
    () => null,
    () => NaN,
    () => Infinity,
    () => -Infinity,
    () => -1,
    () => 0,
    () => 1.5,
    () => 2 ** 53,
    () => Date.now(),
    () => -0,
    () => 10n,
    () => Symbol("odd"),
    () => () => {},
    () => () => 5,
    () => function named() {},
    () => BIG,
    () => "",
    () => "123",
    () => "p1",
    () => "p".repeat(300),
    () => "é".repeat(129),
    () => "\uD800",
    () => "{",
    () => "idem3\ngarbage",
    () => true,
    () => false,
    () => ({}),
    () => ({ x: 1 }),
    () => [],
    () => ["p1"],
    () => [1, 2, 3],
    () => new Uint8Array(8),
    () => new Uint8Array(0),
    () => new Int8Array(2),
    () => new Float64Array(1),
    () => new Uint8ClampedArray(3),
    () => new DataView(new ArrayBuffer(2)),
    () => new ArrayBuffer(8),
    () => new Date(),
    () => new String("p1"),
    () => new Number(5),
    () => Object.create(null),
    () => new Map(),
    () => Promise.resolve(1),
    () => ({ toJSON() { throw new Error("no json for you"); } }),
    () => ({ toJSON: () => undefined }),
    () => cyclic,
    () => ({ id: "e1", type: "CHECKOUT", payload: { n: 5n } }),
    () => ({ id: 1, type: [] }),
    () => ({ id: "e1" }),
    () => ({ type: "CHECKOUT" }),
    () => ({ id: BIG, type: "CHECKOUT" }),
    () => ({ now: "123" }),
    () => ({ now: () => "123" }),
    () => ({ now: -5 }),
    () => ({ maxRetries: -1 }),
    () => ({ lane: "yes", laneStallMs: NaN }),
    () => ({ handlers: { charge: 5 } }),
    () => ({ handlers: { charge: () => ({ ok: true }) }, verifiers: { charge: () => ({ exists: false }) }, now: T0 + 100_000 }),
    () => ({ timeoutMs: "1s", onStep: 3 }),
    () => ({ after: -1, limit: 1.5 }),
    () => ({ snapshot: 5, revision: "x" }),
    () => ({ snapshot: "idem3\n", revision: 1, status: "applied" }),
    () => [{ outcome: { snapshot: 1 } }],
    () => new idem.MemoryStore(),
    () => ({ load: () => null, commit: () => ({ ok: true, version: 1 }) }),
    () => ctx.machine,
    () => ctx.raw,
    () => ctx.good.event(),
    () => ctx.good.snapshot(),
    () => ctx.good.stored(),
    () => ctx.good.processId(),
    () => ctx.good.now(),
    () => (ctx.snapshots.length > 0 ? new TextEncoder().encode(String(r.pick(ctx.snapshots))) : new Uint8Array(1)),
    () => (ctx.snapshots.length > 0 ? String(r.pick(ctx.snapshots)).slice(0, -3) : "idem3"),
  ];
  return () => r.pick(list)();
}

/**
 * The arguments of one call: each position good (60%) or odd; sometimes shuffled, cut short or
 * given one more.
 * @param {(() => unknown)[]} slots good value makers, in order
 */
export function argumentsFor(r, slots, odd) {
  let args = slots.map((good) => (r.chance(0.6) ? good() : odd()));
  if (r.chance(0.15)) args = args.sort(() => r.next() - 0.5);
  if (r.chance(0.08)) args = args.slice(0, r.int(0, args.length));
  if (r.chance(0.05)) args.push(odd());
  return args;
}

/**
 * A platform binding (D1, KV, Durable Object storage, Deno KV) that is out of reach: every method
 * throws `store_unavailable`, and `touched` counts the calls. A store's argument checks come first,
 * so a wrong argument never gets this far; a right one gets this coded error.
 */
export function offline() {
  const binding = { touched: 0 };
  for (const name of ["prepare", "batch", "getWithMetadata", "put", "get", "delete", "list", "atomic", "enqueue", "listenQueue"]) {
    binding[name] = () => {
      binding.touched++;
      throw new IdemError("store_unavailable", `${name}: this binding is offline`);
    };
  }
  return binding;
}

/** What a thrown value must be: an IdemError with a code (never a trap, never a bare TypeError). */
export function badThrow(err) {
  if (err instanceof WebAssembly.RuntimeError) return `WebAssembly.RuntimeError: ${err.message}`;
  if (!(err instanceof IdemError)) return `not an IdemError: ${err?.constructor?.name} ${err?.message ?? String(err)}`;
  if (typeof err.code !== "string" || err.code === "") return `IdemError without a code: ${err.message}`;
  return null;
}


/** An argument, for a failure message. */
export function describeArg(a) {
  if (typeof a === "string") return a.length > 40 ? `string(${a.length})` : JSON.stringify(a);
  if (typeof a === "bigint" || typeof a === "symbol" || typeof a === "function") return typeof a;
  if (a instanceof Uint8Array) return `Uint8Array(${a.length})`;
  if (ArrayBuffer.isView(a)) return a.constructor.name;
  try {
    const s = JSON.stringify(a);
    return s === undefined ? String(a) : s.length > 60 ? `${s.slice(0, 60)}...` : s;
  } catch {
    return Object.prototype.toString.call(a);
  }
}
