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
// show up under several file names; the largest row holds all of it). The
// patterns name functions of both wire formats; one that does not exist counts 0.
const CATEGORIES = [
  ["total", /idem::reduce::<impl idem::machine::Machine>::reduce_in$/],
  ["decode", /idem::snapshot::Snapshot::decode$/],
  ["jsonParse", /idem::json::parse$/],
  ["fromValue", /<impl serde_core::de::Deserialize for idem::snapshot::Snapshot>::deserialize$/],
  ["checksum", /idem::json::hash64$/],
  ["encode", /idem::snapshot::Snapshot::encode$/],
  ["serialize", /<impl serde_core::ser::Serialize for idem::snapshot::Snapshot>::serialize$/],
  ["drop", /core::ptr::drop_in_place<(idem::snapshot::Snapshot|alloc::vec::Vec<idem::snapshot::LedgerEntry>)>$/],
  ["statechart", /idem::reduce::Run::macrostep$/],
  ["fingerprint", /idem::json::fingerprint$/],
];
const ROW = /^\s*([\d,]+) \([\s\d.]+%\)\s+(.*?)(?: \[[^\]]*\])?\s*$/;
const fnName = (row) => row.replace(/^.*?\.(rs|c|S|h):/, "").replace(/^\?\?\?:/, "");

function profile(n, dup, iters) {
  const file = path.join(out, `callgrind-${n}${dup ? "-dup" : ""}.out`);
  sh("valgrind", ["--tool=callgrind", "--toggle-collect=*profile_loop*", `--callgrind-out-file=${file}`, exe,
    "--profile", String(n), "--iters", String(iters), ...(dup ? ["--dup"] : [])]);
  const best = Object.fromEntries(CATEGORIES.map(([k]) => [k, 0]));
  for (const line of sh("callgrind_annotate", ["--auto=no", "--inclusive=yes", "--threshold=100", file]).split("\n")) {
    const m = line.match(ROW);
    if (!m) continue;
    const ir = Number(m[1].replaceAll(",", ""));
    const name = fnName(m[2]);
    for (const [k, re] of CATEGORIES) if (re.test(name) && ir > best[k]) best[k] = ir;
  }
  // Self cost by function (summed over the file names inlining spreads it across).
  const self = new Map();
  for (const line of sh("callgrind_annotate", ["--auto=no", "--threshold=100", file]).split("\n")) {
    const m = line.match(ROW);
    if (!m || /PROGRAM TOTALS/.test(m[2])) continue;
    const name = fnName(m[2]);
    self.set(name, (self.get(name) ?? 0) + Number(m[1].replaceAll(",", "")));
  }
  const per = Object.fromEntries(Object.entries(best).map(([k, v]) => [k, v / iters]));
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
    const pct = (x) => `${((100 * x) / c.total).toFixed(1)}%`;
    const json = c.jsonParse + c.fromValue + c.serialize;
    const rest = c.total - c.decode - c.encode - c.drop - c.statechart - c.fingerprint;
    const label = [n.toLocaleString("en"), dup ? "duplicate" : "fresh"];
    rows.push([...label, `${(c.total / 1e6).toFixed(2)} M`, pct(c.decode), pct(c.encode), pct(c.checksum), pct(json),
      pct(c.drop), pct(c.statechart), pct(c.fingerprint), pct(rest)]);
    tops.push([...label, c.top.map(([name, ir]) => `\`${name.length > 90 ? name.slice(0, 87) + "..." : name}\` ${pct(ir)}`).join("<br>")]);
  }
}
console.log(table(
  ["ledger", "event", "Ir per reduce", "decode", "encode", "checksums (in both)", "JSON parse+write (in both)", "free snapshot", "statechart", "fingerprint", "rest"],
  rows, ["l", "l"]));
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
process.stderr.write("profile: wasm from JS vs the boundary copies (timed, so load-dependent)\n");
sh(exe, ["--smoke", "--emit", out, "--sizes", sizes.join(",")]);
// The lean module (what edge hosts load) when scripts/build-wasm.sh made one.
const wasmDir = [path.join(ROOT, "pkg/dist/lean"), path.join(ROOT, "pkg/dist")].find((d) => existsSync(path.join(d, "idem_bg.wasm")));
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
  const next = m.reduce(snap, fresh, peers.NOW, "").snapshot;
  const buf = new Uint8Array(snap.length * 3 + 16);
  const outBytes = enc.encode(next);
  const wasm = measure(() => m.reduce(snap, fresh, peers.NOW, ""), o).medianNs;
  const copyIn = measure(() => glueCopyIn(snap, buf), o).medianNs;
  const bytesIn = measure(() => enc.encodeInto(snap, buf), o).medianNs;
  const copyOut = measure(() => dec.decode(outBytes), o).medianNs;
  wrows.push([n.toLocaleString("en"), fmtNs(wasm), fmtNs(copyIn), fmtNs(copyOut), `${((100 * (copyIn + copyOut)) / wasm).toFixed(1)}%`, fmtNs(bytesIn)]);
}
console.log("");
console.log(table(["ledger", "wasm reduce (fresh)", "string in (glue's char loop)", "string out (TextDecoder)", "boundary share", "bytes in (encodeInto), for comparison"], wrows, ["l"]));
