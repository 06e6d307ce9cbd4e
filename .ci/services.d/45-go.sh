#!/bin/sh
# Go for tests/kernels_native.rs (tare kernels driving testing.B through `tare native-worker go`).
# Installs golang-go when `go` is missing; a no-op when it is there (about 40 s to install here).
set -eu
if command -v go >/dev/null 2>&1; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
timeout 600 apt-get install -y --no-install-recommends golang-go >/dev/null 2>&1 || {
    timeout 300 apt-get update >/dev/null 2>&1
    timeout 600 apt-get install -y --no-install-recommends golang-go >/dev/null
}
go version
