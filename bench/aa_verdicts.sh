#!/usr/bin/env bash
# False verdicts of `tare compare` on A/A pairs (issue 22): two measurements of the SAME code,
# compared; every "faster"/"slower" is a false verdict. Sources: `tare run` exports, `tare
# kernels` exports (the blur examples in C, Python and JS), and results of the real
# pytest-benchmark, Google Benchmark (bench/gbench/peer.cpp: empty and blur/256) and JMH (a
# sort of 300 doubles) imported with `tare import`. A tool that is missing here is replaced by
# real timings of a Python workload written in its format by bench/aa_formats.py; the output
# says which was used and with which settings.
#
#   bench/aa_verdicts.sh [PAIRS] [PROCS]
#
# PAIRS A/A pairs per source (default 20); PROCS files a side (sessions of `tare run`;
# processes of the formats that record one process per file) and JMH forks per file (default
# 5). KPAIRS overrides PAIRS for kernels (slow: ~10 s a session), KFILES its sessions a side
# (default 1), JFILES JMH's files a side (default 1). KEEP=DIR keeps every pair's files there,
# and the compare output of each pair with a false verdict in DIR/false.txt. TARE names the binary (default
# target/debug/tare, built); TARE_BEFORE an older tare to run the same one-file-a-side pairs
# with ("before"). SOURCES limits the sources run (default "run kernels pytest gbench jmh").
# Tools built here (the Google Benchmark binary, the JMH jar) are cached under
# ${XDG_CACHE_HOME:-~/.cache}/tare-bench/aa. About 25 minutes with 20 pairs on a loaded
# 2-core VM. Prints, per source, false verdicts / comparisons and whether that is <= alpha (0.05).
set -euo pipefail
PAIRS=${1:-20}
PROCS=${2:-5}
KPAIRS=${KPAIRS:-$PAIRS}
ALPHA=0.05
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -z "${TARE:-}" ]; then
  cargo build --quiet --bin tare
  TARE=$ROOT/target/debug/tare
fi
if [ -n "${KEEP:-}" ]; then
  tmp=$KEEP
  mkdir -p "$tmp"
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
fi

# Benchmarks with a verdict in one compare's output (the verdict column's marker).
verdicts() { grep -cE '  (!! slower|slower|faster): ' || true; }
# Keeps the compare output of a pair with a false verdict (KEEP): $1 label, $2 output.
keep_false() {
  [ -n "${KEEP:-}" ] && [ "$(verdicts <<<"$2")" -gt 0 ] && printf '== %s\n%s\n' "$1" "$2" >>"$KEEP/false.txt"
  return 0
}
# Benchmark lines (the verdict column) in one compare's output.
lines() { grep -cE '  (!! slower|slower|faster|=|~|\?): ' || true; }

report() { # name false total [note]
  local ok=no
  if [ "$3" -gt 0 ] && [ "$(echo "$2 <= $ALPHA * $3" | bc -l)" = 1 ]; then ok=yes; fi
  printf '%-34s %4d false of %4d comparisons  (%5.1f%%)  <= alpha: %-3s %s\n' \
    "$1" "$2" "$3" "$(echo "100 * $2 / ($3 + ($3 == 0))" | bc -l)" "$ok" "${4:-}"
}

# One A/A source: $1 name, $2 a function making side file "$DIR/$K.json" (tare results), $3
# its note, $4 pairs, $5 files a side — made interleaved in time (a0 b0 a1 b1 ...), so that
# load that changes between sessions falls on both sides. Compares one file a side (before
# and after) and all files a side.
run_source() {
  local name=$1 make=$2 note=$3 pairs=$4 files=$5
  local f1=0 n1=0 fb=0 nb=0 fm=0 nm=0 inconc=0
  for ((p = 0; p < pairs; p++)); do
    local d=$tmp/$name/$p
    mkdir -p "$d/a" "$d/b"
    for ((k = 0; k < files; k++)); do
      $make "$d/a" "$k"
      $make "$d/b" "$k"
    done
    out=$("$TARE" compare "$d/a/0.json" "$d/b/0.json" 2>&1 || true)
    keep_false "$name pair $p, 1 file a side: $d" "$out"
    f1=$((f1 + $(verdicts <<<"$out"))); n1=$((n1 + $(lines <<<"$out")))
    inconc=$((inconc + $(grep -c 'inconclusive' <<<"$out" || true)))
    if [ -n "${TARE_BEFORE:-}" ]; then
      out=$("$TARE_BEFORE" compare "$d/a/0.json" "$d/b/0.json" 2>&1 || true)
      keep_false "$name pair $p, before: $d" "$out"
      fb=$((fb + $(verdicts <<<"$out"))); nb=$((nb + $(lines <<<"$out")))
    fi
    if [ "$(ls "$d/a" | wc -l)" -gt 1 ]; then
      out=$("$TARE" compare "$d/a" "$d/b" 2>&1 || true)
      keep_false "$name pair $p, $files files a side: $d" "$out"
      fm=$((fm + $(verdicts <<<"$out"))); nm=$((nm + $(lines <<<"$out")))
    fi
  done
  [ -n "${TARE_BEFORE:-}" ] && report "$name, before (1 file a side)" "$fb" "$nb" "$note"
  report "$name, 1 file a side" "$f1" "$n1" "$inconc inconclusive; $note"
  [ "$nm" -gt 0 ] && report "$name, $files files a side" "$fm" "$nm" "$note"
  return 0
}

