#!/usr/bin/env node
// Where a cold start's time goes: each phase timed apart in fresh Node processes.
//
//   node benches/cold-start.mjs [--runs 9] [--dir pkg/dist/lean] [--eager] [--deno] [--compiled]
//   node benches/cold-start.mjs --entries [--deno | --browser] [--runs 9]
//
// Each child imports the wasm-bindgen glue, reads the module, validates it
// (`new WebAssembly.Module`), instantiates it (`initSync`), builds the bench's
// order machine, reduces one event, then builds a second machine and reduces a
// second event: the second pair runs code that is already compiled, so the gap
// between the two is V8 compiling, on first call, what the first ones touched.
// `--eager` passes `--no-wasm-lazy-compilation`, so the whole module is compiled
// when it is validated. Uses the built module (scripts/build-wasm.sh); medians.
// `--deno` runs the same children under Deno (node_modules/.bin/deno, `deno eval`,
// the module read with `Deno.readFileSync`; `--eager` as a V8 flag there too).
// `--compiled` (Node only) adds one more child run under `--trace-wasm-compilation-times`
// and counts the wasm functions V8 compiles in each phase and their code
// bodies' bytes: a measure of the lazy compilation that load does not move;
// and the same for a first event that brings a stored snapshot (a process that
// exists), which decodes where the harness's first event starts a process.
// `--entries`: what a user's `import "idem"` costs instead, the package's own entry
// (pkg/src/node.js as the repository has it, 15 module files, against the published
// pkg/dist/js/node.js, the host modules in one file; deno.js with --deno): the import,
// then building the machine and the first event, in fresh processes taken in turns;
// with --browser, web.js in fresh Chromium contexts (IDEM_CHROMIUM; scripts/serve.mjs on
// localhost, as the e2e tests run it: every module file one request).
// benches/run.mjs section 3 measures the same total against XState.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
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
    compiled: { type: "boolean", default: false },
    deno: { type: "boolean", default: false },
    entries: { type: "boolean", default: false },
    browser: { type: "boolean", default: false },
  },
});
const DENO = path.join(ROOT, "node_modules/.bin/deno");
if (opt.deno && !existsSync(DENO)) throw new Error("no node_modules/.bin/deno: npm install");
const dir = path.resolve(ROOT, opt.dir);
if (!existsSync(path.join(dir, "idem_bg.wasm"))) throw new Error(`no module in ${dir}: run scripts/build-wasm.sh`);

if (opt.entries && opt.browser) {
  const entries = ["/pkg/src/web.js", "/pkg/dist/js/web.js"];
  const { startAll } = await import("../tests/e2e/browser.mjs");
  const env = await startAll();
  const definition = JSON.parse(readFileSync(path.join(ROOT, "tests/machines/order.json"), "utf8"));
  const times = Object.fromEntries(entries.map((e) => [e, []]));
  try {
    for (let i = 0; i < Number(opt.runs); i++) {
      for (const entry of entries) {
        const context = await env.browser.newContext();
        const page = await context.newPage();
        let requests = 0;
        page.on("request", (req) => {
          if (new URL(req.url()).pathname.startsWith("/pkg/")) requests++;
        });
        await page.goto(`${env.url}machines/order-robust.json`); // same origin, nothing loaded
        const t = await page.evaluate(
          async ({ entry, definition }) => {
            const t0 = performance.now();
            const idem = await import(entry);
            const t1 = performance.now();
            const out = new idem.Machine(definition).reduce(null, { id: "e1", type: "PAYMENT_PARTIAL", payload: { paymentId: "p1", amount: 1 } }, 1000, "p");
            if (out.status !== "applied") throw new Error(out.status);
            return { load: t1 - t0, total: performance.now() - t0 };
          },
          { entry, definition },
        );
        times[entry].push({ ...t, requests });
        await context.close();
      }
    }
    console.log(`import of the web entry in Chromium ${env.browser.version()}, served from localhost: the entry, then a machine built and a first event; ${opt.runs} fresh contexts each, in turns, medians\n`);
    const med = (entry, k) => median(times[entry].map((r) => r[k]));
    console.log(
      table(
        ["entry", "requests under /pkg/", "import", "to the first event"],
        entries.map((e) => [e, String(med(e, "requests")), med(e, "load").toFixed(1) + " ms", med(e, "total").toFixed(1) + " ms"]),
      ),
    );
  } finally {
    await env.close();
  }
  process.exit(0);
}

