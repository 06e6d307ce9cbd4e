#!/usr/bin/env bash
# The cost of measuring a kernel with the tare client libraries, against the peers, in one run
# on this machine (issue 14, item 8):
#   1. per-iteration overhead on the empty kernel (a value through the do-not-optimize helper):
#      the C client (C body; and C++ body over the C client) in standalone mode and under
#      `tare kernels`, against Google Benchmark (the same C++ body) and JMH (Blackhole.consume);
#   2. the protocol's round trip per sample (`run loops=1 reps=1` → sample + done) from a
#      minimal C master, for the C, C++ and Rust workers;
#   3. the blur kernel (size 256, radius 3) of examples/kernels/blur/cpp/blur.hpp timed by the
#      C client (through the C++ layer) against Google Benchmark timing the same code (goal:
#      within 2%).
#
#   bench/kernel_overhead.sh [ROUNDS]          (default 5; TARE=path picks the tare binary)
#
# The native measurements are interleaved ROUNDS times and the median per tool is reported,
# with ratios. Not a test: it prints numbers and asserts nothing. Installs Google Benchmark
# (libbenchmark-dev), a JDK and Maven with apt when missing; builds the JMH project under
# bench/jmh-empty once (Maven caches in ~/.m2). Takes about 2 minutes here.
set -euo pipefail
ROUNDS=${1:-5}
cd "$(dirname "$0")/.."
root=$(pwd)
out="$root/target/kernel_overhead"
mkdir -p "$out"

need=()
command -v cc >/dev/null || need+=(gcc libc6-dev)
command -v c++ >/dev/null || need+=(g++)
[ -e /usr/include/benchmark/benchmark.h ] || need+=(libbenchmark-dev)
command -v java >/dev/null || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need+=(maven)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]} (Debian packages)..." >&2
  apt-get update -qq >/dev/null && apt-get install -y -qq "${need[@]}" >/dev/null
fi

echo "building the workers and the peers..." >&2
C_WORKER=$(examples/kernels/blur/c/build.sh --print-command)
CPP_WORKER=$(examples/kernels/blur/cpp/build.sh --print-command)
RUST_WORKER=""
if command -v cargo >/dev/null; then RUST_WORKER=$(examples/kernels/blur/rust/build.sh --print-command); fi
c++ -std=c++17 -O2 -I examples/kernels/blur/cpp -o "$out/gbench_peer" bench/gbench/peer.cpp -lbenchmark -lpthread
cc -std=c11 -O2 -o "$out/minimaster" bench/gbench/minimaster.c
JMH_JAR=bench/jmh-empty/target/benchmarks.jar
if [ ! -e "$JMH_JAR" ] || [ bench/jmh-empty/src/main/java/dev/tare/bench/EmptyBench.java -nt "$JMH_JAR" ]; then
  (cd bench/jmh-empty && { mvn -o -q package -DskipTests 2>/dev/null || mvn -q package -DskipTests; })
fi

if [ -z "${TARE:-}" ]; then
  cargo build --release --quiet --bin tare
  TARE=./target/release/tare
fi
HAVE_KERNELS=0
if "$TARE" kernels --help >/dev/null 2>&1; then HAVE_KERNELS=1; fi

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# standalone line "<kernel> [params] <x> ns/loop ..." -> x
standalone_ns() { "$@" 2>/dev/null | awk '{for (i = 2; i <= NF; i++) if ($i == "ns/loop") {print $(i-1); exit}}'; }
# Google Benchmark JSON -> "wall cpu": the median aggregate's real and CPU time in ns
# (15 repetitions of >= 20 ms, as the worker-mode samples below)
gbench_ns() {
  "$out/gbench_peer" --benchmark_filter="^$1\$" --benchmark_min_time=0.02 --benchmark_repetitions=15 \
    --benchmark_format=json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
for b in d["benchmarks"]:
    if b.get("aggregate_name") == "median":
        print(b["real_time"] * scale[b["time_unit"]], b["cpu_time"] * scale[b["time_unit"]])
'
}
# the worker driven over the protocol by a minimal master -> "wall cpu" ns per loop
worker_ns() { "$out/minimaster" measure "$@" 2>/dev/null || echo "nan nan"; }