WORK='gzip -1 -c /etc/services'
make_run() { "$TARE" run --style none --runs 6 -n gz --export-json "$1/$2.json" "$WORK" >/dev/null 2>&1; }

C=$(examples/kernels/blur/c/build.sh --print-command 2>/dev/null || true)
PY=$(examples/kernels/blur/python/build.sh --print-command 2>/dev/null || true)
JS=$(examples/kernels/blur/js/build.sh --print-command 2>/dev/null || true)
KPROGS=()
for p in "$C" "$PY" "$JS"; do [ -n "$p" ] && KPROGS+=("$p"); done
make_kernels() {
  "$TARE" kernels "${KPROGS[@]}" --filter '^blur$' -L size 32 -r 6 --max-samples 10 \
    --sample-time 2ms --export-json "$1/$2.json" -q >/dev/null 2>&1
}

SOURCES=${SOURCES:-run kernels pytest gbench jmh}
want() { [[ " $SOURCES " == *" $1 "* ]]; }
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/tare-bench/aa
mkdir -p "$CACHE"

import_one() { # format dir k [forks]: generate file k with aa_formats.py and import it
  python3 bench/aa_formats.py "$1" "$2/$3.src.json" ${4:-} >/dev/null
  "$TARE" import "$2/$3.src.json" -o "$2/$3.json" >/dev/null 2>&1
  rm -f "$2/$3.src.json"
}

# pytest-benchmark: a tiny test, one pytest process per file.
PYTEST_ARGS='--benchmark-max-time=0.1 --benchmark-min-rounds=20 --benchmark-warmup=on'
PYTEST_REAL=no
python3 -c 'import pytest_benchmark' 2>/dev/null && PYTEST_REAL=yes
make_pytest() {
  local k=$2
  if [ "$PYTEST_REAL" = yes ]; then
    cat >"$1/test_aa.py" <<'PY'
import random
data = [random.random() for _ in range(300)]
def test_sort(benchmark):
    benchmark(sorted, data)
PY
    # shellcheck disable=SC2086
    (cd "$1" && python3 -m pytest -q -p no:cacheprovider test_aa.py $PYTEST_ARGS \
      --benchmark-json="$k.src.json" >/dev/null 2>&1)
    "$TARE" import "$1/$k.src.json" -o "$1/$k.json" >/dev/null 2>&1
    rm -f "$1/$k.src.json" "$1/test_aa.py"
  else
    import_one pytest-benchmark "$1" "$k"
  fi
}

# Google Benchmark: bench/gbench/peer.cpp (the empty kernel and blur/256), one process per file.
GBENCH_ARGS='--benchmark_filter=^(empty|blur) --benchmark_min_time=0.02 --benchmark_repetitions=10'
GBENCH=
build_gbench() {
  local bin=$CACHE/gbench-peer
  if [ ! -x "$bin" ] || [ bench/gbench/peer.cpp -nt "$bin" ]; then
    c++ -std=c++17 -O2 -I examples/kernels/blur/cpp -o "$bin" bench/gbench/peer.cpp \
      -lbenchmark -lpthread 2>/dev/null || return 1
  fi
  GBENCH=$bin
}
make_gbench() {
  if [ -n "$GBENCH" ]; then
    # shellcheck disable=SC2086
    "$GBENCH" $GBENCH_ARGS --benchmark_format=json >"$1/$2.src.json" 2>/dev/null
    "$TARE" import "$1/$2.src.json" -o "$1/$2.json" >/dev/null 2>&1
    rm -f "$1/$2.src.json"
  else
    import_one gbench "$1" "$2"
  fi
}

