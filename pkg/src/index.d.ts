// Types for idem's JavaScript API: the engine (Machine), the store contract,
// the host loop, the dispatcher and the HTTP mapping.

import type { FromSchema, JSONSchema } from "json-schema-to-ts";

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** An event: a stable id chosen by its originator (reused on every retry), a type and a payload. */
export interface Event {
  id: string;
  type: string;
  payload?: Json;
}

/**
 * An event the engine makes itself and hosts hand back (effect reports `idem.effect.*`, timers
 * `idem.after`), or one of XState's internal types (`xstate.*`): always accepted by a typed machine.
 */
export interface InternalEvent {
  id: string;
  type: `idem.${string}` | `xstate.${string}`;
  payload?: Json;
}

/** The stored form of a process: opaque ASCII text (wire format 3 starts with `idem3`). Store it as is, never parse or edit it. */
export type Snapshot = string;

export type OutcomeStatus = "applied" | "duplicate" | "conflict" | "ignored" | "rejected";

/** Stable error codes carried by `Outcome.error.code` and by thrown `IdemError`s. */
export type ErrorCode =
  // definition
  | "invalid_json"
  | "invalid_definition"
  | "unknown_target"
  | "invalid_initial"
  | "duplicate_state_id"
  | "invalid_expression"
  // a guard that is an object literal or an empty name
  | "invalid_guard"
  | "unknown_action"
  // a guard, action or delay named and not in the definition's implementations
  | "unimplemented"
  | "always_loop"
  | "definition_too_large"
  // event
  | "invalid_event"
  | "missing_event_id"
  | "missing_event_type"
  | "event_id_too_long"
  | "payload_too_large"
  | "nesting_too_deep"
  // a number beyond f64's finite range (`1e309`)
  | "number_out_of_range"
  | "unknown_event_type"
  // a payload that does not match its event's declared schema
  | "invalid_payload"
  | "id_conflict"
  | "reserved_event"
  // snapshot
  | "invalid_snapshot"
  | "snapshot_too_large"
  | "unsupported_snapshot_format"
  | "wrong_machine"
  | "missing_state"
  // calls: reduce without a process id, nowMs missing (not a number) or out of range
  | "missing_process_id"
  | "missing_now"
  | "invalid_now"
  // an argument of the wrong type or shape (a process id that is not a string or is over 256
  // bytes, nowMs given as a string, a snapshot that is not null, a string or a Uint8Array, ...)
  | "invalid_argument"
  // runtime
  | "expression_failed"
  // a guard or action given as a function threw or answered the wrong type
  | "implementation_failed"
  | "microstep_limit"
  | "unknown_effect"
  | "invalid_effect_report"
  // the engine reached a configuration it must never reach: nothing applied or written
  | "internal_error"
  // command line
  | "usage"
  | "io";

/** Codes added by the hosts (not the engine). */
export type HostErrorCode =
  // the web entry: analyze() or importXState() before loadAnalysis()
  | "analysis_not_loaded"
  // the IndexedDB store: no IndexedDB in this runtime; a commit without a snapshot string
  | "store_unavailable"
  | "store_bad_input"
  | "contention"
  | "snapshot_corrupt"
  | "missing_idempotency_key"
  | "invalid_idempotency_key"
  | "reserved_event_type"
  | "request_too_large"
  | "request_timeout"
  | "unreadable_body"
  | "uri_too_long"
  | "headers_too_large"
  | "unsupported_media_type"
  | "event_not_accepted"
  | "invalid_process_id"
  | "process_not_found"
  | "invalid_query"
  | "not_found"
  | "method_not_allowed"
  | "unauthorized"
  | "forbidden"
  | "authorize_failed"
  | "invalid_principal"
  // dispatch: a handler's result JSON cannot write (the code of the failure it reports)
  | "invalid_result";

/**
 * Every error idem throws: the engine's (invalid definitions, a bad `nowMs`, unreadable snapshots
 * in `due`/`inspect`), from either wasm module, an argument of the wrong type or shape for any
 * function or constructor (`invalid_argument`, its `path` the argument's name), and the hosts' and stores' coded errors
 * (`ContentionError`, `StoreLimitError`, ...). A real `Error`, with a stable `code`.
 *
 * ```js
 * try { new Machine(text); } catch (err) {
 *   if (err instanceof IdemError) console.error(err.code, err.path); else throw err;
 * }
 * ```
 */
export declare class IdemError extends Error {
  constructor(code: ErrorCode | HostErrorCode, message: string, options?: { path?: string; cause?: unknown });
  readonly name: "IdemError";
  readonly code: ErrorCode | HostErrorCode;
  /** JSON path of the offending value, where one applies (`states.paid.on.SHIP`); otherwise undefined. */
  readonly path?: string;
}

export interface IdemErrorInfo {
  code: ErrorCode;
  message: string;
  path?: string;
}

/** An effect emitted by a transition, to be performed after the commit. */
export interface Effect {
  /** Stable idempotency key, the same across every retry. */
  key: string;
  type: string;
  payload: Json;
  /** Whether the provider honours idempotency keys (false: verify before retrying an unknown outcome). */
  idempotent: boolean;
}

