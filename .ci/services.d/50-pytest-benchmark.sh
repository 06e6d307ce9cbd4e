#!/bin/sh
# pytest-benchmark for tests/kernels_pytest.rs (tare kernels driving a pytest-benchmark suite
# through `tare native-worker pytest-benchmark`). A no-op when python3 can import pytest and
# pytest_benchmark (as here); otherwise a pip install of both (about 10 s), falling back to
# the distribution's package.
set -eu
if python3 -c 'import pytest, pytest_benchmark' 2>/dev/null; then
    exit 0
fi
timeout 300 python3 -m pip install -q --disable-pip-version-check pytest pytest-benchmark 2>/dev/null ||
    timeout 300 python3 -m pip install -q --disable-pip-version-check --break-system-packages pytest pytest-benchmark 2>/dev/null || {
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get install -y --no-install-recommends python3-pytest-benchmark >/dev/null 2>&1 || {
        timeout 300 apt-get update >/dev/null 2>&1
        timeout 600 apt-get install -y --no-install-recommends python3-pytest-benchmark >/dev/null
    }
}
python3 -c 'import pytest_benchmark; print("pytest-benchmark", pytest_benchmark.__version__)'
