// Section 4 of the benchmarks, Deno KV: the Deno example server (examples/deno), started as its
// users start it (`deno task start`, by tests/deno/server.js) on a Deno KV file of its own, driven
// over HTTP from this process with the workload of benches/hosts.mjs (`runHost`). Writes are counted
// from that file's SQLite write-ahead log; the head's versionstamp (the store's version, which
// GET /processes/:id returns) is compared before and after the replays.
//
//   deno run --allow-all --unstable-kv benches/hosts-deno.js ['{"hotEvents":200,...}']
//
// Prints the figures as JSON on stdout (progress on stderr). benches/hosts.mjs runs it.
import { tempKvPath } from "../tests/deno/helpers.js";
import { startServer } from "../tests/deno/server.js";
import { readAnswer, runHost } from "./hosts.mjs";

const opts = JSON.parse(Deno.args[0] ?? "{}");
const log = (msg) => console.error(`bench: ${msg}`);

const db = await tempKvPath();
const t0 = performance.now();
const server = await startServer({ env: { IDEM_KV_PATH: db.path } });
const startMs = performance.now() - t0;
let result;
try {
  const client = {
    post: async (path, key, body) => readAnswer(await server.post(path, key, body)),
    get: async (path) => {
      const r = await server.fetch(path);
      if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${await r.text()}`);
      return r.json();
    },
  };
  result = await runHost({ name: "Deno KV", base: "", client, store: () => ({ file: db.path }), prefix: "kv", opts, log });
  result.startMs = startMs;
  result.deno = Deno.version.deno;
} finally {
  const status = await server.stop();
  if (!status.success && status.signal !== "SIGTERM") log(`the server exited with ${status.code}:\n${server.output()}`);
  await db.cleanup();
}
console.log(JSON.stringify(result));
