#!/usr/bin/env node
// The browser host end to end: `apply` over the IndexedDB store in headless Chromium
// (IDEM_CHROMIUM, as the e2e tests start it), through the package as published
// (pkg/dist/js/web.js and stores/indexeddb.js; scripts/build-wasm.sh first).
//
//   node benches/indexeddb.mjs [--sizes 0,1000] [--events 100] [--rounds 3]
//
// For each ledger size, a process of that many NOTE events (the bench machine of
// benches/RESULTS.md: tests/machines/order.json + NOTE, retention.maxEntries
// 1,000,000) is stored, then `--events` fresh NOTE events are applied to it one
// after another, and as many copies of applied ones again (duplicates). Two
// stores on one database take turns, round after round: the store as shipped,
// which keeps the rows it last read or wrote and asks the index whether the row
// is still that one, and the same store with nothing kept (every load reads the
// row whole and the engine copies and decodes the snapshot), so the table says
// what keeping saves. Every duplicate's commits are counted: there must be none.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { startAll } from "../tests/e2e/browser.mjs";
import { table } from "./measure.mjs";

const { values: opt } = parseArgs({
  options: {
    sizes: { type: "string", default: "0,1000" },
    events: { type: "string", default: "100" },
    rounds: { type: "string", default: "3" },
  },
});
const sizes = opt.sizes.split(",").map((s) => Number(s.replaceAll("_", "")));
const definition = JSON.parse(readFileSync(new URL("../tests/machines/order.json", import.meta.url), "utf8"));
definition.context.lastNote = null;
definition.on = { ...definition.on, NOTE: { actions: [{ assign: { lastNote: { var: "event.payload.n" } } }] } };
definition.retention = { ...definition.retention, maxEntries: 1_000_000 };

const env = await startAll();
try {
  const page = await (await env.browser.newContext()).newPage();
  await page.goto(`${env.url}machines/order-robust.json`); // same origin as /pkg/
  const rows = await page.evaluate(
    async ({ definition, sizes, events, rounds }) => {
      const { Machine, apply } = await import("/pkg/dist/js/web.js");
      const { openIndexedDBStore } = await import("/pkg/dist/js/stores/indexeddb.js");
      const machine = new Machine(definition);
      const note = (id, n) => ({ id, type: "NOTE", payload: { n } });
      const now = 1_700_000_000_000;
      const name = `idem-bench-${Date.now()}`;
      const modes = { kept: await openIndexedDBStore({ name }), "nothing kept": await openIndexedDBStore({ name }) };
      const nothing = { get() {}, set() {}, delete() {} };
      const results = [];
      for (const n of sizes) {
        const per = {};
        for (const [mode, store] of Object.entries(modes)) {
          let snapshot = null;
          for (let i = 0; i < n; i++) snapshot = machine.reduce(snapshot, note(`seed-${i}`, i), now, `${mode}-${n}`).snapshot;
          if (snapshot !== null) await store.commit(`${mode}-${n}`, null, { snapshot, revision: n });
          per[mode] = { applied: [], duplicate: [], commits: 0, dupCommits: 0, dups: 0 };
        }
        // Round -1 warms the engine and the database up and is not counted.
        for (let r = -1; r < rounds; r++) {
          for (const [mode, store] of Object.entries(modes)) {
            if (mode === "nothing kept") store.kept = nothing;
            const pid = `${mode}-${n}`;
            const p = per[mode];
            let t = performance.now();
            for (let i = 0; i < events; i++) {
              const out = await apply(store, machine, pid, note(`r${r}-${i}`, i), { now });
              if (out.status !== "applied") throw new Error(`expected applied, got ${out.status}`);
            }
            const appliedMs = (performance.now() - t) / events;
            const commit = store.commit;
            let commits = 0;
            store.commit = (...args) => {
              commits++;
              return commit.apply(store, args);
            };
            t = performance.now();
            for (let i = 0; i < events; i++) {
              const out = await apply(store, machine, pid, note(`r${r}-${i % 10}`, i % 10), { now });
              if (out.status !== "duplicate") throw new Error(`expected duplicate, got ${out.status}`);
            }
            const duplicateMs = (performance.now() - t) / events;
            store.commit = commit;
            if (r < 0) continue;
            p.applied.push(appliedMs);
            p.duplicate.push(duplicateMs);
            p.dupCommits += commits;
            p.dups += events;
          }
        }
        const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
        for (const [mode, p] of Object.entries(per)) {
          results.push({ n, mode, applied: med(p.applied), duplicate: med(p.duplicate), dupCommits: p.dupCommits, dups: p.dups });
        }
      }
      for (const store of Object.values(modes)) store.close();
      await new Promise((resolve) => {
        const del = indexedDB.deleteDatabase(name);
        del.onsuccess = del.onerror = del.onblocked = resolve;
      });
      return results;
    },
    { definition, sizes, events: Number(opt.events), rounds: Number(opt.rounds) },
  );
  console.log(
    `apply over IndexedDB in Chromium ${env.browser.version()}: ${opt.events} events per round, one after another, ${opt.rounds} rounds, medians of the rounds\n`,
  );
  const ms = (v) => `${v.toFixed(3)} ms`;
  console.log(
    table(
      ["ledger", "store", "applied event", "duplicate", "commits per duplicate"],
      rows.map((r) => [r.n.toLocaleString("en-US"), r.mode, ms(r.applied), ms(r.duplicate), `${r.dupCommits / r.dups} (${r.dupCommits} in ${r.dups})`]),
    ),
  );
} finally {
  await env.close();
}
