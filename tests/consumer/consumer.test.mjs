// The package as a user installs it. `npm pack` in pkg/ (pkg/dist built by
// scripts/build-wasm.sh), then a fresh project outside the repository that installs the
// tarball and nothing else of the repository, and runs the code blocks of the README
// *inside the tarball*:
//
//   (a) the quick example under Node.js, printing what its `// →` lines say;
//   (b) `tsc --strict --noEmit` with `module: nodenext`, no `paths`, no `allowJs`, on a
//       TypeScript program that imports every subpath (tests/consumer/usage.ts);
//   (c) `deno check` and `deno run` of the Deno section (`npm:idem`, Deno KV, its queue);
//   (d) the Worker section under `wrangler dev --local`: the migrations applied from
//       node_modules/idem/d1/migrations (twice: the second a no-op), one event applied,
//       replayed, its effect dispatched, and no warning in wrangler's output;
//   (e) the Browser section in headless Chromium, as plain ES modules with an import map.
//
// Also what the tarball holds (only what is meant), that `npm pack` refuses a clone that
// was never built, and the tarball's packed and unpacked size (printed, for the summary).
// The tools (tsc, deno, wrangler, Chromium) are the repository's; the project is not.
//
//   node --test tests/consumer/      (scripts/test.sh runs it as "consumer: the packed package")

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = join(ROOT, "node_modules/.bin");
const TMP = mkdtempSync(join(tmpdir(), "idem-consumer-"));
const APP = join(TMP, "app");
const ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1", NO_COLOR: "1", DENO_DIR: join(TMP, "deno-dir") };

let packed; // npm pack --json's record of the tarball
let readme; // the README inside the tarball
const children = [];

/** Run a command to its end; throw with its output when it fails. */
function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { cwd: APP, env: ENV, encoding: "utf8", ...options });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout + r.stderr;
}

/** The fenced blocks of a markdown text that name a file (```js src/worker.js), by file name. */
function namedBlocks(markdown) {
  const blocks = new Map();
  for (const m of markdown.matchAll(/^```(\w+) (\S+)\n([\s\S]*?)^```$/gm)) blocks.set(m[2], m[3]);
  return blocks;
}

/** Write a README block to its file in the project. */
function writeBlock(name) {
  const code = namedBlocks(readme).get(name);
  assert.ok(code, `the README in the tarball has no block for ${name}`);
  mkdirSync(dirname(join(APP, name)), { recursive: true });
  writeFileSync(join(APP, name), code);
  return code;
}

