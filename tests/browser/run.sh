#!/usr/bin/env bash
# Browser test of the HTML report: runs check.js (or TARE_BROWSER_CHECK) on a report in
# Debian's chromium, driven by playwright-core from tests/browser/node_modules. Installs
# nothing and needs no network: `.ci/services.d/40-browser.sh` (run as root; scripts/test.sh
# runs it) installs chromium, node and npm and runs `npm ci` here.
#
# Usage: tests/browser/run.sh REPORT.html SCREENSHOT.png [check.js options]
# Exit: 0 passed; 77 skipped (something is missing: one line on stdout names it and the setup
# command); anything else failed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
chromium="${CHROMIUM:-/usr/bin/chromium}"
setup="run .ci/services.d/40-browser.sh as root"
missing=()
[ -x "$chromium" ] || missing+=("$chromium")
command -v node >/dev/null || missing+=(node)
if [ ! -d "$here/node_modules/playwright-core" ] || [ ! -d "$here/node_modules/pngjs" ]; then
  missing+=("$here/node_modules")
elif [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
  missing+=("$here/node_modules matching package-lock.json")
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "SKIP: missing ${missing[*]}: $setup"
  exit 77
fi
# Paths in the arguments stay relative to the caller's directory.
# TARE_BROWSER_CHECK picks another check script of this directory (check_history.js).
CHROMIUM="$chromium" exec node "$here/${TARE_BROWSER_CHECK:-check.js}" "$@"
