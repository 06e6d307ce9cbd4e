#!/bin/sh
# What adaptive stopping costs: two /bin/true commands with a precision they can never reach,
# capped at N rounds (--max-runs N), against the same N rounds fixed with --runs N. Prints both
# times and their ratio; the stop rule, progress line and ETA should cost (almost) nothing, so
# the ratio should be at most 1.3.
#
#   bench/stop_cost.sh [N] [TARE]      (default N = 10000, TARE = target/release/tare)
set -eu
N=${1:-10000}
TARE=${2:-target/release/tare}
[ -x "$TARE" ] || { echo "stop_cost.sh: $TARE not found; build it with: cargo build --release" >&2; exit 2; }
now() { date +%s.%N; }
t0=$(now)
"$TARE" run --style none --runs "$N" --seed 1 /bin/true true
t1=$(now)
"$TARE" run --style none --precision 0.0001% --max-runs "$N" --time-budget 1h --seed 1 /bin/true true
t2=$(now)
awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$N" 'BEGIN {
  fixed = b - a; adaptive = c - b;
  printf "rounds: %d (2 commands)\n--runs %d:                 %.2f s\nadaptive, --max-runs %d:   %.2f s\nratio: %.2fx (target <= 1.3x)\n", n, n, fixed, n, adaptive, adaptive / fixed
}'
