#!/usr/bin/env bash
# The Python client's own tests: `pip install -e clients/python[test]` into a virtual
# environment cached under /var/cache/tare-ci, then pytest. About 20 s here with the cache
# warm (the first run creates the environment and downloads pytest).
set -euo pipefail
cd "$(dirname "$0")/../.."
export DEBIAN_FRONTEND=noninteractive
need=()
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  echo "42-clients-python: installing ${need[*]}" >&2
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
venv=/var/cache/tare-ci/venv-clients-python
mkdir -p /var/cache/tare-ci
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import sys' 2>/dev/null; then
  echo "42-clients-python: creating $venv" >&2
  rm -rf "$venv"
  timeout 120 python3 -m venv "$venv"
fi
echo "42-clients-python: pip install -e clients/python[test]" >&2
timeout 300 "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "clients/python[test]"
echo "42-clients-python: pytest" >&2
cd clients/python
timeout 300 "$venv/bin/python" -m pytest -q -p no:cacheprovider
