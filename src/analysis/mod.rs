//! Tools over a definition, outside the per-event path (feature `analysis`;
//! the lean wasm module is built without it).
//!
//! - [`analyze`]: the duplicate-delivery hazard analysis (`idem lint`,
//!   `machine.analyze()`), which explores the machine through the real `reduce`.
//! - [`unvalidated`]: the lint for arithmetic on payload fields no schema declares numeric and required, or a `raise` does not give.
//! - [`xstate`]: import of an XState v5 config's JSON form.

pub mod analyze;
pub mod unvalidated;
pub mod xstate;