/** What a block says it prints: the text after `// →` on each line, in order. */
const announced = (code) => code.split("\n").flatMap((l) => (l.match(/\/\/ → (.*)$/) ? [l.match(/\/\/ → (.*)$/)[1].trimEnd()] : []));

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/** Start a long-running command; its output accumulates in `.log`. */
function start(cmd, args, env = {}) {
  const child = spawn(cmd, args, { cwd: APP, env: { ...ENV, ...env }, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  child.log = "";
  child.stdout.on("data", (d) => (child.log += d));
  child.stderr.on("data", (d) => (child.log += d));
  children.push(child);
  return child;
}

function stop(child) {
  if (child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
}

/** Poll until `check()` is truthy (or the child died, or `ms` passed). */
async function until(child, what, check, ms = 60_000) {
  const end = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got) return got;
    if (child.exitCode !== null) throw new Error(`${what}: the process exited ${child.exitCode}:\n${child.log}`);
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms:\n${child.log}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const post = (url, key, body) =>
  fetch(url, { method: "POST", headers: { "idempotency-key": key, "content-type": "application/json" }, body: JSON.stringify(body) });

before(() => {
  assert.ok(existsSync(join(ROOT, "pkg/dist/lean/idem_bg.wasm")), "pkg/dist is not built: run scripts/build-wasm.sh first");
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", TMP], { cwd: join(ROOT, "pkg"), env: ENV, encoding: "utf8" });
  [packed] = JSON.parse(out.slice(out.indexOf("[")));
  const kib = (b) => `${(b / 1024).toFixed(1)} KiB`;
  console.log(`consumer: ${packed.filename}: ${packed.entryCount} files, packed ${kib(packed.size)}, unpacked ${kib(packed.unpackedSize)}`);

  mkdirSync(APP);
  writeFileSync(
    join(APP, "package.json"),
    JSON.stringify({ name: "orders", private: true, type: "module", dependencies: { idem: `file:${join(TMP, packed.filename)}` } }, null, 2),
  );
  // The package's one dependency (json-schema-to-ts, types only) comes from npm's cache, or the
  // registry when the cache lacks it; the package itself only from the tarball.
  run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"]);
  readme = readFileSync(join(APP, "node_modules/idem/README.md"), "utf8");
  writeBlock("order.json");
});

after(() => {
  for (const child of children) stop(child);
  rmSync(TMP, { recursive: true, force: true });
});

test("the tarball holds the package's modules, declarations, wasm, schema, README and licences, and nothing else", () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, "pkg/package.json"), "utf8"));
  const files = packed.files.map((f) => f.path).sort();
  const want = new Set(["package.json", "README.md", "LICENSE-MIT", "LICENSE-APACHE"]);
  for (const f of ["idem.js", "idem_bg.wasm", "lean/idem.js", "lean/idem_bg.wasm"]) want.add(`dist/${f}`);
  for (const f of readdirSync(join(ROOT, "pkg/d1/migrations"))) want.add(`d1/migrations/${f}`);
  for (const [sub, target] of Object.entries(pkg.exports)) {
    if (sub === "./package.json") continue;
    for (const file of Object.values(target)) want.add(file.replace(/^\.\//, ""));
  }
  // What the exported files load or name: the shared bundle, and the declarations' own imports.
  want.add("dist/js/bundle.js");
  // `npx idem` (package.json "bin"), tested by tests/consumer/cli.test.mjs.
  want.add("bin/idem.mjs");
  want.add("dist/js/stores/limit.d.ts");
  assert.deepEqual(files, [...want].sort());
  for (const internal of ["kept", "limit", "hosting", "analysis"]) {
    assert.ok(!files.some((f) => f.endsWith(`/${internal}.js`)), `${internal}.js is internal`);
  }
  assert.equal(pkg.exports["./stores/kept"], undefined);
  assert.equal(pkg.exports["./stores/limit"], undefined);
  assert.equal(packed.entryCount, want.size);
});

test("npm pack in a clone that was never built refuses, naming the build", () => {
  const clone = join(TMP, "clone");
  cpSync(join(ROOT, "pkg"), join(clone, "pkg"), { recursive: true, filter: (src) => !src.includes(`${join(ROOT, "pkg")}/dist`) });
  cpSync(join(ROOT, "scripts/bundle-js.mjs"), join(clone, "scripts/bundle-js.mjs"));
  symlinkSync(join(ROOT, "node_modules"), join(clone, "node_modules"));
  assert.ok(!existsSync(join(clone, "pkg/dist")));
  const r = spawnSync("npm", ["pack", "--dry-run"], { cwd: join(clone, "pkg"), env: ENV, encoding: "utf8" });
  assert.notEqual(r.status, 0, `npm pack succeeded without dist/:\n${r.stdout}`);
  assert.match(r.stderr, /missing: run scripts\/build-wasm\.sh before npm pack/);
});

test("(a) the README's quick example runs under Node.js from the installed package and prints what it says", () => {
  const code = writeBlock("example.mjs");
  const printed = run(process.execPath, ["example.mjs"]).trimEnd().split("\n");
  assert.deepEqual(printed, announced(code));
  assert.ok(printed.length >= 5);
});

test("an installed user catches every error idem throws as an IdemError (both wasm modules, host, stores)", () => {
  writeFileSync(
    join(APP, "errors.mjs"),
    `import { ContentionError, IdemError, Machine, importXState } from "idem";
import { StoreLimitError } from "idem/stores/durable";
const caught = (fn) => { try { fn(); } catch (err) { return err; } throw new Error("nothing thrown"); };
const errors = [
  caught(() => new Machine('{"id":')),
  caught(() => new Machine({ id: "m", initial: "a", states: { a: {} } }).reduce(null, { id: "e1", type: "GO" }, 1)),
  caught(() => importXState("{not json")),
  new ContentionError("o1", 3),
  new StoreLimitError("too big"),
];
for (const e of errors) console.log(JSON.stringify([e instanceof IdemError, e instanceof Error, e.code, e.path ?? null]));
console.log(JSON.stringify(Object.assign(new Error("x"), { name: "IdemError", code: "usage" }) instanceof IdemError));
`,
  );
  const lines = run(process.execPath, ["errors.mjs"]).trimEnd().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines, [
    [true, true, "invalid_json", null],
    [true, true, "missing_process_id", "processId"],
    [true, true, "invalid_json", null],
    [true, true, "contention", null],
    [true, true, "snapshot_too_large", null],
    false,
  ]);
});

