// The runtime-neutral host API, re-exported by every runtime entry (node, web,
// deno, workerd) so that `import { Machine, apply, MemoryStore } from "idem"`
// works everywhere. Nothing here touches a runtime global at module load.
export { IdemError } from "./error.js";
export { apply, inspect, ContentionError, EventText, readClock, jitteredBackoff } from "./host.js";
export { dispatch, retryable, unknownOutcome, nextDueAt } from "./dispatch.js";
export { createHttpApi, problem, refuseOversized, STATUS_BY_CODE, REPLAY_HEADER, OUTCOME_HEADER, ATTEMPTS_HEADER } from "./http.js";
export { MemoryStore } from "./stores/memory.js";
export { D1Store } from "./stores/d1.js";
export { KVStore } from "./stores/kv.js";
export { DurableObjectStore } from "./stores/durable.js";
export { FakeGateway, gatewayEffects, gatewayFetch, httpGateway } from "./testing/fake-gateway.js";
