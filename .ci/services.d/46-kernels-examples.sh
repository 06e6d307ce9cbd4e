#!/bin/sh
# Builds the blur example of every client (examples/kernels/blur/<lang>/build.sh) before
# `cargo test`, so tests/kernels_e2e.rs and the README's kernels line (tests/readme_commands.rs)
# find them built, and a build that fails shows here with its own output. The toolchains are
# the clients' (.ci/after.d/40-clients-*.sh install theirs; this machine has gcc, g++, cmake, go,
# java, node, python3). Idempotent: each build.sh is fast when already built. A missing example
# is reported, not fatal here (the tests fail naming it). About 1–3 minutes from scratch.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
status=0
for lang in c cpp python rust go java js; do
    dir="$root/examples/kernels/blur/$lang"
    if [ ! -x "$dir/build.sh" ]; then
        echo "46-kernels-examples: $dir/build.sh missing" >&2
        continue
    fi
    echo "46-kernels-examples: building $lang" >&2
    if ! (cd "$dir" && timeout 600 ./build.sh) >&2; then
        echo "46-kernels-examples: the $lang example failed to build" >&2
        status=1
    fi
done
exit $status
