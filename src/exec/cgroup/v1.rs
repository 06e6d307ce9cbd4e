//! cgroup v1 backend: groups in the cpuacct and memory hierarchies (plus pids and cpuset when
//! asked for) that each run joins, and a freezer group its leftovers are moved into to be
//! killed; all below this process's own cgroup in each hierarchy.
//!
//! CPU time: `cpuacct.usage` (nanoseconds of scheduler runtime, whole tree: exact). The kernel
//! splits it into user and system only by sampling at timer ticks (`cpuacct.stat`,
//! `cpuacct.usage_user`/`usage_sys` move in steps of 1/HZ), so the split reported is that
//! sampled ratio applied to the exact total — what cgroup v2's cpu.stat and getrusage do too
//! (`cputime_adjust`).
//! Peak memory: `memory.memsw.max_usage_in_bytes` when swap accounting exists, else
//! `memory.max_usage_in_bytes` (whole tree, page cache it charges included). Runs without a
//! memory limit share one memory group: before each run its high-water mark is reset to the
//! current charge — what earlier runs left behind (page cache, kernel objects, per-CPU
//! pre-charges), just as such charges stay with a removed group — and the run's peak is the
//! mark's rise above that charge. A run with a memory limit gets a fresh group of its own, so
//! the limit applies to it alone. The counter moves in per-CPU batches of up to 64 pages, so
//! peaks below ~256 KiB are not resolved either way.
//! Kill: processes left after the main one exited are moved into a frozen freezer group (a
//! run does not join the freezer up front: one migration less per run), then SIGKILLed,
//! thawed, and waited for until the cpuacct group is empty.
//!
//! Cost: groups are made once per configuration and reused — making and removing a memory
//! cgroup costs ~0.1 ms of kernel time, as much as spawning the command. CPU time is the
//! difference of the cpuacct counters across the run, and the groups are proven empty before
//! each run.
//!
//! Joining: the child (single-threaded, before exec) writes `0` into each group's `tasks`, not
//! `cgroup.procs`. Both move it, but a write to `cgroup.procs` takes the kernel's global
//! threadgroup rwsem for writing, and the first writer after a quiet spell waits for an RCU
//! grace period: measured on this 6.18 kernel, 5–17 ms for the first `cgroup.procs` write after
//! a 50 ms pause, against 22–31 µs through `tasks`, which skips that lock when a thread moves
//! itself. (On a kernel that takes the lock there too, the wait lands in the child's join,
//! which the wall clock excludes.)

