#!/usr/bin/env node
// Two builds of the wasm module timed against each other in one process, for
// deciding whether a change pays: both are loaded side by side and their
// `reduce` and `reduceBytes` calls are timed in turns, batch after batch
// (`measureGroup`), so load that comes and goes on a shared machine hits both
// alike. Prints the medians of each round; run it twice with the directories
// swapped, since the order can favour one side by a few per cent.
//
//   cp -r pkg/dist/lean /tmp/a      # before the change (scripts/build-wasm.sh)
//   cp -r pkg/dist/lean /tmp/b      # after it
//   node benches/ab.mjs /tmp/a /tmp/b [--rounds 3] [--sizes 0,100,10000]
//
// --browser: the same, in headless Chromium (IDEM_CHROMIUM, as the e2e tests
// start it; scripts/serve.mjs serves pkg/ at /pkg/, so both directories must be
// under pkg/): `node benches/ab.mjs pkg/dist pkg/dist/lean --browser` is the web
// entry's reduce on the full module against the lean one it loads.
//
// The snapshots are the bench's own (benches/idem.rs --emit: the order machine
// with NOTE events, as benches/run.mjs uses), and every call is a fresh payment
// that must be applied.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { fmtNs, measureGroup } from "./measure.mjs";
import { buildNativeBench } from "./native.mjs";
import { NOW } from "./peers.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: "string", default: "3" },
    sizes: { type: "string", default: "0,100,10000" },
    browser: { type: "boolean", default: false },
  },
});
if (positionals.length !== 2) throw new Error("usage: node benches/ab.mjs DIR_A DIR_B [--rounds 3] [--sizes 0,100,10000] [--browser]");
const sizes = opt.sizes.split(",").map(Number);

// The bench's snapshots, as benches/run.mjs makes them.
const exe = buildNativeBench(ROOT);
const emit = mkdtempSync(path.join(os.tmpdir(), "idem-ab-"));
process.on("exit", () => rmSync(emit, { recursive: true, force: true }));
const made = spawnSync(exe, ["--smoke", "--emit", emit, "--sizes", sizes.join(",")], { encoding: "utf8" });
if (made.status !== 0) throw new Error(`${exe}: exit ${made.status}\n${made.stderr}`);
const definition = readFileSync(path.join(emit, "machine.json"), "utf8");
const snaps = Object.fromEntries(sizes.map((n) => [n, readFileSync(path.join(emit, `idem-${n}.snap`), "utf8")]));
const bytes = Object.fromEntries(sizes.map((n) => [n, new TextEncoder().encode(snaps[n])]));

const fresh = (i) => ({ id: `01JBENCHFRESH${String(i).padStart(13, "0")}`, type: "PAYMENT_PARTIAL", payload: { paymentId: `q-${i}`, amount: 1 } });
const print = (medians, where) => {
  console.log(`A: ${positionals[0]}\nB: ${positionals[1]}\nmedians per round${where} (ledger, snapshot form, side):`);
  for (const [name, ms] of Object.entries(medians)) console.log(`  ${name.padEnd(18)} ${ms.map(fmtNs).join("  ")}`);
};

if (opt.browser) {
  const pkg = path.join(ROOT, "pkg");
  const urls = positionals.map((dir) => {
    const rel = path.relative(pkg, path.resolve(dir));
    if (rel.startsWith("..") || path.isAbsolute(rel)) throw new Error(`--browser: ${dir} is not under pkg/ (served at /pkg/)`);
    return `/pkg/${rel.split(path.sep).join("/")}/`;
  });
  const { startAll } = await import("../tests/e2e/browser.mjs");
  const env = await startAll();
  try {
    const page = await (await env.browser.newContext()).newPage();
    await page.goto(`${env.url}machines/order-robust.json`); // same origin as /pkg/
    const version = env.browser.version();
    const medians = await page.evaluate(
      async ({ urls, definition, snaps, sizes, rounds, NOW, measureSrc, freshSrc }) => {
        const measureGroup = new Function(`return ${measureSrc}`)();
        const fresh = new Function(`return ${freshSrc}`)();
        const machines = {};
        for (const [side, url] of [["A", urls[0]], ["B", urls[1]]]) {
          const glue = await import(`${url}idem.js`);
          await glue.default({ module_or_path: `${url}idem_bg.wasm` });
          machines[side] = new glue.Machine(definition);
        }
        const bytes = Object.fromEntries(sizes.map((n) => [n, new TextEncoder().encode(snaps[n])]));
        const applied = (o) => {
          if (o.status !== "applied") throw new Error(`expected applied, got ${o.status}`);
        };
        const medians = {};
        for (let round = 0; round < rounds; round++) {
          for (const n of sizes) {
            const fns = {};
            for (const [side, m] of Object.entries(machines)) {
              fns[`${n} string ${side}`] = (i) => applied(m.reduce(snaps[n], fresh(i), NOW, "bench"));
              fns[`${n} bytes ${side}`] = (i) => applied(m.reduceBytes(bytes[n], fresh(i), NOW, "bench"));
            }
            // Chromium's clock is coarse (about 0.1 ms): batches of 20 ms, sized from a longer warm-up.
            const timed = measureGroup(fns, { budgetMs: n >= 10_000 ? 1_200 : 600, warmMs: 300, batchMs: 20 });
            for (const [name, r] of Object.entries(timed)) (medians[name] ??= []).push(r.medianNs);
          }
        }
        return medians;
      },
      { urls, definition, snaps, sizes, rounds: Number(opt.rounds), NOW, measureSrc: measureGroup.toString(), freshSrc: fresh.toString() },
    );
    print(medians, ` in Chromium ${version}`);
  } finally {
    await env.close();
  }
  process.exit(0);
}

async function load(dir) {
  const glue = await import(pathToFileURL(path.resolve(dir, "idem.js")).href);
  glue.initSync({ module: readFileSync(path.resolve(dir, "idem_bg.wasm")) });
  return glue;
}
const glues = { A: await load(positionals[0]), B: await load(positionals[1]) };
// A build from before payload schemas refuses the machine's `events`: then
// both sides run the machine without it, so they do the same work.
const accepts = (glue) => {
  try {
    new glue.Machine(definition);
    return true;
  } catch (e) {
    if (e.code === "invalid_definition" && e.path === "events") return false;
    throw e;
  }
};
const shared = Object.values(glues).every(accepts) ? definition : JSON.stringify({ ...JSON.parse(definition), events: undefined });
if (shared !== definition) console.log("one build refuses payload schemas: both run the machine without `events`");
const machines = Object.fromEntries(Object.entries(glues).map(([side, glue]) => [side, new glue.Machine(shared)]));
const applied = (o) => {
  if (o.status !== "applied") throw new Error(`expected applied, got ${o.status}`);
};

const medians = {};
for (let round = 0; round < Number(opt.rounds); round++) {
  for (const n of sizes) {
    const fns = {};
    for (const [side, m] of Object.entries(machines)) {
      fns[`${n} string ${side}`] = (i) => applied(m.reduce(snaps[n], fresh(i), NOW, "bench"));
      fns[`${n} bytes ${side}`] = (i) => applied(m.reduceBytes(bytes[n], fresh(i), NOW, "bench"));
    }
    for (const [name, r] of Object.entries(measureGroup(fns, { budgetMs: n >= 10_000 ? 600 : 300 }))) (medians[name] ??= []).push(r.medianNs);
  }
}
print(medians, "");
