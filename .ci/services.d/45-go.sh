#!/bin/sh
# Go for tests/kernels_native.rs (tare kernels driving testing.B through `tare native-worker go`).
# Installs golang-go when `go` is missing (about 40 s here); then fetches a real suite nobody
# here wrote, github.com/cespare/xxhash/v2 v2.3.0 (every benchmark a b.Run sub-benchmark), into
# the module cache through the Go proxy (GOPROXY as the environment sets it; a no-op when it is
# cached) and writes its directory to /run/tare-ci/go-xxhash.path. Without the network the
# path file is not written and the tests that need it skip, naming this script.
set -eu
if ! command -v go >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get install -y --no-install-recommends golang-go >/dev/null 2>&1 || {
        timeout 300 apt-get update >/dev/null 2>&1
        timeout 600 apt-get install -y --no-install-recommends golang-go >/dev/null
    }
fi
go version
mkdir -p /run/tare-ci
rm -f /run/tare-ci/go-xxhash.path
dir=$(cd /tmp && timeout 300 go mod download -json github.com/cespare/xxhash/v2@v2.3.0 |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || dir=
if [ -n "$dir" ] && [ -f "$dir/bench_test.go" ]; then
    printf '%s\n' "$dir" >/run/tare-ci/go-xxhash.path
    echo "45-go: xxhash v2.3.0 at $dir" >&2
else
    echo "45-go: could not fetch github.com/cespare/xxhash/v2@v2.3.0 (no network or proxy?)" >&2
fi
