//! The wasm boundary tests in a headless browser, chosen by the WebDriver server
//! in the environment (scripts/test.sh runs this suite in Chromium and Firefox):
//! `CHROMEDRIVER=/usr/bin/chromedriver cargo test --target wasm32-unknown-unknown --test wasm_browser`.
//! Tests for every runtime go in `wasm_shared/`; browser-only tests go here.
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

mod wasm_shared;
