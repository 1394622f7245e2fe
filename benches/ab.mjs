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
import { NOW } from "./peers.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: "string", default: "3" }, sizes: { type: "string", default: "0,100,10000" } },
});
if (positionals.length !== 2) throw new Error("usage: node benches/ab.mjs DIR_A DIR_B [--rounds 3] [--sizes 0,100,10000]");
const sizes = opt.sizes.split(",").map(Number);

// The bench's snapshots, as benches/run.mjs makes them.
const cargo = spawnSync("cargo", ["bench", "--bench", "idem", "--no-run", "--message-format=json"], {
  cwd: ROOT,
  encoding: "utf8",
  maxBuffer: 1 << 26,
  env: { ...process.env, PATH: `${os.homedir()}/.cargo/bin:${process.env.PATH}`, CARGO_TARGET_DIR: path.join(ROOT, "target/bench"), CARGO_PROFILE_RELEASE_PANIC: "unwind" },
});
const exe = cargo.stdout
  .split("\n")
  .filter((l) => l.startsWith("{"))
  .map((l) => JSON.parse(l))
  .find((m) => m.reason === "compiler-artifact" && m.target?.name === "idem" && m.target.kind.includes("bench"))?.executable;
if (!exe) throw new Error(`cargo did not report the bench executable\n${cargo.stderr}`);
const emit = mkdtempSync(path.join(os.tmpdir(), "idem-ab-"));
process.on("exit", () => rmSync(emit, { recursive: true, force: true }));
const made = spawnSync(exe, ["--smoke", "--emit", emit, "--sizes", sizes.join(",")], { encoding: "utf8" });
if (made.status !== 0) throw new Error(`${exe}: exit ${made.status}\n${made.stderr}`);
const definition = readFileSync(path.join(emit, "machine.json"), "utf8");
const snaps = Object.fromEntries(sizes.map((n) => [n, readFileSync(path.join(emit, `idem-${n}.snap`), "utf8")]));
const bytes = Object.fromEntries(sizes.map((n) => [n, new TextEncoder().encode(snaps[n])]));

async function load(dir) {
  const glue = await import(pathToFileURL(path.resolve(dir, "idem.js")).href);
  glue.initSync({ module: readFileSync(path.resolve(dir, "idem_bg.wasm")) });
  return new glue.Machine(definition);
}
const machines = { A: await load(positionals[0]), B: await load(positionals[1]) };
const fresh = (i) => ({ id: `01JBENCHFRESH${String(i).padStart(13, "0")}`, type: "PAYMENT_PARTIAL", payload: { paymentId: `q-${i}`, amount: 1 } });
const applied = (o) => {
  if (o.status !== "applied") throw new Error(`expected applied, got ${o.status}`);
};

const medians = {};
for (let round = 0; round < Number(opt.rounds); round++) {
  for (const n of sizes) {
    const fns = {};
    for (const [side, m] of Object.entries(machines)) {
      fns[`${n} string ${side}`] = (i) => applied(m.reduce(snaps[n], fresh(i), NOW, ""));
      fns[`${n} bytes ${side}`] = (i) => applied(m.reduceBytes(bytes[n], fresh(i), NOW, ""));
    }
    for (const [name, r] of Object.entries(measureGroup(fns, { budgetMs: n >= 10_000 ? 600 : 300 }))) (medians[name] ??= []).push(r.medianNs);
  }
}
console.log(`A: ${positionals[0]}\nB: ${positionals[1]}\nmedians per round (ledger, snapshot form, side):`);
for (const [name, ms] of Object.entries(medians)) console.log(`  ${name.padEnd(18)} ${ms.map(fmtNs).join("  ")}`);
