//! cgroup v2 backend: one fresh group per run below a delegated subtree of the unified
//! hierarchy.
//!
//! CPU time: `cpu.stat` `user_usec` / `system_usec` (core accounting, always present).
//! Peak memory: `memory.peak` (Linux ≥ 5.19, memory controller enabled); otherwise none, with
//! the reason. Limits: `memory.max` + `memory.swap.max` = 0 (so the limit is memory + swap),
//! `pids.max`, `cpuset.cpus`. Kill: `cgroup.kill` (Linux ≥ 5.14), else freeze with
//! `cgroup.freeze` and SIGKILL every member.
//!
//! Where the subtree comes from: the process's own cgroup (from /proc/self/cgroup) when it is
//! the root or when tare may enable controllers in it; `TARE_CGROUP_PARENT` names another
//! delegated directory. To get one as a user: `systemd-run --user --scope -p Delegate=yes tare …`.

use super::{
    cgroup_mounts, group_name, keyed_value, own_cgroup, read_pids, read_trimmed,
    remove_dir_retrying, write_file, Accounting, Backend, ChildSetup, Needs, RunGroup,
};
use crate::exec::spec::Limits;
use crate::exec::sys::{self, Rusage};
use crate::results::{MeasurementMethod, MethodKind};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A delegated v2 subtree in which run groups are created.
#[derive(Debug)]
pub struct V2 {
    parent: PathBuf,
    /// Controllers enabled for children of `parent` (cgroup.subtree_control).
    controllers: Vec<String>,
    warnings: Vec<String>,
}

const HOWTO: &str =
    "run tare in a delegated cgroup, e.g. `systemd-run --user --scope -p Delegate=yes tare …`, \
                     or set TARE_CGROUP_PARENT to a cgroup directory you own";

impl V2 {
    /// Finds a usable subtree: `TARE_CGROUP_PARENT`, or this process's own cgroup.
    pub fn discover(root: &Path, needs: &Needs) -> io::Result<V2> {
        let parent = match std::env::var_os("TARE_CGROUP_PARENT") {
            Some(p) => PathBuf::from(p),
            None => {
                let mounts = cgroup_mounts(root)?;
                let mount = mounts
                    .iter()
                    .find(|(fs, _, _)| fs == "cgroup2")
                    .map(|(_, mp, _)| mp.clone())
                    .ok_or_else(|| {
                        io::Error::new(io::ErrorKind::NotFound, "no cgroup2 file system is mounted")
                    })?;
                let own = own_cgroup(root, None)?;
                root.join(mount.trim_start_matches('/'))
                    .join(own.trim_start_matches('/'))
            }
        };
        Self::at(&parent, needs)
    }

    /// Uses `parent` as the subtree; enables the controllers tare wants where it may.
    pub fn at(parent: &Path, needs: &Needs) -> io::Result<V2> {
        if !parent.join("cgroup.procs").exists() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} is not a cgroup2 directory", parent.display()),
            ));
        }
        if !crate::exec::sys::writable(parent) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "no permission to create cgroups in {}; {HOWTO}",
                    parent.display()
                ),
            ));
        }
        let available: Vec<String> = read_trimmed(&parent.join("cgroup.controllers"))?
            .split_whitespace()
            .map(String::from)
            .collect();
        let mut wanted = vec!["memory"];
        if needs.pids {
            wanted.push("pids");
        }
        if needs.cpuset {
            wanted.push("cpuset");
        }
        let subtree = parent.join("cgroup.subtree_control");
        let mut enabled: Vec<String> = read_trimmed(&subtree)?
            .split_whitespace()
            .map(String::from)
            .collect();
        let mut warnings = Vec::new();
        for c in &wanted {
            if enabled.iter().any(|e| e == c) {
                continue;
            }
            if !available.iter().any(|a| a == c) {
                warnings.push(format!(
                    "cgroup v2 controller '{c}' is not available in {}",
                    parent.display()
                ));
                continue;
            }
            match write_file(&subtree, &format!("+{c}")) {
                Ok(()) => enabled.push(c.to_string()),
                Err(e) => warnings.push(format!(
                    "cannot enable cgroup v2 controller '{c}': {e}; {HOWTO}"
                )),
            }
        }
        for (need, c) in [(needs.pids, "pids"), (needs.cpuset, "cpuset")] {
            if need && !enabled.iter().any(|e| e == c) {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!(
                        "cgroup v2 controller '{c}' is needed but not usable in {}; {HOWTO}",
                        parent.display()
                    ),
                ));
            }
        }
        Ok(V2 {
            parent: parent.to_path_buf(),
            controllers: enabled,
            warnings,
        })
    }

    fn has(&self, c: &str) -> bool {
        self.controllers.iter().any(|e| e == c)
    }
}

