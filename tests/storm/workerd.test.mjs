// The storm (storm.js) against the Cloudflare stores on real workerd: the
// example Worker (examples/cloudflare) bundled by wrangler and run by
// Miniflare (tests/workerd/harness.mjs), its D1 API (/processes) and its
// Durable Object API (/do), each with a fresh Worker and fresh gateway books.
// Requests go through Miniflare's dispatchFetch; a client abort cancels the
// Worker's request (in D1 mode the commit may or may not have happened).
// Effects are dispatched as the Worker does it: after the commit (D1:
// waitUntil; Durable Object: the object's kick and its alarms); in D1 mode the
// Worker's cron is run when a process waits without progress, as the platform
// would run it every minute.
//
//   node --test tests/storm/workerd.test.mjs          (STORM_SEED=<n> to replay, STORM_SCALE=<k> for more)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Machine } from "../../pkg/src/node.js";
import { ROOT, startWorker } from "../workerd/harness.mjs";
import { planStorm, runStorm, scaleFrom, seedFrom, totalsLine, violationLines } from "./storm.js";

const seed = seedFrom(process.env.STORM_SEED);
const scale = scaleFrom(process.env.STORM_SCALE);
console.log(`storm (workerd): seed ${seed}, scale ${scale} (replay the plan with STORM_SEED=${seed})`);

const definition = (name) => readFileSync(join(ROOT, "www", "machines", `${name}.json`), "utf8");
const machines = { robust: new Machine(definition("order-robust")), nokeys: new Machine(definition("order-robust-nokeys")) };
const machineFor = (pid) => (pid.endsWith("-robust-nokeys") ? machines.nokeys : machines.robust);

for (const [name, base] of [
  ["D1", ""],
  ["Durable Object", "/do"],
]) {
  test(`storm on workerd ${name}: every event applied once, nothing lost, nothing doubled`, async () => {
    const w = await startWorker();
    try {
      const plan = planStorm(seed, scale);
      const worker = base === "" ? await w.mf.getWorker() : null;
      const result = await runStorm({
        name,
        plan,
        base,
        post: (path, key, body, { signal }) =>
          w.fetch(path, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body, signal }),
        get: (path) => w.fetch(path),
        gateways: w.gateways,
        machineFor,
        // The Worker's cron ("* * * * *" in wrangler.toml) dispatches D1 processes with work due.
        sweep: worker ? () => worker.scheduled({ cron: "* * * * *" }) : undefined,
      });
      console.log(totalsLine(`workerd ${name}`, plan, result));
      assert.deepEqual(violationLines(result), [], `storm on ${name} (seed ${seed}) broke invariants`);
    } finally {
      await w.close();
    }
  });
}
