// The demo page in headless Chromium: what a visitor sees when an event arrives twice.
//
//   node --test tests/e2e/        (or: node tests/e2e/run.mjs)
//
// Each test opens the page in a fresh browser context (its own IndexedDB and
// localStorage). Screenshots of the main views go to docs/screenshots/
// with IDEM_SCREENSHOTS=1 (scripts/test.sh leaves them as they are otherwise).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { act, activeAtoms, chooseMachine, openDemo, pay, readView, screenshot, settle, startAll } from "./browser.mjs";

let env;
before(async () => {
  env = await startAll();
});
after(async () => {
  await env?.close();
});

test("a duplicate delivery leaves the state and the counters unchanged and says duplicate", async () => {
  const { page, context, errors } = await openDemo(env);
  const first = await pay(page, "p1", 40, { expect: "applied" });
  assert.equal(first.context.paid, "40");
  assert.equal(first.context.payments, '["p1"]');
  assert.equal(first.revision, "revision 1");
  assert.equal(first.ledger.length, 1);

  const again = await act(page, "#again", { expect: "duplicate" });
  assert.match(again.statusText, /duplicate/i);
  assert.match(again.statusText, /recorded p1/, "the frozen response comes back");
  assert.deepEqual(again.context, first.context);
  assert.equal(again.state, first.state);
  assert.equal(again.revision, first.revision);
  assert.deepEqual(again.ledger, first.ledger);
  assert.equal(again.deliveries, first.deliveries + 1, "the delivery is listed");

  // and a third time, by keyboard: focus the button and press Enter
  await page.focus("#again");
  const seq = await page.$eval("#status", (s) => s.dataset.seq);
  await page.keyboard.press("Enter");
  await page.waitForFunction((b) => document.querySelector("#status").dataset.seq !== b, seq);
  await settle(page);
  const third = await readView(page);
  assert.equal(third.status, "duplicate");
  assert.deepEqual(third.context, first.context);
  assert.equal(third.revision, first.revision);

  await screenshot(page, "01-duplicate");
  assert.deepEqual(errors, []);
  await context.close();
});

test("the same id with a different payload is a conflict and is not applied", async () => {
  const { page, context, errors } = await openDemo(env);
  const first = await pay(page, "p1", 30, { expect: "applied" });
  const c = await act(page, "#conflict", { expect: "conflict" });
  assert.match(c.statusText, /id_conflict/);
  assert.deepEqual(c.context, first.context);
  assert.equal(c.revision, first.revision);
  assert.deepEqual(errors, []);
  await context.close();
});

test("the fragile machine double-counts a redelivered payment where the robust one does not", async () => {
  const { page, context, errors } = await openDemo(env);

  // robust: the same payment under a new event id is recognised by its payment id
  await pay(page, "p1", 60, { expect: "applied" });
  const robust = await act(page, "#new-id", { expect: "ignored" });
  assert.equal(robust.context.paid, "60");
  assert.equal(robust.context.payments, '["p1"]');
  assert.equal(robust.state, "payment.collecting");

  // fragile: a counter cannot tell, and the order goes on to charge 120 for 100
  await chooseMachine(page, "fragile");
  await pay(page, "p1", 60, { expect: "applied" });
  const fragile = await act(page, "#new-id", { expect: "applied" });
  assert.equal(fragile.context.paid, "120");
  await page.waitForFunction(() => document.querySelector("#state-name").textContent === "paid");
  await settle(page);
  const charged = await readView(page);
  assert.equal(charged.charges, 1);
  assert.equal(charged.chargedAmount, 120, "the fragile order charged the double-counted amount");
  await screenshot(page, "02-fragile-double-count");

  // the robust process is untouched by what happened to the fragile one
  await chooseMachine(page, "robust");
  const back = await readView(page);
  assert.equal(back.context.paid, "60");
  assert.equal(back.charges, 0);
  assert.deepEqual(errors, []);
  await context.close();
});

