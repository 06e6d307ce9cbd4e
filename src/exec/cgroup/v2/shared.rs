//! The run group that consecutive runs of one core set share on cgroup v2 (see the parent
//! module's docs: where it is used, and why): its counters kept open, each run's numbers the
//! rises of them across the run, the peak above the charge at its start.
//!
//! For: one run in the shared group ([`SharedRun`]) and the group ([`Shared`]). Not for:
//! choosing between it and a fresh group (`super::V2::create`), or fresh groups (`super`).

use super::super::{
    group_name, keyed_value, read_pids_in, remove_dir_retrying, Accounting, ChildSetup,
    ControlFile, RunGroup,
};
use super::{kill_members, make_dir, write_limits};
use crate::exec::spec::Limits;
use crate::exec::sys::Rusage;
use std::cell::Cell;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

/// The group consecutive runs of one core set share: its counters kept open, and what they
/// read at the end of the last run (the next run's baseline: nothing runs in between).
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) key: Option<Vec<usize>>,
    /// Open for clone3(CLONE_INTO_CGROUP) and for listing the group's `cgroup.procs`.
    dir_fd: File,
    /// `cgroup.procs`, for joining where clone3 cannot start the child in the group.
    procs: File,
    stat: ControlFile,
    /// `memory.peak`, reset through this descriptor before each run; `memory.current`.
    peak: Option<(ControlFile, ControlFile)>,
    /// `memory.events` (oom_kill) and `pids.events` (max): counters, read as rises.
    memory_events: Option<ControlFile>,
    pids_events: Option<ControlFile>,
    affinity: Option<Vec<usize>>,
    last: Cell<Option<Counters>>,
    /// The last run's kill found the group empty.
    known_empty: Cell<bool>,
    // Declared last: the files above are closed before the directory is removed.
    dir: GroupDir,
}

/// The shared group's counters: CPU time (µs) and event counts.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    usage: u64,
    user: u64,
    system: u64,
    oom_kills: u64,
    pids_max: u64,
}

/// A run group directory tare made; removed when dropped.
#[derive(Debug)]
struct GroupDir(PathBuf);

impl Drop for GroupDir {
    fn drop(&mut self) {
        let _ = remove_dir_retrying(&self.0);
    }
}

impl Shared {
    /// Makes the group, or `None` (removed again) where `memory.peak` cannot be reset.
    pub(super) fn make(
        parent: &Path,
        key: Option<Vec<usize>>,
        cpuset: bool,
        memory: bool,
        pids: bool,
    ) -> io::Result<Option<Shared>> {
        let path = parent.join(group_name());
        make_dir(&path)?;
        Shared::open(GroupDir(path), key, cpuset, memory, pids)
    }

    /// The group at `dir`, made for it (removed when the result, or `None`, is dropped).
    fn open(
        dir: GroupDir,
        key: Option<Vec<usize>>,
        cpuset: bool,
        memory: bool,
        pids: bool,
    ) -> io::Result<Option<Shared>> {
        let path = &dir.0;
        let mut affinity = None;
        match (&key, cpuset) {
            (Some(cores), true) => write_limits(path, &Limits::default(), Some(cores))?,
            (Some(cores), false) => affinity = Some(cores.clone()),
            (None, _) => {}
        }
        let peak = if memory {
            // Opening it for writing fails where the kernel has no reset (before 6.12, the
            // file is read-only); a write is tried too, as the runs will do it.
            let reset = ControlFile::open_rw(path.join("memory.peak"))
                .and_then(|f| f.write(b"reset\n").map(|()| f));
            match reset {
                Ok(f) => Some((f, ControlFile::open(path.join("memory.current"))?)),
                Err(_) => return Ok(None),
            }
        } else {
            None
        };
        let optional = |name: &str| ControlFile::open(path.join(name)).ok();
        Ok(Some(Shared {
            key,
            dir_fd: File::open(path)?,
            procs: OpenOptions::new()
                .write(true)
                .open(path.join("cgroup.procs"))?,
            stat: ControlFile::open(path.join("cpu.stat"))?,
            peak,
            memory_events: if memory {
                optional("memory.events")
            } else {
                None
            },
            pids_events: if pids { optional("pids.events") } else { None },
            affinity,
            last: Cell::new(None),
            known_empty: Cell::new(true),
            dir,
        }))
    }

