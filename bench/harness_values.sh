#!/usr/bin/env bash
# Do `tare kernels`' values agree with the harness's own (issue 34)? For the same benchmarks:
#
#  - Go, github.com/cespare/xxhash/v2 (/run/tare-ci/go-xxhash.path): `go test -bench -count 10`
#    (default -benchtime 1s), its median ns/op and the 95% interval of that median (order
#    statistics, as benchstat), against `tare kernels 'tare native-worker go DIR'` with the
#    default adaptive invocations;
#  - pyperformance 1.14.0 bm_richards (from the wheel bench/kernels_aa.sh fetches into $CACHE):
#    pyperf's own run (20 worker processes; mean ± std dev) against `tare native-worker pyperf`.
#
# Prints, per benchmark, the harness's value, tare's value (the mean of its processes' medians),
# tare's "±" and next-session interval as printed, and whether the harness's value lies inside
# them. Measures, does not assert. TARE names the binary (default target/debug/tare). Output:
# bench/harness_values.out.txt.
#
#   bench/harness_values.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${TARE:-}" ]; then cargo build --quiet --bin tare; TARE=target/debug/tare; fi
TARE=$(realpath "$TARE")
XX=$(cat /run/tare-ci/go-xxhash.path 2>/dev/null || true)
[ -f "$XX/bench_test.go" ] || { echo "bench/harness_values.sh: no xxhash module (/run/tare-ci/go-xxhash.path)" >&2; exit 2; }
CACHE=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tare-bench}
RICHARDS=$CACHE/pyperformance-1.14.0/pyperformance/data-files/benchmarks/bm_richards/run_benchmark.py
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "harness values against tare kernels (issue 34); machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(go version | cut -d' ' -f3)"
t0=$(date +%s)
# (go1.26 matches the top level against BenchmarkNAME: no ^ there.)
(cd "$XX" && go test -run '^$' -bench 'Sum64$/^(4B|4KB)$' -count 10 . && \
  go test -run '^$' -bench 'DigestString$/^100B$' -count 10 .) > "$dir/go.txt" 2>&1 || true
t1=$(date +%s)
"$TARE" kernels "$TARE native-worker go $XX" --filter '^(Sum64/4B|Sum64/4KB|DigestString/100B)$' \
  --export-json "$dir/go.json" > "$dir/go.out" 2> "$dir/go.err" || true
t2=$(date +%s)
echo "go test -count 10: $((t1 - t0)) s; tare kernels: $((t2 - t1)) s"
have_py=no
if [ -f "$RICHARDS" ] && python3 -c 'import pyperf' 2>/dev/null; then
  have_py=yes
  python3 "$RICHARDS" --quiet -o "$dir/py.json" > /dev/null 2>&1 || true
  t3=$(date +%s)
  "$TARE" kernels "$TARE native-worker pyperf $RICHARDS" --export-json "$dir/pyk.json" > "$dir/py.out" 2> "$dir/py.err" || true
  t4=$(date +%s)
  echo "pyperf richards: $((t3 - t2)) s; tare kernels: $((t4 - t3)) s"
fi
cat "$dir/go.out"
[ $have_py = yes ] && cat "$dir/py.out"
python3 - "$dir" "$have_py" <<'PY'
import json, math, re, sys
from statistics import mean, median, stdev
d, have_py = sys.argv[1], sys.argv[2] == "yes"

def printed(path):
    got, kernel = {}, None
    for line in open(path).read().splitlines():
        if line and not line.startswith((" ", "tare:")):
            kernel = line.split(" ")[0]
            continue
        m = re.match(r"^  (\S+)\s+(\S+) (\S+)/loop ± ([0-9.]+)% \(([^;)]*)(; next session ± ([0-9.]+)%)?", line)
        if m and kernel:
            got[kernel] = (float(m.group(4)) / 100, float(m.group(7)) / 100 if m.group(7) else None)
    return got

def tare_values(path):
    v = json.load(open(path))
    out = {}
    for b in v["benchmarks"]:
        ms = [i["median"] for i in b["extra"]["invocations"] if i.get("median") and not i.get("error")]
        if ms:
            out[b["extra"]["kernel"]["kernel"]] = (mean(ms), len(ms))
    return out

def median_ci(xs):
    # benchstat's: the order statistics around the median at 95% (binomial).
    xs = sorted(xs)
    n = len(xs)
    best = (xs[0], xs[-1])
    for k in range(n // 2):
        cover = sum(math.comb(n, i) for i in range(k + 1, n - k)) / 2 ** n
        if cover >= 0.95:
            best = (xs[k], xs[n - 1 - k])
    return best

def row(name, harness, what, tv, half, nxt):
    val, n = tv
    inside = abs(harness - val) <= half * val
    inside_n = nxt is not None and abs(harness - val) <= nxt * val
    print(f"  {name:18s} harness {harness*1e9:10.2f} ns ({what})  tare {val*1e9:10.2f} ns ± {100*half:.1f}% "
          f"(next session ± {100*nxt:.1f}%)" if nxt is not None else f"  {name:18s} harness {harness*1e9:10.2f} ns ({what})  tare {val*1e9:10.2f} ns ± {100*half:.1f}%", end="")
    print(f"  over {n} processes; tare/harness {val/harness:.3f}; harness inside ±: {'yes' if inside else 'NO'}, inside next-session: {'yes' if inside_n else 'NO'}")

print("\nvalues (s/loop shown in ns):")
go = {}
for line in open(f"{d}/go.txt"):
    m = re.match(r"^Benchmark(\S+?)(-\d+)?\s+\d+\s+([0-9.]+) ns/op", line)
    if m:
        go.setdefault(m.group(1), []).append(float(m.group(3)) * 1e-9)
try:
    tv, pr = tare_values(f"{d}/go.json"), printed(f"{d}/go.out")
except Exception as e:
    tv, pr = {}, {}
    print(f"  tare go: no results ({e})")
for name, xs in sorted(go.items()):
    lo, hi = median_ci(xs)
    what = f"go test median of {len(xs)}, 95% CI {lo*1e9:.2f}-{hi*1e9:.2f}, ±{50*(hi-lo)/median(xs):.1f}%"
    if name in tv and name in pr:
        row(name, median(xs), what, tv[name], *pr[name])
    else:
        print(f"  {name}: harness {median(xs)*1e9:.2f} ns; tare: none")
if have_py:
    try:
        p = json.load(open(f"{d}/py.json"))
        vals = [v for r in p["benchmarks"][0]["runs"] for v in r.get("values", [])]
        tv, pr = tare_values(f"{d}/pyk.json"), printed(f"{d}/py.out")
        (k, t), = tv.items()
        what = f"pyperf mean of {len(vals)} values, std dev ±{100*stdev(vals)/mean(vals):.1f}%"
        row(k, mean(vals), what, t, *pr.get(k, (float('nan'), None)))
    except Exception as e:
        print(f"  pyperf richards: no comparison ({e})")
PY
