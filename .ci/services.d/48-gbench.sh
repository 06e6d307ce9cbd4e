#!/bin/sh
# Google Benchmark for tests/kernels_gbench.rs (tare kernels driving a Google Benchmark binary
# through `tare native-worker gbench`): g++ and the distribution's libbenchmark-dev (1.7 on
# Debian 12, which cannot fix iterations), which the tests compile
# tests/kernels/gbench/suite.cpp against; and Google Benchmark v1.9.5 (which can:
# --benchmark_min_time=Nx) built from its GitHub release with cmake into
# /var/cache/tare-ci/gbench-1.9.5 (about a minute, once), its prefix written to
# /run/tare-ci/gbench-new.path. Without GitHub (and no cache) that file is not written and the
# test that needs it skips, naming this script.
set -eu
if ! command -v g++ >/dev/null 2>&1 || [ ! -f /usr/include/benchmark/benchmark.h ] ||
    ! command -v cmake >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get install -y --no-install-recommends g++ libbenchmark-dev cmake make >/dev/null 2>&1 || {
        timeout 300 apt-get update >/dev/null 2>&1
        timeout 600 apt-get install -y --no-install-recommends g++ libbenchmark-dev cmake make >/dev/null
    }
fi
dpkg-query -W -f='libbenchmark-dev ${Version}\n' libbenchmark-dev || true
mkdir -p /run/tare-ci
rm -f /run/tare-ci/gbench-new.path
v=1.9.5
cache=/var/cache/tare-ci/gbench-$v
if [ ! -f "$cache/inst/include/benchmark/benchmark.h" ]; then
    rm -rf "$cache"
    mkdir -p "$cache/src"
    if timeout 300 curl -fsSL "https://github.com/google/benchmark/archive/refs/tags/v$v.tar.gz" |
        tar -xz -C "$cache/src" --strip-components=1; then
        timeout 900 cmake -S "$cache/src" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release \
            -DBENCHMARK_ENABLE_TESTING=OFF -DBENCHMARK_ENABLE_GTEST_TESTS=OFF \
            -DBENCHMARK_ENABLE_WERROR=OFF -DCMAKE_INSTALL_PREFIX="$cache/inst" >/dev/null &&
            timeout 900 cmake --build "$cache/build" -j 2 --target install >/dev/null ||
            echo "48-gbench: building Google Benchmark v$v failed" >&2
    else
        echo "48-gbench: could not fetch Google Benchmark v$v from GitHub" >&2
    fi
fi
if [ -f "$cache/inst/include/benchmark/benchmark.h" ]; then
    printf '%s\n' "$cache/inst" >/run/tare-ci/gbench-new.path
    echo "48-gbench: Google Benchmark v$v in $cache/inst" >&2
fi
