// Cold starts in fresh processes, shared by benches/run.mjs (section 3, Node) and
// benches/runtimes.mjs (Node and Deno): the code each child runs, the child itself,
// and the summary of a contender's runs. A child measures, from before its import
// to after its first event, load (import + instantiate), build (the machine) and
// first (one event), and prints them as JSON; the parent adds the process's wall time.
import { execFileSync } from "node:child_process";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { median, quantile } from "./measure.mjs";
import * as peers from "./peers.mjs";

/** esbuild --bundle --minify --format=esm of a file, or of source text resolved from `root`. */
export async function bundle({ file, source }, platform, root) {
  const esbuild = await import("esbuild");
  const r = await esbuild.build({
    ...(file ? { entryPoints: [file] } : { stdin: { contents: source, resolveDir: root, loader: "js" } }),
    bundle: true,
    minify: true,
    format: "esm",
    platform,
    write: false,
    absWorkingDir: root,
    logLevel: "silent",
  });
  return r.outputFiles[0].contents;
}

/** XState's `createMachine` + `transition` as one minified ES module (what section 3 sizes and starts). */
export function xstateBundle(root) {
  return bundle({ source: 'export { createMachine, assign, initialTransition, transition } from "xstate";' }, "neutral", root);
}

/**
 * The children's code (ES module text, for `node --input-type=module -e` and `deno eval`).
 * `idem(glue, wasm)`: the wasm-bindgen glue's path and the module's, read with
 * `node:fs` in Node and `Deno.readFileSync` in Deno (whose first `node:` import loads
 * its Node compatibility layer, ~30 ms); `xstate`: the bundle's path; `esm`: an
 * empty ES module (after `node:fs` in Node, as idem's child), the floor under any
 * cold start measured this way. `defText`: the machine's definition.
 */
export function coldCode({ defText, xstateFile }) {
  const ev = JSON.stringify(peers.freshEvent());
  return {
    idem: (glue, wasm) => `
    const t0 = performance.now();
    const { readFileSync } = globalThis.Deno ? Deno : await import("node:fs");
    const { initSync, Machine } = await import(${JSON.stringify(pathToFileURL(glue).href)});
    initSync({ module: readFileSync(${JSON.stringify(wasm)}) });
    const t1 = performance.now();
    const m = new Machine(${JSON.stringify(defText)});
    const t2 = performance.now();
    const o = m.reduce(null, ${ev}, ${peers.NOW}, "bench");
    const t3 = performance.now();
    process.stdout.write(JSON.stringify({ boot: t0, load: t1 - t0, build: t2 - t1, first: t3 - t2, result: o.status + " " + o.state }));`,
    xstate: `
    const t0 = performance.now();
    const { createMachine, assign, initialTransition, transition } = await import(${JSON.stringify(pathToFileURL(xstateFile).href)});
    const t1 = performance.now();
    const order = createMachine((${peers.orderConfig.toString()})(assign));
    const t2 = performance.now();
    const [s0] = initialTransition(order);
    const [s1] = transition(order, s0, ${ev});
    const t3 = performance.now();
    process.stdout.write(JSON.stringify({ boot: t0, load: t1 - t0, build: t2 - t1, first: t3 - t2, result: (s1 !== s0 ? "applied " : "ignored ") + s1.value }));`,
    esm: `
    const t0 = performance.now();
    if (!globalThis.Deno) await import("node:fs");
    await import("data:text/javascript,export default 1");
    const t1 = performance.now();
    process.stdout.write(JSON.stringify({ boot: t0, load: t1 - t0, build: 0, first: 0, result: "" }));`,
  };
}

/**
 * Run `code` in a fresh process: Node (`node --input-type=module -e`), or Deno
 * (`deno eval`) when `deno` is its executable. Returns the child's JSON plus `wall`,
 * spawn to exit (ms).
 */
export function coldChild(code, { deno = null, cwd = undefined } = {}) {
  const [cmd, args] = deno ? [deno, ["eval", code]] : [process.execPath, ["--input-type=module", "-e", code]];
  const t = performance.now();
  const out = execFileSync(cmd, args, { encoding: "utf8", cwd, env: { ...process.env, NO_COLOR: "1" } });
  const wall = performance.now() - t;
  return { ...JSON.parse(out || "{}"), wall };
}

/** A contender's runs: medians of the in-process total and of each phase, its p95, the wall time. */
export function coldSummary(rs) {
  const inproc = rs.map((r) => r.load + r.build + r.first);
  return {
    runs: rs.length,
    medianMs: median(inproc),
    p95Ms: quantile(inproc, 0.95),
    loadMs: median(rs.map((r) => r.load)),
    buildMs: median(rs.map((r) => r.build)),
    firstMs: median(rs.map((r) => r.first)),
    wallMs: median(rs.map((r) => r.wall)),
    result: rs[0].result,
  };
}
