#!/usr/bin/env node
// Where the wasm round trip's time goes, seen from V8's sampling profiler.
//
//   node benches/wasm-profile.mjs [--sizes 1000,10000] [--seconds 3] [--dup | --resident] [--top 14]
//
// Builds the lean engine (--no-default-features, as scripts/build-wasm.sh does)
// with its function names kept (rustc without strip, wasm-opt -Oz -g) into
// target/wasm-prof, loads it through the same wasm-bindgen glue, reduces a fresh
// event (or a duplicate with --dup) against a snapshot of N ledger entries for a
// few seconds under the inspector's CPU profiler (with --resident: a warm host's chain of
// fresh NOTE events, each on the snapshot the previous one returned, restarted from
// the stored one every max(50, n/20) events, as benches/run.mjs times it), and prints
// self time by function:
// Rust functions by name, and the JavaScript side (the glue's string copies,
// JSON.parse of the outcome, the harness loop). Sampled, so load-dependent;
// benches/profile.mjs gives exact native instruction counts.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Session } from "node:inspector/promises";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { table } from "./measure.mjs";
import * as peers from "./peers.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { values: opt } = parseArgs({
  options: {
    sizes: { type: "string", default: "1000,10000" },
    seconds: { type: "string", default: "3" },
    top: { type: "string", default: "14" },
    dup: { type: "boolean", default: false },
    resident: { type: "boolean", default: false },
  },
});
const sizes = opt.sizes.split(",").map((s) => Number(s.replaceAll("_", "")));
const tmp = mkdtempSync(path.join(os.tmpdir(), "idem-wasmprof-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
const env = { ...process.env, PATH: `${os.homedir()}/.cargo/bin:${process.env.PATH}` };

function sh(cmd, args, extra = {}) {
  const r = spawnSync(cmd, args, { cwd: ROOT, env: { ...env, ...extra }, encoding: "utf8", maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")}: exit ${r.status}\n${r.stderr}`);
  return r.stdout;
}

// 1. The lean module with names.
process.stderr.write("wasm-profile: building the lean module with function names (target/wasm-prof)\n");
const target = path.join(ROOT, "target/wasm-prof");
// The same rustc arguments as scripts/build-wasm.sh gives the lean module (LEAN_RUSTC_ARGS).
const leanRustcArgs = /^LEAN_RUSTC_ARGS="([^"]*)"$/m.exec(readFileSync(path.join(ROOT, "scripts/build-wasm.sh"), "utf8"))?.[1];
if (leanRustcArgs === undefined) throw new Error("scripts/build-wasm.sh sets no LEAN_RUSTC_ARGS");
const leanWasmOptArgs = /^LEAN_WASM_OPT_ARGS="([^"]*)"$/m.exec(readFileSync(path.join(ROOT, "scripts/build-wasm.sh"), "utf8"))?.[1];
if (leanWasmOptArgs === undefined) throw new Error("scripts/build-wasm.sh sets no LEAN_WASM_OPT_ARGS");
sh("cargo", ["rustc", "--lib", "--profile", "release-lean", "--target", "wasm32-unknown-unknown", "--no-default-features", "--", ...leanRustcArgs.split(" ").filter(Boolean)], {
  CARGO_TARGET_DIR: target,
  CARGO_PROFILE_RELEASE_LEAN_STRIP: "none",
});
const dist = path.join(target, "dist");
mkdirSync(dist, { recursive: true });
sh("wasm-bindgen", ["--target", "web", "--out-dir", dist, "--out-name", "idem", path.join(target, "wasm32-unknown-unknown/release-lean/idem.wasm")]);
sh(path.join(ROOT, "node_modules/.bin/wasm-opt"), ["-Oz", "--low-memory-unused", ...leanWasmOptArgs.split(" ").filter(Boolean), "-g",
  "--enable-bulk-memory", "--enable-nontrapping-float-to-int", "--enable-sign-ext",
  "--enable-mutable-globals", "--enable-reference-types", "--enable-multivalue",
  path.join(dist, "idem_bg.wasm"), "-o", path.join(dist, "idem_bg.wasm")]);

// 2. Snapshots from the native bench (it writes the bench machine and idem-<N>.snap).
process.stderr.write("wasm-profile: building the native bench for its snapshots (target/bench)\n");
const exe = sh("cargo", ["bench", "--bench", "idem", "--no-run", "--message-format=json"], {
  CARGO_TARGET_DIR: path.join(ROOT, "target/bench"),
  CARGO_PROFILE_RELEASE_PANIC: "unwind",
})
  .split("\n")
  .filter((l) => l.startsWith("{"))
  .map((l) => JSON.parse(l))
  .find((m) => m.reason === "compiler-artifact" && m.target?.name === "idem" && m.target.kind.includes("bench"))?.executable;
sh(exe, ["--smoke", "--emit", tmp, "--sizes", sizes.join(",")]);

const glue = await import(pathToFileURL(path.join(dist, "idem.js")).href);
glue.initSync({ module: readFileSync(path.join(dist, "idem_bg.wasm")) });
const m = new glue.Machine(readFileSync(path.join(tmp, "machine.json"), "utf8"));

const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.setSamplingInterval", { interval: 100 });

const rows = [];
for (const n of sizes) {
  const file = path.join(tmp, `idem-${n}.snap`);
  if (!existsSync(file)) throw new Error(`no snapshot for ${n}`);
  const snap = readFileSync(file, "utf8");
  const ev = opt.dup && n > 0 ? peers.noteEvent(peers.dupIndex(n)) : peers.freshEvent();
  const want = opt.dup && n > 0 ? "duplicate" : "applied";
  const chain = Math.max(50, Math.floor(n / 20));
  let [hot, k] = [snap, 0];
  const call = opt.resident
    ? () => {
      if (k === chain) [hot, k] = [snap, 0];
      const out = m.reduce(hot, peers.noteEvent(n + 1 + k++), peers.NOW, "hot");
      hot = out.snapshot;
      return out;
    }
    : () => m.reduce(snap, ev, peers.NOW, "bench");
  // Warm up past V8's baseline tier, then profile.
  const warmEnd = performance.now() + 1500;
  while (performance.now() < warmEnd) call();
  if (call().status !== want) throw new Error(`expected ${want}`);
  await session.post("Profiler.start");
  const end = performance.now() + Number(opt.seconds) * 1000;
  let calls = 0;
  while (performance.now() < end) {
    call();
    calls++;
  }
  const { profile } = await session.post("Profiler.stop");
  const total = profile.samples.length;
  const self = new Map();
  for (const node of profile.nodes) {
    const f = node.callFrame;
    // Rust symbol hashes and crate disambiguators only make names longer.
    let name = (f.functionName || "(anonymous)").replace(/::h[0-9a-f]{16}$/, "").replace(/\[[0-9a-f]{16}\]/g, "");
    if (f.url && !f.url.startsWith("wasm://")) name = `js: ${name} (${path.basename(f.url)})`;
    self.set(name, (self.get(name) ?? 0) + (node.hitCount ?? 0));
  }
  const top = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(opt.top));
  const perCall = ((Number(opt.seconds) * 1e3) / calls).toFixed(3);
  rows.push([n.toLocaleString("en"), opt.resident ? "applied (resident)" : want, `${perCall} ms`,
    top.map(([name, hits]) => `\`${name.length > 80 ? name.slice(0, 77) + "..." : name}\` ${((100 * hits) / total).toFixed(1)}%`).join("<br>")]);
}
console.log(table(["ledger", "event", "per call (profiled)", "self time by function (share of samples)"], rows, ["l", "l", "r", "l"]));
