#!/usr/bin/env bash
# Does tare's wall clock hold only the command? Prints, in one run, the median of
# (wall time - CPU time) per run for
#   - a CPU-bound C loop of ~45 ms, run back to back, and
#   - /bin/true after a 50 ms pause before every run (the case where joining a cgroup v1 group
#     used to wait for an RCU grace period inside the timed interval),
# measured by tare's cgroup backend, tare's rusage backend and hyperfine -N (per-run times
# minus its mean user+system; its pause is a --prepare 'sleep 0.05').
#
#   bench/wall_bias.sh [RUNS]
#
# Not a test: it prints numbers and the difference of the gaps; tests/wall_bias.rs guards
# the behaviour with a wide margin.
set -euo pipefail
RUNS=${1:-60}
cd "$(dirname "$0")/.."
[ -n "${TARE:-}" ] || cargo build --release --quiet --bin tare
command -v hyperfine >/dev/null || { echo "wall_bias: needs hyperfine (apt-get install hyperfine)" >&2; exit 2; }
TARE=${TARE:-$PWD/target/release/tare}  # TARE=path measures another build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/loop.c" <<'EOF'
#include <stdlib.h>
int main(int argc, char **argv) {
  volatile unsigned long i;
  unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 100000000UL;
  for (i = 0; i < n; i++) {}
  return 0;
}
EOF
cc -O1 -o "$work/loop" "$work/loop.c"
# Calibrate to ~45 ms of CPU on this machine.
iters=$(python3 - "$work/loop" <<'EOF'
import resource, subprocess, sys
n = 50_000_000
before = resource.getrusage(resource.RUSAGE_CHILDREN)
subprocess.run([sys.argv[1], str(n)], check=True)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
print(int(n * 0.045 / max(cpu, 1e-3)))
EOF
)

gap_tare() { # json -> "median_gap_ms median_cpu_ms"
  python3 - "$1" <<'EOF'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
r = [x for x in d["benchmarks"][0]["runs"] if x.get("counted")]
print("%.3f %.2f" % (statistics.median(x["wall_time"] - x["cpu_time"] for x in r) * 1e3,
                     statistics.median(x["cpu_time"] for x in r) * 1e3))
EOF
}
gap_hf() {
  python3 - "$1" <<'EOF'
import json, statistics, sys
r = json.load(open(sys.argv[1]))["results"][0]
cpu = r["user"] + r["system"]
print("%.3f %.2f" % ((statistics.median(r["times"]) - cpu) * 1e3, cpu * 1e3))
EOF
}

declare -A gap
measure() { # case, tare-args..., -- , hyperfine-args...
  local case=$1; shift
  local targs=() hargs=()
  while [ "$1" != "--" ]; do targs+=("$1"); shift; done; shift
  hargs=("$@")
  "$TARE" run --style none --runs "$RUNS" --export-json "$work/v.json" "${targs[@]}" >/dev/null 2>&1
  gap[$case,cgroup]=$(gap_tare "$work/v.json")
  "$TARE" run --style none --backend rusage --runs "$RUNS" --export-json "$work/r.json" "${targs[@]}" >/dev/null 2>&1
  gap[$case,rusage]=$(gap_tare "$work/r.json")
  hyperfine -N --style none --runs "$RUNS" --export-json "$work/h.json" "${hargs[@]}" >/dev/null 2>&1
  gap[$case,hyperfine]=$(gap_hf "$work/h.json")
}

measure loop "$work/loop $iters" -- "$work/loop $iters"
measure pause --sleep-between 50ms /bin/true -- --prepare 'sleep 0.05' /bin/true

method=$("$TARE" run --style basic --runs 1 /bin/true 2>/dev/null | grep -o 'Measured with [^:(]*' | head -1 || true)
printf 'median wall - CPU per run, %d runs each (tare default: %s)\n' "$RUNS" "${method:-?}"
printf '%-34s %14s %14s %14s\n' case "tare cgroup" "tare rusage" "hyperfine -N"
for c in loop pause; do
  label=$([ $c = loop ] && echo "C loop (~45 ms CPU), back to back" || echo "/bin/true after 50 ms pauses")
  printf '%-34s' "$label"
  for t in cgroup rusage hyperfine; do
    read -r g _ <<<"${gap[$c,$t]}"
    printf ' %11.3f ms' "$g"
  done
  printf '\n'
done
for c in loop pause; do
  read -r gc cpu <<<"${gap[$c,cgroup]}"
  read -r gr _ <<<"${gap[$c,rusage]}"
  printf '%s: cgroup gap - rusage gap = %+.3f ms (CPU %s ms)\n' "$c" "$(echo "$gc - $gr" | bc -l)" "$cpu"
done
