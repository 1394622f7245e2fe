// Types for `idem/http` (http.js): the HTTP API (IETF Idempotency-Key draft, RFC 9457 problems).
export { createHttpApi, problem, refuseOversized, STATUS_BY_CODE, REPLAY_HEADER, OUTCOME_HEADER, ATTEMPTS_HEADER } from "./index.js";
export type { HttpAction, HttpApi, HttpApiOptions, HttpCaller } from "./index.js";

/** Largest POST body accepted by default (bytes): the engine's 64 KiB payload limit plus room for the envelope. */
export declare const DEFAULT_MAX_BODY_BYTES: number;
/** How long a request's body may take to arrive, whole, by default (ms): a body that stalls gets 408 `request_timeout`. */
export declare const DEFAULT_BODY_TIMEOUT_MS: number;
/** Longest request target (path and query) accepted by default (bytes): 414 `uri_too_long` beyond. */
export declare const DEFAULT_MAX_URL_BYTES: number;
/** Largest header section accepted by default (bytes, each field counted as `name: value\r\n`): 431 `headers_too_large` beyond. */
export declare const DEFAULT_MAX_HEADER_BYTES: number;
/** `Retry-After` on 409 contention: a whole number of seconds drawn from 1 to this. */
export declare const RETRY_AFTER_MAX_SECONDS: number;
/** What an `Idempotency-Key` must match (it becomes the event id). */
export declare const KEY_PATTERN: RegExp;
/** What a process id in a path must match. */
export declare const PROCESS_ID_PATTERN: RegExp;

/** An `Idempotency-Key` header value (a bare token or a structured-field string) read. */
export declare function parseIdempotencyKey(raw: string | null): { key: string } | { missing: true } | { invalid: true };

/** A whole number of seconds from 1 to `RETRY_AFTER_MAX_SECONDS`, drawn anew for each answer (the 409 `Retry-After`). */
export declare function retryAfterSeconds(): number;

/** Longest principal `authorize` may answer (characters). */
export declare const MAX_PRINCIPAL_LENGTH: number;
/** What a request asks, as `authorize` is told. */
export declare const ACTIONS: readonly ["describe", "event", "read", "log"];
/** What `GET` shows (the `view` option). */
export declare const VIEWS: readonly ["summary", "full"];
/**
 * The event id recorded for an Idempotency-Key that `principal` sent when `authorize` answers it:
 * `<32 hex digits of SHA-256(principal)>:<key>`, the same on every retry.
 */
export declare function scopedEventId(principal: string, key: string): Promise<string>;
