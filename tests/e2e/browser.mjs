// Shared set-up for the end-to-end tests: a static server on a free port (scripts/serve.mjs:
// www/ at /, pkg/ at /pkg/) and headless Chromium driven by playwright-core.

import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { serve } from "../../scripts/serve.mjs";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const SCREENSHOTS = fileURLToPath(new URL("../../docs/screenshots/", import.meta.url));

const CHROMIUM = process.env.IDEM_CHROMIUM ?? "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Start the server and the browser once per test file. */
export async function startAll() {
  if (!existsSync(new URL("../../pkg/dist/idem_bg.wasm", import.meta.url))) {
    throw new Error("pkg/dist/idem_bg.wasm is missing: run scripts/build-wasm.sh first");
  }
  mkdirSync(SCREENSHOTS, { recursive: true });
  // IDEM_E2E_URL: run the page tests against a server started elsewhere (www/ at its root)
  const server = process.env.IDEM_E2E_URL ? { url: process.env.IDEM_E2E_URL, close: async () => {} } : await serve({ port: 0 });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  return {
    url: server.url,
    browser,
    async close() {
      await browser.close();
      await server.close();
    },
  };
}

/**
 * A fresh browser context (its own IndexedDB and localStorage) with the demo page loaded.
 * Page errors fail the test that reads `errors`.
 */
export async function openDemo({ browser, url }, { viewport = { width: 1360, height: 1000 } } = {}) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(url);
  await page.waitForSelector("body[data-ready=true]");
  return { context, page, errors };
}

/** The numbers and names the tests compare, read from the page as a visitor sees them. */
export async function readView(page) {
  return page.evaluate(() => {
    const text = (sel) => document.querySelector(sel)?.textContent?.trim() ?? null;
    const context = {};
    for (const dd of document.querySelectorAll("#context dd")) context[dd.dataset.key] = dd.textContent;
    return {
      status: document.querySelector("#status").dataset.status,
      statusText: text("#status"),
      state: text("#state-name"),
      revision: text("#revision"),
      context,
      ledger: [...document.querySelectorAll("#ledger tr[data-id]")].map((tr) => tr.dataset.id),
      outbox: [...document.querySelectorAll("#outbox tr[data-key]")].map((tr) => ({ key: tr.dataset.key, state: tr.dataset.state })),
      deliveries: document.querySelectorAll("#history tr[data-status]").length,
      charges: Number(text("#gateway-charges")),
      chargedAmount: Number(document.querySelector("#gateway-charges").dataset.amount ?? 0),
      calls: Number(text("#gateway-calls")),
      chargesByKey: [...document.querySelectorAll("#gateway-rows tr[data-charges]")].map((tr) => Number(tr.dataset.charges)),
    };
  });
}

/** Click and wait until the status line reports an outcome for that click. */
export async function act(page, selector, { expect } = {}) {
  const before = await page.evaluate(() => document.querySelector("#status").dataset.seq ?? "0");
  await page.click(selector);
  await page.waitForFunction((b) => (document.querySelector("#status").dataset.seq ?? "0") !== b, before);
  await settle(page);
  if (expect) await page.waitForSelector(`#status[data-status="${expect}"]`);
  return readView(page);
}

/** Wait until the page's operation queue is empty (the dispatcher included). */
export async function settle(page) {
  await page.waitForFunction(() => document.body.dataset.busy === "0");
}

/** Fill the payment form and send it. */
export async function pay(page, paymentId, amount, opts) {
  await page.fill("#payment-id", paymentId);
  await page.fill("#amount", String(amount));
  return act(page, "#send-PAYMENT_PARTIAL", opts);
}

export async function chooseMachine(page, variant) {
  await page.check(`input[name="variant"][value="${variant}"]`);
  await page.waitForSelector(`#status[data-status="switch"]`);
  await page.waitForFunction((v) => document.querySelector("#process-id").textContent.endsWith(v), variant);
}

/**
 * The diagram's active atomic states (those without an active state inside), sorted: one per
 * region of an active parallel state.
 */
export async function activeAtoms(page) {
  return page.$$eval("#diagram .state.active", (gs) => {
    const paths = gs.map((g) => g.dataset.state);
    return paths.filter((p) => !paths.some((q) => q.startsWith(`${p}.`))).sort();
  });
}

/**
 * Save the page as docs/screenshots/NAME.png when asked (`IDEM_SCREENSHOTS=1`): the files are
 * tracked, and a test run that is not meant to refresh them leaves the tree as it found it.
 */
export async function screenshot(page, name) {
  if (!process.env.IDEM_SCREENSHOTS) return;
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
}
