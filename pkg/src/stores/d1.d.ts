// Types for `idem/stores/d1` (stores/d1.js): Cloudflare D1. The schema is in the package's
// d1/migrations/, applied with `wrangler d1 migrations apply`.
export { D1Store } from "../index.js";
export type { D1DatabaseLike, D1PreparedStatementLike } from "../index.js";
export { StoreCorruptError } from "./limit.js";

/** Characters per snapshot chunk row. */
export declare const CHUNK: 16384;
