#!/usr/bin/env bash
# How long `tare import` takes on a large file made by a real tool, against that tool's own
# reader of the same file: pytest-benchmark with ~1–2 million rounds (one benchmark, every
# round kept in stats.data), read by `tare import` (parse, map, summarize, write tare's pretty
# JSON) and by `pytest-benchmark compare` (parse, print its table). Prints both times, the
# ratio, tare's peak memory and the sizes. Run by hand (not in CI):
#   scripts/import_scale.sh [MAX_TIME_SECONDS]     default 3 (pytest-benchmark's --benchmark-max-time)
# Needs a release build (cargo build --release) and installs pytest-benchmark if missing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARE=${TARE:-$ROOT/target/release/tare}
MAX_TIME=${1:-3}
W=$(mktemp -d /var/tmp/tare-import-scale.XXXXXX)
trap 'rm -rf "$W"' EXIT
python3 -c 'import pytest_benchmark' 2>/dev/null || pip3 install pytest-benchmark >&2
cat >"$W/test_big.py" <<'EOF'
def test_sum_range(benchmark):
    benchmark(sum, range(100))
EOF
(cd "$W" && python3 -m pytest -q -p no:cacheprovider --benchmark-max-time="$MAX_TIME" \
    --benchmark-min-time=0.000001 --benchmark-calibration-precision=1 \
    --benchmark-json="$W/big.json" test_big.py >/dev/null)
rounds=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['benchmarks'][0]['stats']['rounds'])" "$W/big.json")
secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc -l; }
t_tare=$(secs /usr/bin/time -f %M -o "$W/rss" "$TARE" import "$W/big.json" -o "$W/out.json")
t_read=$(secs "$TARE" import "$W/big.json")
t_peer=$(secs pytest-benchmark compare "$W/big.json")
printf 'file: %s rounds, %s MB of pytest-benchmark JSON -> %s MB of tare results\n' \
    "$rounds" "$(( $(stat -c %s "$W/big.json") / 1000000 ))" "$(( $(stat -c %s "$W/out.json") / 1000000 ))"
printf 'tare import:              %6.2f s (peak RSS %s MB)\n' "$t_tare" "$(( $(cat "$W/rss") / 1024 ))"
printf 'tare import without -o:   %6.2f s (read, map, summarize, print the table)\n' "$t_read"
printf 'pytest-benchmark compare: %6.2f s\n' "$t_peer"
printf 'ratio tare/peer:          %6.2f (without -o: %.2f)\n' "$(echo "$t_tare / $t_peer" | bc -l)" "$(echo "$t_read / $t_peer" | bc -l)"
