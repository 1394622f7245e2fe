//! Boundary tests that run in every runtime: included by `wasm_node.rs` (Node.js)
//! and `wasm_browser.rs` (Chromium, Firefox).

use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
fn version_is_the_crate_version() {
    assert_eq!(idem::version(), env!("CARGO_PKG_VERSION"));
}
