#!/bin/bash
# The checks tests/vm/run.sh runs inside the cgroup v2 guest, as root from a plain system
# service (tare-vm.service). Each check prints `CHECK <context>/<name> PASS|FAIL <details>` on
# the console; the last line is `TARE-VM-DONE`. Contexts are the ways the README tells people
# to run tare on cgroup v2:
#   service            as root, straight from a system service (no delegation)
#   delegated-service  as root, a service with Delegate=yes (systemd-run --wait -p Delegate=yes)
#   scope              as root, systemd-run --scope -p Delegate=yes tare …
#   user-scope         as the user bench: systemd-run --user --scope -p Delegate=yes tare …
#   cgroup-parent      as root with TARE_CGROUP_PARENT=/sys/fs/cgroup/bench (an empty cgroup)
#   service-after-pids the service again, after a --pids-limit run in the same cgroup
# and, run from inside by `checks.sh inside CTX` (see `inside` below), the places CI jobs run:
#   container-rw       a container with its own cgroup namespace and a writable cgroup2 mount
#                      (docker run --privileged --cgroupns=private), made with unshare
#   container-ro       the same with cgroup2 mounted read-only (docker's default mount)
#   user-parent        as bench, in a delegated scope holding their shell, TARE_CGROUP_PARENT below it
# and the Debian package (scripts/deb.sh) installed with dpkg and used:
#   deb                dpkg -i, tare run from /usr/bin, the manual page, bash completion
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
T=/payload/tare
CG=/sys/fs/cgroup
BENCH_UID=$(id -u bench)
USER_ENV=(env "XDG_RUNTIME_DIR=/run/user/$BENCH_UID" "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/$BENCH_UID/bus")

echo "INFO kernel $(uname -r); $(nproc) CPUs; root cgroup controllers: $(cat $CG/cgroup.controllers); subtree: $(cat $CG/cgroup.subtree_control)"
echo "INFO tare-vm.service cgroup: $(cut -d: -f3 /proc/self/cgroup)"

# The user's manager (lingering) and its bus must be up for systemd-run --user.
for _ in $(seq 1 120); do
  [ -S "/run/user/$BENCH_UID/bus" ] && break
  sleep 0.5
done
[ -S "/run/user/$BENCH_UID/bus" ] || echo "INFO no user bus at /run/user/$BENCH_UID/bus"

result() { # NAME OK DETAILS
  if [ "$2" = 0 ]; then echo "CHECK $CTX/$1 PASS $3"; else echo "CHECK $CTX/$1 FAIL $3"; fi
}

# Runs tare in the current context; stdout and stderr go to $W/out.
t() {
  case $CTX in
    service | service-after-pids) "$T" "$@" ;;
    delegated-service) systemd-run --quiet --wait --pipe --collect -p Delegate=yes -- "$T" "$@" ;;
    scope) systemd-run --quiet --scope --collect -p Delegate=yes -- "$T" "$@" ;;
    cgroup-parent) TARE_CGROUP_PARENT=$CG/bench "$T" "$@" ;;
    user-scope) runuser -u bench -- "${USER_ENV[@]}" systemd-run --user --quiet --scope -p Delegate=yes -- "$T" "$@" ;;
    container-rw | container-ro | user-parent) "$T" "$@" ;;
  esac > "$W/out" 2>&1 < /dev/null
}

