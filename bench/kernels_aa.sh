#!/usr/bin/env bash
# `tare kernels` on real suites, A/A and a slower build (issue 34). Measures, does not assert:
#
#   bench/kernels_aa.sh [--quick] [K]
#
# Suites: github.com/cespare/xxhash/v2 (Go, sub-benchmarks; /run/tare-ci/go-xxhash.path, made
# by .ci/services.d/45-go.sh) and pyperformance 1.14.0's bm_richards (pyperf; its script taken
# from the wheel `pip download` fetches into $CACHE). Each is given twice (-n a -n b) in K
# sessions (default 6; --quick: 3), run back to back with tare's default adaptive invocations
# and --time-budget $GO_BUDGET / $PY_BUDGET (defaults 40s / 60s; --quick 25s / 30s). Prints
#
#  (a) A/A verdicts: comparisons of a suite against itself that end "faster" or "slower", as a
#      fraction of all, against alpha (0.05); the withheld ones and why;
#  (b) next-session coverage: for each kernel and side, whether session k+1's value (the mean of
#      its processes' means, the value tare prints) lies inside session k's printed intervals:
#      the "±" (a 95% interval of that mean over the session's processes; a next session that is
#      an independent draw lands inside a 95% interval of equal width only ~83% of the time:
#      |Z1 - Z2| < 1.96 with Z ~ N(0, 1/2 each)), and the "next session ±" (a 95% prediction
#      interval of the next session's mean, widened where the processes show speed modes;
#      nominal 95%);
#  (c) a 10-20% slower build: a Go package whose kernel does 15% more work per loop, and
#      pyperformance's nbody with --iterations 23000 against its default 20000 (15% more), each
#      with tare's default time budget (2m): verdict, ratio and the session's wall time.
#
# TARE names the binary (default target/debug/tare, built); OUT keeps the sessions' JSON
# (default: a temporary directory, removed); SLOW=no skips (c). Needs go and python3 with pyperf.
set -euo pipefail
QUICK=no
if [ "${1:-}" = --quick ]; then QUICK=yes; shift; fi
if [ $QUICK = yes ]; then
  K=${1:-3} GO_BUDGET=${GO_BUDGET:-25s} PY_BUDGET=${PY_BUDGET:-30s}
else
  K=${1:-6} GO_BUDGET=${GO_BUDGET:-40s} PY_BUDGET=${PY_BUDGET:-60s}
fi
GO_FILTER=${GO_FILTER:-'^(Sum64/4B|Sum64/4KB|DigestString/100B)$'}
cd "$(dirname "$0")/.."
if [ -z "${TARE:-}" ]; then
  cargo build --quiet --bin tare
  TARE=target/debug/tare
fi
TARE=$(realpath "$TARE")
CACHE=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tare-bench}
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; dir=$(realpath "$OUT"); else
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
command -v go >/dev/null || { echo "bench/kernels_aa.sh: needs go on PATH" >&2; exit 2; }
python3 -c 'import pyperf' 2>/dev/null || { echo "bench/kernels_aa.sh: needs python3 with pyperf (.ci/services.d/47-pyperf.sh)" >&2; exit 2; }
XX=$(cat /run/tare-ci/go-xxhash.path 2>/dev/null || true)
[ -f "$XX/bench_test.go" ] || { echo "bench/kernels_aa.sh: no xxhash module (/run/tare-ci/go-xxhash.path; run .ci/services.d/45-go.sh)" >&2; exit 2; }

# pyperformance's scripts, from its wheel.
PYPERF_SRC="pyperformance 1.14.0"
BM=$CACHE/pyperformance-1.14.0/pyperformance/data-files/benchmarks
if [ ! -f "$BM/bm_richards/run_benchmark.py" ]; then
  mkdir -p "$CACHE"
  python3 -m pip download -q --no-deps pyperformance==1.14.0 -d "$CACHE" >/dev/null 2>&1 &&
    python3 -m zipfile -e "$CACHE"/pyperformance-1.14.0-py3-none-any.whl "$CACHE/pyperformance-1.14.0" || true
fi
if [ -f "$BM/bm_richards/run_benchmark.py" ]; then
  RICHARDS=$BM/bm_richards/run_benchmark.py
  NBODY=$BM/bm_nbody/run_benchmark.py
else
  echo "bench/kernels_aa.sh: pyperformance could not be fetched; falling back to tests/kernels/pyperf_bench.py (a plain pyperf script, not pyperformance)" >&2
  PYPERF_SRC="tests/kernels/pyperf_bench.py (pyperformance NOT available)"
  RICHARDS=$PWD/tests/kernels/pyperf_bench.py
  NBODY=
fi

