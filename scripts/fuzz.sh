#!/bin/sh
# Runs the property tests of tare's parsers (tests/props_parsers.rs) and of its importers
# (tests/import_robust.rs: damaged fixtures of every harness) with many cases, again and
# again with fresh random seeds, for a fixed time. Exit 0: nothing found in that time; 1: a
# property failed (proptest prints the minimal failing input: add it to tests/data/nasty/ and
# fix the parser).
#
#   scripts/fuzz.sh [SECONDS]      default 60; PROPTEST_CASES per property per round (500)
set -u
seconds=${1:-60}
cases=${PROPTEST_CASES:-500}
cd "$(dirname "$0")/.." || exit 2
# Build first, so the time goes to testing.
targets="--test props_parsers --test import_robust"
# shellcheck disable=SC2086 # $targets is a list of arguments
cargo test --locked $targets --no-run -q 2>/dev/null || cargo test --locked $targets --no-run || exit 2
end=$(( $(date +%s) + seconds ))
rounds=0
while :; do
    left=$(( end - $(date +%s) ))
    [ "$left" -gt 0 ] || break
    # shellcheck disable=SC2086
    PROPTEST_CASES=$cases timeout "$left" cargo test --locked -q $targets >/tmp/tare-fuzz.$$ 2>&1
    rc=$?
    if [ "$rc" -eq 124 ]; then
        break # time is up in the middle of a round: nothing found so far
    elif [ "$rc" -ne 0 ]; then
        grep -E "minimal failing input|Test failed|panicked" /tmp/tare-fuzz.$$ || tail -40 /tmp/tare-fuzz.$$
        rm -f /tmp/tare-fuzz.$$
        echo "fuzz: a property failed after $rounds full rounds" >&2
        exit 1
    fi
    rounds=$((rounds + 1))
done
rm -f /tmp/tare-fuzz.$$
echo "fuzz: $rounds full rounds of $cases cases per property in ${seconds}s, nothing found"
