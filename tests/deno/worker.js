// A Web Worker for the concurrency tests: its own Deno KV handle on the shared
// SQLite file, its own engine instance. It delivers the events it is given,
// all at once, when the test says "go", and reports each outcome.
import { apply } from "../../pkg/src/host.js";
import { DenoKvStore } from "../../pkg/src/stores/denokv.js";
import { demoMachine } from "./helpers.js";

let kv = null;
let store = null;
let machine = null;

self.onmessage = async ({ data }) => {
  try {
    if (data.kind === "open") {
      kv = await Deno.openKv(data.path);
      machine = await demoMachine(data.machine ?? "order-robust");
      store = new DenoKvStore(kv, { machine });
      self.postMessage({ kind: "ready" });
    } else if (data.kind === "deliver") {
      const results = await Promise.all(
        data.events.map(async (event) => {
          const out = await apply(store, machine, data.processId, event, { maxRetries: 200 });
          return { id: event.id, status: out.status, attempts: out.attempts, revision: out.revision, response: out.response ?? null };
        }),
      );
      self.postMessage({ kind: "delivered", results, busyRetries: store.busyRetries });
    } else if (data.kind === "close") {
      kv?.close();
      self.postMessage({ kind: "closed" });
    }
  } catch (err) {
    self.postMessage({ kind: "error", message: String(err?.stack ?? err) });
  }
};

// Messages posted before this module finished loading are not delivered: say when it has.
self.postMessage({ kind: "loaded" });