    fn counters(&self) -> io::Result<Counters> {
        let mut buf = [0u8; 512];
        let stat = self.stat.read(&mut buf)?;
        let field = |k| {
            keyed_value(stat, k).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}/cpu.stat lacks {k}", self.dir.0.display()),
                )
            })
        };
        let (usage, user, system) = (
            field("usage_usec")?,
            field("user_usec")?,
            field("system_usec")?,
        );
        let mut event = |f: &Option<ControlFile>, k| -> u64 {
            f.as_ref()
                .and_then(|f| f.read(&mut buf).ok().and_then(|t| keyed_value(t, k)))
                .unwrap_or(0)
        };
        Ok(Counters {
            usage,
            user,
            system,
            oom_kills: event(&self.memory_events, "oom_kill"),
            pids_max: event(&self.pids_events, "max"),
        })
    }
}

/// One run in the shared group.
pub(super) struct SharedRun {
    shared: Rc<Shared>,
    baseline: Counters,
    /// The group's memory charge when the peak was reset (what earlier runs left: page cache,
    /// kernel objects), which the run's peak is counted above.
    memory_start: Option<u64>,
    /// `destroy` ran (otherwise dropping kills the run's processes).
    done: bool,
}

impl SharedRun {
    pub(super) fn start(shared: Rc<Shared>) -> io::Result<SharedRun> {
        // Another run's processes in the group would be counted as this run's; the previous
        // run's kill proved it empty unless nothing has run yet.
        if !shared.known_empty.replace(false) && !read_pids_in(&shared.dir_fd)?.is_empty() {
            return Err(io::Error::other(format!(
                "cgroup {} is not empty before a run",
                shared.dir.0.display()
            )));
        }
        let baseline = match shared.last.get() {
            Some(c) => c,
            None => shared.counters()?,
        };
        let memory_start = match &shared.peak {
            Some((peak, current)) => {
                peak.write(b"reset\n")?;
                Some(current.read_u64()?)
            }
            None => None,
        };
        Ok(SharedRun {
            shared,
            baseline,
            memory_start,
            done: false,
        })
    }
}

impl RunGroup for SharedRun {
    fn child_setup(&self) -> ChildSetup {
        ChildSetup {
            procs_fds: vec![self.shared.procs.as_raw_fd()],
            cgroup_dir_fd: Some(self.shared.dir_fd.as_raw_fd()),
            affinity: self.shared.affinity.clone(),
            ..Default::default()
        }
    }

    fn cpu_so_far(&self, _main_pid: i32) -> io::Result<Duration> {
        let now = self.shared.counters()?;
        Ok(Duration::from_micros(
            now.usage.saturating_sub(self.baseline.usage),
        ))
    }

    fn kill_all(&mut self, _main_pid: i32) -> io::Result<usize> {
        let shared = &self.shared;
        let first = read_pids_in(&shared.dir_fd)?;
        if !first.is_empty() {
            kill_members(&shared.dir.0, || read_pids_in(&shared.dir_fd))?;
        }
        shared.known_empty.set(true);
        Ok(first.len())
    }

    fn account(&self, _rusage: &Rusage) -> io::Result<Accounting> {
        let now = self.shared.counters()?;
        self.shared.last.set(Some(now));
        let b = self.baseline;
        let peak_memory = match (&self.shared.peak, self.memory_start) {
            (Some((peak, _)), Some(start)) => Some(peak.read_u64()?.saturating_sub(start)),
            _ => None,
        };
        Ok(Accounting {
            user: Duration::from_micros(now.user.saturating_sub(b.user)),
            system: Duration::from_micros(now.system.saturating_sub(b.system)),
            peak_memory,
            oom_killed: now.oom_kills > b.oom_kills,
            // No memory or task limit of its own (those runs get a fresh group); one set
            // above tare still shows as OOM kills or failed forks.
            at_memory_limit: false,
            pids_limited: now.pids_max > b.pids_max,
        })
    }