test("past the retention window a late duplicate is judged by the state: the set holds, the counter does not", async () => {
  const { page, context, errors } = await openDemo(env);
  await pay(page, "p1", 50, { expect: "applied" });
  await chooseMachine(page, "fragile");
  await pay(page, "p1", 50, { expect: "applied" });

  await act(page, "#advance", { expect: "clock" });
  const fragile = await act(page, "#again", { expect: "applied" });
  assert.match(fragile.statusText, /no longer remembers/);
  assert.equal(fragile.context.paid, "100", "the forgotten id is applied again and counted twice");

  await chooseMachine(page, "robust");
  const robust = await act(page, "#again", { expect: "ignored" });
  assert.match(robust.statusText, /no longer remembers/);
  assert.equal(robust.context.paid, "50", "the payment id is still in the set");
  assert.equal(robust.state, "payment.collecting");
  await screenshot(page, "03-late-duplicate");
  assert.deepEqual(errors, []);
  await context.close();
});

test("a reload keeps the processes (IndexedDB), and the ledger still knows the ids", async () => {
  const { page, context, errors } = await openDemo(env);
  const before = await pay(page, "p1", 70, { expect: "applied" });
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  await settle(page);
  const after = await readView(page);
  assert.deepEqual(after.context, before.context);
  assert.equal(after.revision, before.revision);
  assert.deepEqual(after.ledger, before.ledger);

  // the row is really in IndexedDB, written through the store
  const stored = await page.evaluate(async () => {
    const { openIndexedDBStore } = await import("/pkg/src/stores/indexeddb.js");
    const store = await openIndexedDBStore({ name: "idem-demo" });
    const row = await store.load("order-42-robust");
    const log = await store.events("order-42-robust");
    store.close();
    return { version: row?.version, isString: typeof row?.snapshot === "string", log: log.map((r) => r.type) };
  });
  assert.equal(stored.version, 1);
  assert.equal(stored.isString, true);
  assert.deepEqual(stored.log, ["PAYMENT_PARTIAL"]);

  const again = await act(page, "#again", { expect: "duplicate" });
  assert.deepEqual(again.context, before.context);

  // reset clears it
  await act(page, "#reset", { expect: "reset" });
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  await settle(page);
  const cleared = await readView(page);
  assert.equal(cleared.context.paid, "0");
  assert.equal(cleared.ledger.length, 0);
  assert.deepEqual(errors, []);
  await context.close();
});

test("a lost response and a client retry: applied once, the retry gets the first response", async () => {
  const { page, context, errors } = await openDemo(env);
  await page.fill("#payment-id", "p7");
  await page.fill("#amount", "25");
  const v = await act(page, "#lost", { expect: "duplicate" });
  assert.match(v.statusText, /retried with the same id/);
  assert.match(v.statusText, /recorded p7/);
  assert.equal(v.context.paid, "25");
  assert.equal(v.revision, "revision 1");
  assert.equal(v.deliveries, 2);
  assert.deepEqual(errors, []);
  await context.close();
});

for (const [variant, label] of [
  ["robust", "a gateway that honours idempotency keys"],
  ["robust-nokeys", "a gateway without keys (the verify path)"],
]) {
  test(`the gateway charges once through a lost response: ${label}`, async () => {
    const { page, context, errors } = await openDemo(env);
    if (variant !== "robust") await chooseMachine(page, variant);
    await page.selectOption("#gateway-mode", "drop");
    await pay(page, "p1", 100, { expect: "applied" });
    // the charge went through, its response was lost: the engine retries (same key) or
    // asks the gateway first; step the clock to each retry instead of waiting for it
    for (let i = 0; i < 6; i++) {
      await settle(page);
      if ((await readView(page)).state === "paid") break;
      if (await page.isEnabled("#next-due")) await page.click("#next-due");
      await settle(page);
    }
    await page.waitForFunction(() => document.querySelector("#state-name").textContent === "paid");
    await settle(page);
    const v = await readView(page);
    assert.equal(v.charges, 1, "one charge at the gateway");
    assert.deepEqual(v.chargesByKey, [1]);
    assert.equal(v.chargedAmount, 100);
    assert.ok(v.calls >= 2, `the gateway was asked again (calls: ${v.calls})`);
    const charge = v.outbox.find((e) => e.key.endsWith(":0") && e.state === "succeeded");
    assert.ok(charge, "the charge effect succeeded");
    const log = await page.$$eval("#dispatch-log li", (lis) => lis.map((li) => li.textContent));
    if (variant === "robust") assert.ok(log.some((l) => /attempt 2 of charge: succeeded/.test(l)), log.join("\n"));
    else assert.ok(log.some((l) => /verify charge .*verified-exists/.test(l)), log.join("\n"));
    await screenshot(page, variant === "robust" ? "04-gateway-lost-response" : "05-gateway-verify");
    assert.deepEqual(errors, []);
    await context.close();
  });
}

