#!/usr/bin/env bash
# Builds the C++ blur worker in place (./blur) from clients/cpp and clients/c; fast when up to date.
# ./build.sh --print-command prints the absolute command that starts the worker.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
c="$root/clients/c"
cpp="$root/clients/cpp"
stale=0
[ -x "$here/blur" ] || stale=1
for f in "$here/blur.cpp" "$here/blur.hpp" "$c/tare_worker.c" "$c/tare_worker.h" "$cpp/tare_worker.hpp"; do
  [ "$stale" = 1 ] || [ "$f" -nt "$here/blur" ] && stale=1
done
if [ "$stale" = 1 ]; then
  ${CC:-cc} -std=c11 -O2 -c -o "$here/tare_worker.$$.o" "$c/tare_worker.c"
  ${CXX:-c++} -std=c++17 -O2 -Wall -Wextra -I"$c" -I"$cpp" -o "$here/blur.tmp.$$" "$here/blur.cpp" "$here/tare_worker.$$.o" -lm -pthread
  mv "$here/blur.tmp.$$" "$here/blur"
  rm -f "$here/tare_worker.$$.o"
fi
if [ "${1:-}" = "--print-command" ]; then
  echo "$here/blur"
fi
