#!/usr/bin/env bash
# Build the WebAssembly package into pkg/dist (generated, never committed),
# shrink it with wasm-opt, print its size and fail when it is over budget.
#
#   SIZE_BUDGET=warn scripts/build-wasm.sh   only warn when over budget (the demo uses this)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

# Gzip size budget of pkg/dist/idem_bg.wasm. Keep in step with README.md.
BUDGET_KIB=100

OUT=pkg/dist
WASM=$OUT/idem_bg.wasm

# Keep the target_features section through cargo (the release profile's
# `strip = true` drops it and wasm-bindgen then cannot see which wasm features
# rustc used); wasm-opt strips the debug info and names below.
CARGO_PROFILE_RELEASE_STRIP=debuginfo cargo build --lib --release --target wasm32-unknown-unknown
wasm-bindgen --target web --out-dir "$OUT" --out-name idem \
  target/wasm32-unknown-unknown/release/idem.wasm

# Name the wasm features rustc enables by default for wasm32-unknown-unknown, so
# wasm-opt validates and optimizes the module whatever sections reach it (with
# none, validation fails on memory.copy and i64.trunc_sat); --all-features would
# let wasm-opt emit features that rustc did not.
node_modules/.bin/wasm-opt -Oz \
  --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  --strip-debug --strip-producers \
  "$WASM" -o "$WASM"

raw=$(stat -c %s "$WASM")
gz=$(gzip -9 -c "$WASM" | wc -c)
budget=$((BUDGET_KIB * 1024))
kib() { awk -v b="$1" 'BEGIN { printf "%.1f KiB", b / 1024 }'; }

echo "wasm size: $WASM raw $(kib "$raw") ($raw B), gzip $(kib "$gz") ($gz B); budget $BUDGET_KIB KiB gzip"
if [ "$gz" -gt "$budget" ]; then
  echo "wasm size: OVER BUDGET by $(kib $((gz - budget)))" >&2
  [ "${SIZE_BUDGET:-}" = warn ] || exit 1
fi
