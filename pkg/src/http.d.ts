// Types for `idem/http` (http.js): the HTTP API (IETF Idempotency-Key draft, RFC 9457 problems).
export { createHttpApi, problem, STATUS_BY_CODE, REPLAY_HEADER, OUTCOME_HEADER, ATTEMPTS_HEADER } from "./index.js";
export type { HttpApi, HttpApiOptions } from "./index.js";

/** Largest POST body accepted by default (bytes): the engine's 64 KiB payload limit plus room for the envelope. */
export declare const DEFAULT_MAX_BODY_BYTES: number;
/** What an `Idempotency-Key` must match (it becomes the event id). */
export declare const KEY_PATTERN: RegExp;
/** What a process id in a path must match. */
export declare const PROCESS_ID_PATTERN: RegExp;

/** An `Idempotency-Key` header value (a bare token or a structured-field string) read. */
export declare function parseIdempotencyKey(raw: string | null): { key: string } | { missing: true } | { invalid: true };