test("(b) tsc --strict with module nodenext checks a program importing every subpath, and the README's TypeScript section, with no paths and no allowJs", () => {
  cpSync(join(ROOT, "tests/consumer/usage.ts"), join(APP, "usage.ts"));
  // A definition written `as const` types the machine's events (payloads from its schemas, read by
  // the package's dependency json-schema-to-ts): the block's `@ts-expect-error`s must each be an error.
  const typed = writeBlock("typed.ts");
  assert.match(typed, /as const;/);
  assert.ok((typed.match(/@ts-expect-error/g) ?? []).length >= 2, "the TypeScript section shows refused events");
  writeFileSync(
    join(APP, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "es2022", module: "nodenext", moduleResolution: "nodenext", lib: ["es2023", "dom"], types: [],
        strict: true, noEmit: true, skipLibCheck: false, exactOptionalPropertyTypes: true, noUnusedLocals: true,
      },
      files: ["usage.ts", "typed.ts"],
    }),
  );
  run(join(BIN, "tsc"), ["-p", "."]);
  // usage.ts imports each subpath the package exports (so a new one must be added there).
  const usage = readFileSync(join(APP, "usage.ts"), "utf8");
  const pkg = JSON.parse(readFileSync(join(APP, "node_modules/idem/package.json"), "utf8"));
  for (const sub of Object.keys(pkg.exports)) {
    if (sub === "./package.json") continue;
    const name = sub === "." ? "idem" : `idem/${sub.slice(2)}`;
    assert.ok(usage.includes(`from "${name}";`), `usage.ts does not import "${name}"`);
  }
  // No `any` in what the package declares: it would let every mistake through.
  for (const f of packed.files.map((x) => x.path).filter((p) => p.endsWith(".d.ts"))) {
    const text = readFileSync(join(APP, "node_modules/idem", f), "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
    assert.doesNotMatch(text, /\bany\b/, `${f} declares \`any\``);
  }
});

