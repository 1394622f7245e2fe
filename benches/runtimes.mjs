#!/usr/bin/env node
// The serverless round trip per event (section 2 of benches/run.mjs, fresh events)
// in Node and in Deno: same machine, same snapshots, same lean wasm module, same
// timing code, each runtime with its own V8. Prints one markdown table.
//
//   node benches/runtimes.mjs [--sizes 0,100,1000] [--rounds 5] [--budget-ms 400]
//                             [--cold-runs 11] [--deno PATH] [--json FILE]
//
// Builds the native bench (benches/native.mjs) and has it write the machine and
// idem's snapshots (--smoke --emit DIR, as benches/profile.mjs does); writes the
// peers' stored texts of the same NOTE events; then runs benches/runtimes-child.mjs
// under node and under `deno run --allow-all`, one process at a time, alternating
// which goes first, --rounds times each, and prints the medians over the rounds.
// Every child's one-call outcomes are checked: applied, the same revision, state
// and context for XState, the JS reducer and idem, in both runtimes.
// Then the cold start of section 3 (import + instantiate, build the machine, first
// event, in a fresh process) in each runtime: idem lean, XState's bundle and an
// empty ES module, --cold-runs fresh processes each, interleaved, after one
// discarded run of each (Deno caches a module graph on its first run).
// Needs pkg/dist/lean (scripts/build-wasm.sh) and Deno (node_modules/.bin/deno
// after npm install, or --deno PATH, or deno on the PATH).
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { canon, fmtNs, median, ratio, table } from "./measure.mjs";
import { coldChild, coldCode, coldSummary, xstateBundle } from "./cold.mjs";
import { writeInputs } from "./native.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const LOAD_START = os.loadavg()[0];
const { values: opt } = parseArgs({
  options: {
    sizes: { type: "string", default: "0,100,1000" },
    rounds: { type: "string", default: "5" },
    "budget-ms": { type: "string", default: "400" },
    "cold-runs": { type: "string", default: "11" },
    deno: { type: "string" },
    json: { type: "string" },
  },
});
const SIZES = opt.sizes.split(",").map((s) => Number(s.replaceAll("_", "")));
const ROUNDS = Number(opt.rounds);
const BUDGET = Number(opt["budget-ms"]);
const log = (msg) => process.stderr.write(`runtimes: ${msg}\n`);
const tmp = mkdtempSync(path.join(os.tmpdir(), "idem-runtimes-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

const LEAN = path.join(ROOT, "pkg/dist/lean");
if (!existsSync(path.join(LEAN, "idem_bg.wasm"))) throw new Error("no pkg/dist/lean/idem_bg.wasm: run scripts/build-wasm.sh");
const localDeno = path.join(ROOT, "node_modules/.bin/deno");
const DENO = opt.deno ?? (existsSync(localDeno) ? localDeno : "deno");

log(`building the native bench, then writing the machine and snapshots (ledger ${SIZES.join(", ")})`);
await writeInputs(ROOT, tmp, SIZES);

const CHILD = path.join(ROOT, "benches/runtimes-child.mjs");
const childArgs = JSON.stringify({ dir: tmp, sizes: SIZES, budgetMs: BUDGET });
const RUNTIMES = {
  node: [process.execPath, [CHILD, childArgs]],
  deno: [DENO, ["run", "--allow-all", CHILD, childArgs]],
};
function runChild(name) {
  const [cmd, args] = RUNTIMES[name];
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: "utf8", maxBuffer: 1 << 26 });
  if (r.status !== 0) {
    process.stderr.write(r.stderr ?? "");
    throw new Error(`${name}: ${cmd} ${args.slice(0, -1).join(" ")} exited with ${r.status}${r.error ? ` (${r.error.message})` : ""}`);
  }
  return JSON.parse(r.stdout);
}

