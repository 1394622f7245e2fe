#!/usr/bin/env bash
# Build the WebAssembly package (generated, never committed), shrink it with
# wasm-opt, print its size and fail when it is over budget. Two modules:
#
#   pkg/dist/lean/idem_bg.wasm   the engine alone: what every entry reduces with
#   pkg/dist/idem_bg.wasm        the engine with hazard analysis and XState import
#                                (node.js on first use, web.js on loadAnalysis())
#
# and then the package's JavaScript as published, pkg/dist/js/ (scripts/bundle-js.mjs).
#
#   SIZE_BUDGET=warn scripts/build-wasm.sh   only warn when over budget (the demo uses this)
#
# What takes the room: build the lean module with its function names and list
# the largest functions with twiggy (`cargo install twiggy`):
#
#   CARGO_TARGET_DIR=target/wasm-size CARGO_PROFILE_RELEASE_LEAN_STRIP=none \
#     cargo rustc --lib --profile release-lean --target wasm32-unknown-unknown --no-default-features \
#     -- -C llvm-args=-inline-threshold=100
#   wasm-bindgen --target web --out-dir target/wasm-size/dist --out-name idem \
#     target/wasm-size/wasm32-unknown-unknown/release-lean/idem.wasm
#   node_modules/.bin/wasm-opt -Oz --low-memory-unused --one-caller-inline-max-function-size=300 -g \
#     --enable-bulk-memory --enable-nontrapping-float-to-int \
#     --enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue \
#     --enable-simd target/wasm-size/dist/idem_bg.wasm -o target/wasm-size/named.wasm
#   twiggy top -n 40 target/wasm-size/named.wasm
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

# What this needs is installed by scripts/setup.sh, which the README's two
# commands run first; alone on a fresh machine, say so rather than fail in rustc.
need_setup() { echo "build-wasm: $1 is missing: run scripts/setup.sh first" >&2; exit 1; }
if command -v rustup >/dev/null; then
  rustup target list --installed | grep -qx wasm32-unknown-unknown || need_setup "the Rust target wasm32-unknown-unknown"
fi
command -v wasm-bindgen >/dev/null || need_setup "wasm-bindgen (wasm-bindgen-cli)"

# Gzip size budgets in KiB, a guard against a change that brings in far more
# code than it means to, not a target. Keep in step with README.md.
LEAN_BUDGET_KIB=157
FULL_BUDGET_KIB=320

# The lean module inlines less than opt-level 2 does by default (225): as fast,
# and smaller (benches/RESULTS.md, log entry 14). Passed with
# `cargo rustc` to the idem crate, whose rustc does the link-time optimisation,
# so it applies to the whole module. benches/wasm-profile.mjs builds the same.
LEAN_RUSTC_ARGS="-C llvm-args=-inline-threshold=100"

# wasm-opt inlines every function with one caller by default. In the lean module
# it keeps those over 300 units out of line, so that code an event does not run
# stays out of the functions it does run, which a wasm engine compiles whole on
# their first call (benches/RESULTS.md, log entry 20).
# The JSONLogic operators are called through pointers for the same reason
# (expr.rs), and reduce_event's branches a fresh event does not take are
# functions of their own (reduce.rs).
LEAN_WASM_OPT_ARGS="--one-caller-inline-max-function-size=300"

kib() { awk -v b="$1" 'BEGIN { printf "%.1f KiB", b / 1024 }'; }
over=0

# build OUT_DIR BUDGET_KIB PROFILE "RUSTC ARGS" "WASM-OPT ARGS" [cargo feature flags...]
build() {
  local out=$1 budget_kib=$2 profile=$3 rustc_args=$4 wasm_opt_args=$5
  shift 5
  # Keep the target_features section through cargo (the release profile's
  # `strip = true` drops it and wasm-bindgen then cannot see which wasm features
  # rustc used); wasm-opt strips the debug info and names below.
  # shellcheck disable=SC2086 # the rustc arguments are words
  CARGO_PROFILE_RELEASE_STRIP=debuginfo CARGO_PROFILE_RELEASE_LEAN_STRIP=debuginfo \
    cargo rustc --lib --profile "$profile" --target wasm32-unknown-unknown "$@" -- $rustc_args
  # --no-typescript: the package's types are pkg/src/*.d.ts (the hosts' API), not the raw bindings'.
  wasm-bindgen --target web --no-typescript --out-dir "$out" --out-name idem \
    "target/wasm32-unknown-unknown/$profile/idem.wasm"
  # One JavaScript module to load, not the glue and its inline JS snippet.
  node scripts/fold-snippets.mjs "$out"
  local wasm=$out/idem_bg.wasm
  # Name the wasm features rustc enables by default for wasm32-unknown-unknown, so
  # wasm-opt validates and optimizes the module whatever sections reach it (with
  # none, validation fails on memory.copy and i64.trunc_sat); --all-features would
  # let wasm-opt emit features that rustc did not. --low-memory-unused: nothing
  # lives in the first KiB (data starts at 1 MiB, the stack grows down to it),
  # so constant offsets fold into loads and stores.
  # shellcheck disable=SC2086 # the wasm-opt arguments are words
  node_modules/.bin/wasm-opt -Oz --low-memory-unused $wasm_opt_args \
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
build pkg/dist/lean "$LEAN_BUDGET_KIB" release-lean "$LEAN_RUSTC_ARGS" "$LEAN_WASM_OPT_ARGS" --no-default-features
build pkg/dist "$FULL_BUDGET_KIB" release "" ""
node scripts/bundle-js.mjs

if [ "$over" = 1 ] && [ "${SIZE_BUDGET:-}" != warn ]; then
  exit 1
fi
