#!/usr/bin/env node
// Where a native round trip's instructions go, counted by callgrind (instruction
// counts do not depend on machine load, so before/after comparisons are exact).
//
//   node benches/profile.mjs [--sizes 0,1000,10000] [--keep DIR]
//
// Builds benches/idem.rs with line tables (target/bench-prof), runs
// `valgrind --tool=callgrind --toggle-collect='*profile_loop*' <bench> --profile N`
// for a fresh event and a duplicate at each ledger size, and splits the
// instructions of one reduce into: decoding the snapshot text, encoding the new
// one, the checksums (inside both), JSON parsing and writing (inside both:
// text -> serde_json::Value -> Snapshot structs and back), freeing the decoded
// snapshot, the statechart (macrostep, with its JSONLogic guards and actions),
// the event fingerprint, and the rest (event checks, ledger probe and pruning,
// outbox, the outcome); then lists the costliest functions by self cost.
// --keep DIR keeps the callgrind files for `callgrind_annotate --inclusive=yes`.
// Then it times the wasm round trip from JS against the cost of copying the
// snapshot string across the boundary (needs pkg/dist: scripts/build-wasm.sh).
// benches/wasm-profile.mjs samples the wasm round trip itself by function.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { fmtNs, measure, table } from "./measure.mjs";
import { buildNativeBench } from "./native.mjs";

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
const exe = buildNativeBench(ROOT, {
  targetDir: "target/bench-prof",
  env: { CARGO_PROFILE_BENCH_DEBUG: "line-tables-only", CARGO_PROFILE_BENCH_STRIP: "none" },
});

// Inclusive cost of each category: for every pattern, the costliest row whose
// function name matches (inlined code shows up under several file names, and
// the row naming the function's own file holds all of it), summed over the
// patterns of the category (distinct functions). A function that the compiler
// inlined into its caller has no row of its own and counts 0: the table then
// prints "n/a" for it rather than a share that only looks precise.
// The total is `profile_loop` (only it is collected: --toggle-collect), that is
// reduce plus dropping its outcome, as the callgrind file's totals say.
// `named("Snapshot::decode")` matches the function wherever its module puts
// it: `idem::snapshot::Snapshot::decode`, `idem::snapshot::format::<impl
// idem::snapshot::Snapshot>::decode`; `named("parse_head")` a free function in any module.
const named = (path) => {
  const parts = path.split("::");
  const fn = parts.pop();
  const mods = String.raw`(?:[\w]+::)*`;
  const owner = parts.length ? String.raw`(?:${parts.join("::")}|<impl ${mods}${parts.join("::")}>)::` : "";
  return new RegExp(`^${mods}${owner}${fn}$`);
};
const CATEGORIES = {
  total: [/^idem::profile_loop$/],
  // Snapshot::decode: checksum, the head's JSON -> Value -> Head, the ledger's records.
  decode: [named("Snapshot::decode")],
  // Reading the head (inside decode): field by field, or through serde_json when it is laid out otherwise.
  jsonParse: [named("parse_head"), named("read_head")],
  // Snapshot::encode: the head as JSON, the ledger copied, checksum.
  encode: [named("Snapshot::encode"), named("Snapshot::encode_split"), named("Machine::encode_within_limit")],
  // The checksum stream (xxh3), on the way in and out.
  checksum: [named("hash64"), /^xxhash_rust::xxh3::xxh3_stateful_consume_stripes$/, /^xxhash_rust::xxh3::Xxh3::digest$/],
  // The decoded snapshot and the outcome, freed after the reduce.
  drop: [/^core::ptr::drop_in_place<idem::snapshot::(\w+::)*(Loaded|Snapshot)>$/, /^core::ptr::drop_in_place<idem::(\w+::)*Outcome>$/],
  statechart: [named("Run::macrostep")],
  // The fingerprint, computed with the payload size check (inside the event checks).
  fingerprint: [named("fingerprint"), named("fingerprint_sized"), named("fingerprint_digits")],
  // Recording the event in the ledger: `remember` (append the record, prune,
  // compact), or its parts when it was inlined (the larger of the two is kept).
  ledger: [named("Machine::remember")],
  ledgerParts: [named("Ledger::push"), named("Ledger::prune"), named("Ledger::compact_if_sparse")],
  // Event checks (types, limits, payload size and depth).
  event: ["parse_event", "take_event", "take_fields", "check_event", "check_payload"].map((f) => named(`Machine::${f}`)),
};
const ROW = /^\s*([\d,]+) \([\s\d.]+%\)\s+(.*?)(?: \[[^\]]*\])?\s*$/;
const fnName = (row) => row.replace(/^.*?\.(rs|c|S|h):/, "").replace(/^\?\?\?:/, "");

