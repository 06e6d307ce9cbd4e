#!/bin/sh
# Google Benchmark for tests/kernels_gbench.rs (tare kernels driving a Google Benchmark binary
# through `tare native-worker gbench`): g++ and the distribution's libbenchmark-dev (1.7 on
# Debian 12), which the tests compile tests/kernels/gbench/suite.cpp against. A no-op when
# both are there (as here).
set -eu
if command -v g++ >/dev/null 2>&1 && [ -f /usr/include/benchmark/benchmark.h ]; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
timeout 600 apt-get install -y --no-install-recommends g++ libbenchmark-dev >/dev/null 2>&1 || {
    timeout 300 apt-get update >/dev/null 2>&1
    timeout 600 apt-get install -y --no-install-recommends g++ libbenchmark-dev >/dev/null
}
dpkg-query -W -f='libbenchmark-dev ${Version}\n' libbenchmark-dev
