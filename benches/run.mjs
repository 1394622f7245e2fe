#!/usr/bin/env node
// idem benchmarks: one command, one table, peers and idem side by side from the same run.
//
//   node benches/run.mjs                 build (wasm + native bench), measure, print the table
//   node benches/run.mjs --smoke         every measurement once, checking that XState, the
//                                        hand-written reducer, idem wasm and idem native agree
//                                        on state, context, revision, responses (no timing)
//   options: --no-wasm-build             use pkg/dist as it is (scripts/build-wasm.sh already ran)
//            --sizes 0,100,1000          ledger sizes (default 0,100,1000,10000,100000)
//            --budget-ms 400             time spent per measurement (at least 5 samples)
//            --cold-runs 15              fresh processes per cold-start measurement
//            --json FILE                 also write every figure as JSON
//
// The peers live in benches/peers.mjs, native idem in benches/idem.rs (a `cargo bench`
// target run here as a plain binary). Results and how to read them: benches/RESULTS.md.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { fmtBytes, fmtNs, fmtOps, measure, median, quantile, ratio, table } from "./measure.mjs";
import * as peers from "./peers.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { values: opt } = parseArgs({
  options: {
    smoke: { type: "boolean", default: false },
    "no-wasm-build": { type: "boolean", default: false },
    sizes: { type: "string", default: "0,100,1000,10000,100000" },
    "budget-ms": { type: "string", default: "400" },
    "cold-runs": { type: "string", default: "15" },
    json: { type: "string" },
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

if (!opt["no-wasm-build"]) {
  log("building wasm (SIZE_BUDGET=warn scripts/build-wasm.sh)");
  run("scripts/build-wasm.sh", [], { SIZE_BUDGET: "warn" });
}
log("building the native bench (cargo bench --bench idem --no-run)");
// Its own target dir, and panic=unwind for every unit: with the release profile's
// panic=abort, `cargo bench` builds the cdylib+rlib lib twice (abort for the CLI,
// unwind for the bench) into the same file names and the two links race (cargo
// "output filename collision", rust-lang/cargo#6313).
const cargoOut = run("cargo", ["bench", "--bench", "idem", "--no-run", "--message-format=json"], {
  PATH: `${os.homedir()}/.cargo/bin:${process.env.PATH}`,
  CARGO_TARGET_DIR: path.join(ROOT, "target/bench"),
  CARGO_PROFILE_RELEASE_PANIC: "unwind",
});
const nativeExe = cargoOut
  .split("\n")
  .filter((l) => l.startsWith("{"))
  .map((l) => JSON.parse(l))
  .find((m) => m.reason === "compiler-artifact" && m.target?.name === "idem" && m.target.kind.includes("bench"))?.executable;
if (!nativeExe) throw new Error("cargo did not report the bench executable");

// ---- native run (also writes the machine and idem's snapshots to tmp) ----------------
log(opt.smoke ? "native smoke" : "measuring native idem");
const native = JSON.parse(
  run(nativeExe, [opt.smoke ? "--smoke" : "--json", "--emit", tmp, "--sizes", SIZES.join(","), "--budget-ms", String(BUDGET)]),
);

const { Machine, version: idemVersion } = await import(pathToFileURL(path.join(ROOT, "pkg/src/node.js")).href);
const defText = readFileSync(path.join(tmp, "machine.json"), "utf8");
const m = new Machine(defText);
if (m.hash !== native.machineHash) throw new Error(`wasm and native machines differ: ${m.hash} vs ${native.machineHash}`);
const idemSnap = Object.fromEntries(SIZES.map((n) => [n, readFileSync(path.join(tmp, `idem-${n}.snap`), "utf8")]));

log("building the peers' stored snapshots");
const xsStored = {};
const jsStored = {};
for (const n of SIZES) {
  const events = peers.noteEvents(n);
  xsStored[n] = peers.xstateStored(events);
  jsStored[n] = peers.jsStored(events);
}

const NOW = peers.NOW;
const payment = (i) => ({ id: `p${i}`, type: "PAYMENT_PARTIAL", payload: { paymentId: "q-1", amount: 1 } });
const idemPure = (i) => m.reduce(idemSnap[0] ?? idemSnapshotEmpty(), payment(i), NOW, "");
function idemSnapshotEmpty() {
  throw new Error("the pure-transition row needs ledger size 0 in --sizes");
}

// ---- 3. sizes and cold start ---------------------------------------------------------
// esbuild --bundle --minify --format=esm of a file, or of source text resolved from the repository root.
async function bundle({ file, source }, platform) {
  const esbuild = await import("esbuild");
  const r = await esbuild.build({
    ...(file ? { entryPoints: [file] } : { stdin: { contents: source, resolveDir: ROOT, loader: "js" } }),
    bundle: true,
    minify: true,
    format: "esm",
    platform,
    write: false,
    absWorkingDir: ROOT,
    logLevel: "silent",
  });
  return r.outputFiles[0].contents;
}

async function sizesAndColdStart() {
  const wasm = readFileSync(path.join(ROOT, "pkg/dist/idem_bg.wasm"));
  const glue = await bundle({ file: path.join(ROOT, "pkg/src/node.js") }, "node");
  const xsBundle = await bundle({ source: 'export { createMachine, assign, initialTransition, transition } from "xstate";' }, "neutral");
  const xsFile = path.join(tmp, "xstate.min.mjs");
  writeFileSync(xsFile, xsBundle);
  const gz = (b) => gzipSync(b, { level: 9 }).length;
  const sizes = {
    wasmRaw: wasm.length,
    wasmGzip: gz(wasm),
    glueMin: glue.length,
    glueGzip: gz(glue),
    xstateMin: xsBundle.length,
    xstateGzip: gz(xsBundle),
  };

  const ev = JSON.stringify(peers.freshEvent());
  const idemCode = `
    const t0 = performance.now();
    const { Machine } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, "pkg/src/node.js")).href)});
    const t1 = performance.now();
    const m = new Machine(${JSON.stringify(defText)});
    const t2 = performance.now();
    const o = m.reduce(null, ${ev}, ${NOW}, "");
    const t3 = performance.now();
    process.stdout.write(JSON.stringify({ boot: t0, load: t1 - t0, build: t2 - t1, first: t3 - t2, result: o.status + " " + o.state }));`;
  const xsCode = `
    const t0 = performance.now();
    const { createMachine, assign, initialTransition, transition } = await import(${JSON.stringify(pathToFileURL(xsFile).href)});
    const t1 = performance.now();
    const order = createMachine((${peers.orderConfig.toString()})(assign));
    const t2 = performance.now();
    const [s0] = initialTransition(order);
    const [s1] = transition(order, s0, ${ev});
    const t3 = performance.now();
    process.stdout.write(JSON.stringify({ boot: t0, load: t1 - t0, build: t2 - t1, first: t3 - t2, result: (s1 !== s0 ? "applied " : "ignored ") + s1.value }));`;
  const child = (code) => {
    const t = performance.now();
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8" });
    const wall = performance.now() - t;
    return { ...JSON.parse(out || "{}"), wall };
  };
  const runs = { idem: [], xstate: [], node: [] };
  for (let i = 0; i < COLD_RUNS; i++) {
    runs.idem.push(child(idemCode));
    runs.xstate.push(child(xsCode));
    runs.node.push(child("process.stdout.write('{}')"));
  }
  const summary = (rs) => {
    const inproc = rs.map((r) => r.load + r.build + r.first);
    return {
      runs: rs.length,
      medianMs: median(inproc),
      p95Ms: quantile(inproc, 0.95),
      loadMs: median(rs.map((r) => r.load)),
      buildMs: median(rs.map((r) => r.build)),
      firstMs: median(rs.map((r) => r.first)),
      wallMs: median(rs.map((r) => r.wall)),
      result: rs[0].result,
    };
  };
  return { sizes, cold: { idem: summary(runs.idem), xstate: summary(runs.xstate), nodeWallMs: median(runs.node.map((r) => r.wall)) } };
}

// ---- smoke -------------------------------------------------------------------------
function canon(v) {
  if (Array.isArray(v)) return `[${v.map(canon).join(",")}]`;
  if (v && typeof v === "object") return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon(v[k])}`).join(",")}}`;
  return JSON.stringify(v);
}
let checks = 0;
function same(what, a, b) {
  checks++;
  if (canon(a) !== canon(b)) throw new Error(`smoke: ${what} differ:\n  ${canon(a)}\n  ${canon(b)}`);
}

