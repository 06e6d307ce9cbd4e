#!/bin/sh
# Runs the property tests of tare's parsers (tests/props_parsers.rs), of its importers
# (tests/import_robust.rs: damaged fixtures of every harness) and of the whole CLI
# (tests/fuzz_cli.rs: every command that reads a file given random and damaged files of every
# format, and random argument lists for every subcommand) with many cases, again and again
# with fresh random seeds, for a fixed time. Exit 0: nothing found in that time; 1: a
# property failed (proptest prints the minimal failing input: add it to tests/data/nasty/ and
# fix the parser).
#
#   scripts/fuzz.sh [SECONDS]      default 60; PROPTEST_CASES per parser property per round
#                                  (500), CLI_CASES per CLI property per round (30: each case
#                                  starts tare about eight times)
set -u
seconds=${1:-60}
cases=${PROPTEST_CASES:-500}
cli_cases=${CLI_CASES:-30}
cd "$(dirname "$0")/.." || exit 2
# Build first, so the time goes to testing.
targets="--test props_parsers --test import_robust --test fuzz_cli"
# shellcheck disable=SC2086 # $targets is a list of arguments
cargo test --locked $targets --no-run -q 2>/dev/null || cargo test --locked $targets --no-run || exit 2
end=$(( $(date +%s) + seconds ))
rounds=0
while :; do
    left=$(( end - $(date +%s) ))
    [ "$left" -gt 0 ] || break
    # shellcheck disable=SC2086
    PROPTEST_CASES=$cases timeout "$left" cargo test --locked -q --test props_parsers --test import_robust >/tmp/tare-fuzz.$$ 2>&1
    rc=$?
    if [ "$rc" -eq 0 ]; then
        left=$(( end - $(date +%s) ))
        [ "$left" -gt 0 ] || break
        PROPTEST_CASES=$cli_cases timeout "$left" cargo test --locked -q --test fuzz_cli >/tmp/tare-fuzz.$$ 2>&1
        rc=$?
    fi
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
echo "fuzz: $rounds full rounds of $cases cases per parser property and $cli_cases per CLI property in ${seconds}s, nothing found"
