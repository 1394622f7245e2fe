#!/usr/bin/env node
// Where a cold start's time goes: each phase timed apart in fresh Node processes.
//
//   node benches/cold-start.mjs [--runs 9] [--dir pkg/dist/lean] [--eager]
//
// Each child imports the wasm-bindgen glue, reads the module, validates it
// (`new WebAssembly.Module`), instantiates it (`initSync`), builds the bench's
// order machine, reduces one event, then builds a second machine and reduces a
// second event: the second pair runs code that is already compiled, so the gap
// between the two is V8 compiling, on first call, what the first ones touched.
// `--eager` passes `--no-wasm-lazy-compilation`, so the whole module is compiled
// when it is validated. Uses the built module (scripts/build-wasm.sh); medians.
// benches/run.mjs section 3 measures the same total against XState.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { median, table } from "./measure.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { values: opt } = parseArgs({
  options: {
    runs: { type: "string", default: "9" },
    dir: { type: "string", default: "pkg/dist/lean" },
    eager: { type: "boolean", default: false },
  },
});
const dir = path.resolve(ROOT, opt.dir);
if (!existsSync(path.join(dir, "idem_bg.wasm"))) throw new Error(`no module in ${dir}: run scripts/build-wasm.sh`);

const child = `
  const t0 = performance.now();
  const { readFileSync } = await import("node:fs");
  const glue = await import(${JSON.stringify(pathToFileURL(path.join(dir, "idem.js")).href)});
  const t1 = performance.now();
  const bytes = readFileSync(${JSON.stringify(path.join(dir, "idem_bg.wasm"))});
  const t2 = performance.now();
  const module = new WebAssembly.Module(bytes);
  const t3 = performance.now();
  glue.initSync({ module });
  const t4 = performance.now();
  const def = readFileSync(${JSON.stringify(path.join(ROOT, "tests/machines/order.json"))}, "utf8");
  const event = (id) => JSON.stringify({ id, type: "PAYMENT_PARTIAL", payload: { paymentId: id, amount: 1 } });
  const t5 = performance.now();
  const m = new glue.Machine(def);
  const t6 = performance.now();
  const first = m.reduce(null, event("e1"), 1000, "p");
  const t7 = performance.now();
  const m2 = new glue.Machine(def);
  const t8 = performance.now();
  const second = m2.reduce(null, event("e2"), 1000, "q");
  const t9 = performance.now();
  if (first.status !== "applied" || second.status !== "applied") throw new Error(first.status + " " + second.status);
  process.stdout.write(JSON.stringify({
    glue: t1 - t0, read: t2 - t1, validate: t3 - t2, instantiate: t4 - t3,
    build: t6 - t5, first: t7 - t6, build2: t8 - t7, second: t9 - t8,
  }));`;

const runs = [];
for (let i = 0; i < Number(opt.runs); i++) {
  const flags = opt.eager ? ["--no-wasm-lazy-compilation"] : [];
  runs.push(JSON.parse(execFileSync(process.execPath, [...flags, "--input-type=module", "-e", child], { encoding: "utf8" })));
}
const ms = (k) => median(runs.map((r) => r[k])).toFixed(2) + " ms";
const total = median(runs.map((r) => r.glue + r.read + r.validate + r.instantiate + r.build + r.first)).toFixed(2) + " ms";
console.log(`cold start of ${path.relative(ROOT, dir)}/idem_bg.wasm, ${runs.length} fresh processes${opt.eager ? ", eager compilation" : ""}, medians\n`);
console.log(
  table(
    ["import glue", "read file", "validate (new Module)", "instantiate", "build machine", "first event", "total", "second machine", "second event"],
    [[ms("glue"), ms("read"), ms("validate"), ms("instantiate"), ms("build"), ms("first"), total, ms("build2"), ms("second")]],
  ),
);
