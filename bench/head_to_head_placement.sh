#!/usr/bin/env bash
# `tare kernels --baseline` A/A (issue 41): does a verdict between two identical kernels follow
# the code's placement (two copies of one loop at different addresses), or the procedure?
# Measures, does not assert:
#
#   bench/head_to_head_placement.sh [K] [VARIANTS]
#
# Builds variants of the C work example (examples/kernels/work/c/work.c) into a temporary
# directory, each with two A/A kernels beside `base`:
#   `same`  the very function of `base` (one copy of the loop: nothing placed differently);
#   `copy`  a second function with the same code (its own address; -fno-ipa-icf keeps GCC
#           from folding it into `base`'s).
# VARIANTS (default "plain aligned swapped"):
#   plain    -O2, `copy` defined after `base`'s body;
#   aligned  -O2 -falign-functions=64 -falign-loops=64 (both loops on a 64-byte boundary);
#   swapped  -O2, `copy` defined before `base`'s body (the two addresses exchanged).
# For each variant, K sessions (default 4) of `--baseline base --filter '^(base|same|copy)$'`
# with the defaults; one line a comparison: ratio, interval, half-width, processes, verdict,
# and the loops' addresses (nm). If a verdict follows `copy` (and changes sign with `swapped`
# or goes with `aligned`), it is placement; if it falls on `same` as often, the procedure.
#
# TARE names the binary (default target/debug/tare, built); OUT keeps the sessions' JSON and a
# summary (default: a temporary directory, removed).
set -euo pipefail
K=${1:-4}
VARIANTS=${2:-plain aligned swapped}
here="$(cd "$(dirname "$0")/.." && pwd)"
TARE=${TARE:-$here/target/debug/tare}
if [ -z "${OUT:-}" ]; then OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT; fi
mkdir -p "$OUT"
client="$here/clients/c"
src="$here/examples/kernels/work/c/work.c"
copy_fn='static void work_body_copy(void *state) {
    work_state *s = state;
    double x = s->x;
    for (long long i = 0; i < s->n; i++) x = x * 0.999999 + 0.5;
    s->x = x;
    TARE_DO_NOT_OPTIMIZE(s->x);
}'
build() { # VARIANT -> path of the worker
  local v=$1 c="$OUT/work-$1.c" flags="-O2 -fno-ipa-icf"
  python3 - "$src" "$c" "$v" "$copy_fn" <<'PY'
import sys
src, dst, variant, copy_fn = sys.argv[1:5]
text = open(src).read()
body = "/* One loop: s->n multiply-adds, each waiting on the one before. */"
assert body in text
if variant == "swapped":
    text = text.replace(body, copy_fn + "\n\n" + body)
else:
    text = text.replace("static int work_teardown", copy_fn + "\n\nstatic int work_teardown")
# `copy`: base's setup, the copy's body.
text = text.replace(
    "static void add(const char *name, const char *doc, tare_setup_fn setup) {",
    "static void add_body(const char *name, const char *doc, tare_setup_fn setup, void (*body)(void *)) {\n"
    "    tare_kernel *k = tare_register(name, doc);\n"
    "    tare_param(k, \"n\", \"20000\", \"multiply-adds of the baseline per loop\");\n"
    "    tare_on_setup(k, setup);\n    tare_on_body(k, body);\n    tare_on_teardown(k, work_teardown);\n}\n\n"
    "static void add(const char *name, const char *doc, tare_setup_fn setup) {")
text = text.replace('    add("more1",', '    add_body("copy", "a copy of base\'s code", setup_1, work_body_copy);\n    add("more1",')
open(dst, "w").write(text)
PY
  [ "$v" = aligned ] && flags="$flags -falign-functions=64 -falign-loops=64"
  # shellcheck disable=SC2086
  cc -std=c11 $flags -Wall -Wextra -I"$client" -o "$OUT/work-$v" "$c" "$client/tare_worker.c" -lm -pthread
  echo "$OUT/work-$v"
}
for v in $VARIANTS; do
  w=$(build "$v")
  addr=$(nm "$w" | awk '/ work_body$/ {b=$1} / work_body_copy$/ {c=$1} END {print "work_body " b ", work_body_copy " c}')
  echo "== $v: $addr"
  for i in $(seq 1 "$K"); do
    s=$(date +%s.%N)
    "$TARE" kernels --baseline base "$w" --filter '^(base|same|copy)$' --style none \
      --export-json "$OUT/$v-$i.json" >/dev/null 2>&1 || echo "session $i failed"
    e=$(date +%s.%N)
    python3 - "$OUT/$v-$i.json" "$v-$i" "$(echo "$e - $s" | bc)" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["extra"]["head_to_head"]
for c in v["comparisons"]:
    d = c["verdict"] or {}
    half = (d.get("high", 0) / d.get("low", 1)) ** 0.5 - 1 if d else float("nan")
    print("%s %-5s %s %.4f [%.4f, %.4f] ±%.2f%% %2d processes %-26s %.1fs load %s" % (
        sys.argv[2], c["kernel"], c["time"], d.get("ratio", 0), d.get("low", 0), d.get("high", 0),
        100 * half, len(c["processes"]), d.get("verdict") or "none", float(sys.argv[3]), sys.argv[4]))
PY
  done
done | tee "$OUT/summary.txt"
echo "verdicts: same $(grep -c -E ' same .* (slower|faster) ' "$OUT/summary.txt" || true), copy $(grep -c -E ' copy .* (slower|faster) ' "$OUT/summary.txt" || true) of $(grep -c ' same ' "$OUT/summary.txt" || true) sessions"