    fn destroy(&mut self) -> io::Result<()> {
        self.done = true;
        Ok(())
    }
}

impl Drop for SharedRun {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.kill_all(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A shared group over synthetic control files: each run's numbers are the rises of the
    /// counters across it, the peak the rise above the charge at its start.
    #[test]
    fn a_shared_run_counts_the_rises_of_the_groups_counters() {
        let t = tempfile::tempdir().unwrap();
        let g = t.path().join("tare-test");
        fs::create_dir(&g).unwrap();
        let put = |name: &str, text: &str| fs::write(g.join(name), text).unwrap();
        put("cgroup.procs", "");
        put(
            "cpu.stat",
            "usage_usec 1000\nuser_usec 600\nsystem_usec 400\n",
        );
        put("memory.peak", "900000\n");
        put("memory.current", "500000\n");
        put("memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 2\n");
        let shared = Rc::new(
            Shared::open(GroupDir(g.clone()), Some(vec![1]), false, true, false)
                .unwrap()
                .expect("a writable memory.peak can be reset"),
        );
        let mut run = SharedRun::start(Rc::clone(&shared)).unwrap();
        assert_eq!(run.memory_start, Some(500_000));
        assert_eq!(
            run.child_setup().affinity,
            Some(vec![1]),
            "no cpuset: affinity"
        );
        // The run: 3 ms of CPU (2 user, 1 system), a peak of 4 MB above the start charge,
        // one OOM kill.
        put(
            "cpu.stat",
            "usage_usec 4000\nuser_usec 2600\nsystem_usec 1400\n",
        );
        put("memory.peak", "4500000\n");
        put("memory.events", "low 0\nhigh 0\nmax 0\noom 1\noom_kill 3\n");
        assert_eq!(run.cpu_so_far(0).unwrap(), Duration::from_micros(3000));
        let a = run.account(&Rusage::default()).unwrap();
        assert_eq!(a.user, Duration::from_micros(2000));
        assert_eq!(a.system, Duration::from_micros(1000));
        assert_eq!(a.peak_memory, Some(4_000_000));
        assert!(a.oom_killed && !a.pids_limited && !a.at_memory_limit);
        assert_eq!(run.kill_all(0).unwrap(), 0);
        run.destroy().unwrap();
        drop(run);
        // The next run starts from the last run's counters: nothing new, no OOM kill.
        put("memory.current", "700000\n");
        let run = SharedRun::start(Rc::clone(&shared)).unwrap();
        put("memory.peak", "700000\n");
        let a = run.account(&Rusage::default()).unwrap();
        assert_eq!((a.user, a.system), (Duration::ZERO, Duration::ZERO));
        assert_eq!(a.peak_memory, Some(0));
        assert!(!a.oom_killed);
        // A process left in the group before a run is refused, not counted.
        drop(run);
        shared.known_empty.set(false);
        put("cgroup.procs", "4242\n");
        let err = SharedRun::start(Rc::clone(&shared)).err().unwrap();
        assert!(err.to_string().contains("not empty"), "{err}");
    }

    /// Where `memory.peak` cannot be written (before Linux 6.12 it is read-only; here a
    /// directory stands in for it), there is no shared group.
    #[test]
    fn no_shared_group_where_the_peak_cannot_be_reset() {
        let t = tempfile::tempdir().unwrap();
        let g = t.path().join("tare-test");
        fs::create_dir_all(g.join("memory.peak")).unwrap();
        fs::write(
            g.join("cpu.stat"),
            "usage_usec 0\nuser_usec 0\nsystem_usec 0\n",
        )
        .unwrap();
        fs::write(g.join("cgroup.procs"), "").unwrap();
        assert!(Shared::open(GroupDir(g.clone()), None, false, true, false)
            .unwrap()
            .is_none());
        // Without the memory controller there is no peak to reset: shared.
        let s = Shared::open(GroupDir(t.path().join("absent")), None, false, false, false);
        assert!(s.is_err(), "a group whose files are missing is an error");
    }
}