use super::{
    cgroup_mounts, group_name, keyed_value, lease, own_cgroup, read_pids, read_pids_in, read_small,
    read_trimmed, remove_dir_retrying, write_file, Accounting, Backend, ChildSetup, ControlFile,
    Needs, RunGroup,
};
use crate::exec::spec::Limits;
use crate::exec::sys::{self, Rusage};
use crate::results::{MeasurementMethod, MethodKind};
use std::cell::{Cell, RefCell};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Where the wall clock starts and stops (the same for every backend's spawn).
pub const WALL_TIME: &str = "CLOCK_MONOTONIC from just before spawn to the main process's exit, \
                             less the time the child spent joining its cgroups before exec";

/// The v1 hierarchies this backend uses: the parent directory of run groups in each.
pub struct V1 {
    cpuacct: PathBuf,
    memory: PathBuf,
    freezer: PathBuf,
    pids: Option<PathBuf>,
    cpuset: Option<PathBuf>,
    memsw: bool,
    /// Groups reused from run to run for one (task limit, cores) configuration.
    shared: RefCell<Option<Rc<Shared>>>,
    /// What the start-up sweep of stale groups did.
    swept: lease::Swept,
}

/// Sweeps the groups of `kill -9`ed tare sessions (see [`lease`]) from every v1 hierarchy
/// tare uses, the freezer first so their processes are frozen and killed before the other
/// hierarchies' groups are removed.
fn sweep_stale(root: &Path, mounts: &[(String, String, String)]) -> lease::Swept {
    let mut total = lease::Swept::default();
    for ctrl in ["freezer", "cpuacct", "memory", "pids", "cpuset"] {
        let Ok(dir) = parent_in(root, mounts, ctrl) else {
            continue;
        };
        let s = lease::sweep(&dir);
        total.groups += s.groups;
        // Every run's processes are in its cpuacct group; leftovers being killed when tare
        // died were in the freezer group too.
        if ctrl == "freezer" || ctrl == "cpuacct" {
            total.processes = total.processes.max(s.processes);
        }
    }
    lease::forget_stale_locks();
    total
}

fn parent_in(root: &Path, mounts: &[(String, String, String)], ctrl: &str) -> io::Result<PathBuf> {
    let mount = mounts
        .iter()
        .find(|(fs, _, opts)| fs == "cgroup" && opts.split(',').any(|o| o == ctrl))
        .map(|(_, mp, _)| mp.clone())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("controller '{ctrl}' is not mounted"),
            )
        })?;
    let own = own_cgroup(root, Some(ctrl))?;
    let dir = root
        .join(mount.trim_start_matches('/'))
        .join(own.trim_start_matches('/'));
    // Probe that we may create groups here: the directory must be writable.
    let procs = dir.join("cgroup.procs");
    if !procs.exists() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} does not exist", procs.display()),
        ));
    }
    if !sys::writable(&dir) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "no permission to create cgroups in {} (run as root)",
                dir.display()
            ),
        ));
    }
    Ok(dir)
}

impl V1 {
    /// Finds the hierarchies and checks that groups can be created in them.
    pub fn discover(root: &Path, needs: &Needs) -> io::Result<V1> {
        let mounts = cgroup_mounts(root)?;
        let cpuacct = parent_in(root, &mounts, "cpuacct")?;
        let memory = parent_in(root, &mounts, "memory")?;
        let freezer = parent_in(root, &mounts, "freezer")?;
        let pids = if needs.pids {
            Some(parent_in(root, &mounts, "pids")?)
        } else {
            None
        };
        let cpuset = if needs.cpuset {
            Some(parent_in(root, &mounts, "cpuset")?)
        } else {
            None
        };
        let memsw = memory.join("memory.memsw.max_usage_in_bytes").exists();
        let swept = sweep_stale(root, &mounts);
        Ok(V1 {
            cpuacct,
            memory,
            freezer,
            pids,
            cpuset,
            memsw,
            shared: RefCell::new(None),
            swept,
        })
    }
}

impl Backend for V1 {
    fn kind(&self) -> MethodKind {
        MethodKind::CgroupV1
    }

    fn method(&self) -> MeasurementMethod {
        MeasurementMethod {
            kind: MethodKind::CgroupV1,
            cpu_time: "CPU time of the whole process tree, children never waited for and killed ones \
                       included (cgroup v1 cpuacct.usage, nanoseconds; split into user and system by the \
                       kernel's tick-sampled ratio)"
                .into(),
            peak_memory: if self.memsw {
                "peak memory + swap of the whole tree, page cache it charges included: the rise of cgroup v1 \
                 memory.memsw.max_usage_in_bytes above the charge at the run's start"
            } else {
                "peak memory of the whole tree, page cache it charges included: the rise of cgroup v1 \
                 memory.max_usage_in_bytes above the charge at the run's start"
            }
            .into(),
            wall_time: WALL_TIME.into(),
            warnings: if self.swept.groups > 0 {
                vec![format!(
                    "removed {} cgroups left by killed tare sessions ({} of their processes \
                     killed)",
                    self.swept.groups, self.swept.processes
                )]
            } else {
                Vec::new()
            },
        }
    }

