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
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

# Gzip size budgets in KiB. Keep in step with README.md. The lean module is
# built at opt-level 2 (speed bought with size, see benches/RESULTS.md); both
# budgets also grew by 5 KiB for snapshot format 3 and the faster fingerprint
# and expression evaluation.
LEAN_BUDGET_KIB=210
FULL_BUDGET_KIB=230

kib() { awk -v b="$1" 'BEGIN { printf "%.1f KiB", b / 1024 }'; }
over=0

# build OUT_DIR BUDGET_KIB PROFILE [cargo feature flags...]
build() {
  local out=$1 budget_kib=$2 profile=$3
  shift 3
  # Keep the target_features section through cargo (the release profile's
  # `strip = true` drops it and wasm-bindgen then cannot see which wasm features
  # rustc used); wasm-opt strips the debug info and names below.
  CARGO_PROFILE_RELEASE_STRIP=debuginfo CARGO_PROFILE_RELEASE_LEAN_STRIP=debuginfo \
    cargo build --lib --profile "$profile" --target wasm32-unknown-unknown "$@"
  wasm-bindgen --target web --out-dir "$out" --out-name idem \
    "target/wasm32-unknown-unknown/$profile/idem.wasm"
  local wasm=$out/idem_bg.wasm
  # Name the wasm features rustc enables by default for wasm32-unknown-unknown, so
  # wasm-opt validates and optimizes the module whatever sections reach it (with
  # none, validation fails on memory.copy and i64.trunc_sat); --all-features would
  # let wasm-opt emit features that rustc did not.
  node_modules/.bin/wasm-opt -Oz \
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
build pkg/dist/lean "$LEAN_BUDGET_KIB" release-lean --no-default-features
build pkg/dist "$FULL_BUDGET_KIB" release

if [ "$over" = 1 ] && [ "${SIZE_BUDGET:-}" != warn ]; then
  exit 1
fi
