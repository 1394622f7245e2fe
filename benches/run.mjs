#!/usr/bin/env node
// idem benchmarks: one command, one table, peers and idem side by side from the same run.
//
//   node benches/run.mjs                 build (wasm + native bench), measure, print the table
//   node benches/run.mjs --smoke         every measurement once, checking that XState, the
//                                        hand-written reducer, idem wasm and idem native agree
//                                        on state, context, revision, responses (no timing), and
//                                        that XState and idem agree event by event on section
//                                        2c's flat and two-region machines (benches/parallel.mjs)
//   options: --no-wasm-build             use pkg/dist as it is (scripts/build-wasm.sh already ran)
//            --sizes 0,100,1000          ledger sizes (default 0,100,1000,10000,100000)
//            --budget-ms 400             time spent per measurement (at least 5 samples)
//            --cold-runs 15              fresh processes per cold-start measurement
//            --json FILE                 also write every figure as JSON
//            --no-hosts                  skip section 4 (the hosts end to end: workerd with D1 and a
//                                        Durable Object, Deno KV; benches/hosts.mjs, ~30 s); --smoke
//                                        never runs it
//            --memory-runs 3             fresh processes per contender and size in section 5 (the
//                                        memory a round trip needs; benches/memory.mjs)
//            --dist DIR                  time the modules another build left in DIR (DIR/lean and
//                                        DIR, as scripts/build-wasm.sh writes pkg/dist) with this
//                                        harness, its peers and snapshots: an engine before a
//                                        change against the one after it, each in its own run
//                                        (implies --no-wasm-build; section 2c is left out when
//                                        that engine refuses the parallel machine)
//
// The peers live in benches/peers.mjs, native idem in benches/idem.rs (a `cargo bench`
// target run here as a plain binary). Results and how to read them: benches/RESULTS.md.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { crossing } from "./crossing.mjs";
import { canon, fmtBytes, fmtNs, fmtOps, measureGroup, median, ratio, table } from "./measure.mjs";
import { duplicatesWriteNothing, hostsSection, measureHosts } from "./hosts.mjs";
import { bundle, coldChild, coldCode, coldSummary, xstateBundle } from "./cold.mjs";
import { measureMemory, memorySection } from "./memory.mjs";
import { buildNativeBench, inputFiles } from "./native.mjs";
import * as peers from "./peers.mjs";
import * as par from "./parallel.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const LOAD_START = os.loadavg()[0];
const { values: opt } = parseArgs({
  options: {
    smoke: { type: "boolean", default: false },
    "no-wasm-build": { type: "boolean", default: false },
    sizes: { type: "string", default: "0,100,1000,10000,100000" },
    "budget-ms": { type: "string", default: "400" },
    "cold-runs": { type: "string", default: "15" },
    json: { type: "string" },
    "no-hosts": { type: "boolean", default: false },
    "memory-runs": { type: "string", default: "3" },
    dist: { type: "string" },
  },
});
const SIZES = opt.sizes.split(",").map((s) => Number(s.replaceAll("_", "")));
const BUDGET = Number(opt["budget-ms"]);
const COLD_RUNS = opt.smoke ? 1 : Number(opt["cold-runs"]);
const log = (msg) => process.stderr.write(`bench: ${msg}\n`);
const tmp = mkdtempSync(path.join(os.tmpdir(), "idem-bench-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

// ---- build --------------------------------------------------------------------------
function run(cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, encoding: "utf8", maxBuffer: 1 << 26 });
  if (r.status !== 0) {
    process.stderr.write(r.stderr ?? "");
    throw new Error(`${cmd} ${args.join(" ")} exited with ${r.status}`);
  }
  return r.stdout;
}

const DIST = opt.dist ? path.resolve(opt.dist) : path.join(ROOT, "pkg/dist");
if (!opt["no-wasm-build"] && !opt.dist) {
  log("building wasm (SIZE_BUDGET=warn scripts/build-wasm.sh)");
  run("scripts/build-wasm.sh", [], { SIZE_BUDGET: "warn" });
}
log("building the native bench (cargo bench --bench idem --no-run)");
// target/bench, panic=unwind: see benches/native.mjs.
const nativeExe = buildNativeBench(ROOT);

// ---- native run (also writes the machine and idem's snapshots to tmp) ----------------
log(opt.smoke ? "native smoke" : "measuring native idem");
const native = JSON.parse(
  run(nativeExe, [opt.smoke ? "--smoke" : "--json", "--emit", tmp, "--sizes", SIZES.join(","), "--budget-ms", String(BUDGET)]),
);

