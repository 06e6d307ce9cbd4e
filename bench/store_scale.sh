#!/usr/bin/env bash
# Scale of the history store: ingest 1,000,000 runs (10,000 commits × 100 runs) and query one
# benchmark's trend over 10,000 commits, in SQLite and in PostgreSQL (the server of
# .ci/services.d/20-postgresql.sh, or TARE_TEST_POSTGRES). Goals: ingest ≤ 10 s, query ≤ 100 ms.
#
#   bash bench/store_scale.sh                  # COMMITS=10000 RUNS=100
set -euo pipefail
cd "$(dirname "$0")/.."
COMMITS=${COMMITS:-10000}
RUNS=${RUNS:-100}
URL=${TARE_TEST_POSTGRES:-$(cat /run/tare-ci/postgres.url 2>/dev/null || true)}
DIR=$(mktemp -d /tmp/tare-store-scale-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
args=(--commits "$COMMITS" --runs "$RUNS" --sqlite "$DIR/history.sqlite")
if [ -n "$URL" ]; then
  args+=(--postgres "$URL")
else
  echo "no PostgreSQL (run .ci/services.d/20-postgresql.sh or set TARE_TEST_POSTGRES): SQLite only" >&2
fi
cargo run --release -q --example store_scale -- "${args[@]}"
