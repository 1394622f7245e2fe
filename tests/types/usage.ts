// A typed program using the package as a consumer does; `tsc -p tests/types`
// checks it (it is never run). Each `@ts-expect-error` asserts that the types
// refuse a mistake: if a type grows loose enough to accept it, tsc fails.
import { ContentionError, IdemError, Machine, importXState, loadAnalysis, newEventId, version } from "idem";
import type {
  DueItem,
  Effect,
  ErrorCode,
  Event,
  Finding,
  FindingCode,
  HostErrorCode,
  ImportedXState,
  Json,
  Outcome,
  OutcomeStatus,
  Snapshot,
  Store,
} from "idem";
import { apply } from "idem/host";
import { createHttpApi, scopedEventId } from "idem/http";
import type { HttpAction } from "idem/http";
import { MemoryStore } from "idem/stores/memory";
import { openIndexedDBStore } from "idem/stores/indexeddb";

const definition = {
  id: "order",
  initial: "pending",
  context: { paid: [] },
  states: { pending: { on: { PAY: "paid" } }, paid: { type: "final" } },
};
const machine = new Machine(definition);
const fromText = new Machine(JSON.stringify(definition));
const same: boolean = machine.hash === fromText.hash && machine.id === "order" && typeof version() === "string";

// Events: a stable id, a type, an optional JSON payload.
const event: Event = { id: newEventId(), type: "PAY", payload: { amount: 40, tags: ["a"], note: null } };
const bare: Event = { id: "evt-2", type: "PAY" };
// @ts-expect-error an event needs an id
const noId: Event = { type: "PAY" };
// @ts-expect-error payloads are JSON (no functions)
const badPayload: Event = { id: "e", type: "PAY", payload: { f: () => 1 } };

// Outcomes.
const out: Outcome = machine.reduce(null, event, Date.now(), "order-42");
const status: OutcomeStatus = out.status;
// @ts-expect-error not a status
const notAStatus: OutcomeStatus = "done";
// @ts-expect-error the snapshot can be null (no process yet): check before storing
const mustCheck: Snapshot = out.snapshot;
const toStore: Snapshot | null = out.changed ? out.snapshot : null;
const replay: Json = machine.reduce(out.snapshot, bare, Date.now(), "order-42").response;
// @ts-expect-error the process id is required (it scopes effect keys)
machine.reduce(out.snapshot, bare, Date.now());
const code: ErrorCode | undefined = out.error?.code;
const path: string | undefined = out.error?.path;
const due: number | null = out.nextDueAt;

function describe(s: OutcomeStatus): string {
  switch (s) {
    case "applied":
      return "stored";
    case "duplicate":
      return "first answer again";
    case "conflict":
    case "ignored":
    case "rejected":
      return "nothing written";
    default: {
      const unreachable: never = s;
      return unreachable;
    }
  }
}

// Effects.
const effects: Effect[] = out.effects;
const keys: string[] = effects.filter((e) => e.idempotent).map((e) => `${e.type}:${e.key}`);
// @ts-expect-error an effect key is a string
const badKey: number = effects[0]!.key;

// Due work narrows on `kind`.
function report(item: DueItem): Event | null {
  switch (item.kind) {
    case "attempt":
      return item.started;
    case "verify":
      return { id: item.resultId, type: "idem.effect.verified", payload: { key: item.key, attempt: item.attempt, exists: false, result: null } };
    case "expire":
      return item.report;
    case "timer":
      return item.event;
  }
}
const firstDue: Event | null = toStore ? (machine.due(toStore, Date.now()).map(report)[0] ?? null) : null;

// Error codes are a closed set.
const codes: ErrorCode[] = ["invalid_definition", "unknown_target", "invalid_event", "id_conflict", "invalid_snapshot"];
// @ts-expect-error not an engine error code
const notACode: ErrorCode = "contention";

// What the engine throws.
function codeOf(err: unknown): IdemError["code"] | null {
  if (err instanceof IdemError) return err.code;
  return null;
}
let thrown: IdemError["code"] | null = null;
try {
  new Machine("{");
} catch (err) {
  thrown = codeOf(err);
}
// The hosts' and stores' errors are IdemErrors too, their code narrowed.
const contention: "contention" = new ContentionError("o1", 3).code;
const base: IdemError = new ContentionError("o1", 3);

// Hazard analysis and the XState import (in a browser, after the analysis's module is loaded).
const loaded: Promise<void> = loadAnalysis();
const notLoaded: HostErrorCode = "analysis_not_loaded";
const findings: Finding[] = machine.analyze();
const errors: FindingCode[] = findings.filter((f) => f.severity === "error").map((f) => f.code);
const steps: Event[] = findings.flatMap((f) => f.witness?.steps.map((s) => s.event) ?? []);
const imported: ImportedXState = importXState({ id: "toggle", initial: "off", states: { off: { on: { T: "on" } }, on: {} } });
const fromXState = new Machine(imported.definition);
// @ts-expect-error severities are error | warning | info
const notASeverity: Finding["severity"] = "fatal";

// The store contract: the package's stores satisfy `Store`, and the host loop takes any of them.
const store: Store = new MemoryStore();
const applied = await apply(store, machine, "order-42", event);
const version2: number | string | null = applied.version;
const tries: number = applied.attempts;
const browserStore: Store = await openIndexedDBStore({ name: "idem-types" });
// @ts-expect-error a store must have load and commit
const notAStore: Store = { load: async () => null };

// The HTTP API: `authorize` answers a principal or refuses; GET's view is summary or full.
const tokens: Record<string, string> = { "tok-a": "alice" };
const api = createHttpApi({
  machine,
  store,
  view: "summary",
  authorize: async (request: Request, { action }: { processId: string | null; action: HttpAction }) =>
    action === "describe" ? "anyone" : (tokens[request.headers.get("authorization")?.replace(/^Bearer /, "") ?? ""] ?? null),
});
const answered: Promise<Response> = api.handle(new Request("http://x/"));
const recordedId: Promise<string> = scopedEventId("alice", "pay-1");
// @ts-expect-error authorize answers a principal (a string) or a refusal, not a number
const numericCaller = createHttpApi({ machine, store, authorize: () => 42 });
// @ts-expect-error view is "summary" or "full"
const everything = createHttpApi({ machine, store, view: "everything" });
// @ts-expect-error there is no action "delete"
const noDelete: HttpAction = "delete";

export const used = [api, answered, recordedId, numericCaller, everything, noDelete, same, bare, noId, badPayload, status, notAStatus, mustCheck, replay, code, path, due, describe, keys, badKey];
export const used2 = [firstDue, codes, notACode, thrown, errors, steps, fromXState, notASeverity, version2, tries, browserStore, notAStore, loaded, notLoaded, contention, base];
