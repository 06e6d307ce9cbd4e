#!/usr/bin/env bash
# Nothing to build for Python: the `worker` script runs work.py with clients/python on the path.
# ./build.sh --print-command prints the absolute command that starts the worker.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
command -v "${PYTHON:-python3}" >/dev/null || { echo "build.sh: error: python3 not found; install Python 3.9 or newer" >&2; exit 1; }
if [ "${1:-}" = "--print-command" ]; then
  echo "$here/worker"
fi