test("what a typed machine refuses at compile time, the engine refuses at run time, and what it accepts, the engine takes", () => {
  // The rules of EventOf (index.d.ts), checked against the installed engine: a payload is required
  // when its schema refuses null; a declared type no state handles is accepted (and ignored); an
  // effect's outcome and an unnamed type are refused.
  writeFileSync(
    join(APP, "typed-rules.mjs"),
    `import { Machine } from "idem";
const m = new Machine({
  id: "m", initial: "a",
  events: { PAY: { payload: { type: "object", required: ["amount"] } }, REFUND: { payload: { type: ["object", "null"] } }, PING: { description: "declared only" } },
  states: { a: { entry: [{ effect: { type: "charge", payload: 1 } }], on: { PAY: "a", REFUND: "a", "charge.succeeded": "a" } } },
});
const events = [{ type: "PAY" }, { type: "PAY", payload: { amount: 1 } }, { type: "REFUND" }, { type: "PING" }, { type: "charge.succeeded" }, { type: "PAYY" }];
for (const [i, e] of events.entries()) {
  const o = m.reduce(null, { id: "e" + i, ...e }, 1, "p");
  console.log(JSON.stringify([e.type, o.status, o.error?.code ?? null]));
}
`,
  );
  const lines = run(process.execPath, ["typed-rules.mjs"]).trimEnd().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines, [
    ["PAY", "rejected", "invalid_payload"],
    ["PAY", "applied", null],
    ["REFUND", "applied", null],
    ["PING", "ignored", null],
    ["charge.succeeded", "rejected", "reserved_event"],
    ["PAYY", "rejected", "unknown_event_type"],
  ]);
});

