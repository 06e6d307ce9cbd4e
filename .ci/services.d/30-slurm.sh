#!/usr/bin/env bash
# A one-host Slurm cluster for tests/slurm_*.rs: Debian's slurm-wlm and munge (installed when
# missing), slurm.conf with NodeName=localhost and this machine's CPUs and memory, munged +
# slurmctld + slurmd on loopback, then wait (bounded) until sinfo shows the node idle and write
# /run/tare-ci/slurm.ok. Idempotent: a running cluster with our config is left alone.
# Takes ~40 s here when it installs and starts (apt ~25 s, cgroup probe and restart ~11 s),
# ~3 s when the cluster already runs with this config.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
need=()
# slurm-wlm = slurmctld + slurmd + slurm-client.
{ command -v slurmctld && command -v slurmd && command -v sbatch; } >/dev/null || need+=(slurm-wlm)
command -v munged >/dev/null || need+=(munge)
if [ ${#need[@]} -gt 0 ]; then
  echo "30-slurm: installing ${need[*]}" >&2
  apt-get update -qq
  # policy-rc.d (where present) keeps the packages from starting their daemons; we do.
  apt-get install -y -qq -o DPkg::Lock::Timeout=300 "${need[@]}" >/dev/null
fi

conf_dir=/etc/slurm
mkdir -p "$conf_dir" /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /run/slurm
chown slurm:slurm /var/spool/slurmctld /var/log/slurm 2>/dev/null || true

# munge: a key if none, daemon if not running.
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 0700 /etc/munge
chmod 0400 /etc/munge/munge.key
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  runuser -u munge -- /usr/sbin/munged --force
  for _ in $(seq 50); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.2; done
fi

cpus=$(nproc --all)
# Slurm wants RealMemory at most what slurmd sees; leave a margin.
mem_mb=$(awk '/MemTotal/ {print int($2/1024*0.95)}' /proc/meminfo)
sockets=$(lscpu -p=SOCKET | grep -v '^#' | sort -u | wc -l)
cores=$(lscpu -p=SOCKET,CORE | grep -v '^#' | sort -u | wc -l)
threads=$(( cpus / cores ))
cores_per_socket=$(( cores / sockets ))
# Job tracking: proctrack/cgroup (each job in its own cgroup v1 subtree, which tare then
# measures below) when it works on this host; else proctrack/linuxproc (no job cgroup; tare
# says so in one line). $1 = cgroup | linuxproc.
write_conf() {
  if [ "$1" = cgroup ]; then
    proctrack=proctrack/cgroup; taskplugin=task/cgroup,task/affinity
    cat > "$conf_dir/cgroup.conf" <<CG
# Written by .ci/services.d/30-slurm.sh.
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=yes
ConstrainRAMSpace=yes
CG
  else
    proctrack=proctrack/linuxproc; taskplugin=task/affinity
    rm -f "$conf_dir/cgroup.conf"
  fi
  cat > "$conf_dir/slurm.conf.new" <<CONF
# Written by .ci/services.d/30-slurm.sh: a one-host cluster for tare's tests.
ClusterName=tare-ci
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=$proctrack
TaskPlugin=$taskplugin
ReturnToService=2
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=300
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
MaxArraySize=10001
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus Sockets=$sockets CoresPerSocket=$cores_per_socket ThreadsPerCore=$threads RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
}
running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
# (Re)starts the daemons when the config changed; waits (at most 60 s) for an idle node.
start() {
  if ! { [ -f "$conf_dir/slurm.conf" ] && cmp -s "$conf_dir/slurm.conf" "$conf_dir/slurm.conf.new"; }; then
    mv "$conf_dir/slurm.conf.new" "$conf_dir/slurm.conf"
    for p in /run/slurm/slurmd.pid /run/slurm/slurmctld.pid; do
      running $p && kill "$(cat $p)" || true
    done
    for _ in $(seq 50); do running /run/slurm/slurmd.pid || running /run/slurm/slurmctld.pid || break; sleep 0.2; done
  else
    rm -f "$conf_dir/slurm.conf.new"
  fi
  running /run/slurm/slurmctld.pid || /usr/sbin/slurmctld
  running /run/slurm/slurmd.pid || /usr/sbin/slurmd
  for _ in $(seq 120); do
    state=$(sinfo -h -N -o '%T' 2>/dev/null | head -1 || true)
    case "$state" in
      idle|mixed|allocated) return 0 ;;
      down*|drain*) scontrol update NodeName=localhost State=RESUME 2>/dev/null || true ;;
    esac
    sleep 0.5
  done
  echo "30-slurm: the node did not become idle (state: ${state:-none}); see /var/log/slurm/" >&2
  tail -5 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
  return 1
}
# A job that must run in its own cgroup (bounded).
probe_cgroup() {
  f=$(mktemp /var/tmp/tare-slurm-probe.XXXXXX)
  timeout 60 sbatch --wait -Q -t 1 -c 1 --mem=50M -o "$f" --wrap 'cat /proc/self/cgroup' >/dev/null 2>&1 || true
  ok=1; grep -q 'job_' "$f" && ok=0
  rm -f "$f"
  return $ok
}
rm -f /run/tare-ci/slurm.ok
write_conf cgroup
if start && probe_cgroup; then
  echo "30-slurm: proctrack/cgroup works here: jobs get their own cgroups" >&2
else
  echo "30-slurm: proctrack/cgroup does not work here; using proctrack/linuxproc" >&2
  write_conf linuxproc
  start || exit 1
fi
mkdir -p /run/tare-ci
sinfo >&2
touch /run/tare-ci/slurm.ok