GO="$TARE native-worker go $XX"
PY="$TARE native-worker pyperf $RICHARDS"
echo "tare kernels on real suites (issue 34): $K sessions a suite, each suite given twice (A/A)"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(go version | cut -d' ' -f3); $(python3 -c 'import sys,pyperf;print("python",sys.version.split()[0],"pyperf",pyperf.__version__)')"
echo "go: xxhash v2 ($XX), --filter '$GO_FILTER', --time-budget $GO_BUDGET"
echo "pyperf: $PYPERF_SRC bm_richards, --time-budget $PY_BUDGET"
t_all=$(date +%s)
session() { # suite k budget [program args...]
  local name=$1 k=$2 budget=$3
  shift 3
  local t0
  t0=$(date +%s.%N)
  "$TARE" kernels "$@" -n a -n b --time-budget "$budget" --seed "$k" \
    --export-json "$dir/$name.$k.json" > "$dir/$name.$k.out" 2> "$dir/$name.$k.err" || true
  echo "$(date +%s.%N) - $t0" | bc > "$dir/$name.$k.secs"
}
for ((k = 0; k < K; k++)); do
  session go "$k" "$GO_BUDGET" "$GO" "$GO" --filter "$GO_FILTER"
  session py "$k" "$PY_BUDGET" "$PY" "$PY"
done

# (c) a 15% slower build, default time budget.
for side in base:2000 slower:2300; do
  name=${side%%:*} n=${side##*:}
  mkdir -p "$dir/slow/$name"
  printf 'module tare.bench/%s\n\ngo 1.21\n' "$name" > "$dir/slow/$name/go.mod"
  cat > "$dir/slow/$name/bench_test.go" <<GO
package $name

import "testing"

var sink int

func sum(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i ^ (s >> 3)
	}
	return s
}

func BenchmarkWork(b *testing.B) {
	for i := 0; i < b.N; i++ {
		sink += sum($n)
	}
}
GO
done
slow() { # name programs...
  local name=$1 t0
  shift
  t0=$(date +%s.%N)
  "$TARE" kernels "$@" -n base -n slower --seed 1 --export-json "$dir/$name.json" \
    > "$dir/$name.out" 2> "$dir/$name.err" || true
  echo "$(date +%s.%N) - $t0" | bc > "$dir/$name.secs"
}
[ "${SLOW:-yes}" = yes ] && slow slow-go "$TARE native-worker go $dir/slow/base" "$TARE native-worker go $dir/slow/slower"
[ "${SLOW:-yes}" = yes ] && [ -n "$NBODY" ] && slow slow-py "$TARE native-worker pyperf $NBODY" "$TARE native-worker pyperf $NBODY --iterations 23000"

python3 - "$dir" "$K" <<'PY'
import json, os, re, sys
d, K = sys.argv[1], int(sys.argv[2])
ALPHA = 0.05

def load(path):
    try:
        return json.load(open(path))
    except Exception:
        return None

def printed(out):
    """{(kernel, impl): (half, what, next_half, widened)} from a session's summary lines: the
    "±" (a fraction), what it says it is, the next-session "±" where printed and whether that
    was widened for speed modes."""
    got, kernel = {}, None
    for line in out.splitlines():
        if line and not line.startswith((" ", "tare:")):
            kernel = line.split(" ")[0]
            continue
        m = re.match(r"^  (\S+)\s+\S+ \S+/loop ± ([0-9.]+)% \(([^;)]*)(; next session ([^,)]*)([^)]*))?\)", line)
        if m and kernel:
            got[(kernel, m.group(1))] = (float(m.group(2)) / 100, m.group(3),
                                         next_bounds(m.group(5)), "widened" in (m.group(6) or ""))
    return got

UNIT = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}

def next_bounds(text):
    """The next-session interval as factors (low, high) of the session's value: "± X%" is
    (1 - X, 1 + X); a range "A unit–B unit" (compare's interval, symmetric on the log scale)
    is (1/f, f) with f = sqrt(B/A)."""
    if not text:
        return None
    m = re.match(r"± ([0-9.]+)%", text)
    if m:
        h = float(m.group(1)) / 100
        return (1 - h, 1 + h)
    m = re.match(r"([0-9.]+) (\S+)–([0-9.]+) (\S+)", text)
    if m:
        lo = float(m.group(1)) * UNIT[m.group(2)]
        hi = float(m.group(3)) * UNIT[m.group(4)]
        f = (hi / lo) ** 0.5
        return (1 / f, f)
    return None

def value(b):
    # Each invocation's value: the mean of its samples (the median in records from before it).
    ms = [i.get("mean", i.get("median")) for i in b["extra"]["invocations"]
          if i.get("mean", i.get("median")) and not i.get("error")]
    return sum(ms) / len(ms) if ms else None, len(ms)

