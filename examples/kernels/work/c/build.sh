#!/usr/bin/env bash
# Builds the C work worker in place (./work) from clients/c; fast when up to date.
# ./build.sh --print-command prints the absolute command that starts the worker.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
client="$here/../../../../clients/c"
client="$(cd "$client" && pwd)"
if [ ! -x "$here/work" ] || [ "$here/work.c" -nt "$here/work" ] || [ "$client/tare_worker.c" -nt "$here/work" ] \
  || [ "$client/tare_worker.h" -nt "$here/work" ]; then
  ${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$client" -o "$here/work.tmp.$$" "$here/work.c" "$client/tare_worker.c" -lm -pthread
  mv "$here/work.tmp.$$" "$here/work"
fi
if [ "${1:-}" = "--print-command" ]; then
  echo "$here/work"
fi