for (const [mode, finalState, charges, step] of [
  ["timeout", "paid", 1, /attempt 1 of charge: unknown/],
  ["fail", "paid", 1, /attempt 1 of charge: failed/],
  ["decline", "review", 0, /attempt 1 of charge: failed → review/],
]) {
  test(`gateway fault "${mode}" on the next charge: the order ends in ${finalState} with ${charges} charge(s)`, async () => {
    const { page, context, errors } = await openDemo(env);
    await page.selectOption("#gateway-mode", mode);
    await pay(page, "p1", 100, { expect: "applied" });
    for (let i = 0; i < 6; i++) {
      await settle(page);
      if ((await readView(page)).state === finalState) break;
      if (await page.isEnabled("#next-due")) await page.click("#next-due");
      await settle(page);
    }
    await page.waitForFunction((s) => document.querySelector("#state-name").textContent === s, finalState);
    await settle(page);
    const v = await readView(page);
    assert.equal(v.charges, charges);
    const log = await page.$$eval("#dispatch-log li", (lis) => lis.map((li) => li.textContent));
    assert.ok(log.some((l) => step.test(l)), log.join("\n"));
    assert.equal(await page.inputValue("#gateway-mode"), "normal", "the fault was used up");
    assert.deepEqual(errors, []);
    await context.close();
  });
}

test("the parallel machine: each region's active state on the diagram, SHIP only once paid, a duplicate answered as a replay", async () => {
  const { page, context, errors } = await openDemo(env);
  await chooseMachine(page, "parallel");
  const both = (payment, fulfilment) => `open.payment.${payment} ∥ open.fulfilment.${fulfilment}`;
  const start = await readView(page);
  assert.equal(start.state, both("collecting", "packing"));
  assert.deepEqual(await activeAtoms(page), ["open.fulfilment.packing", "open.payment.collecting"]);

  // the regions side by side in the parallel state, one dashed line between them
  const geometry = await page.evaluate(() => {
    const box = (p) => {
      const r = document.querySelector(`#diagram [data-state="${p}"] > rect`);
      return { x: +r.getAttribute("x"), y: +r.getAttribute("y"), w: +r.getAttribute("width"), h: +r.getAttribute("height") };
    };
    const line = document.querySelector('#diagram .state.parallel[data-state="open"] line.separator');
    return {
      open: box("open"),
      payment: box("open.payment"),
      fulfilment: box("open.fulfilment"),
      separators: document.querySelectorAll("#diagram line.separator").length,
      line: line && { x: +line.getAttribute("x1"), dash: getComputedStyle(line).strokeDasharray },
    };
  });
  const { open, payment, fulfilment, line } = geometry;
  assert.equal(geometry.separators, 1);
  assert.ok(payment.x + payment.w <= fulfilment.x, JSON.stringify(geometry));
  assert.equal(payment.y, fulfilment.y, "the regions start on one line");
  assert.equal(payment.h, fulfilment.h, "and are as tall as each other");
  assert.ok(payment.x >= open.x && fulfilment.x + fulfilment.w <= open.x + open.w, "inside the parallel state");
  assert.equal(line.x, fulfilment.x, "the separator is at the seam");
  assert.notEqual(line.dash, "none", "dashed");

  // PACKED moves the fulfilment region alone
  const packed = await act(page, "#send-PACKED", { expect: "applied" });
  assert.equal(packed.state, both("collecting", "packed"));
  assert.deepEqual(await activeAtoms(page), ["open.fulfilment.packed", "open.payment.collecting"]);

  // SHIP before the payment region is paid: the in_state guard says no, nothing is written
  const early = await act(page, "#send-SHIP", { expect: "ignored" });
  assert.equal(early.revision, packed.revision);
  assert.equal(early.state, packed.state);

  // paid in full: the payment region charges through the outbox and reaches paid
  await pay(page, "p1", 100, { expect: "applied" });
  await page.waitForFunction((s) => document.querySelector("#state-name").textContent === s, both("paid", "packed"));
  await settle(page);
  const paid = await readView(page);
  assert.deepEqual(await activeAtoms(page), ["open.fulfilment.packed", "open.payment.paid"]);
  assert.equal(paid.charges, 1);
  assert.equal(paid.chargedAmount, 100);
  assert.ok(paid.outbox.some((e) => e.state === "succeeded"), JSON.stringify(paid.outbox));

  // the payment delivered again: a replay of the first answer, nothing written
  const dup = await act(page, "#again", { expect: "duplicate" });
  assert.match(dup.statusText, /recorded p1/);
  assert.deepEqual(dup.context, paid.context);
  assert.equal(dup.revision, paid.revision);
  assert.equal(dup.state, paid.state);
  await screenshot(page, "08-parallel");

  // SHIP now: the fulfilment region ships, both regions are final, onDone completes the order
  const shipped = await act(page, "#send-SHIP", { expect: "applied" });
  assert.equal(shipped.state, "complete");
  assert.deepEqual(await activeAtoms(page), ["complete"]);
  await settle(page);
  const done = await readView(page);
  assert.deepEqual(done.outbox.map((e) => e.state), ["succeeded", "succeeded"], "charge, then ship: " + JSON.stringify(done.outbox));
  const again = await act(page, "#again", { expect: "duplicate" });
  assert.equal(again.revision, done.revision);
  assert.equal(again.state, "complete");
  assert.equal(again.outbox.length, done.outbox.length, "one ship effect");

  // the other machines' processes are untouched
  await chooseMachine(page, "robust");
  assert.equal((await readView(page)).state, "payment.collecting");
  assert.deepEqual(errors, []);
  await context.close();
});