for suite in ("go", "py"):
    label = {"go": "go xxhash", "py": "pyperf richards"}[suite]
    comps = verdicts = withheld = equal = 0
    reasons, invs, secs, sessions = {}, [], [], []
    for k in range(K):
        v = load(f"{d}/{suite}.{k}.json")
        out = open(f"{d}/{suite}.{k}.out").read() if os.path.exists(f"{d}/{suite}.{k}.out") else ""
        secs.append(float(open(f"{d}/{suite}.{k}.secs").read()))
        if v is None:
            err = open(f"{d}/{suite}.{k}.err").read().strip().splitlines()
            print(f"{label} session {k}: no results ({err[-1] if err else 'no output'})")
            sessions.append(None)
            continue
        p = printed(out)
        vals = {}
        for b in v["benchmarks"]:
            kern, impl = b["extra"]["kernel"]["kernel"], b["extra"]["kernel"]["implementation"]
            val, n = value(b)
            invs.append(n)
            half, what, nxt, widened = p.get((kern, impl), (None, None, None, False))
            vals[(kern, impl)] = (val, half, what, nxt, widened)
        sessions.append(vals)
        for c in v["comparisons"]:
            comps += 1
            if c["verdict"] in ("faster", "slower"):
                verdicts += 1
            elif c["verdict"] == "equal-within-noise":
                equal += 1
            w = c["words"]
            if " — withheld: " in w:
                withheld += 1
                why = w.split(" — withheld: ", 1)[1]
                why = re.sub(r"[0-9.]+", "#", why.split(";")[0].split(" (")[0])
                reasons[why] = reasons.get(why, 0) + 1
    print(f"\n== {label}: {K} sessions, {sum(secs):.0f} s ({min(secs):.0f}-{max(secs):.0f} s a session), "
          f"invocations a side {min(invs, default=0)}-{max(invs, default=0)}")
    rate = verdicts / comps if comps else float("nan")
    print(f"(a) A/A verdicts: {verdicts} of {comps} comparisons ({100*rate:.1f}%; alpha {100*ALPHA:.0f}%: "
          f"{'within' if comps and rate <= ALPHA else 'ABOVE'}); equal-within-noise {equal}; "
          f"no verdict {comps - verdicts - equal}")
    for why, n in sorted(reasons.items(), key=lambda x: -x[1]):
        print(f"      {n:3d} × {why}")
    inside = inside_next = total = total_next = widened_n = 0
    widths, whats = [], set()
    for a, b in zip(sessions, sessions[1:]):
        if a is None or b is None:
            continue
        for key, (val, half, what, nxt, widened) in a.items():
            if key not in b or val is None or half is None or b[key][0] is None:
                continue
            off = abs(b[key][0] - val)
            total += 1
            widths.append(half)
            whats.add(what)
            inside += off <= half * val
            if nxt is not None:
                total_next += 1
                inside_next += nxt[0] * val <= b[key][0] <= nxt[1] * val
                widened_n += widened
    if total:
        print(f"(b) next session inside the previous printed \"±\": {inside} of {total} "
              f"({100*inside/total:.0f}%; it is {'; '.join(sorted(whats))}: a 95% interval of a "
              f"mean holds an independent next mean of equal n ~83% of the time); half-widths "
              f"{100*min(widths):.1f}-{100*max(widths):.1f}%, median {100*sorted(widths)[len(widths)//2]:.1f}%")
    if total_next:
        print(f"    inside the previous printed next-session interval: {inside_next} of {total_next} "
              f"({100*inside_next/total_next:.0f}%; nominal 95%); {widened_n} of them widened (speed modes or thirds)")
    elif total:
        print("    (no next-session interval printed: a tare from before it)")
    # How far apart consecutive sessions' values are, relative to the interval.
    sp = []
    for a, b in zip(sessions, sessions[1:]):
        if a and b:
            for key, (val, half, *_) in a.items():
                if key in b and val and b[key][0] and half:
                    sp.append(abs(b[key][0] / val - 1) / half)
    if sp:
        sp.sort()
        print(f"    |next/prev - 1| in units of the previous \"±\": median {sp[len(sp)//2]:.2f}, "
              f"90th pct {sp[int(0.9*(len(sp)-1))]:.2f}, max {sp[-1]:.2f}")

print("\n(c) a 15% slower build, default time budget (2m):")
for name, label in (("slow-go", "go (sum of 2300 against 2000)"),
                    ("slow-py", "pyperformance nbody (--iterations 23000 against 20000)")):
    v = load(f"{d}/{name}.json")
    if not os.path.exists(f"{d}/{name}.secs"):
        continue
    secs = float(open(f"{d}/{name}.secs").read())
    if v is None:
        err = open(f"{d}/{name}.err").read().strip().splitlines()
        print(f"    {label}: no results after {secs:.0f} s ({err[-1] if err else 'no output'})")
        continue
    n = [len(b["extra"]["invocations"]) for b in v["benchmarks"]]
    for c in v["comparisons"]:
        found = "FOUND" if c["verdict"] == "slower" else "not found"
        print(f"    {label}: {found}: {c['verdict']} {c['ratio']:.3f}x "
              f"[{c['ratio_ci_low']:.3f}, {c['ratio_ci_high']:.3f}], {n[0]}/{n[1]} invocations, {secs:.0f} s")
PY
echo "total: $(( $(date +%s) - t_all )) s; load at the end $(cut -d" " -f1-3 /proc/loadavg)"