    fn create(
        &self,
        limits: &Limits,
        cores: Option<&[usize]>,
        _own: bool,
    ) -> io::Result<Box<dyn RunGroup>> {
        let shared = self.shared_for(cores)?;
        // A group that is not empty would mix another run's processes into this one; the
        // previous run's kill proved it empty unless nothing has run yet.
        if !shared.known_empty.replace(false) && !read_pids_in(&shared.members_dir)?.is_empty() {
            return Err(io::Error::other(format!(
                "cgroup {} is not empty before a run",
                shared.members.display()
            )));
        }
        let baseline = match shared.last.get() {
            Some(c) => c,
            None => shared.cpu()?,
        };
        let memory = match limits.memory {
            // A limit must apply to this run alone: a fresh group that holds nothing else.
            Some(bytes) => {
                let dir = Dir::make(&self.memory, &group_name())?;
                write_file(&dir.path.join("memory.limit_in_bytes"), &bytes.to_string())?;
                if self.memsw {
                    write_file(
                        &dir.path.join("memory.memsw.limit_in_bytes"),
                        &bytes.to_string(),
                    )?;
                }
                let procs = open_join(&dir.path)?;
                RunMemory::Fresh {
                    dir: Some(dir),
                    procs: Some(procs),
                }
            }
            None => {
                // Reset the high-water mark to the current charge, which is what earlier runs
                // left behind (page cache, kernel objects, per-CPU pre-charges); this run's
                // peak is the mark's rise above it.
                shared.mem_max.write(b"0")?;
                RunMemory::Shared {
                    start: shared.mem_usage.read_u64()?,
                }
            }
        };
        // A task limit counts this run alone: a fresh pids group per run. In a reused group,
        // processes killed at the end of earlier runs but not yet reaped by their new parent
        // (zombies still count in pids.current) would eat into the next run's limit.
        let pids = match (&self.pids, limits.pids) {
            (Some(parent), Some(max)) => {
                let dir = Dir::make(parent, &group_name())?;
                write_file(&dir.path.join("pids.max"), &max.to_string())?;
                let procs = open_join(&dir.path)?;
                Some((procs, dir))
            }
            _ => None,
        };
        Ok(Box::new(V1Group {
            shared,
            memory,
            pids,
            baseline,
            memsw: self.memsw,
            done: false,
        }))
    }
}

impl V1 {
    fn shared_for(&self, cores: Option<&[usize]>) -> io::Result<Rc<Shared>> {
        let key = cores.map(<[usize]>::to_vec);
        let mut slot = self.shared.borrow_mut();
        if let Some(s) = slot.as_ref() {
            if s.key == key {
                return Ok(Rc::clone(s));
            }
        }
        *slot = None; // drops (removes) the groups of the previous configuration
        let name = group_name();
        let cpuacct = Dir::make(&self.cpuacct, &name)?;
        let freezer = Dir::make(&self.freezer, &name)?;
        let cpuset_dir = match (&self.cpuset, cores) {
            (Some(p), Some(cores)) => {
                let d = Dir::make(p, &name)?;
                let list: Vec<String> = cores.iter().map(|c| c.to_string()).collect();
                write_file(&d.path.join("cpuset.cpus"), &list.join(","))?;
                write_file(
                    &d.path.join("cpuset.mems"),
                    &read_trimmed(&p.join("cpuset.mems"))?,
                )?;
                Some(d)
            }
            (None, Some(_)) => {
                return Err(io::Error::other(
                    "pinning to cores needs the cpuset controller",
                ))
            }
            _ => None,
        };
        let mut procs = Vec::new();
        // The freezer group is not joined: leftovers are moved into it only when there are
        // any (see `kill_all`), which saves every run a migration.
        for d in [Some(&cpuacct), cpuset_dir.as_ref()].into_iter().flatten() {
            procs.push(open_join(&d.path)?);
        }
        let memory = Dir::make(&self.memory, &name)?;
        let (usage_file, max_file) = if self.memsw {
            (
                "memory.memsw.usage_in_bytes",
                "memory.memsw.max_usage_in_bytes",
            )
        } else {
            ("memory.usage_in_bytes", "memory.max_usage_in_bytes")
        };
        let mem_usage = ControlFile::open(memory.path.join(usage_file))?;
        let mem_max = ControlFile::open_rw(memory.path.join(max_file))?;
        let mem_procs = open_join(&memory.path)?;
        let freezer_path = freezer.path.clone();
        let cpuacct_path = cpuacct.path.clone();
        let mut dirs = vec![cpuacct, freezer, memory];
        dirs.extend(cpuset_dir);
        let s = Rc::new(Shared {
            key,
            usage: ControlFile::open(cpuacct_path.join("cpuacct.usage"))?,
            stat: ControlFile::open(cpuacct_path.join("cpuacct.stat"))?,
            freezer: freezer_path,
            members: cpuacct_path.join("cgroup.procs"),
            members_dir: File::open(&cpuacct_path)?,
            last: Cell::new(None),
            known_empty: Cell::new(false),
            procs,
            mem_procs,
            mem_usage,
            mem_max,
            _dirs: dirs,
        });
        *slot = Some(Rc::clone(&s));
        Ok(s)
    }
}

