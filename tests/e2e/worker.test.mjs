// The demo page served by the Cloudflare Worker (examples/cloudflare) on local workerd
// (`wrangler dev --local`, D1 in a temporary directory): the page loads the engine from the
// Worker's static assets, finds the Worker's API and, in Worker mode, sends the same events
// over HTTP, showing status codes and the replay header.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { ROOT, act, activeAtoms, chooseMachine, pay, readView, screenshot, settle } from "./browser.mjs";

const CONFIG = join(ROOT, "examples/cloudflare/wrangler.toml");
const WRANGLER = join(ROOT, "node_modules/.bin/wrangler");
const ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" };

let worker; // the wrangler child process
let persist;
let url;
let browser;

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

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: ROOT, env: ENV, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed:\n${r.stdout}\n${r.stderr}`);
}

before(async () => {
  persist = mkdtempSync(join(tmpdir(), "idem-e2e-worker-"));
  run(process.execPath, [join(ROOT, "examples/cloudflare/build-assets.mjs")]);
  run(WRANGLER, ["d1", "migrations", "apply", "idem", "--local", "--persist-to", persist, "--config", CONFIG]);
  const port = await freePort();
  const inspector = await freePort();
  let log = "";
  worker = spawn(
    WRANGLER,
    ["dev", "--config", CONFIG, "--local", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector),
      "--persist-to", persist, "--show-interactive-dev-session=false", "--log-level", "warn"],
    { cwd: ROOT, env: ENV, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  worker.stdout.on("data", (d) => (log += d));
  worker.stderr.on("data", (d) => (log += d));
  url = `http://127.0.0.1:${port}/`;
  for (let i = 0; ; i++) {
    if (worker.exitCode !== null) throw new Error(`wrangler dev exited:\n${log}`);
    const ok = await fetch(`${url}api/health`).then((r) => r.ok, () => false);
    if (ok) break;
    if (i > 600) throw new Error(`the Worker did not answer /api/health:\n${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  browser = await chromium.launch({
    executablePath: process.env.IDEM_CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  if (worker && worker.exitCode === null) {
    const exited = new Promise((r) => worker.once("exit", r));
    process.kill(-worker.pid, "SIGTERM"); // the process group wrangler started (workerd included)
    await exited;
  }
  if (persist) rmSync(persist, { recursive: true, force: true });
});

async function open() {
  const context = await browser.newContext({ viewport: { width: 1360, height: 1000 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(url);
  await page.waitForSelector("body[data-ready=true]");
  return { context, page, errors };
}

test("served by the Worker, the page runs the in-browser engine from the Worker's assets", async () => {
  const { page, context, errors } = await open();
  assert.equal(await page.isVisible("#worker-panel"), true, "the Worker's API was found");
  assert.equal(await page.$eval("#mode", (e) => e.dataset.mode), "local");
  const first = await pay(page, "p1", 60, { expect: "applied" });
  const again = await act(page, "#again", { expect: "duplicate" });
  assert.deepEqual(again.context, first.context);
  assert.deepEqual(errors, []);
  await context.close();
});

test("in Worker mode the same events go over HTTP: 201, then the replay with Idempotency-Replayed, then 422", async () => {
  const { page, context, errors } = await open();
  await page.check('input[name="target"][value="worker"]');
  await page.waitForFunction(() => document.querySelector("#mode").dataset.mode === "worker");
  await settle(page);
  const pid = await page.textContent("#process-id");
  assert.match(pid, /^order-[a-z0-9]+-robust$/);

  const first = await pay(page, "p1", 60, { expect: "applied" });
  assert.match(first.statusText, /HTTP 201/);
  assert.equal(first.context.paid, "60");

  const again = await act(page, "#again", { expect: "duplicate" });
  assert.match(again.statusText, /HTTP 201 · replayed/, "the first status comes back, marked as a replay");
  assert.match(again.statusText, /recorded p1/);
  assert.deepEqual(again.context, first.context);
  assert.equal(again.revision, first.revision);

  const conflict = await act(page, "#conflict", { expect: "conflict" });
  assert.match(conflict.statusText, /HTTP 422/);
  assert.match(conflict.statusText, /id_conflict/);

  // what the page shows is what the Worker stored
  const stored = await page.evaluate((id) => fetch(`/processes/${id}`).then((r) => r.json()), pid);
  assert.equal(stored.context.paid, 60);
  assert.equal(stored.revision, 1);

  // a lost response and a retry, then the Worker's dispatcher charges and the order is paid
  await page.fill("#payment-id", "p2");
  await page.fill("#amount", "40");
  const lost = await act(page, "#lost", { expect: "duplicate" });
  assert.match(lost.statusText, /HTTP 200 · replayed/);
  await page.waitForFunction(() => document.querySelector("#state-name").textContent === "paid", null, { timeout: 20_000 });
  await settle(page);
  const paid = await readView(page);
  assert.equal(paid.context.paid, "100");
  assert.ok(paid.outbox.some((e) => e.state === "succeeded"), "the charge effect succeeded on the Worker");
  await screenshot(page, "07-worker-mode");
  assert.deepEqual(errors, []);
  await context.close();
});

test("in Worker mode the parallel machine runs on the Worker: each region's state, SHIP refused until paid, the replay", async () => {
  const { page, context, errors } = await open();
  await chooseMachine(page, "parallel");
  await page.check('input[name="target"][value="worker"]');
  await page.waitForFunction(() => document.querySelector("#mode").dataset.mode === "worker");
  await settle(page);
  const pid = await page.textContent("#process-id");
  assert.match(pid, /^order-[a-z0-9]+-parallel$/);

  const packed = await act(page, "#send-PACKED", { expect: "applied" });
  assert.match(packed.statusText, /HTTP 201/);
  assert.equal(packed.state, "open.payment.collecting ∥ open.fulfilment.packed");
  assert.deepEqual(await activeAtoms(page), ["open.fulfilment.packed", "open.payment.collecting"]);

  const early = await act(page, "#send-SHIP", { expect: "ignored" });
  assert.match(early.statusText, /HTTP 409/);

  await pay(page, "p1", 100, { expect: "applied" });
  // the Worker's dispatcher charges; the page follows
  await page.waitForFunction(() => document.querySelector("#state-name").textContent === "open.payment.paid ∥ open.fulfilment.packed", null, { timeout: 20_000 });
  await settle(page);
  assert.deepEqual(await activeAtoms(page), ["open.fulfilment.packed", "open.payment.paid"]);

  const shipped = await act(page, "#send-SHIP", { expect: "applied" });
  assert.equal(shipped.state, "complete");
  assert.match(shipped.statusText, /HTTP 200/, "the process exists: 200, not 201");
  const again = await act(page, "#again", { expect: "duplicate" });
  assert.match(again.statusText, /HTTP 200 · replayed/, "the first status comes back, marked as a replay");
  assert.equal(again.revision, shipped.revision);

  // what the page shows is what the Worker stored, under the parallel machine
  const stored = await page.evaluate((id) => fetch(`/processes/${id}`).then((r) => r.json()), pid);
  assert.equal(stored.value, "complete");
  assert.deepEqual(stored.outbox.map((e) => e.type).sort(), ["charge", "ship"]);
  assert.deepEqual(errors, []);
  await context.close();
});