function profile(n, dup, iters) {
  const file = path.join(out, `callgrind-${n}${dup ? "-dup" : ""}.out`);
  sh("valgrind", ["--tool=callgrind", "--toggle-collect=*profile_loop*", `--callgrind-out-file=${file}`, exe,
    "--profile", String(n), "--iters", String(iters), ...(dup ? ["--dup"] : [])]);
  const best = Object.fromEntries(Object.entries(CATEGORIES).map(([k, pats]) => [k, pats.map(() => 0)]));
  let programTotal = 0;
  for (const line of sh("callgrind_annotate", ["--auto=no", "--inclusive=yes", "--threshold=100", file]).split("\n")) {
    const m = line.match(ROW);
    if (!m) continue;
    const ir = Number(m[1].replaceAll(",", ""));
    if (/PROGRAM TOTALS/.test(m[2])) {
      programTotal = ir;
      continue;
    }
    const name = fnName(m[2]);
    for (const [k, pats] of Object.entries(CATEGORIES)) {
      pats.forEach((re, i) => {
        if (re.test(name) && ir > best[k][i]) best[k][i] = ir;
      });
    }
  }
  const sum = Object.fromEntries(Object.entries(best).map(([k, v]) => [k, v.reduce((a, b) => a + b, 0)]));
  if (!sum.total) sum.total = programTotal;
  sum.ledger = Math.max(sum.ledger, sum.ledgerParts);
  if (!sum.total) throw new Error(`${file}: no instructions counted (did --toggle-collect match profile_loop?)`);
  // Self cost by function (summed over the file names inlining spreads it across).
  const self = new Map();
  for (const line of sh("callgrind_annotate", ["--auto=no", "--threshold=100", file]).split("\n")) {
    const m = line.match(ROW);
    if (!m || /PROGRAM TOTALS/.test(m[2])) continue;
    const name = fnName(m[2]);
    self.set(name, (self.get(name) ?? 0) + Number(m[1].replaceAll(",", "")));
  }
  const per = Object.fromEntries(Object.entries(sum).map(([k, v]) => [k, v / iters]));
  per.top = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([name, ir]) => [name, ir / iters]);
  return per;
}

const rows = [];
const tops = [];
for (const n of sizes) {
  for (const dup of n > 0 ? [false, true] : [false]) {
    const iters = Math.min(200, Math.max(3, Math.round(2e4 / Math.max(n, 100))));
    process.stderr.write(`profile: ledger ${n} ${dup ? "duplicate" : "fresh"} (${iters} round trips under callgrind)\n`);
    const c = profile(n, dup, iters);
    const pct = (x) => (x > 0 ? `${((100 * x) / c.total).toFixed(1)}%` : "n/a");
    const rest = c.total - c.decode - c.encode - c.drop - c.statechart - c.ledger - c.event;
    const label = [n.toLocaleString("en"), dup ? "duplicate" : "fresh"];
    rows.push([...label, Math.round(c.total).toLocaleString("en"), pct(c.decode), pct(c.jsonParse), pct(c.encode),
      pct(c.checksum), pct(c.drop), pct(c.statechart), pct(c.fingerprint), pct(c.ledger), pct(c.event), pct(rest)]);
    tops.push([...label, c.top.map(([name, ir]) => `\`${name.length > 90 ? name.slice(0, 87) + "..." : name}\` ${pct(ir)}`).join("<br>")]);
  }
}
console.log(table(
  ["ledger", "event", "Ir per reduce", "decode", "head read (in decode)", "encode", "checksums (in both)",
    "free snapshot + outcome", "statechart", "fingerprint (in event checks)", "ledger record (push, prune)", "event checks", "rest"],
  rows, ["l", "l"]));
