#!/usr/bin/env bash
# Builds the Debian 12 guest used by tests/vm/run.sh: a systemd machine booted with the unified
# cgroup hierarchy only (cgroup v2) on Linux 6.12 (Debian 12's newer kernel, from its security
# suite: since 6.12 `memory.peak` can be reset through an open descriptor, which tare's shared run
# group relies on; the 6.1 kernel's path, a fresh group per run, is the one limits use), with a non-root user `bench` who lingers, so that
# `systemd-run --user` works without a login. Output, in DIR: rootfs.img (ext4, the whole disk is
# the file system, no partition table), vmlinuz and initrd.img (booted with qemu -kernel/-initrd).
# The packages come from the Debian mirror this machine's apt already uses.
# Usage: tests/vm/image.sh DIR        (as root; needs debootstrap and mke2fs)
# The cache key of the image is the hash of this file: any change here rebuilds the guest.
set -euo pipefail

out=${1:?usage: image.sh DIR}
packages=systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,udev,kmod,initramfs-tools,linux-base,python3,util-linux,procps,sudo,coreutils,gzip,xz-utils,diffutils

# The first non-security Debian mirror apt uses here (deb822 .sources or one-line .list).
mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' "$f"
  done
}
url=$(mirror | head -n1)
if [ -z "$url" ]; then
  echo "image.sh: no Debian mirror found in /etc/apt/sources.list*: add one, or set TARE_VM_MIRROR" >&2
  exit 1
fi
url=${TARE_VM_MIRROR:-$url}

mkdir -p "$out"
root=$(mktemp -d "$out/rootfs.XXXXXX")
trap 'rm -rf "$root"' EXIT

debootstrap --variant=minbase --include="$packages" bookworm "$root" "$url"

# The kernel: the newest linux-image-6.12 this machine's apt knows (its lists include Debian 12's
# security suite, where the 6.12 kernel is), fetched here and installed in the guest with dpkg.
kernel_pkg() { apt-cache depends linux-image-6.12-amd64 2>/dev/null | awk '/Depends: linux-image-6\.12/ { print $2; exit }'; }
pkg=$(kernel_pkg)
if [ -z "$pkg" ]; then
  apt-get update -qq
  pkg=$(kernel_pkg)
fi
if [ -z "$pkg" ]; then
  echo "image.sh: apt knows no linux-image-6.12-amd64 (it is in Debian 12's security suite): add that suite to /etc/apt/sources.list*" >&2
  exit 1
fi
debs=$(mktemp -d "$out/debs.XXXXXX")
(cd "$debs" && apt-get download "$pkg")
cp "$debs"/*.deb "$root/tmp/"
rm -rf "$debs"
chroot "$root" /bin/sh -ec 'dpkg -i /tmp/*.deb && rm -f /tmp/*.deb'

# The guest: no root password needed (nobody logs in), a lingering user, no network.
chroot "$root" /bin/sh -ec '
  echo tare-vm > /etc/hostname
  useradd --create-home --uid 1000 --shell /bin/bash bench
  mkdir -p /var/lib/systemd/linger
  touch /var/lib/systemd/linger/bench
  printf "/dev/vda / ext4 rw,errors=remount-ro 0 0\n" > /etc/fstab
  systemctl mask serial-getty@ttyS0.service getty@tty1.service systemd-timesyncd.service \
    apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer 2>/dev/null || true
'

# The check runner: mounts the payload disk (tare + checks.sh, made fresh for each boot by
# run.sh), runs the checks with their output on the serial console, then powers off.
cat > "$root/etc/systemd/system/tare-vm.service" <<'EOF'
[Unit]
Description=tare cgroup v2 checks
After=systemd-logind.service user@1000.service
Wants=user@1000.service

[Service]
Type=oneshot
ExecStartPre=/bin/mkdir -p /payload
ExecStartPre=/bin/mount -o ro /dev/vdb /payload
ExecStart=/bin/bash /payload/checks.sh
ExecStopPost=/bin/systemctl --no-block poweroff
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
EOF
chroot "$root" systemctl enable tare-vm.service

cp -L "$root"/boot/vmlinuz-6.12* "$out/vmlinuz"
cp -L "$root"/boot/initrd.img-6.12* "$out/initrd.img"
rm -rf "$root/var/cache/apt/archives"/*.deb "$root/var/lib/apt/lists"/* 2>/dev/null || true
mke2fs -q -t ext4 -L tare-vm -d "$root" "$out/rootfs.img" 3G
echo "image.sh: built $out"
