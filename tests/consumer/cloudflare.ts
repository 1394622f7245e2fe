// The Cloudflare stores take what a Worker is handed, typed by Cloudflare's own declarations
// (`wrangler types` writes them into the project): tests/consumer checks this with tsc, so the
// package's D1DatabaseLike, KVNamespaceLike and DurableObjectStorageLike stay satisfied by the
// real D1Database, KVNamespace and DurableObjectStorage.
import { Machine } from "idem";
import { createHttpApi } from "idem/http";
import { D1Store } from "idem/stores/d1";
import { DurableObjectStore } from "idem/stores/durable";
import { KVStore } from "idem/stores/kv";

declare const definition: object;
declare const kv: KVNamespace;

const machine = new Machine(definition);

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const api = createHttpApi({ machine, store: new D1Store(env.DB), afterCommit: null });
    return api.handle(request, { waitUntil: (p) => ctx.waitUntil(p) });
  },
} satisfies ExportedHandler<Env>;

export class ProcessObject {
  readonly store: DurableObjectStore;
  readonly cache = new KVStore(kv, { singleWriter: true });
  constructor(state: DurableObjectState) {
    this.store = new DurableObjectStore(state.storage);
  }
}