/** What `Machine.reduce` decided. Write `snapshot` only when `changed`. */
export interface Outcome {
  status: OutcomeStatus;
  duplicate: boolean;
  changed: boolean;
  /** The snapshot to store (the input one when `changed` is false; null for a process that does not exist). */
  snapshot: Snapshot | null;
  state: Json;
  revision: number;
  /** The response frozen for this event; duplicates get the first one back. */
  response: Json;
  effects: Effect[];
  error?: IdemErrorInfo;
  /** Earliest time (ms) some effect or timer is due, or null. */
  nextDueAt: number | null;
  upgradedFrom?: string;
  /** For a duplicate: how the first delivery was recorded (so a replay needs no ledger read). */
  original?: { status: "applied" | "ignored"; revision: number; at: number };
}

/** An outcome as returned by `apply`: plus the store version and the number of tries. */
export interface AppliedOutcome extends Outcome {
  /**
   * The store's version after this call (null when the process does not exist). When the call was
   * committed with others waiting in its lane (a store with `commitMany`), the version that commit
   * left, the same for each of them; `revision` and `state` are still this event's own.
   */
  version: Version | null;
  /** Load-reduce-commit tries used (1 without contention). */
  attempts: number;
}

/** Work due now, from `Machine.due(snapshot, now)`. */
export type DueItem =
  | {
      kind: "attempt";
      key: string;
      type: string;
      payload: Json;
      idempotent: boolean;
      attempt: number;
      attemptId: string;
      dueAt: number;
      /** Report this first; only an `applied` outcome lets this dispatcher perform the attempt. */
      started: InternalEvent;
      /** Id of the result report (succeeded / failed / unknown). */
      resultId: string;
    }
  | { kind: "verify"; key: string; type: string; payload: Json; idempotent: boolean; attempt: number; attemptId: string; dueAt: number; resultId: string }
  | { kind: "expire"; key: string; type: string; payload: Json; idempotent: boolean; attempt: number; attemptId: string; dueAt: number; report: InternalEvent }
  | { kind: "timer"; state: string; delay: number; dueAt: number; event: InternalEvent };

export interface LedgerEntry {
  id: string;
  fp: string;
  at: number;
  exp: number;
  rev: number;
  status: "applied" | "ignored";
  response: Json;
}

/** `Machine.inspect(snapshot)`: the snapshot as a readable object. */
export interface Inspection {
  format: number;
  machine: { id: string; version: string; hash: string };
  value: Json;
  context: Json;
  revision: number;
  done: boolean;
  ledger: LedgerEntry[];
  outbox: Array<Record<string, Json>>;
  timers: Array<Record<string, Json>>;
}

export interface Retention {
  defaultMs: number;
  perType: Record<string, number>;
  maxEntries: number;
}

// ---------------------------------------------------------------------------
// Typed definitions: events and context read from a literal definition

/** `D` is `any`: nothing is known of it. */
type IsAny<D> = 0 extends 1 & D ? true : false;

/**
 * Whether `D` is a definition TypeScript knows literally (written `as const`): its `id` is a string
 * literal. A parsed JSON value, an imported `.json` file, an object literal without `as const` (its
 * `id` widened to `string`) or a JSON text is not, and takes any `Event`.
 */
type IsLiteral<D> = IsAny<D> extends true ? false : D extends { readonly id: infer I extends string } ? (string extends I ? false : true) : false;

/** Event types named as `on` keys in a state and every state below it. */
type OnTypes<S> =
  | (S extends { readonly on: infer On } ? Extract<keyof On, string> : never)
  | (S extends { readonly states: infer C } ? { [K in keyof C]: OnTypes<C[K]> }[keyof C] : never);

/** The effect types named anywhere in a definition (`{ effect: { type: "charge", ... } }`). */
type EffectTypes<T> = T extends { readonly effect: { readonly type: infer E extends string } }
  ? E
  : T extends readonly (infer I)[]
    ? EffectTypes<I>
    : T extends object
      ? { [K in keyof T]: EffectTypes<T[K]> }[keyof T]
      : never;

/**
 * What the outbox raises when an effect finishes (`charge.succeeded`, `charge.failed`): a state
 * may handle them, but they are never sent from outside (the engine answers `reserved_event`).
 */
type OutcomeTypes<D> = `${EffectTypes<D>}.${"succeeded" | "failed"}`;

/** The payload schemas a definition declares, by event type. */
type Declared<D> = D extends { readonly events: infer E } ? E : {};

/**
 * The event types a literal definition accepts from outside, as the engine does: every `on` key of
 * every state, and every type declared in `events` (a declared type no state handles yet is
 * accepted and ignored), less the outcomes of its effects (`charge.succeeded`), which only the
 * outbox raises. The engine's and XState's internal types (`idem.*`, `xstate.*`) are `InternalEvent`s.
 */
export type EventTypeOf<D> = IsLiteral<D> extends true ? Exclude<OnTypes<D> | Extract<keyof Declared<D>, string>, InternalEvent["type"] | OutcomeTypes<D>> : string;

/** `unknown` (what a schema leaves open, such as the other members of an object) read as any JSON. */
type AsJson<T> = unknown extends T ? Json : T extends object ? { [K in keyof T]: AsJson<T[K]> } : T;