test("the IndexedDB store is a compare-and-set: one writer wins per version", async () => {
  const { page, context } = await openDemo(env);
  const r = await page.evaluate(async () => {
    const { openIndexedDBStore } = await import("/pkg/src/stores/indexeddb.js");
    const store = await openIndexedDBStore({ name: "contract" });
    const out = (s) => ({ snapshot: s, status: "applied", revision: 1 });
    const steps = {};
    steps.empty = await store.load("p");
    steps.create = await store.commit("p", null, out("s1"), { event: { id: "e1", type: "T" } });
    steps.createAgain = await store.commit("p", null, out("s1b"));
    steps.stale = await store.commit("p", 0, out("s1c"));
    // two writers that read version 1: exactly one wins
    steps.race = await Promise.all([store.commit("p", 1, out("A")), store.commit("p", 1, out("B"))]);
    steps.loaded = await store.load("p");
    steps.badInput = await store.commit("p", 2, {}).then(() => "ok", (e) => e.code);
    await store.clear();
    steps.cleared = await store.load("p");
    store.close();
    return steps;
  });
  assert.equal(r.empty, null);
  assert.deepEqual(r.create, { ok: true, version: 1 });
  assert.deepEqual(r.createAgain, { ok: false, conflict: true });
  assert.deepEqual(r.stale, { ok: false, conflict: true });
  assert.deepEqual(r.race.map((x) => x.ok).sort(), [false, true]);
  assert.equal(r.loaded.version, 2);
  assert.equal(r.loaded.snapshot, r.race[0].ok ? "A" : "B");
  assert.equal(r.badInput, "store_bad_input");
  assert.equal(r.cleared, null);
  await context.close();
});