declare -A res
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS: empty and blur; client standalone, client worker mode, Google Benchmark..." >&2
  res[c_sa]+="$(standalone_ns "$C_WORKER" --filter '^empty$')"$'\n'
  res[cpp_sa]+="$(standalone_ns "$CPP_WORKER" --filter '^empty$')"$'\n'
  res[c_w]+="$(worker_ns empty "$C_WORKER")"$'\n'
  res[cpp_w]+="$(worker_ns empty "$CPP_WORKER")"$'\n'
  res[gb_e]+="$(gbench_ns empty)"$'\n'
  res[blur_sa]+="$(standalone_ns "$CPP_WORKER" --filter '^blur$' -p size=256)"$'\n'
  res[blur_w]+="$(worker_ns blur "$CPP_WORKER")"$'\n'
  res[gb_b]+="$(gbench_ns blur/256)"$'\n'
done
med() { printf '%s' "${res[$1]}" | awk -v c="$2" 'NF >= c {print $c}' | median; }
C_EMPTY=$(med c_sa 1)
CPP_EMPTY=$(med cpp_sa 1)
C_W_EMPTY="$(med c_w 1) $(med c_w 2)"
CPP_W_EMPTY="$(med cpp_w 1) $(med cpp_w 2)"
GB_EMPTY="$(med gb_e 1) $(med gb_e 2)"
CPP_BLUR=$(med blur_sa 1)
CPP_W_BLUR="$(med blur_w 1) $(med blur_w 2)"
GB_BLUR="$(med gb_b 1) $(med gb_b 2)"

