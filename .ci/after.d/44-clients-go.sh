#!/usr/bin/env bash
# The Go client's own tests (clients/go, `go vet` + `go test`): a fake master drives the test
# binary and the Go blur example over a real socketpair. Installs Go when missing; the build and
# module caches live under /var/cache/tare-ci/go. Takes about 5 s here with a warm cache (2-core VM
# under load), about 2 minutes cold.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v go >/dev/null; then
  echo "44-clients-go: installing Go (golang-go)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null
fi
export GOCACHE=/var/cache/tare-ci/go/build GOMODCACHE=/var/cache/tare-ci/go/mod GOFLAGS=-mod=mod
mkdir -p "$GOCACHE" "$GOMODCACHE"
echo "44-clients-go: $(go version); go vet and go test in clients/go" >&2
cd clients/go
unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
  echo "44-clients-go: error: gofmt would change: $unformatted" >&2
  exit 1
fi
timeout 120 go vet ./...
timeout 600 go test -count=1 -v ./...
