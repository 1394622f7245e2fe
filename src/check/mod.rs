//! Running a machine under the delivery schedules a host can meet.
//!
//! - `sim`: the seeded simulator's world, executions drawn at random;
//! - `model` + `explore`: `idem check`, every schedule of a scenario within
//!   bounds, breadth first.
//!
//! Pure like the engine: no I/O, no clock, no randomness beyond a seeded
//! generator passed in.

pub mod sim;
pub mod model;
pub mod scenario;
pub mod explore;
pub mod report;