// The one-call outcomes: every engine applied the fresh event and agrees on
// revision, state and context (ledger: n + 1 entries), and the runtimes agree
// byte for byte on the texts' lengths.
let reference = null;
function check(res) {
  for (const row of res.rows) {
    const n = row.ledger;
    const c = row.check;
    for (const [k, o] of Object.entries(c)) {
      if (o.status !== "applied") throw new Error(`${res.runtime}, ledger ${n}: ${k} ${o.status}, not applied`);
      const want = canon({ ...c.idem.view, ledger: n + 1 });
      if (canon(o.view) !== want) throw new Error(`${res.runtime}, ledger ${n}: ${k} ${canon(o.view)} vs ${want}`);
      if (canon(o.response) !== canon(c.idem.response)) throw new Error(`${res.runtime}, ledger ${n}: ${k} responses differ`);
    }
  }
  const mine = canon(res.rows.map((r) => r.check));
  reference ??= mine;
  if (mine !== reference) throw new Error(`${res.runtime}: outcomes differ from the first child's`);
}

const runs = { node: [], deno: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const name of r % 2 === 0 ? ["node", "deno"] : ["deno", "node"]) {
    log(`round ${r + 1} of ${ROUNDS}: ${name}`);
    const res = runChild(name);
    check(res);
    runs[name].push(res);
  }
}

// Cold starts: each runtime, each contender, fresh processes in turns.
const COLD_RUNS = Number(opt["cold-runs"]);
const xstateFile = path.join(tmp, "xstate.min.mjs");
writeFileSync(xstateFile, await xstateBundle(ROOT));
const code = coldCode({ defText: readFileSync(path.join(tmp, "machine.json"), "utf8"), xstateFile });
const COLD = {
  idem: code.idem(path.join(LEAN, "idem.js"), path.join(LEAN, "idem_bg.wasm")),
  xstate: code.xstate,
  esm: code.esm,
};
const coldOf = (name, c) => coldChild(c, { deno: name === "deno" ? DENO : null, cwd: ROOT });
const coldRuns = { node: {}, deno: {} };
log(`cold starts: ${COLD_RUNS} fresh processes per contender and runtime`);
for (const name of ["node", "deno"]) {
  for (const [k, c] of Object.entries(COLD)) {
    coldOf(name, c);
    coldRuns[name][k] = [];
  }
}
for (let i = 0; i < COLD_RUNS; i++) {
  for (const name of i % 2 === 0 ? ["node", "deno"] : ["deno", "node"]) {
    for (const [k, c] of Object.entries(COLD)) coldRuns[name][k].push(coldOf(name, c));
  }
}
const cold = {};
for (const name of ["node", "deno"]) {
  cold[name] = Object.fromEntries(Object.entries(coldRuns[name]).map(([k, rs]) => [k, coldSummary(rs)]));
  for (const k of ["idem", "xstate"]) {
    if (!cold[name][k].result.startsWith("applied")) throw new Error(`${name} cold start, ${k}: ${cold[name][k].result}`);
  }
}

const KEYS = ["xstate", "js", "wasm", "resident"];
// Per runtime and ledger size, each contender's median over the rounds (of the
// per-round medians), and their range.
const summary = {};
for (const [name, rs] of Object.entries(runs)) {
  summary[name] = {
    version: rs[0].version,
    v8: rs[0].v8,
    rows: SIZES.map((n, i) => {
      const row = { ledger: n, bytes: rs[0].rows[i].bytes };
      for (const k of KEYS) row[k] = median(rs.map((x) => x.rows[i].time[k].medianNs));
      row.range = {};
      for (const k of KEYS) {
        const xs = rs.map((x) => x.rows[i].time[k].medianNs);
        row.range[k] = [Math.min(...xs), Math.max(...xs)];
      }
      return row;
    }),
  };
}