/** The payload a declared schema describes (json-schema-to-ts's `FromSchema`); any JSON when none. */
type PayloadOf<D, T extends string> = T extends keyof Declared<D>
  ? Declared<D>[T] extends { readonly payload: infer S }
    ? S extends JSONSchema
      ? AsJson<FromSchema<S>>
      : Json
    : Json
  : Json;

/** One event of type `T`: its payload required unless the schema accepts a missing one (null). */
type TypedEvent<D, T extends string> = null extends PayloadOf<D, T>
  ? { id: string; type: T; payload?: PayloadOf<D, T> }
  : { id: string; type: T; payload: PayloadOf<D, T> };

/**
 * The events a definition accepts: for a literal definition, one member per event type with the
 * payload its `events` schema describes, plus the internal events; for any other, `Event`.
 *
 * ```ts
 * const definition = { id: "order", initial: "open", states: { open: { on: { PAY: "paid" } }, paid: {} },
 *   events: { PAY: { payload: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] } } } } as const;
 * type OrderEvent = EventOf<typeof definition>; // { id: string; type: "PAY"; payload: { amount: number; ... } } | InternalEvent
 * ```
 */
export type EventOf<D> = IsLiteral<D> extends true ? { [T in EventTypeOf<D>]: TypedEvent<D, T> }[EventTypeOf<D>] | InternalEvent : Event;

/** A literal type widened to what may replace it: `0` to `number`, `readonly ["a"]` to `string[]`. */
type Widen<T> = T extends string
  ? string
  : T extends number
    ? number
    : T extends boolean
      ? boolean
      : T extends null
        ? null
        : T extends readonly (infer I)[]
          ? [I] extends [never]
            ? Json[]
            : Widen<I>[]
          : T extends object
            ? { -readonly [K in keyof T]: Widen<T[K]> }
            : T;

/**
 * A definition's context: for a literal definition, its `context` with literals widened
 * (`{ n: 0, tags: [] }` gives `{ n: number; tags: Json[] }`); otherwise any JSON object. Keys an
 * `assign` adds later are not in it.
 */
export type ContextOf<D> = IsLiteral<D> extends true ? (D extends { readonly context: infer C extends object } ? Widen<C> : {}) : { [key: string]: Json };

/**
 * What a named implementation is given: the context before the event, the event (one the machine
 * accepts, or an effect's outcome the outbox raised, its payload the effect's result), and the
 * `params` written where it is used.
 */
export interface ImplementationArgs<D> {
  context: ContextOf<D>;
  event: EventOf<D> | (IsLiteral<D> extends true ? { id: string; type: OutcomeTypes<D>; payload?: Json } : never);
  params: Json | undefined;
}

/**
 * Named guards, actions and delays for `new Machine(definition, implementations)`, each a function
 * or data (a JSONLogic guard, a list of idem actions, a delay expression), as in the definition's
 * `implementations`; a name given both there and here is refused (`invalid_definition`).
 * Functions run inside `reduce` and must be pure: a duplicate replays its frozen answer and never
 * calls them. A guard answers a boolean; an action a patch of the context or a list of idem actions
 * (as data: their values are taken as they are); a throw or another answer refuses the event with
 * `implementation_failed`, nothing stored. A delay function is called once, when the machine is
 * built, over the initial context, and answers the milliseconds to wait. The analysis cannot read
 * a function: it reads the data form.
 */
export interface Implementations<D = object> {
  guards?: { [name: string]: ((args: ImplementationArgs<D>) => boolean) | Json };
  actions?: { [name: string]: ((args: ImplementationArgs<D>) => Partial<ContextOf<D>> | Json[]) | Json[] };
  delays?: { [name: string]: ((args: Omit<ImplementationArgs<D>, "params">) => number) | Json };
}

/**
 * The engine's `Machine` (from `idem` / pkg/src/<runtime>.js), taking events of type `E`. Built
 * from a definition written `as const`, `E` is `EventOf<typeof definition>`:
 * `reduce` and `apply` refuse a misspelt event type or a payload missing a required field at
 * compile time. Built from any other definition, it takes any `Event`. A typed machine is still a
 * `Machine` (its events are `Event`s).
 */