async function smoke() {
  const nativeBySize = Object.fromEntries(native.sizes.map((s) => [s.ledger, s]));
  for (const n of SIZES) {
    const fresh = peers.freshEvent();
    const o = m.reduce(idemSnap[n], fresh, NOW, "");
    same(`idem wasm status at ${n}`, o.status, "applied");
    const idem = peers.idemView(m, o.snapshot);
    const nat = nativeBySize[n];
    same(`idem wasm vs native at ${n}`, { state: idem.state, context: idem.context, revision: idem.revision },
      { state: nat.state, context: nat.context, revision: nat.revision });
    same(`idem ledger size at ${n}`, idem.ledger, n + 1);
    const xs = peers.xstateRoundTrip(xsStored[n], fresh);
    const js = peers.jsRoundTrip(jsStored[n], fresh);
    same(`XState vs idem at ${n}`, peers.xstateView(xs.snapshot), idem);
    same(`JS reducer vs idem at ${n}`, peers.jsView(js.snapshot), idem);
    same(`responses at ${n}`, [xs.response, js.response], [o.response, o.response]);
    if (n > 0) {
      const k = peers.dupIndex(n);
      const dup = peers.noteEvent(k);
      const outs = [m.reduce(idemSnap[n], dup, NOW, ""), peers.xstateRoundTrip(xsStored[n], dup), peers.jsRoundTrip(jsStored[n], dup)];
      const stored = [idemSnap[n], xsStored[n], jsStored[n]];
      outs.forEach((d, i) => {
        same(`duplicate ${i} at ${n}`, [d.status, d.changed], ["duplicate", false]);
        same(`duplicate ${i} writes nothing at ${n}`, d.snapshot === stored[i], true);
        same(`duplicate ${i} response at ${n}`, d.response, { state: "pending", revision: k + 1 });
      });
    }
    const floor = JSON.stringify(JSON.parse(idemSnap[n]));
    same(`json floor at ${n}`, floor.length, idemSnap[n].length);
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

  const sc = await sizesAndColdStart();
  same("idem cold start result", sc.cold.idem.result, "applied pending");
  same("XState cold start result", sc.cold.xstate.result, "applied pending");
  checks += 1;
  if (!(sc.sizes.wasmGzip > 0 && sc.sizes.xstateGzip > 0)) throw new Error("smoke: sizes not measured");
  console.log(`bench smoke: ${checks} checks passed (ledger sizes ${SIZES.join(", ")}; XState, JS reducer, idem wasm, idem native agree)`);
}

// ---- measure -----------------------------------------------------------------------
async function measureAll() {
  const res = { pure: {}, roundTrip: [], native };
  const mOpts = (n) => ({ budgetMs: n >= 100_000 ? BUDGET * 3 : BUDGET, maxSamples: n >= 10_000 ? 60 : 2000 });

  log("pure transitions");
  {
    const s0 = peers.xstateInitial();
    let ledger = new Map();
    res.pure.xstate = measure((i) => {
      peers.xstatePure(s0, ledger, 0, payment(i));
      if (ledger.size > 10_000) ledger = new Map();
    }, mOpts(0));
    const j0 = peers.jsInitial();
    let jl = new Map();
    res.pure.js = measure((i) => {
      peers.jsPure(j0, jl, 0, payment(i));
      if (jl.size > 10_000) jl = new Map();
    }, mOpts(0));
    res.pure.wasm = measure(idemPure, mOpts(0));
  }

  const fresh = peers.freshEvent();
  for (const n of SIZES) {
    log(`round trip at ledger ${n}`);
    const o = mOpts(n);
    const row = { ledger: n, bytes: { idem: idemSnap[n].length, xstate: xsStored[n].length, js: jsStored[n].length } };
    row.fresh = {
      xstate: measure(() => peers.xstateRoundTrip(xsStored[n], fresh), o),
      js: measure(() => peers.jsRoundTrip(jsStored[n], fresh), o),
      wasm: measure(() => m.reduce(idemSnap[n], fresh, NOW, ""), o),
    };
    if (n > 0) {
      const dup = peers.noteEvent(peers.dupIndex(n));
      row.duplicate = {
        xstate: measure(() => peers.xstateRoundTrip(xsStored[n], dup), o),
        js: measure(() => peers.jsRoundTrip(jsStored[n], dup), o),
        wasm: measure(() => m.reduce(idemSnap[n], dup, NOW, ""), o),
      };
    }
    row.floor = measure(() => JSON.stringify(JSON.parse(idemSnap[n])), o);
    res.roundTrip.push(row);
  }

  log(`sizes and cold start (${COLD_RUNS} fresh processes each)`);
  Object.assign(res, await sizesAndColdStart());
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
      sh("git", ["rev-parse", "--short", "HEAD"]) + (sh("git", ["status", "--porcelain", "--", "src"]) ? " (src modified)" : ""),
  };
}

