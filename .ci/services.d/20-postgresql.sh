#!/usr/bin/env bash
# PostgreSQL for the history store's tests (tests/store_*.rs): Debian's postgresql, a cluster of
# its own on loopback (127.0.0.1:54329, data in /var/lib/tare-ci/postgres), a role and database
# `tare`, and the connection URL in /run/tare-ci/postgres.url. Idempotent: a running cluster is
# reused. Takes ~9 s here the first time (initdb + start), 0.3 s when the cluster already
# runs; an apt install of postgresql adds ~30-60 s.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
port=54329
data=/var/lib/tare-ci/postgres
url="postgresql://tare:tare@127.0.0.1:${port}/tare"
mkdir -p /run/tare-ci

bindir=""
find_bindir() {
  bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
}
find_bindir
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "installing postgresql with apt-get" >&2
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
  find_bindir
fi
if [ -z "$bindir" ]; then
  echo "postgresql's programs were not found under /usr/lib/postgresql" >&2
  exit 1
fi
as_pg() { runuser -u postgres -- "$@"; }

if ! "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port"; then
  if [ ! -s "$data/PG_VERSION" ]; then
    echo "creating a PostgreSQL cluster in $data" >&2
    mkdir -p "$data"
    chown postgres:postgres "$data"
    pw="$(mktemp)"
    echo postgres > "$pw"
    chown postgres "$pw"
    as_pg "$bindir/initdb" -D "$data" -A scram-sha-256 -U postgres --pwfile="$pw" >/dev/null
    rm -f "$pw"
  fi
  mkdir -p /run/tare-ci/pgsock
  chown postgres:postgres /run/tare-ci/pgsock
  as_pg "$bindir/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=/run/tare-ci/pgsock -c fsync=off" start >/dev/null
fi
export PGPASSWORD=postgres
psql_admin() { "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -qtAc "$1"; }
if [ "$(psql_admin "SELECT 1 FROM pg_roles WHERE rolname = 'tare'")" != "1" ]; then
  psql_admin "CREATE ROLE tare LOGIN PASSWORD 'tare'"
fi
if [ "$(psql_admin "SELECT 1 FROM pg_database WHERE datname = 'tare'")" != "1" ]; then
  psql_admin "CREATE DATABASE tare OWNER tare"
fi
echo "$url" > /run/tare-ci/postgres.url
echo "PostgreSQL ready: $url" >&2
