#!/usr/bin/env bash
# What the browser tests (tests/report_browser.rs, tests/store_browser.rs through
# tests/browser/run.sh) need, installed before `cargo test` so that the tests themselves never
# touch the network: Debian's chromium, node and npm (apt, when missing), then `npm ci` of
# tests/browser (playwright-core and pngjs, pinned by its package-lock.json) into
# tests/browser/node_modules of the tree this script is run from (scripts/test.sh runs it in
# the copy .ci/run tests). Never downloads a browser build (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1:
# playwright-core drives /usr/bin/chromium). npm's downloads are cached in
# /var/cache/tare-ci/npm. Idempotent: a no-op (~0.1 s) when everything is there and
# node_modules matches the lock file; `npm ci` takes ~5 s here with a warm cache; an apt
# install of chromium ~60 s.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
root=$(cd "$(dirname "$0")/../.." && pwd)
dir="$root/tests/browser"
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
# nodejs from another source (nodesource) carries its own npm; ask apt only for what is missing.
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
  echo "40-browser: installing ${need[*]}" >&2
  timeout 300 apt-get update -qq
  timeout 600 apt-get install -y -qq -o DPkg::Lock::Timeout=300 "${need[@]}" >/dev/null
fi
if [ -d "$dir/node_modules/playwright-core" ] && [ -d "$dir/node_modules/pngjs" ] \
   && ! [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
  echo "40-browser: $dir/node_modules is up to date" >&2
else
  export npm_config_cache=/var/cache/tare-ci/npm
  mkdir -p "$npm_config_cache"
  echo "40-browser: npm ci in $dir" >&2
  (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 timeout 300 npm ci --prefer-offline \
    --no-audit --no-fund --loglevel=error) >&2
fi
echo "40-browser: $(/usr/bin/chromium --version 2>/dev/null | head -1), node $(node --version)" >&2
