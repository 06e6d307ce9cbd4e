#!/usr/bin/env bash
# A/A rates on every verdict path (issue 43): the same code measured twice and judged by each
# path tare has to a verdict; every "faster"/"slower" (or history alert) is false. Measures, does
# not assert. Sessions are short (--time-budget) and the whole is bounded by DEADLINE.
#
#   bench/aa_paths.sh [N]          (N sessions a path, default 20)
#
# Paths:
#   run      `tare run -n a -n b W W` (W: gzip -1 of a 2 MB file), --time-budget $RUN_BUDGET
#            (default 3s); 2N sessions, the verdict of each session's one comparison;
#   compare  `tare compare` of run session 2j's export against 2j+1's (a against a, b against b);
#   history  the 2N run exports added to a fresh SQLite store as commits c0, c1, ... (side a and
#            b are two series); `tare history check` after each add from the 6th on: new alerts;
#   kernels  `tare kernels G G -n a -n b` with G cespare/xxhash/v2's own Go benchmarks
#            (--filter $K_FILTER, default Sum64/4B), $K_ARGS (default -r 5: the fewest
#            processes a side a verdict is drawn on; a time budget at load 10 gave 3, no verdict);
#   factor   `tare run --background 'sleep 1000' W` and `tare kernels --background 'sleep 1000'
#            FAKE` (tests/kernels/fake_worker.py, spin): [background=off] against [background=on]
#            with a co-runner that sleeps, an A/A of the controlled-factor path (its co-runner
#            meter, its split into units, their comparison);
#   import   pytest-benchmark: orjson.dumps / json.dumps / json.loads of a 20 kB document, one
#            pytest process a file, `tare import`, `tare compare` of two files; go: xxhash's
#            `go test -bench` text (-count 6), imported and compared; gbench: bench/gbench/peer.cpp
#            (empty and blur/256) built against the CI's Google Benchmark, when it builds.
#
# DEADLINE (epoch seconds) ends each path's loop early; the table says how many sessions it got.
# TARE names the binary (default target/debug/tare); OUT keeps the files (default: temporary).
set -uo pipefail
N=${1:-20}
RUN_BUDGET=${RUN_BUDGET:-3s}
K_FILTER=${K_FILTER:-'^Sum64/4B$'}
K_ARGS=${K_ARGS:--r 5}
GO_BENCH=${GO_BENCH:-'^Benchmark(Sum64|DigestString)$/^(4B|4KB|100B)$'}
DEADLINE=${DEADLINE:-$(($(date +%s) + 3600))}
PATHS=${PATHS:-run kernels factor pytest go gbench}
cd "$(dirname "$0")/.."
ROOT=$PWD
TARE=$(realpath "${TARE:-target/debug/tare}")
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; d=$(realpath "$OUT"); else
  d=$(mktemp -d)
  trap 'rm -rf "$d"' EXIT
fi
want() { [[ " $PATHS " == *" $1 "* ]]; }
left() { [ "$(date +%s)" -lt "$DEADLINE" ]; }
load() { cut -d' ' -f1 /proc/loadavg; }
# One table row: path, sessions, comparisons, verdicts, nominal alpha, load at start-end, note.
row() { printf '%-22s %4s %6s %4s  %-6s %-11s %s\n' "$@"; }
# "faster"/"slower" verdicts and all comparisons in JSON files (tare results or compare exports).
count() {
  python3 - "$@" <<'PY'
import json, sys
comps = false = 0
for f in sys.argv[1:]:
    try:
        doc = json.load(open(f))
    except Exception:
        continue
    for c in doc.get("comparisons", []):
        comps += 1
        false += c.get("verdict") in ("faster", "slower")
print(comps, false)
PY
}

seq 1 400000 >"$d/data"
WORK="gzip -1 -c $d/data"
echo "A/A on every verdict path: $N sessions a path (run: 2N), $(nproc) CPUs; tare $TARE"
echo "started $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg); deadline $(date -u -d @"$DEADLINE" +%H:%M:%S) UTC"
row path sessions comps false alpha load note
declare -a ROWS