/// The file the child writes `0` into to join the group at `dir`: `tasks`, which moves the
/// writing thread without the global lock a `cgroup.procs` write takes (see the module
/// docs). The child is single-threaded then, so the thread is the whole process.
pub fn open_join(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .open(dir.join("tasks"))
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.join("tasks").display())))
}

/// A cgroup directory tare made; removed when dropped.
struct Dir {
    path: PathBuf,
}

impl Dir {
    fn make(parent: &Path, name: &str) -> io::Result<Dir> {
        let path = parent.join(name);
        std::fs::create_dir(&path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create cgroup {}: {e}", path.display()),
            )
        })?;
        Ok(Dir { path })
    }
}

impl Dir {
    /// Removes the group now, with the error (dropping removes it silently).
    fn remove(self) -> io::Result<()> {
        let mut me = std::mem::ManuallyDrop::new(self);
        remove_dir_retrying(&std::mem::take(&mut me.path))
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = remove_dir_retrying(&self.path);
    }
}

/// Groups shared by consecutive runs of one configuration (empty between runs).
struct Shared {
    key: Option<Vec<usize>>,
    usage: ControlFile,
    /// `user N` / `system N` in clock ticks: the sampled split.
    stat: ControlFile,
    /// The freezer group leftovers are moved into to be frozen and killed; empty and thawed
    /// between runs.
    freezer: PathBuf,
    /// The cpuacct group's `cgroup.procs`: every process of the run (children inherit it).
    members: PathBuf,
    /// The cpuacct group's directory, open: its `cgroup.procs` is read after every run.
    members_dir: File,
    /// Counters at the end of the last run: the next run's baseline (nothing runs in between).
    last: Cell<Option<CpuCounters>>,
    /// The last run's kill found the group empty.
    known_empty: Cell<bool>,
    procs: Vec<File>,
    /// The memory group used by runs without a memory limit, and its counters.
    mem_procs: File,
    mem_usage: ControlFile,
    /// The high-water mark, read for the peak and reset by writing "0".
    mem_max: ControlFile,
    // Declared last so the files above are closed before the directories are removed.
    _dirs: Vec<Dir>,
}

impl Shared {
    /// (total, user ticks, system ticks) of the cpuacct group so far, in nanoseconds.
    fn cpu(&self) -> io::Result<CpuCounters> {
        let total = self.usage.read_u64()?;
        let mut buf = [0u8; 128];
        let stat = self.stat.read(&mut buf)?;
        Ok(CpuCounters {
            total,
            user: keyed_value(stat, "user").unwrap_or(0),
            system: keyed_value(stat, "system").unwrap_or(0),
        })
    }

    fn freezer_state(&self, state: &str) -> io::Result<()> {
        write_file(&self.freezer.join("freezer.state"), state)
    }
}

