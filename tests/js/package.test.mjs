// The package surface in Node.js, through pkg/src/node.js and the generated
// bindings (pkg/dist, built by scripts/build-wasm.sh): what a user imports,
// what is thrown, what is an outcome, and that the package's files agree with
// each other (exports, types, the tsconfig that checks them).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createMachine } from "xstate";
import * as idem from "../../pkg/src/node.js";
import { ContentionError, IdemError, Machine, importXState, loadAnalysis, newEventId, version } from "../../pkg/src/node.js";
import { StoreCorruptError, StoreLimitError } from "../../pkg/src/stores/limit.js";

const root = new URL("../../", import.meta.url);
const read = (path) => readFileSync(new URL(path, root), "utf8");
const orderDefinition = () => JSON.parse(read("tests/machines/order.json"));
const pay = (id, paymentId, amount) => ({ id, type: "PAYMENT_PARTIAL", payload: { paymentId, amount } });

/** Assert `fn` throws a real Error named IdemError with this code (and path). */
function throwsIdemError(fn, code, path) {
  let thrown = null;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  assert.ok(thrown instanceof Error, `expected an Error, got ${thrown}`);
  assert.ok(thrown instanceof IdemError, `expected an IdemError, got ${thrown}`);
  assert.equal(thrown.name, "IdemError");
  assert.equal(thrown.code, code, thrown.message);
  if (path !== undefined) assert.equal(thrown.path, path);
  assert.ok(thrown.message.length > 0);
  return thrown;
}

/** The functions, classes and constants pkg/src/index.d.ts declares at the package root. */
function declaredRoot() {
  const dts = read("pkg/src/index.d.ts");
  return [...dts.matchAll(/^export declare (?:function|class|const) ([A-Za-z0-9_]+)/gm)].map((m) => m[1]).sort();
}

test("the node entry exports exactly what the types declare at the package root", () => {
  assert.deepEqual(Object.keys(idem).sort(), declaredRoot());
  for (const name of ["Machine", "importXState", "newEventId", "version", "apply", "dispatch", "MemoryStore"]) {
    assert.ok(name in idem, name);
  }
  const cargo = read("Cargo.toml").match(/^version = "([^"]+)"/m)[1];
  assert.equal(version(), cargo);
});

test("every file named by pkg/package.json exports exists", () => {
  const pkg = JSON.parse(read("pkg/package.json"));
  const targets = [];
  for (const [sub, target] of Object.entries(pkg.exports)) {
    for (const file of typeof target === "string" ? [target] : Object.values(target)) targets.push([sub, file]);
  }
  assert.ok(targets.length >= 6);
  for (const [sub, file] of targets) {
    if (file.includes("*")) {
      const dir = new URL(`pkg/${file.slice(0, file.indexOf("*"))}`, root);
      assert.ok(existsSync(dir), `${sub}: ${file} matches nothing`);
    } else {
      assert.ok(existsSync(new URL(`pkg/${file}`, root)), `${sub}: pkg/${file} does not exist`);
    }
  }
  assert.ok(existsSync(new URL(`pkg/${pkg.types}`, root)));
});

test("tests/types/tsconfig.json resolves idem/* to the sources of the declarations pkg/package.json exports", () => {
  const pkg = JSON.parse(read("pkg/package.json"));
  // The tsconfig has comments; drop them before parsing.
  const tsconfig = JSON.parse(read("tests/types/tsconfig.json").replace(/^\s*\/\/.*$/gm, ""));
  const paths = tsconfig.compilerOptions.paths;
  const modules = Object.entries(pkg.exports).filter(([sub]) => sub !== "./package.json");
  for (const [sub, target] of modules) {
    const name = sub === "." ? "idem" : `idem/${sub.slice(2)}`;
    assert.match(target.types, /^\.\/dist\/js\/.+\.d\.ts$/, `${sub}: types`);
    assert.deepEqual(paths[name], [target.types.replace("./dist/js/", "../../pkg/src/")], `paths["${name}"]`);
  }
  assert.equal(pkg.types, pkg.exports["."].types);
  assert.equal(Object.keys(paths).length, modules.length, "paths that the package does not export");
});

