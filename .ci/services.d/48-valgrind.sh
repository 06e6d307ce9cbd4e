#!/bin/sh
# valgrind for tests/counters_valgrind.rs (tare run --counters counted by Callgrind), and
# stress-ng for the load those tests run beside (they fall back to busy loops without it).
# A no-op when both are installed; otherwise the distribution's packages (apt keeps the .debs
# in its cache), each step bounded.
set -eu
need=""
command -v valgrind >/dev/null 2>&1 || need="$need valgrind"
command -v stress-ng >/dev/null 2>&1 || need="$need stress-ng"
if [ -n "$need" ]; then
    export DEBIAN_FRONTEND=noninteractive
    echo "48-valgrind: installing$need" >&2
    # shellcheck disable=SC2086
    timeout 600 apt-get install -y -qq --no-install-recommends $need >/dev/null 2>&1 || {
        timeout 300 apt-get update -qq >/dev/null 2>&1
        # shellcheck disable=SC2086
        timeout 600 apt-get install -y -qq --no-install-recommends $need >/dev/null
    }
fi
valgrind --version
