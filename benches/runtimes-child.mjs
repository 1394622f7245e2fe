// One runtime's serverless round trip per event, for benches/runtimes.mjs: the same
// script under `node` and `deno run --allow-all`, so the same code and the same
// wasm (the lean module, pkg/dist/lean) are timed in each.
//
//   node benches/runtimes-child.mjs '{"dir":DIR,"sizes":[0,100],"budgetMs":400}'
//   deno run --allow-all benches/runtimes-child.mjs '{...}'
//
// DIR holds what the parent wrote: machine.json and idem-N.snap (the native bench's
// --emit), xstate-N.json and js-N.json (the peers' stored texts of the same NOTE
// events). Prints one JSON object on stdout: the runtime, its versions, and per
// ledger size the timings ({ medianNs, p95Ns, samples, batch } per contender) and
// the outcome of one call of each (status, revision, state, bytes out).
import { readFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { measureGroup } from "./measure.mjs";
import * as peers from "./peers.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const isDeno = typeof globalThis.Deno !== "undefined";
const opts = JSON.parse((isDeno ? globalThis.Deno.args : process.argv.slice(2))[0] ?? "{}");
const { dir, sizes, budgetMs = 400, warmMs = 1500 } = opts;

const LEAN = path.join(ROOT, "pkg/dist/lean");
const glue = await import(new URL("../pkg/dist/lean/idem.js", import.meta.url).href);
glue.initSync({ module: readFileSync(path.join(LEAN, "idem_bg.wasm")) });
const { Machine } = glue;

const defText = readFileSync(path.join(dir, "machine.json"), "utf8");
const m = new Machine(defText);
const read = (name) => readFileSync(path.join(dir, name), "utf8");
const data = (n) => ({ idem: read(`idem-${n}.snap`), xs: read(`xstate-${n}.json`), js: read(`js-${n}.json`) });
const NOW = peers.NOW;
const payment = (i) => ({ id: `p${i}`, type: "PAYMENT_PARTIAL", payload: { paymentId: "q-1", amount: 1 } });

// One call each on the fresh event: what the parent checks (applied, same
// revision, state and context everywhere, in both runtimes).
function outcome(n, d) {
  const fresh = peers.freshEvent();
  const o = m.reduce(d.idem, fresh, NOW, "check");
  const xs = peers.xstateRoundTrip(d.xs, fresh);
  const js = peers.jsRoundTrip(d.js, fresh);
  return {
    idem: { status: o.status, view: peers.idemView(m, o.snapshot), response: o.response, bytesOut: o.snapshot.length },
    xstate: { status: xs.status, view: peers.xstateView(xs.snapshot), response: xs.response, bytesOut: xs.snapshot.length },
    js: { status: js.status, view: peers.jsView(js.snapshot), response: js.response, bytesOut: js.snapshot.length },
  };
}

// V8 runs new wasm and JS code in baseline tiers first and optimizes hot
// functions in the background: run everything for a while before timing (as
// benches/run.mjs does).
{
  const warm = [0, 100].filter((n) => sizes.includes(n));
  const ds = (warm.length ? warm : [Math.min(...sizes)]).map(data);
  const end = performance.now() + warmMs;
  let i = 0;
  while (performance.now() < end) {
    for (const d of ds) {
      m.reduce(d.idem, payment(i), NOW, "bench");
      peers.xstateRoundTrip(d.xs, payment(i));
      peers.jsRoundTrip(d.js, payment(i));
    }
    i++;
  }
}

// Section 2 of benches/run.mjs, fresh events: "wasm" rotates the process id over
// 16 ids (more than a Machine keeps decoded), so every call decodes the stored
// text; "resident" is a warm host on its own Machine handing back the snapshot
// the engine gave it, a chain of fresh NOTE events restarted from the stored
// snapshot every max(50, n/20) events.
let coldK = 0;
const cold = () => `cold-${coldK++ % 16}`;
const rows = [];
for (const n of sizes) {
  const d = data(n);
  const fresh = peers.freshEvent();
  const chain = Math.max(50, Math.floor(n / 20));
  const mHot = new Machine(defText);
  let hot = d.idem;
  let hotK = 0;
  const time = measureGroup({
    xstate: () => peers.xstateRoundTrip(d.xs, fresh),
    js: () => peers.jsRoundTrip(d.js, fresh),
    wasm: () => m.reduce(d.idem, fresh, NOW, cold()),
    resident: () => {
      if (hotK === chain) [hot, hotK] = [d.idem, 0];
      const out = mHot.reduce(hot, peers.noteEvent(n + 1 + hotK++), NOW, "hot-fresh");
      hot = out.snapshot;
      return out;
    },
  }, { budgetMs, maxSamples: n >= 10_000 ? 60 : 2000 });
  rows.push({ ledger: n, bytes: { idem: d.idem.length, xstate: d.xs.length, js: d.js.length }, time, check: outcome(n, d) });
}

const versions = isDeno
  ? { runtime: "deno", version: globalThis.Deno.version.deno, v8: globalThis.Deno.version.v8 }
  : { runtime: "node", version: process.versions.node, v8: process.versions.v8 };
console.log(JSON.stringify({ ...versions, idem: glue.version(), rows }));
