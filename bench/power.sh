#!/usr/bin/env bash
# Power and false verdicts with default settings (issue 22): a real change of work — a C loop
# of N iterations against N (A/A), 1.03 N and 1.10 N — measured R times by
#
#   tare-run       `tare run A B` (one session, interleaved; its own verdict)
#   tare-compare   `tare run A` then `tare run B`, each a session, then `tare compare a b`
#   hyperfine      `hyperfine A B` then Welch's t-test on its exported times (as hyperfine's
#                  scripts/welch_ttest.py does; scipy), p < 0.05
#   pyperf         `pyperf command` for A and for B, then `pyperf compare_to` ("Significant")
#
# and prints, per tool and change, how often a verdict in the right direction came out (for
# the A/A row: any verdict, a false one), how many processes (runs) each side took on
# average, and the seconds a trial took. Everything runs with each tool's defaults.
#
#   bench/power.sh [R] [N]      R trials per change (default 10); N the loop count (default
#                               60000000, ~20 ms on a 3 GHz core)
# TARE names the binary (default target/debug/tare, built); TOOLS picks tools (tare_run
# tare_compare hyperfine_t pyperf_cmp), CHANGES the changes in percent (0 3 10). Needs hyperfine, python3 with pyperf and scipy; a
# tool that is missing is skipped and said.
set -euo pipefail
R=${1:-10}
N=${2:-60000000}
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -z "${TARE:-}" ]; then
  cargo build --quiet --bin tare
  TARE=$ROOT/target/debug/tare
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/work.c" <<'EOF'
#include <stdlib.h>
int main(int argc, char **argv) {
  unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 0;
  volatile unsigned long x = 0;
  for (unsigned long i = 0; i < n; i++) x += i;
  return 0;
}
EOF
cc -O1 -o "$tmp/work" "$tmp/work.c"
W=$tmp/work
have_hf=$(command -v hyperfine >/dev/null && echo 1 || echo 0)
have_pp=$(python3 -c 'import pyperf' 2>/dev/null && echo 1 || echo 0)
have_sp=$(python3 -c 'import scipy' 2>/dev/null && echo 1 || echo 0)

# A verdict as one word: slower, faster or none.
tare_run() { # new-n -> verdict runs
  "$TARE" run --style none --export-json "$tmp/r.json" "$W $N" "$W $1" >/dev/null 2>&1 || true
  python3 - "$tmp/r.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
c = d["comparisons"][0]["verdict"]
runs = sum(len(b["runs"]) for b in d["benchmarks"]) / 2
print({"slower": "slower", "faster": "faster"}.get(c, "none"), runs)
EOF
}
tare_compare() {
  # One name on both sides: compare matches benchmarks by name (the commands differ).
  "$TARE" run --style none -n work --export-json "$tmp/a.json" "$W $N" >/dev/null 2>&1 || true
  "$TARE" run --style none -n work --export-json "$tmp/b.json" "$W $1" >/dev/null 2>&1 || true
  local out
  out=$("$TARE" compare "$tmp/a.json" "$tmp/b.json" 2>&1 || true)
  local runs
  runs=$(python3 -c 'import json,sys; print(sum(len(json.load(open(f))["benchmarks"][0]["runs"]) for f in sys.argv[1:])/2)' "$tmp/a.json" "$tmp/b.json")
  if grep -qE '  (!! slower|slower): ' <<<"$out"; then echo slower "$runs"
  elif grep -qE '  faster: ' <<<"$out"; then echo faster "$runs"
  else echo none "$runs"; fi
}
hyperfine_t() {
  hyperfine -N --style none --export-json "$tmp/h.json" "$W $N" "$W $1" >/dev/null 2>&1 || true
  python3 - "$tmp/h.json" <<'EOF'
import json, sys
from scipy import stats
d = json.load(open(sys.argv[1]))
a, b = (r["times"] for r in d["results"])
t, p = stats.ttest_ind(a, b, equal_var=False)
v = "none" if p >= 0.05 else ("slower" if sum(b) / len(b) > sum(a) / len(a) else "faster")
print(v, (len(a) + len(b)) / 2)
EOF
}
pyperf_cmp() {
  rm -f "$tmp/pa.json" "$tmp/pb.json"
  python3 -m pyperf command -q -o "$tmp/pa.json" -- "$W" "$N" >/dev/null 2>&1 || true
  python3 -m pyperf command -q -o "$tmp/pb.json" -- "$W" "$1" >/dev/null 2>&1 || true
  local out
  out=$(python3 -m pyperf compare_to "$tmp/pa.json" "$tmp/pb.json" 2>&1 || true)
  # 20 worker processes a side by default.
  if grep -qi "not significant" <<<"$out"; then echo none 20
  elif grep -q "slower" <<<"$out"; then echo slower 20
  elif grep -q "faster" <<<"$out"; then echo faster 20
  else echo none 20; fi
}

printf 'work: a C loop of %s iterations (%s); %s trials per change; load average at start: %s\n' \
  "$N" "$(/usr/bin/time -f '%e s' "$W" "$N" 2>&1)" "$R" "$(cut -d' ' -f1 /proc/loadavg)"
printf '%-13s %-7s %9s %13s %10s\n' tool change verdicts "processes/side" "s/trial"
for tool in ${TOOLS:-tare_run tare_compare hyperfine_t pyperf_cmp}; do
  case $tool in
    hyperfine_t) [ "$have_hf" = 1 ] && [ "$have_sp" = 1 ] || { echo "hyperfine: skipped (hyperfine or scipy missing)"; continue; } ;;
    pyperf_cmp) [ "$have_pp" = 1 ] || { echo "pyperf: skipped (pyperf missing)"; continue; } ;;
  esac
  for pct in ${CHANGES:-0 3 10}; do
    new=$((N + N * pct / 100))
    hits=0 runs=0
    start=$(date +%s.%N)
    for ((t = 0; t < R; t++)); do
      read -r v n < <($tool "$new")
      if { [ "$pct" = 0 ] && [ "$v" != none ]; } || { [ "$pct" != 0 ] && [ "$v" = slower ]; }; then
        hits=$((hits + 1))
      fi
      runs=$(echo "$runs + $n" | bc -l)
    done
    secs=$(echo "($(date +%s.%N) - $start) / $R" | bc -l)
    label=${tool//_/-}
    [ "$pct" = 0 ] && what="false" || what="found"
    printf '%-13s %-7s %3d/%-2d %-5s %10.0f %10.1f\n' "${label%-t}" "+$pct%" "$hits" "$R" "$what" \
      "$(echo "$runs / $R" | bc -l)" "$secs"
  done
done
