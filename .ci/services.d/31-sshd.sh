#!/usr/bin/env bash
# The ssh server binary for tests/remote_ssh.rs. The test starts its own sshd (generated
# config and keys) inside a network namespace it creates and removes; this step only
# installs openssh-server (and iproute2 for `ip netns`) when missing, and starts nothing.
# Takes ~20 s here when it installs, ~0 s when present. The tests enter the namespace with
# `nsenter --net` (util-linux), not `ip netns exec`, which would remount /sys and hide cgroups.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
need=()
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null || need+=(openssh-client)
command -v ip >/dev/null || need+=(iproute2)
command -v nsenter >/dev/null || need+=(util-linux)
if [ ${#need[@]} -gt 0 ]; then
  echo "31-sshd: installing ${need[*]}" >&2
  apt-get update -qq
  # policy-rc.d (where present) keeps the package from starting a system sshd.
  apt-get install -y -qq -o DPkg::Lock::Timeout=300 "${need[@]}" >/dev/null
fi
mkdir -p /run/tare-ci /run/sshd
/usr/sbin/sshd -V 2>&1 | head -1 >&2 || true
touch /run/tare-ci/sshd.ok
