//! The wasm boundary tests under Node.js (`wasm-bindgen-test-runner`'s default):
//! `cargo test --target wasm32-unknown-unknown --test wasm_node`.
//! Tests for every runtime go in `wasm_shared/`; Node-only tests go here.
#![cfg(target_arch = "wasm32")]

mod wasm_shared;