/** The value names a declaration file exports (`export { a, b } from`, `export declare const|function|class X`). */
function declaredValues(rel) {
  const dts = read(`pkg/src/${rel}`);
  const names = [...dts.matchAll(/^export declare (?:function|class|const) ([A-Za-z0-9_]+)/gm)].map((m) => m[1]);
  for (const m of dts.matchAll(/^export \{([^}]*)\} from/gm)) names.push(...m[1].split(",").map((n) => n.trim()).filter(Boolean));
  return names.sort();
}

test("each subpath's declarations name exactly what its module exports", async () => {
  const pkg = JSON.parse(read("pkg/package.json"));
  for (const [sub, target] of Object.entries(pkg.exports)) {
    if (sub === "." || sub === "./package.json") continue;
    const rel = target.default.replace("./dist/js/", "");
    const module = await import(new URL(`pkg/src/${rel}`, root).href);
    assert.deepEqual(declaredValues(rel.replace(/\.js$/, ".d.ts")), Object.keys(module).sort(), `${sub}: ${rel.replace(/\.js$/, ".d.ts")}`);
  }
});

test("invalid definitions throw an Error with code and path", () => {
  const def = orderDefinition();
  def.states.pending.on.CANCEL = "canceled";
  throwsIdemError(() => new Machine(def), "unknown_target", "states.pending.on.CANCEL");
  throwsIdemError(() => new Machine(JSON.stringify(def)), "unknown_target", "states.pending.on.CANCEL");
  throwsIdemError(() => new Machine('{"id": "x", "initial":'), "invalid_json");
  throwsIdemError(() => new Machine({ id: 1n }), "invalid_json");
  throwsIdemError(() => new Machine({ ...orderDefinition(), initial: "nowhere" }), "invalid_initial", "initial");
});

test("a bad nowMs throws an Error with a code; a bad event or snapshot is a rejected outcome", () => {
  const m = new Machine(orderDefinition());
  const first = m.reduce(null, pay("e1", "p1", 40), 1000, "order-1");
  for (const [now, code] of [[-1, "invalid_now"], [NaN, "missing_now"], [Infinity, "invalid_now"], [2 ** 53, "invalid_now"], [undefined, "missing_now"]]) {
    throwsIdemError(() => m.reduce(first.snapshot, pay("e2", "p2", 10), now, "order-1"), code);
    throwsIdemError(() => m.due(first.snapshot, now), code);
  }
  throwsIdemError(() => m.reduce(first.snapshot, pay("e2", "p2", 10)), "missing_now");
  const rejected = [
    [first.snapshot, { type: "PAYMENT_PARTIAL" }, "missing_event_id"],
    [first.snapshot, { id: "e9", type: "NOPE" }, "unknown_event_type"],
    [first.snapshot, pay("idem:e9", "p9", 1), "reserved_event"],
    [first.snapshot, '{"id": "e9",', "invalid_event"],
    ["idem2 garbage", pay("e9", "p9", 1), "invalid_snapshot"],
    [first.snapshot.slice(0, -3), pay("e9", "p9", 1), "invalid_snapshot"],
  ];
  for (const [snapshot, event, code] of rejected) {
    const out = m.reduce(snapshot, event, 2000, "order-1");
    assert.equal(out.status, "rejected");
    assert.equal(out.error.code, code, out.error.message);
    assert.equal(out.changed, false);
    assert.equal(out.snapshot, snapshot, "a rejected event leaves the snapshot as it was");
  }
  throwsIdemError(() => m.inspect("idem2 garbage"), "invalid_snapshot");
});

test("a duplicate gets the identical first response and costs no write", () => {
  const m = new Machine(orderDefinition());
  const first = m.reduce(null, pay("e1", "p1", 40), 1000, "order-1");
  assert.equal(first.status, "applied");
  assert.equal(typeof first.snapshot, "string");
  assert.ok(first.snapshot.startsWith("idem3\n"));
  for (const retry of [pay("e1", "p1", 40), JSON.stringify(pay("e1", "p1", 40))]) {
    const again = m.reduce(first.snapshot, retry, 5000, "order-1");
    assert.equal(again.status, "duplicate");
    assert.equal(again.duplicate, true);
    assert.equal(again.changed, false);
    assert.deepEqual(again.response, first.response);
    assert.equal(again.response, "recorded p1");
    assert.equal(again.snapshot, first.snapshot, "the stored string, unchanged");
    assert.deepEqual(again.effects, []);
  }
  const clash = m.reduce(first.snapshot, pay("e1", "p1", 41), 6000, "order-1");
  assert.equal(clash.status, "conflict");
  assert.equal(clash.error.code, "id_conflict");
});

