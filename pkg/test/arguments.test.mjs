// No call from JavaScript traps a wasm module: every export, called over 100,000 times with
// random argument shapes and orders (undefined, null, NaN, BigInt, Symbol, functions, 100 KB
// strings, typed arrays, objects where strings belong, and good values so that calls get deep),
// either answers or throws an IdemError with a code. Afterwards the machines that took those calls
// reduce a known stream byte for byte as fresh ones do: nothing broke their memory.
//
// The raw bindings (the wasm modules' own `Machine`, which a caller could reach without an entry)
// are called too: they may throw a TypeError from the glue's `+nowMs`, never a
// `WebAssembly.RuntimeError`, and they too reduce the known stream as fresh ones do after.
//
//   SEED=123 node --test pkg/test/arguments.test.mjs     replay one run (the seed is printed)
//   CALLS=1000000 node --test pkg/test/arguments.test.mjs more calls
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { argumentsFor, badThrow, describeArg, oddValues, offline, ORDER, PAYMENT, pools, T0 } from "./arguments.mjs";
import * as idem from "../src/node.js";
import * as lean from "../dist/lean/idem.js";
import * as full from "../dist/idem.js";
import { checkedMachine } from "../src/checks.js";
import { DenoKvQueue, DenoKvStore } from "../src/stores/denokv.js";
import { openIndexedDBStore } from "../src/stores/indexeddb.js";
import { rng } from "../../tests/differential/rng.mjs";

const { IdemError } = idem;
const SEED = process.env.SEED !== undefined ? Number(process.env.SEED) >>> 0 : (Math.random() * 2 ** 32) >>> 0;
const CALLS = Number(process.env.CALLS ?? 120_000);
const RAW_CALLS = Math.ceil(CALLS / 4);

/** The known stream: three processes, interleaved, with duplicates, a conflict, rejects and due work. */
function knownStream(m, bytes) {
  const out = [];
  const held = new Map();
  const reduce = (pid, event, now) => {
    const o = bytes ? m.reduceBytes(held.get(pid) ?? null, event, now, pid) : m.reduce(held.get(pid) ?? null, event, now, pid);
    held.set(pid, o.snapshot);
    const snapshot = bytes ? Buffer.from(o.snapshot ?? []).toString("latin1") : o.snapshot;
    out.push(JSON.stringify({ ...o, snapshot }));
  };
  for (let i = 0; i < 12; i++) {
    const now = T0 + 1_000 * i;
    reduce("stream-a", { id: `a${i % 9}`, type: "PAYMENT_PARTIAL", payload: { paymentId: `pa${i % 9}`, amount: 10 + (i % 3) } }, now);
    reduce("stream-b", JSON.stringify({ id: `b${i}`, type: i % 4 === 3 ? "NOPE" : "PAYMENT_PARTIAL", payload: { paymentId: `pb${i}`, amount: 30 } }), now);
    reduce("stream-c", { id: `c${i}`, type: "PAYMENT_PARTIAL", payload: { paymentId: "same", amount: i } }, now);
  }
  reduce("stream-a", { id: "a1", type: "PAYMENT_PARTIAL", payload: { paymentId: "pa1", amount: 99 } }, T0 + 50_000);
  for (const [pid, s] of held) out.push(JSON.stringify([pid, m.inspect(s), m.due(s, T0 + 90_000)]));
  return out;
}

/** The same stream on `used` and on a fresh machine of `Make`: equal, outcome by outcome. */
function assertSameAsFresh(used, Make, what) {
  for (const bytes of [false, true]) {
    const fresh = new Make(ORDER);
    const a = knownStream(used, bytes);
    const b = knownStream(fresh, bytes);
    assert.equal(a.length, b.length);
    a.forEach((line, i) => assert.equal(line, b[i], `${what} (${bytes ? "reduceBytes" : "reduce"}) step ${i}`));
  }
}