# One check on tare run's JSON export: prints DETAIL, passes when OK holds (Python
# expressions over the document `d`; one interpreter per check, it is slow under emulation).
jcheck() { # NAME FILE DETAIL OK
  local name=$1 out ok
  out=$(python3 -c "
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    v = eval(sys.argv[2])
    ok = eval(sys.argv[3])
except Exception as e:
    v, ok = 'n/a (%s: %s)' % (type(e).__name__, e), False
print(v)
sys.exit(0 if ok else 1)" "$2" "$3" "$4" 2>&1)
  ok=$?
  result "$name" $ok "$out $(tail -n 1 "$W/out" | cut -c1-200)"
}

# State of the cgroups tare starts in and their parents, read with shell built-ins only (a
# forked reader would show up in cgroup.procs).
snapshot() { # OUT
  local d f l
  : > "$1"
  for d in "$CG" "$CG/system.slice" "$CG/system.slice/tare-vm.service" "$CG/user.slice" \
    "$CG/user.slice/user-$BENCH_UID.slice" "$CG/user.slice/user-$BENCH_UID.slice/user@$BENCH_UID.service" \
    "$CG/user.slice/user-$BENCH_UID.slice/user@$BENCH_UID.service/app.slice" "$CG/bench"; do
    for f in cgroup.type cgroup.subtree_control; do
      [ -f "$d/$f" ] || continue
      while IFS= read -r l; do echo "$d/$f: $l"; done < "$d/$f" >> "$1"
    done
  done
  while IFS= read -r l; do echo "tare-vm.service procs: $l"; done < "$CG/system.slice/tare-vm.service/cgroup.procs" >> "$1"
}

leftovers() {
  find "$CG" -name 'tare-*' ! -name 'tare-vm.service' -type d 2>/dev/null | head -n 5 | tr '\n' ' '
}

checks() { # full|short
  local full=$1
  W=/var/tmp/tare-vm/$CTX
  rm -rf "$W"; mkdir -p "$W"; chmod 777 "$W"
  snapshot "$W/before"

  # Backend.
  t run --runs 1 --export-json "$W/b.json" -- sh -c "cat /proc/self/cgroup > $W/where"
  echo "INFO $CTX: a run's cgroup: $(cat "$W/where" 2>/dev/null)"
  jcheck backend "$W/b.json" '(d["method"]["kind"], d["method"]["warnings"])' \
    'd["method"]["kind"] == "cgroup-v2" and d["method"]["warnings"] == []'

  if [ "$full" = full ]; then
  # CPU time of a child that is never waited for and is killed: it spins until it used 1 s.
  # (utime + stime are fields 14 and 15 of /proc/PID/stat, in ticks of 1/100 s.)
  t run --runs 1 --export-json "$W/cpu.json" -- sh -c '
sh -c "while :; do :; done" &
p=$!
while :; do
  read -r st < /proc/$p/stat
  set -- ${st##*) }
  [ $((${12} + ${13})) -ge 100 ] && break
  sleep 0.05
done
kill -KILL $p'
  jcheck cpu-unwaited-child "$W/cpu.json" '"cpu_time=%s s (spun 1 s)" % d["benchmarks"][0]["runs"][-1]["cpu_time"]' \
    '0.9 <= d["benchmarks"][0]["runs"][-1]["cpu_time"] < 30'

  fi

  # Peak memory of a child touching 300 MB.
  t run --runs 1 --export-json "$W/mem.json" -- python3 -c 'b = b"x" * (300 << 20)'
  jcheck peak-memory "$W/mem.json" '"peak_memory=%s" % d["benchmarks"][0]["runs"][-1]["peak_memory"]' \
    '300 <= d["benchmarks"][0]["runs"][-1]["peak_memory"] / 2**20 <= 450'

  if [ "$full" = full ]; then
  # Runs without limits share one group (Linux >= 6.12: memory.peak reset through tare's
  # descriptor): every run's peak is its own, the same as in a fresh group of its own (a
  # memory limit gives each run one), and every run is in the same group.
  t run --runs 3 --export-json "$W/mem3.json" -- sh -c "cat /proc/self/cgroup >> $W/groups; python3 -c 'b = b\"x\" * (300 << 20)'"
  t run --runs 3 --memory-limit 2GB --export-json "$W/mem3-fresh.json" -- sh -c "cat /proc/self/cgroup >> $W/groups-fresh; python3 -c 'b = b\"x\" * (300 << 20)'"
  python3 - "$W" <<'EOF'
import json, sys
w = sys.argv[1]
peaks = lambda f: [r["peak_memory"] / 2**20 for r in json.load(open(f))["benchmarks"][0]["runs"]]
shared, fresh = peaks(w + "/mem3.json"), peaks(w + "/mem3-fresh.json")
groups = len(set(open(w + "/groups").read().split()))
fresh_groups = len(set(open(w + "/groups-fresh").read().split()))
ok = groups == 1 and fresh_groups >= 3 and all(abs(s / f - 1) <= 0.05 for s in shared for f in fresh)
print("INFO", "shared MiB", ["%.1f" % x for x in shared], "fresh MiB", ["%.1f" % x for x in fresh], "groups", groups, fresh_groups)
open(w + "/shared.ok", "w").write("1" if ok else "0")
EOF
  [ "$(cat "$W/shared.ok" 2>/dev/null)" = 1 ]; result shared-group $? "see the INFO line above"
  fi

  # Limits, each named as the run's termination.
  lim() { # NAME EXPECTED ARGS...
    local name=$1 want=$2
    shift 2
    t run --runs 1 --ignore-failure --export-json "$W/$name.json" "$@"
    jcheck "$name" "$W/$name.json" '"termination=" + d["benchmarks"][0]["runs"][-1]["termination"]' \
      "d['benchmarks'][0]['runs'][-1]['termination'] == '$want'"
  }
  [ "$full" = full ] && lim memory-limit memory --memory-limit 100MB -- python3 -c 'b = b"x" * (300 << 20)'
  [ "$full" = full ] && lim cpu-limit cpu --cpu-limit 1s --wall-limit 60s -- sh -c 'while :; do :; done'
  [ "$full" = full ] && lim wall-limit wall --wall-limit 1s -- sleep 30
  lim pids-limit pids --pids-limit 10 --wall-limit 60s -- sh -c 'for i in $(seq 1 50); do sleep 30 & done; wait'

  if [ "$full" = full ]; then
  # A setsid, double-forked daemon that ignores SIGTERM leaves nothing behind.
  t run --runs 1 --export-json "$W/daemon.json" -- sh -c '
(setsid sh -c "trap \"\" TERM; sleep 1234; : tare-vm-daemon" &)
sleep 0.3'
  sleep 0.5
  left=$(pgrep -f 'tare-vm-daemon|sleep 1234' | tr '\n' ' ')
  [ -z "$left" ]; result no-survivors $? "left=[$left]"

  # --cores: the run sees only CPU 1.
  t run --runs 1 --cores 1 --export-json "$W/cores.json" -- sh -c "grep Cpus_allowed_list /proc/self/status > $W/cores.txt"
  seen=$(cat "$W/cores.txt" 2>/dev/null | awk '{print $2}')
  [ "$seen" = 1 ]; result cores $? "Cpus_allowed_list=$seen"

  # An interleaved comparison of two commands.
  t run --runs 4 --export-json "$W/cmp.json" 'sleep 0.1' 'sleep 0.3'
  jcheck interleaved-comparison "$W/cmp.json" \
    '"runs_in_rounds=%d ratio=%.2f" % (sum(1 for b in d["benchmarks"] for r in b["runs"] if r.get("round") is not None), d["benchmarks"][1]["summary"]["wall_time"]["median"] / d["benchmarks"][0]["summary"]["wall_time"]["median"])' \
    'sum(1 for b in d["benchmarks"] for r in b["runs"] if r.get("round") is not None) >= 8 and 1.3 <= d["benchmarks"][1]["summary"]["wall_time"]["median"] / d["benchmarks"][0]["summary"]["wall_time"]["median"] <= 4'

  # The example suite, isolated, smaller (one repetition, text inputs).
  rm -rf "$W/suite"; cp -r /payload/suite "$W/suite"; chmod -R a+rwX "$W/suite"
  python3 - "$W/suite/compressors.toml" <<'EOF'
import re, sys
p = sys.argv[1]
s = open(p).read().replace("repetitions = 2", "repetitions = 1").replace('"inputs/*.txt"', '"inputs/tiny.txt"')
s = re.sub(r'\[\[inputs\]\]\nname = "binary"\ntasks = .*\n', "", s)
open(p, "w").write(s)
EOF
  t suite run "$W/suite/compressors.toml" --parallel 1 --output-dir "$W/suite-out"
  srec=$(python3 -c '
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
bad = [r["key"] for r in rs if not r["isolated"] or r["peak_memory"] is None or r.get("method") != "cgroup-v2"]
cats = sorted(set(r["category"] for r in rs))
print(len(rs), "runs; not isolated, no peak or method not cgroup-v2:", bad[:3], "categories:", cats)
sys.exit(1 if bad or not rs else 0)' "$W/suite-out/results.jsonl" 2>&1 | tail -n 1)
  ok=$?
  [ $ok = 0 ] && grep -q 'measuring with cgroup-v2' "$W/out"
  result suite-isolated $? "$srec; says: $(grep -m1 -io 'measur[^;]*' "$W/out")"

  fi

  # tare killed with SIGKILL mid-run: systemd removes the scope once the run's process ends.
  if [ "$CTX" = scope ] || [ "$CTX" = user-scope ]; then
    t run --runs 1 -- sleep 4 &
    sleep 2
    pgrep -x tare | xargs -r kill -KILL
    wait
    sleep 4
    l=$(leftovers)
    [ -z "$l" ]; result sigkill-leaves-nothing $? "$l"
  fi

  # Nothing tare did not create is changed, and nothing it created is left.
  snapshot "$W/after"
  d=$(diff "$W/before" "$W/after" | grep '^[<>]' | head -n 4 | tr '\n' ' ')
  [ -z "$d" ]; result cgroups-unchanged $? "$d"
  l=$(leftovers)
  [ -z "$l" ]; result no-leftover-groups $? "$l"
}

# One place a CI job runs in, checked from inside it: the shell running this (and a `sleep`,
# the place's first process) share tare's cgroup, which holds them — the case cgroup v2's
# "no internal processes" rule used to block. Peak memory within 5% of the service context's
# (the same 300 MiB process), limits, nothing left, the first process alive afterwards.
inside() { # CTX
  CTX=$1
  W=/var/tmp/tare-vm/$CTX
  rm -rf "$W"; mkdir -p "$W"
  local opt scope first mem=(python3 -c 'b = b"x" * (300 << 20)')
  case $CTX in
    container-rw | container-ro)
      opt=${CTX#container-}
      umount -l "$CG" && mount -t cgroup2 -o "$opt,nosuid,nodev,noexec" cgroup2 "$CG"
      result mount $? "$(grep " $CG " /proc/self/mountinfo | cut -d' ' -f4-6) cgroup: $(cat /proc/self/cgroup)"
      ;;
    user-parent)
      read -r scope < /proc/self/cgroup
      scope=$CG${scope#0::}
      mkdir "$scope/runs"
      export TARE_CGROUP_PARENT=$scope/runs
      ;;
  esac
  sleep 100000 &
  first=$!
  echo "INFO $CTX: processes in tare's starting cgroup: $(tr '\n' ' ' < "${scope:-$CG}/cgroup.procs")"
  if [ -x /payload/tare-before ]; then
    /payload/tare-before run --runs 1 --export-json "$W/before.json" -- "${mem[@]}" > "$W/out" 2>&1 < /dev/null
    echo "INFO $CTX: before (tare of main): $(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print("method", d["method"]["kind"], "peak_memory", d["benchmarks"][0]["runs"][-1]["peak_memory"])' "$W/before.json" 2>&1 | tail -n 1)"
  fi
  t run --runs 1 --export-json "$W/mem.json" -- "${mem[@]}"
  jcheck peak-memory "$W/mem.json" '"method=%s peak_memory=%s reference=%s ratio=%.3f; %s" % (d["method"]["kind"], d["benchmarks"][0]["runs"][-1]["peak_memory"], ref, d["benchmarks"][0]["runs"][-1]["peak_memory"] / ref, d["method"]["warnings"])' \
    'd["method"]["kind"] == "cgroup-v2" and abs(d["benchmarks"][0]["runs"][-1]["peak_memory"] / ref - 1) <= 0.05'
  lim() { # NAME EXPECTED ARGS...
    local name=$1 want=$2
    shift 2
    t run --runs 1 --ignore-failure --export-json "$W/$name.json" "$@"
    jcheck "$name" "$W/$name.json" '"termination=" + d["benchmarks"][0]["runs"][-1]["termination"]' \
      "d['benchmarks'][0]['runs'][-1]['termination'] == '$want'"
  }
  lim memory-limit memory --memory-limit 100MB -- "${mem[@]}"
  lim pids-limit pids --pids-limit 10 --wall-limit 60s -- sh -c 'for i in $(seq 1 50); do sleep 30 & done; wait'
  t run --runs 1 --export-json "$W/daemon.json" -- sh -c '
(setsid sh -c "trap \"\" TERM; sleep 1234; : tare-vm-daemon" &)
sleep 0.3'
  sleep 0.5
  local left
  left=$(pgrep -f 'tare-vm-daemon|sleep 1234|sleep 30' | tr '\n' ' ')
  [ -z "$left" ]; result no-survivors $? "left=[$left]"
  kill -0 "$first"; result first-process-alive $? "pid $first in $(cat /proc/$first/cgroup 2>/dev/null)"
  left=$(find "$CG" -name 'tare-*' ! -name tare-vm.service -type d 2>/dev/null | head -n 5 | tr '\n' ' ')$(grep -o ' [^ ]*cgroup2\.[^ ]* ' /proc/self/mountinfo | tr '\n' ' ')
  [ -z "$left" ]; result no-leftover-groups $? "$left"
  kill "$first"
}

# `checks.sh inside CTX`: run by the contexts below inside their place; reads the reference.
if [ "${1:-}" = inside ]; then
  ref=$(python3 -c 'import json; print(json.load(open("/var/tmp/tare-vm/service/mem.json"))["benchmarks"][0]["runs"][-1]["peak_memory"])')
  jcheck() { # NAME FILE DETAIL OK (as above, with the reference peak as `ref`)
    local name=$1 out ok
    out=$(python3 -c "
import json, sys
ref = int(sys.argv[4])
try:
    d = json.load(open(sys.argv[1]))
    v = eval(sys.argv[2])
    ok = eval(sys.argv[3])
except Exception as e:
    v, ok = 'n/a (%s: %s)' % (type(e).__name__, e), False
print(v)
sys.exit(0 if ok else 1)" "$2" "$3" "$4" "$ref" 2>&1)
    ok=$?
    result "$name" $ok "$out $(tail -n 1 "$W/out" | cut -c1-200)"
  }
  inside "$2"
  exit 0
fi

# /payload/only (TARE_VM_ONLY of run.sh): the contexts to run, each short; empty: all.
only=$(cat /payload/only 2>/dev/null || true)
want() { [ -z "$only" ] || [[ " $only " == *" $1 "* ]]; }

mkdir -p "$CG/bench"
for c in service:full delegated-service:short scope:full user-scope:full cgroup-parent:short; do
  CTX=${c%:*}
  want "$CTX" || continue
  echo "INFO context $CTX started at $(date +%T)"
  if [ -n "$only" ]; then checks short; else checks "${c#*:}"; fi
done

# The same cgroup once more after a --pids-limit run there (an old tare turned it threaded).
if want service-after-pids; then
CTX=service-after-pids
W=/var/tmp/tare-vm/$CTX; mkdir -p "$W"
echo "INFO context $CTX started at $(date +%T)"
t run --runs 1 --pids-limit 20 -- true
checks short
echo "INFO tare-vm.service cgroup.type after all: $(cat $CG/system.slice/tare-vm.service/cgroup.type)"
fi

# Without delegation, the one-line hint must name a command that works.
if want user-hint; then
CTX=user-hint
W=/var/tmp/tare-vm/$CTX; mkdir -p "$W"; chmod 777 "$W"
runuser -u bench -- "${USER_ENV[@]}" "$T" run --runs 1 --memory-limit 100MB -- true > "$W/out" 2>&1 < /dev/null
hint=$(grep -o 'systemd-run --user --scope -p Delegate=yes tare' "$W/out" | head -n 1)
[ -n "$hint" ]; result hint-given $? "$(grep -m1 "Delegate=yes" "$W/out" | cut -c1-300)"
runuser -u bench -- "${USER_ENV[@]}" systemd-run --user --quiet --scope -p Delegate=yes -- "$T" run --runs 1 --memory-limit 100MB --export-json "$W/h.json" -- true > "$W/out2" 2>&1 < /dev/null
cp "$W/out2" "$W/out"
jcheck hint-works "$W/h.json" '"kind=%s peak_memory=%s" % (d["method"]["kind"], d["benchmarks"][0]["runs"][-1]["peak_memory"])' \
  'd["method"]["kind"] == "cgroup-v2" and d["benchmarks"][0]["runs"][-1]["peak_memory"] is not None'
fi

# The places CI jobs run in (see `inside`): each a fresh cgroup, entered before unshare, so
# that it is the root of the "container's" cgroup namespace.
for ctx in container-rw container-ro; do
  want "$ctx" || continue
  echo "INFO context $ctx started at $(date +%T)"
  mkdir "$CG/$ctx"
  bash -c "echo \$\$ > $CG/$ctx/cgroup.procs; exec unshare --cgroup --mount --propagation private -- bash $0 inside $ctx" < /dev/null
  echo "INFO $ctx afterwards: $(find "$CG/$ctx" -name cgroup.procs -exec sh -c 'echo "$1: $(tr "\n" " " < "$1")"' _ {} \; | tr '\n' ';')"
done
if want user-parent; then
  echo "INFO context user-parent started at $(date +%T)"
  mkdir -p /var/tmp/tare-vm && chmod 777 /var/tmp/tare-vm
  runuser -u bench -- "${USER_ENV[@]}" systemd-run --user --quiet --scope -p Delegate=yes -- bash "$0" inside user-parent < /dev/null
fi

# The Debian package (scripts/deb.sh, built by run.sh from the same binary): dpkg installs it,
# tare runs from /usr/bin, its manual page and bash completion are where Debian looks (the
# guest has neither man-db nor bash-completion: the page is read as man would find it, the
# completion script is sourced and asked to complete `tare ru`).
if want deb; then
CTX=deb
W=/var/tmp/tare-vm/$CTX; mkdir -p "$W"
echo "INFO context $CTX started at $(date +%T)"
if [ -f /payload/tare.deb ]; then
  dpkg -i /payload/tare.deb > "$W/out" 2>&1
  result dpkg-install $? "$(dpkg-query -W -f '${Package} ${Version} Depends: ${Depends}' tare 2>&1)"
  /usr/bin/tare run --runs 3 --export-json "$W/r.json" -- true > "$W/out" 2>&1 < /dev/null
  jcheck run "$W/r.json" '"kind=%s runs=%d" % (d["method"]["kind"], len(d["benchmarks"][0]["runs"]))' \
    'd["method"]["kind"] == "cgroup-v2" and len(d["benchmarks"][0]["runs"]) == 3'
  page=$(zcat /usr/share/man/man1/tare-run.1.gz 2>&1 | grep -m1 '^\.TH')
  [[ "$page" == .TH\ tare-run\ 1* ]]; result man-page $? "$page"
  words=$(bash -c 'source /usr/share/bash-completion/completions/tare && COMP_WORDS=(tare ru) COMP_CWORD=1 COMP_LINE="tare ru" COMP_POINT=7 && _tare tare ru tare && echo "${COMPREPLY[*]}"' 2>&1)
  [ "$words" = run ]; result bash-completion $? "tare ru<TAB>: $words"
else
  result dpkg-install 1 "no /payload/tare.deb: run.sh builds it with scripts/deb.sh (apt-get install dpkg-dev)"
fi
fi

echo "TARE-VM-DONE"