const sh = (cmd, args) => {
  try {
    return execFileSync(cmd, args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "?";
  }
};
const cpus = os.cpus();
const commit = sh("git", ["rev-parse", "--short", "HEAD"]);
const info = {
  date: new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC",
  machine: `${cpus[0]?.model ?? "?"} × ${cpus.length} (${os.availableParallelism()} available), ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()} ${os.arch()}`,
  node: `Node v${summary.node.version} (V8 ${summary.node.v8})`,
  deno: `Deno ${summary.deno.version} (V8 ${summary.deno.v8})`,
  xstate: JSON.parse(readFileSync(path.join(ROOT, "node_modules/xstate/package.json"), "utf8")).version,
  idem: runs.node[0].idem,
  commit: commit === "?" ? "an unknown commit" : commit + (sh("git", ["status", "--porcelain", "--", "src"]) ? " (src modified)" : ""),
  load: [LOAD_START, os.loadavg()[0]],
};

const short = (name) => `${name === "node" ? "Node" : "Deno"} ${summary[name].version} (V8 ${summary[name].v8.split(".").slice(0, 2).join(".")})`;
const rows = [];
for (let i = 0; i < SIZES.length; i++) {
  for (const name of ["node", "deno"]) {
    const s = summary[name].rows[i];
    rows.push([
      SIZES[i].toLocaleString("en"),
      short(name),
      fmtNs(s.xstate),
      fmtNs(s.js),
      fmtNs(s.wasm),
      ratio(s.xstate, s.wasm),
      ratio(s.js, s.wasm),
      fmtNs(s.resident),
      ratio(s.xstate, s.resident),
      ratio(s.js, s.resident),
    ]);
  }
}
console.log(`## Round trip per event in Node and in Deno — ${info.date}`);
console.log("");
console.log(`- Machine: ${info.machine}; ${info.node}; ${info.deno}; XState ${info.xstate}; idem ${info.idem} at ${info.commit}.`);
console.log(`- Load average (1 min) at start / end: ${info.load[0].toFixed(1)} / ${info.load[1].toFixed(1)} (the machine is shared; medians resist it, p95s do not).`);
console.log(`- Command: \`node benches/runtimes.mjs${process.argv.slice(2).length ? " " + process.argv.slice(2).join(" ") : ""}\`. ${ROUNDS} round${ROUNDS === 1 ? "" : "s"} per runtime, one process at a time, alternating; medians of the rounds' medians. idem lean module (pkg/dist/lean) in both.`);
console.log("");
console.log(table(
  ["ledger", "runtime", "XState", "JS reducer", "idem wasm", "wasm vs XState", "wasm vs JS", "wasm resident", "resident vs XState", "resident vs JS"],
  rows, ["l", "l"]));
console.log("");
console.log("A fresh event, stored text in → outcome + text out, as section 2 of `node benches/run.mjs`: idem wasm decodes the stored text on every call (the process id rotates over 16 ids); wasm resident is a warm host handing back the snapshot the engine gave it.");
if (ROUNDS > 1) {
  console.log("");
  console.log("Range of the rounds' medians (one process each):");
  console.log("");
  const names = { xstate: "XState", js: "JS reducer", wasm: "idem wasm", resident: "wasm resident" };
  for (let i = 0; i < SIZES.length; i++) {
    for (const name of ["node", "deno"]) {
      const r = summary[name].rows[i].range;
      console.log(`- ledger ${SIZES[i].toLocaleString("en")}, ${short(name)}: ` + KEYS.map((k) => `${names[k]} ${fmtNs(r[k][0])} to ${fmtNs(r[k][1])}`).join(", "));
    }
  }
}

const ms = (x) => `${x.toFixed(2)} ms`;
const coldRows = [];
for (const name of ["node", "deno"]) {
  const c = cold[name];
  const cells = (s) => [ms(s.medianMs), ms(s.p95Ms), ms(s.loadMs), ms(s.buildMs), ms(s.firstMs), `${s.wallMs.toFixed(1)} ms`];
  coldRows.push([short(name), "idem lean (edge hosts)", ...cells(c.idem)]);
  coldRows.push([short(name), `XState ${info.xstate} createMachine+transition (esbuild --minify)`, ...cells(c.xstate)]);
  coldRows.push([short(name), "an empty ES module (the floor of any import)", ...cells(c.esm).slice(0, 3), "", "", cells(c.esm)[5]]);
}
console.log("");
console.log(`### Cold start in each runtime (${COLD_RUNS} fresh processes each, interleaved)`);
console.log("");
console.log(table(["runtime", "", "cold start median", "p95", "load + instantiate", "build machine", "first event", "process wall"], coldRows, ["l", "l"]));
console.log("");
console.log("As section 3 of `node benches/run.mjs`: measured inside the child (`node --input-type=module -e`, `deno eval`) from before the import to after the first event; process wall is spawn to exit. One discarded run of each contender before the timed ones.");
if (opt.json) writeFileSync(opt.json, JSON.stringify({ info, summary, runs, cold, coldRuns }, null, 2));