/// Raw cpuacct counters: `total` in exact nanoseconds, `user`/`system` in sampled clock ticks
/// (only their ratio is used).
#[derive(Debug, Clone, Copy, Default)]
struct CpuCounters {
    total: u64,
    user: u64,
    system: u64,
}

/// Splits the exact `total` in the ratio of the tick-sampled `user` and `system` times, like
/// the kernel's `cputime_adjust`: all user when no system tick was seen, and vice versa.
pub fn split_total(total: u64, user: u64, system: u64) -> (Duration, Duration) {
    if system == 0 {
        return (Duration::from_nanos(total), Duration::ZERO);
    }
    if user == 0 {
        return (Duration::ZERO, Duration::from_nanos(total));
    }
    let u = (total as u128 * user as u128 / (user as u128 + system as u128)) as u64;
    (Duration::from_nanos(u), Duration::from_nanos(total - u))
}

/// Where a run's memory is accounted.
enum RunMemory {
    /// The shared memory group; the run's peak is the rise of its high-water mark above
    /// `start`, the charge when the mark was reset.
    Shared { start: u64 },
    /// A group of its own, made for a run with a memory limit and removed after it.
    Fresh {
        dir: Option<Dir>,
        procs: Option<File>,
    },
}

/// One run: the shared groups, and its memory group.
struct V1Group {
    shared: Rc<Shared>,
    memory: RunMemory,
    /// The run's own pids group when it has a task limit (removed with the run; the file
    /// is closed before the directory).
    pids: Option<(File, Dir)>,
    baseline: CpuCounters,
    memsw: bool,
    /// `destroy` ran (otherwise dropping kills and cleans up).
    done: bool,
}

impl RunGroup for V1Group {
    fn child_setup(&self) -> ChildSetup {
        let mut fds: Vec<_> = self.shared.procs.iter().map(|f| f.as_raw_fd()).collect();
        match &self.memory {
            RunMemory::Shared { .. } => fds.push(self.shared.mem_procs.as_raw_fd()),
            RunMemory::Fresh { procs, .. } => fds.extend(procs.iter().map(|f| f.as_raw_fd())),
        }
        fds.extend(self.pids.iter().map(|(f, _)| f.as_raw_fd()));
        ChildSetup {
            procs_fds: fds,
            ..Default::default()
        }
    }

    fn cpu_so_far(&self, _main_pid: i32) -> io::Result<Duration> {
        let total = self.shared.usage.read_u64()?;
        Ok(Duration::from_nanos(
            total.saturating_sub(self.baseline.total),
        ))
    }

