//! The seeded simulator's world: real processes run through hosts that crash,
//! race and retry over a store with compare-and-set, driven by one 64-bit seed
//! (tests/sim.rs runs it over many seeds and shrinks a failing one).
//!
//! - `rng`: SplitMix64, the only source of choices;
//! - `workload`: the events each process's senders send, and how;
//! - `world`: the store, the hosts' step machines, the gateways, the random
//!   scheduler and the invariants checked at quiescence.

pub mod rng;
pub mod workload;
pub mod world;