test(`every export, called with random arguments, answers or throws an IdemError with a code (SEED=${SEED})`, async () => {
  console.log(`arguments fuzz: SEED=${SEED} CALLS=${CALLS}`);
  const r = rng(SEED);
  const { good, keep, snapshots } = pools(r);
  const LeanMachine = checkedMachine(lean.Machine); // what the workerd and deno entries export
  const machines = { node: new idem.Machine(ORDER), lean: new LeanMachine(ORDER) };
  const payment = { node: new idem.Machine(PAYMENT), lean: new LeanMachine(PAYMENT) };
  const ctx = { good, snapshots, machine: machines.node, raw: new lean.Machine(ORDER) };
  const odd = oddValues(r, ctx);
  const store = new idem.MemoryStore();
  const gateway = new idem.FakeGateway();
  const m = () => r.pick([machines.node, machines.lean, payment.node, payment.lean]);
  const outcome = () => ({ snapshot: good.stored(), revision: 1, status: "applied", nextDueAt: null });
  const stores = { d1: new idem.D1Store(offline()), kv: new idem.KVStore(offline(), { singleWriter: r.chance(0.5) }), durable: new idem.DurableObjectStore(offline()), denokv: new DenoKvStore(offline()) };

  /** [name, good slots, call(args)]: each export of the entries. */
  const calls = [
    ["new Machine (node)", [good.definition], (a) => new idem.Machine(...a)],
    ["new Machine (lean)", [good.definition], (a) => new LeanMachine(...a)],
    ["machine.reduce", [good.snapshot, good.event, good.now, good.processId], (a) => keep(m().reduce(...a))],
    ["machine.reduceBytes", [good.snapshot, good.event, good.now, good.processId], (a) => keep(m().reduceBytes(...a))],
    ["machine.due", [good.stored, good.now], (a) => m().due(...a)],
    ["machine.inspect", [good.stored], (a) => m().inspect(...a)],
    ["machine.retention/definition/eventTypes/id", [], () => [m().retention(), m().definition(), m().eventTypes(), m().id, m().hash, m().version]],
    ["Machine.prototype.reduce on another this", [odd, good.snapshot, good.event, good.now, good.processId], ([self, ...a]) => idem.Machine.prototype.reduce.apply(self, a)],
    ["Machine.prototype.inspect on another this", [odd, good.stored], ([self, ...a]) => LeanMachine.prototype.inspect.apply(self, a)],
    ["importXState", [() => JSON.stringify({ id: "x", initial: "a", states: { a: {} } })], (a) => idem.importXState(...a)],
    ["readClock", [good.now], (a) => idem.readClock(...a)],
    ["new EventText", [() => "e1", () => "CHECKOUT", () => '{"id":"e1","type":"CHECKOUT"}'], (a) => new idem.EventText(...a)],
    ["nextDueAt", [m, good.stored], (a) => idem.nextDueAt(...a)],
    ["apply", [() => store, m, good.processId, good.event, () => ({ now: good.now() })], (a) => idem.apply(...a)],
    ["inspect", [() => store, m, good.processId], (a) => idem.inspect(...a)],
    ["dispatch", [() => store, m, good.processId, () => ({ now: good.now(), handlers: { charge: () => ({ id: "ch" }) } })], (a) => idem.dispatch(...a)],
    ["MemoryStore.load", [good.processId], (a) => store.load(...a)],
    ["MemoryStore.commit", [good.processId, () => null, () => ({ snapshot: good.stored(), revision: 1 }), () => ({})], (a) => new idem.MemoryStore().commit(...a)],
    ["MemoryStore.commitMany", [good.processId, () => null, () => [{ outcome: { snapshot: good.stored(), revision: 1 } }]], (a) => new idem.MemoryStore().commitMany(...a)],
    ["MemoryStore.events", [good.processId, () => ({ after: 0, limit: 5 })], (a) => store.events(...a)],
    ["D1Store.load/events/due", [good.processId, () => ({ limit: 3 })], ([a, b]) => r.pick([() => stores.d1.load(a), () => stores.d1.events(a, b), () => stores.d1.due(a, b)])()],
    ["D1Store.commit", [good.processId, () => null, outcome, () => ({})], (a) => stores.d1.commit(...a)],
    ["KVStore.load/commit", [good.processId, () => null, outcome], (a) => (r.chance(0.5) ? stores.kv.load(a[0]) : stores.kv.commit(...a))],
    ["DurableObjectStore.load/commit/events", [good.processId, () => null, outcome, () => ({})], (a) => r.pick([() => stores.durable.load(a[0]), () => stores.durable.commit(...a), () => stores.durable.events(a[0], a[3])])()],
    ["DenoKvStore.load/commit/events/eventRecord", [good.processId, () => null, outcome, () => ({ now: good.now() })], (a) => r.pick([() => stores.denokv.load(a[0]), () => stores.denokv.commit(...a), () => stores.denokv.events(a[0], a[3]), () => stores.denokv.eventRecord(a[0], a[1])])()],
    ["new D1Store", [odd], (a) => new idem.D1Store(...a)],
    ["new KVStore", [odd, odd], (a) => new idem.KVStore(...a)],
    ["new DurableObjectStore", [odd, good.processId], (a) => new idem.DurableObjectStore(...a)],
    ["new DenoKvStore", [odd, odd], (a) => new DenoKvStore(...a)],
    ["new DenoKvQueue", [odd, odd], (a) => new DenoKvQueue(...a)],
    ["openIndexedDBStore", [odd], (a) => openIndexedDBStore(...a)],
    ["new FakeGateway", [() => ({ idempotent: true })], (a) => new idem.FakeGateway(...a)],
    ["FakeGateway.failNext", [() => "drop", () => 0], (a) => gateway.failNext(...a)],
  ];

  const counts = new Map();
  const failures = new Map();
  const started = performance.now();
  for (let i = 0; i < CALLS; i++) {
    const [name, slots, call] = calls[i % calls.length];
    const args = argumentsFor(r, slots, odd);
    counts.set(name, (counts.get(name) ?? 0) + 1);
    let bad = null;
    try {
      const result = call(args);
      if (result && typeof result.then === "function") await result;
    } catch (err) {
      bad = badThrow(err);
    }
    if (bad !== null && !failures.has(`${name}: ${bad}`)) failures.set(`${name}: ${bad}`, args.map((a) => describeArg(a)));
  }
  const seconds = (performance.now() - started) / 1000;
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  console.log(`arguments fuzz: ${total} calls to ${counts.size} exports in ${seconds.toFixed(1)} s`);
  assert.deepEqual([...failures].slice(0, 10), [], `SEED=${SEED}: calls that trapped or threw without a code`);
  assert.ok(total >= 100_000 || process.env.CALLS !== undefined, `${total} calls`);

  assertSameAsFresh(machines.node, idem.Machine, "node entry Machine");
  assertSameAsFresh(machines.lean, LeanMachine, "lean Machine (workerd, deno)");
});