test("the IndexedDB store hands back the snapshot it kept until another store writes, and reads databases of schema 1", async () => {
  const context = await env.browser.newContext();
  const page = await context.newPage();
  await page.goto(`${env.url}machines/order-robust.json`); // same origin, no demo running (nothing else reads)
  const r = await page.evaluate(async () => {
    const { openIndexedDBStore } = await import("/pkg/dist/js/stores/indexeddb.js");
    // Rows read whole (a load that asks the index only reads none).
    let reads = 0;
    const get = IDBObjectStore.prototype.get;
    IDBObjectStore.prototype.get = function (...args) {
      reads++;
      return get.apply(this, args);
    };
    const load = async (store) => {
      const before = reads;
      const row = await store.load("p");
      return { row, reads: reads - before };
    };
    const out = (snapshot, revision) => ({ snapshot, status: "applied", revision });
    const steps = {};
    const a = await openIndexedDBStore({ name: "kept" });
    const b = await openIndexedDBStore({ name: "kept" }); // another tab on the same database
    await a.commit("p", null, out("snapshot-1", 1));
    steps.kept = await load(a);
    steps.other = await load(b);
    steps.otherWrites = await b.commit("p", 1, out("snapshot-2", 2));
    steps.afterOther = await load(a);
    steps.keptAgain = await load(a);
    // b starts the process again: versions restart, so a must not trust the version alone
    await b.clear();
    await b.commit("p", null, out("again-1", 1));
    await b.commit("p", 1, out("again-2", 2));
    steps.afterRestart = await load(a);
    await b.clear();
    steps.gone = await load(a);
    a.close();
    b.close();

    // A database written by the store's first schema (no index, rows without a stamp).
    await new Promise((resolve, reject) => {
      const req = indexedDB.open("schema-1", 1);
      req.onupgradeneeded = () => {
        req.result.createObjectStore("processes", { keyPath: "id" }).put({ id: "p", snapshot: "old", version: 3, state: null, revision: 3, updatedAt: 0 });
        req.result.createObjectStore("log", { keyPath: ["processId", "version"] });
      };
      req.onsuccess = () => {
        req.result.close();
        resolve();
      };
      req.onerror = () => reject(req.error);
    });
    const c = await openIndexedDBStore({ name: "schema-1" });
    steps.legacy = await load(c);
    steps.legacyAgain = await load(c);
    steps.legacyCommit = await c.commit("p", 3, out("new-4", 4));
    steps.legacyKept = await load(c);
    c.close();
    IDBObjectStore.prototype.get = get;
    return steps;
  });
  const row = (snapshot, version) => ({ snapshot, version });
  assert.deepEqual(r.kept, { row: row("snapshot-1", 1), reads: 0 }, "what it wrote, without reading it");
  assert.deepEqual(r.other, { row: row("snapshot-1", 1), reads: 1 });
  assert.deepEqual(r.otherWrites, { ok: true, version: 2 });
  assert.deepEqual(r.afterOther, { row: row("snapshot-2", 2), reads: 1 }, "another store wrote: read again");
  assert.deepEqual(r.keptAgain, { row: row("snapshot-2", 2), reads: 0 }, "what it read, kept");
  assert.deepEqual(r.afterRestart, { row: row("again-2", 2), reads: 1 }, "the same version from another write: read again");
  assert.deepEqual(r.gone, { row: null, reads: 1 });
  assert.deepEqual(r.legacy, { row: row("old", 3), reads: 1 });
  assert.deepEqual(r.legacyAgain, { row: row("old", 3), reads: 1 }, "a row without a stamp is read whole");
  assert.deepEqual(r.legacyCommit, { ok: true, version: 4 });
  assert.deepEqual(r.legacyKept, { row: row("new-4", 4), reads: 0 });
  await context.close();
});

