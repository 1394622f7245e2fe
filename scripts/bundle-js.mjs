#!/usr/bin/env node
// The package's JavaScript as it is published: pkg/dist/js/, what pkg/package.json
// "exports" names. pkg/src/ stays the source (the repository's examples, demo
// page and tests import it directly); this folds its host modules into one file
// that every entry and subpath shares:
//
//   pkg/dist/js/bundle.js        the host modules every entry loads (host, dispatch,
//                                http, the stores of hosting.js, testing/*, analysis,
//                                checks)
//                                in one module, all their exports
//   pkg/dist/js/stores/{denokv,indexeddb}.js
//                                the stores for one runtime, as in pkg/src, importing
//                                what they share from bundle.js
//   pkg/dist/js/{node,web,deno,workerd}.js
//                                the runtime entries: pkg/src's, re-exporting the
//                                root API from bundle.js instead of ./hosting.js
//   pkg/dist/js/<module>.js      one line per public host module (host.js, stores/d1.js, ...:
//                                the subpaths pkg/package.json exports), its own exports,
//                                from bundle.js
//   pkg/dist/js/**/*.d.ts        copies of pkg/src's declarations beside them (each
//                                subpath's "types"), each .js naming its own with
//                                `@ts-self-types` for Deno programs that import it by path
//
// Why: a program loads one host module whichever entry it imports, where
// pkg/src/hosting.js pulls in 12 files three levels deep, each found, read and
// linked (in a browser, a request made only once its importer has arrived;
// benches/RESULTS.md, entry 44). And one bundle keeps one copy of each class and of
// `apply`'s lanes whichever subpaths a program imports: `idem` and `idem/host`
// give the same `apply` and the same `ContentionError`.
//
//   node scripts/bundle-js.mjs          # run by scripts/build-wasm.sh after the glue
//   node scripts/bundle-js.mjs --check  # exit 1 when pkg/dist/js is not what pkg/src makes
//                                       # (tests/js/package.test.mjs runs it)
//   node scripts/bundle-js.mjs --prepack # the same, and exit 1 when a wasm module or its glue
//                                       # is missing: `npm pack` in pkg/ runs it, so a clone
//                                       # that was never built cannot be packed
//
// Fails when an entry is not shaped as it expects (its imports are rewritten
// by text) or when two host modules export one name for different things.
import { build } from "esbuild";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SRC = path.join(ROOT, "pkg/src");
const PUBLISHED = path.join(ROOT, "pkg/dist/js");
const PREPACK = process.argv.includes("--prepack");
const CHECK = PREPACK || process.argv.includes("--check");
const ENTRIES = ["node.js", "web.js", "deno.js", "workerd.js"];
// The modules a user imports by subpath (pkg/package.json "exports"), as paths relative to
// pkg/src ("stores/d1.js"): each gets its file in dist/js; the others live only in the bundle.
const PACKAGE = JSON.parse(readFileSync(path.join(ROOT, "pkg/package.json"), "utf8"));
const PUBLIC = Object.entries(PACKAGE.exports)
  .filter(([sub]) => sub !== "." && sub !== "./package.json")
  .map(([, target]) => target.default.replace(/^\.\/dist\/js\//, ""));

if (PREPACK) {
  // What the runtime entries load, built by scripts/build-wasm.sh (never committed).
  const built = ["pkg/dist/idem.js", "pkg/dist/idem_bg.wasm", "pkg/dist/lean/idem.js", "pkg/dist/lean/idem_bg.wasm"];
  const missing = built.filter((f) => !existsSync(path.join(ROOT, f)));
  if (missing.length > 0) {
    console.error(`bundle-js: ${missing.join(", ")} missing: run scripts/build-wasm.sh before npm pack`);
    process.exit(1);
  }
}

const OUT = CHECK ? mkdtempSync(path.join(os.tmpdir(), "idem-bundle-")) : PUBLISHED;
// Stores for one runtime, which the root API does not load: kept out of the bundle.
const SATELLITES = ["stores/denokv.js", "stores/indexeddb.js"];

/** Every .js file under pkg/src that is not a runtime entry, as a path relative to it ("stores/d1.js"). */
function hostModules(dir = SRC) {
  const files = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) files.push(...hostModules(full));
    else if (e.name.endsWith(".js")) files.push(path.relative(SRC, full).split(path.sep).join("/"));
  }
  return files.filter((f) => !ENTRIES.includes(f)).sort();
}

const modules = hostModules();
// Each module's export names, and the one binding each name stands for. hosting.js
// only re-exports the others.
const exportsOf = new Map();
const owner = new Map();
for (const rel of modules) {
  const ns = await import(pathToFileURL(path.join(SRC, rel)).href);
  exportsOf.set(rel, Object.keys(ns).sort());
  for (const [name, value] of Object.entries(ns)) {
    const had = owner.get(name);
    if (had && had.value !== value) throw new Error(`bundle-js: ${name} is exported by ${had.rel} and by ${rel} as different things`);
    if (!had) owner.set(name, { rel, value });
  }
}

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });

// 1. The bundle: `export *` of the host modules, esbuild folding them into one scope.
const bundled = modules.filter((rel) => !SATELLITES.includes(rel));
const entry = bundled.map((rel) => `export * from ${JSON.stringify(`./${rel}`)};`).join("\n");
await build({
  stdin: { contents: entry, resolveDir: SRC, sourcefile: "bundle.js", loader: "js" },
  // The same bundle whatever the working directory (`npm pack` runs this in pkg/): its
  // comments name each module by its path from the repository root.
  absWorkingDir: ROOT,
  bundle: true,
  format: "esm",
  platform: "neutral",
  target: "es2022",
  outfile: path.join(OUT, "bundle.js"),
  legalComments: "none",
  logLevel: "warning",
  banner: { js: "// idem's host modules (pkg/src) in one module, made by scripts/bundle-js.mjs: edit pkg/src, not this." },
});

