#!/usr/bin/env bash
# The kernels quickstart in one command: builds the blur worker of every language whose
# toolchain is here (C, C++, Python, Rust, Go, Java, JavaScript), says which it skipped and why,
# and measures the `blur` kernel of all that built head to head with `tare kernels`. Arguments
# go to `tare kernels` (e.g. `-r 2 --export-html blur.html`). TARE names the tare binary
# (default: `tare` on PATH, else this checkout's target/release or target/debug build);
# LANGS picks languages (default: all seven).
#
#     examples/kernels/blur/run.sh -r 2 --export-html blur.html
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
if [ -z "${TARE:-}" ]; then
  if command -v tare >/dev/null; then TARE=tare
  elif [ -x "$root/target/release/tare" ]; then TARE=$root/target/release/tare
  elif [ -x "$root/target/debug/tare" ]; then TARE=$root/target/debug/tare
  else
    echo "run.sh: error: no tare found: build it (cargo build --release in $root) or set TARE" >&2
    exit 2
  fi
fi
programs=()
skipped=()
for lang in ${LANGS:-c cpp python rust go java js}; do
  build="$here/$lang/build.sh"
  if [ ! -x "$build" ]; then
    echo "run.sh: error: no language '$lang' here (choose from c cpp python rust go java js)" >&2
    exit 2
  fi
  printf 'building %-7s ' "$lang" >&2
  start=$(date +%s.%N)
  err=$(mktemp)
  # Bounded: a first Rust, Java or Go build fetches nothing but may compile for a while.
  if cmd=$(timeout 600 "$build" --print-command 2>"$err"); then
    printf 'ok (%.1f s)\n' "$(echo "$(date +%s.%N) - $start" | bc -l)" >&2
    programs+=("$cmd")
  else
    why=$(grep -m1 -E 'error|not (found|installed)' "$err" || tail -n 1 "$err")
    why=${why#build.sh: error: }
    echo "skipped: ${why:-its build failed}" >&2
    skipped+=("$lang")
  fi
  rm -f "$err"
done
if [ ${#programs[@]} -eq 0 ]; then
  echo "run.sh: error: no blur worker could be built (skipped: ${skipped[*]}); install one of the toolchains above" >&2
  exit 2
fi
if [ ${#skipped[@]} -gt 0 ]; then
  echo "measuring ${#programs[@]} of 7 languages (skipped: ${skipped[*]})" >&2
fi
exec "$TARE" kernels "${programs[@]}" --filter '^blur$' -L size 64 "$@"
