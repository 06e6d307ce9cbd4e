#!/bin/sh
# JMH for tests/kernels_jmh.rs (tare kernels driving a JMH benchmarks jar through
# `tare native-worker jmh`): a JDK and Maven (installed when missing), then
# tests/kernels/jmh (JMH 1.37 from Maven Central, cached in /var/cache/tare-ci/m2) built twice
# in /var/cache/tare-ci/jmh: as it is, and with SuiteBench.SLOWER_HASH = 100 (its `hash` twice
# the work); the jars go to /var/cache/tare-ci/jmh/{a,slow}.jar and that directory to
# /run/tare-ci/jmh.path. About a minute when Maven's cache is warm. Without Maven Central (and
# no cache) the path file is not written and the tests that need it skip, naming this script.
set -eu
if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get install -y --no-install-recommends default-jdk-headless maven >/dev/null 2>&1 || {
        timeout 300 apt-get update >/dev/null 2>&1
        timeout 600 apt-get install -y --no-install-recommends default-jdk-headless maven >/dev/null
    }
fi
here=$(cd "$(dirname "$0")/../.." && pwd)
cache=/var/cache/tare-ci/jmh
mkdir -p "$cache" /run/tare-ci
rm -f /run/tare-ci/jmh.path
build() { # $1: a, slow; $2: SLOWER_HASH
    rm -rf "$cache/$1"
    mkdir -p "$cache/$1"
    cp -r "$here/tests/kernels/jmh/pom.xml" "$here/tests/kernels/jmh/src" "$cache/$1/"
    sed -i "s/SLOWER_HASH = 0;/SLOWER_HASH = $2;/" "$cache/$1/src/main/java/dev/tare/suite/SuiteBench.java"
    (cd "$cache/$1" && timeout 600 mvn -B -q -ntp -Dstyle.color=never \
        -Dmaven.repo.local=/var/cache/tare-ci/m2 package >"$cache/$1.log" 2>&1) &&
        cp "$cache/$1/target/benchmarks.jar" "$cache/$1.jar"
}
if build a 0 && build slow 100; then
    printf '%s\n' "$cache" >/run/tare-ci/jmh.path
    echo "51-jmh: suite built in $cache" >&2
else
    echo "51-jmh: could not build tests/kernels/jmh (no Maven Central?): $(tail -n 3 "$cache"/*.log | tr '\n' ' ')" >&2
fi
