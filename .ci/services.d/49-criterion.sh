#!/bin/sh
# Criterion.rs for tests/kernels_criterion.rs (tare kernels driving a Criterion.rs bench target
# through `tare native-worker criterion`): builds tests/kernels/criterion (criterion 0.5 from
# crates.io, pinned by its Cargo.lock) into /var/cache/tare-ci/criterion/target (about 2
# minutes cold, seconds when cached; later builds need no network), twice: as it is, and with
# TARE_SLOWER_HASH=200 (its `hash` benchmark three times the work). Copies both executables to
# /var/cache/tare-ci/criterion/suite-{a,slow} and writes that directory to
# /run/tare-ci/criterion.path. Without cargo or crates.io (and no cache) the path file is not
# written and the tests that need it skip, naming this script.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
suite="$here/tests/kernels/criterion"
cache=/var/cache/tare-ci/criterion
mkdir -p "$cache" /run/tare-ci
rm -f /run/tare-ci/criterion.path
export CARGO_TARGET_DIR="$cache/target"
exe() {
    # The bench executable's path from `cargo bench --no-run --message-format=json`.
    sed -n 's/.*"kind":\["bench"\].*"executable":"\([^"]*\)".*/\1/p' | tail -n 1
}
build() {
    timeout 600 cargo bench --locked --no-run --bench suite --message-format=json \
        --manifest-path "$suite/Cargo.toml" 2>"$cache/build.log" | exe
}
a=$(build) || a=
slow=$(TARE_SLOWER_HASH=200 build) || slow=
if [ -n "$a" ] && [ -n "$slow" ] && [ -x "$a" ] && [ -x "$slow" ]; then
    cp "$slow" "$cache/suite-slow"
    # The plain build last, so the target directory holds it for the tests that build.
    a=$(build)
    cp "$a" "$cache/suite-a"
    printf '%s\n' "$cache" >/run/tare-ci/criterion.path
    echo "49-criterion: suite built in $cache" >&2
else
    echo "49-criterion: could not build tests/kernels/criterion (no cargo or crates.io?): $(tail -n 1 "$cache/build.log")" >&2
fi
