#!/usr/bin/env node
// Where a native round trip's instructions go, counted by callgrind (instruction
// counts do not depend on machine load, so before/after comparisons are exact).
//
//   node benches/profile.mjs [--sizes 0,1000,10000] [--keep DIR]
//
// Builds benches/idem.rs with line tables (target/bench-prof), runs
// `valgrind --tool=callgrind --toggle-collect='*profile_loop*' <bench> --profile N`
// for a fresh event and a duplicate at each ledger size, and splits the
// instructions of one reduce into: JSON text -> serde_json::Value, Value ->
// Snapshot structs, checksums, Snapshot -> JSON text, freeing the decoded
// snapshot, the statechart (macrostep, with its JSONLogic guards and actions),
// the event fingerprint, and the rest (event checks, ledger probe and pruning,
// outbox, the outcome). "JSON total" = text→Value + depth check + Value→structs
// + structs→text: what a format that is not parsed whole on every event removes.
// --keep DIR keeps the callgrind files for `callgrind_annotate --inclusive=yes`.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { table } from "./measure.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { values: opt } = parseArgs({
  options: { sizes: { type: "string", default: "0,1000,10000" }, keep: { type: "string" } },
});
const sizes = opt.sizes.split(",").map((s) => Number(s.replaceAll("_", "")));
const out = opt.keep ?? mkdtempSync(path.join(os.tmpdir(), "idem-prof-"));
mkdirSync(out, { recursive: true });
if (!opt.keep) process.on("exit", () => rmSync(out, { recursive: true, force: true }));

function sh(cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, encoding: "utf8", maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")}: exit ${r.status}\n${r.stderr}`);
  return r.stdout;
}

process.stderr.write("profile: building the bench with line tables (target/bench-prof)\n");
const exe = sh("cargo", ["bench", "--bench", "idem", "--no-run", "--message-format=json"], {
  PATH: `${os.homedir()}/.cargo/bin:${process.env.PATH}`,
  CARGO_TARGET_DIR: path.join(ROOT, "target/bench-prof"),
  CARGO_PROFILE_RELEASE_PANIC: "unwind",
  CARGO_PROFILE_BENCH_DEBUG: "line-tables-only",
  CARGO_PROFILE_BENCH_STRIP: "none",
})
  .split("\n")
  .filter((l) => l.startsWith("{"))
  .map((l) => JSON.parse(l))
  .find((m) => m.reason === "compiler-artifact" && m.target?.name === "idem" && m.target.kind.includes("bench"))?.executable;
if (!exe) throw new Error("cargo did not report the bench executable");

// Inclusive cost of the costliest row matching each pattern (inlined functions
// show up under several file names; the largest row holds all of it).
const CATEGORIES = [
  ["total", /idem::reduce::<impl idem::machine::Machine>::reduce_in\b/],
  ["decode", /idem::snapshot::Snapshot::decode\b/],
  ["parse", /idem::json::parse\b/],
  ["depth", /idem::json::check_depth\b/],
  ["fromValue", /<impl serde_core::de::Deserialize for idem::snapshot::Snapshot>::deserialize$/],
  ["checksum", /idem::json::hash64\b/],
  ["encode", /idem::snapshot::Snapshot::encode\b/],
  ["serialize", /<impl serde_core::ser::Serialize for idem::snapshot::Snapshot>::serialize$/],
  ["drop", /core::ptr::drop_in_place<(idem::snapshot::Snapshot|alloc::vec::Vec<idem::snapshot::LedgerEntry>)>$/],
  ["statechart", /idem::reduce::Run::macrostep$/],
  ["fingerprint", /idem::json::fingerprint$/],
];

function profile(n, dup, iters) {
  const file = path.join(out, `callgrind-${n}${dup ? "-dup" : ""}.out`);
  sh("valgrind", ["--tool=callgrind", "--toggle-collect=*profile_loop*", `--callgrind-out-file=${file}`, exe,
    "--profile", String(n), "--iters", String(iters), ...(dup ? ["--dup"] : [])]);
  const text = sh("callgrind_annotate", ["--inclusive=yes", "--threshold=100", file]);
  const best = Object.fromEntries(CATEGORIES.map(([k]) => [k, 0]));
  for (const line of text.split("\n")) {
    const m = line.match(/^\s*([\d,]+) \([\s\d.]+%\)\s+(.*?)(?: \[[^\]]*\])?\s*$/);
    if (!m) continue;
    const ir = Number(m[1].replaceAll(",", ""));
    for (const [k, re] of CATEGORIES) if (re.test(m[2]) && ir > best[k]) best[k] = ir;
  }
  const per = Object.fromEntries(Object.entries(best).map(([k, v]) => [k, v / iters]));
  return per;
}

const rows = [];
for (const n of sizes) {
  for (const dup of n > 0 ? [false, true] : [false]) {
    const iters = Math.min(200, Math.max(3, Math.round(2e4 / Math.max(n, 100))));
    process.stderr.write(`profile: ledger ${n} ${dup ? "duplicate" : "fresh"} (${iters} round trips under callgrind)\n`);
    const c = profile(n, dup, iters);
    const pct = (x) => `${((100 * x) / c.total).toFixed(1)}%`;
    const parseOnly = c.parse - c.depth;
    const decodeOther = c.decode - c.parse - c.fromValue - c.checksum / (dup ? 1 : 2);
    const rest = c.total - c.decode - c.encode - c.drop - c.statechart - c.fingerprint;
    rows.push([
      n.toLocaleString("en"),
      dup ? "duplicate" : "fresh",
      `${(c.total / 1e6).toFixed(2)} M`,
      pct(parseOnly),
      pct(c.depth),
      pct(c.fromValue),
      pct(c.checksum),
      pct(Math.max(0, decodeOther)),
      pct(c.serialize),
      pct(c.drop),
      pct(c.statechart),
      pct(c.fingerprint),
      pct(rest),
      pct(parseOnly + c.depth + c.fromValue + c.serialize),
    ]);
  }
}
console.log(table(
  ["ledger", "event", "Ir per reduce", "text→Value", "depth check", "Value→structs", "checksums", "decode other", "structs→text", "free snapshot", "statechart", "fingerprint", "rest", "JSON total"],
  rows, ["l", "l"]));
console.log(`\ncallgrind files: ${opt.keep ? out : "(removed; pass --keep DIR to keep them)"}`);