test("two tabs racing the same events through IndexedDB apply each id once", async () => {
  const context = await env.browser.newContext();
  const tabs = await Promise.all([context.newPage(), context.newPage()]);
  for (const tab of tabs) await tab.goto(`${env.url}machines/order-robust.json`); // same origin, no demo running
  const N = 20;
  const race = (tab, order) =>
    tab.evaluate(
      async ({ N, order }) => {
        const { Machine } = await import("/pkg/src/web.js");
        const { apply } = await import("/pkg/src/host.js");
        const { openIndexedDBStore } = await import("/pkg/src/stores/indexeddb.js");
        const machine = new Machine(await (await fetch("/machines/order-robust.json")).json());
        const store = await openIndexedDBStore({ name: "race" });
        const ids = Array.from({ length: N }, (_, i) => i);
        if (order === "reverse") ids.reverse();
        // every event is sent by both tabs; within a tab, all at once
        const outs = await Promise.all(
          ids.map((i) => apply(store, machine, "order-race", { id: `evt-${i}`, type: "PAYMENT_PARTIAL", payload: { paymentId: `p${i}`, amount: 1 } })),
        );
        const row = await store.load("order-race");
        const view = machine.inspect(row.snapshot);
        store.close();
        return { statuses: outs.map((o) => o.status), paid: view.context.paid, revision: view.revision, ledger: view.ledger.length };
      },
      { N, order },
    );
  const [a, b] = await Promise.all([race(tabs[0], "forward"), race(tabs[1], "reverse")]);
  const applied = [...a.statuses, ...b.statuses].filter((s) => s === "applied").length;
  const duplicates = [...a.statuses, ...b.statuses].filter((s) => s === "duplicate").length;
  assert.equal(applied, N, "each id applied exactly once across both tabs");
  assert.equal(duplicates, N);
  const last = a.revision >= b.revision ? a : b;
  assert.equal(last.revision, N);
  assert.equal(last.paid, N);
  assert.equal(last.ledger, N);
  await context.close();
});

for (const entry of ["/pkg/dist/js/web.js", "/pkg/src/web.js"]) {
  test(`the web entry (${entry}) reduces with the lean module and fetches the analysis only when asked, again after a failure`, async () => {
    const context = await env.browser.newContext();
    const page = await context.newPage();
    const wasm = [];
    const glue = [];
    page.on("request", (req) => {
      const path = new URL(req.url()).pathname;
      if (path.endsWith(".wasm")) wasm.push(path);
      if (path.endsWith("/idem.js")) glue.push(path);
    });
    // The full module's first fetch fails: loadAnalysis() rejects, and the next call fetches again.
    let failed = 0;
    await page.route("**/pkg/dist/idem_bg.wasm", (route) => (failed++ === 0 ? route.abort() : route.continue()));
    await page.goto(`${env.url}machines/order-fragile.json`); // same origin, no demo running
    const before = await page.evaluate(async (entry) => {
      const { Machine, IdemError } = await import(entry);
      const machine = new Machine(await (await fetch("/machines/order-fragile.json")).json());
      const out = machine.reduce(null, { id: "e1", type: "PAYMENT_PARTIAL", payload: { paymentId: "p1", amount: 1 } }, 1000, "o1");
      let refused = null;
      try {
        machine.analyze();
      } catch (err) {
        refused = { name: err.name, code: err.code, idem: err instanceof IdemError, error: err instanceof Error };
      }
      return { status: out.status, refused };
    }, entry);
    assert.equal(before.status, "applied");
    assert.deepEqual(before.refused, { name: "IdemError", code: "analysis_not_loaded", idem: true, error: true });
    assert.deepEqual(wasm, ["/pkg/dist/lean/idem_bg.wasm"], "only the lean module is fetched to reduce");
    assert.deepEqual(glue, ["/pkg/dist/lean/idem.js"], "and only its bindings");

    const after = await page.evaluate(async (entry) => {
      const { Machine, loadAnalysis, importXState } = await import(entry);
      const machine = new Machine(await (await fetch("/machines/order-fragile.json")).json());
      const first = await loadAnalysis().then(() => "loaded", () => "failed");
      let refused = null;
      try {
        machine.analyze();
      } catch (err) {
        refused = err.code;
      }
      await Promise.all([loadAnalysis(), loadAnalysis()]);
      const imported = importXState({ id: "toggle", initial: "off", states: { off: { on: { T: "on" } }, on: {} } });
      return { first, refused, codes: machine.analyze().map((f) => `${f.severity} ${f.code}`), initial: imported.definition.initial };
    }, entry);
    assert.equal(after.first, "failed", "the full module's fetch was made to fail");
    assert.equal(after.refused, "analysis_not_loaded");
    assert.ok(after.codes.some((c) => c.startsWith("error ")), JSON.stringify(after.codes));
    assert.equal(after.initial, "off");
    assert.deepEqual(wasm, ["/pkg/dist/lean/idem_bg.wasm", "/pkg/dist/idem_bg.wasm", "/pkg/dist/idem_bg.wasm"], "the full module on loadAnalysis(): the failed fetch, then once more");
    assert.deepEqual(glue, ["/pkg/dist/lean/idem.js", "/pkg/dist/idem.js"]);
    await context.close();
  });
}