test(`the raw bindings never trap, whatever they are given (SEED=${SEED})`, async () => {
  await idem.loadAnalysis(); // the full module, instantiated
  const r = rng(SEED ^ 0x5eed);
  const { good, keep, snapshots } = pools(r);
  const raws = { lean: new lean.Machine(ORDER), full: new full.Machine(ORDER) };
  const ctx = { good, snapshots, machine: raws.lean, raw: raws.full };
  const odd = oddValues(r, ctx);
  const m = () => r.pick([raws.lean, raws.full]);
  const calls = [
    [[good.snapshot, good.event, good.now, good.processId], (a) => keep(m().reduce(...a))],
    [[good.snapshot, good.event, good.now, good.processId], (a) => keep(m().reduceBytes(...a))],
    [[good.stored, good.now], (a) => m().due(...a)],
    [[good.stored], (a) => m().inspect(...a)],
    [[good.definition], (a) => new (r.pick([lean.Machine, full.Machine]))(...a)],
    [[() => "{}"], (a) => full.importXState(...a)],
  ];
  const traps = [];
  let plain = 0;
  for (let i = 0; i < RAW_CALLS; i++) {
    const [slots, call] = calls[i % calls.length];
    const args = argumentsFor(r, slots, odd);
    try {
      call(args);
    } catch (err) {
      if (err instanceof WebAssembly.RuntimeError) traps.push(args.map(describeArg));
      else if (!(err instanceof IdemError)) plain++;
    }
  }
  console.log(`raw bindings: ${RAW_CALLS} calls, ${plain} threw a plain error (the glue's +nowMs), none may trap`);
  assert.deepEqual(traps.slice(0, 5), [], `SEED=${SEED}: calls that trapped`);
  assertSameAsFresh(raws.lean, lean.Machine, "raw lean Machine");
  assertSameAsFresh(raws.full, full.Machine, "raw full Machine");
});

