#!/usr/bin/env bash
# Prepares the JavaScript blur worker in place: links the local client (clients/js) into
# node_modules with `npm install` (a file: dependency, nothing downloaded). Idempotent; does
# nothing when the link is there. --print-command prints the absolute command that starts it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "${1:-}" = "--print-command" ]; then
  echo "node $here/blur.mjs"
  exit 0
fi
for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "build.sh: error: $tool is not installed; install Node.js 18 or newer (apt-get install nodejs npm)" >&2
    exit 1
  fi
done
cd "$here"
if [ -e node_modules/tare-worker/index.js ]; then
  exit 0
fi
npm install --no-audit --no-fund --loglevel=error >/dev/null
