#!/usr/bin/env node
// Cold start where idem runs: the time to the first reduced event in a fresh workerd
// isolate and in a fresh Deno process, for idem and for XState doing the same first
// event (the bench's order machine, one fresh payment on a new process). A
// measurement, printed with both side by side; it sets no target.
//
//   node benches/cold-edge.mjs [--runs 9] [--dir pkg/dist/lean]
//
// workerd (Miniflare, a new workerd process per run): three Workers, each its own
// module graph as Cloudflare would upload it, started in turns:
//   idem    the lean glue and the wasm as a compiled module, `initSync` at load (as
//           pkg/src/workerd.js does); the first request builds the machine and
//           reduces the event
//   xstate  XState's `createMachine` + `transition` bundle (esbuild --minify, as
//           section 3 of benches/run.mjs sizes it); the first request builds the
//           machine and takes the event
//   empty   a Worker that answers a request: the floor under both
// workerd freezes clocks while a Worker runs, so the times are taken outside it:
// "start" is `new Miniflare` to ready (the workerd process up, the Worker's modules
// compiled and evaluated), "first request" the first `dispatchFetch` to its answer,
// "second request" the next one, on code already compiled. Their gap is what the
// first event compiles and sets up.
// Deno (node_modules/.bin/deno, a fresh `deno eval` per run, as benches/runtimes.mjs
// runs section 3's children): import + instantiate, build the machine, the first
// event, timed inside the process, and the process's wall time; an empty ES module
// is the floor. One discarded run of each first (Deno caches a module graph).
// Medians over --runs; every run's answer is checked (idem "applied", XState a new state).
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { execFileSync } from "node:child_process";
import { parseArgs } from "node:util";
import { Miniflare } from "miniflare";
import { coldChild, coldCode, coldSummary, xstateBundle } from "./cold.mjs";
import { median, ratio, table } from "./measure.mjs";
import * as peers from "./peers.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const LOAD_START = os.loadavg()[0];
const { values: opt } = parseArgs({
  options: {
    runs: { type: "string", default: "9" },
    dir: { type: "string", default: "pkg/dist/lean" },
  },
});
const RUNS = Number(opt.runs);
const LEAN = path.resolve(ROOT, opt.dir);
if (!existsSync(path.join(LEAN, "idem_bg.wasm"))) throw new Error(`no module in ${LEAN}: run scripts/build-wasm.sh`);
const DENO = path.join(ROOT, "node_modules/.bin/deno");
if (!existsSync(DENO)) throw new Error("no node_modules/.bin/deno: npm install");
const log = (msg) => process.stderr.write(`cold-edge: ${msg}\n`);
const tmp = mkdtempSync(path.join(os.tmpdir(), "idem-cold-edge-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

// The bench's machine (benches/idem.rs --emit writes the same file; read here from the
// repository so that this script needs no native build).
const defText = readFileSync(path.join(ROOT, "tests/machines/order.json"), "utf8");
const ev = JSON.stringify(peers.freshEvent());
const xsFile = path.join(tmp, "xstate.min.mjs");
writeFileSync(xsFile, await xstateBundle(ROOT));

// ---- the Workers -----------------------------------------------------------------------
function worker(name, files, source) {
  const dir = path.join(tmp, name);
  mkdirSync(dir);
  for (const f of files) copyFileSync(f, path.join(dir, path.basename(f)));
  writeFileSync(path.join(dir, "worker.mjs"), source);
  return dir;
}
const WORKERS = {
  idem: worker("idem", [path.join(LEAN, "idem.js"), path.join(LEAN, "idem_bg.wasm")], `
    import wasm from "./idem_bg.wasm";
    import { initSync, Machine } from "./idem.js";
    initSync({ module: wasm });
    const DEF = ${JSON.stringify(defText)};
    export default {
      fetch() {
        const o = new Machine(DEF).reduce(null, ${ev}, ${peers.NOW}, "bench");
        return new Response(o.status + " " + o.state);
      },
    };`),
  xstate: worker("xstate", [xsFile], `
    import { createMachine, assign, initialTransition, transition } from "./xstate.min.mjs";
    export default {
      fetch() {
        const order = createMachine((${peers.orderConfig.toString()})(assign));
        const [s0] = initialTransition(order);
        const [s1] = transition(order, s0, ${ev});
        return new Response((s1 !== s0 ? "applied " : "ignored ") + s1.value);
      },
    };`),
  empty: worker("empty", [], `export default { fetch: () => new Response("ok") };`),
};

async function workerdRun(name) {
  const dir = WORKERS[name];
  const t0 = performance.now();
  const mf = new Miniflare({
    modules: true,
    scriptPath: path.join(dir, "worker.mjs"),
    modulesRoot: dir,
    modulesRules: [{ type: "ESModule", include: ["**/*.js", "**/*.mjs"] }, { type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: "2025-09-01",
  });
  try {
    await mf.ready;
    const t1 = performance.now();
    const first = await (await mf.dispatchFetch("http://localhost/")).text();
    const t2 = performance.now();
    const second = await (await mf.dispatchFetch("http://localhost/")).text();
    const t3 = performance.now();
    if (name !== "empty" && !first.startsWith("applied")) throw new Error(`${name} in workerd answered ${first}`);
    if (second !== first) throw new Error(`${name} in workerd: the second answer ${second} is not the first's ${first}`);
    return { start: t1 - t0, first: t2 - t1, second: t3 - t2, result: first };
  } finally {
    await mf.dispose();
  }
}

log(`workerd: ${RUNS} fresh workerd processes per Worker, in turns, after one discarded each`);
const wd = { idem: [], xstate: [], empty: [] };
for (const name of Object.keys(wd)) await workerdRun(name);
for (let i = 0; i < RUNS; i++) for (const name of Object.keys(wd)) wd[name].push(await workerdRun(name));

// ---- Deno ------------------------------------------------------------------------------
log(`Deno: ${RUNS} fresh processes per contender, in turns, after one discarded each`);
const code = coldCode({ defText, xstateFile: xsFile });
const children = { idem: code.idem(path.join(LEAN, "idem.js"), path.join(LEAN, "idem_bg.wasm")), xstate: code.xstate, empty: code.esm };
const dn = { idem: [], xstate: [], empty: [] };
for (const name of Object.keys(dn)) coldChild(children[name], { deno: DENO, cwd: ROOT });
for (let i = 0; i < RUNS; i++) for (const name of Object.keys(dn)) dn[name].push(coldChild(children[name], { deno: DENO, cwd: ROOT }));
for (const name of ["idem", "xstate"]) {
  const bad = dn[name].find((r) => !r.result.startsWith("applied"));
  if (bad) throw new Error(`${name} in Deno answered ${bad.result}`);
}

// ---- report ----------------------------------------------------------------------------
const workerdVersion = JSON.parse(readFileSync(path.join(ROOT, "node_modules/workerd/package.json"), "utf8")).version;
const denoVersion = execFileSync(DENO, ["--version"], { encoding: "utf8" }).split("\n")[0];
const ms = (x) => `${x.toFixed(2)} ms`;
const med = (rs, k) => median(rs.map((r) => r[k]));
const w = Object.fromEntries(Object.entries(wd).map(([k, rs]) => [k, {
  start: med(rs, "start"),
  first: med(rs, "first"),
  second: med(rs, "second"),
  total: median(rs.map((r) => r.start + r.first)),
  extra: median(rs.map((r) => r.first - r.second)),
}]));
const d = Object.fromEntries(Object.entries(dn).map(([k, rs]) => [k, coldSummary(rs)]));

console.log(`## Cold start to the first reduced event — ${new Date().toISOString().slice(0, 10)}\n`);
console.log(`- ${os.cpus().length} × ${os.cpus()[0]?.model ?? "?"}; load average (1 min) at start / end ${LOAD_START.toFixed(1)} / ${os.loadavg()[0].toFixed(1)}; Node ${process.version}.`);
console.log(`- Command: \`node benches/cold-edge.mjs${process.argv.slice(2).length ? " " + process.argv.slice(2).join(" ") : ""}\`; idem: ${path.relative(ROOT, LEAN)}/idem_bg.wasm; medians of ${RUNS} fresh runs each, taken in turns.\n`);
console.log(`### workerd ${workerdVersion} (Miniflare, a new workerd process per run; timed from Node)\n`);
const above = (k, f) => (k === "empty" ? "—" : ms(w[k][f] - w.empty[f]));
console.log(table(["Worker", "start (to ready)", "above empty", "first request", "above empty", "second request", "first − second", "start + first request"],
  ["idem", "xstate", "empty"].map((k) => [k === "xstate" ? "XState bundle" : k === "empty" ? "empty Worker" : "idem lean",
    ms(w[k].start), above(k, "start"), ms(w[k].first), above(k, "first"), ms(w[k].second), ms(w[k].extra), ms(w[k].total)]), ["l"]));
console.log(`\nidem against XState, the first request above the empty Worker's: ${ratio(w.xstate.first - w.empty.first, w.idem.first - w.empty.first)}; start + first request: ${ratio(w.xstate.total, w.idem.total)}\n`);
console.log(`### ${denoVersion} (a fresh \`deno eval\` per run)\n`);
console.log(table(["contender", "to the first event (in process)", "p95", "import + instantiate", "build", "first event", "process wall"],
  ["idem", "xstate", "empty"].map((k) => [k === "xstate" ? "XState bundle" : k === "empty" ? "empty ES module" : "idem lean",
    ms(d[k].medianMs), ms(d[k].p95Ms), ms(d[k].loadMs), ms(d[k].buildMs), ms(d[k].firstMs), ms(d[k].wallMs)]), ["l"]));
console.log(`\nidem against XState in Deno, to the first event: ${ratio(d.xstate.medianMs, d.idem.medianMs)}`);
