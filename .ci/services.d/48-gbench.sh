#!/bin/sh
# Google Benchmark for tests/kernels_gbench.rs (tare kernels driving a Google Benchmark binary
# through `tare native-worker gbench`): g++ and the distribution's libbenchmark-dev (1.7 on
# Debian 12, which cannot fix iterations), which the tests compile
# tests/kernels/gbench/suite.cpp against; and Google Benchmark 1.9.1 (which can:
# --benchmark_min_time=Nx), built with cmake from Debian's own source package of it (the
# upstream tarball `benchmark_1.9.1.orig.tar.gz` of Debian 13, fetched from the pool of the
# Debian mirror apt is configured with, its SHA-256 checked against the one pinned here) into
# /var/cache/tare-ci/gbench-1.9.1 (about a minute, once), its prefix written to
# /run/tare-ci/gbench-new.path. Without the mirror (and no cache) that file is not written and
# the test that needs it skips, naming this script.
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
v=1.9.1
sha=32131c08ee31eeff2c8968d7e874f3cb648034377dfc32a4c377fa8796d84981
cache=/var/cache/tare-ci/gbench-$v
if [ ! -f "$cache/inst/include/benchmark/benchmark.h" ]; then
    rm -rf "$cache"
    mkdir -p "$cache/src"
    # The main Debian archive apt uses (not the security one): its pool has every release's
    # sources, so Debian 13's upstream tarball is there for a Debian 12 machine too.
    mirror=$(apt-get indextargets --format '$(REPO_URI)' 2>/dev/null | grep -v security | head -n 1)
    tgz="$cache/benchmark_$v.orig.tar.gz"
    if [ -n "$mirror" ] &&
        timeout 300 curl -fsSL -o "$tgz" "${mirror%/}/pool/main/b/benchmark/benchmark_$v.orig.tar.gz" &&
        echo "$sha  $tgz" | sha256sum -c --quiet - &&
        tar -xzf "$tgz" -C "$cache/src" --strip-components=1; then
        timeout 900 cmake -S "$cache/src" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release \
            -DBENCHMARK_ENABLE_TESTING=OFF -DBENCHMARK_ENABLE_GTEST_TESTS=OFF \
            -DBENCHMARK_ENABLE_WERROR=OFF -DCMAKE_INSTALL_PREFIX="$cache/inst" >/dev/null &&
            timeout 900 cmake --build "$cache/build" -j 2 --target install >/dev/null ||
            echo "48-gbench: building Google Benchmark $v failed" >&2
    else
        echo "48-gbench: could not fetch Google Benchmark $v's source from the Debian mirror (${mirror:-none configured})" >&2
    fi
    rm -f "$tgz"
fi
if [ -f "$cache/inst/include/benchmark/benchmark.h" ]; then
    printf '%s\n' "$cache/inst" >/run/tare-ci/gbench-new.path
    echo "48-gbench: Google Benchmark v$v in $cache/inst" >&2
fi
