// Assemble the Worker's static assets: the demo page (www/) at /, and the wasm
// package it imports (pkg/src, pkg/dist) at /pkg/, like scripts/serve.mjs does.
// Run by wrangler ([build] in wrangler.toml); run scripts/build-wasm.sh first.
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const out = join(here, ".assets");

if (!existsSync(join(root, "pkg", "dist", "idem_bg.wasm"))) {
  console.error("build-assets: pkg/dist is missing; run scripts/build-wasm.sh first");
  process.exit(1);
}
rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, "pkg"), { recursive: true });
if (existsSync(join(root, "www", "index.html"))) {
  cpSync(join(root, "www"), out, { recursive: true });
} else {
  writeFileSync(join(out, "index.html"), '<!doctype html><meta charset="utf-8"><title>idem</title><p>idem Worker: see <a href="/api/health">/api/health</a>.</p>\n');
}
for (const dir of ["src", "dist"]) cpSync(join(root, "pkg", dir), join(out, "pkg", dir), { recursive: true });
cpSync(join(root, "pkg", "package.json"), join(out, "pkg", "package.json"));
console.log(`build-assets: ${out}`);