// The wasm modules scripts/build-wasm.sh makes: the lean engine edge hosts load
// (pkg/dist/lean) and the full one with analysis (pkg/dist, what pkg/src/node.js
// loads). Throughput is measured on the lean one when it exists: the serverless
// round trip happens on edge hosts. Both are sized and cold-started.
const MODULES = [
  { key: "lean", label: "idem lean (edge hosts)", dir: path.join(DIST, "lean") },
  { key: "full", label: "idem full (+ analysis)", dir: DIST },
].filter((mod) => {
  try {
    return statSync(path.join(mod.dir, "idem_bg.wasm")).isFile();
  } catch {
    return false;
  }
});
if (MODULES.length === 0) throw new Error(`no wasm module in ${DIST}: run scripts/build-wasm.sh`);
const IDEM = MODULES[0];
const idemGlue = await import(pathToFileURL(path.join(IDEM.dir, "idem.js")).href);
idemGlue.initSync({ module: readFileSync(path.join(IDEM.dir, "idem_bg.wasm")) });
const { Machine, version: idemVersion } = idemGlue;
const defText = readFileSync(path.join(tmp, "machine.json"), "utf8");
const m = new Machine(defText);
if (m.hash !== native.machineHash) throw new Error(`wasm and native machines differ: ${m.hash} vs ${native.machineHash}`);
// Each ledger size's stored snapshots (idem's, as JSON, XState's, the JS reducer's),
// made when first needed and dropped once measured, so that the large ones do not
// sit in the heap (and slow the garbage collector) while the small ones are timed.
const cache = new Map();
function data(n) {
  if (!cache.has(n)) {
    const file = inputFiles(tmp, n).idem;
    if (!existsSync(file)) throw new Error(`no snapshot for ledger size ${n} (is it in --sizes?)`);
    const idem = readFileSync(file, "utf8");
    const events = peers.noteEvents(n);
    const d = {
      idem,
      // The same snapshot as JSON text (its readable form, as wire format 1 stored it):
      // the JSON floor is what parsing and writing this on every event costs.
      json: JSON.stringify(m.inspect(idem)),
      xs: peers.xstateStored(events),
      js: peers.jsStored(events),
    };
    // The peers' stored texts beside idem's, for section 5's fresh processes.
    const f = inputFiles(tmp, n);
    writeFileSync(f.xstate, d.xs);
    writeFileSync(f.js, d.js);
    cache.set(n, d);
  }
  return cache.get(n);
}
const release = (n) => {
  if (n > 100) cache.delete(n);
};

const NOW = peers.NOW;
const payment = (i) => ({ id: `p${i}`, type: "PAYMENT_PARTIAL", payload: { paymentId: "q-1", amount: 1 } });
const idemPure = (i) => m.reduce(data(0).idem, payment(i), NOW, "bench");

// ---- 2b. a full ledger ----------------------------------------------------------------
// The bench machine remembers up to 1,000,000 ids, so its ledgers never reach the
// cap. A machine with the default cap (`retention.maxEntries` 1,000) reaches it
// after 1,000 events, and from then on each event forgets the oldest id: the
// same 1,000 NOTE events reduced under both caps, then fresh events timed on each
// (stored string decoded, and a warm host's chain as in section 2).
function fullLedger() {
  const def = JSON.parse(defText);
  const machines = {};
  for (const [k, cap] of [["below", 1_000_000], ["full", 1_000]]) {
    def.retention = { ...def.retention, maxEntries: cap };
    const mc = new Machine(JSON.stringify(def));
    let s = null;
    for (let i = 0; i < 1_000; i++) s = mc.reduce(s, peers.noteEvent(i), NOW, "full").snapshot;
    let [hot, k2, cold] = [s, 0, 0];
    machines[k] = {
      stored: s,
      wasm: () => mc.reduce(s, peers.noteEvent(10_000 + (cold % 1_000)), NOW, `cold-${cold++ % 16}`),
      resident: () => {
        if (k2 === 50) [hot, k2] = [s, 0];
        const out = mc.reduce(hot, peers.noteEvent(20_000 + k2++), NOW, "hot");
        hot = out.snapshot;
        return out;
      },
    };
  }
  const check = machines.full.wasm();
  if (check.status !== "applied") throw new Error(`full ledger: ${check.status}`);
  const t = measureGroup({
    below: machines.below.wasm,
    full: machines.full.wasm,
    belowResident: machines.below.resident,
    fullResident: machines.full.resident,
  }, { budgetMs: BUDGET, maxSamples: 2000 });
  return { ...t, bytes: { below: machines.below.stored.length, full: machines.full.stored.length } };
}

// ---- 2c. a parallel machine ----------------------------------------------------------
// The order flat and as two regions (benches/parallel.mjs), idem and XState, the four
// events of the script each from the stored text before it. idem's process ids rotate
// over more than the Machine keeps resident and never hand an id the snapshot it was
// last given, so every reduce decodes the stored text (section 2's "idem wasm").
function parallelMachines() {
  const run = {};
  let k = 0;
  for (const kind of ["flat", "parallel"]) {
    const mc = new Machine(JSON.stringify(par.definitions[kind]));
    const xm = par.xstateMachines[kind];
    const stored = par.storedBefore(mc, xm, NOW, "parallel");
    run[kind] = {
      machine: mc,
      stored,
      idem: () => {
        let out;
        for (let i = 0; i < par.script.length; i++) out = mc.reduce(stored.idem[i], par.script[i], NOW, `parallel-${k++ % 16}`);
        return out;
      },
      xstate: () => {
        let out;
        for (let i = 0; i < par.script.length; i++) out = par.xstateRoundTrip(xm, stored.xs[i], par.script[i]);
        return out;
      },
    };
  }
  return run;
}

function measureParallel(o) {
  const run = parallelMachines();
  const t = measureGroup({
    flatXstate: run.flat.xstate,
    flatIdem: run.flat.idem,
    parallelXstate: run.parallel.xstate,
    parallelIdem: run.parallel.idem,
  }, o);
  // per event: one call is the script's four events
  const per = (s) => ({ ...s, medianNs: s.medianNs / par.script.length, p95Ns: s.p95Ns / par.script.length });
  return {
    events: par.script.length,
    flat: { xstate: per(t.flatXstate), wasm: per(t.flatIdem) },
    parallel: { xstate: per(t.parallelXstate), wasm: per(t.parallelIdem) },
  };
}

