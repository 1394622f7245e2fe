//! Boundary tests that run in every runtime: included by `wasm_node.rs` (Node.js)
//! and `wasm_browser.rs` (Chromium, Firefox). They call the exported bindings
//! (`idem::wasm`) with real JavaScript values, as the generated package does.
//!
//! - `scenarios`: every scenario file, byte-identical to the native engine
//!   (goldens in tests/golden/, kept current by tests/golden.rs);
//! - `boundary`: errors, rejected outcomes, duplicates, the snapshot string;
//! - `jsonlogic`: the evaluator as compiled to wasm (the official suite, `%`);
//! - `numbers`: number text read and written in Rust (JSON decimals, JSONLogic's
//!   `ToNumber` and `String(x)`), compared with the JavaScript engine's own.

mod boundary;
mod jsonlogic;
mod numbers;
mod runner;
mod scenarios;
