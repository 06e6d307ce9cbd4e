#!/usr/bin/env bash
# Builds the Go blur worker in place (./blur) with the local client (go.mod replaces
# tare.dev/worker with clients/go); idempotent, and fast when nothing changed (go's cache).
# ./build.sh --print-command builds if needed, then prints the absolute command that starts the
# worker (build messages go to stderr).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v go >/dev/null; then
  echo "build.sh: error: go is not installed; install Go 1.21 or newer (apt-get install golang-go)" >&2
  exit 1
fi
(cd "$here" && go build -o blur . >&2)
if [ "${1:-}" = "--print-command" ]; then
  echo "$here/blur"
fi