export interface Machine<E extends { id: string; type: string } = Event> extends MachineLike<E> {
  readonly id: string;
  readonly version: string;
  readonly hash: string;
  /**
   * Apply one event. A `Machine` keeps the decoded snapshot of its recent processes (8, 16 MiB): pass
   * back the snapshot it handed out (or an equal string) and the next reduce starts from that copy.
   * A new snapshot string shares the unchanged part of the previous one, so only what changed crosses.
   * `processId` scopes the effect keys (`<process>/<event>:<n>`): without it (or empty) the call
   * throws `missing_process_id`; a missing `nowMs` throws `missing_now`, one out of range `invalid_now`.
   * An argument of another type (a `nowMs` given as a string, a process id over 256 bytes, a snapshot
   * that is `undefined`) throws `invalid_argument`, naming it, before anything reaches the engine.
   */
  reduce(snapshot: Snapshot | null, event: E | string, nowMs: number, processId: string): Outcome;
  /**
   * As `reduce`, for hosts that store bytes: the snapshot (ASCII text) as a `Uint8Array` in and out.
   * Each applied event returns a new array, filled whole. Hand arrays back unchanged: a kept
   * snapshot is recognised by the array itself and its last 16 bytes (its checksum).
   */
  reduceBytes(snapshot: Uint8Array | null, event: E | string, nowMs: number, processId: string): Omit<Outcome, "snapshot"> & { snapshot: Uint8Array | null };
  due(snapshot: Snapshot | Uint8Array, nowMs: number): DueItem[];
  inspect(snapshot: Snapshot | Uint8Array): Inspection;
  retention(): Retention;
  definition(): Json;
  eventTypes(): string[];
  /**
   * The duplicate-delivery hazards of this machine (as `idem lint` reports them), errors first.
   * In the node entry (which loads the full module on the first call) and the web entry (after
   * `await loadAnalysis()`; before it, an `AnalysisNotLoadedError`, code `analysis_not_loaded`); the edge
   * entries (workerd, deno) load the engine alone.
   */
  analyze(): Finding[];
  /**
   * `idem check`: every delivery schedule of `scenario` within the bounds, breadth first, and the
   * verdict the CLI prints with `--format json` (proved, violated with the shortest counterexample,
   * or inconclusive when `maxStates` or `timeout` was reached). Where `analyze()` is available.
   */
  check(scenario: string | Array<Event | { advance: number }>, options?: CheckOptions): CheckVerdict;
}

/** Bounds of `machine.check` (the CLI's flags; each has the CLI's default). */
export interface CheckOptions {
  /** "all" (default up to 7 events) or a window: a first delivery at most N-1 places ahead (3 beyond 7 events). */
  reorder?: "all" | number;
  expiries?: number;
  crashes?: number;
  effectFaults?: number;
  hosts?: number;
  freshResends?: number;
  property?: "dedup" | "confluent";
  maxStates?: number;
  /** Seconds. */
  timeout?: number;
  process?: string;
  /** Called every 5,000 steps. */
  onProgress?: (p: { states: number; transitions: number; depth: number; seconds: number }) => void;
}

export interface CheckVerdict {
  verdict: "proved" | "violated" | "inconclusive";
  property: "dedup" | "confluent";
  bounds: { deliveries: "unbounded"; reorder: "all" | number; expiries: number; crashes: number; effectFaults: number; hosts: number; freshResends: number; hostDefects: string[] };
  states: number;
  transitions: number;
  depth: number;
  seconds: number;
  collisionProbability: number;
  /** Why a run was inconclusive. */
  reason?: string;
  counterexample?: {
    violation: string;
    steps: Array<{ step: number; action: string; now: number; status?: OutcomeStatus; response?: Json; state?: Json }>;
    expected: { value: Json; context: Json; effects: string[] };
    actual: { value: Json; context: Json; effectsPerformed: Array<{ key: string; times: number }> };
    /** The machine-readable trace `idem check --replay` runs. */
    actions: Json[];
    /** The events whose outcome stood, as `idem run` lines. */
    run: Json[];
  };
}
export declare const Machine: {
  /**
   * Build a machine from its definition (an object or its JSON text), checked whole: an invalid
   * one throws an `IdemError`. `implementations` gives named guards, actions and delays as functions.
   */
  new <D extends object | string>(definition: D, implementations?: Implementations<D>): Machine<EventOf<D>>;
  readonly prototype: Machine;
};
export declare function newEventId(): string;
export declare function version(): string;

/**
 * Import the JSON form of an XState v5 config (`JSON.stringify(machine.config)`, as text or
 * as the parsed object) as an idem definition. Throws an `IdemError` (`invalid_json`, ...) when
 * it is not a config; what cannot be expressed as data becomes an `unrepresentable` diagnostic.
 * Exported by the node entry (the full module loaded on the first call) and the web entry (after
 * `await loadAnalysis()`), not by the edge ones.
 */
export declare function importXState(config: object | string): ImportedXState;

/**
 * Load the full module, which holds the hazard analysis (`machine.analyze()`) and `importXState`.
 * The web entry reduces with the lean module and fetches the full one only when this is called
 * (once; a failed fetch is tried again on the next call). In the node entry it resolves at once,
 * the module read from disk. Exported by the node and web entries, not by the edge ones.
 */
export declare function loadAnalysis(): Promise<void>;

export interface ImportedXState {
  /** An idem definition: pass it to `new Machine(definition)`. */
  definition: { [key: string]: Json };
  /** `unrepresentable` findings naming what could not be imported. */
  diagnostics: Finding[];
  /** How much of the source survived: its states, its transitions and those imported. */
  kept: { states: number; transitions: number; transitionsKept: number };
  /**
   * The named guards and actions the definition uses. Each has a stand-in in
   * `definition.implementations` (a flag the event carries, an opaque effect): replace it
   * with the guard or actions as data.
   */
  needs: { guards: string[]; actions: string[] };
}

// ---------------------------------------------------------------------------
// Hazard analysis: Machine.analyze() and importXState diagnostics

export type Severity = "error" | "warning" | "info";

