#!/usr/bin/env bash
# Time and peak memory of `tare table` on 100,000 synthetic run records (5 tools × 2
# configurations × 5,000 inputs × 2 repetitions): HTML + CSV + --dump against a baseline of
# the same size. Prints one line per step.
#
#   bash bench/table_scale.sh                # RUNS=100000
#   INPUTS=50000 bash bench/table_scale.sh   # 1,000,000 records
set -euo pipefail
cd "$(dirname "$0")/.."
INPUTS=${INPUTS:-5000}
TARGET=${CARGO_TARGET_DIR:-target}
cargo build --release -q
TARE="$TARGET/release/tare"
DIR=$(mktemp -d /tmp/tare-table-scale-XXXXXX)
trap 'rm -rf "$DIR"' EXIT

gen() { # file seed
  python3 - "$1" "$2" "$INPUTS" <<'PY'
import json, random, sys
path, seed, inputs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(seed)
cats = ["correct"] * 85 + ["wrong"] * 2 + ["timeout"] * 8 + ["unknown"] * 3 + ["error"] * 2
with open(path, "w") as f:
    for t in range(5):
        for c in range(2):
            for i in range(inputs):
                for rep in range(2):
                    cat = rnd.choice(cats)
                    cpu = rnd.lognormvariate(-2, 1.5)
                    status = {"correct": "true", "wrong": "false", "timeout": "timeout",
                              "unknown": "unknown", "error": "error (exit 1)"}[cat]
                    score = {"correct": 2.0, "wrong": -32.0}.get(cat, 0.0)
                    f.write(json.dumps({
                        "key": f"tool{t}/cfg{c}/set/in{i:06d}.c#{rep}", "suite": "synthetic",
                        "tool": f"tool{t}", "config": f"cfg{c}", "input_set": "set",
                        "input": f"in{i:06d}.c", "rep": rep, "expected": "true",
                        "status": status, "category": cat, "score": score,
                        "wall_time": cpu * 1.05, "cpu_time": cpu, "user_time": cpu,
                        "system_time": 0.0, "peak_memory": rnd.randint(10**6, 10**9),
                        "exit_code": 0, "signal": None, "termination": "exit", "cores": [0],
                        "log": f"logs/x{i}.log", "isolated": True, "finished_at": 0.0}) + "\n")
PY
}
gen "$DIR/base.jsonl" 1
gen "$DIR/results.jsonl" 2
N=$(wc -l < "$DIR/results.jsonl")
echo "records: $N per file ($(du -h "$DIR/results.jsonl" | cut -f1)); machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

step() { # label, args...
  local label=$1; shift
  local out
  out=$( { /usr/bin/time -f "%e %M" "$TARE" table "$@" >/dev/null; } 2>&1 | tail -1 )
  printf "%-46s %7.2f s  %7.1f MB peak RSS\n" "$label" "${out% *}" "$(echo "${out#* }" | awk '{print $1/1024}')"
}
step "HTML ($N records)" "$DIR/results.jsonl" --html "$DIR/t.html"
step "CSV ($N records)" "$DIR/results.jsonl" --csv "$DIR/t.csv"
step "--dump against baseline (2 × $N records)" "$DIR/results.jsonl" --dump --baseline "$DIR/base.jsonl" || true
step "HTML, two result files (2 × $N records)" "$DIR/base.jsonl" "$DIR/results.jsonl" --html "$DIR/t2.html"
echo "HTML size: $(du -h "$DIR/t.html" | cut -f1), CSV size: $(du -h "$DIR/t.csv" | cut -f1)"