test("reduce requires a process id: effect keys of two processes reusing an event id never meet", () => {
  const m = new Machine(orderDefinition());
  for (const pid of [undefined, null, ""]) {
    throwsIdemError(() => m.reduce(null, pay("e1", "p1", 40), 1000, pid), "missing_process_id", "processId");
    throwsIdemError(() => m.reduceBytes(null, pay("e1", "p1", 40), 1000, pid), "missing_process_id", "processId");
  }
  const charge = { id: "e1", type: "CHECKOUT", payload: { amount: 50 } };
  const keys = ["pay-1", "pay-2"].map((pid) => new Machine(JSON.parse(read("tests/machines/payment.json"))).reduce(null, charge, 1000, pid).effects.map((e) => e.key));
  assert.equal(keys[0].length, 1, JSON.stringify(keys));
  assert.equal(keys[1].length, 1, JSON.stringify(keys));
  assert.notEqual(keys[0][0], keys[1][0]);
  assert.ok(keys[0][0].startsWith("pay-1/"), keys[0][0]);
});

test("outcomes, due work and inspections are plain objects", () => {
  const m = new Machine(JSON.parse(read("tests/machines/payment.json")));
  const out = m.reduce(null, { id: "c1", type: "CHECKOUT", payload: { amount: 50 } }, 1000, "pay-1");
  assert.deepEqual(Object.keys(out).sort(), ["changed", "duplicate", "effects", "nextDueAt", "response", "revision", "snapshot", "state", "status"]);
  assert.deepEqual(out.effects, [{ key: "pay-1/c1:0", type: "charge", payload: { amount: 50 }, idempotent: true }]);
  assert.equal(out.nextDueAt, 1000);
  const [item] = m.due(out.snapshot, 1000);
  assert.equal(item.kind, "attempt");
  assert.deepEqual(item.started.payload, { key: "pay-1/c1:0", attempt: 1 });
  const seen = m.inspect(out.snapshot);
  assert.equal(seen.format, 3);
  assert.equal(seen.value, "charging");
  assert.deepEqual(seen.machine, { id: m.id, version: m.version, hash: m.hash });
  assert.ok(Array.isArray(m.eventTypes()) && m.eventTypes().includes("CHECKOUT"));
  assert.equal(m.definition().id, "payment");
  assert.equal(typeof m.retention().defaultMs, "number");
});

test("a definition keeps the order it was written in: states, regions, transitions, and the state value", () => {
  const definition = {
    id: "order",
    initial: "work",
    states: {
      work: {
        type: "parallel",
        states: {
          zeta: { initial: "idle", states: { idle: { on: { GO: "busy" } }, busy: {} } },
          alpha: { initial: "idle", states: { idle: { on: { GO: "busy" } }, busy: {} } },
        },
        on: { STOP: "stopped", GO: {} },
      },
      stopped: { type: "final" },
    },
  };
  const m = new Machine(definition);
  const back = m.definition();
  assert.deepEqual(Object.keys(back.states), ["work", "stopped"]);
  assert.deepEqual(Object.keys(back.states.work.states), ["zeta", "alpha"]);
  assert.deepEqual(Object.keys(back.states.work.on), ["STOP", "GO"]);
  const first = m.reduce(null, { id: "e1", type: "GO" }, 1000, "p-1");
  assert.equal(JSON.stringify(first.state), '{"work":{"zeta":"busy","alpha":"busy"}}');
  // A duplicate answers from the stored snapshot (its members sorted): the same order.
  const again = m.reduce(first.snapshot, { id: "e1", type: "GO" }, 1001, "p-1");
  assert.equal(again.status, "duplicate");
  assert.equal(JSON.stringify(again.state), '{"work":{"zeta":"busy","alpha":"busy"}}');
});

