#!/usr/bin/env bash
# The test command: sets up what the tests need on this machine (packages, PostgreSQL, Slurm,
# sshd, Go, pyperf, the cgroup v2 guest image — each step bounded in time), then runs
# everything: fmt, clippy, `cargo test`, the fuzz properties, the cgroup v2 guest checks and
# the client libraries' own tests. Run it as root from anywhere in a checkout:
#
#     sudo scripts/test.sh
#
# It ends with one line listing what was skipped (tests that could not run for a missing
# service or tool, each with the command that provides it), or "skipped: nothing". With
# TARE_FAIL_ON_SKIP=1 (what .ci/run sets) any skip fails the run. `cargo test` alone is the
# quick loop; see the guide's Development page (docs/guide/development.md) for what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

# Tools the tests run: python3 (memory test), taskset/runuser (util-linux), gzip/xz (example
# suite), cc (C programs of the bias tests), hyperfine (benchmarks), strace (the per-run
# system-call budget, tests/syscall_budget.rs), curl (scripts/ci-gate.sh's server mode,
# tests/ci_gate.rs).
need_apt=()
command -v python3 >/dev/null || need_apt+=(python3)
command -v taskset >/dev/null || need_apt+=(util-linux)
command -v gzip >/dev/null || need_apt+=(gzip)
command -v xz >/dev/null || need_apt+=(xz-utils)
command -v cmp >/dev/null || need_apt+=(diffutils)
command -v cc >/dev/null || need_apt+=(gcc libc6-dev)
command -v hyperfine >/dev/null || need_apt+=(hyperfine)
command -v strace >/dev/null || need_apt+=(strace)
command -v curl >/dev/null || need_apt+=(curl)
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
if ! command -v cargo >/dev/null; then
  echo "cargo is missing: install Rust (rustup) first" >&2
  exit 1
fi

cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
# Every test that skips says so through tests/common/skip.rs, which appends a line here.
skips=$(mktemp /tmp/tare-skips.XXXXXX)
export TARE_SKIP_LOG=$skips
# Every step runs even after one fails; the run fails at the end if any did, and then prints
# the last lines of each failed step again, so the end of the log says what went wrong.
failed=()
logs=$(mktemp -d /tmp/tare-ci-logs.XXXXXX)
step() { # NAME COMMAND...: runs COMMAND, its output teed into a log named after NAME
  local name=$1 log
  shift
  log=$logs/$(printf '%s' "$name" | tr -c 'A-Za-z0-9._-' '_').log
  echo "== $name" >&2
  if ! "$@" 2>&1 | tee "$log"; then
    failed+=("$name")
  fi
}
# Servers and tools the Rust tests need (PostgreSQL, Slurm, sshd, ...): each script in
# .ci/services.d installs what is missing and starts it, bounded in time, and exports nothing
# (tests find services through the files the scripts write under /run/tare-ci).
mkdir -p /run/tare-ci
for s in .ci/services.d/*.sh; do
  [ -e "$s" ] || continue
  step "$s" timeout 600 bash "$s"
done
# Every test binary and tare itself built first (a step of its own, so a build failure is named
# as one); the tests then run with nothing left to compile.
step "cargo test --no-run" cargo test --locked --no-run

# cgroup v2 in a real guest (this machine's cgroups are v1): Debian 12 under QEMU, see
# tests/vm/run.sh. The image is cached in /var/cache/tare-vm; building it where the cache is
# empty takes about 8 minutes (bounded to 20 by run.sh), booting and checking about 7.
need_vm=()
command -v qemu-system-x86_64 >/dev/null || need_vm+=(qemu-system-x86)
command -v debootstrap >/dev/null || need_vm+=(debootstrap)
command -v mke2fs >/dev/null || need_vm+=(e2fsprogs)
command -v dpkg-shlibdeps >/dev/null || need_vm+=(dpkg-dev) # the guest's .deb (scripts/deb.sh)
if [ ${#need_vm[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq "${need_vm[@]}" >/dev/null
fi
# The debug binary just built: a release build would cost more than it saves here. The guest
# runs on one core (single-threaded emulation) for about 8 minutes, beside `cargo test` and the
# steps after it (the tests mostly wait on processes, sleeps and servers; it used to run after
# them and the run waited 8 minutes for it at the end), its output kept in its log and shown
# when it ends.
vm_log=$logs/cgroup_v2_guest_checks.log
echo "== cgroup v2 guest checks (beside the steps below; output at their end)" >&2
timeout 2100 tests/vm/run.sh target/debug/tare > "$vm_log" 2>&1 &
vm_pid=$!

# --no-fail-fast: every test target runs even after one fails.
step "cargo test" cargo test --locked --no-fail-fast

# Property tests of every parser with fresh seeds, bounded in time (nothing found = exit 0).
step "scripts/fuzz.sh" scripts/fuzz.sh 60

# The packages (the .crate, the .deb, the Python wheel), each built and installed and used
# (scripts/packages.sh): in the dev profile, so that cargo reuses the dependencies `cargo test`
# just compiled and builds tare once for the three (a release build would add minutes); the
# packaging is the same. Then the user guide's site, every page in its nav (mkdocs.yml).
step "scripts/packages.sh" env TARE_PACKAGES_PROFILE=dev timeout 900 scripts/packages.sh
step "guide (mkdocs build --strict)" mkdocs build --strict --quiet

# Steps after the core tests: client libraries' own test tools, end-to-end checks that need
# them. Each script is bounded in time and runs even after another failed.
for s in .ci/after.d/*.sh; do
  [ -e "$s" ] || continue
  step "$s" timeout 900 bash "$s"
done

echo "== cgroup v2 guest checks" >&2
if ! wait "$vm_pid"; then
  failed+=("cgroup v2 guest checks")
fi
cat "$vm_log" >&2


# What did not run, and how to get it: one line per thing missing.
if [ -s "$skips" ]; then
  n=$(cut -f1 "$skips" | sort -u | wc -l)
  echo "== skipped: $n tests did not run:" >&2
  sort -u "$skips" | awk -F'\t' '{k=$2"\t"$3; c[k]++; if (!(k in t)) t[k]=$1} END {for (k in c) {split(k, p, "\t"); printf "   %d test(s) need %s: %s (e.g. %s)\n", c[k], p[1], p[2], t[k]}}' | sort >&2
  if [ "${TARE_FAIL_ON_SKIP:-0}" = 1 ]; then
    failed+=("skipped tests (TARE_FAIL_ON_SKIP=1: everything must run here)")
  fi
else
  echo "== skipped: nothing" >&2
fi
rm -f "$skips"

if [ ${#failed[@]} -gt 0 ]; then
  for name in "${failed[@]}"; do
    log=$logs/$(printf '%s' "$name" | tr -c 'A-Za-z0-9._-' '_').log
    [ -f "$log" ] || { echo "== failed: $name" >&2; continue; }
    echo "== failed: $name; its failure lines, then its last 25 lines:" >&2
    grep -E -A1 "panicked at|FAILED|^error|^    [a-z_0-9:]+$|CHECK .* FAIL|did not finish|failed at line" "$log" | tail -n 40 >&2 || true
    echo "-- last lines:" >&2
    tail -n 25 "$log" >&2
  done
  echo "tests failed: ${failed[*]}" >&2
  exit 1
fi
