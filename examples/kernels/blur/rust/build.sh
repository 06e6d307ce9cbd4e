#!/usr/bin/env bash
# Builds the Rust blur worker (target/release/blur) with cargo; fast when up to date.
# ./build.sh --print-command prints the absolute command that starts the worker.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
command -v cargo >/dev/null || { echo "build.sh: error: cargo not found; install Rust (rustup)" >&2; exit 1; }
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
if [ "${1:-}" = "--print-command" ]; then
  echo "$here/target/release/blur"
fi
