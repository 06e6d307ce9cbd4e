#!/usr/bin/env bash
# Live A/A under tare run's default stop rule (issue 43): two identical commands compared with
# no --runs, so the rule may end a session early once a ratio is decided (at 1 − α/500) or known
# within --precision, else at the budget. Counts sessions with a verdict (false positives, at
# most ~α expected) and how each session stopped.
#
#   bench/aa_stop.sh [SESSIONS] [BUDGET] [TARE]     (default 30, 2s, target/release/tare)
set -euo pipefail
SESSIONS=${1:-30}
BUDGET=${2:-2s}
TARE=${3:-target/release/tare}
cd "$(dirname "$0")/.."
[ -x "$TARE" ] || { echo "aa_stop.sh: $TARE not found; build it with: cargo build --release" >&2; exit 2; }
WORK='i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fp=0; decided=0; precise=0; budget=0
for ((s = 0; s < SESSIONS; s++)); do
  "$TARE" run --style none --shell --time-budget "$BUDGET" --seed "$s" -n A -n B \
    --export-json "$tmp/r.json" "$WORK" "$WORK" >/dev/null
  read -r verdict reason < <(python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
print(d["comparisons"][0]["verdict"], d["benchmarks"][0]["stop_reason"])' "$tmp/r.json")
  case "$verdict" in faster|slower) fp=$((fp + 1)) ;; esac
  case "$reason" in
    *"every ratio decided"*) decided=$((decided + 1)) ;;
    *"ci(ratio)"*) precise=$((precise + 1)) ;;
    *) budget=$((budget + 1)) ;;
  esac
done
printf 'A/A sessions: %d; verdicts: %d (%.1f%%); stopped: decided %d, within --precision %d, by the budget %d\n' \
  "$SESSIONS" "$fp" "$(echo "100 * $fp / $SESSIONS" | bc -l)" "$decided" "$precise" "$budget"
