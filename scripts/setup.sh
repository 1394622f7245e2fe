#!/usr/bin/env bash
# Install what the build, the tests and the demo need. Safe to run again: each
# step checks first and does nothing when its tool is already there.
#
#   Rust target wasm32-unknown-unknown        rustup
#   wasm-bindgen-cli at the version pinned    cargo install (gives wasm-bindgen and
#     in Cargo.toml (wasm-bindgen = "=X")       wasm-bindgen-test-runner)
#   Chromium, ChromeDriver, Firefox ESR       apt-get (Debian packages)
#   geckodriver                               cargo install
#   JavaScript tooling (package-lock.json)    npm ci
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

GECKODRIVER_VERSION=0.37.1
APT_PACKAGES=(chromium chromium-driver firefox-esr)

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else die "need root (or sudo) to run: $*"
  fi
}

# --- Rust ------------------------------------------------------------------
command -v cargo >/dev/null || die "cargo not found: install Rust with rustup first"

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding Rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# The CLI must match the wasm-bindgen crate exactly, so read the pin.
want=$(sed -nE 's/^wasm-bindgen *= *(\{.*version *= *)?"=([0-9][^"]*)".*/\2/p' Cargo.toml | head -n1)
[ -n "$want" ] || die 'Cargo.toml must pin wasm-bindgen exactly (wasm-bindgen = "=X.Y.Z")'
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  say "installing wasm-bindgen-cli $want (found: ${have:-none}); this takes a few minutes"
  # Not --locked: the CLI's own lock file can name crate versions that no longer
  # build with a newer rustc; cargo resolves compatible ones instead.
  cargo install --force wasm-bindgen-cli --version "$want"
fi

# --- Browsers and their WebDriver servers ----------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} with apt-get"
  # Fresh package lists first: a machine's cached lists can name versions the mirror no longer has.
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

if ! command -v geckodriver >/dev/null; then
  say "installing geckodriver $GECKODRIVER_VERSION; this takes a few minutes"
  cargo install geckodriver --version "$GECKODRIVER_VERSION"
fi

# --- JavaScript tooling ----------------------------------------------------
command -v node >/dev/null || die "node not found: install Node.js 20 or newer"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || die "Node.js 20 or newer is needed (found $(node --version))"

# npm ci again only when package-lock.json changed since the last install.
stamp=node_modules/.idem-package-lock.sha256
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ ! -d node_modules ] || [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
  say "installing JavaScript tooling (npm ci)"
  npm ci --no-audit --no-fund
  echo "$lock_sum" > "$stamp"
fi

say "ok"