test("hazard findings are marked on the diagram", async () => {
  const { page, context, errors } = await openDemo(env);
  {
    // the fragile machine: an error on the counter, marked on its state and its transition
    await chooseMachine(page, "fragile");
    assert.equal(await page.isVisible("#findings-panel"), true);
    const serious = await page.$$eval("#findings > li[data-code]", (lis) => lis.map((li) => ({ code: li.dataset.code, severity: li.dataset.severity, text: li.textContent })));
    assert.ok(serious.some((f) => f.severity === "error" && /payment\.collecting/.test(f.text) && /PAYMENT_PARTIAL/.test(f.text)), JSON.stringify(serious));
    assert.equal(await page.locator('#diagram .state.flagged[data-state="payment.collecting"]').count(), 1);
    assert.ok((await page.locator('#diagram [data-state="payment.collecting"] text.inline.hot[data-event="PAYMENT_PARTIAL"]').count()) > 0);
    await page.click("#findings > li[data-code] button");
    await settle(page);
    assert.equal(await page.locator('#diagram .state.focus[data-state="payment.collecting"]').count(), 1);
    await screenshot(page, "06-hazard-findings");

    // the robust machine: no error or warning, and the same transition is marked harmless
    await chooseMachine(page, "robust");
    assert.equal(await page.locator("#findings > li[data-code]").count(), 0);
    assert.ok((await page.locator('#diagram [data-state="payment.collecting"] text.inline.safe[data-event="PAYMENT_PARTIAL"]').count()) > 0);
    assert.equal(await page.locator('#diagram .state.flagged[data-state="payment.collecting"]').count(), 0);
  }
  assert.deepEqual(errors, []);
  await context.close();
});

