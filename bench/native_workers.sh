#!/usr/bin/env bash
# The native workers of issue 26 against the harnesses' own repetitions, on the test suites of
# tests/kernels/{gbench,criterion,pytest_bench,jmh}, two identical builds (A/A): per harness,
# in one run,
# - the harness as its users run it, build a then b, PAIRS times: its own interval per
#   benchmark and its own verdict between the two builds (Google Benchmark: the Mann-Whitney U
#   test over repetitions at alpha 0.05, as its tools/compare.py does; Criterion.rs: its change
#   report against a saved baseline, "regressed"/"improved" being verdicts; pytest-benchmark:
#   means more than 5% apart, what --benchmark-compare-fail=mean:5% fails on; JMH: the two
#   scores' 99.9% intervals apart), wall time;
# - tare kernels over the same two builds through the native worker, --precision 1% within
#   --time-budget BUDGET: the interval each benchmark reached (or not) and any verdict.
# Every verdict on A/A is false. Settings shortened from the harnesses' defaults to keep the
# run to minutes are printed with the results.
#
#   bench/native_workers.sh [PAIRS] [BUDGET]      (defaults 3, 60s; about 10 minutes)
#
# Needs g++ and libbenchmark-dev (Google Benchmark), the Criterion.rs and JMH suites built by
# .ci/services.d/49-criterion.sh and 51-jmh.sh, python3 with pytest-benchmark; a harness whose
# suite is missing is skipped, saying so. TARE names tare (default target/debug/tare, built).
set -euo pipefail
PAIRS=${1:-3}
BUDGET=${2:-60s}
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -z "${TARE:-}" ]; then
  cargo build --quiet --bin tare
  TARE=$ROOT/target/debug/tare
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
echo "== machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

tare_aa() { # $1 harness, $2 target a, $3 target b
  local t0 t1
  t0=$(date +%s.%N)
  "$TARE" kernels "$TARE native-worker $1 $2" "$TARE native-worker $1 $3" -n a -n b \
    --precision 1% --time-budget "$BUDGET" --alpha 0.05 --seed 26 -q \
    --export-json "$W/tare-$1.json" >/dev/null 2>&1 || true
  t1=$(date +%s.%N)
  python3 - "$W/tare-$1.json" "$t0" "$t1" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
took = float(sys.argv[3]) - float(sys.argv[2])
false = [c for c in v["comparisons"] if c["verdict"] in ("faster", "slower")]
print(f"tare: {took:.0f} s, {len(false)} false verdicts / {len(v['comparisons'])}")
for b in v["benchmarks"]:
    n = len(b["extra"]["invocations"])
    print(f"  {b['name']:<28} {n:>3} processes  {b['stop_reason'][:110]}")
for s in v.get("extra", {}).get("suites", []):
    print("  " + s["line"])
PY
}

echo "== Google Benchmark 1.7 (tests/kernels/gbench/suite.cpp, two identical builds)"
g++ -O2 -std=c++17 -o "$W/a" tests/kernels/gbench/suite.cpp -lbenchmark -lpthread
cp "$W/a" "$W/b"
MIN=0.05
t0=$(date +%s.%N)
for p in $(seq "$PAIRS"); do
  for x in a b; do
    "$W/$x" --benchmark_repetitions=10 --benchmark_min_time=$MIN \
      --benchmark_out="$W/g-$x-$p.json" --benchmark_out_format=json >/dev/null 2>&1
  done
done
t1=$(date +%s.%N)
python3 - "$W" "$PAIRS" "$t0" "$t1" "$MIN" <<'PY'
import json, sys, statistics
from scipy.stats import mannwhitneyu, t
w, pairs, took = sys.argv[1], int(sys.argv[2]), float(sys.argv[4]) - float(sys.argv[3])
def reps(f):
    out = {}
    for b in json.load(open(f))["benchmarks"]:
        if b.get("run_type") == "iteration":
            out.setdefault(b["name"], []).append(b["real_time"])
    return out
false, n, halves = 0, 0, {}
for p in range(1, pairs + 1):
    a, b = reps(f"{w}/g-a-{p}.json"), reps(f"{w}/g-b-{p}.json")
    for k in a:
        n += 1
        if mannwhitneyu(a[k], b[k]).pvalue < 0.05:
            false += 1
        m, s = statistics.mean(a[k]), statistics.stdev(a[k])
        halves.setdefault(k, []).append(t.ppf(0.975, len(a[k]) - 1) * s / len(a[k]) ** 0.5 / m)
print(f"own (--benchmark_repetitions=10 --benchmark_min_time={sys.argv[5]}, {pairs} A/A pairs): "
      f"{took:.0f} s, {false} false verdicts / {n} (U test, alpha 0.05, as compare.py)")
for k, h in halves.items():
    print(f"  {k:<28} 95% CI of the mean of 10 repetitions: ±{100*min(h):.1f}% … ±{100*max(h):.1f}%")
PY
tare_aa gbench "$W/a" "$W/b"

echo "== Criterion.rs 0.5 (tests/kernels/criterion, one build run as a and b)"
CACHE=$(cat /run/tare-ci/criterion.path 2>/dev/null || true)
if [ -z "$CACHE" ] || [ ! -x "$CACHE/suite-a" ]; then
  echo "skipped: run .ci/services.d/49-criterion.sh first"
