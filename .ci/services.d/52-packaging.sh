#!/bin/sh
# The tools scripts/packages.sh builds tare's packages with (the .crate, the .deb, the wheel;
# it runs offline): dpkg-dev (dpkg-shlibdeps, for the .deb's Depends; also what
# tests/vm/run.sh builds the guest's .deb with), lintian (the .deb's checks), man-db (man -w
# of the .deb's pages) and maturin (the wheel); and mkdocs, which scripts/test.sh builds the
# user guide with (mkdocs.yml). A no-op where all are present; otherwise apt for the first
# three (about 40 s for lintian's Perl libraries) and a pip install of maturin (a prebuilt
# binary wheel) and mkdocs (pure Python), about 10 s.
set -eu
export DEBIAN_FRONTEND=noninteractive
need=""
command -v dpkg-shlibdeps >/dev/null || need="$need dpkg-dev"
command -v lintian >/dev/null || need="$need lintian"
command -v man >/dev/null || need="$need man-db"
if [ -n "$need" ]; then
    # shellcheck disable=SC2086 # a list of package names
    timeout 600 apt-get install -y -qq --no-install-recommends $need >/dev/null 2>&1 || {
        timeout 300 apt-get update -qq >/dev/null 2>&1
        timeout 600 apt-get install -y -qq --no-install-recommends $need >/dev/null
    }
fi
for tool in maturin mkdocs; do
    command -v "$tool" >/dev/null && continue
    timeout 300 python3 -m pip install -q --disable-pip-version-check "$tool" 2>/dev/null ||
        timeout 300 python3 -m pip install -q --disable-pip-version-check --break-system-packages "$tool"
done
echo "packaging tools: $(dpkg-shlibdeps --version | head -n1); $(lintian --version); $(maturin --version); $(mkdocs --version | cut -d' ' -f1-3)"
