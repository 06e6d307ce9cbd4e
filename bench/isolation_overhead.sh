#!/usr/bin/env bash
# Per-run overhead of tare's isolation (fresh user/mount/PID/IPC/UTS/net namespaces, read-only
# /, private /tmp, own /proc, capabilities dropped) against no isolation, and against
# BenchExec's RunExecutor with and without its container. Needs root (cgroups, namespaces).
# Prints one table.
#
#   bash bench/isolation_overhead.sh            # N=200 runs of /bin/true per mode
#   N=500 CMD="/bin/sh -c true" bash bench/isolation_overhead.sh
#   TARE=path/to/tare TARE_BEFORE=path/to/older/tare bash bench/isolation_overhead.sh
#                                               # a given binary (no build), and an older one
#                                               # for a before/after row
#
# Columns: "measured wall/CPU" is what lands in the results (median over runs); "per run" is
# the end-to-end cost of one run for the harness (elapsed time of the loop / N), i.e. what a
# suite of many short runs pays. BenchExec runs through its Python API in one process, so
# Python start-up is not counted against it. BenchExec's default container mode puts an
# overlay on /; kernels that refuse overlayfs on / (this one) need --read-only-dir /, which is
# what tare's layout is too, so that variant is the fair comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200}
CMD=${CMD:-/bin/true}
TARGET=${CARGO_TARGET_DIR:-target}
if [ -z "${TARE:-}" ]; then
  cargo build --release -q
  TARE="$TARGET/release/tare"
fi
[ "$(id -u)" = 0 ] || { echo "isolation_overhead: needs root (cgroups and namespaces)"; exit 2; }

echo "machine: $(nproc) CPUs, kernel $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "command: $CMD, $N runs per mode"

median_json() { # reads tare suite exec JSON lines; prints "wall_ms cpu_ms"
  python3 -c '
import sys, json, statistics as s
r = [json.loads(l) for l in sys.stdin if l.strip()]
print("%.2f %.2f" % (1e3 * s.median(x["wall_time"] for x in r), 1e3 * s.median(x["cpu_time"] for x in r)))'
}

row() { printf "%-44s %10s %10s %10s\n" "$@"; }
row "mode" "wall(ms)" "CPU(ms)" "per run(ms)"

tare_mode() { # label, extra args...
  local label=$1; shift
  local bin=$TARE
  if [ "${1:-}" = --bin ]; then bin=$2; shift 2; fi
  local t0 t1 out
  t0=$(date +%s%N)
  # shellcheck disable=SC2086
  out=$("$bin" suite exec "$@" --runs "$N" -- $CMD | median_json)
  t1=$(date +%s%N)
  row "$label" ${out% *} ${out#* } "$(python3 -c "print('%.2f' % (($t1 - $t0) / 1e6 / $N))")"
}

tare_mode "tare, no isolation"
tare_mode "tare --isolate" --isolate
tare_mode "tare --isolate --network (no net namespace)" --isolate --network
if [ -n "${TARE_BEFORE:-}" ]; then
  tare_mode "tare --isolate, TARE_BEFORE" --bin "$TARE_BEFORE" --isolate
  tare_mode "tare --isolate --network, TARE_BEFORE" --bin "$TARE_BEFORE" --isolate --network
fi

if ! python3 -c "import benchexec" 2>/dev/null; then
  pip install -q benchexec >/dev/null 2>&1 || true
fi
if python3 -c "import benchexec" 2>/dev/null; then
  BX=$(mktemp /tmp/tare-bx-XXXXXX.py)
  cat > "$BX" <<'PY'
import sys, time, logging, statistics as s, shlex
logging.disable(logging.CRITICAL)
from benchexec.runexecutor import RunExecutor
from benchexec import containerexecutor as ce
mode, n, cmd = sys.argv[1], int(sys.argv[2]), shlex.split(sys.argv[3])
if mode == "overlay":
    ex = RunExecutor(use_namespaces=True)
elif mode == "read-only":
    ex = RunExecutor(use_namespaces=True, dir_modes={"/": ce.DIR_READ_ONLY, "/tmp": ce.DIR_HIDDEN,
                     "/run": ce.DIR_HIDDEN, "/home": ce.DIR_HIDDEN}, network_access=False,
                     container_system_config=True)
else:
    ex = RunExecutor(use_namespaces=False)
walls, cpus, ok = [], [], 0
t0 = time.perf_counter()
for i in range(n):
    r = ex.execute_run(cmd, "/tmp/tare-bx.log")
    if r.get("terminationreason") == "failed" or "walltime" not in r:
        continue
    ok += 1
    walls.append(r["walltime"]); cpus.append(r.get("cputime", 0))
el = time.perf_counter() - t0
if ok == 0:
    print("FAILED")
else:
    print("%.2f %.2f %.2f" % (1e3 * s.median(walls), 1e3 * s.median(cpus), 1e3 * el / n))
PY
  for m in plain read-only overlay; do
    case $m in
      plain) label="BenchExec, --no-container" ;;
      read-only) label="BenchExec, --container --read-only-dir /" ;;
      overlay) label="BenchExec, --container (overlay on /)" ;;
    esac
    n=$N; [ "$m" = overlay ] && n=3
    out=$(python3 "$BX" "$m" "$n" "$CMD" 2>/dev/null || echo FAILED)
    if [ "$out" = FAILED ]; then
      row "$label" "fails" "-" "-"
    else
      set -- $out
      row "$label" "$1" "$2" "$3"
    fi
  done
  rm -f "$BX" /tmp/tare-bx.log
else
  echo "BenchExec: not installed and pip install benchexec failed; skipped"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