    fn kill_all(&mut self, _main_pid: i32) -> io::Result<usize> {
        let members = &self.shared.members;
        let first = read_pids_in(&self.shared.members_dir)?;
        if first.is_empty() {
            self.shared.known_empty.set(true);
            return Ok(0);
        }
        // Freeze the (empty) freezer group, then move every member into it: a process moved
        // into a frozen group is frozen, and a child forked before its parent moved shows up
        // in the next listing. Once every member is frozen nothing can fork; kill them all,
        // then thaw so the kill is delivered.
        let freezer = &self.shared.freezer;
        let frozen_procs = freezer.join("cgroup.procs");
        self.shared.freezer_state("FROZEN")?;
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let inside = read_pids(&frozen_procs)?;
            let outside: Vec<i32> = read_pids_in(&self.shared.members_dir)?
                .into_iter()
                .filter(|p| !inside.contains(p))
                .collect();
            if outside.is_empty() || Instant::now() > deadline {
                break;
            }
            for pid in outside {
                // A process that exited meanwhile is refused (ESRCH): nothing to move.
                let _ = std::fs::write(&frozen_procs, pid.to_string());
            }
        }
        while read_trimmed(&freezer.join("freezer.state"))? != "FROZEN" && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_micros(100));
        }
        for pid in read_pids_in(&self.shared.members_dir)? {
            sys::kill(pid, libc::SIGKILL)?;
        }
        self.shared.freezer_state("THAWED")?;
        super::kill_until_empty(members, || read_pids_in(&self.shared.members_dir))?;
        self.shared.known_empty.set(true);
        Ok(first.len())
    }

    fn account(&self, _rusage: &Rusage) -> io::Result<Accounting> {
        let now = self.shared.cpu()?;
        self.shared.last.set(Some(now));
        let b = self.baseline;
        let (user, system) = split_total(
            now.total.saturating_sub(b.total),
            now.user.saturating_sub(b.user),
            now.system.saturating_sub(b.system),
        );
        let (peak, oom, at_memory_limit) = match &self.memory {
            RunMemory::Shared { start } => (
                self.shared.mem_max.read_u64()?.saturating_sub(*start),
                0,
                false,
            ),
            RunMemory::Fresh { dir, .. } => {
                let mem = &dir
                    .as_ref()
                    .ok_or_else(|| io::Error::other("memory group already removed"))?
                    .path;
                let peak_file = if self.memsw {
                    "memory.memsw.max_usage_in_bytes"
                } else {
                    "memory.max_usage_in_bytes"
                };
                let peak: u64 = read_small(&mem.join(peak_file))?
                    .trim()
                    .parse()
                    .map_err(|_| {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("{}: not a number", mem.join(peak_file).display()),
                        )
                    })?;
                let oom = read_small(&mem.join("memory.oom_control"))
                    .ok()
                    .and_then(|s| keyed_value(&s, "oom_kill"))
                    .unwrap_or(0);
                let failcnt = if self.memsw {
                    "memory.memsw.failcnt"
                } else {
                    "memory.failcnt"
                };
                let failed = read_small(&mem.join(failcnt))
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .unwrap_or(0);
                (peak, oom, failed > 0)
            }
        };
        // The run's pids group is fresh (made for this run), so its `pids.events` "max"
        // counter rose only for this run's fork failures at the limit.
        let pids_limited = self.pids.as_ref().is_some_and(|(_, dir)| {
            read_small(&dir.path.join("pids.events"))
                .ok()
                .and_then(|s| keyed_value(&s, "max"))
                .unwrap_or(0)
                > 0
        });
        Ok(Accounting {
            user,
            system,
            peak_memory: Some(peak),
            oom_killed: oom > 0,
            at_memory_limit,
            pids_limited,
        })
    }

    fn memory_dir(&self) -> Option<PathBuf> {
        match &self.memory {
            RunMemory::Shared { .. } => self.shared.mem_usage.path.parent().map(Path::to_path_buf),
            RunMemory::Fresh { dir, .. } => dir.as_ref().map(|d| d.path.clone()),
        }
    }

    fn destroy(&mut self) -> io::Result<()> {
        self.done = true;
        if let Some((procs, dir)) = self.pids.take() {
            drop(procs);
            dir.remove()?;
        }
        match &mut self.memory {
            RunMemory::Fresh { dir, procs } => {
                *procs = None;
                match dir.take() {
                    Some(d) => d.remove(),
                    None => Ok(()),
                }
            }
            RunMemory::Shared { .. } => Ok(()),
        }
    }
}

impl Drop for V1Group {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.kill_all(0);
            let _ = self.destroy();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_total;
    use std::time::Duration;

    #[test]
    fn split_follows_ticks_and_keeps_total() {
        assert_eq!(
            split_total(900, 0, 0),
            (Duration::from_nanos(900), Duration::ZERO)
        );
        assert_eq!(
            split_total(900, 4, 0),
            (Duration::from_nanos(900), Duration::ZERO)
        );
        assert_eq!(
            split_total(900, 0, 4),
            (Duration::ZERO, Duration::from_nanos(900))
        );
        let (u, s) = split_total(1000, 1, 3);
        assert_eq!((u.as_nanos(), s.as_nanos()), (250, 750));
    }
}