/** Codes of `Finding.code` (a public contract, like `ErrorCode`). */
export type FindingCode =
  // hazards
  | "reaccept"
  | "reenter_reruns"
  | "cycle_reaccept"
  | "accumulating_assign"
  | "unverified_effect"
  | "unstable_effect_key"
  // information: why a transition is safe
  | "topology_protected"
  | "identity_guarded"
  | "reaccept_unconfirmed"
  // XState import
  | "unrepresentable"
  // an assign doing arithmetic on a payload field no schema declares numeric and required, or a raise does not give
  | "unvalidated_payload"
  // a guard or action given as a function (new Machine(definition, { guards, actions })), which the analysis cannot read
  | "opaque_implementation";

/** A hazard (error / warning) with the event sequence that shows it, or information about what is safe. */
export interface Finding {
  code: FindingCode;
  severity: Severity;
  /** Dotted path of the state concerned (`pending`, `active.paid`); "" for the root. */
  state: string;
  event?: string;
  /** JSON paths of the transitions involved, in the order they are taken. */
  transitions: string[];
  /** JSON path of the action concerned, for findings about one action. */
  site?: string;
  message: string;
  /** How to remove the hazard ("" for information). */
  fix: string;
  /** The retention window (ms) of the event's type, where it is what guards. */
  retentionMs?: number;
  /** For `cycle_reaccept`: the steps of the cycle, `state --EVENT--> state`. */
  cycle?: string[];
  witness?: Witness;
}

/** Reducing `steps` in order (each at its `now`) applies the repeat (`steps[duplicate]`) a second time. */
export interface Witness {
  /** `late_duplicate`: same id after the ledger forgot it; `fresh_id`: same event under a new id. */
  mode: "late_duplicate" | "fresh_id";
  steps: Array<{ event: Event; now: number; role: "prefix" | "original" | "cycle" | "effect" | "timer" | "duplicate" }>;
  original: number;
  duplicate: number;
  /** What the repeat changed. */
  shows: {
    changes: Array<{ field: string; before: Json; after: Json }>;
    effects: Array<{ type: string; key: string; idempotent: boolean }>;
    movedTo?: Json;
  };
}

/** What the hosts need of a machine (the engine's `Machine` satisfies it); `E`, the events it takes. */
export interface MachineLike<E extends { id: string; type: string } = Event> {
  readonly id: string;
  readonly version: string;
  readonly hash: string;
  reduce(snapshot: Snapshot | null, event: E | string, nowMs: number, processId: string): Outcome;
  due(snapshot: Snapshot, nowMs: number): DueItem[];
  inspect(snapshot: Snapshot): Inspection;
  retention(): Retention;
  eventTypes(): string[];
  /** Used by the HTTP API to refuse client events named like the engine's effect results. */
  definition?(): Json;
}

// ---------------------------------------------------------------------------
// The store contract

/** A store's version of a process (a revision number, a versionstamp, ...). Compared by equality only. */
export type Version = number | string;

export interface Loaded {
  snapshot: Snapshot;
  version: Version;
}

/** Passed to `commit` with the outcome, for stores that keep an event log. */
export interface CommitExtras {
  event?: Event | EventText;
  /** Host time of the reduce (ms). */
  now?: number;
}

export type CommitResult = { ok: true; version: Version } | { ok: false; conflict: true };

/**
 * A store holds one snapshot per process and can replace it atomically on a
 * version match. That is all the hosts need: the ledger of applied event ids
 * lives inside the snapshot, so writing the snapshot writes the mark too.
 */
export interface Store {
  /** The stored snapshot and its version, or null when the process does not exist. */
  load(processId: string): Promise<Loaded | null>;
  /**
   * Write `outcome.snapshot` if the stored version still equals `expectedVersion`
   * (`null`: only if the process does not exist yet). Otherwise write nothing and
   * answer `{ ok: false, conflict: true }`. Never partially.
   */
  commit(processId: string, expectedVersion: Version | null, outcome: Outcome, extras?: CommitExtras): Promise<CommitResult>;
  /**
   * Optional: several changed outcomes of one process, in order, as one compare-and-set on
   * `expectedVersion`: the last one's snapshot is stored, each is logged, all or nothing. With it,
   * `apply` commits the calls waiting in a lane together (D1Store, DenoKvStore and MemoryStore have it).
   */
  commitMany?(processId: string, expectedVersion: Version | null, steps: Array<{ outcome: Outcome; extras?: CommitExtras }>): Promise<CommitResult>;
  /** Optional: the event log, oldest first (revisions after `after`, at most `limit`). */
  events?(processId: string, options?: { after?: number; limit?: number }): Promise<EventLogRow[]>;
  /** Optional: true when the platform already runs one process's calls one at a time (a Durable Object): `apply` then keeps no lane for it. */
  readonly serial?: boolean;
}

/**
 * One row of a store's event log (`events`): every store writes the same row, one per committed
 * event (a commit without an event logs nothing), built by stores/common.js.
 */
export interface EventLogRow {
  /** The event's id. */
  eventId: string;
  /** The revision the event produced. */
  revision: number;
  /** The event's type (null only in rows the HTTP API rebuilds from the ledger, whose entries keep no type). */
  type: string | null;
  /** How the engine took it: `applied`, or `ignored` when the machine records ignored events. */
  status: string;
  /** The outcome's response, null when none. */
  response: Json;
  /** When it was received (ms): the host's clock at the reduce (`CommitExtras.now`), else the store's at the commit. */
  receivedAt: number;
}