if (opt.entries) {
  const name = opt.deno ? "deno.js" : "node.js";
  const entries = [`pkg/src/${name}`, `pkg/dist/js/${name}`];
  const timing = (entry) => `
    const t0 = performance.now();
    const idem = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, entry)).href)});
    const t1 = performance.now();
    const m = new idem.Machine(${JSON.stringify(readFileSync(path.join(ROOT, "tests/machines/order.json"), "utf8"))});
    const out = m.reduce(null, { id: "e1", type: "PAYMENT_PARTIAL", payload: { paymentId: "p1", amount: 1 } }, 1000, "p");
    const t2 = performance.now();
    if (out.status !== "applied") throw new Error(out.status);
    console.log(JSON.stringify({ load: t1 - t0, total: t2 - t0 }));`;
  const times = Object.fromEntries(entries.map((e) => [e, []]));
  for (let i = 0; i < Number(opt.runs); i++) {
    for (const entry of entries) {
      const [cmd, args] = opt.deno
        ? [DENO, ["eval", timing(entry)]]
        : [process.execPath, ["--input-type=module", "-e", timing(entry)]];
      times[entry].push(JSON.parse(execFileSync(cmd, args, { encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } })));
    }
  }
  const runtime = opt.deno ? execFileSync(DENO, ["--version"], { encoding: "utf8" }).split("\n")[0] : `Node ${process.version}`;
  console.log(`import "idem" in ${runtime}: the entry, then a machine built and a first event; ${opt.runs} fresh processes each, in turns, medians\n`);
  const ms = (entry, k) => median(times[entry].map((r) => r[k])).toFixed(2) + " ms";
  console.log(table(["entry", "import", "to the first event"], entries.map((e) => [e, ms(e, "load"), ms(e, "total")])));
  process.exit(0);
}

const child = `
  const t0 = performance.now();
  // In Deno its own file reading: its first \`node:\` import loads the Node compatibility layer.
  const { readFileSync, writeSync } = globalThis.Deno
    ? { readFileSync: (p, text) => (text ? Deno.readTextFileSync(p) : Deno.readFileSync(p)), writeSync: (_, s) => Deno.stdout.writeSync(new TextEncoder().encode(s)) }
    : await import("node:fs");
  const mark = (phase) => MARKS && writeSync(1, "\\n#phase " + phase + "\\n");
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
  mark("build");
  const m = new glue.Machine(def);
  const t6 = performance.now();
  mark("first");
  const first = m.reduce(null, event("e1"), 1000, "p");
  const t7 = performance.now();
  mark("rest");
  const m2 = new glue.Machine(def);
  const t8 = performance.now();
  const second = m2.reduce(null, event("e2"), 1000, "q");
  const t9 = performance.now();
  if (first.status !== "applied" || second.status !== "applied") throw new Error(first.status + " " + second.status);
  if (!MARKS) writeSync(1, JSON.stringify({
    glue: t1 - t0, read: t2 - t1, validate: t3 - t2, instantiate: t4 - t3,
    build: t6 - t5, first: t7 - t6, build2: t8 - t7, second: t9 - t8,
  }));`;