function report(res) {
  const info = machineInfo();
  const out = [];
  const p = (s = "") => out.push(s);
  const nat = Object.fromEntries(res.native.roundTrip.map((r) => [r.ledger, r]));
  p(`## idem benchmarks — ${info.date}`);
  p();
  p(`Machine: ${info.cpu}, ${info.memory}, ${info.os}; Node ${info.node}; ${info.rustc}; XState ${info.xstate}; idem ${info.idem} at ${info.commit}.`);
  p(`Command: \`node benches/run.mjs${process.argv.slice(2).length ? " " + process.argv.slice(2).join(" ") : ""}\`. Medians; ratios are peer time / idem time (above 1× = idem faster).`);
  p(`Bench machine: tests/machines/order.json + NOTE (fills the ledger without growing the context), retention.maxEntries 1,000,000. idem snapshots: ${res.native.snapshots}.`);
  p();

  p("### 1. Pure transition, in memory (a fresh payment on a pending order)");
  p();
  const pr = res.pure;
  const nat0 = nat[0]?.fresh;
  const pureRows = [
    [`XState ${info.xstate} transition() + Map ledger`, pr.xstate],
    ["hand-written JS reducer + Map ledger", pr.js],
    ["idem wasm from JS: reduce(snapshot, event) ¹", pr.wasm],
    ["idem native: Machine::reduce ¹", nat0 && { medianNs: nat0.medianNs, p95Ns: nat0.p95Ns }],
  ].filter(([, s]) => s);
  p(table(["engine", "median", "p95", "ops/s", "vs XState", "vs JS reducer"],
    pureRows.map(([name, s]) => [name, fmtNs(s.medianNs), fmtNs(s.p95Ns), fmtOps(s.medianNs), ratio(pr.xstate.medianNs, s.medianNs), ratio(pr.js.medianNs, s.medianNs)]),
    ["l"]));
  p();
  p("¹ idem has no in-memory form yet: every reduce decodes the snapshot text and encodes the new one (ledger 0 here), so this is also its round trip.");
  p();

  p("### 2. Serverless round trip per event (stored text in → outcome + text out)");
  p();
  p("XState: JSON.parse + resolveState + transition + getPersistedSnapshot + JSON.stringify, ledger in the JSON. JS reducer: the same without XState.");
  p("idem: `machine.reduce(snapshot, event, now)`. JSON floor: `JSON.stringify(JSON.parse(s))` of idem's snapshot text (the same ledger): what any design that stores the ledger as JSON pays. A duplicate is the entry in the middle of the ledger; nothing is written (so no stringify).");
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
      ]);
    }
  }
  p(table(["ledger", "event", "XState", "JS reducer", "JSON floor", "idem wasm", "idem native", "wasm ops/s", "wasm vs XState", "wasm vs JS", "wasm vs floor", "native vs floor"], rtRows, ["l", "l"]));
  p();
  p("p95 and stored sizes:");
  p();
  p(table(["ledger", "event", "XState p95", "JS p95", "floor p95", "idem wasm p95", "idem native p95", "serde floor (native)", "idem bytes", "XState bytes", "JS bytes"],
    res.roundTrip.flatMap((r) => ["fresh", "duplicate"].filter((k) => r[k]).map((k) => {
      const natS = k === "fresh" ? nat[r.ledger]?.fresh : nat[r.ledger]?.duplicate;
      return [r.ledger.toLocaleString("en"), k, fmtNs(r[k].xstate.p95Ns), fmtNs(r[k].js.p95Ns), fmtNs(r.floor.p95Ns), fmtNs(r[k].wasm.p95Ns),
        fmtNs(natS?.p95Ns), fmtNs(nat[r.ledger]?.jsonFloor?.medianNs), fmtBytes(r.bytes.idem), fmtBytes(r.bytes.xstate), fmtBytes(r.bytes.js)];
    })), ["l", "l"]));
  p();

  p("### 3. Size and cold start (fresh `node` process: import + instantiate + build the machine + first event)");
  p();
  const { sizes: z, cold: c } = res;
  p(table(["", "raw / min", "gzip -9", "cold start median", "p95", "load", "build", "first event", "process wall (node boot incl.)"], [
    ["idem: wasm", fmtBytes(z.wasmRaw), fmtBytes(z.wasmGzip), "", "", "", "", "", ""],
    ["idem: JS glue (pkg/src/node.js, esbuild --minify)", fmtBytes(z.glueMin), fmtBytes(z.glueGzip), "", "", "", "", "", ""],
    ["idem total", fmtBytes(z.wasmRaw + z.glueMin), fmtBytes(z.wasmGzip + z.glueGzip), `${c.idem.medianMs.toFixed(2)} ms`, `${c.idem.p95Ms.toFixed(2)} ms`,
      `${c.idem.loadMs.toFixed(2)} ms`, `${c.idem.buildMs.toFixed(2)} ms`, `${c.idem.firstMs.toFixed(2)} ms`, `${c.idem.wallMs.toFixed(1)} ms`],
    [`XState ${info.xstate} createMachine+transition (esbuild --minify)`, fmtBytes(z.xstateMin), fmtBytes(z.xstateGzip), `${c.xstate.medianMs.toFixed(2)} ms`, `${c.xstate.p95Ms.toFixed(2)} ms`,
      `${c.xstate.loadMs.toFixed(2)} ms`, `${c.xstate.buildMs.toFixed(2)} ms`, `${c.xstate.firstMs.toFixed(2)} ms`, `${c.xstate.wallMs.toFixed(1)} ms`],
    ["`node -e` doing nothing", "", "", "", "", "", "", "", `${c.nodeWallMs.toFixed(1)} ms`],
  ], ["l"]));
  p();
  p(`${c.idem.runs} fresh processes each, interleaved. "cold start" is measured inside the child from before the import to after the first event; "process wall" is spawn to exit.`);
  p();

  p("### 4. Hosts end to end (local workerd with D1 and a Durable Object, Deno KV)");
  p();
  p(table(["host", "events/s, one hot process, concurrent delivery", "events/s, many processes", "duplicate cost vs applied", "writes per duplicate"], [
    ["workerd + D1", "not measured yet", "not measured yet", "not measured yet", "not measured yet"],
    ["workerd + Durable Object", "not measured yet", "not measured yet", "not measured yet", "not measured yet"],
    ["Deno KV", "not measured yet", "not measured yet", "not measured yet", "not measured yet"],
  ], ["l"]));
  p();
  p("(To be filled when the hosts exist: add their runs to benches/run.mjs so they print here from the same run.)");
  p();

  p("### Targets (issue 9)");
  p();
  const rt = Object.fromEntries(res.roundTrip.map((r) => [r.ledger, r]));
  const t = [];
  const goal = (name, value, ok) => t.push([name, value, ok == null ? "—" : ok ? "met" : "not met"]);
  if (rt[0]) {
    goal("round trip at ledger 0: ≥ 5× faster than XState", ratio(rt[0].fresh.xstate.medianNs, rt[0].fresh.wasm.medianNs), rt[0].fresh.xstate.medianNs / rt[0].fresh.wasm.medianNs >= 5);
    goal("round trip at ledger 0: no slower than the JS reducer", ratio(rt[0].fresh.js.medianNs, rt[0].fresh.wasm.medianNs), rt[0].fresh.js.medianNs / rt[0].fresh.wasm.medianNs >= 1);
  }
  if (rt[10000]) {
    goal("round trip at ledger 10,000: ≥ 20× faster than the JSON floor", ratio(rt[10000].floor.medianNs, rt[10000].fresh.wasm.medianNs), rt[10000].floor.medianNs / rt[10000].fresh.wasm.medianNs >= 20);
  }
  goal("wasm ≤ 100 KiB gzip (goal beyond: 60 KiB)", fmtBytes(z.wasmGzip), z.wasmGzip <= 100 * 1024);
  goal("cold start to first reduce < 5 ms", `${c.idem.medianMs.toFixed(2)} ms`, c.idem.medianMs < 5);
  goal("a duplicate costs no write on every host", "not measured yet", null);
  p(table(["target", "measured (idem wasm)", ""], t, ["l", "l", "l"]));
  return { text: out.join("\n"), info };
}

if (opt.smoke) {
  await smoke();
} else {
  const res = await measureAll();
  const { text, info } = report(res);
  console.log(text);
  if (opt.json) writeFileSync(opt.json, JSON.stringify({ info, ...res }, null, 2));
}