// ---------------------------------------------------------------------------
// host.js

export type Clock = (() => number) | number;

export interface ApplyOptions {
  /** Host clock in ms (a function or a fixed value); default `Date.now`. */
  now?: Clock;
  /** Compare-and-set retries after the first try (default 16). */
  maxRetries?: number;
  /** Delay before retry n (ms); default full-jitter exponential, 2 ms base, 200 ms cap. */
  backoff?: (n: number) => number;
  /** Called after each lost compare-and-set. */
  onConflict?: (info: { processId: string; event: Event | EventText; attempt: number }) => void;
  /**
   * Calls for one process through one store run one at a time in this isolate, in arrival order,
   * each starting from what the previous one read or wrote (default true). `false`: every call
   * loads and races on its own; the compare-and-set keeps either way correct.
   */
  lane?: boolean;
  /** A call holding its process's lane longer than this (ms) lets the calls behind it go on their own (default 2000). */
  laneStallMs?: number;
}

export declare class ContentionError extends IdemError {
  constructor(processId: string, attempts: number);
  readonly code: "contention";
  readonly processId: string;
  readonly attempts: number;
}

/** An event given as its JSON text (what a request carried), with the id and type the stores log. `apply` reduces the text itself. */
export declare class EventText {
  constructor(id: string, type: string, text: string);
  readonly id: string;
  readonly type: string;
  readonly text: string;
}

/** Apply one event to the stored process: load, reduce, commit (retried on a lost compare-and-set). A typed machine takes its own events only. */
export declare function apply<E extends { id: string; type: string }>(store: Store, machine: MachineLike<E>, processId: string, event: NoInfer<E> | EventText, options?: ApplyOptions): Promise<AppliedOutcome>;

// ---------------------------------------------------------------------------
// dispatch.js

export interface HandlerMeta {
  /** The effect's idempotency key: send it to the provider. */
  key: string;
  /** This attempt's id (`<key>#<n>`), for logs. */
  attemptId: string;
  attempt: number;
}

/** Performs an effect. Resolve with the provider's result; throw to fail (set `retryable: true` to retry, `unknown: true` when the outcome is unknown). */
export type Handler = (payload: Json, meta: HandlerMeta) => Promise<Json | void> | Json | void;
/** Asks a non-idempotent provider whether the operation exists. */
export type Verifier = (payload: Json, meta: { key: string; attempt: number }) => Promise<{ exists: boolean; result?: Json }>;

export interface DispatchOptions extends ApplyOptions {
  handlers?: Record<string, Handler>;
  verifiers?: Record<string, Verifier>;
  /** A handler or verifier answering later than this has an unknown outcome (default 10 000 ms). */
  timeoutMs?: number;
  /** Bound on rounds of due work per call (default 16). */
  maxRounds?: number;
  /** Work this host could not do counts as due this much later in `nextDueAt` (default 30 000 ms). */
  stuckRetryMs?: number;
  onStep?: (step: DispatchStep) => void;
}

export interface DispatchStep {
  kind: DueItem["kind"];
  key: string | null;
  type: string;
  attempt: number | null;
  result:
    | "succeeded"
    | "failed"
    | "unknown"
    | "skipped"
    | "unhandled"
    | "verified-exists"
    | "verified-absent"
    | "verify-error"
    | "expired"
    | "timer";
  status?: OutcomeStatus;
  state?: Json;
}

export interface DispatchReport {
  steps: DispatchStep[];
  unhandled: number;
  /** When to dispatch again (an alarm, a queue delay, a timer), or null. */
  nextDueAt: number | null;
}

export declare function dispatch(store: Store, machine: MachineLike, processId: string, options?: DispatchOptions): Promise<DispatchReport>;

// ---------------------------------------------------------------------------
// http.js

export interface HttpApiOptions extends ApplyOptions {
  machine: MachineLike;
  store: Store;
  /** Path prefix of the API ("" by default), e.g. "/api". */
  basePath?: string;
  maxBodyBytes?: number;
  /** How long a body may take to arrive, whole (ms, default 10000): a body that stalls gets 408 `request_timeout`. */
  bodyTimeoutMs?: number;
  /** Longest request target, path and query (bytes, default 8192): 414 `uri_too_long` beyond. */
  maxUrlBytes?: number;
  /** Largest header section, each field as `name: value\r\n` (bytes, default 16384): 431 `headers_too_large` beyond. */
  maxHeaderBytes?: number;
  /**
   * Runs after each commit made for a request (dispatch effects, schedule an alarm); a promise it
   * returns goes to `waitUntil`. Without it, the first commit that leaves work due (an effect, a
   * timer) makes the API warn once that nothing dispatches it; `null` says the work is dispatched
   * elsewhere (a cron, an alarm, a queue) and keeps that warning quiet.
   */
  afterCommit?: ((processId: string, outcome: AppliedOutcome) => Promise<unknown> | void) | null;
  /**
   * Told what the answer does not carry (default: `console.error`): an error `afterCommit` throws or
   * its promise rejects with (the answer is still the commit's: the event is stored), an error
   * `authorize` throws. An `onError` that throws is ignored.
   */
  onError?: (err: unknown) => void;
  /**
   * Who calls: asked for every request that names a route, before anything is read. Answer the
   * caller's principal (a user's or tenant's id: a well-formed string of 1 to 256 characters), or
   * refuse: `null`/`undefined` is 401 `unauthorized` (+ `WWW-Authenticate: Bearer`), `false` 403
   * `forbidden`, a `Response` is sent as it is. A throw is 500 `authorize_failed`, any other answer
   * 500 `invalid_principal`; nothing is stored either way. With a principal, an Idempotency-Key is
   * the caller's: the event is recorded as `scopedEventId(principal, key)`, so another caller's same
   * key is another event. Without `authorize`, a key is the process's, whoever sends it. It reads
   * the request's headers; the body is the API's to read.
   */
  authorize?: (request: Request, context: { processId: string | null; action: HttpAction }) => HttpCaller | Promise<HttpCaller>;
  /**
   * What GET shows: `"summary"` (default) the state, context, revision, done and due times, and an
   * event log without responses whose ids are the caller's own only; `"full"` also the ledger (ids,
   * fingerprints, frozen responses), the outbox (payloads, results) and timers, and the log's
   * responses and recorded ids.
   */
  view?: "summary" | "full";
  /** Where the API's one warning goes (default `console.warn`). */
  onWarning?: (message: string) => void;
}

