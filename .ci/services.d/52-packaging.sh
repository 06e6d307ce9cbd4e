#!/bin/sh
# The tools scripts/packages.sh builds tare's packages with (the .crate, the .deb, the wheel;
# it runs offline): dpkg-dev (dpkg-shlibdeps, for the .deb's Depends; also what
# tests/vm/run.sh builds the guest's .deb with), lintian (the .deb's checks) and maturin (the
# wheel). A no-op where all three are present; otherwise apt for the first two (about 40 s for
# lintian's Perl libraries) and a pip install of maturin (a prebuilt binary wheel, about 5 s).
set -eu
export DEBIAN_FRONTEND=noninteractive
need=""
command -v dpkg-shlibdeps >/dev/null || need="$need dpkg-dev"
command -v lintian >/dev/null || need="$need lintian"
if [ -n "$need" ]; then
    # shellcheck disable=SC2086 # a list of package names
    timeout 600 apt-get install -y -qq --no-install-recommends $need >/dev/null 2>&1 || {
        timeout 300 apt-get update -qq >/dev/null 2>&1
        timeout 600 apt-get install -y -qq --no-install-recommends $need >/dev/null
    }
fi
if ! command -v maturin >/dev/null; then
    timeout 300 python3 -m pip install -q --disable-pip-version-check maturin 2>/dev/null ||
        timeout 300 python3 -m pip install -q --disable-pip-version-check --break-system-packages maturin
fi
echo "packaging tools: $(dpkg-shlibdeps --version | head -n1); lintian $(lintian --version | awk '{print $2}'); $(maturin --version)"
