// The storm (storm.js) against Deno KV: three instances of the Deno example
// server (examples/deno, started as its users start it, `deno task start`,
// by tests/deno/server.js) share ONE Deno KV database file, so three
// processes with their own KV handles race for the same records and take
// turns at the same queue; every request goes to one of them at random.
// Effects are dispatched from the Deno KV queue (each commit that leaves
// work due enqueues its message in the same atomic operation). The gateways
// are fakes served over HTTP from this process, shared by the three servers.
//
//   deno test --allow-all --unstable-kv tests/storm/denokv.test.js   (STORM_SEED=<n>, STORM_SCALE=<k>)
import { assertEquals } from "../deno/assert.js";
import { tempKvPath } from "../deno/helpers.js";
import { serveGateway, startServer } from "../deno/server.js";
import { Machine } from "../../pkg/src/deno.js";
import { FakeGateway } from "../../pkg/src/testing/fake-gateway.js";
import { planStorm, runStorm, scaleFrom, seedFrom, totalsLine, violationLines } from "./storm.js";

const SERVERS = 3;
const seed = seedFrom(Deno.env.get("STORM_SEED"));
const scale = scaleFrom(Deno.env.get("STORM_SCALE"));
console.log(`storm (Deno KV): seed ${seed}, scale ${scale} (replay the plan with STORM_SEED=${seed})`);

const definition = async (name) => Deno.readTextFile(new URL(`../../www/machines/${name}.json`, import.meta.url));
const machines = { robust: new Machine(await definition("order-robust")), nokeys: new Machine(await definition("order-robust-nokeys")) };
const machineFor = (pid) => (pid.endsWith("-robust-nokeys") ? machines.nokeys : machines.robust);


Deno.test({
  name: `storm on Deno KV (${SERVERS} servers, one database): every event applied once, nothing lost, nothing doubled`,
  // The late answers of "timeout" gateway faults may still be pending when the test ends.
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const gateways = { keys: new FakeGateway(), nokeys: new FakeGateway({ idempotent: false }) };
    const served = { keys: serveGateway(gateways.keys), nokeys: serveGateway(gateways.nokeys) };
    const db = await tempKvPath();
    const env = { IDEM_KV_PATH: db.path, GATEWAY_URL: served.keys.url, GATEWAY_NOKEYS_URL: served.nokeys.url };
    const servers = [];
    try {
      for (let i = 0; i < SERVERS; i++) servers.push(await startServer({ env }));
      const plan = planStorm(seed, scale);
      const result = await runStorm({
        name: "Deno KV",
        plan,
        post: (path, key, body, { signal, hint }) =>
          servers[hint % SERVERS].fetch(path, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key }, body, signal }),
        get: (path) => servers[Math.floor(Math.random() * SERVERS)].fetch(path),
        gateways,
        machineFor,
      });
      console.log(totalsLine(`Deno KV (${SERVERS} servers)`, plan, result));
      assertEquals(violationLines(result), [], `storm on Deno KV (seed ${seed}) broke invariants`);
    } finally {
      for (const s of servers) await s.stop();
      await Promise.all([served.keys.server.shutdown(), served.nokeys.server.shutdown()]);
      await db.cleanup();
    }
  },
});