test("newEventId: 26 Crockford characters, distinct, time-ordered", () => {
  const before = Date.now();
  const ids = Array.from({ length: 200 }, () => newEventId());
  const after = Date.now();
  const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  const time = (id) => [...id.slice(0, 10)].reduce((t, c) => t * 32 + alphabet.indexOf(c), 0);
  for (const id of ids) {
    assert.match(id, /^[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.ok(time(id) >= before && time(id) <= after, `${id}: ${time(id)} not in [${before}, ${after}]`);
  }
  assert.equal(new Set(ids).size, ids.length);
  assert.deepEqual(ids.map(time), ids.map(time).sort((a, b) => a - b));
});

test("every error idem throws is an IdemError: from the lean module, the full one, the host and the stores", () => {
  const order = new Machine(orderDefinition());
  const errors = [
    throwsIdemError(() => new Machine({ id: "m", initial: "a", states: { a: { on: { GO: "nowhere" } } } }), "unknown_target", "states.a.on.GO"),
    throwsIdemError(() => order.reduce(null, pay("e1", "p1", 1), 1000), "missing_process_id"),
    throwsIdemError(() => order.inspect("idem3 not a snapshot"), "invalid_snapshot"),
    throwsIdemError(() => importXState("{not json"), "invalid_json"), // the full module
    throwsIdemError(() => order.analyze.call(new Machine('{"id":')), "invalid_json"),
  ];
  for (const err of errors) {
    // The brand is not data: it is in no key list and no JSON.
    assert.deepEqual(Object.keys(JSON.parse(JSON.stringify(err))).sort(), err.path === undefined ? ["code", "name"] : ["code", "name", "path"]);
    assert.deepEqual(Object.getOwnPropertySymbols(err).filter((k) => Object.getOwnPropertyDescriptor(err, k).enumerable), []);
  }
  const js = [new ContentionError("o1", 17), new StoreLimitError("too big"), new StoreCorruptError("cut short"), new IdemError("usage", "made here", { path: "a.b" })];
  assert.deepEqual(js.map((e) => [e instanceof Error, e instanceof IdemError, e.name, e.code, e.path]), [
    [true, true, "IdemError", "contention", undefined],
    [true, true, "IdemError", "snapshot_too_large", undefined],
    [true, true, "IdemError", "snapshot_corrupt", undefined],
    [true, true, "IdemError", "usage", "a.b"],
  ]);
  // A subclass is checked by its prototype: the engine's errors are IdemErrors, not ContentionErrors.
  assert.equal(errors[0] instanceof ContentionError, false);
  assert.equal(js[1] instanceof ContentionError, false);
  // Looking like one is not being one.
  const lookalike = Object.assign(new Error("no"), { name: "IdemError", code: "contention" });
  assert.equal(lookalike instanceof IdemError, false);
  assert.equal({ name: "IdemError", code: "usage" } instanceof IdemError, false);
  assert.equal(null instanceof IdemError, false);
});

test("importXState takes a real XState v5 machine's config; analyze() finds its hazard", () => {
  const xstate = createMachine({
    id: "tab",
    initial: "open",
    context: { total: 0 },
    states: {
      open: { on: { ADD: { actions: "addToTotal" }, CLOSE: "closed" } },
      closed: { type: "final" },
    },
  });
  for (const config of [JSON.stringify(xstate.config), JSON.parse(JSON.stringify(xstate.config))]) {
    const { definition, diagnostics } = importXState(config);
    assert.equal(definition.id, "tab");
    assert.ok(Array.isArray(diagnostics));
    // The named action is code: it cannot be imported as data, and says so.
    assert.ok(diagnostics.some((d) => d.code === "unrepresentable" && JSON.stringify(d).includes("addToTotal")), JSON.stringify(diagnostics));
    const m = new Machine(definition);
    assert.equal(m.reduce(null, { id: "e1", type: "CLOSE" }, 1, "door-1").state, "closed");
  }
  throwsIdemError(() => importXState("{not json"), "invalid_json");

  const fragile = new Machine(JSON.parse(read("tests/machines/fragile-counter.json")));
  const finding = fragile.analyze().find((f) => f.code === "accumulating_assign");
  assert.equal(finding?.severity, "error");
  // Replaying the witness applies the repeat a second time: that is what it proves.
  let snapshot = null;
  const statuses = finding.witness.steps.map((step) => {
    const out = fragile.reduce(snapshot, step.event, step.now, "witness");
    snapshot = out.snapshot;
    return out.status;
  });
  assert.deepEqual(statuses, ["applied", "applied"]);
  assert.equal(fragile.inspect(snapshot).context.paid, 80);
  assert.deepEqual(new Machine(orderDefinition()).analyze().filter((f) => f.severity === "error"), []);
});

test("the node entry reduces with the lean module and answers byte for byte as the full module does", async () => {
  const lean = await import("../../pkg/dist/lean/idem.js");
  const full = await import("../../pkg/dist/idem.js");
  const a = new Machine(orderDefinition());
  assert.ok(a instanceof lean.Machine, "the node entry's Machine is the lean module's");
  assert.ok(!(a instanceof full.Machine));
  importXState("{}"); // loads the full module, as analyze() does
  const b = new full.Machine(orderDefinition());
  let sa = null;
  let sb = null;
  const events = [pay("e1", "p1", 30), pay("e1", "p1", 30), pay("e2", "p2", 70), { id: "s1", type: "SHIP" }, pay("e1", "p1", 31)];
  for (const [i, e] of events.entries()) {
    const oa = a.reduce(sa, e, 1_700_000_000_000 + i, "o1");
    const ob = b.reduce(sb, e, 1_700_000_000_000 + i, "o1");
    assert.deepEqual(oa, ob);
    if (oa.snapshot !== null) [sa, sb] = [oa.snapshot, ob.snapshot];
  }
  assert.equal(sa, sb);
  assert.deepEqual(a.analyze(), b.analyze());
  // Portable code awaits loadAnalysis() as the web entry needs; in Node it resolves at once.
  assert.equal(await loadAnalysis(), undefined);
  assert.deepEqual(a.analyze(), b.analyze());
});

test("reduceBytes: the same snapshot text as bytes, and a duplicate hands back the caller's own array", () => {
  const m = new Machine(read("tests/machines/order.json"));
  const pay = (id, p, amount) => ({ id, type: "PAYMENT_PARTIAL", payload: { paymentId: p, amount } });
  const viaText = m.reduce(null, pay("e1", "p1", 40), 1000, "o1");
  const viaBytes = m.reduceBytes(null, pay("e1", "p1", 40), 1000, "o1");
  assert.ok(viaBytes.snapshot instanceof Uint8Array);
  assert.equal(new TextDecoder().decode(viaBytes.snapshot), viaText.snapshot);
  const again = m.reduceBytes(viaBytes.snapshot, pay("e1", "p1", 40), 2000, "o1");
  assert.equal(again.status, "duplicate");
  assert.equal(again.snapshot, viaBytes.snapshot, "unchanged: the same Uint8Array, no copy");
  assert.deepEqual(again.response, viaText.response);
  const next = m.reduceBytes(viaBytes.snapshot, pay("e2", "p2", 60), 3000, "o1");
  assert.equal(next.state, "paid");
  assert.equal(m.inspect(next.snapshot).revision, 2);
  assert.equal(m.due(next.snapshot, 3000)[0].kind, "attempt");
  // The text and byte forms are interchangeable.
  assert.equal(m.reduce(new TextDecoder().decode(next.snapshot), pay("e2", "p2", 60), 4000, "o1").status, "duplicate");
  const bad = m.reduceBytes(new Uint8Array([0xff, 0xfe, 0x00]), pay("e3", "p3", 1), 5000, "o1");
  assert.equal(bad.status, "rejected");
  assert.equal(bad.error.code, "invalid_snapshot");
});

test("a Machine reused across events (decoded snapshots kept in memory) answers byte for byte as fresh ones do", () => {
  const def = read("tests/machines/order.json");
  const warm = new Machine(def);
  const pay = (id, p, amount) => ({ id, type: "PAYMENT_PARTIAL", payload: { paymentId: p, amount } });
  const events = [pay("e1", "p1", 10), pay("e1", "p1", 10), pay("e2", "p2", 20), pay("e1", "p1", 11), pay("e3", "p2", 20), pay("e4", "p4", 70), { id: "s1", type: "SHIP" }];
  let a = null;
  let b = null;
  const history = [];
  for (const [i, e] of events.entries()) {
    const x = warm.reduce(a, e, 1000 + i, "o1");
    const y = new Machine(def).reduce(b, e, 1000 + i, "o1");
    assert.deepEqual(x, y, `event ${i}`);
    a = x.snapshot;
    b = y.snapshot;
    history.push(a);
  }
  // A tampered copy of the kept snapshot (same checksum digits at its end) is refused, not replaced by it.
  const tamper = (t) => t.slice(0, 40) + (t[40] === "x" ? "y" : "x") + t.slice(41);
  assert.equal(warm.reduce(tamper(a), pay("e7", "p7", 1), 4000, "o1").error?.code, "invalid_snapshot");
  assert.equal(warm.reduce(a, pay("e7", "p7", 1), 4000, "o1").status, "ignored", "the kept one still answers");
  // An older snapshot (a host that lost a race and reloaded) is decoded, not confused with the kept one.
  const stale = warm.reduce(history[2], pay("e9", "p9", 1), 5000, "o1");
  const fresh = new Machine(def).reduce(history[2], pay("e9", "p9", 1), 5000, "o1");
  assert.deepEqual(stale, fresh);
  // Another process with the same snapshot text is kept apart.
  assert.deepEqual(warm.reduce(a, { id: "s1", type: "SHIP" }, 6000, "o2"), new Machine(def).reduce(a, { id: "s1", type: "SHIP" }, 6000, "o2"));
});

test("a new snapshot string that keeps the old one's records is the same text as one written whole", () => {
  const def = {
    id: "log",
    initial: "on",
    context: { n: 0 },
    states: { on: { on: { NOTE: { actions: [{ assign: { n: { var: "event.payload.n" } } }] } } } },
  };
  const warm = new Machine(def);
  const note = (i) => ({ id: `note-${i}`, type: "NOTE", payload: { n: i } });
  let text = null; // warm machine, string snapshots (kept in memory, prefix reused)
  let cold = null; // a new machine each time: decoded from the string, prefix reused
  let bytes = null; // bytes: always written whole
  // 1,100 events: past the 1,024 appends after which the kept records string is
  // rebuilt, and past the 1,000 ids the ledger keeps (the oldest are then forgotten
  // and leave the text in batches of 125, when it is written whole); past 64 ids
  // the warm machine finds ids through the ledger's index, the cold one scans.
  for (let i = 0; i < 1100; i++) {
    const a = warm.reduce(text, note(i), 1000 + i, "log-1");
    const b = new Machine(def).reduce(cold, note(i), 1000 + i, "log-1");
    const c = warm.reduceBytes(bytes, note(i), 1000 + i, "log-2");
    assert.equal(a.status, "applied");
    assert.equal(a.snapshot, b.snapshot, `event ${i}`);
    assert.equal(a.snapshot, new TextDecoder().decode(c.snapshot), `event ${i}`);
    // A record was appended after the previous records: they are still the old text's.
    if (text && i < 1000) assert.ok(a.snapshot.startsWith(text.slice(0, text.indexOf("\n#"))));
    [text, cold, bytes] = [a.snapshot, b.snapshot, c.snapshot];
  }
  assert.ok(text.length > 8000, `${text.length} bytes: long enough to be spliced`);
  assert.equal(warm.inspect(text).ledger.length, 1000);
  assert.equal(warm.reduce(text, note(1099), 5000, "log-1").status, "duplicate");
  assert.equal(new Machine(def).reduce(text, note(1050), 5000, "log-1").status, "duplicate");
  // The oldest ids are forgotten, warm or cold: a copy of one is applied again.
  const forgotten = warm.reduce(text, note(50), 5000, "log-1");
  assert.equal(forgotten.status, "applied");
  assert.deepEqual(forgotten, new Machine(def).reduce(text, note(50), 5000, "log-1"));
  // A copy of the kept string with one character changed (same length) is decoded, and refused.
  const i = text.indexOf("note-1050");
  const tampered = text.slice(0, i) + "nota" + text.slice(i + 4);
  assert.equal(tampered.length, text.length);
  assert.equal(warm.reduce(tampered, note(2000), 6000, "log-1").error?.code, "invalid_snapshot");
  // Bytes changed in place after the engine handed them out are not the kept snapshot either.
  const held = warm.reduceBytes(bytes, note(2001), 6000, "log-2").snapshot;
  held[held.length - 1] = held[held.length - 1] === 48 ? 49 : 48;
  assert.equal(warm.reduceBytes(held, note(2002), 6001, "log-2").error?.code, "invalid_snapshot");
});

test("the published package (pkg/dist/js, what pkg/package.json exports) is what pkg/src makes, with one copy of the host code", async () => {
  // Up to date: scripts/bundle-js.mjs --check rebuilds it apart and compares.
  execFileSync(process.execPath, ["scripts/bundle-js.mjs", "--check"], { cwd: root, encoding: "utf8" });
  const pkg = JSON.parse(read("pkg/package.json"));
  /** The file Node loads for `idem` or `idem/<sub>`, by the package's "node" (or default) condition. */
  const resolve = (sub) => {
    const url = (file) => new URL(`pkg/${file.replace(/^\.\//, "")}`, root);
    for (const [key, target] of Object.entries(pkg.exports)) {
      const file = target.node ?? target.default;
      const star = key.indexOf("*");
      if (star < 0 && key === sub) return url(file);
      if (star >= 0 && sub.startsWith(key.slice(0, star))) return url(file.replace("*", sub.slice(star)));
    }
    throw new Error(`idem/${sub.slice(2)} is not exported`);
  };
  const published = await import(resolve("."));
  assert.deepEqual(Object.keys(published).sort(), Object.keys(idem).sort(), "the same root API as pkg/src/node.js");
  const host = await import(resolve("./host"));
  const d1 = await import(resolve("./stores/d1"));
  const denokv = await import(resolve("./stores/denokv"));
  const gateway = await import(resolve("./testing/fake-gateway"));
  // One copy: the root's and the subpaths' classes and functions are the same objects.
  assert.equal(host.apply, published.apply);
  assert.equal(host.ContentionError, published.ContentionError);
  assert.equal(d1.D1Store, published.D1Store);
  assert.equal(denokv.StoreCorruptError, d1.StoreCorruptError);
  assert.equal(gateway.FakeGateway, published.FakeGateway);
  assert.notEqual(host.apply, (await import("../../pkg/src/host.js")).apply, "the published files do not load pkg/src");
  // Every subpath module exports what its source does; the internal modules are no subpath.
  for (const rel of ["host", "dispatch", "http", "stores/memory", "stores/d1", "stores/kv", "stores/durable", "stores/denokv", "stores/indexeddb", "testing/fake-gateway"]) {
    const source = await import(`../../pkg/src/${rel}.js`);
    assert.deepEqual(Object.keys(await import(resolve(`./${rel}`))).sort(), Object.keys(source).sort(), rel);
  }
  for (const rel of ["stores/limit", "stores/kept", "hosting", "analysis"]) {
    assert.throws(() => resolve(`./${rel}`), /is not exported/, rel);
    assert.ok(!existsSync(new URL(`pkg/dist/js/${rel}.js`, root)), `pkg/dist/js/${rel}.js`);
  }
  // And the published entry reduces (the lean module, as pkg/src/node.js).
  const m = new published.Machine(orderDefinition());
  const out = await published.apply(new published.MemoryStore(), m, "o1", pay("e1", "p1", 30));
  assert.equal(out.status, "applied");
});

test("pkg/package.json: what a published package says of itself", () => {
  const pkg = JSON.parse(read("pkg/package.json"));
  assert.ok(pkg.repository?.url, "repository");
  assert.match(pkg.engines?.node ?? "", /^>=\d+/, "engines.node");
  assert.equal(pkg.license, "MIT OR Apache-2.0");
  for (const f of ["README.md", "LICENSE-MIT", "LICENSE-APACHE"]) assert.ok(pkg.files.includes(f) && existsSync(new URL(`pkg/${f}`, root)), f);
  // Only the runtime entries do something on import (they instantiate the wasm module): a
  // bundler may drop any other module whose exports a program does not use.
  assert.deepEqual(pkg.sideEffects, ["node.js", "web.js", "deno.js", "workerd.js"].map((f) => `./dist/js/${f}`));
  assert.deepEqual(new Set(Object.values(pkg.exports["."]).filter((f) => f.endsWith(".js"))), new Set(pkg.sideEffects));
  assert.match(pkg.scripts.prepack, /bundle-js\.mjs --prepack/);
});

test("the published entries bundle without a warning (as wrangler's esbuild bundles a Worker)", async () => {
  const { build } = await import("esbuild");
  for (const [entry, conditions] of [["workerd.js", ["workerd"]], ["web.js", ["browser"]], ["deno.js", ["deno"]]]) {
    const result = await build({
      entryPoints: [fileURLToPath(new URL(`pkg/dist/js/${entry}`, root))],
      bundle: true,
      write: false,
      format: "esm",
      platform: "neutral",
      target: "es2022",
      conditions,
      external: ["*.wasm"],
      logLevel: "silent",
    });
    assert.deepEqual(result.warnings.map((w) => w.text), [], entry);
  }
});
