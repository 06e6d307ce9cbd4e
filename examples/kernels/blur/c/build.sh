#!/usr/bin/env bash
# Builds the C blur worker in place (./blur) from clients/c; fast when up to date.
# ./build.sh --print-command prints the absolute command that starts the worker.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
client="$here/../../../../clients/c"
client="$(cd "$client" && pwd)"
if [ ! -x "$here/blur" ] || [ "$here/blur.c" -nt "$here/blur" ] || [ "$client/tare_worker.c" -nt "$here/blur" ] \
  || [ "$client/tare_worker.h" -nt "$here/blur" ]; then
  ${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$client" -o "$here/blur.tmp.$$" "$here/blur.c" "$client/tare_worker.c" -lm -pthread
  mv "$here/blur.tmp.$$" "$here/blur"
fi
if [ "${1:-}" = "--print-command" ]; then
  echo "$here/blur"
fi
