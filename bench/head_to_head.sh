#!/usr/bin/env bash
# `tare kernels --baseline` (issue 46): A/A verdicts and power inside one process, against the
# same kernels in separate processes (today's path). Measures, does not assert:
#
#   bench/head_to_head.sh [K]
#
# Workers: examples/kernels/work/{c,python} (`base`; `same`, the very same function; `more1`,
# `more3`: 1% and 3% more multiply-adds). For each language:
#
#  (a) A/A: K sessions (default 20) of `--baseline base --filter '^(base|same)$'` with the
#      defaults: how many end "slower" or "faster" (nominal: alpha 0.05), each session's time
#      and interval half-width;
#  (b) power: K/4 sessions (at least 3) of `--baseline base --filter '^(base|more1|more3)$'`:
#      verdicts of more1 and more3, time, interval;
#  (c) separate processes (today's path): kernel `base` of the worker against `base` of the
#      same worker with WORK_SCALE=1.03 (`env WORK_SCALE=1.03 WORKER`: 3% more work), and
#      against itself (A/A), each once with --time-budget 2m: verdict, ratio, time.
#
# TARE names the binary (default target/debug/tare, built); OUT keeps the sessions' JSON
# (default: a temporary directory, removed); LANGS (default "c python").
set -euo pipefail
K=${1:-20}
here="$(cd "$(dirname "$0")/.." && pwd)"
TARE=${TARE:-$here/target/debug/tare}
LANGS=${LANGS:-c python}
if [ -z "${OUT:-}" ]; then OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT; fi
mkdir -p "$OUT"
summary() { # FILE LABEL SECONDS: one line a comparison
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["extra"]["head_to_head"]
for c in v["comparisons"]:
    d = c["verdict"] or {}
    half = (d.get("high", 0) / d.get("low", 1)) ** 0.5 - 1 if d else float("nan")
    print("%s %s %s %.4f [%.4f, %.4f] ±%.2f%% %d processes %s %.1fs" % (sys.argv[2], c["kernel"], c["time"],
          d.get("ratio", 0), d.get("low", 0), d.get("high", 0), 100 * half, len(c["processes"]),
          (d.get("verdict") or "none").replace(" ", "_"), float(sys.argv[3])))
PY
}
for lang in $LANGS; do
  w=$("$here/examples/kernels/work/$lang/build.sh" --print-command)
  echo "== $lang: (a) A/A, $K sessions"
  for i in $(seq 1 "$K"); do
    s=$(date +%s.%N)
    "$TARE" kernels --baseline base "$w" --filter '^(base|same)$' --style none \
      --export-json "$OUT/aa-$lang-$i.json" >/dev/null 2>&1 || echo "session $i failed"
    e=$(date +%s.%N)
    summary "$OUT/aa-$lang-$i.json" "aa-$lang-$i" "$(echo "$e - $s" | bc)"
  done | tee "$OUT/aa-$lang.txt"
  echo "A/A verdicts: $(grep -c -E ' (slower|faster) ' "$OUT/aa-$lang.txt" || true) of $(wc -l <"$OUT/aa-$lang.txt")"
  P=$(( K / 4 < 3 ? 3 : K / 4 ))
  echo "== $lang: (b) power, $P sessions"
  for i in $(seq 1 "$P"); do
    s=$(date +%s.%N)
    "$TARE" kernels --baseline base "$w" --filter '^(base|more1|more3)$' --style none \
      --export-json "$OUT/pw-$lang-$i.json" >/dev/null 2>&1 || echo "session $i failed"
    e=$(date +%s.%N)
    summary "$OUT/pw-$lang-$i.json" "power-$lang-$i" "$(echo "$e - $s" | bc)"
  done
  echo "== $lang: (c) separate processes (today's path), --time-budget 2m"
  for scale in 1.03 1; do
    s=$(date +%s.%N)
    "$TARE" kernels "$w" "env WORK_SCALE=$scale $w" -n base -n other --filter '^base$' \
      --time-budget 2m --style none --export-json "$OUT/sep-$lang-$scale.json" >/dev/null 2>&1 || true
    e=$(date +%s.%N)
    python3 - "$OUT/sep-$lang-$scale.json" "$scale" "$(echo "$e - $s" | bc)" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for c in v["comparisons"]:
    n = max(len(b["extra"]["invocations"]) for b in v["benchmarks"])
    print("separate x%s %.4f [%.4f, %.4f] %s %.1fs, %d processes a side" % (sys.argv[2], c["ratio"],
          c["ratio_ci_low"], c["ratio_ci_high"], c["verdict"], float(sys.argv[3]), n))
PY
  done
done
