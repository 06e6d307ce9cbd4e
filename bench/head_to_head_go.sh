#!/usr/bin/env bash
# `tare kernels --baseline` on a real suite nobody here wrote (issue 46): github.com/valyala/fastjson
# v1.6.10, whose BenchmarkParse holds fastjson and encoding/json side by side as sub-benchmarks,
# driven through `tare native-worker go`. Measures, does not assert:
#
#   bench/head_to_head_go.sh [K] [SIZE]
#
# SIZE (default medium) picks Parse/SIZE/…; the baseline is Parse/SIZE/fastjson, against
# fastjson-get (the same parse and four lookups) and stdjson-map (encoding/json into a map).
# K sessions (default 3) each way, with default settings:
#
#  (a) inside one process: `tare kernels --baseline Parse/SIZE/fastjson WORKER --filter …`;
#  (b) separately (today's path): `tare kernels WORKER --filter …`, which measures each kernel
#      on its own and compares none; the script takes the ratio of the two kernels' per-process
#      values (geometric means) with Welch's t interval over processes at 1 − 0.05/m (m
#      comparisons, as --baseline's), as a user comparing the two lines would have to.
#
# TARE names the binary (default target/debug/tare, built); OUT keeps the sessions' JSON
# (default: a temporary directory, removed); OTHERS the kernels against the baseline (default
# "fastjson-get|stdjson-map"); ARGS more options for both ways (e.g. "--time-budget 2m").
# Needs `go` and the module (fetched through the Go proxy into the module cache).
set -euo pipefail
K=${1:-3}
SIZE=${2:-medium}
here="$(cd "$(dirname "$0")/.." && pwd)"
TARE=${TARE:-$here/target/debug/tare}
if [ -z "${OUT:-}" ]; then OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT; fi
mkdir -p "$OUT"
dir=$(cd /tmp && go mod download -json github.com/valyala/fastjson@v1.6.10 |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
w="$TARE native-worker go $dir"
base="Parse/$SIZE/fastjson"
OTHERS=${OTHERS:-fastjson-get|stdjson-map}
ARGS=${ARGS:-}
filter="^Parse/$SIZE/(fastjson|$OTHERS)\$"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 "$K"); do
  s=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$TARE" kernels --baseline "$base" "$w" --filter "$filter" --style none $ARGS \
    --export-json "$OUT/one-$i.json" >/dev/null 2>&1 || echo "session $i failed"
  e=$(date +%s.%N)
  python3 - "$OUT/one-$i.json" "$(echo "$e - $s" | bc)" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["extra"]["head_to_head"]
for c in v["comparisons"]:
    d = c["verdict"] or {}
    half = (d.get("high", 0) / d.get("low", 1)) ** 0.5 - 1 if d else float("nan")
    print("one-process %s %.4f [%.4f, %.4f] ±%.2f%% %d processes %s %.1fs" % (c["kernel"],
          d.get("ratio", 0), d.get("low", 0), d.get("high", 0), 100 * half, len(c["processes"]),
          (d.get("verdict") or "none").replace(" ", "_"), float(sys.argv[2])))
PY
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
done
for i in $(seq 1 "$K"); do
  s=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$TARE" kernels "$w" --filter "$filter" --style none $ARGS \
    --export-json "$OUT/sep-$i.json" >/dev/null 2>&1 || echo "session $i failed"
  e=$(date +%s.%N)
  python3 - "$OUT/sep-$i.json" "$base" "$(echo "$e - $s" | bc)" <<'PY'
import json, math, sys
from statistics import mean, variance
v = json.load(open(sys.argv[1]))
def logs(b):
    return [math.log(i["median"]) for i in b["extra"]["invocations"]
            if i.get("median") and not i.get("error")]
by = {b["extra"]["kernel"]["kernel"]: logs(b) for b in v["benchmarks"]}
ref = by.pop(sys.argv[2])
# Student's t quantile at 1 - 0.05/m/2 (two-sided 1 - 0.05/m), by bisection on the CDF.
def t_cdf(x, df):
    # Simpson's rule on the density from 0 to x.
    n = 4000
    h = x / n
    f = lambda t: (1 + t * t / df) ** (-(df + 1) / 2)
    s = f(0) + f(x) + sum((4 if k % 2 else 2) * f(k * h) for k in range(1, n))
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
    return 0.5 + c * s * h / 3
def t_q(p, df):
    lo, hi = 0.0, 100.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return lo
for k, xs in by.items():
    if len(xs) < 2 or len(ref) < 2:
        print("separate %s: too few processes" % k); continue
    a, b = variance(ref) / len(ref), variance(xs) / len(xs)
    df = (a + b) ** 2 / (a * a / (len(ref) - 1) + b * b / (len(xs) - 1))
    d = mean(xs) - mean(ref)
    half = t_q(1 - 0.05 / len(by) / 2, df) * math.sqrt(a + b)
    lo, hi = math.exp(d - half), math.exp(d + half)
    verdict = "slower" if lo > 1 else "faster" if hi < 1 else "no_significant_difference"
    print("separate %s %.4f [%.4f, %.4f] ±%.2f%% %d+%d processes %s %.1fs" % (k, math.exp(d), lo, hi,
          100 * (math.exp(half) - 1), len(ref), len(xs), verdict, float(sys.argv[3])))
PY
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
done
