#!/usr/bin/env bash
# How often `tare kernels` finds a change of one benchmark between two builds of a suite, and
# how often it finds one between two identical builds (A/A), over many sessions: the numbers
# behind docs/native-workers.md's "what a head-to-head finds".
#
#     [HARNESS=gbench PREFIX=gb CHANGED=BM_hash] bench/native_power.sh TARE DIR SECONDS [ROUNDS] [LANES]
#
# DIR holds builds of one test suite (tests/kernels/{gbench,criterion,jmh,pytest_bench}) as
# PREFIX0 (as it is), PREFIXb (a copy of it) and PREFIXP (the benchmark CHANGED doing P% more
# work, e.g. gb10 gb15 gb20; the Google Benchmark and Criterion.rs suites take P through a
# variable, so the machine code is the same and only its value differs), each what
# `tare native-worker HARNESS` takes (a binary, a bench executable, a jar, a directory with the
# test file). Sessions of `tare kernels` (two builds, ROUNDS rounds, default 10, --alpha 0.05)
# run until SECONDS have passed, cycling through PREFIX0-vs-PREFIXb and PREFIX0-vs-PREFIXP; with
# LANES > 1 (default 1) that many sessions run at once, each pinned to two CPUs of its own
# (--cores; CPUs 2.. upward: a machine with 2·LANES + 2 CPUs). Prints per pair how many
# sessions called CHANGED slower and how many called any other benchmark different, and the
# per-session lines to DIR/power.log (KEEP=1 keeps each session's export, DIR/s.LANE.I.json).
set -euo pipefail
tare=$(realpath "$1") dir=$(realpath "$2") seconds=$3 rounds=${4:-10} lanes=${5:-1}
harness=${HARNESS:-gbench} prefix=${PREFIX:-gb}
export CHANGED=${CHANGED:-BM_hash}
cd "$dir"
cands=("${prefix}b")
for f in "$prefix"*; do
    case ${f#"$prefix"} in 0 | b) ;; [0-9]*) cands+=("$f") ;; esac
done
end=$((SECONDS + seconds))
lane() { # $1: lane number
    local i=0 c j cores=""
    if [ "$lanes" -gt 1 ]; then cores="--cores $((2 * $1 + 2)),$((2 * $1 + 3))"; fi
    while [ $SECONDS -lt $end ]; do
        c=${cands[$(((i + $1) % ${#cands[@]}))]}
        j="$dir/s.$1.$i.json"
        # shellcheck disable=SC2086
        if "$tare" kernels "$tare native-worker $harness ./${prefix}0" \
            "$tare native-worker $harness ./$c" -n base -n "$c" -r "$rounds" --stop "runs >= $rounds" --alpha 0.05 --seed "$1$i" \
            $cores --export-json "$j" >/dev/null 2>"$dir/s.$1.$i.err"; then
            python3 - "$j" "$c" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
out = []
for c in v["comparisons"]:
    k = c["candidate_name"].rsplit("/", 1)[0]
    out.append(f'{k}={c["verdict"]}:{c["ratio"]:.3f}')
print(sys.argv[2], " ".join(out))
PY
        else
            echo "$c failed: $(tail -n 1 "$dir/s.$1.$i.err")"
        fi
        [ -n "${KEEP:-}" ] || rm -f "$j"
        i=$((i + 1))
    done
}
: >"$dir/power.log"
for l in $(seq 0 $((lanes - 1))); do lane "$l" >>"$dir/power.log" & done
wait
python3 - "$dir/power.log" "${prefix}b" <<'PY'
import collections, os, sys
changed, aa = os.environ["CHANGED"], sys.argv[2]
n = collections.Counter(); hash_slower = collections.Counter(); other = collections.Counter()
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) < 2 or parts[1] == "failed:":
        print(line.rstrip()); continue
    c = parts[0]; n[c] += 1
    for kv in parts[1:]:
        k, rest = kv.split("=", 1); verdict = rest.split(":")[0]
        decided = verdict in ("slower", "faster")
        if k == changed and c != aa:
            hash_slower[c] += verdict == "slower"
        elif decided:
            other[c] += 1
kernels = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) > 1 and parts[1] != "failed:":
        kernels[parts[0]] = len(parts) - 1
for c in sorted(n):
    what = "A/A" if c == aa else f"{changed} +{c[len(aa) - 1:]}%"
    line = f"{what:20s} {n[c]:3d} sessions"
    unchanged = kernels[c] - (c != aa)
    if c != aa:
        line += f"  {changed} slower in {hash_slower[c]} ({100*hash_slower[c]/n[c]:.0f}%)"
    line += f"  verdicts on unchanged benchmarks: {other[c]} of {unchanged*n[c]}"
    print(line)
PY