impl Backend for V2 {
    fn kind(&self) -> MethodKind {
        MethodKind::CgroupV2
    }

    fn method(&self) -> MeasurementMethod {
        let mut warnings = self.warnings.clone();
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let peak = if self.has("memory") && !kernel_has_memory_peak(release.trim()) {
            warnings.push(format!(
                "peak memory is not measured: Linux {} has no cgroup v2 memory.peak (added in 5.19), and a sampled \
                 value would not be exact",
                release.trim()
            ));
            "not measured (no memory.peak before Linux 5.19)".to_string()
        } else if self.has("memory") {
            "peak memory + page cache of the whole tree (cgroup v2 memory.peak)".to_string()
        } else {
            warnings.push(format!(
                "peak memory is not measured: the memory controller is not enabled; {HOWTO}"
            ));
            "not measured (memory controller not enabled in the delegated cgroup)".to_string()
        };
        MeasurementMethod {
            kind: MethodKind::CgroupV2,
            cpu_time: "user and system CPU time of the whole process tree, children never waited for and killed \
                       ones included (cgroup v2 cpu.stat user_usec/system_usec, microseconds)"
                .into(),
            peak_memory: peak,
            wall_time: "CLOCK_MONOTONIC from just before spawn to the main process's exit".into(),
            warnings,
        }
    }

    fn create(&self, limits: &Limits, cores: Option<&[usize]>) -> io::Result<Box<dyn RunGroup>> {
        if limits.memory.is_some() && !self.has("memory") {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("--memory-limit needs the cgroup v2 memory controller; {HOWTO}"),
            ));
        }
        let dir = self.parent.join(group_name());
        std::fs::create_dir(&dir).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create cgroup {}: {e}", dir.display()),
            )
        })?;
        let mut g = V2Group {
            dir: Some(dir.clone()),
            procs: None,
        };
        write_limits(&dir, limits, cores)?;
        g.procs = Some(
            OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))?,
        );
        Ok(Box::new(g))
    }
}

/// Writes a run group's limits: `memory.max` and `memory.swap.max` = 0 (so the limit covers
/// memory + swap), `pids.max`, `cpuset.cpus`.
pub fn write_limits(dir: &Path, limits: &Limits, cores: Option<&[usize]>) -> io::Result<()> {
    if let Some(bytes) = limits.memory {
        write_file(&dir.join("memory.max"), &bytes.to_string())?;
        if dir.join("memory.swap.max").exists() {
            write_file(&dir.join("memory.swap.max"), "0")?;
        }
    }
    if let Some(max) = limits.pids {
        write_file(&dir.join("pids.max"), &max.to_string())?;
    }
    if let Some(cores) = cores {
        let list: Vec<String> = cores.iter().map(|c| c.to_string()).collect();
        write_file(&dir.join("cpuset.cpus"), &list.join(","))?;
    }
    Ok(())
}

