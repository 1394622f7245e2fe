#!/usr/bin/env bash
# Build the WebAssembly package (generated, never committed), shrink it with
# wasm-opt, print its size and fail when it is over budget. Two modules:
#
#   pkg/dist/lean/idem_bg.wasm   the engine alone: what edge hosts load
#                                (pkg/src/workerd.js, pkg/src/deno.js)
#   pkg/dist/idem_bg.wasm        the engine with hazard analysis and XState import
#                                (pkg/src/node.js, pkg/src/web.js: tools and the demo)
#
#   SIZE_BUDGET=warn scripts/build-wasm.sh   only warn when over budget (the demo uses this)
#
# What takes the room: build the lean module with its function names and list
# the largest functions with twiggy (`cargo install twiggy`). Nothing of serde's
# deserialization (`serde_core::de`, `serde_json::de`) or of `<f64 as Display>`
# should be there (ARCHITECTURE.md, invariants).
#
#   CARGO_TARGET_DIR=target/wasm-size CARGO_PROFILE_RELEASE_STRIP=none \
#     cargo build --lib --release --target wasm32-unknown-unknown --no-default-features
#   wasm-bindgen --target web --out-dir target/wasm-size/dist --out-name idem \
#     target/wasm-size/wasm32-unknown-unknown/release/idem.wasm
#   node_modules/.bin/wasm-opt -Oz --low-memory-unused -g --enable-bulk-memory --enable-nontrapping-float-to-int \
#     --enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue \
#     --enable-simd target/wasm-size/dist/idem_bg.wasm -o target/wasm-size/named.wasm
#   twiggy top -n 40 target/wasm-size/named.wasm
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

# Gzip size budgets in KiB. Keep in step with README.md. The lean module is
# built at opt-level 2 (speed bought with size, see benches/RESULTS.md). Both
# budgets are a few KiB above the modules, which lost 17 KiB (lean) and 7 KiB
# (full) to the changes of log entry 16: no hash maps or sort in the definition
# builder, no bad-slice panic message, zmij's tables computed. Decimal text is
# read into f64 by src/float.rs, without core's power-of-five tables (11 KiB
# off each module).
LEAN_BUDGET_KIB=125
FULL_BUDGET_KIB=179

# The lean module inlines less than opt-level 2 does by default (225): at 100 it
# is 8 KiB smaller and as fast (benches/RESULTS.md, log entry 14). Passed with
# `cargo rustc` to the idem crate, whose rustc does the link-time optimisation,
# so it applies to the whole module. benches/wasm-profile.mjs builds the same.
LEAN_RUSTC_ARGS="-C llvm-args=-inline-threshold=100"

kib() { awk -v b="$1" 'BEGIN { printf "%.1f KiB", b / 1024 }'; }
over=0

# build OUT_DIR BUDGET_KIB PROFILE "RUSTC ARGS" [cargo feature flags...]
build() {
  local out=$1 budget_kib=$2 profile=$3 rustc_args=$4
  shift 4
  # Keep the target_features section through cargo (the release profile's
  # `strip = true` drops it and wasm-bindgen then cannot see which wasm features
  # rustc used); wasm-opt strips the debug info and names below.
  # shellcheck disable=SC2086 # the rustc arguments are words
  CARGO_PROFILE_RELEASE_STRIP=debuginfo CARGO_PROFILE_RELEASE_LEAN_STRIP=debuginfo \
    cargo rustc --lib --profile "$profile" --target wasm32-unknown-unknown "$@" -- $rustc_args
  wasm-bindgen --target web --out-dir "$out" --out-name idem \
    "target/wasm32-unknown-unknown/$profile/idem.wasm"
  local wasm=$out/idem_bg.wasm
  # Name the wasm features rustc enables by default for wasm32-unknown-unknown, so
  # wasm-opt validates and optimizes the module whatever sections reach it (with
  # none, validation fails on memory.copy and i64.trunc_sat); --all-features would
  # let wasm-opt emit features that rustc did not. --low-memory-unused: nothing
  # lives in the first KiB (data starts at 1 MiB, the stack grows down to it),
  # so constant offsets fold into loads and stores (1.8 KB smaller, no slower).
  node_modules/.bin/wasm-opt -Oz --low-memory-unused \
    --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue --enable-simd \
    --strip-debug --strip-producers \
    "$wasm" -o "$wasm"
  local raw gz budget=$((budget_kib * 1024))
  raw=$(stat -c %s "$wasm")
  gz=$(gzip -9 -c "$wasm" | wc -c)
  echo "wasm size: $wasm raw $(kib "$raw") ($raw B), gzip $(kib "$gz") ($gz B); budget $budget_kib KiB gzip"
  if [ "$gz" -gt "$budget" ]; then
    echo "wasm size: $wasm OVER BUDGET by $(kib $((gz - budget)))" >&2
    over=1
  fi
}

# The lean module is built for speed (Cargo.toml, profile release-lean), the full one for size.
build pkg/dist/lean "$LEAN_BUDGET_KIB" release-lean "$LEAN_RUSTC_ARGS" --no-default-features
build pkg/dist "$FULL_BUDGET_KIB" release ""

if [ "$over" = 1 ] && [ "${SIZE_BUDGET:-}" != warn ]; then
  exit 1
fi