/** What a request asks, by route: `GET /` describe, `POST .../events` event, `GET /processes/:id` read, `GET .../events` log. */
export type HttpAction = "describe" | "event" | "read" | "log";
/** What `authorize` answers: a principal, or a refusal (`null`/`undefined` 401, `false` 403, a `Response`). */
export type HttpCaller = string | null | undefined | false | Response;

export interface HttpApi {
  /** Answer one request (pass `ctx.waitUntil` in a Worker, so `afterCommit`'s work outlives the reply). */
  handle(request: Request, hooks?: { waitUntil?: (p: Promise<unknown>) => void }): Promise<Response>;
  /** Whether the request's path is under `basePath` (for a Worker that serves other routes too). */
  matches(request: Request): boolean;
}

export declare function createHttpApi(options: HttpApiOptions): HttpApi;

export declare function problem(status: number, code: string, detail: string, extra?: Record<string, unknown>, headers?: Record<string, string>): Response;
/** 414 / 431 problem when the request target or the header section is over its limit, else null (ask it first on every route). */
export declare function refuseOversized(request: Request, limits?: { maxUrlBytes?: number; maxHeaderBytes?: number }): Response | null;
export declare const STATUS_BY_CODE: Record<string, number>;
export declare const REPLAY_HEADER: "Idempotency-Replayed";
export declare const OUTCOME_HEADER: "Idem-Outcome";
export declare const ATTEMPTS_HEADER: "Idem-Attempts";

// ---------------------------------------------------------------------------
// host.js / dispatch.js helpers

/** `machine.inspect` of the stored snapshot plus its version, or null. */
export declare function inspect(store: Store, machine: MachineLike, processId: string): Promise<(Inspection & { version: Version }) | null>;
export declare function readClock(now?: Clock): number;
export declare function jitteredBackoff(n: number, baseMs?: number, capMs?: number): number;
/** Mark an error as retryable (`failed` with `retryable: true`). */
export declare function retryable<E extends Error>(err: E): E & { retryable: true };
/** Mark an error as an unknown outcome (the operation may have happened). */
export declare function unknownOutcome<E extends Error>(err: E): E & { unknown: true };
export declare function nextDueAt(machine: MachineLike, snapshot: Snapshot): number | null;

// ---------------------------------------------------------------------------
// stores/*.js

export declare class MemoryStore implements Store {
  writes: number;
  conflicts: number;
  load(processId: string): Promise<Loaded | null>;
  commit(processId: string, expectedVersion: Version | null, outcome: Outcome, extras?: CommitExtras): Promise<CommitResult>;
  events(processId: string, options?: { after?: number; limit?: number }): Promise<EventLogRow[]>;
}
/** The part of a D1 binding (`env.DB`, Cloudflare's `D1Database`) that `D1Store` uses. */
export interface D1DatabaseLike {
  prepare(query: string): D1PreparedStatementLike;
  batch(statements: D1PreparedStatementLike[]): Promise<unknown[]>;
}
/** The part of D1's prepared statement that `D1Store` uses. */
export interface D1PreparedStatementLike {
  bind(...values: unknown[]): D1PreparedStatementLike;
  all(): Promise<{ results: unknown[] }>;
}

/**
 * D1: the schema ships in the package, `d1/migrations/` (point `migrations_dir` at
 * `node_modules/idem/d1/migrations` and run `wrangler d1 migrations apply`); one `batch()` per commit. The snapshot is stored in
 * chunk rows of 16 Ki characters (the rest in the process row), and a commit writes only the
 * chunks whose text changed when the store keeps the snapshot at the expected revision. Keep one
 * instance per isolate: it keeps the snapshots it last read or wrote (16 processes, 8 MiB), and
 * `load` fetches a snapshot only when its revision is not the kept one (in the same query). A row
 * whose chunk rows are not all there makes `load` throw a `StoreCorruptError` (`snapshot_corrupt`,
 * HTTP 500; exported by stores/d1.js).
 */
