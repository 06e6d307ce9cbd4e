#!/usr/bin/env bash
# Reproduces the measurements in docs/bias.md: builds tests/c/stack_align.c (speed depends on
# stack alignment) and tests/c/stack_fixed.c (does not) with cc -O2 and sweeps the environment
# size with tare bias, ASLR off and — the intervention — on. Then a randomized A/A comparison
# of stack_align with itself over setups, to show the setup-spread diagnostic.
#
#   bench/bias_stack.sh [REPEAT] [HOPS]
set -euo pipefail
REPEAT=${1:-10}
HOPS=${2:-20000000}
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin tare
TARE=${CARGO_TARGET_DIR:-target}/release/tare
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/stack_align" tests/c/stack_align.c
cc -O2 -o "$tmp/stack_fixed" tests/c/stack_fixed.c
for prog in stack_align stack_fixed; do
  echo "== $prog: env 0..240 step 16, $REPEAT runs per level, CPU time"
  "$TARE" bias --style basic --factor env --levels 0:240:16 --repeat "$REPEAT" --metric cpu \
    --seed 1 --export-json "$tmp/$prog.json" -- "$tmp/$prog" "$HOPS"
done
echo "== stack_align in 16 randomized env/aslr setups, 4 runs each"
"$TARE" run --style basic --randomize env,aslr --env-pad-range 0:256 --setups 16 --runs 64 \
  --seed 1 -- "$tmp/stack_align" "$HOPS" | grep -E "wall time|setup" || true
