#!/usr/bin/env bash
# Per-run cost of tare with full cgroup accounting, against hyperfine -N and a bare
# spawn+wait loop (the physical limit), measured in one run on this machine.
#
#   bench/overhead.sh ["RUN COUNTS"] [ROUNDS]      (default: "300 2000" 9)
#
# Each tool runs /bin/true RUNS times; the total elapsed time divided by RUNS is its per-run
# cost. The tools are interleaved ROUNDS times, in a fresh random order each round; the median
# per tool is reported, and each ratio is the median of the per-round ratios (the two tools of
# a round ran seconds apart, so slow drift of a VM host cancels in each). Not a test: it
# prints numbers, it asserts nothing.
set -euo pipefail
RUN_COUNTS=${1:-"300 2000"}
ROUNDS=${2:-9}
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin tare --example spawn_loop
if ! command -v hyperfine >/dev/null; then
  echo "installing hyperfine (Debian package)..." >&2
  apt-get update -qq >/dev/null && apt-get install -y -qq hyperfine >/dev/null
fi
TARE=${TARE:-./target/release/tare}  # TARE=path measures another build
LOOP=./target/release/examples/spawn_loop

now() { date +%s.%N; }
per_run() { # command... -> seconds per run (whole invocation: start-up included)
  local t0 t1
  t0=$(now); "$@" >/dev/null 2>&1; t1=$(now)
  echo "($t1 - $t0) / $RUNS" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

method=$("$TARE" run --style basic --runs 1 /bin/true 2>/dev/null | grep -o 'Measured with [^:]*' || true)
for RUNS in $RUN_COUNTS; do
  bare=(); hf=(); tv1=(); tru=(); r_th=(); r_tb=(); r_hb=(); r_rh=()
  for ((i = 0; i < ROUNDS; i++)); do
    for tool in $(printf '%s\n' bare hf tv1 tru | shuf); do
      case $tool in
        bare) b=$(per_run "$LOOP" "$RUNS" /bin/true) ;;
        hf) h=$(per_run hyperfine -N --style none --runs "$RUNS" /bin/true) ;;
        tv1) t=$(per_run "$TARE" run --style none --runs "$RUNS" /bin/true) ;;
        tru) r=$(per_run "$TARE" run --style none --backend rusage --runs "$RUNS" /bin/true) ;;
      esac
    done
    bare+=("$b"); hf+=("$h"); tv1+=("$t"); tru+=("$r")
    r_th+=("$(echo "$t / $h" | bc -l)"); r_tb+=("$(echo "$t / $b" | bc -l)")
    r_hb+=("$(echo "$h / $b" | bc -l)"); r_rh+=("$(echo "$r / $h" | bc -l)")
  done
  B=$(printf '%s\n' "${bare[@]}" | median)
  H=$(printf '%s\n' "${hf[@]}" | median)
  T=$(printf '%s\n' "${tv1[@]}" | median)
  R=$(printf '%s\n' "${tru[@]}" | median)
  printf 'per-run cost of /bin/true, whole invocation, median of %d interleaved rounds of %d runs (%s)\n' "$ROUNDS" "$RUNS" "$method"
  printf '  bare spawn+wait loop     %8.1f us\n' "$(echo "$B * 1000000" | bc -l)"
  printf '  hyperfine -N             %8.1f us\n' "$(echo "$H * 1000000" | bc -l)"
  printf '  tare (cgroup accounting) %8.1f us\n' "$(echo "$T * 1000000" | bc -l)"
  printf '  tare --backend rusage    %8.1f us\n' "$(echo "$R * 1000000" | bc -l)"
  printf 'ratios (%d runs): tare/hyperfine %.2f   tare/bare %.2f   hyperfine/bare %.2f   tare-rusage/hyperfine %.2f\n' \
    "$RUNS" "$(printf '%s\n' "${r_th[@]}" | median)" "$(printf '%s\n' "${r_tb[@]}" | median)" \
    "$(printf '%s\n' "${r_hb[@]}" | median)" "$(printf '%s\n' "${r_rh[@]}" | median)"
done