test("the checks name the argument and what it got", async () => {
  const m = new idem.Machine(ORDER);
  const event = { id: "e1", type: "PAYMENT_PARTIAL", payload: { paymentId: "p1", amount: 40 } };
  const cases = [
    [() => m.reduce(null, event, "p1", Date.now()), "invalid_argument", "nowMs", 'nowMs must be a number of milliseconds, got the string "p1"'],
    [() => m.reduce(null, event, Date.now(), { x: 1 }), "invalid_argument", "processId", "processId must be a non-empty string, got an object"],
    [() => m.reduce(null, event, "123", "o1"), "invalid_argument", "nowMs", 'nowMs must be a number of milliseconds, got the string "123"'],
    [() => m.reduce(null, event, 10n, "o1"), "invalid_argument", "nowMs", "nowMs must be a number of milliseconds, got a bigint"],
    [() => m.reduce(null, event, 1000, "p".repeat(257)), "invalid_argument", "processId", "processId must be at most 256 bytes of UTF-8, got a string of 257 characters"],
    [() => m.reduce(null, event, 1000, "\uD800x"), "invalid_argument", "processId", 'processId must be a well-formed string (no lone surrogate), got the string "\\ud800x"'],
    [() => m.reduce(undefined, event, 1000, "o1"), "invalid_argument", "snapshot", "snapshot must be null, a string or a Uint8Array, got undefined"],
    [() => m.reduce(new Int8Array(2), event, 1000, "o1"), "invalid_argument", "snapshot", "snapshot must be null, a string or a Uint8Array, got a Int8Array"],
    [() => m.reduce(null, 42, 1000, "o1"), "invalid_argument", "event", "event must be an object { id, type, payload } or its JSON text, got the number 42"],
    [() => m.reduce(null, { ...event, payload: { n: 1n } }, 1000, "o1"), "invalid_argument", "event", "event cannot be written as JSON: Do not know how to serialize a BigInt"],
    [() => m.inspect(null), "invalid_argument", "snapshot", "snapshot must be a string or a Uint8Array, got null"],
    [() => m.due("idem3", "5"), "invalid_argument", "nowMs", 'nowMs must be a number of milliseconds, got the string "5"'],
    [() => new idem.Machine(undefined), "invalid_argument", "definition", "definition must be an object or its JSON text, got undefined"],
    [() => idem.importXState(7), "invalid_argument", "config", "config must be an object or its JSON text, got the number 7"],
    [() => idem.readClock("123"), "invalid_argument", "now", 'now must be a function returning ms, a number of ms or undefined, got the string "123"'],
    [() => idem.readClock(() => "123"), "invalid_argument", "now()", 'now() must be a number of milliseconds, got the string "123"'],
    [() => new idem.EventText("e1", 5, "{}"), "invalid_argument", "type", "type must be a string, got the number 5"],
    [() => new idem.KVStore({}), "invalid_argument", "kv", "kv must be a Workers KV binding (env.KV), got an object"],
  ];
  for (const [call, code, path, message] of cases) {
    assert.throws(call, (err) => {
      assert.ok(err instanceof IdemError, String(err));
      assert.deepEqual([err.code, err.path, err.message], [code, path, message]);
      return true;
    });
  }
  // apply and the stores reject their promise; nothing is stored.
  const store = new idem.MemoryStore();
  await assert.rejects(idem.apply(store, m, event), { code: "invalid_argument", path: "processId", message: "processId must be a non-empty string, got an object" });
  await assert.rejects(idem.apply(store, m, "o1", event, { now: "123" }), { code: "invalid_argument", path: "options.now" });
  await assert.rejects(idem.apply(store, m, "o1", event, { now: () => "123" }), { code: "invalid_argument", path: "options.now()" });
  await assert.rejects(idem.apply(store, {}, "o1", event), { code: "invalid_argument", path: "machine" });
  await assert.rejects(idem.dispatch(store, m, "o1", { handlers: { ship: "yes" } }), { code: "invalid_argument", path: "options.handlers" });
  await assert.rejects(store.commit("o1", null, { snapshot: 5 }), { code: "invalid_argument", path: "steps[0].outcome.snapshot" });
  await assert.rejects(store.events("o1", { limit: -1 }), { code: "invalid_argument", path: "options.limit" });
  assert.equal(store.rows.size, 0);
  assert.equal(store.writes, 0);
  // The platform stores check before they touch their binding.
  const made = [
    ["D1Store", (b) => new idem.D1Store(b)],
    ["KVStore", (b) => new idem.KVStore(b)],
    ["DurableObjectStore", (b) => new idem.DurableObjectStore(b)],
    ["DenoKvStore", (b) => new DenoKvStore(b)],
  ];
  for (const [name, make] of made) {
    const binding = offline();
    const s = make(binding);
    await assert.rejects(s.load(5), { code: "invalid_argument", path: "processId" }, name);
    await assert.rejects(s.load(""), { code: "missing_process_id" }, name);
    await assert.rejects(s.commit("o1", null, { snapshot: new Int8Array(2), revision: 1 }), { code: "invalid_argument" }, name);
    await assert.rejects(s.commit("o1", {}, { snapshot: "idem3", revision: 1 }), { code: "invalid_argument", path: "expectedVersion" }, name);
    if (s.events) await assert.rejects(s.events("o1", { after: "1" }), { code: "invalid_argument", path: "options.after" }, name);
    assert.equal(binding.touched, 0, `${name} touched its binding for a wrong argument`);
    await assert.rejects(s.load("o1"), { code: "store_unavailable" }, name);
    assert.equal(binding.touched, 1, name);
  }
  await assert.rejects(new idem.D1Store(offline()).due("soon"), { code: "invalid_argument", path: "now" });
  assert.throws(() => new idem.DurableObjectStore(offline(), 5), { code: "invalid_argument", path: "processId" });
  await assert.rejects(new idem.DurableObjectStore(offline(), "o1").load("o2"), { code: "invalid_argument", path: "processId" });
  // The codes the engine had for these stay: a missing process id, a missing or out-of-range clock.
  assert.throws(() => m.reduce(null, event, 1000), { code: "missing_process_id" });
  assert.throws(() => m.reduce(null, event, undefined, "o1"), { code: "missing_now" });
  assert.throws(() => m.reduce(null, event, -1, "o1"), { code: "invalid_now" });
  // A freed machine refuses rather than following a null pointer into wasm memory.
  const freed = new idem.Machine(ORDER);
  freed.free();
  assert.throws(() => freed.reduce(null, event, 1000, "o1"), { code: "invalid_argument", path: "this" });
  assert.throws(() => idem.Machine.prototype.analyze.call({}), { code: "invalid_argument", path: "this" });
  assert.throws(() => freed.analyze(), { code: "invalid_argument", path: "this" });
  // A bad event's *content* is still the engine's to judge: a rejected outcome with its code.
  assert.equal(m.reduce(null, { type: "PAYMENT_PARTIAL" }, 1000, "o1").error.code, "missing_event_id");
});

