#!/usr/bin/env bash
# Builds tare's three packages the way their users get them, and installs and uses each:
#   1. the crate as crates.io would get it: `cargo package`, then `cargo install --path` of the
#      unpacked .crate (nothing outside the package is read), `tare --version`, `tare run`;
#   2. the Debian package (scripts/deb.sh) from that binary: lintian, then unpacked into a
#      throwaway root (dpkg -x): its tare runs, `man` finds its pages, bash completes `tare ru`;
#   3. the Python wheel (maturin, `bindings = "bin"`, pyproject.toml) from the same unpacked
#      crate and target directory (so the binary is not compiled twice), installed into a fresh
#      venv: `tare --version`, `tare run`, and `tare native-worker pytest-benchmark` running
#      tests/kernels/pytest_bench under that venv's Python.
# The .crate, .deb and .whl are left in OUT_DIR. Runs offline (cargo's registry cache, as
# after `cargo test`); the tools come from .ci/services.d/52-packaging.sh (dpkg-dev, lintian,
# maturin) and 50-pytest-benchmark.sh (pytest-benchmark, seen by the venv).
#
# Usage: scripts/packages.sh [OUT_DIR]                 (default target/packages)
#   TARE_PACKAGES_PROFILE  cargo profile of the builds: release (default, what users get) or
#                          dev (what scripts/test.sh uses: it reuses the dependencies
#                          `cargo test` compiled, minutes cheaper; the packaging is the same)
#   TARE_PACKAGES_TARGET   cargo target directory (default target: the repository's own)
set -euo pipefail
trap 'echo "scripts/packages.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
repo=$PWD
out=$(mkdir -p "${1:-target/packages}" && cd "${1:-target/packages}" && pwd)
profile=${TARE_PACKAGES_PROFILE:-release}
target=$(mkdir -p "${TARE_PACKAGES_TARGET:-target}" && cd "${TARE_PACKAGES_TARGET:-target}" && pwd)
for tool in cargo maturin lintian dpkg-deb dpkg-shlibdeps python3 man; do
  command -v "$tool" >/dev/null || {
    echo "scripts/packages.sh: $tool is missing: run .ci/services.d/52-packaging.sh (man: apt-get install man-db)" >&2
    exit 2
  }
done
work=$(mktemp -d /tmp/tare-packages.XXXXXX)
trap 'rm -rf "$work"' EXIT
say() { echo "packages: $* ($((SECONDS - t0)) s)" >&2; }
t0=$SECONDS
version=$(cargo metadata --offline --no-deps --format-version 1 | python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "tare"))')

# A benchmark every package's tare must run: three runs of `true`, exported and read back.
use() { # TARE: its version line, then a short run
  local v
  v=$("$1" --version)
  [ "$v" = "tare $version" ] || { echo "scripts/packages.sh: $1 --version says '$v', not 'tare $version'" >&2; return 1; }
  "$1" run --runs 3 --export-json "$work/run.json" -- true > "$work/run.out" 2>&1 || {
    cat "$work/run.out" >&2
    return 1
  }
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert len(d["benchmarks"][0]["runs"]) == 3, d' "$work/run.json"
}

# 1. The crate: packaged without verifying (the install below is that build), unpacked
# where nothing of the repository is beside it, installed from there.
cargo package --locked --offline --no-verify --allow-dirty 2>&1 | grep -v '^warning: ignoring' >&2
crate=$target/package/tare-$version.crate
cp "$crate" "$out/"
mkdir -p "$work/crate"
tar -xzf "$crate" -C "$work/crate"
src=$work/crate/tare-$version
[ ! -e "$src/tests" ] && [ ! -e "$src/clients" ] || { echo "scripts/packages.sh: the .crate carries the tests or clients (Cargo.toml include)" >&2; exit 1; }
install_profile=()
[ "$profile" = release ] || install_profile=(--profile "$profile")
cargo install --locked --offline --quiet --path "$src" --root "$work/cargo-root" --target-dir "$target" \
  "${install_profile[@]}"