// ---- 3. sizes and cold start ---------------------------------------------------------
async function sizesAndColdStart() {
  const gz = (b) => gzipSync(b, { level: 9 }).length;
  const xsBundle = await xstateBundle(ROOT);
  const xsFile = path.join(tmp, "xstate.min.mjs");
  writeFileSync(xsFile, xsBundle);
  const sizes = { xstateMin: xsBundle.length, xstateGzip: gz(xsBundle) };
  for (const mod of MODULES) {
    const wasm = readFileSync(path.join(mod.dir, "idem_bg.wasm"));
    const glue = await bundle({ file: path.join(mod.dir, "idem.js") }, "node", ROOT);
    sizes[mod.key] = { wasmRaw: wasm.length, wasmGzip: gz(wasm), glueMin: glue.length, glueGzip: gz(glue) };
  }

  const code = coldCode({ defText, xstateFile: xsFile });
  const runs = { xstate: [], node: [], esm: [] };
  for (const mod of MODULES) runs[mod.key] = [];
  for (let i = 0; i < COLD_RUNS; i++) {
    for (const mod of MODULES) runs[mod.key].push(coldChild(code.idem(path.join(mod.dir, "idem.js"), path.join(mod.dir, "idem_bg.wasm"))));
    runs.xstate.push(coldChild(code.xstate));
    runs.node.push(coldChild("process.stdout.write('{}')"));
    runs.esm.push(coldChild(code.esm));
  }
  const cold = { xstate: coldSummary(runs.xstate), esm: coldSummary(runs.esm), nodeWallMs: median(runs.node.map((r) => r.wall)) };
  for (const mod of MODULES) cold[mod.key] = coldSummary(runs[mod.key]);
  return { sizes, cold };
}

// ---- smoke -------------------------------------------------------------------------
let checks = 0;
function same(what, a, b) {
  checks++;
  if (canon(a) !== canon(b)) throw new Error(`smoke: ${what} differ:\n  ${canon(a)}\n  ${canon(b)}`);
}