test("Prove it: the fragile counter gives a counterexample to step through on the diagram, the robust order is proved", async () => {
  const { page, context, errors } = await openDemo(env);
  const check = async () => {
    await page.click("#prove");
    await settle(page);
    await page.waitForFunction(() => document.querySelector("#prove-result").dataset.verdict);
    return page.$eval("#prove-result", (r) => ({ verdict: r.dataset.verdict, text: r.textContent }));
  };
  const shown = async () => ({ step: await page.textContent("#prove-step"), atoms: await activeAtoms(page) });
  {
    await chooseMachine(page, "fragile");
    assert.equal(await page.isVisible("#prove-panel"), true);
    const r = await check();
    assert.equal(r.verdict, "violated", r.text);
    assert.match(r.text, /a repeat of pay-1 was applied again/);
    assert.match(r.text, /reorder all, expiries 1, crashes 1, effect faults 0, hosts 2/, "the bounds are shown");
    assert.match(r.text, /idem check www\/machines\/order-fragile\.json --scenario tests\/check\/order-6\.jsonl/);
    // deliver, commit, past the retention window, deliver again, commit: the diagram follows
    const steps = await page.$$eval("#prove-result ol.steps > li", (lis) => lis.map((li) => li.textContent));
    assert.equal(steps.length, 5, JSON.stringify(steps));
    assert.match(steps[2], /past a retention window/);
    assert.equal(await page.locator("figure.diagram.replaying").count(), 1);
    assert.deepEqual(await shown(), { step: "step 1 of 5: the diagram shows the state it leaves", atoms: ["payment.collecting"] });
    assert.equal(await page.isDisabled("#prove-prev"), true);
    const seen = [];
    for (let i = 0; i < 4; i++) {
      await page.click("#prove-next");
      await settle(page);
      seen.push(await shown());
    }
    assert.deepEqual(
      seen.map((s) => s.atoms[0]),
      ["payment.collecting", "payment.collecting", "payment.charging", "payment.charging"],
      "the second delivery of pay-1 counts 60 again: 120 of 100 goes on to charge",
    );
    assert.equal(seen[3].step, "step 5 of 5: the diagram shows the state it leaves");
    assert.equal(await page.isDisabled("#prove-next"), true);
    assert.equal(await page.getAttribute("#prove-result ol.steps > li[aria-current=step]", "data-step"), "5");
    await page.click("#prove-prev");
    await settle(page);
    assert.deepEqual(await shown(), { step: "step 4 of 5: the diagram shows the state it leaves", atoms: ["payment.charging"] });
    // a step clicked in the list is shown too
    await page.click('#prove-result ol.steps > li[data-step="1"] button');
    await settle(page);
    assert.deepEqual((await shown()).atoms, ["payment.collecting"]);
    const table = await page.textContent("#prove-result table");
    assert.match(table, /"paid":60/);
    assert.match(table, /"paid":120/);
    // the bar above the diagram steps too, and goes back to the process's own state
    await page.click('#replay-bar button[aria-label="next step"]');
    await settle(page);
    assert.equal(await page.textContent("#replay-bar > span"), "counterexample step 2 of 5");
    await page.click('#replay-bar button[aria-label="show the process\'s own state"]');
    await settle(page);
    assert.equal(await page.isVisible("#replay-bar"), false);
    assert.equal(await page.locator("figure.diagram.replaying").count(), 0);
    assert.equal(await page.textContent("#prove-step"), "the diagram shows the process: click a step to show it");
    await page.click('#prove-result ol.steps > li[data-step="4"] button');
    await settle(page);
    assert.equal(await page.isVisible("#replay-bar"), true);
    assert.deepEqual(await activeAtoms(page), ["payment.charging"]);
    await screenshot(page, "09-prove-it");
  }
  {
    // the robust order: proved, nothing to step through, the diagram back on the process
    await chooseMachine(page, "robust");
    assert.equal(await page.$eval("#prove-result", (r) => r.dataset.verdict), "", "a verdict belongs to its machine");
    const r = await check();
    assert.equal(r.verdict, "proved", r.text);
    assert.match(r.text, /No schedule applies a repeat again: [\d,]+ states/);
    assert.equal(await page.locator("#prove-result ol.steps").count(), 0);
    assert.equal(await page.locator("figure.diagram.replaying").count(), 0);
    assert.deepEqual(await activeAtoms(page), ["payment.collecting"]);
    // the check ran in the page's check worker, which reported its progress while it explored
    assert.ok(page.workers().some((w) => w.url().endsWith("/check-worker.js")), "the check runs off the page's thread");
    const progress = Number(await page.$eval("#prove-result", (r) => r.dataset.progress));
    const states = Number(r.text.match(/([\d,]+) states/)[1].replaceAll(",", ""));
    assert.ok(progress > 0 && progress <= states, `progress ${progress} of ${states} states`);
  }
  for (const variant of ["robust-nokeys", "parallel"]) {
    await chooseMachine(page, variant);
    const r = await check();
    assert.equal(r.verdict, "proved", `${variant}: ${r.text}`);
  }
  assert.deepEqual(errors, []);
  await context.close();
});

test("the IndexedDB store logs the row every store writes (pkg/test/event-log.mjs)", async () => {
  const context = await env.browser.newContext();
  const page = await context.newPage();
  await page.goto(`${env.url}machines/order-robust.json`); // same origin, no demo running
  const r = await page.evaluate(async () => {
    const { Machine } = await import("/pkg/dist/js/web.js");
    const { openIndexedDBStore } = await import("/pkg/dist/js/stores/indexeddb.js");
    const { logThreeCommits } = await import("/pkg/test/event-log.mjs");
    const machine = new Machine(await (await fetch("/machines/order-robust.json")).json());
    const store = await openIndexedDBStore({ name: "idem-event-log" });
    const event = (i) => ({ id: `e${i}`, type: "PAYMENT_PARTIAL", payload: { paymentId: `p${i}`, amount: 1 } });
    try {
      return await logThreeCommits(store, machine, "log1", event);
    } finally {
      store.close();
    }
  });
  assert.deepEqual(r.rows, r.expected);
  assert.equal(r.rows.length, 2);
  await context.close();
});
