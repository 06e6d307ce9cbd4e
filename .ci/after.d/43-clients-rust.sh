#!/usr/bin/env bash
# The Rust client's own tests: `cargo test` in clients/rust (its own workspace root, not part
# of the tare package), and a release build of examples/kernels/blur/rust. About 110 s from a
# fresh clone here (crates already in the local cargo cache), 10 s warm.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v cargo >/dev/null; then
  echo "43-clients-rust: cargo is missing: install Rust (rustup) first" >&2
  exit 1
fi
echo "43-clients-rust: cargo test in clients/rust" >&2
timeout 600 cargo test --locked --manifest-path clients/rust/Cargo.toml
echo "43-clients-rust: examples/kernels/blur/rust/build.sh" >&2
timeout 600 examples/kernels/blur/rust/build.sh
