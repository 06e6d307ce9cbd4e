#!/bin/sh
# pyperf for tests/kernels_native.rs (tare kernels driving a pyperf script through
# `tare native-worker pyperf`). A no-op when python3 can import pyperf (as here); otherwise a
# pip install of pyperf (about 10 s), falling back to the distribution's package.
set -eu
if python3 -c 'import pyperf' 2>/dev/null; then
    exit 0
fi
timeout 300 python3 -m pip install -q --disable-pip-version-check pyperf 2>/dev/null ||
    timeout 300 python3 -m pip install -q --disable-pip-version-check --break-system-packages pyperf 2>/dev/null || {
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get install -y --no-install-recommends python3-pyperf >/dev/null 2>&1 || {
        timeout 300 apt-get update >/dev/null 2>&1
        timeout 600 apt-get install -y --no-install-recommends python3-pyperf >/dev/null
    }
}
python3 -c 'import pyperf; print("pyperf", pyperf.__version__)'