// The modules' JSDoc names their types as `import("../index.d.ts")` from where each sits in
// pkg/src; in the bundle, index.d.ts is beside it (a program that checks the bundle's JSDoc,
// as `deno check` of a path import can, finds them there).
{
  const file = path.join(OUT, "bundle.js");
  writeFileSync(file, readFileSync(file, "utf8").replace(/import\("(?:\.\.?\/)+index\.d\.ts"\)/g, 'import("./index.d.ts")'));
}

/** `to` as an import specifier from the file `from` (both relative to OUT). */
const specifier = (from, to) => {
  const rel = path.posix.relative(path.posix.dirname(from), to);
  return rel.startsWith(".") ? rel : `./${rel}`;
};

/** Deno's directive naming a module's declarations (`host.js` -> `./host.d.ts`). */
const selfTypes = (rel, dts = rel.replace(/\.js$/, ".d.ts")) => `// @ts-self-types=${JSON.stringify(specifier(rel, dts))}\n`;

// 2. One shim per public bundled module: its names, from the bundle.
for (const rel of PUBLIC) {
  if (!modules.includes(rel)) throw new Error(`bundle-js: pkg/package.json exports ${rel}, which pkg/src does not have`);
  if (SATELLITES.includes(rel)) continue;
  const names = exportsOf.get(rel);
  const file = path.join(OUT, rel);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${selfTypes(rel)}export { ${names.join(", ")} } from ${JSON.stringify(specifier(rel, "bundle.js"))};\n`);
}

// The satellites as they are, their imports of bundled modules pointed at the bundle.
for (const rel of SATELLITES) {
  let text = readFileSync(path.join(SRC, rel), "utf8");
  text = text.replace(/from "(\.{1,2}\/[^"]+)"/g, (whole, spec) => {
    const target = path.posix.join(path.posix.dirname(rel), spec);
    if (!bundled.includes(target)) throw new Error(`bundle-js: pkg/src/${rel} imports ${spec}, which is not in the bundle`);
    return `from ${JSON.stringify(specifier(rel, "bundle.js"))}`;
  });
  mkdirSync(path.dirname(path.join(OUT, rel)), { recursive: true });
  writeFileSync(path.join(OUT, rel), `// pkg/src/${rel} as published, made by scripts/bundle-js.mjs: what it shares from bundle.js.\n${selfTypes(rel)}${text}`);
}

// 3. The entries: pkg/src's, with their imports of the glue and of the host modules
// pointed at dist (one level up from dist/js) and at the bundle.
const hostingNames = exportsOf.get("hosting.js");
for (const name of ENTRIES) {
  let text = readFileSync(path.join(SRC, name), "utf8");
  const rewrite = (from, to, what) => {
    if (!text.includes(from)) throw new Error(`bundle-js: pkg/src/${name} has no ${what} (${from}): update scripts/bundle-js.mjs`);
    text = text.replaceAll(from, to);
  };
  rewrite('export * from "./hosting.js";', `export { ${hostingNames.join(", ")} } from "./bundle.js";`, "re-export of the host API");
  rewrite('"../dist/', '"../', "glue import");
  if (text.includes('from "./analysis.js"')) rewrite('from "./analysis.js"', 'from "./bundle.js"', "analysis import");
  if (text.includes('from "./error.js"')) rewrite('from "./error.js"', 'from "./bundle.js"', "IdemError import");
  if (text.includes('from "./checks.js"')) rewrite('from "./checks.js"', 'from "./bundle.js"', "argument checks import");
  const left = /from "\.\/(?!bundle\.js")[^"]*"/.exec(text);
  if (left) throw new Error(`bundle-js: pkg/src/${name} imports ${left[0]}, which the bundle does not stand for`);
  writeFileSync(
    path.join(OUT, name),
    `// pkg/src/${name} as published, made by scripts/bundle-js.mjs: the host API from bundle.js.\n${selfTypes(name, "index.d.ts")}${text}`,
  );
}

// 4. The declarations beside the files they describe.
for (const rel of readdirSync(SRC, { recursive: true })) {
  const r = String(rel);
  if (!r.endsWith(".d.ts")) continue;
  mkdirSync(path.dirname(path.join(OUT, r)), { recursive: true });
  copyFileSync(path.join(SRC, r), path.join(OUT, r));
}

if (CHECK) {
  /** @param {string} dir */
  const files = (dir) => (existsSync(dir) ? readdirSync(dir, { recursive: true }).map(String).filter((f) => f.includes(".")).sort() : []);
  const made = files(OUT);
  const have = files(PUBLISHED);
  const stale = [...new Set([...made, ...have])].filter(
    (f) => !made.includes(f) || !have.includes(f) || !readFileSync(path.join(OUT, f)).equals(readFileSync(path.join(PUBLISHED, f))),
  );
  rmSync(OUT, { recursive: true, force: true });
  if (stale.length > 0) {
    console.error(`bundle-js: pkg/dist/js is not what pkg/src makes (${stale.join(", ")}): run node scripts/bundle-js.mjs`);
    process.exit(1);
  }
  console.log("bundle-js: pkg/dist/js is up to date");
  process.exit(0);
}

const size = readFileSync(path.join(OUT, "bundle.js")).length;
console.log(`bundle-js: pkg/dist/js: ${bundled.length} host modules in bundle.js (${(size / 1024).toFixed(1)} KiB), ${SATELLITES.length} apart, ${ENTRIES.length} entries`);
