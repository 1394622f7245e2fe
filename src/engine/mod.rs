//! The engine: a pure reducer from (machine, snapshot, event, now) to an
//! outcome. No I/O, no clock, no randomness, no JavaScript.
//!
//! Where an event goes, file by file:
//!
//! - [`machine`]: the definition, validated once into a flat arena of states
//!   in document order; every error names its JSON path.
//! - [`reduce`]: one event in: validate it, load the snapshot (or start a new
//!   process), answer a repeated id from the ledger (`duplicate` or
//!   `conflict`), otherwise run one macrostep, record the id and encode.
//! - [`outcome`]: what a reduce gives back (`Outcome`, `Status`,
//!   `EmittedEffect`) and the validated `Event`.
//! - `interpreter`: the statechart algorithm (SCXML's microstep and
//!   macrostep, exit and entry sets, as XState v5 implements them).
//! - [`outbox`]: effects on their way out, their attempts, retries and reports.
//! - [`schema`]: the JSON Schema subset event payloads are checked against.
//! - [`expr`]: guards and computed values (JSONLogic).
//! - [`error`]: the one error type with its stable codes.
//!
//! The snapshot the engine reads and writes is `crate::snapshot`; the JSON it
//! parses, writes and fingerprints is `crate::json`.

pub mod error;
pub mod expr;
pub mod host;
pub(crate) mod interpreter;
pub mod machine;
pub mod outbox;
pub mod outcome;
pub mod reduce;
pub mod schema;