# JMH: a sort of 300 doubles, built once with Maven (bench/jmh-empty's pom), PROCS forks a file.
JMH_ARGS="-f $PROCS -wi 4 -w 200ms -i 5 -r 100ms"
JMH_JAR=
build_jmh() {
  command -v java >/dev/null && command -v mvn >/dev/null || return 1
  local d=$CACHE/jmh
  if [ ! -e "$d/target/benchmarks.jar" ] || [ bench/jmh-empty/pom.xml -nt "$d/target/benchmarks.jar" ] ||
    [ "$0" -nt "$d/target/benchmarks.jar" ]; then
    rm -rf "$d"
    mkdir -p "$d/src/main/java/aa"
    sed 's/<artifactId>jmh-empty</<artifactId>jmh-aa</' bench/jmh-empty/pom.xml >"$d/pom.xml"
    cat >"$d/src/main/java/aa/Sort.java" <<'JAVA'
package aa;

import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.*;

/** The A/A workload of bench/aa_verdicts.sh: a copy and sort of 300 doubles. */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class Sort {
    double[] data;

    @Setup
    public void setup() {
        Random r = new Random(1);
        data = new double[300];
        for (int i = 0; i < data.length; i++) data[i] = r.nextDouble();
    }

    @Benchmark
    public double[] sort() {
        double[] c = data.clone();
        Arrays.sort(c);
        return c;
    }
}
JAVA
    (cd "$d" && { mvn -o -q package -DskipTests >/dev/null 2>&1 || mvn -q package -DskipTests >/dev/null 2>&1; }) ||
      return 1
  fi
  JMH_JAR=$d/target/benchmarks.jar
}
make_jmh() {
  if [ -n "$JMH_JAR" ]; then
    # shellcheck disable=SC2086
    java -jar "$JMH_JAR" 'aa.Sort.sort' $JMH_ARGS -rf json -rff "$1/$2.src.json" >/dev/null 2>&1
    "$TARE" import "$1/$2.src.json" -o "$1/$2.json" >/dev/null 2>&1
    rm -f "$1/$2.src.json"
  else
    import_one jmh "$1" "$2" "$PROCS"
  fi
}

want gbench && { build_gbench || true; }
want jmh && { build_jmh || true; }

echo "A/A pairs: $PAIRS per source ($KPAIRS for kernels), $PROCS files a side where files are"
echo "processes or sessions; alpha $ALPHA; tare: $TARE${TARE_BEFORE:+; before: $TARE_BEFORE}"
echo "pairs made interleaved in time (a0 b0 a1 b1 ...); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$SECONDS
if want run; then
  run_source run-export make_run "each run a process; sessions of 6 runs of '$WORK'" "$PAIRS" "$PROCS"
fi
if want kernels; then
  if [ ${#KPROGS[@]} -gt 0 ]; then
    run_source kernels make_kernels "blur in ${#KPROGS[@]} programs, 6 invocations a session" "$KPAIRS" "${KFILES:-1}"
  else
    echo "kernels: skipped (no blur example builds here)"
  fi
fi
if want pytest; then
  if [ "$PYTEST_REAL" = yes ]; then
    v=$(python3 -c 'import pytest_benchmark; print(pytest_benchmark.__version__)')
    run_source pytest-benchmark make_pytest "real pytest-benchmark $v: sorted(300 floats), $PYTEST_ARGS" "$PAIRS" "$PROCS"
  else
    run_source pytest-benchmark make_pytest "pytest-benchmark NOT installed: its format, timed by aa_formats.py" "$PAIRS" "$PROCS"
  fi
fi
if want gbench; then
  if [ -n "$GBENCH" ]; then
    run_source gbench make_gbench "real Google Benchmark: peer.cpp empty + blur/256, $GBENCH_ARGS" "$PAIRS" "$PROCS"
  else
    run_source gbench make_gbench "Google Benchmark NOT installed (libbenchmark-dev): its format, timed by aa_formats.py" "$PAIRS" "$PROCS"
  fi
fi
if want jmh; then
  if [ -n "$JMH_JAR" ]; then
    run_source jmh make_jmh "real JMH 1.37: sort of 300 doubles, $JMH_ARGS" "$PAIRS" "${JFILES:-1}"
  else
    run_source jmh make_jmh "JMH NOT run (no java/mvn or build failed): its format, $PROCS forks a file, timed by aa_formats.py" "$PAIRS" "${JFILES:-1}"
  fi
fi
echo "took $((SECONDS - start)) s; load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
