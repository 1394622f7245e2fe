#!/usr/bin/env bash
# The one command that runs the demo: install what is missing, build the wasm
# package, then serve the demo on localhost and print its address.
#
#   PORT=9000 scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"
export WRANGLER_SEND_METRICS=false
PORT=${PORT:-8787}

scripts/setup.sh
SIZE_BUDGET=warn scripts/build-wasm.sh # the size budget is enforced by scripts/test.sh

WORKER=examples/cloudflare/wrangler.toml
if [ -f "$WORKER" ]; then
  # The Cloudflare Worker on local workerd (no Cloudflare account needed):
  # first its static assets (www/ + pkg/) and the local D1 schema.
  node examples/cloudflare/build-assets.mjs
  CI=1 wrangler d1 migrations apply idem --local --config "$WORKER"
  echo "idem demo: the Cloudflare Worker on local workerd at http://127.0.0.1:$PORT/"
  exec wrangler dev --config "$WORKER" --local --ip 127.0.0.1 --port "$PORT"
fi

# Until the Worker exists: the static page (www/) and the wasm package (pkg/).
exec node scripts/serve.mjs --port "$PORT"