if want run; then
  l0=$(load) s=0
  mkdir -p "$d/run"
  for ((k = 0; k < 2 * N && $(left && echo 1 || echo 0); k++)); do
    "$TARE" run --style none --time-budget "$RUN_BUDGET" --seed "$k" -n a -n b \
      --export-json "$d/run/$k.json" "$WORK" "$WORK" >"$d/run/$k.out" 2>&1
    s=$((s + 1))
  done
  read -r c f < <(count "$d"/run/*.json)
  ROWS+=("$(row run "$s" "$c" "$f" 0.05 "$l0-$(load)" "tare run -n a -n b W W, --time-budget $RUN_BUDGET; W: $WORK")")
  echo "${ROWS[-1]}"

  l0=$(load) s=0
  for ((j = 0; 2 * j + 1 < k; j++)); do
    "$TARE" compare "$d/run/$((2 * j)).json" "$d/run/$((2 * j + 1)).json" --style none \
      --export-json "$d/run/cmp$j.json" >/dev/null 2>&1
    s=$((s + 1))
  done
  read -r c f < <(count "$d"/run/cmp*.json)
  ROWS+=("$(row compare "$s" "$c" "$f" 0.05 "$l0-$(load)" "tare compare of run session 2j against 2j+1 (a vs a, b vs b)")")
  echo "${ROWS[-1]}"

  l0=$(load) s=0 alerts=0 regress=0 judged=0
  store=$d/history.sqlite
  for ((j = 0; j < k; j++)); do
    "$TARE" history --store "$store" add "$d/run/$j.json" --commit "c$j" >/dev/null 2>&1
    [ "$j" -lt 5 ] && continue
    out=$("$TARE" history --store "$store" check --metric wall_time 2>&1)
    [ $? -eq 1 ] && regress=$((regress + 1))
    judged=$((judged + $(sed -n 's/^judged the newest commit of \([0-9]*\) series.*/\1/p' <<<"$out" | head -1)))
    n=$(grep -c '^new alert #' <<<"$out" || true)
    [ "$n" -gt 0 ] && printf '== check after c%s\n%s\n' "$j" "$out" >>"$d/history.alerts.txt"
    alerts=$((alerts + n))
    s=$((s + 1))
  done
  ROWS+=("$(row history "$s" "$judged" "$alerts" 0.01 "$l0-$(load)" "history check after each add of c5..c$((k - 1)) (series a, b): comps = tips judged, false = new alerts (tip or change point); $regress checks exited 1")")
  echo "${ROWS[-1]}"
fi

XX=$(cat /run/tare-ci/go-xxhash.path 2>/dev/null || true)
if want kernels && [ -f "$XX/bench_test.go" ]; then
  l0=$(load) s=0
  mkdir -p "$d/kernels"
  G="$TARE native-worker go $XX"
  for ((k = 0; k < N && $(left && echo 1 || echo 0); k++)); do
    # shellcheck disable=SC2086
    "$TARE" kernels "$G" "$G" -n a -n b --filter "$K_FILTER" $K_ARGS --seed "$k" \
      --export-json "$d/kernels/$k.json" >"$d/kernels/$k.out" 2>&1
    s=$((s + 1))
  done
  read -r c f < <(count "$d"/kernels/*.json)
  ROWS+=("$(row kernels "$s" "$c" "$f" 0.05 "$l0-$(load)" "xxhash v2's Go benchmark given twice, --filter '$K_FILTER' $K_ARGS (5 processes a side: the fewest a verdict is drawn on)")")
  echo "${ROWS[-1]}"
fi

if want factor; then
  l0=$(load) s=0
  mkdir -p "$d/factor"
  for ((k = 0; k < N && $(left && echo 1 || echo 0); k++)); do
    "$TARE" run --style none --time-budget "$RUN_BUDGET" --seed "$k" --background 'sleep 1000' \
      --export-json "$d/factor/run$k.json" "$WORK" >"$d/factor/run$k.out" 2>&1
    s=$((s + 1))
  done
  read -r c f < <(count "$d"/factor/run*.json)
  ROWS+=("$(row "factor run" "$s" "$c" "$f" 0.05 "$l0-$(load)" "tare run --background 'sleep 1000' W, --time-budget $RUN_BUDGET: off against on")")
  echo "${ROWS[-1]}"
  l0=$(load) s=0
  for ((k = 0; k < N && $(left && echo 1 || echo 0); k++)); do
    "$TARE" kernels "$ROOT/tests/kernels/fake_worker.py" --filter '^spin$' -r 5 --seed "$k" \
      --background 'sleep 1000' --export-json "$d/factor/k$k.json" >"$d/factor/k$k.out" 2>&1
    s=$((s + 1))
  done
  read -r c f < <(count "$d"/factor/k*.json)
  ROWS+=("$(row "factor kernels" "$s" "$c" "$f" 0.05 "$l0-$(load)" "tare kernels FAKE --filter spin -r 5 --background 'sleep 1000': off against on")")
  echo "${ROWS[-1]}"
fi

# An import path: $1 name, $2 a function writing native file $3 (k), $4 note.
import_path() {
  local name=$1 make=$2 note=$3 l0 s=0
  l0=$(load)
  mkdir -p "$d/$name"
  for ((j = 0; j < N && $(left && echo 1 || echo 0); j++)); do
    $make "$d/$name/a$j.src" && $make "$d/$name/b$j.src" || continue
    "$TARE" import "$d/$name/a$j.src" --export-json "$d/$name/a$j.json" >/dev/null 2>&1
    "$TARE" import "$d/$name/b$j.src" --export-json "$d/$name/b$j.json" >/dev/null 2>&1
    "$TARE" compare "$d/$name/a$j.json" "$d/$name/b$j.json" --style none \
      --export-json "$d/$name/cmp$j.json" >"$d/$name/cmp$j.out" 2>&1
    s=$((s + 1))
  done
  read -r c f < <(count "$d/$name"/cmp*.json)
  ROWS+=("$(row "import $name, 1 a side" "$s" "$c" "$f" 0.05 "$l0-$(load)" "$note")")
  echo "${ROWS[-1]}"
  # One file a side is one session a side: tare withholds the verdict. Five a side: the
  # s windows a_j..a_j+4 against b_j..b_j+4 (cyclic; windows share files, so their verdicts
  # are not independent: the rate is unbiased, its spread wider than s independent pairs').
  l0=$(load)
  local w=0
  for ((j = 0; s >= 5 && j < s; j++)); do
    local args=()
    for ((i = 0; i < 5; i++)); do
      args+=(--old "$d/$name/a$(((j + i) % s)).json" --new "$d/$name/b$(((j + i) % s)).json")
    done
    "$TARE" compare "${args[@]}" --style none --export-json "$d/$name/win$j.json" >"$d/$name/win$j.out" 2>&1
    w=$((w + 1))
  done
  read -r c f < <(count "$d/$name"/win*.json)
  ROWS+=("$(row "import $name, 5 a side" "$w" "$c" "$f" 0.05 "$l0-$(load)" "cyclic windows of 5 of the files above a side")")
  echo "${ROWS[-1]}"
}

if want pytest && python3 -c 'import pytest_benchmark, orjson' 2>/dev/null; then
  cat >"$d/test_aa.py" <<'PY'
import json
import orjson
doc = {"items": [{"id": i, "name": f"item {i}", "tags": ["a", "b", "c"], "price": i * 1.5,
                  "ok": i % 2 == 0} for i in range(200)]}
text = json.dumps(doc)
def test_orjson_dumps(benchmark):
    benchmark(orjson.dumps, doc)
def test_json_dumps(benchmark):
    benchmark(json.dumps, doc)
def test_json_loads(benchmark):
    benchmark(json.loads, text)
PY
  PYTEST_ARGS='--benchmark-max-time=0.2 --benchmark-min-rounds=20'
  make_pytest() {
    (cd "$d" && python3 -m pytest -q -p no:cacheprovider test_aa.py $PYTEST_ARGS \
      --benchmark-json="$1" >/dev/null 2>&1)
  }
  v=$(python3 -c 'import pytest_benchmark, orjson; print(pytest_benchmark.__version__, orjson.__version__)')
  import_path pytest make_pytest "pytest-benchmark/orjson $v: orjson.dumps, json.dumps, json.loads; one process a file; $PYTEST_ARGS"
fi

if want go && [ -f "$XX/bench_test.go" ]; then
  (cd "$XX" && go test -c -o "$d/xxhash.test" . >/dev/null 2>&1)
  make_go() { (cd "$XX" && "$d/xxhash.test" -test.run '^$' -test.bench "$GO_BENCH" -test.count 6 -test.benchtime 30ms >"$1" 2>/dev/null); }
  [ -x "$d/xxhash.test" ] && import_path go make_go "xxhash v2's go test -bench text, -count 6 -benchtime 30ms, -bench '$GO_BENCH'"
fi

GB=$(cat /run/tare-ci/gbench-new.path 2>/dev/null || true)
if want gbench && [ -d "$GB/include" ]; then
  lib=$GB/lib
  [ -d "$GB/lib64" ] && lib=$GB/lib64
  c++ -std=c++17 -O2 -I "$GB/include" -I examples/kernels/blur/cpp -o "$d/gbench-peer" bench/gbench/peer.cpp \
    -L "$lib" -Wl,-rpath,"$lib" -lbenchmark -lpthread >/dev/null 2>&1
  make_gbench() { "$d/gbench-peer" --benchmark_filter='^(empty|blur)' --benchmark_min_time=0.02s \
    --benchmark_repetitions=10 --benchmark_format=json >"$1" 2>/dev/null; }
  [ -x "$d/gbench-peer" ] && import_path gbench make_gbench "Google Benchmark ($GB): peer.cpp empty + blur/256, 10 repetitions, one process a file"
fi
echo "ended $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