console.log("");
console.log("rest: the ledger probe for the event id (Ledger::find, inlined into reduce_event), the outcome and the");
console.log("new snapshot's fields (state value, response, outbox), the machine checks of snapshot::load, the event");
console.log("checks when they are inlined (\"n/a\" in their column), allocation around them.");
console.log("");
console.log("Costliest functions by self cost (instructions in the function body, inlined callees included):");
console.log("");
console.log(table(["ledger", "event", "top functions, share of the reduce"], tops, ["l", "l", "l"]));
console.log(`\ncallgrind files: ${opt.keep ? out : "(removed; pass --keep DIR to keep them)"}`);

// The same round trip through wasm from JS, against what crossing the boundary
// costs on its own. wasm-bindgen copies a string argument into wasm memory one
// char at a time while it is ASCII (passStringToWasm0: a charCodeAt loop, then
// encodeInto for the rest) and returns a string through TextDecoder.decode;
// both are reproduced here on the same strings, next to what copying bytes
// costs (TextEncoder.encodeInto, as a Uint8Array argument or a resident
// snapshot would allow).
function glueCopyIn(str, mem) {
  let offset = 0;
  for (; offset < str.length; offset++) {
    const code = str.charCodeAt(offset);
    if (code > 0x7f) break;
    mem[offset] = code;
  }
  if (offset !== str.length) new TextEncoder().encodeInto(str.slice(offset), mem.subarray(offset));
  return offset;
}
// The lean module (what edge hosts load) when scripts/build-wasm.sh made one.
const wasmDir = [path.join(ROOT, "pkg/dist/lean"), path.join(ROOT, "pkg/dist")].find((d) => existsSync(path.join(d, "idem_bg.wasm")));
if (!wasmDir) {
  console.log("\nwasm: no pkg/dist/idem_bg.wasm (scripts/build-wasm.sh builds it), so the wasm timing is skipped");
  process.exit(0);
}
process.stderr.write("profile: wasm from JS vs the boundary copies (timed, so load-dependent)\n");
sh(exe, ["--smoke", "--emit", out, "--sizes", sizes.join(",")]);
const glue = await import(pathToFileURL(path.join(wasmDir, "idem.js")).href);
glue.initSync({ module: readFileSync(path.join(wasmDir, "idem_bg.wasm")) });
const { Machine } = glue;
console.log(`\nwasm: ${path.relative(ROOT, wasmDir)}/idem_bg.wasm`);
const peers = await import("./peers.mjs");
const m = new Machine(readFileSync(path.join(out, "machine.json"), "utf8"));
const enc = new TextEncoder();
const dec = new TextDecoder();
const wrows = [];
for (const n of sizes) {
  const snap = readFileSync(path.join(out, `idem-${n}.snap`), "utf8");
  const o = { budgetMs: 300, maxSamples: n >= 10_000 ? 40 : 1000 };
  const fresh = peers.freshEvent();
  const next = m.reduce(snap, fresh, peers.NOW, "bench").snapshot;
  const buf = new Uint8Array(snap.length * 3 + 16);
  const outBytes = enc.encode(next);
  const wasm = measure(() => m.reduce(snap, fresh, peers.NOW, "bench"), o).medianNs;
  const copyIn = measure(() => glueCopyIn(snap, buf), o).medianNs;
  const bytesIn = measure(() => enc.encodeInto(snap, buf), o).medianNs;
  const copyOut = measure(() => dec.decode(outBytes), o).medianNs;
  wrows.push([n.toLocaleString("en"), fmtNs(wasm), fmtNs(copyIn), fmtNs(copyOut), `${((100 * (copyIn + copyOut)) / wasm).toFixed(1)}%`, fmtNs(bytesIn)]);
}
console.log("");
console.log(table(["ledger", "wasm reduce (fresh)", "string in (glue's char loop)", "string out (TextDecoder)", "boundary share", "bytes in (encodeInto), for comparison"], wrows, ["l"]));
