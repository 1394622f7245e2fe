#!/usr/bin/env node
// Folds wasm-bindgen's inline JS snippets into the glue module, so importing
// idem loads one JavaScript module, not two: one file fewer to resolve, read and
// link, and in a browser one request fewer (benches/RESULTS.md, entry 44). Each
// snippet becomes a function scope inside the
// glue (its names cannot collide with the glue's), whose exports the glue's own
// import statements then name as before.
//
//   node scripts/fold-snippets.mjs DIR      # DIR/idem.js, DIR/snippets/ removed
//
// wasm-bindgen's import object names a snippet's module once per import statement
// (`"./snippets/…/inline0.js": import1`, `…: import2`, …), which folding makes one
// object under one key written several times: the repeats are dropped, so that no
// bundler warns of a duplicate key (esbuild under `wrangler dev` did, twice).
//
// Fails, changing nothing, when the glue's imports are not the ones it knows.
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

const dir = process.argv[2];
if (!dir) throw new Error("usage: fold-snippets.mjs DIR");
const gluePath = path.join(dir, "idem.js");
const glue = readFileSync(gluePath, "utf8");

const importLine = /^import (\{[^}]*\}|\* as (\w+)) from ["'](\.\/snippets\/[\w.-]+\/inline\d+\.js)["'];?$/;
const importObjectEntry = /^\s*["'](\.\/snippets\/[\w.-]+\/inline\d+\.js)["']: import\d+,$/;
const scopes = new Map();
const keyed = new Set();
const out = [];
for (const line of glue.split("\n")) {
  const m = importLine.exec(line);
  const entry = importObjectEntry.exec(line);
  if (entry) {
    // Every importN of one snippet file is the same folded scope: its first entry stands for all.
    if (!scopes.has(entry[1])) throw new Error(`fold-snippets: the import object names ${entry[1]}, which the glue does not import`);
    if (!keyed.has(entry[1])) out.push(line);
    keyed.add(entry[1]);
    continue;
  }
  if (!m) {
    if (/\bsnippets\//.test(line) && /^\s*import\b/.test(line)) throw new Error(`fold-snippets: unexpected import: ${line}`);
    out.push(line);
    continue;
  }
  const [, what, star, file] = m;
  if (!scopes.has(file)) {
    const name = `__idem_snippet${scopes.size}`;
    const source = readFileSync(path.join(dir, file), "utf8");
    const exported = [...source.matchAll(/^export function (\w+)\(/gm)].map((e) => e[1]);
    if (/^export (?!function )/m.test(source)) throw new Error(`fold-snippets: ${file} exports something other than functions`);
    const body = source.replace(/^export function /gm, "function ");
    scopes.set(file, name);
    out.push(`const ${name} = (() => {\n${body.trimEnd()}\nreturn { ${exported.join(", ")} };\n})();`);
  }
  const name = scopes.get(file);
  out.push(star ? `const ${star} = ${name};` : `const ${what.replace(/\s+as\s+/g, ": ")} = ${name};`);
}
if (scopes.size === 0) throw new Error("fold-snippets: the glue imports no snippet");
const folded = out.join("\n");
if (/["']\.\/snippets\//.test(folded.replace(/^\s*["']\.\/snippets\/[^"']+["']: import\d+,$/gm, ""))) {
  throw new Error("fold-snippets: the glue names a snippet file outside its imports");
}
writeFileSync(gluePath, folded);
if (existsSync(path.join(dir, "snippets"))) rmSync(path.join(dir, "snippets"), { recursive: true });
