// Types for `idem/host` (host.js): the host loop, load -> reduce -> commit.
export { apply, inspect, ContentionError, EventText, readClock, jitteredBackoff } from "./index.js";
export type { ApplyOptions, AppliedOutcome, Clock, MachineLike, Store } from "./index.js";

/** Compare-and-set retries after the first try, when `ApplyOptions.maxRetries` is not given. */
export declare const DEFAULT_MAX_RETRIES: 16;
/** How long (ms) a call may hold its process's lane before the calls behind it go on their own. */
export declare const DEFAULT_LANE_STALL_MS: 2000;
/** The type prefix of the dispatcher's attempt reports, reserved by the engine. */
export declare const EFFECT_REPORT_PREFIX: "idem.effect.";
/** The type of a due timer's event, reserved by the engine. */
export declare const TIMER_EVENT: "idem.after";
/** Whether the engine reserves `type` for its own events (`idem.effect.*`, `idem.after`): a client may not send it. */
export declare function isEngineEventType(type: string): boolean;
