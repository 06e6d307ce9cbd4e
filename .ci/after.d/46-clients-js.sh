#!/usr/bin/env bash
# The JavaScript client's own tests (clients/js): `node --test` with a fake master that drives
# test workers and the JS blur example over a real socketpair, then `tsc` checks the hand-written
# types (index.d.ts) against test/types-check.ts. Installs Node and npm when missing; npm's
# downloads (typescript, @types/node: dev dependencies only) are cached in /var/cache/tare-ci/npm.
# Takes about 40 s here (2-core VM under load, warm cache; the tests themselves about 10 s).
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "46-clients-js: installing nodejs and npm" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
export npm_config_cache=/var/cache/tare-ci/npm
mkdir -p "$npm_config_cache"
echo "46-clients-js: node $(node --version); npm test and tsc in clients/js" >&2
cd clients/js
timeout 300 npm install --no-audit --no-fund --loglevel=error
timeout 300 npm test
timeout 120 npm run typecheck
