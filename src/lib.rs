//! idem: statecharts that survive the second delivery.
//!
//! A pure, deterministic reducer: `reduce(machine, snapshot, event, now)`
//! returns the new snapshot, whether the event was a duplicate, the frozen
//! response and the effects to perform. No I/O, no clock, no randomness: time
//! comes in as `now`.
//!
//! The folders follow an event through the engine:
//!
//! - `engine/`: the definition (`machine`), `reduce` (an event validated, a
//!   repeated id answered from the ledger, one macrostep, the id recorded),
//!   what it gives back (`outcome`), the statechart algorithm
//!   (`interpreter`), the outbox, the expressions
//!   (`expr`) and the one error type;
//! - `snapshot/`: the versioned wire format the state is encoded in, and the
//!   ledger of applied event ids where a repeated event is recognised;
//! - `json/`: JSON read and written, canonical form and fingerprints, and
//!   JavaScript's number rules (`float`);
//! - `analysis/`: hazard analysis and XState import (feature `analysis`);
//! - `check/`: the simulator's world and `idem check`, every delivery
//!   schedule of a scenario explored (feature `analysis`);
//! - `wasm/`: the JavaScript bindings, the only code that names them;
//! - `bin/`: the `idem` command line.
//!
//! The modules of `engine/` and `analysis/` are also at the crate root
//! (`idem::machine`, `idem::reduce`, ...), as is `json::float` (`idem::float`).
//!
//! ```
//! use idem::Machine;
//! use serde_json::json;
//!
//! let m = Machine::from_json(r#"{
//!   "id": "order", "initial": "pending", "context": { "paid": [] },
//!   "states": {
//!     "pending": { "on": { "PAY": { "target": "paid",
//!        "actions": [{ "assign": { "paid": { "merge": [{ "var": "context.paid" }, [{ "var": "event.payload.id" }]] } } }] } } },
//!     "paid": { "type": "final" }
//!   }
//! }"#).unwrap();
//! let pay = json!({ "id": "evt-1", "type": "PAY", "payload": { "id": "p1" } });
//! let first = m.reduce(None, &pay, 1_000);
//! assert_eq!(first.status.as_str(), "applied");
//! let again = m.reduce(first.snapshot.as_deref(), &pay, 2_000);
//! assert!(again.duplicate());
//! assert_eq!(again.response, first.response);
//! ```

pub mod engine;
pub mod json;
pub mod snapshot;
#[cfg(feature = "analysis")]
pub mod analysis;
#[cfg(feature = "analysis")]
pub mod check;
#[cfg(feature = "analysis")]
pub mod cli;

/// The JavaScript bindings. Public so that the wasm boundary tests
/// (tests/wasm_shared) call the exports exactly as JavaScript does.
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use engine::{error, expr, host, machine, outbox, outcome, reduce, schema};
pub(crate) use engine::interpreter;
pub use json::float;
#[cfg(feature = "analysis")]
pub use analysis::{analyze, unvalidated, xstate};

pub use error::{Code, Error};
pub use machine::Machine;
pub use outcome::{EmittedEffect, Event, Original, Outcome, Reduced, Split, Status};
pub use snapshot::Snapshot;

/// The crate version, also reported by the wasm package and the CLI.
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Decode a snapshot into its readable JSON form (for people and tools).
pub fn inspect(machine: &Machine, snapshot: &str) -> Result<serde_json::Value, Error> {
    let loaded = snapshot::load(machine, snapshot)?;
    loaded.snap.ledger.validate()?;
    Ok(loaded.snap.to_value())
}
