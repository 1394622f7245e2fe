// Section 5 of the benchmarks: the memory a round trip needs, idem against the peers, at
// each ledger size. Each contender runs in fresh `node --expose-gc` processes that read
// one stored snapshot, reduce a first event on a new process (so code is compiled and
// caches made before anything is counted), collect garbage, then apply K fresh events
// to the stored snapshot as section 2 does (stored text in, outcome + text out):
//
//   peak    the process's peak resident set during the events (Linux's VmHWM, reset
//           just before them through /proc/self/clear_refs), less the same at the
//           reset: what a round trip at this ledger adds on top of what the process
//           already held, garbage not yet collected included (as an isolate near its
//           memory limit would have to hold it). Not getrusage's maxRSS: a child
//           starts with its parent's, which would hide anything smaller;
//   wasm    idem's wasm linear memory after the events (a module's memory never
//           shrinks: the most it needed at once, the decoded snapshots its Machine
//           keeps between calls included).
// (The heap left after the events and a full collection says little: V8 keeps
// about twice a large JSON.stringify result's size after the peers' round trips.)
//
// Contenders: XState (`transition()` + the ledger in the JSON, benches/peers.mjs), the
// hand-written reducer, idem wasm (the stored string decoded on every call, the process id
// rotating over 16 ids as section 2's does), and idem resident (a warm host passing back
// the snapshot the engine gave it, one process id).
//
//   node benches/memory.mjs [--sizes 0,100,1000,10000,100000] [--runs 3] [--json FILE]
//
// Standalone, it builds the native bench (benches/idem.rs) for idem's snapshots and the
// peers' stored texts by real transitions; benches/run.mjs imports `measureMemory` and
// `memorySection` and prints section 5 from its own run's snapshots.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { fmtBytes, median, table } from "./measure.mjs";
import { inputFiles, writeInputs } from "./native.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

export const CONTENDERS = Object.freeze([
  { key: "xstate", label: "XState" },
  { key: "js", label: "JS reducer" },
  { key: "wasm", label: "idem wasm" },
  { key: "resident", label: "idem resident" },
]);

/** Events per child: for the peers few where one takes 100 ms; idem's take 100 at every size. */
export const eventsFor = (n, peer) => (!peer ? 100 : n >= 100_000 ? 6 : n >= 10_000 ? 20 : 100);

/**
 * The child's code: `kind` is a contender's key; `stored` the stored text of ledger `n`;
 * `glue`/`wasm` the idem module; `def` the machine's definition file. Prints one JSON line.
 */
function childCode({ kind, n, events, stored, glue, wasm, def }) {
  const s = JSON.stringify;
  return `
    const { readFileSync, writeFileSync } = await import("node:fs");
    const kib = (field) => 1024 * Number(new RegExp("^" + field + ":[ \t]+([0-9]+) kB", "m").exec(readFileSync("/proc/self/status", "utf8"))?.[1]);
    const peers = await import(${s(pathToFileURL(path.join(ROOT, "benches/peers.mjs")).href)});
    const kind = ${s(kind)}, n = ${n}, K = ${events};
    let reduce, empty = null, wasmBytes = () => 0;
    if (kind === "xstate" || kind === "js") {
      const trip = kind === "xstate" ? peers.xstateRoundTrip : peers.jsRoundTrip;
      reduce = (text, event) => trip(text, event);
      empty = kind === "xstate" ? peers.xstateStored([]) : peers.jsStored([]);
    } else {
      const glue = await import(${s(pathToFileURL(glue).href)});
      const exports = glue.initSync({ module: readFileSync(${s(wasm)}) });
      wasmBytes = () => exports.memory.buffer.byteLength;
      const m = new glue.Machine(readFileSync(${s(def)}, "utf8"));
      let k = 0;
      reduce = (text, event) => m.reduce(text, event, peers.NOW, kind === "wasm" ? "p" + (k++ % 16) : "hot");
    }
    const stored = readFileSync(${s(stored)}, "utf8");
    // Warmed up on a new process's small snapshot: the code compiled and optimised (which
    // takes memory of its own) before anything is counted, as in a long-running isolate.
    let warm = empty;
    for (let i = 0; i < 300; i++) {
      const out = reduce(i % 20 === 0 ? empty : warm, peers.noteEvent(n + 1_000_000 + i));
      if (out.status !== "applied") throw new Error("warm-up event not applied");
      warm = out.snapshot;
    }
    warm = null;
    gc(); gc();
    // The peak resident set starts again from the resident set now (Linux 4.0 and later).
    writeFileSync("/proc/self/clear_refs", "5");
    const before = kib("VmHWM");
    if (!Number.isFinite(before)) throw new Error("no VmHWM in /proc/self/status");
    let hot = stored, statuses = 0;
    for (let i = 0; i < K; i++) {
      // resident: a chain, each event on the snapshot the previous one returned, restarted
      // from the stored one every max(50, n/20) events as section 2's is
      const text = kind === "resident" ? (i % Math.max(50, Math.floor(n / 20)) === 0 ? stored : hot) : stored;
      const out = reduce(text, peers.noteEvent(n + 1 + i));
      if (out.status === "applied") statuses++;
      hot = out.snapshot;
    }
    // The kernel records the high-water mark when the resident set shrinks, so a set
    // that never grew past the reset may read a few pages under it: none added.
    const peak = Math.max(0, kib("VmHWM") - before);
    process.stdout.write(JSON.stringify({ applied: statuses, events: K, peak, wasm: wasmBytes() }));`;
}

