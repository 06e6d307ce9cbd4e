#!/usr/bin/env bash
# Prepares the JavaScript blur worker in place: links the local client (clients/js) into
# node_modules with `npm install` (a file: dependency, nothing downloaded). Idempotent; does
# nothing when the link is there. --print-command prepares if needed, then prints the absolute
# command that starts the worker (messages go to stderr).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "build.sh: error: $tool is not installed; install Node.js 18 or newer (apt-get install nodejs npm)" >&2
    exit 1
  fi
done
if [ ! -e "$here/node_modules/tare-worker/index.js" ]; then
  (cd "$here" && npm install --no-audit --no-fund --loglevel=error >&2)
fi
if [ "${1:-}" = "--print-command" ]; then
  echo "node $here/blur.mjs"
fi