echo "JMH: the empty kernel (1 fork, 3 warm-up and 5 measured iterations of 1 s)..." >&2
java -jar "$JMH_JAR" -f 1 -wi 3 -w 1s -i 5 -r 1s -rf json -rff "$out/jmh.json" EmptyBench >/dev/null 2>&1 || true
JMH_EMPTY=$(python3 -c '
import json, sys
try:
    print(json.load(open(sys.argv[1]))[0]["primaryMetric"]["score"])
except Exception:
    print("nan")
' "$out/jmh.json")

echo "round trip per sample (5000 requests per worker)..." >&2
RT_C=$("$out/minimaster" roundtrip 5000 "$C_WORKER")
RT_CPP=$("$out/minimaster" roundtrip 5000 "$CPP_WORKER")
RT_RUST=""
[ -n "$RUST_WORKER" ] && RT_RUST=$("$out/minimaster" roundtrip 5000 "$RUST_WORKER")

TK_C_EMPTY=nan TK_CPP_EMPTY=nan TK_CPP_BLUR=nan
if [ "$HAVE_KERNELS" = 1 ]; then
  echo "tare kernels: empty (C and C++ workers) and blur (C++ worker), 3 invocations each..." >&2
  read_tk() { # json program-name -> median ns per loop
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for b in d["benchmarks"]:
    if b["name"].endswith("/" + sys.argv[2]):
        print(b["summary"]["wall_time"]["median"] * 1e9)
        break
else:
    print("nan")
' "$1" "$2" 2>/dev/null || echo nan
  }
  if "$TARE" kernels "$C_WORKER" "$CPP_WORKER" -n c -n cpp --filter '^empty$' -r 3 -q \
      --export-json "$out/tare_empty.json" >/dev/null 2>&1; then
    TK_C_EMPTY=$(read_tk "$out/tare_empty.json" c)
    TK_CPP_EMPTY=$(read_tk "$out/tare_empty.json" cpp)
  else
    echo "tare kernels failed on the empty kernel (rerun by hand to see why)" >&2
  fi
  if "$TARE" kernels "$CPP_WORKER" -n cpp --filter '^blur$' -L size 256 -r 3 -q \
      --export-json "$out/tare_blur.json" >/dev/null 2>&1; then
    TK_CPP_BLUR=$(read_tk "$out/tare_blur.json" cpp)
  else
    echo "tare kernels failed on the blur kernel (rerun by hand to see why)" >&2
  fi
fi

python3 - "$C_EMPTY" "$CPP_EMPTY" "$C_W_EMPTY" "$CPP_W_EMPTY" "$GB_EMPTY" "$JMH_EMPTY" "$TK_C_EMPTY" \
  "$TK_CPP_EMPTY" "$CPP_BLUR" "$CPP_W_BLUR" "$GB_BLUR" "$TK_CPP_BLUR" "$HAVE_KERNELS" "$TARE" "$ROUNDS" \
  "$RT_C" "$RT_CPP" "$RT_RUST" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" <<'EOF'
import math, sys
a = sys.argv[1:]
f = lambda s: float(s) if s not in ("", "nan") else math.nan
pair = lambda s: tuple(f(x) for x in (s.split() + ["nan", "nan"])[:2])
c_sa, cpp_sa = f(a[0]), f(a[1])
c_w, cpp_w, gb_e = pair(a[2]), pair(a[3]), pair(a[4])
jmh_e, tk_c, tk_cpp = f(a[5]), f(a[6]), f(a[7])
blur_sa, blur_w, gb_b, tk_b = f(a[8]), pair(a[9]), pair(a[10]), f(a[11])
have, tare, rounds = a[12] == "1", a[13], a[14]
rts = [("C", a[15]), ("C++", a[16]), ("Rust", a[17])]
print("Machine: %s CPUs, load average %s at the end (wall times suffer from load; CPU time," % (a[18], a[19]))
print("where a tool reports it, is the steadier measure).")
print()


def ratio(x, ref):
    return "%.2fx" % (x / ref) if x == x and ref == ref and ref > 0 else "-"


def t(x, unit="ns", scale=1.0):
    return ("%.3f %s" % (x / scale, unit)) if x == x else "-"


def row(name, wall, cpu, ref, unit="ns", scale=1.0):
    print("  %-52s %12s %6s   %12s %6s" % (name, t(wall, unit, scale), ratio(wall, ref[0]), t(cpu, unit, scale), ratio(cpu, ref[1])))


nan = math.nan
head = "  %-52s %12s %6s   %12s %6s" % ("", "wall/loop", "", "CPU/loop", "")
print("Per-iteration overhead, empty kernel (median of %s rounds; ratios to Google Benchmark):" % rounds)
print(head)
row("C client, C body, standalone", c_sa, nan, gb_e)
row("C client, C body, worker mode (minimal master)", c_w[0], c_w[1], gb_e)
row("C client, C++ body, standalone", cpp_sa, nan, gb_e)
row("C client, C++ body, worker mode (minimal master)", cpp_w[0], cpp_w[1], gb_e)
if have:
    row("C client, C body, under tare kernels", tk_c, nan, gb_e)
    row("C client, C++ body, under tare kernels", tk_cpp, nan, gb_e)
row("Google Benchmark (DoNotOptimize, the C++ body)", gb_e[0], gb_e[1], gb_e)
row("JMH (Blackhole.consume), 1 fork", jmh_e, nan, gb_e)
if not have:
    print("  tare kernels: missing in %s (no `kernels` subcommand); measured without tare" % tare)
print()
print("Protocol round trip per sample (run loops=1 reps=1 -> sample + done), median / mean:")
for lang, text in rts:
    if text:
        m, mean = text.split()
        print("  %-6s worker  %8.1f us / %8.1f us   (goal <= 20 us)" % (lang, float(m) / 1e3, float(mean) / 1e3))
print()
print("Blur, size 256 radius 3, the same C++ code (examples/kernels/blur/cpp/blur.hpp); goal: within 2%:")
print(head)
row("Google Benchmark", gb_b[0], gb_b[1], gb_b, "us", 1e3)
row("C client (C++ layer), standalone", blur_sa, nan, gb_b, "us", 1e3)
row("C client (C++ layer), worker mode (minimal master)", blur_w[0], blur_w[1], gb_b, "us", 1e3)
if have:
    row("C client (C++ layer), under tare kernels", tk_b, nan, gb_b, "us", 1e3)
EOF
