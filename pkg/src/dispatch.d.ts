// Types for `idem/dispatch` (dispatch.js): the outbox dispatcher.
export { dispatch, retryable, unknownOutcome, nextDueAt } from "./index.js";
export type { DispatchOptions, DispatchReport, DispatchStep, Handler, HandlerMeta, Verifier } from "./index.js";

/** A handler or verifier answering later than this (ms) has an unknown outcome, unless `timeoutMs` says otherwise. */
export declare const DEFAULT_TIMEOUT_MS: 10000;
/** Rounds of due work per `dispatch` call, unless `maxRounds` says otherwise. */
export declare const DEFAULT_MAX_ROUNDS: 16;
/** Work this host could not do counts as due this much later (ms) in `nextDueAt`, unless `stuckRetryMs` says otherwise. */
export declare const DEFAULT_STUCK_RETRY_MS: 30000;

/** What a handler's or verifier's call became when it did not answer within `timeoutMs`: an unknown outcome. */
export declare class TimeoutError extends Error {
  constructor(ms: number);
  readonly name: "TimeoutError";
  readonly code: "timeout";
}