/**
 * Measure every contender at every size in `sizes`, `runs` fresh processes each
 * (interleaved), from the files in `dir` (benches/native.mjs `writeInputs`: `machine.json`
 * and the stored texts of `inputFiles`). `moduleDir`: the idem module.
 * Returns `{ runs, rows: [{ ledger, events: { peer, idem }, [key]: { peak, wasm } }] }`, medians (bytes).
 */
export function measureMemory({ dir, sizes, moduleDir, runs = 3, log = () => {} }) {
  const rows = [];
  for (const n of sizes) {
    log(`memory at ledger ${n} (${runs} fresh processes per contender)`);
    const events = { peer: eventsFor(n, true), idem: eventsFor(n, false) };
    const files = inputFiles(dir, n);
    for (const f of Object.values(files)) if (!existsSync(f)) throw new Error(`memory: ${f} is missing`);
    const got = Object.fromEntries(CONTENDERS.map((c) => [c.key, []]));
    for (let r = 0; r < runs; r++) {
      for (const c of CONTENDERS) {
        const peer = c.key === "xstate" || c.key === "js";
        const code = childCode({
          kind: c.key,
          n,
          events: c.key === "xstate" || c.key === "js" ? events.peer : events.idem,
          stored: peer ? files[c.key] : files.idem,
          glue: path.join(moduleDir, "idem.js"),
          wasm: path.join(moduleDir, "idem_bg.wasm"),
          def: path.join(dir, "machine.json"),
        });
        const out = JSON.parse(execFileSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", code], { encoding: "utf8", maxBuffer: 1 << 24 }));
        if (out.applied !== out.events) throw new Error(`memory: ${c.key} at ${n} applied ${out.applied} of ${out.events} events`);
        got[c.key].push(out);
      }
    }
    const row = { ledger: n, events };
    for (const c of CONTENDERS) {
      const rs = got[c.key];
      row[c.key] = { peak: median(rs.map((x) => x.peak)), wasm: median(rs.map((x) => x.wasm)) };
    }
    rows.push(row);
  }
  return { runs, rows };
}

const mib = (b) => `${(Math.max(0, b) / 2 ** 20).toFixed(1)} MiB`;

/**
 * "3.2× less" / "1.4× more": idem's figure against a peer's; "—" when both are under
 * 4 MiB, where the resident set moves by a few MiB for reasons of its own (each figure
 * counts as at least 1 MiB).
 */
function compare(peer, idem) {
  if (Math.max(peer, idem) < 4 * 2 ** 20) return "—";
  const [a, b] = [Math.max(peer, 2 ** 20), Math.max(idem, 2 ** 20)];
  return a >= b ? `${(a / b).toFixed(a / b >= 10 ? 0 : 1)}× less` : `${(b / a).toFixed(b / a >= 10 ? 0 : 1)}× more`;
}

/** Section 5 as Markdown. */
export function memorySection(mem) {
  if (!mem) return "Not measured in this run.";
  const out = [];
  out.push(table(
    ["ledger", "events (peers / idem)", "XState peak", "JS reducer peak", "idem wasm peak", "idem resident peak", "wasm vs XState", "resident vs XState", "idem's wasm memory (resident)"],
    mem.rows.map((r) => [
      r.ledger.toLocaleString("en"),
      `${r.events.peer} / ${r.events.idem}`,
      mib(r.xstate.peak),
      mib(r.js.peak),
      mib(r.wasm.peak),
      mib(r.resident.peak),
      compare(r.xstate.peak, r.wasm.peak),
      compare(r.xstate.peak, r.resident.peak),
      `${fmtBytes(r.wasm.wasm)} (${fmtBytes(r.resident.wasm)})`,
    ]),
    ["l"],
  ));
  out.push("");
  out.push(`Fresh \`node --expose-gc\` processes, ${mem.runs} per contender and size, interleaved; medians. Each reads its stored text, reduces 300 events on new processes (code compiled and optimised), collects garbage, then applies the events (fresh NOTE events on the stored snapshot, section 2's round trip; the warm host's chain restarts from it every max(50, n/20) events as section 2's does). Peak: the process's peak resident set during the events (VmHWM, reset just before them) less the same at the reset: what the round trips added, uncollected garbage included. idem's wasm memory: its linear memory after the events, which never shrinks: the most it needed at once, the decoded snapshots a Machine keeps between calls (8 processes, 16 MiB at most) included. "—": both under 4 MiB, where the resident set moves by a few MiB on its own; a ratio counts each figure as at least 1 MiB.`);
  return out.join("\n");
}

// ---- standalone --------------------------------------------------------------------------
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const { values: opt } = parseArgs({
    options: {
      sizes: { type: "string", default: "0,100,1000,10000,100000" },
      runs: { type: "string", default: "3" },
      json: { type: "string" },
      dir: { type: "string", default: "pkg/dist/lean" },
    },
  });
  const sizes = opt.sizes.split(",").map((s) => Number(s.replaceAll("_", "")));
  const log = (msg) => process.stderr.write(`memory: ${msg}\n`);
  const moduleDir = path.resolve(ROOT, opt.dir);
  if (!existsSync(path.join(moduleDir, "idem_bg.wasm"))) throw new Error(`no module in ${moduleDir}: run scripts/build-wasm.sh`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), "idem-memory-"));
  process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
  log("building the native bench, then writing the machine and the stored texts");
  await writeInputs(ROOT, tmp, sizes);
  const mem = measureMemory({ dir: tmp, sizes, moduleDir, runs: Number(opt.runs), log });
  console.log(`### Memory per round trip (${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, Node ${process.version}, ${path.relative(ROOT, moduleDir)})\n`);
  console.log(memorySection(mem));
  if (opt.json) writeFileSync(opt.json, JSON.stringify(mem, null, 2));
}