use "$work/cargo-root/bin/tare"
say "crate: $(basename "$crate") ($(du -k "$crate" | cut -f1) kB) built, installed by cargo install and ran"

# 2. The Debian package of that binary, checked by lintian (a maintainer address is given at
# release time through TARE_DEB_MAINTAINER: the placeholder's tags are the only ones let by).
deb=$(scripts/deb.sh "$work/cargo-root/bin/tare" "$out")
lintian --fail-on error,warning --suppress-tags bogus-mail-host,bogus-mail-host-in-debian-changelog "$deb" >&2
dpkg-deb -x "$deb" "$work/debroot"
use "$work/debroot/usr/bin/tare"
page=$(MANPATH=$work/debroot/usr/share/man man -w tare-run)
[ "$page" = "$work/debroot/usr/share/man/man1/tare-run.1.gz" ] || { echo "scripts/packages.sh: man -w tare-run found '$page'" >&2; exit 1; }
man -l "$page" > "$work/man.txt" 2>/dev/null
grep -Eq '^ +tare-run +- ' "$work/man.txt" || { echo "scripts/packages.sh: man cannot render $page" >&2; exit 1; }
words=$(bash -c 'source "$1" && COMP_WORDS=(tare ru) COMP_CWORD=1 COMP_LINE="tare ru" COMP_POINT=7 && _tare tare ru tare && echo "${COMPREPLY[*]}"' _ \
  "$work/debroot/usr/share/bash-completion/completions/tare")
[ "$words" = run ] || { echo "scripts/packages.sh: bash completes 'tare ru' to '$words', not run" >&2; exit 1; }
for f in usr/share/zsh/vendor-completions/_tare usr/share/fish/vendor_completions.d/tare.fish; do
  [ -s "$work/debroot/$f" ] || { echo "scripts/packages.sh: the .deb has no $f" >&2; exit 1; }
done
say "deb: $(basename "$deb") ($(dpkg-deb -f "$deb" Depends)) lintian-clean, unpacked and ran; man, bash completion"

# 3. The wheel: maturin builds the same unpacked crate in the same target directory and
# profile, so cargo finds the binary it just built up to date.
maturin_profile=(--profile "$profile")
maturin build --locked --offline --quiet "${maturin_profile[@]}" -m "$src/Cargo.toml" --target-dir "$target" \
  --out "$work/wheels" >&2
wheel=$(ls "$work"/wheels/tare_bench-"$version"-*.whl)
cp "$wheel" "$out/"
# A fresh venv; --system-site-packages lets it see the pytest-benchmark the tests use (the
# install itself reads nothing but the wheel).
python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check --no-index "$wheel"
[ -x "$work/venv/bin/tare" ] || { echo "scripts/packages.sh: the wheel put no tare in the venv's bin/" >&2; exit 1; }
use "$work/venv/bin/tare"
# `tare native-worker pytest-benchmark` with the venv's Python first on PATH (an activated venv).
cp tests/kernels/pytest_bench/test_suite.py "$work/test_suite.py"
PATH=$work/venv/bin:$PATH VIRTUAL_ENV=$work/venv tare kernels "tare native-worker pytest-benchmark $work/test_suite.py" \
  --filter 'test_sum/256' -r 2 --sample-stop 'runs >= 3' --sample-time 2ms --seed 5 \
  --export-json "$work/kernels.json" > "$work/kernels.out" 2>&1 || { cat "$work/kernels.out" >&2; exit 1; }
python3 - "$work/kernels.json" "$work/venv/bin/python" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
b = d["benchmarks"]
assert [x["name"] for x in b] == ["test_sum/256/python"], [x["name"] for x in b]
client = b[0]["extra"]["kernel"]["client"]
assert sys.argv[2] in client and "pytest-benchmark " in client, client
EOF
say "wheel: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) kB) installed in a fresh venv and ran; native-worker pytest-benchmark with the venv's python"
ls -l "$out" >&2