export declare class D1Store implements Store {
  constructor(db: D1DatabaseLike);
  /** Chunk rows written by this store's commits. */
  chunkWrites: number;
  /** Chunks this store's commits left as they were, their text unchanged. */
  chunksSkipped: number;
  load(processId: string): Promise<Loaded | null>;
  commit(processId: string, expectedVersion: Version | null, outcome: Outcome, extras?: CommitExtras): Promise<CommitResult>;
  events(processId: string, options?: { after?: number; limit?: number }): Promise<EventLogRow[]>;
  /** Processes with work due at `now`. */
  due(now: number, limit?: number): Promise<string[]>;
}
/** The part of a Workers KV binding (Cloudflare's `KVNamespace`) that `KVStore` uses. */
export interface KVNamespaceLike {
  getWithMetadata(key: string, options: { type: "text" }): Promise<{ value: string | null; metadata: unknown }>;
  put(key: string, value: string, options?: { metadata?: unknown }): Promise<void>;
}

/**
 * Workers KV: safe only with one writer per process (see stores/kv.js). `singleWriter: true` when
 * this instance is the only writer of its processes (a Durable Object per process): versions are
 * then checked in memory, atomically; without it the version check is a read then a write.
 */
export declare class KVStore implements Store {
  constructor(kv: KVNamespaceLike, options?: { singleWriter?: boolean; prefix?: string });
  load(processId: string): Promise<Loaded | null>;
  commit(processId: string, expectedVersion: Version | null, outcome: Outcome, extras?: CommitExtras): Promise<CommitResult>;
}
/** The part of a Durable Object's storage (`ctx.storage`, Cloudflare's `DurableObjectStorage`) that `DurableObjectStore` uses. */
export interface DurableObjectStorageLike {
  get(key: string): Promise<unknown>;
  get(keys: string[]): Promise<Map<string, unknown>>;
  put(entries: Record<string, unknown>): Promise<void>;
  delete(keys: string[]): Promise<number>;
  list(options?: { start?: string; end?: string; prefix?: string; limit?: number }): Promise<Map<string, unknown>>;
}

/**
 * A Durable Object's transactional storage (one object per process). Keep one instance for the object's lifetime: it keeps the snapshot it
 * last read or wrote, and while the stored version is unchanged `load` reads only the version and
 * returns that very string, which `Machine.reduce` recognises and reduces from its decoded copy.
 *
 * The snapshot is stored in chunks of 32,768 characters (`snapshot:000` …, with `version` and
 * `chunks`), and a commit writes only the chunks whose text changed, with the deletion of chunks
 * beyond the new count, in one atomic write. A snapshot of more than 125 chunks (4,096,000
 * characters) makes `commit` throw a `StoreLimitError` (`snapshot_too_large`, HTTP 507) before
 * anything is written. A chunk missing or cut short makes `load` throw a `StoreCorruptError`
 * (`snapshot_corrupt`, HTTP 500). Both errors are exported by stores/durable.js. Objects holding
 * the whole snapshot under `snapshot` (earlier releases) load, and their next commit stores the
 * chunked form and deletes that key.
 */
export declare class DurableObjectStore implements Store {
  /** `storage`: the object's `ctx.storage`; `processId`: the one process it owns (checked on every call when given). */
  constructor(storage: DurableObjectStorageLike, processId?: string);
  /** Always true: the object runs its process's calls one at a time. */
  readonly serial: true;
  /** Chunks written by this instance's commits. */
  chunkWrites: number;
  /** Chunks its commits did not write because the stored text was already theirs. */
  chunksSkipped: number;
  load(processId: string): Promise<Loaded | null>;
  commit(processId: string, expectedVersion: Version | null, outcome: Outcome, extras?: CommitExtras): Promise<CommitResult>;
  events(processId: string, options?: { after?: number; limit?: number }): Promise<EventLogRow[]>;
}

// ---------------------------------------------------------------------------
// testing/fake-gateway.js

export type GatewayFault = "timeout" | "drop" | "transient" | "permanent";
export interface Charge {
  id: string;
  amount: number;
  currency: string;
  reference: string | null;
  status: "succeeded";
}
export interface GatewayClient {
  charge(request: { amount: number; currency?: string; reference?: string }, options?: { idempotencyKey?: string }): Promise<Charge>;
  findByReference(reference: string): Promise<Charge | null>;
}
export declare class FakeGateway implements GatewayClient {
  constructor(options?: { idempotent?: boolean; timeoutMs?: number | null });
  readonly idempotent: boolean;
  charges: Map<string, Charge>;
  requests: number;
  failNext(fault: GatewayFault, times?: number): this;
  chargeCount(reference?: string): number;
  total(): number;
  charge(request: { amount: number; currency?: string; reference?: string }, options?: { idempotencyKey?: string }): Promise<Charge>;
  findByReference(reference: string): Promise<Charge | null>;
}
export declare function gatewayEffects(gateway: GatewayClient, type?: string): { handlers: Record<string, Handler>; verifiers: Record<string, Verifier> };
export declare function gatewayFetch(gateway: FakeGateway): (request: Request) => Promise<Response>;
export declare function httpGateway(fetcher: (request: Request) => Promise<Response>, baseUrl: string): GatewayClient;
