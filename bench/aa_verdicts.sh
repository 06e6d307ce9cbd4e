#!/usr/bin/env bash
# False verdicts of `tare compare` on A/A pairs (issue 22): two measurements of the SAME code,
# compared; every "faster"/"slower" is a false verdict. Sources: `tare run` exports, `tare
# kernels` exports (the blur examples in C, Python and JS), and pytest-benchmark, Google
# Benchmark and JMH results imported with `tare import` (the real tools where installed; else
# real timings written in their format by bench/aa_formats.py — said in the output).
#
#   bench/aa_verdicts.sh [PAIRS] [PROCS]
#
# PAIRS A/A pairs per source (default 20); PROCS files a side (sessions of `tare run`;
# processes of the formats that record one process per file) and JMH forks per file (default
# 5). KPAIRS overrides PAIRS for kernels (slow: ~10 s a session), KFILES its sessions a side
# (default 1). TARE names the binary (default target/debug/tare, built);
# TARE_BEFORE an older tare to run the same one-file-a-side pairs with ("before").
# Prints, per source, false verdicts / comparisons and whether that is <= alpha (0.05).
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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Benchmarks with a verdict in one compare's output (the verdict column's marker).
verdicts() { grep -cE '  (!! slower|slower|faster): ' || true; }
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
    f1=$((f1 + $(verdicts <<<"$out"))); n1=$((n1 + $(lines <<<"$out")))
    inconc=$((inconc + $(grep -c 'inconclusive' <<<"$out" || true)))
    if [ -n "${TARE_BEFORE:-}" ]; then
      out=$("$TARE_BEFORE" compare "$d/a/0.json" "$d/b/0.json" 2>&1 || true)
      fb=$((fb + $(verdicts <<<"$out"))); nb=$((nb + $(lines <<<"$out")))
    fi
    if [ "$(ls "$d/a" | wc -l)" -gt 1 ]; then
      out=$("$TARE" compare "$d/a" "$d/b" 2>&1 || true)
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
  "$TARE" kernels "${KPROGS[@]}" --filter '^blur$' -L size 32 -i 6 --max-samples 10 \
    --sample-time 2ms --export-json "$1/$2.json" -q >/dev/null 2>&1
}

PYTEST_REAL=no
python3 -c 'import pytest_benchmark' 2>/dev/null && PYTEST_REAL=yes
import_one() { # format dir k: generate file k with aa_formats.py and import it
  python3 bench/aa_formats.py "$1" "$2/$3.src.json" ${4:-} >/dev/null
  "$TARE" import "$2/$3.src.json" -o "$2/$3.json" >/dev/null 2>&1
  rm -f "$2/$3.src.json"
}
make_pytest() {
  local k=$2
  if [ "$PYTEST_REAL" = yes ]; then
    cat >"$1/test_aa.py" <<'PY'
import random
data = [random.random() for _ in range(300)]
def test_sort(benchmark):
    benchmark(sorted, data)
PY
    (cd "$1" && python3 -m pytest -q test_aa.py --benchmark-json="$k.src.json" >/dev/null 2>&1)
    "$TARE" import "$1/$k.src.json" -o "$1/$k.json" >/dev/null 2>&1
    rm -f "$1/$k.src.json" "$1/test_aa.py"
  else
    import_one pytest-benchmark "$1" "$k"
  fi
}
make_gbench() { import_one gbench "$1" "$2"; }
make_jmh() { import_one jmh "$1" "$2" "$PROCS"; }

echo "A/A pairs: $PAIRS per source ($KPAIRS for kernels), $PROCS processes a side where files"
echo "are processes; alpha $ALPHA; tare: $TARE${TARE_BEFORE:+; before: $TARE_BEFORE}"
run_source run-export make_run "each run a process; sessions of 6 runs of '$WORK'" "$PAIRS" "$PROCS"
if [ ${#KPROGS[@]} -gt 0 ]; then
  run_source kernels make_kernels "blur in ${#KPROGS[@]} programs, 6 invocations a session" "$KPAIRS" "${KFILES:-1}"
else
  echo "kernels: skipped (no blur example builds here)"
fi
if [ "$PYTEST_REAL" = yes ]; then
  run_source pytest-benchmark make_pytest "real pytest-benchmark" "$PAIRS" "$PROCS"
else
  run_source pytest-benchmark make_pytest "pytest-benchmark NOT installed: its format, timed by aa_formats.py" "$PAIRS" "$PROCS"
fi
run_source gbench make_gbench "Google Benchmark NOT installed: its format, timed by aa_formats.py" "$PAIRS" "$PROCS"
command -v java >/dev/null && [ -d "$HOME/.m2" ] && echo "(java is here but JMH runs are not wired in: format below)"
run_source jmh make_jmh "JMH NOT run: its format, $PROCS forks (processes) a file, timed by aa_formats.py" "$PAIRS" 1
