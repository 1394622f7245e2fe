// Types for `idem/host` (host.js): the host loop, load -> reduce -> commit.
export { apply, inspect, ContentionError, EventText, readClock, jitteredBackoff } from "./index.js";
export type { ApplyOptions, AppliedOutcome, Clock, MachineLike, Store } from "./index.js";

/** Compare-and-set retries after the first try, when `ApplyOptions.maxRetries` is not given. */
export declare const DEFAULT_MAX_RETRIES: 16;
/** How long (ms) a call may hold its process's lane before the calls behind it go on their own. */
export declare const DEFAULT_LANE_STALL_MS: 2000;
