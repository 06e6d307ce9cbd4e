#!/usr/bin/env bash
# How often `tare kernels` finds a change of one benchmark between two builds of a Google
# Benchmark suite, and how often it finds one between two identical builds (A/A), over many
# sessions: the numbers behind docs/native-workers.md's "what a head-to-head finds".
#
#     bench/native_power.sh TARE DIR SECONDS [ROUNDS] [LANES]
#
# DIR holds builds of tests/kernels/gbench/suite.cpp made with -DTARE_SLOWER_HASH=P as gbP
# (gb0 and more, e.g. gb10 gb15 gb20: BM_hash does P% more work; the machine code is the same,
# only a variable's value differs) and gbb, a copy of gb0. Sessions of `tare kernels` (two
# builds, ROUNDS rounds, default 10, --alpha 0.05) run until SECONDS have passed, cycling
# through gb0-vs-gbb and gb0-vs-gbP; with LANES > 1 (default 1) that many sessions run at once,
# each pinned to two CPUs of its own (--cores; CPUs 2.. upward: a machine with 2·LANES + 2 CPUs).
# Prints per pair how many sessions called BM_hash slower and how many called any other
# benchmark different, and the per-session lines to DIR/power.log.
set -euo pipefail
tare=$(realpath "$1") dir=$(realpath "$2") seconds=$3 rounds=${4:-10} lanes=${5:-1}
cd "$dir"
cands=(gbb)
for f in gb*; do
    case $f in gb0 | gbb) ;; gb[0-9]*) cands+=("$f") ;; esac
done
end=$((SECONDS + seconds))
lane() { # $1: lane number
    local i=0 c j cores=""
    if [ "$lanes" -gt 1 ]; then cores="--cores $((2 * $1 + 2)),$((2 * $1 + 3))"; fi
    while [ $SECONDS -lt $end ]; do
        c=${cands[$(((i + $1) % ${#cands[@]}))]}
        j="$dir/s.$1.$i.json"
        # shellcheck disable=SC2086
        if "$tare" kernels "$tare native-worker gbench ./gb0" "$tare native-worker gbench ./$c" \
            -n gb0 -n "$c" -r "$rounds" --stop "runs >= $rounds" --alpha 0.05 --seed "$1$i" \
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
        rm -f "$j"
        i=$((i + 1))
    done
}
: >"$dir/power.log"
for l in $(seq 0 $((lanes - 1))); do lane "$l" >>"$dir/power.log" & done
wait
python3 - "$dir/power.log" <<'PY'
import collections, sys
n = collections.Counter(); hash_slower = collections.Counter(); other = collections.Counter()
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) < 2 or parts[1] == "failed:":
        print(line.rstrip()); continue
    c = parts[0]; n[c] += 1
    for kv in parts[1:]:
        k, rest = kv.split("=", 1); verdict = rest.split(":")[0]
        decided = verdict in ("slower", "faster")
        if k == "BM_hash" and c != "gbb":
            hash_slower[c] += verdict == "slower"
        elif decided:
            other[c] += 1
for c in sorted(n):
    what = "A/A" if c == "gbb" else f"BM_hash +{c[2:]}%"
    line = f"{what:14s} {n[c]:3d} sessions"
    if c != "gbb":
        line += f"  BM_hash slower in {hash_slower[c]} ({100*hash_slower[c]/n[c]:.0f}%)"
    line += f"  verdicts on unchanged benchmarks: {other[c]} of {4*n[c] if c!='gbb' else 5*n[c]}"
    print(line)
PY
