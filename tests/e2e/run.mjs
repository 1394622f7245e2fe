// Run the end-to-end tests of the demo page: `node tests/e2e/run.mjs [--test-name-pattern=...]`.
// The same as `node --test tests/e2e/`; scripts/test.sh runs that form.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const dir = fileURLToPath(new URL(".", import.meta.url));
const files = readdirSync(dir).filter((f) => f.endsWith(".test.mjs")).map((f) => dir + f);
const r = spawnSync(process.execPath, ["--test", ...process.argv.slice(2), ...files], { stdio: "inherit" });
process.exit(r.status ?? 1);