async function smoke() {
  const nativeBySize = Object.fromEntries(native.sizes.map((s) => [s.ledger, s]));
  for (const n of SIZES) {
    const d = data(n);
    const fresh = peers.freshEvent();
    const o = m.reduce(d.idem, fresh, NOW, "bench");
    same(`idem wasm status at ${n}`, o.status, "applied");
    const idem = peers.idemView(m, o.snapshot);
    const nat = nativeBySize[n];
    same(`idem wasm vs native at ${n}`, { state: idem.state, context: idem.context, revision: idem.revision },
      { state: nat.state, context: nat.context, revision: nat.revision });
    same(`idem ledger size at ${n}`, idem.ledger, n + 1);
    const xs = peers.xstateRoundTrip(d.xs, fresh);
    const js = peers.jsRoundTrip(d.js, fresh);
    same(`XState vs idem at ${n}`, peers.xstateView(xs.snapshot), idem);
    same(`JS reducer vs idem at ${n}`, peers.jsView(js.snapshot), idem);
    same(`responses at ${n}`, [xs.response, js.response], [o.response, o.response]);
    if (n === 0) {
      // The crossing alone answers what idem answered, with a new text of the stored one's size.
      const c = crossing({ state: o.state, response: o.response })(d.idem, fresh, "cold-0");
      same("crossing alone at 0", { state: c.state, response: c.response, status: c.status, length: c.snapshot.length },
        { state: o.state, response: o.response, status: o.status, length: d.idem.length });
    }
    if (n > 0) {
      const k = peers.dupIndex(n);
      const dup = peers.noteEvent(k);
      const outs = [m.reduce(d.idem, dup, NOW, "bench"), peers.xstateRoundTrip(d.xs, dup), peers.jsRoundTrip(d.js, dup)];
      const stored = [d.idem, d.xs, d.js];
      outs.forEach((d, i) => {
        same(`duplicate ${i} at ${n}`, [d.status, d.changed], ["duplicate", false]);
        same(`duplicate ${i} writes nothing at ${n}`, d.snapshot === stored[i], true);
        same(`duplicate ${i} response at ${n}`, d.response, { state: "pending", revision: k + 1 });
      });
    }
    const floor = JSON.stringify(JSON.parse(d.json));
    same(`json floor at ${n}`, floor.length, d.json.length);
    same(`json form ledger at ${n}`, JSON.parse(d.json).ledger.length, n);
    release(n);
  }

  // Pure transitions, once each.
  const [xsNext, xsOut] = peers.xstatePure(peers.xstateInitial(), new Map(), 0, payment(0));
  const [jsNext, jsOut] = peers.jsPure(peers.jsInitial(), new Map(), 0, payment(0));
  const idemOut = idemPure(0);
  same("pure statuses", [xsOut.status, jsOut.status], [idemOut.status, idemOut.status]);
  same("pure contexts", [xsNext.context, jsNext.context], [peers.idemView(m, idemOut.snapshot).context, peers.idemView(m, idemOut.snapshot).context]);

  // A whole order, step by step: statuses, responses, effects and final state agree.
  const pay = (id, pid, amount) => ({ id, type: "PAYMENT_PARTIAL", payload: { paymentId: pid, amount } });
  const script = [
    pay("e1", "p1", 40),
    pay("e2", "p2", 30),
    pay("e2", "p2", 30), // the same event again: duplicate
    pay("e3", "p2", 30), // a new id for a payment already recorded: the set ignores it
    { id: "e4", type: "NOTE", payload: { n: 7 } },
    pay("e5", "p3", 30), // total reached: `always` to paid, ship
    { id: "e6", type: "SHIP", payload: {} },
    { id: "e6", type: "SHIP", payload: {} },
  ];
  let snap = { idem: null, xs: peers.xstateStored([]), js: peers.jsStored([]) };
  for (const ev of script) {
    const a = m.reduce(snap.idem, ev, NOW, "order-1");
    const b = peers.xstateRoundTrip(snap.xs, ev);
    const c = peers.jsRoundTrip(snap.js, ev);
    const eff = (o) => (o.effects ?? []).map((e) => ({ type: e.type, payload: e.payload }));
    same(`scenario ${ev.id} ${ev.type}`, [b.status, b.response, eff(b)], [a.status, a.response, eff(a)]);
    same(`scenario ${ev.id} ${ev.type} (JS)`, [c.status, c.response, eff(c)], [a.status, a.response, eff(a)]);
    snap = { idem: a.snapshot, xs: b.snapshot, js: c.snapshot };
  }
  const final = peers.idemView(m, snap.idem);
  same("scenario final state", final.state, "shipped");
  same("scenario final (XState)", peers.xstateView(snap.xs), final);
  same("scenario final (JS)", peers.jsView(snap.js), final);

  // Section 2c's machines, flat and two regions: idem and XState agree event by event on
  // status, response, effects, state value, context and revision, through the timed script
  // and, on the two regions, SHIP before the payment region is paid (the in_state guard
  // says no), a duplicate and an event after the order is complete.
  const run = parallelMachines();
  const early = { id: "e-early-ship", type: "SHIP", payload: {} };
  const stories = {
    flat: [par.opening, ...par.script, par.script[3], { id: "e-after", type: "PACKED", payload: {} }],
    parallel: [par.opening, par.script[2], early, par.script[0], par.script[1], par.script[1], par.script[3], par.script[3], { id: "e-after", type: "PACKED", payload: {} }],
  };
  const expected = {
    flat: ["applied", "applied", "applied", "applied", "applied", "duplicate", "ignored"],
    parallel: ["applied", "applied", "ignored", "applied", "applied", "duplicate", "applied", "duplicate", "ignored"],
  };
  for (const kind of ["flat", "parallel"]) {
    const mc = run[kind].machine;
    const xm = par.xstateMachines[kind];
    let [a, b] = [null, par.xstateInitialText(xm)];
    const statuses = [];
    for (const ev of stories[kind]) {
      const x = mc.reduce(a, ev, NOW, `smoke-${kind}`);
      const y = par.xstateRoundTrip(xm, b, ev);
      const eff = (o) => (o.effects ?? []).map((e) => ({ type: e.type, payload: e.payload }));
      same(`${kind} ${ev.id} ${ev.type}`, [y.status, y.response, eff(y)], [x.status, x.response, eff(x)]);
      if (x.snapshot) a = x.snapshot;
      b = y.snapshot;
      same(`${kind} ${ev.id} state`, par.xstateView(b), peers.idemView(mc, a));
      statuses.push(x.status);
    }
    same(`${kind} story statuses`, statuses, expected[kind]);
    same(`${kind} final state`, peers.idemView(mc, a).state, kind === "flat" ? "shipped" : "complete");
    // the timed call ends where the story's script does
    same(`${kind} timed script`, [run[kind].idem().status, run[kind].xstate().status], ["applied", "applied"]);
  }

  const sc = await sizesAndColdStart();
  for (const mod of MODULES) {
    same(`${mod.label} cold start result`, sc.cold[mod.key].result, "applied pending");
    same(`${mod.label} size measured`, sc.sizes[mod.key].wasmGzip > 0 && sc.sizes[mod.key].glueGzip > 0, true);
  }
  same("XState cold start result", sc.cold.xstate.result, "applied pending");
  same("XState size measured", sc.sizes.xstateGzip > 0, true);

  // Section 5 once, in one process per contender and size: every child applied all its events.
  const mem = measureMemory({ dir: tmp, sizes: SIZES, moduleDir: IDEM.dir, runs: 1 });
  for (const r of mem.rows) {
    same(`memory measured at ${r.ledger}`, r.wasm.wasm > 0 && r.resident.wasm > 0, true);
  }
  console.log(`# pass ${checks}\n# fail 0`); // counted by scripts/test.sh like node --test output
  console.log(`bench smoke: ${checks} checks passed (ledger sizes ${SIZES.join(", ")}; XState, JS reducer, idem wasm, idem native agree; on section 2c's flat and two-region machines, XState and idem wasm agree)`);
}