test("(c) the Deno section: deno check, then deno run serving an event, its replay and its effect through Deno KV's queue", async () => {
  const code = writeBlock("main.ts");
  assert.match(code, /from "npm:idem"/);
  assert.match(code, /new DenoKvStore\(kv\b/);
  const command = readme.match(/^deno run (.*) main\.ts$/m);
  assert.ok(command, "the README names the deno run command");
  const flags = command[1].split(" ");
  assert.ok(flags.includes("--allow-read"), "the README's command allows reading the wasm");
  run(join(BIN, "deno"), ["check", "--unstable-kv", "main.ts"]);
  const port = await freePort();
  const server = start(join(BIN, "deno"), ["run", ...flags, "main.ts"], { PORT: String(port) });
  const url = `http://127.0.0.1:${port}/processes/order-1/events`;
  await until(server, "deno serves", () => fetch(`http://127.0.0.1:${port}/`).then((r) => r.ok, () => false));
  const body = { type: "PAY", payload: { paymentId: "p1", amount: 100 } };
  const first = await post(url, "pay-1", body);
  assert.equal(first.status, 201, await first.clone().text());
  const again = await post(url, "pay-1", body);
  assert.equal(again.status, 201);
  assert.equal(again.headers.get("idempotency-replayed"), "true");
  assert.deepEqual(await again.json(), await first.json());
  await until(server, "the ship effect is dispatched from the queue", () => server.log.includes("ship [\"p1\"] (Idempotency-Key: order-1/pay-1:0)"));
  assert.equal(server.log.split("ship [").length - 1, 1, server.log);
  stop(server);
});

test("(d) the Worker section under wrangler dev: migrations from the package, an event applied and replayed, its effect dispatched", async () => {
  writeBlock("wrangler.toml");
  writeBlock("src/worker.js");
  const persist = join(TMP, "wrangler-state");
  const wrangler = join(BIN, "wrangler");
  const first = run(wrangler, ["d1", "migrations", "apply", "orders", "--local", "--persist-to", persist]);
  assert.match(first, /0001_init\.sql/);
  assert.match(first, /0002_snapshot_chunks\.sql/);
  const second = run(wrangler, ["d1", "migrations", "apply", "orders", "--local", "--persist-to", persist]);
  assert.match(second, /No migrations to apply/);

  // The Cloudflare stores against Cloudflare's own declarations of what a Worker is handed.
  run(wrangler, ["types"]);
  cpSync(join(ROOT, "tests/consumer/cloudflare.ts"), join(APP, "cloudflare.ts"));
  writeFileSync(
    join(APP, "tsconfig.cloudflare.json"),
    JSON.stringify({
      compilerOptions: { target: "es2022", module: "nodenext", lib: ["es2023"], types: [], strict: true, noEmit: true, skipLibCheck: true },
      files: ["worker-configuration.d.ts", "cloudflare.ts"],
    }),
  );
  run(join(BIN, "tsc"), ["-p", "tsconfig.cloudflare.json"]);

  const port = await freePort();
  const inspector = await freePort();
  const worker = start(wrangler, [
    "dev", "--local", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector),
    "--persist-to", persist, "--show-interactive-dev-session=false",
  ]);
  const base = `http://127.0.0.1:${port}/api`;
  await until(worker, "wrangler dev serves", () => fetch(`${base}/`).then((r) => r.ok, () => false));
  const body = { type: "PAY", payload: { paymentId: "p1", amount: 100 } };
  const applied = await post(`${base}/processes/order-1/events`, "pay-1", body);
  assert.equal(applied.status, 201, await applied.clone().text());
  assert.equal(applied.headers.get("location"), "/api/processes/order-1");
  const replay = await post(`${base}/processes/order-1/events`, "pay-1", body);
  assert.equal(replay.status, 201);
  assert.equal(replay.headers.get("idempotency-replayed"), "true");
  assert.deepEqual(await replay.json(), await applied.json());
  await until(worker, "the ship effect is dispatched after the reply", () => worker.log.includes("ship [\"p1\"] (Idempotency-Key: order-1/pay-1:0)"));
  const process = await (await fetch(`${base}/processes/order-1`)).json();
  assert.deepEqual(process.value, "paid");
  // The cron's handler, run on request as the README says to run it locally: it finds nothing due
  // (the effect went out after the reply) and fails on nothing.
  const cronCommand = readme.match(/^curl "localhost:8787(\/\S+)"/m);
  assert.ok(cronCommand, "the README says how to run the cron under wrangler dev");
  const cron = await fetch(`http://127.0.0.1:${port}${cronCommand[1]}`);
  assert.equal(cron.status, 200, await cron.text());
  stop(worker);
  // No warning; wrangler's notice that crons do not fire by themselves in local development is
  // not about the Worker. (esbuild keeps its warnings about code in node_modules to itself:
  // tests/js/package.test.mjs bundles the entries and allows none, a duplicate key was one.)
  const log = worker.log.replace(/\x1b\[[0-9;]*m/g, "");
  const warnings = log.split("\n").filter((l) => /\[WARNING\]/.test(l) && !/Scheduled Workers are not automatically triggered/.test(l));
  assert.deepEqual(warnings, [], log);
  assert.doesNotMatch(log, /Duplicate key|ERROR|Uncaught/, log);
});

test("(e) the Browser section in headless Chromium: plain ES modules from node_modules, IndexedDB, a duplicate counted once", async () => {
  writeBlock("index.html");
  const code = writeBlock("browser.js");
  const types = { html: "text/html", js: "text/javascript", json: "application/json", wasm: "application/wasm" };
  const server = createHttpServer((req, res) => {
    const { pathname } = new URL(req.url, "http://x");
    if (pathname === "/favicon.ico") return res.writeHead(204).end();
    const file = join(APP, decodeURIComponent(pathname));
    if (!file.startsWith(APP) || !existsSync(file)) return res.writeHead(404).end();
    res.writeHead(200, { "content-type": types[file.split(".").pop()] ?? "application/octet-stream" }).end(readFileSync(file));
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const browser = await chromium.launch({ executablePath: process.env.IDEM_CHROMIUM ?? "/usr/bin/chromium" });
  try {
    const page = await browser.newPage();
    const printed = [];
    const failures = [];
    page.on("console", (m) => (m.type() === "log" ? printed.push(m.text()) : failures.push(`${m.text()} (${m.location().url})`)));
    page.on("pageerror", (err) => failures.push(String(err)));
    await page.goto(`http://127.0.0.1:${server.address().port}/index.html`);
    const end = Date.now() + 30_000;
    while (printed.length < announced(code).length && failures.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(failures, []);
    assert.deepEqual(printed, announced(code));
  } finally {
    await browser.close();
    server.close();
  }
});
