#!/usr/bin/env bash
# Live A/A check: two identical commands compared by tare, many times, in interleaved and in
# sequential order. Any verdict other than "no significant difference" / "equal within noise"
# is a false positive; at alpha = 0.05 at most ~5% are expected when the method is sound.
#
#   bench/aa.sh [SESSIONS] [RUNS]
set -euo pipefail
SESSIONS=${1:-20}
RUNS=${2:-30}
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin tare
TARE=./target/release/tare
WORK='i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for order in interleaved sequential; do
  fp=0
  for ((s = 0; s < SESSIONS; s++)); do
    "$TARE" run --style none --order "$order" --runs "$RUNS" --seed "$s" --shell \
      -n A -n B --export-json "$tmp/r.json" "$WORK" "$WORK" >/dev/null
    verdict=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["comparisons"][0]["verdict"])' "$tmp/r.json")
    case "$verdict" in faster|slower) fp=$((fp + 1)) ;; esac
  done
  printf '%-11s A/A false positives: %d of %d sessions (%.0f%%), %d runs per command\n' \
    "$order" "$fp" "$SESSIONS" "$(echo "100 * $fp / $SESSIONS" | bc -l)" "$RUNS"
done