// ---- measure -----------------------------------------------------------------------
async function measureAll() {
  const res = { pure: {}, roundTrip: [], native };
  const mOpts = (n) => ({ budgetMs: n >= 100_000 ? BUDGET * 3 : BUDGET, maxSamples: n >= 10_000 ? 60 : 2000 });

  // V8 runs new wasm and JS code in baseline tiers first and optimizes hot
  // functions in the background: run everything for a while before timing.
  log("warming up (JIT and wasm tier-up)");
  {
    const warm = [0, 100].filter((n) => SIZES.includes(n)).map(data);
    const end = performance.now() + 1500;
    let i = 0;
    while (performance.now() < end) {
      for (const d of warm) {
        m.reduce(d.idem, payment(i), NOW, "bench");
        peers.xstateRoundTrip(d.xs, payment(i));
        peers.jsRoundTrip(d.js, payment(i));
      }
      i++;
    }
  }

  log("pure transitions");
  {
    const s0 = peers.xstateInitial();
    let ledger = new Map();
    const j0 = peers.jsInitial();
    let jl = new Map();
    res.pure = measureGroup({
      xstate: (i) => {
        peers.xstatePure(s0, ledger, 0, payment(i));
        if (ledger.size > 10_000) ledger = new Map();
      },
      js: (i) => {
        peers.jsPure(j0, jl, 0, payment(i));
        if (jl.size > 10_000) jl = new Map();
      },
      wasm: idemPure,
    }, mOpts(0));
  }

  const fresh = peers.freshEvent();
  // A wasm Machine keeps the decoded snapshot of its recent processes and uses it
  // when handed back that very snapshot. "idem wasm" is the stored-text path: the
  // process id rotates over more ids than the engine keeps, so every call decodes.
  // "bytes" is the same with the snapshot stored as bytes (`reduceBytes`: a
  // Uint8Array in and out). "resident" is a warm host (a Durable Object, a warm
  // isolate) passing back the snapshot the engine gave it, under one process id:
  // for a duplicate the same snapshot again; for an applied event a chain of
  // fresh NOTE events, each on the previous event's snapshot, restarted from the
  // stored one every max(50, n/20) events, so its ledger holds n to n + n/20
  // entries (one call in each chain decodes).
  let coldK = 0;
  const cold = () => `cold-${coldK++ % 16}`;
  for (const n of SIZES) {
    log(`round trip at ledger ${n}`);
    const o = mOpts(n);
    const d = data(n);
    const bytes = new TextEncoder().encode(d.idem);
    const chain = Math.max(50, Math.floor(n / 20));
    let hot = d.idem;
    let hotK = 0;
    // The warm host's own Machine (one per Durable Object or isolate), so the
    // rotating "cold" process ids do not push its snapshot out.
    const mHot = new Machine(defText);
    const residentFresh = () => {
      if (hotK === chain) [hot, hotK] = [d.idem, 0];
      const out = mHot.reduce(hot, peers.noteEvent(n + 1 + hotK++), NOW, "hot-fresh");
      hot = out.snapshot;
      return out;
    };
    const row = { ledger: n, bytes: { idem: d.idem.length, json: d.json.length, xstate: d.xs.length, js: d.js.length } };
    const f = measureGroup({
      xstate: () => peers.xstateRoundTrip(d.xs, fresh),
      js: () => peers.jsRoundTrip(d.js, fresh),
      wasm: () => m.reduce(d.idem, fresh, NOW, cold()),
      bytes: () => m.reduceBytes(bytes, fresh, NOW, cold()),
      resident: residentFresh,
      floor: () => JSON.stringify(JSON.parse(d.json)),
    }, o);
    row.floor = f.floor;
    delete f.floor;
    if (n === 0) {
      // The crossing alone (benches/crossing.mjs): what any wasm engine called
      // as idem is pays before its own work. Timed in a group of its own, with
      // the reducer and idem again, so it cannot move section 2's figures.
      const reply = m.reduce(d.idem, fresh, NOW, cold());
      const cross = crossing({ state: reply.state, response: reply.response });
      row.crossing = measureGroup({
        js: () => peers.jsRoundTrip(d.js, fresh),
        wasm: () => m.reduce(d.idem, fresh, NOW, cold()),
        crossing: () => cross(d.idem, fresh, cold()),
      }, o);
    }
    row.fresh = f;
    if (n > 0) {
      const dup = peers.noteEvent(peers.dupIndex(n));
      row.duplicate = measureGroup({
        xstate: () => peers.xstateRoundTrip(d.xs, dup),
        js: () => peers.jsRoundTrip(d.js, dup),
        wasm: () => m.reduce(d.idem, dup, NOW, cold()),
        bytes: () => m.reduceBytes(bytes, dup, NOW, cold()),
        resident: () => mHot.reduce(d.idem, dup, NOW, "hot"),
      }, o);
    }
    res.roundTrip.push(row);
    release(n);
  }

  log("a full ledger (1,000 entries at maxEntries 1,000)");
  res.full = fullLedger();

  log("a parallel machine (two regions) against a flat one");
  try {
    res.parallel = measureParallel(mOpts(0));
  } catch (err) {
    // An engine from before parallel states (--dist) refuses the two-region machine.
    if (!opt.dist) throw err;
    log(`section 2c left out: ${err.message}`);
  }

  log(`sizes and cold start (${COLD_RUNS} fresh processes each)`);
  Object.assign(res, await sizesAndColdStart());

  res.memory = measureMemory({ dir: tmp, sizes: SIZES, moduleDir: IDEM.dir, runs: Number(opt["memory-runs"]), log });

  if (!opt["no-hosts"]) {
    log("hosts end to end (benches/hosts.mjs)");
    res.hosts = await measureHosts({ log });
  }
  return res;
}

