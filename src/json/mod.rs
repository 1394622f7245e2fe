//! JSON as idem reads and writes it: the text of events, definitions,
//! responses and snapshot heads.
//!
//! - `parse`: strict RFC 8259 text into a `serde_json::Value`, reading exactly
//!   what `serde_json::from_str::<Value>` reads and refusing everything else
//!   with serde_json's reason and position (`tests/json_parser.rs` compares
//!   the two); every input is held to [`MAX_DEPTH`] levels of nesting.
//! - `write`: compact JSON text byte for byte as serde_json writes it, object
//!   members sorted by key (the canonical form: everything idem writes) or in
//!   the map's order (a state value's regions, in document order)
//!   (`tests/json_writer.rs`).
//! - [`order`]: the order a document's object members were written in, for
//!   where it means something (a definition's states, regions, transitions),
//!   since a `Value`'s map keeps them sorted.
//! - `value`: `Value`s built from Rust values ([`ToValue`], `object!`).
//! - `fingerprint`: the fingerprint that tells a repeated event from a
//!   conflicting one (a hash of its canonical type and payload), and the
//!   hashes and hex digits the snapshot uses.
//! - [`float`]: numbers as JavaScript reads them, for JSONLogic's `ToNumber`,
//!   and the decimal reading the parser shares.
//! - `ulid`: time-ordered ids for hosts that have none.
//!
//! The parser and the writers are idem's own rather than serde's derives and
//! serializer: the per-event path (an event's text, the snapshot's head, the
//! outcome) reads and writes JSON without serde's machinery, whose error and
//! float formatting the lean module would otherwise carry (benches/RESULTS.md,
//! entry 17); serde_json stays for `Value`, `Map` and `Number`, and is the
//! oracle the tests compare the parser and the writers with. Values that do
//! not cross per event leave the bindings through serde-wasm-bindgen.

mod fingerprint;
pub mod float;
pub mod order;
mod parse;
mod ulid;
mod value;
mod write;

pub use fingerprint::{fingerprint, fingerprint_digits, fingerprint_sized, hash64, hex128, Fingerprint};
pub(crate) use fingerprint::hex_digits;
pub use order::Order;
pub use parse::{check_depth, parse, parse_prefix, parse_value, parse_with_depth, within_depth, SyntaxError, MAX_DEPTH};
pub use ulid::ulid;
pub(crate) use value::{members, object};
pub use value::{to_value, ToValue};
pub use write::{canonical, push_f64, push_u64, put, to_text, utf8, write_canonical, write_in_order, write_json, write_str};

#[cfg(test)]
pub(crate) mod tests;
