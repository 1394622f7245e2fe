#!/usr/bin/env bash
# The one command that runs every test. It installs what is missing, runs each
# suite (going on after a failure), prints a summary and exits non-zero if any
# suite failed. A JavaScript suite whose directory does not exist yet is skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH="$HOME/.cargo/bin:$ROOT/node_modules/.bin:$PATH"
export WRANGLER_SEND_METRICS=false
export WASM_BINDGEN_TEST_WEBDRIVER_JSON=$ROOT/tests/webdriver.json # Chromium flags
export IDEM_CHROMIUM=/usr/bin/chromium # for Playwright: executablePath

scripts/setup.sh || { echo "test: setup failed" >&2; exit 1; }

LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT
SUMMARY=()
TOTAL_PASSED=0
TOTAL_FAILED=0
ANY_FAILED=0

# Count what a runner reported: cargo/libtest ("test result: ok. 3 passed; 0 failed"),
# node --test ("# pass 3" / "# fail 0"), deno ("ok | 3 passed | 0 failed").
count() {
  awk '
    /test result: .* passed; .* failed/ { for (i = 1; i < NF; i++) {
        if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
    /^# pass [0-9]+$/ { p += $3 }  /^# fail [0-9]+$/ { f += $3 }
    /^(ok|FAILED) \| [0-9]+ passed/ { for (i = 1; i < NF; i++) {
        if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
    END { printf "%d %d\n", p, f }' "$1"
}

# suite NAME COMMAND... : run one suite, record PASS/FAIL with its counts.
suite() {
  local name=$1; shift
  local log=$LOGS/$((${#SUMMARY[@]})).log start=$SECONDS status=PASS
  printf '\n=== %s\n$ %s\n' "$name" "$*"
  "$@" 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || { status=FAIL; ANY_FAILED=1; }
  read -r passed failed < <(count "$log")
  TOTAL_PASSED=$((TOTAL_PASSED + passed)); TOTAL_FAILED=$((TOTAL_FAILED + failed))
  local tally="$passed passed, $failed failed"
  case "$name" in clippy*|build*|types*) tally="" ;; esac
  SUMMARY+=("$(printf '%-4s  %-34s %-24s %4ss' "$status" "$name" "$tally" $((SECONDS - start)))")
}

skip() { SUMMARY+=("$(printf 'SKIP  %-34s (%s does not exist yet)' "$1" "$2")"); }

# js_suite NAME DIR COMMAND... : a suite that exists once its directory does.
js_suite() {
  local name=$1 dir=$2; shift 2
  if [ -d "$dir" ]; then suite "$name" "$@"; else skip "$name" "$dir/"; fi
}

WASM=(cargo test --target wasm32-unknown-unknown)

# --- Rust, native ---------------------------------------------------------
suite "clippy (native)"       cargo clippy --all-targets -- -D warnings
suite "cargo test (native)"   cargo test
# The engine as the lean module builds it: without `analysis`, a Value's maps
# keep their members sorted, and every machine must run the same.
suite "cargo test (native, lean)" cargo test --no-default-features
# --- WebAssembly: the package, then the boundary tests in each runtime ----
suite "clippy (wasm32)"       cargo clippy --target wasm32-unknown-unknown --lib \
                                --test wasm_node --test wasm_browser -- -D warnings
suite "build wasm + size"     scripts/build-wasm.sh
# The benchmark harness once, untimed: XState, the hand-written reducer, idem wasm and
# idem native must agree on every outcome (node benches/run.mjs times them).
suite "bench smoke (peers agree)" node benches/run.mjs --smoke --no-wasm-build --sizes 0,100,1000
suite "wasm: Node.js"         "${WASM[@]}" --test wasm_node
# The unit tests whose code differs in wasm (the newline scan: SIMD128).
suite "wasm: unit tests (Node.js)" "${WASM[@]}" --lib
# The lean engine (no analysis / XState import) that workerd.js and deno.js load.
suite "wasm: Node.js (lean)"  "${WASM[@]}" --no-default-features --test wasm_node
suite "wasm: Chromium"        env -u GECKODRIVER CHROMEDRIVER=/usr/bin/chromedriver \
                                "${WASM[@]}" --test wasm_browser
suite "wasm: Firefox"         env -u CHROMEDRIVER GECKODRIVER="$HOME/.cargo/bin/geckodriver" \
                                "${WASM[@]}" --test wasm_browser
# --- JavaScript (each directory is a suite once it exists) -----------------
# Test files are named *.test.mjs (or *.test.js); other files there are helpers
# and fixtures. Deno runs *_test.ts, *.test.ts, *_test.js, *.test.js. The e2e tests
# start their own server (scripts/serve.mjs exports serve()) and Chromium
# ($IDEM_CHROMIUM) with playwright-core.
node_tests() {
  local files
  mapfile -t files < <(find "$1" -type f \( -name '*.test.mjs' -o -name '*.test.js' \) | sort)
  if [ ${#files[@]} -eq 0 ]; then echo "no *.test.mjs files in $1"; return 0; fi
  node --test "${files[@]}"
}
js_suite "js: pkg (node --test)"      pkg/test    node_tests pkg/test
js_suite "js: package surface (node --test)" tests/js node_tests tests/js
# idem against XState 5 on random machines (a fixed seed list) and the named regression cases;
# node tests/differential/run.mjs runs any number more (tests/differential/README.md).
js_suite "js: differential vs XState (node --test)" tests/differential node_tests tests/differential
# The XState corpus (tests/xstate) run with its implementations as data beside XState 5 and 4
# running the machines' own functions, on seeded random streams (tests/xstate/README.md).
js_suite "js: XState corpus vs XState (node --test)" tests/xstate node_tests tests/xstate
# Deno host (tests/deno): Deno KV needs --unstable-kv in Deno 2.x; NO_COLOR keeps
# deno's "ok | N passed" summary plain so that count() reads it.
js_suite "js: deno hosts (deno test)" tests/deno  env NO_COLOR=1 deno test --allow-all --unstable-kv tests/deno/
js_suite "e2e: demo (Playwright)"     tests/e2e   node_tests tests/e2e
# --- TypeScript: pkg/src/*.d.ts and a typed usage of the package (tests/types) ---
suite "types: tsc --noEmit"           tsc -p tests/types
# --- The package as a user installs it: npm pack, a fresh project with the tarball alone, the
# README's Node, TypeScript (nodenext), Deno and Worker sections, and `npx idem` against the Rust
# binary (tests/consumer; needs pkg/dist, builds target/debug/idem).
# It prints the tarball's packed and unpacked size, which the summary repeats.
js_suite "consumer: the packed package"  tests/consumer \
                                        node --test --test-concurrency=1 tests/consumer/
# --- Cloudflare host on real workerd (Miniflare + wrangler's bundle; needs pkg/dist) ---
# One file at a time: each starts its own workerd with local D1, KV and Durable Objects.
js_suite "workerd: Cloudflare host"   tests/workerd \
                                        node --test --test-concurrency=1 tests/workerd/*.test.mjs
# --- Storm: the simulator's scenarios against the real stores (tests/storm/README.md) ---
# One seed for all three stores (printed with a totals line per store); STORM_SEED=<n>
# replays a plan, STORM_SCALE=<k> runs k times as many processes (default: ~30 s).
STORM=(env STORM_SEED="${STORM_SEED:-$(( (RANDOM << 15) | RANDOM ))}")
js_suite "storm: workerd D1 + Durable Object" tests/storm \
                                        "${STORM[@]}" node --test --test-concurrency=1 tests/storm/workerd.test.mjs
js_suite "storm: Deno KV (3 servers)" tests/storm \
                                        "${STORM[@]}" NO_COLOR=1 deno test --allow-all --unstable-kv tests/storm/denokv.test.js

echo
echo "=== summary"
printf '%s\n' "${SUMMARY[@]}"
# The tarball's size, as the consumer test printed it.
grep -ho 'consumer: idem-.*' "$LOGS"/*.log 2>/dev/null | head -1
if [ "$ANY_FAILED" -ne 0 ]; then echo "test: FAILED"; else echo "test: all suites passed"; fi
echo "total: $TOTAL_PASSED passed, $TOTAL_FAILED failed"
exit "$ANY_FAILED"