function machineInfo() {
  const cpus = os.cpus();
  const sh = (cmd, args) => {
    try {
      return execFileSync(cmd, args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    } catch {
      return "?";
    }
  };
  return {
    date: new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC",
    cpu: `${cpus[0]?.model ?? "?"} × ${cpus.length} (${os.availableParallelism()} available)`,
    memory: `${Math.round(os.totalmem() / 2 ** 30)} GiB`,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    rustc: sh(`${os.homedir()}/.cargo/bin/rustc`, ["-V"]) !== "?" ? sh(`${os.homedir()}/.cargo/bin/rustc`, ["-V"]) : sh("rustc", ["-V"]),
    xstate: JSON.parse(readFileSync(path.join(ROOT, "node_modules/xstate/package.json"), "utf8")).version,
    idem: idemVersion(),
    // IDEM_BENCH_COMMIT names the commit when the tree is an export (git archive) rather than a checkout.
    commit: process.env.IDEM_BENCH_COMMIT ??
      (sh("git", ["rev-parse", "--short", "HEAD"]) === "?"
        ? "an unknown commit (not a git checkout: set IDEM_BENCH_COMMIT)"
        : sh("git", ["rev-parse", "--short", "HEAD"]) + (sh("git", ["status", "--porcelain", "--", "src"]) ? " (src modified)" : "")),
  };
}

function report(res) {
  const info = machineInfo();
  const out = [];
  const p = (s = "") => out.push(s);
  const nat = Object.fromEntries(res.native.roundTrip.map((r) => [r.ledger, r]));
  p(`## idem benchmarks — ${info.date}`);
  p();
  p(`- Machine: ${info.cpu}, ${info.memory}, ${info.os}; Node ${info.node}; ${info.rustc}; XState ${info.xstate}; idem ${info.idem} at ${info.commit}.`);
  p(`- Load average (1 min) at start / end: ${LOAD_START.toFixed(1)} / ${os.loadavg()[0].toFixed(1)} (the machine is shared; medians resist it, p95s do not).`);
  p(`- Command: \`node benches/run.mjs${process.argv.slice(2).length ? " " + process.argv.slice(2).join(" ") : ""}\`. Medians; "faster"/"slower" compare idem with the column's peer.`);
  p(`- Throughput: ${IDEM.label}, ${path.relative(ROOT, IDEM.dir)}/idem_bg.wasm.`);
  p(`- Bench machine: tests/machines/order.json + NOTE (fills the ledger without growing the context), retention.maxEntries 1,000,000. idem snapshots: ${res.native.snapshots}.`);
  p();

  p("### 1. Pure transition, in memory (a fresh payment on a pending order)");
  p();
  const pr = res.pure;
  const nat0 = nat[0]?.fresh;
  const pureRows = [
    [`XState ${info.xstate} transition() + Map ledger`, pr.xstate],
    ["hand-written JS reducer + Map ledger", pr.js],
    [`${IDEM.label} wasm from JS: reduce(snapshot, event) ¹`, pr.wasm],
    ["idem native: Machine::reduce ¹", nat0 && { medianNs: nat0.medianNs, p95Ns: nat0.p95Ns }],
  ].filter(([, s]) => s);
  p(table(["engine", "median", "p95", "ops/s", "vs XState", "vs JS reducer"],
    pureRows.map(([name, s]) => [name, fmtNs(s.medianNs), fmtNs(s.p95Ns), fmtOps(s.medianNs),
      s === pr.xstate ? "—" : ratio(pr.xstate.medianNs, s.medianNs), s === pr.js ? "—" : ratio(pr.js.medianNs, s.medianNs)]),
    ["l"]));
  p();
  p("¹ idem has no in-memory form yet: every reduce decodes the snapshot text and encodes the new one (ledger 0 here), so this is also its round trip.");
  p();

  p("### 2. Serverless round trip per event (stored text in → outcome + text out)");
  p();
  p("XState: JSON.parse + resolveState + transition + getPersistedSnapshot + JSON.stringify, ledger in the JSON. JS reducer: the same without XState.");
  p("idem: `machine.reduce(snapshot, event, now)`. JSON floor: `JSON.stringify(JSON.parse(s))` where s is idem's snapshot as JSON (its readable form, `m.inspect`, the same ledger): what any design that stores the ledger as JSON pays. A duplicate is the entry in the middle of the ledger; nothing is written (so no stringify).");
  p();
  const rtRows = [];
  for (const r of res.roundTrip) {
    for (const kind of ["fresh", "duplicate"]) {
      const s = r[kind];
      if (!s) continue;
      const natS = kind === "fresh" ? nat[r.ledger]?.fresh : nat[r.ledger]?.duplicate;
      rtRows.push([
        r.ledger.toLocaleString("en"),
        kind,
        fmtNs(s.xstate.medianNs),
        fmtNs(s.js.medianNs),
        fmtNs(r.floor.medianNs),
        fmtNs(s.wasm.medianNs),
        fmtNs(natS?.medianNs),
        fmtOps(s.wasm.medianNs),
        ratio(s.xstate.medianNs, s.wasm.medianNs),
        ratio(s.js.medianNs, s.wasm.medianNs),
        ratio(r.floor.medianNs, s.wasm.medianNs),
        ratio(r.floor.medianNs, natS?.medianNs),
        s.bytes ? fmtNs(s.bytes.medianNs) : "",
        s.bytes ? ratio(r.floor.medianNs, s.bytes.medianNs) : "",
        s.resident ? fmtNs(s.resident.medianNs) : "",
        s.resident ? ratio(r.floor.medianNs, s.resident.medianNs) : "",
        s.resident ? ratio(s.xstate.medianNs, s.resident.medianNs) : "",
      ]);
    }
  }
  p(table(["ledger", "event", "XState", "JS reducer", "JSON floor", "idem wasm", "idem native", "wasm ops/s", "wasm vs XState", "wasm vs JS", "wasm vs floor", "native vs floor", "wasm bytes", "bytes vs floor", "wasm resident", "resident vs floor", "resident vs XState"], rtRows, ["l", "l"]));
  p();
  p("idem wasm: the stored text (a string) is decoded on every call. wasm bytes: the same, stored as bytes (`reduceBytes`). wasm resident: a warm host hands back the snapshot the engine gave it, so the decoded copy kept in the Machine answers; for applied events a chain of fresh NOTE events whose ledger grows from n to n + max(50, n/20) entries before it restarts from the stored snapshot.");
  p();
  const c0 = res.roundTrip.find((r) => r.ledger === 0);
  if (c0?.crossing) {
    const { crossing: x, js, wasm } = c0.crossing;
    p(`The crossing alone at ledger 0 (\`benches/crossing.mjs\`: the event's \`JSON.stringify\`, the stored text and the process id written into wasm memory, one call into a module that only copies the text, the new text, state and response read back, the outcome object built; no engine work), timed in turns with the JS reducer and idem wasm after the table's group: ${fmtNs(x.medianNs)}, ${(100 * x.medianNs / js.medianNs).toFixed(0)} % of the JS reducer's whole round trip (${fmtNs(js.medianNs)}) and ${(100 * x.medianNs / wasm.medianNs).toFixed(0)} % of idem wasm's (${fmtNs(wasm.medianNs)}). An engine called across it has ${fmtNs(Math.max(0, js.medianNs - x.medianNs))} left for its own work to tie with the reducer; idem's work takes ${fmtNs(nat[0]?.fresh?.medianNs)} natively.`);
    p();
  }
  p("p95 and stored sizes:");
  p();
  p(table(["ledger", "event", "XState p95", "JS p95", "floor p95", "idem wasm p95", "idem native p95", "serde floor (native)", "idem bytes", "as JSON", "XState bytes", "JS bytes"],
    res.roundTrip.flatMap((r) => ["fresh", "duplicate"].filter((k) => r[k]).map((k) => {
      const natS = k === "fresh" ? nat[r.ledger]?.fresh : nat[r.ledger]?.duplicate;
      return [r.ledger.toLocaleString("en"), k, fmtNs(r[k].xstate.p95Ns), fmtNs(r[k].js.p95Ns), fmtNs(r.floor.p95Ns), fmtNs(r[k].wasm.p95Ns),
        fmtNs(natS?.p95Ns), fmtNs(nat[r.ledger]?.jsonFloor?.medianNs), fmtBytes(r.bytes.idem), fmtBytes(r.bytes.json), fmtBytes(r.bytes.xstate), fmtBytes(r.bytes.js)];
    })), ["l", "l"]));
  p();

  if (res.full) {
    const f = res.full;
    p("### 2b. A full ledger (1,000 entries at `retention.maxEntries` 1,000, the default)");
    p();
    p(table(["ledger", "idem wasm (stored string decoded)", "p95", "wasm resident", "p95", "snapshot"], [
      ["1,000, cap 1,000,000 (below the cap)", fmtNs(f.below.medianNs), fmtNs(f.below.p95Ns), fmtNs(f.belowResident.medianNs), fmtNs(f.belowResident.p95Ns), fmtBytes(f.bytes.below)],
      ["1,000, cap 1,000 (full: each event forgets the oldest id)", fmtNs(f.full.medianNs), fmtNs(f.full.p95Ns), fmtNs(f.fullResident.medianNs), fmtNs(f.fullResident.p95Ns), fmtBytes(f.bytes.full)],
    ], ["l"]));
    p();
    p("Fresh NOTE events on the same 1,000 events' ledger under two caps. A full ledger forgets its oldest id with each event but drops forgotten records from the text only once they are an eighth of the cap, so most events still only append.");
    p();
  }

  if (res.parallel) {
    const r = res.parallel;
    p("### 2c. A parallel machine: two regions against a flat one, per event");
    p();
    p(table(["machine", "XState", "idem wasm", "wasm ops/s", "wasm vs XState", "XState p95", "idem wasm p95"], [
      ["flat: collecting → paid → packed → shipped", fmtNs(r.flat.xstate.medianNs), fmtNs(r.flat.wasm.medianNs), fmtOps(r.flat.wasm.medianNs),
        ratio(r.flat.xstate.medianNs, r.flat.wasm.medianNs), fmtNs(r.flat.xstate.p95Ns), fmtNs(r.flat.wasm.p95Ns)],
      ["two regions: payment ∥ fulfilment, in_state, onDone", fmtNs(r.parallel.xstate.medianNs), fmtNs(r.parallel.wasm.medianNs), fmtOps(r.parallel.wasm.medianNs),
        ratio(r.parallel.xstate.medianNs, r.parallel.wasm.medianNs), fmtNs(r.parallel.xstate.p95Ns), fmtNs(r.parallel.wasm.p95Ns)],
      ["**two regions / flat**", `${(r.parallel.xstate.medianNs / r.flat.xstate.medianNs).toFixed(2)}×`, `${(r.parallel.wasm.medianNs / r.flat.wasm.medianNs).toFixed(2)}×`, "", "", "", ""],
    ], ["l"]));
    p();
    p(`The same order flat and as a parallel state (benches/parallel.mjs), each run by idem and by XState with the ledger of section 2: ${r.events} events (two payments, the second reaching the total and emitting \`charge\`, PACKED, SHIP emitting \`ship\`; on two regions SHIP also completes the order through onDone), each a round trip from the stored text the one before left; the figures are per event.`);
    p();
  }

  p("### 3. Size and cold start (fresh `node` process: import + instantiate + build the machine + first event)");
  p();
  const { sizes: z, cold: c } = res;
  const ms = (x) => `${x.toFixed(2)} ms`;
  const coldCells = (k) => [ms(c[k].medianMs), ms(c[k].p95Ms), ms(c[k].loadMs), ms(c[k].buildMs), ms(c[k].firstMs), `${c[k].wallMs.toFixed(1)} ms`];
  const sizeRows = [];
  for (const mod of MODULES) {
    const zz = z[mod.key];
    sizeRows.push([`${mod.label}: wasm`, fmtBytes(zz.wasmRaw), fmtBytes(zz.wasmGzip), "", "", "", "", "", ""]);
    sizeRows.push([`${mod.label}: JS glue (esbuild --minify)`, fmtBytes(zz.glueMin), fmtBytes(zz.glueGzip), "", "", "", "", "", ""]);
    sizeRows.push([`**${mod.label}: total**`, fmtBytes(zz.wasmRaw + zz.glueMin), fmtBytes(zz.wasmGzip + zz.glueGzip), ...coldCells(mod.key)]);
  }
  p(table(["", "raw / min", "gzip -9", "cold start median", "p95", "load + instantiate", "build machine", "first event", "process wall (node boot incl.)"], [
    ...sizeRows,
    [`XState ${info.xstate} createMachine+transition (esbuild --minify)`, fmtBytes(z.xstateMin), fmtBytes(z.xstateGzip), ...coldCells("xstate")],
    ...(c.esm ? [["an empty ES module (the floor of any import)", "", "", ...coldCells("esm").slice(0, 3), "", "", coldCells("esm")[5]]] : []),
    ["`node -e` doing nothing", "", "", "", "", "", "", "", `${c.nodeWallMs.toFixed(1)} ms`],
  ], ["l"]));
  p();
  p(`${c.xstate.runs} fresh processes each, interleaved. "cold start" is measured inside the child from before the import to after the first event; "process wall" is spawn to exit. The empty ES module is an import and nothing else: what any cold start measured this way pays before its own code runs.`);
  p();

  p("### 4. Hosts end to end (local workerd with D1 and a Durable Object, Deno KV)");
  p();
  p(hostsSection(res.hosts ?? null, { skipped: "--no-hosts" }));
  p();

  p("### 5. Memory per round trip (fresh `node` processes, the stored text of section 2 in, fresh events)");
  p();
  p(memorySection(res.memory));
  p();

  p("### Targets (issues 9 and 26)");
  p();
  const rt = Object.fromEntries(res.roundTrip.map((r) => [r.ledger, r]));
  const t = [];
  const goal = (name, value, ok) => t.push([name, value, ok == null ? "—" : ok ? "met" : "not met"]);
  if (rt[0]) {
    goal("round trip at ledger 0: ≥ 5× faster than XState", ratio(rt[0].fresh.xstate.medianNs, rt[0].fresh.wasm.medianNs), rt[0].fresh.xstate.medianNs / rt[0].fresh.wasm.medianNs >= 5);
    if (rt[0].fresh.resident) goal("… warm host, decoded snapshot resident (ledger 0 to 50)", ratio(rt[0].fresh.xstate.medianNs, rt[0].fresh.resident.medianNs), rt[0].fresh.xstate.medianNs / rt[0].fresh.resident.medianNs >= 5);
    goal("round trip at ledger 0: no slower than the JS reducer", ratio(rt[0].fresh.js.medianNs, rt[0].fresh.wasm.medianNs), rt[0].fresh.js.medianNs / rt[0].fresh.wasm.medianNs >= 1);
  }
  if (rt[10000]) {
    const r = rt[10000];
    goal("round trip at ledger 10,000: ≥ 20× faster than the JSON floor (stored string, decoded)", ratio(r.floor.medianNs, r.fresh.wasm.medianNs), r.floor.medianNs / r.fresh.wasm.medianNs >= 20);
    if (r.fresh.bytes) goal("… stored bytes, decoded (`reduceBytes`)", ratio(r.floor.medianNs, r.fresh.bytes.medianNs), r.floor.medianNs / r.fresh.bytes.medianNs >= 20);
    if (r.fresh.resident) goal("… warm host, decoded snapshot resident", ratio(r.floor.medianNs, r.fresh.resident.medianNs), r.floor.medianNs / r.fresh.resident.medianNs >= 20);
  }
  if (res.parallel) {
    const r = res.parallel;
    const x = r.parallel.wasm.medianNs / r.flat.wasm.medianNs;
    goal("a two-region machine ≤ 2× a flat one per event (issue 26)", `${x.toFixed(2)}× (XState: ${(r.parallel.xstate.medianNs / r.flat.xstate.medianNs).toFixed(2)}×)`, x <= 2);
  }
  goal(`wasm ≤ 100 KiB gzip (goal beyond: 60 KiB): ${IDEM.label}`, fmtBytes(z[IDEM.key].wasmGzip), z[IDEM.key].wasmGzip <= 100 * 1024);
  goal(`cold start to first reduce < 5 ms: ${IDEM.label}`, ms(c[IDEM.key].medianMs), c[IDEM.key].medianMs < 5);
  const noWrite = duplicatesWriteNothing(res.hosts);
  goal("a duplicate costs no write on every host", noWrite === null ? "not measured (--no-hosts)" : noWrite ? "0 commits on every host" : "some host wrote", noWrite);
  p(table(["target", "measured (idem wasm)", ""], t, ["l", "l", "l"]));
  p();
  p("Profile of the native round trip (instruction counts, load-independent): `node benches/profile.mjs`.");
  return { text: out.join("\n"), info };
}

if (opt.smoke) {
  await smoke();
} else {
  const res = await measureAll();
  const { text, info } = report(res);
  console.log(text);
  if (opt.json) writeFileSync(opt.json, JSON.stringify({ info, ...res }, null, 2));
  if (res.hosts?.errors) process.exitCode = 1;
}
