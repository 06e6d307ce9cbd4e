#!/usr/bin/env bash
# Browser test of the HTML report: makes sure Debian's chromium and the npm packages are there,
# then runs check.js on a report.
#
# Usage: tests/browser/run.sh REPORT.html SCREENSHOT.png [check.js options]
# Exit: 0 passed; 77 skipped (no chromium and not in CI; set CI=true or TARE_BROWSER_INSTALL=1
# to install it); anything else failed.
#
# Never downloads a browser build: playwright-core drives /usr/bin/chromium from apt.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
chromium="${CHROMIUM:-/usr/bin/chromium}"
want_install=""
if [ -n "${CI:-}" ] || [ "${TARE_BROWSER_INSTALL:-}" = "1" ]; then want_install=1; fi

if [ ! -x "$chromium" ]; then
  if [ -z "$want_install" ]; then
    echo "SKIP: $chromium is not installed (set CI=true or TARE_BROWSER_INSTALL=1 to apt-get install it)"
    exit 77
  fi
  echo "installing chromium with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [ -z "$want_install" ]; then
    echo "SKIP: node and npm are needed for the browser test"
    exit 77
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq nodejs npm >/dev/null
fi

if [ ! -d "$here/node_modules/playwright-core" ] || [ ! -d "$here/node_modules/pngjs" ] \
   || [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
  (cd "$here" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
# Paths in the arguments stay relative to the caller's directory.
# TARE_BROWSER_CHECK picks another check script of this directory (check_history.js).
CHROMIUM="$chromium" exec node "$here/${TARE_BROWSER_CHECK:-check.js}" "$@"