/// Reads a run group's accounting: `cpu.stat` user/system, `memory.peak` (None when the file
/// is missing: memory controller off, or Linux before 5.19), `memory.events` oom_kill.
pub fn read_accounting(dir: &Path) -> io::Result<Accounting> {
    let stat = read_trimmed(&dir.join("cpu.stat"))?;
    let (user, system) = parse_cpu_stat(&stat).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}/cpu.stat lacks user_usec/system_usec", dir.display()),
        )
    })?;
    let peak_memory = match read_trimmed(&dir.join("memory.peak")) {
        Ok(s) => s.parse::<u64>().ok(),
        Err(_) => None,
    };
    let events = std::fs::read_to_string(dir.join("memory.events")).ok();
    let event = |key| {
        events
            .as_deref()
            .and_then(|s| keyed_value(s, key))
            .unwrap_or(0)
    };
    Ok(Accounting {
        user,
        system,
        peak_memory,
        oom_killed: event("oom_kill") > 0,
        at_memory_limit: event("max") > 0,
    })
}

/// Whether a kernel release (e.g. "5.15.0-91-generic") has cgroup v2 `memory.peak` (5.19+).
pub fn kernel_has_memory_peak(release: &str) -> bool {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty());
    let major: u32 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let minor: u32 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    (major, minor) >= (5, 19)
}

/// One run's group in the unified hierarchy.
pub struct V2Group {
    dir: Option<PathBuf>,
    procs: Option<File>,
}

impl V2Group {
    fn dir(&self) -> io::Result<&Path> {
        self.dir
            .as_deref()
            .ok_or_else(|| io::Error::other("cgroup already removed"))
    }
}

/// Reads user and system time from a cgroup v2 `cpu.stat` text.
pub fn parse_cpu_stat(content: &str) -> Option<(Duration, Duration)> {
    let user = keyed_value(content, "user_usec")?;
    let system = keyed_value(content, "system_usec")?;
    Some((Duration::from_micros(user), Duration::from_micros(system)))
}

impl RunGroup for V2Group {
    fn child_setup(&self) -> ChildSetup {
        ChildSetup {
            procs_fds: self.procs.iter().map(|f| f.as_raw_fd()).collect(),
            ..Default::default()
        }
    }

    fn cpu_so_far(&self, _main_pid: i32) -> io::Result<Duration> {
        let s = std::fs::read_to_string(self.dir()?.join("cpu.stat"))?;
        keyed_value(&s, "usage_usec")
            .map(Duration::from_micros)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "cpu.stat has no usage_usec"))
    }

    fn kill_all(&mut self, _main_pid: i32) -> io::Result<usize> {
        let dir = self.dir()?.to_path_buf();
        let procs = dir.join("cgroup.procs");
        let first = read_pids(&procs)?;
        if first.is_empty() {
            return Ok(0);
        }
        let kill_file = dir.join("cgroup.kill");
        if kill_file.exists() {
            write_file(&kill_file, "1")?;
        } else {
            write_file(&dir.join("cgroup.freeze"), "1")?;
            for pid in read_pids(&procs)? {
                sys::kill(pid, libc::SIGKILL)?;
            }
            write_file(&dir.join("cgroup.freeze"), "0")?;
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = read_pids(&procs)?;
            if left.is_empty() {
                return Ok(first.len());
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "processes {left:?} survived SIGKILL in {}",
                    dir.display()
                )));
            }
            for pid in left {
                sys::kill(pid, libc::SIGKILL)?;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn account(&self, _rusage: &Rusage) -> io::Result<Accounting> {
        read_accounting(self.dir()?)
    }

    fn destroy(&mut self) -> io::Result<()> {
        self.procs = None;
        match self.dir.take() {
            Some(dir) => remove_dir_retrying(&dir),
            None => Ok(()),
        }
    }
}

impl Drop for V2Group {
    fn drop(&mut self) {
        if self.dir.is_some() {
            let _ = self.kill_all(0);
            let _ = self.destroy();
        }
    }
}
