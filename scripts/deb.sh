#!/usr/bin/env bash
# Builds tare's Debian package from a tare binary: the binary in /usr/bin, the manual pages
# (`tare man --dir`) in /usr/share/man/man1, the shell completions (`tare completions
# bash|zsh|fish`) where Debian's bash-completion, zsh and fish look for them, the licences in
# /usr/share/doc/tare/copyright, and a Depends computed by dpkg-shlibdeps from the libraries
# the binary links (libc6 and libgcc-s1 for a stock build: SQLite is bundled, no TLS).
#
# Usage: scripts/deb.sh TARE_BINARY OUT_DIR      (prints the path of the .deb it wrote)
# Needs dpkg-deb and dpkg-shlibdeps (apt-get install dpkg-dev), gzip and strip (binutils).
# TARE_DEB_COMPRESS: dpkg-deb's -Z (default xz; the guest checks use gzip, faster to build).
#
# A script rather than cargo-deb: dpkg-dev is already on a Debian machine, while building
# cargo-deb costs minutes of compiling in CI; the package has one binary and generated files.
set -euo pipefail
trap 'echo "scripts/deb.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

bin=${1:?usage: scripts/deb.sh TARE_BINARY OUT_DIR}
out=${2:?usage: scripts/deb.sh TARE_BINARY OUT_DIR}
repo=$(cd "$(dirname "$0")/.." && pwd)
for tool in dpkg-deb dpkg-shlibdeps strip gzip; do
  command -v "$tool" >/dev/null || {
    echo "scripts/deb.sh: $tool is missing: apt-get install -y dpkg-dev binutils gzip" >&2
    exit 2
  }
done
[ -x "$bin" ] || { echo "scripts/deb.sh: $bin is not an executable tare binary" >&2; exit 2; }

# The version is the binary's own (`tare 0.1.0`), so the package says what it holds.
version=$("$bin" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
work=$(mktemp -d /tmp/tare-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/man/man1" "$root/usr/share/doc/tare" \
  "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
  "$root/usr/share/fish/vendor_completions.d"

install -m 0755 "$bin" "$root/usr/bin/tare"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/tare"
"$root/usr/bin/tare" man --dir "$root/usr/share/man/man1"
gzip -9n "$root"/usr/share/man/man1/*.1
"$root/usr/bin/tare" completions bash > "$root/usr/share/bash-completion/completions/tare"
"$root/usr/bin/tare" completions zsh > "$root/usr/share/zsh/vendor-completions/_tare"
"$root/usr/bin/tare" completions fish > "$root/usr/share/fish/vendor_completions.d/tare.fish"

# Debian's machine-readable copyright file: the licence text of each of tare's two licences.
{
  cat <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: tare
Comment: tare is built with its locked Rust dependencies linked in statically; their
 licences are in each crate's sources (Cargo.lock lists them).

Files: *
Copyright: the tare developers
License: MIT or Apache-2.0

License: MIT
EOF
  sed -e 's/^$/./' -e 's/^/ /' "$repo/LICENSE-MIT"
  echo
  echo "License: Apache-2.0"
  echo " On Debian systems the full text of the Apache License 2.0 is in"
  echo " /usr/share/common-licenses/Apache-2.0."
} > "$root/usr/share/doc/tare/copyright"
# A native package's changelog: one entry for the version it holds.
cat > "$work/changelog" <<EOF
tare ($version) unstable; urgency=medium

  * Built from the tare repository by scripts/deb.sh.

 -- ${TARE_DEB_MAINTAINER:-tare developers <tare@localhost>}  $(date -R -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}")
EOF
gzip -9n -c "$work/changelog" > "$root/usr/share/doc/tare/changelog.gz"
find "$root/usr" -type d -exec chmod 0755 {} +
find "$root/usr/share" -type f -exec chmod 0644 {} +

# Depends: what the binary really links, as dpkg-shlibdeps reads it from the shlibs/symbols
# files of the installed libraries (it wants a debian/control beside it).
mkdir -p "$work/src/debian"
printf 'Source: tare\n\nPackage: tare\nArchitecture: any\n' > "$work/src/debian/control"
depends=$(cd "$work/src" && dpkg-shlibdeps -O "$root/usr/bin/tare" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "scripts/deb.sh: dpkg-shlibdeps found no libraries for $bin" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<EOF
Package: tare
Version: $version
Architecture: $arch
Maintainer: ${TARE_DEB_MAINTAINER:-tare developers <tare@localhost>}
Installed-Size: $size
Depends: $depends
Section: devel
Priority: optional
Description: benchmarks whose numbers can be trusted
 tare runs commands repeatedly and measures each run the way the kernel
 accounts it: CPU time and peak memory of the whole process tree from
 cgroups, wall time from a monotonic clock, limits that reach every
 descendant, and nothing left running after a run. It stops when the
 estimate is as precise as asked, and says how it measured.
EOF
mkdir -p "$out"
deb=$out/tare_${version}_${arch}.deb
dpkg-deb -Z"${TARE_DEB_COMPRESS:-xz}" --root-owner-group --build "$root" "$deb" >/dev/null
echo "$deb"