test("dispatch: a handler's result JSON cannot write is a permanent failure invalid_result; a verifier's, a verifier error", async () => {
  const def = JSON.parse(readFileSync(new URL("./fixtures/checkout.json", import.meta.url), "utf8"));
  const cyclic = {};
  cyclic.self = cyclic;
  for (const [result, said] of [[5n, "Do not know how to serialize a BigInt"], [() => 1, "got a function"], [Symbol("s"), "got a symbol"], [cyclic, "Converting circular structure to JSON"]]) {
    const m = new idem.Machine(def);
    const store = new idem.MemoryStore();
    const now = T0;
    await idem.apply(store, m, "o1", { id: "c1", type: "CHECKOUT", payload: { amount: 4 } }, { now });
    const report = await idem.dispatch(store, m, "o1", { now, handlers: { charge: () => result } });
    assert.deepEqual(report.steps.map((s) => [s.result, s.status, s.state]), [["failed", "applied", "review"]]);
    const { failure } = (await idem.inspect(store, m, "o1")).context;
    assert.equal(failure.reason, "permanent");
    assert.equal(failure.error.code, "invalid_result");
    assert.ok(failure.error.message.startsWith(`the charge handler's result cannot be written as JSON: ${said}`), failure.error.message);
  }
  // A non-idempotent charge whose answer was lost is verified; a verifier that finds it but answers a
  // result JSON cannot write reports nothing: the item stays due, as when a verifier throws.
  def.states.charging.entry[0].effect.idempotent = false;
  const m = new idem.Machine(def);
  const store = new idem.MemoryStore();
  let now = T0;
  await idem.apply(store, m, "o1", { id: "c1", type: "CHECKOUT", payload: { amount: 4 } }, { now: () => now });
  const options = { now: () => now, handlers: { charge: () => { throw idem.unknownOutcome(new Error("lost")); } }, verifiers: { charge: () => ({ exists: true, result: 7n }) } };
  const lost = await idem.dispatch(store, m, "o1", options);
  now = lost.nextDueAt;
  const verify = await idem.dispatch(store, m, "o1", options);
  assert.deepEqual(verify.steps.map((s) => [s.kind, s.result, s.error?.code]), [["verify", "verify-error", "invalid_result"]]);
  assert.equal((await idem.inspect(store, m, "o1")).value, "charging");
});