const runs = [];
for (let i = 0; i < Number(opt.runs); i++) {
  const [cmd, args] = opt.deno
    ? [DENO, ["eval", ...(opt.eager ? ["--v8-flags=--no-wasm-lazy-compilation"] : []), "const MARKS = false;" + child]]
    : [process.execPath, [...(opt.eager ? ["--no-wasm-lazy-compilation"] : []), "--input-type=module", "-e", "const MARKS = false;" + child]];
  runs.push(JSON.parse(execFileSync(cmd, args, { encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } })));
}
const ms = (k) => median(runs.map((r) => r[k])).toFixed(2) + " ms";
const total = median(runs.map((r) => r.glue + r.read + r.validate + r.instantiate + r.build + r.first)).toFixed(2) + " ms";
const runtime = opt.deno ? execFileSync(DENO, ["--version"], { encoding: "utf8" }).split("\n")[0] : `Node ${process.version}`;
console.log(`cold start of ${path.relative(ROOT, dir)}/idem_bg.wasm in ${runtime}, ${runs.length} fresh processes${opt.eager ? ", eager compilation" : ""}, medians\n`);
console.log(
  table(
    ["import glue", "read file", "validate (new Module)", "instantiate", "build machine", "first event", "total", "second machine", "second event"],
    [[ms("glue"), ms("read"), ms("validate"), ms("instantiate"), ms("build"), ms("first"), total, ms("build2"), ms("second")]],
  ),
);

if (opt.compiled && opt.deno) console.log("\n(--compiled traces Node's compiler only: run it without --deno)");
if (opt.compiled && !opt.deno) {
  // V8 prints one line per compiled function:
  // "Compiled function 0x...#12 using Liftoff, took 0 ms and 17520 bytes; bodysize 339 codesize 736".
  const out = execFileSync(process.execPath, ["--trace-wasm-compilation-times", "--input-type=module", "-e", "const MARKS = true;" + child], {
    encoding: "utf8",
  });
  // The same first event in a process that starts with a stored snapshot (made
  // beforehand in another process), as a host's first request for an existing
  // process does: it decodes instead of starting the process.
  const glueUrl = JSON.stringify(pathToFileURL(path.join(dir, "idem.js")).href);
  const wasmPath = JSON.stringify(path.join(dir, "idem_bg.wasm"));
  const defPath = JSON.stringify(path.join(ROOT, "tests/machines/order.json"));
  const setup = `
    const { readFileSync, writeSync } = await import("node:fs");
    const glue = await import(${glueUrl});
    glue.initSync({ module: new WebAssembly.Module(readFileSync(${wasmPath})) });
    const m = new glue.Machine(readFileSync(${defPath}, "utf8"));
    const event = (id) => JSON.stringify({ id, type: "PAYMENT_PARTIAL", payload: { paymentId: id, amount: 1 } });`;
  const stored = execFileSync(process.execPath, ["--input-type=module", "-e", setup + `
    process.stdout.write(m.reduce(null, event("e0"), 1000, "p").snapshot);`], { encoding: "utf8" });
  const outStored = execFileSync(process.execPath, ["--trace-wasm-compilation-times", "--input-type=module", "-e", setup + `
    writeSync(1, "\\n#phase stored\\n");
    const o = m.reduce(${JSON.stringify(stored)}, event("e1"), 2000, "p");
    writeSync(1, "\\n#phase rest\\n");
    if (o.status !== "applied") throw new Error(o.status);`], { encoding: "utf8" });
  const phases = {
    build: { liftoff: 0, body: 0, turbofan: 0 },
    first: { liftoff: 0, body: 0, turbofan: 0 },
    stored: { liftoff: 0, body: 0, turbofan: 0 },
  };
  const names = { build: "build machine", first: "first event (new process)", stored: "first event (stored snapshot)" };
  let phase = null;
  for (const line of (out + "\n" + outStored).split("\n")) {
    const marked = /^#phase (\w+)/.exec(line);
    if (marked) phase = phases[marked[1]] ?? null;
    const compiled = /^Compiled function \S+ using (\w+),.* bodysize (\d+)/.exec(line);
    if (!phase || !compiled) continue;
    if (compiled[1] === "Liftoff") {
      phase.liftoff++;
      phase.body += Number(compiled[2]);
    } else phase.turbofan++;
  }
  const kb = (b) => (b / 1000).toFixed(1) + " KB";
  console.log("\nwasm functions compiled on first call, by phase (one run under --trace-wasm-compilation-times)\n");
  console.log(
    table(
      ["phase", "functions (Liftoff)", "code bodies", "optimised (TurboFan, in the background)"],
      Object.entries(phases).map(([name, p]) => [names[name], String(p.liftoff), kb(p.body), String(p.turbofan)]),
    ),
  );
}