else
cp "$CACHE/suite-a" "$W/ca"
cp "$CACHE/suite-a" "$W/cb"
t0=$(date +%s.%N)
false=0
n=0
for p in $(seq "$PAIRS"); do
  rm -rf "$W/crit"
  CRITERION_HOME="$W/crit" "$W/ca" --bench --noplot --warm-up-time 0.5 --measurement-time 1 \
    --save-baseline a >/dev/null 2>&1
  out=$(CRITERION_HOME="$W/crit" "$W/cb" --bench --noplot --warm-up-time 0.5 --measurement-time 1 \
    --baseline a 2>&1)
  n=$((n + $(grep -c 'change:' <<<"$out" || true)))
  false=$((false + $(grep -cE 'Performance has (regressed|improved)' <<<"$out" || true)))
  [ "$p" = 1 ] && grep -E '^[a-z/0-9]+ +time:' <<<"$out" | sed 's/^/  /'
done
t1=$(date +%s.%N)
echo "own (--warm-up-time 0.5 --measurement-time 1, --save-baseline a then --baseline a, $PAIRS A/A pairs): $(python3 -c "print(round($t1-$t0))") s, $false false verdicts / $n (Criterion's 'Performance has regressed/improved')"
tare_aa criterion "$W/ca" "$W/cb"
fi

echo "== pytest-benchmark (tests/kernels/pytest_bench, two identical copies)"
for x in a b; do mkdir -p "$W/p$x" && cp tests/kernels/pytest_bench/test_suite.py "$W/p$x/"; done
t0=$(date +%s.%N)
for p in $(seq "$PAIRS"); do
  for x in a b; do
    (cd "$W/p$x" && python3 -m pytest test_suite.py -q -p no:cacheprovider --benchmark-only \
      --benchmark-json="$W/p-$x-$p.json" >/dev/null 2>&1)
  done
done
t1=$(date +%s.%N)
python3 - "$W" "$PAIRS" "$t0" "$t1" <<'PY'
import json, sys
w, pairs, took = sys.argv[1], int(sys.argv[2]), float(sys.argv[4]) - float(sys.argv[3])
def stats(f):
    return {b["name"]: b["stats"] for b in json.load(open(f))["benchmarks"]}
false, n, spread = 0, 0, {}
for p in range(1, pairs + 1):
    a, b = stats(f"{w}/p-a-{p}.json"), stats(f"{w}/p-b-{p}.json")
    for k in a:
        n += 1
        if abs(b[k]["mean"] / a[k]["mean"] - 1) > 0.05:
            false += 1
        spread.setdefault(k, []).append((a[k]["stddev"] / a[k]["mean"], a[k]["rounds"]))
print(f"own (defaults: --benchmark-max-time 1.0, {pairs} A/A pairs): {took:.0f} s, {false} false "
      f"verdicts / {n} (means more than 5% apart: --benchmark-compare-fail=mean:5%)")
for k, v in spread.items():
    print(f"  {k:<28} stddev/mean {100*min(x for x, _ in v):.0f}% … {100*max(x for x, _ in v):.0f}% over {min(r for _, r in v)}–{max(r for _, r in v)} rounds")
PY
tare_aa pytest-benchmark "$W/pa/test_suite.py" "$W/pb/test_suite.py"

echo "== JMH 1.37 (tests/kernels/jmh, two copies of one jar)"
JCACHE=$(cat /run/tare-ci/jmh.path 2>/dev/null || true)
if [ -z "$JCACHE" ] || [ ! -f "$JCACHE/a.jar" ]; then
  echo "skipped: run .ci/services.d/51-jmh.sh first"
  exit 0
fi
cp "$JCACHE/a.jar" "$W/ja.jar"
cp "$JCACHE/a.jar" "$W/jb.jar"
JOPTS="-f 2 -wi 3 -i 5 -w 300ms -r 300ms -bm avgt -tu ns"
t0=$(date +%s.%N)
for p in $(seq "$PAIRS"); do
  for x in a b; do
    java -jar "$W/j$x.jar" $JOPTS -rf json -rff "$W/j-$x-$p.json" >/dev/null 2>&1
  done
done
t1=$(date +%s.%N)
python3 - "$W" "$PAIRS" "$t0" "$t1" "$JOPTS" <<'PY'
import json, sys
w, pairs, took = sys.argv[1], int(sys.argv[2]), float(sys.argv[4]) - float(sys.argv[3])
def scores(f):
    out = {}
    for b in json.load(open(f)):
        name = b["benchmark"].rsplit(".", 2)[-2] + "." + b["benchmark"].rsplit(".", 1)[-1]
        name += "".join("/" + v for v in b.get("params", {}).values())
        m = b["primaryMetric"]
        out[name] = (m["score"], m["scoreError"])
    return out
false, n, err = 0, 0, {}
for p in range(1, pairs + 1):
    a, b = scores(f"{w}/j-a-{p}.json"), scores(f"{w}/j-b-{p}.json")
    for k in a:
        n += 1
        (sa, ea), (sb, eb) = a[k], b[k]
        if sa + ea < sb - eb or sb + eb < sa - ea:
            false += 1
        err.setdefault(k, []).append(ea / sa)
print(f"own ({sys.argv[5]}, {pairs} A/A pairs): {took:.0f} s, {false} false verdicts / {n} "
      f"(99.9% intervals apart)")
for k, v in err.items():
    print(f"  {k:<28} 99.9% CI ±{100*min(v):.1f}% … ±{100*max(v):.1f}%")
PY
tare_aa jmh "$W/ja.jar" "$W/jb.jar"
