#!/usr/bin/env bash
# The C client's own tests: `make test` in clients/c (a fake master driving real worker
# processes, the blur checksum against examples/kernels/blur/CHECKSUMS), after checking that
# CHECKSUMS is what the plain-Python reference computes. About 5 s here.
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
need=()
command -v cc >/dev/null || need+=(gcc libc6-dev)
command -v make >/dev/null || need+=(make)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  echo "40-clients-c: installing ${need[*]}" >&2
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
echo "40-clients-c: examples/kernels/blur/reference.py --check" >&2
timeout 120 python3 examples/kernels/blur/reference.py --check
echo "40-clients-c: make -C clients/c test" >&2
make -s -C clients/c clean
timeout 300 make -s -C clients/c test
