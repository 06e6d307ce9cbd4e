//! Accounting backends: cgroup v1, cgroup v2 and the rusage fallback, behind one interface.
//!
//! A [`Backend`] is chosen once at start ([`detect`]); for each run it hands out a
//! [`RunGroup`] — cgroups proven empty (v1 reuses its groups from run to run, v2 makes one per
//! run) — that the child joins before exec, that accounts CPU time and peak memory of the whole
//! tree, enforces memory and task limits, and kills whatever is left when the run ends.

pub mod adopt;
pub mod fallback;
pub mod lease;
pub mod mount;
pub mod place;
pub mod v1;
pub mod v2;

use super::spec::Limits;
use super::sys::Rusage;
use crate::results::{MeasurementMethod, MethodKind};
use std::io;
use std::os::fd::RawFd;
use std::path::Path;
use std::time::Duration;

/// What a run group accounted once the run ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Accounting {
    pub user: Duration,
    pub system: Duration,
    pub peak_memory: Option<u64>,
    /// The kernel's OOM killer acted in this group (the memory limit was hit).
    pub oom_killed: bool,
    /// The run pressed against its memory limit (the kernel had to reclaim to stay under it:
    /// v1 `failcnt`, v2 `memory.events max`). A run that thrashes there — evicting and
    /// refaulting its own program text instead of being OOM-killed — can burn its CPU or wall
    /// limit first; such a run is marked `memory`.
    pub at_memory_limit: bool,
    /// A fork or clone failed at the task limit (`pids.events` max > 0 in the run's own pids
    /// group: cgroup v2, and v1 where the run has a task limit).
    pub pids_limited: bool,
}

/// Work the forked child does before exec to join its group (async-signal-safe only).
#[derive(Debug, Clone, Default)]
pub struct ChildSetup {
    /// Open join files to write "0" into (moves the child itself): `tasks` on v1 (no global
    /// lock for a thread moving itself), `cgroup.procs` on v2.
    pub procs_fds: Vec<RawFd>,
    /// cgroup v2: the run group's directory, to start the child in it with clone3
    /// (CLONE_INTO_CGROUP) instead of writing `procs_fds`.
    pub cgroup_dir_fd: Option<RawFd>,
    /// Fallback, and v2 without cpuset: confine with sched_setaffinity.
    pub affinity: Option<Vec<usize>>,
    /// Fallback only: RLIMIT_CPU in seconds (soft) for the main process.
    pub rlimit_cpu: Option<u64>,
    /// Fallback only: RLIMIT_AS in bytes for each process.
    pub rlimit_as: Option<u64>,
}

/// One run's group of processes.
pub trait RunGroup {
    /// What the child must do before exec to belong to this group.
    fn child_setup(&self) -> ChildSetup;
    /// CPU time used so far by the whole group (for the CPU-limit watchdog).
    fn cpu_so_far(&self, main_pid: i32) -> io::Result<Duration>;
    /// Freezes and kills every process still in the group; returns how many there were.
    fn kill_all(&mut self, main_pid: i32) -> io::Result<usize>;
    /// Reads the final accounting; `rusage` is wait4's record of the main process.
    fn account(&self, rusage: &Rusage) -> io::Result<Accounting>;
    /// Removes the group. Called once, after `kill_all`.
    fn destroy(&mut self) -> io::Result<()>;
    /// The directory of the run's memory cgroup (v1 memory hierarchy, or the v2 group), for
    /// the optional meters; `None` where there is none.
    fn memory_dir(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// The run's cgroup v2 directory (for `io.stat`); `None` on v1 and the fallback.
    fn unified_dir(&self) -> Option<std::path::PathBuf> {
        None
    }
}

/// A way of measuring runs, chosen once per session.
pub trait Backend {
    fn kind(&self) -> MethodKind;
    /// What each number includes, and any caveats, for the record.
    fn method(&self) -> MeasurementMethod;
    /// Hands out an empty group for one run with these limits and cores. `own`: the run reads
    /// or sets its group's own files (I/O counters, `memory.high`, a memory timeline), so a
    /// group shared with earlier runs will not do.
    fn create(
        &self,
        limits: &Limits,
        cores: Option<&[usize]>,
        own: bool,
    ) -> io::Result<Box<dyn RunGroup>>;
}

/// Which backend the user asked for (`--backend`, hidden; also `TARE_BACKEND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preference {
    Auto,
    V1,
    V2,
    Rusage,
}

impl std::str::FromStr for Preference {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Preference::Auto),
            "v1" | "cgroup-v1" => Ok(Preference::V1),
            "v2" | "cgroup-v2" => Ok(Preference::V2),
            "rusage" | "fallback" => Ok(Preference::Rusage),
            _ => Err(format!("unknown backend '{s}': use auto, v1, v2 or rusage")),
        }
    }
}

/// Chooses a backend by what is usable: cgroup v1 (cpuacct, memory and freezer), then a
/// delegated cgroup v2 subtree, then the rusage fallback. `needs` says which optional
/// controllers the session uses, so an unusable one is found before the first run.
///
/// When a specific backend is asked for and is not usable, this fails with the reason.
/// `reasons` collects why better backends were passed over (for the loud fallback notice).
pub fn detect(
    pref: Preference,
    needs: &Needs,
    root: &Path,
) -> io::Result<(Box<dyn Backend>, Vec<String>)> {
    let mut reasons = Vec::new();
    if matches!(pref, Preference::Auto | Preference::V1) {
        match v1::V1::discover(root, needs) {
            Ok(b) => return Ok((Box::new(b), reasons)),
            Err(e) if pref == Preference::V1 => return Err(e),
            Err(e) => reasons.push(format!("cgroup v1: {e}")),
        }
    }
    if matches!(pref, Preference::Auto | Preference::V2) {
        match v2::V2::discover(root, needs) {
            Ok(b) => return Ok((Box::new(b), reasons)),
            Err(e) if pref == Preference::V2 => return Err(e),
            Err(e) => reasons.push(format!("cgroup v2: {e}")),
        }
    }
    Ok((
        Box::new(fallback::RusageBackend::new(reasons.clone())),
        reasons,
    ))
}

/// Optional controllers a session needs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Needs {
    pub cpuset: bool,
    pub pids: bool,
}

/// Reads a whole small file as a trimmed string, with the path in the error.
pub(crate) fn read_trimmed(path: &Path) -> io::Result<String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// Writes a small control file, with the path in the error.
pub(crate) fn write_file(path: &Path, value: &str) -> io::Result<()> {
    std::fs::write(path, value).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot write '{value}' to {}: {e}", path.display()),
        )
    })
}

/// Finds `key value` in a flat-keyed file such as cpu.stat, memory.events or memory.oom_control.
pub(crate) fn keyed_value(content: &str, key: &str) -> Option<u64> {
    content.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        (it.next() == Some(key))
            .then(|| it.next()?.parse().ok())
            .flatten()
    })
}

/// A single-value cgroup control file kept open and re-read from offset 0: one `pread` per
/// read instead of open + stat + read + close. Not for lists such as `cgroup.procs`.
#[derive(Debug)]
pub(crate) struct ControlFile {
    file: std::fs::File,
    path: std::path::PathBuf,
}

impl ControlFile {
    pub(crate) fn open(path: std::path::PathBuf) -> io::Result<ControlFile> {
        let file = std::fs::File::open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(ControlFile { file, path })
    }

    /// Opens for reading and writing (a counter that is reset by a write).
    pub(crate) fn open_rw(path: std::path::PathBuf) -> io::Result<ControlFile> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(ControlFile { file, path })
    }

    /// Writes `value` at offset 0 (one `pwrite`), with the path in the error.
    pub(crate) fn write(&self, value: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.file.write_at(value, 0).map(drop).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot write '{}' to {}: {e}",
                    String::from_utf8_lossy(value),
                    self.path.display()
                ),
            )
        })
    }

    /// Reads the file's current content into `buf` (truncated to its size).
    pub(crate) fn read<'a>(&self, buf: &'a mut [u8]) -> io::Result<&'a str> {
        use std::os::unix::fs::FileExt;
        let n = self
            .file
            .read_at(buf, 0)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.path.display())))?;
        std::str::from_utf8(&buf[..n]).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not text", self.path.display()),
            )
        })
    }

    pub(crate) fn read_u64(&self) -> io::Result<u64> {
        let mut buf = [0u8; 64];
        let s = self.read(&mut buf)?.trim();
        s.parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not a number: '{s}'", self.path.display()),
            )
        })
    }
}

/// Reads a small control file without a size query (open, read, close).
pub(crate) fn read_small(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let mut buf = [0u8; 512];
    let mut n = 0;
    loop {
        let k = f.read(&mut buf[n..])?;
        if k == 0 || n + k == buf.len() {
            n += k;
            break;
        }
        n += k;
    }
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// Pids listed in a `cgroup.procs` file: open, read, close (no size query: the file says
/// size 0, so `fs::read_to_string`'s statx would be a wasted syscall on every run).
pub(crate) fn read_pids(path: &Path) -> io::Result<Vec<i32>> {
    let f = std::fs::File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    pids_of(f)
}

/// Pids listed in the `cgroup.procs` of the group whose directory `dir` is open: the same as
/// [`read_pids`], one path component to walk instead of the whole path. A fresh open each
/// time, as a kept-open `cgroup.procs` would list stale pids on cgroup v1.
pub(crate) fn read_pids_in(dir: &std::fs::File) -> io::Result<Vec<i32>> {
    pids_of(crate::exec::sys::open_in(dir, c"cgroup.procs")?)
}

fn pids_of(mut f: std::fs::File) -> io::Result<Vec<i32>> {
    use std::io::Read;
    // Plain reads into a buffer: `read_to_string` would ask for the size first (statx, lseek).
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match f.read(&mut buf)? {
            0 => break,
            n => text.extend_from_slice(&buf[..n]),
        }
    }
    Ok(String::from_utf8_lossy(&text)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect())
}

/// Removes a cgroup directory, retrying briefly while the kernel still counts exiting tasks.
pub(crate) fn remove_dir_retrying(dir: &Path) -> io::Result<()> {
    let r = remove_dir_retrying_once(dir);
    if r.is_err() {
        // Left behind: keep the session's lock file at exit, so the next tare start finds the
        // group's owner gone and sweeps it (see `lease::release`).
        lease::keep_for_sweep();
    }
    r
}

fn remove_dir_retrying_once(dir: &Path) -> io::Result<()> {
    let mut delay = Duration::from_micros(50);
    for _ in 0..40 {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_millis(50));
            }
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot remove cgroup {}: {e}", dir.display()),
                ))
            }
        }
    }
    Err(io::Error::other(format!(
        "cgroup {} still busy after its processes were killed",
        dir.display()
    )))
}

pub(crate) use lease::group_name;

/// Sends SIGKILL to every process `members` lists (a group's `cgroup.procs`) until it lists
/// none, for at most 10 s; then an error naming the survivors and the group `what`.
pub(crate) fn kill_until_empty(
    what: &Path,
    members: impl Fn() -> io::Result<Vec<i32>>,
) -> io::Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = members()?;
        if left.is_empty() {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(io::Error::other(format!(
                "processes {left:?} survived SIGKILL in {}",
                what.display()
            )));
        }
        for pid in left {
            crate::exec::sys::kill(pid, libc::SIGKILL)?;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Current cgroup path of this process in a hierarchy, from /proc/self/cgroup.
/// `controller` is a v1 controller name, or `None` for the v2 line ("0::").
pub(crate) fn own_cgroup(root: &Path, controller: Option<&str>) -> io::Result<String> {
    let content = std::fs::read_to_string(root.join("proc/self/cgroup"))?;
    for line in content.lines() {
        let mut parts = line.splitn(3, ':');
        let (id, ctrls, path) = (parts.next(), parts.next(), parts.next());
        let (Some(id), Some(ctrls), Some(path)) = (id, ctrls, path) else {
            continue;
        };
        let hit = match controller {
            None => id == "0" && ctrls.is_empty(),
            Some(c) => ctrls.split(',').any(|x| x == c),
        };
        if hit {
            return Ok(path.to_string());
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        "not in /proc/self/cgroup",
    ))
}

/// Mount points of cgroup file systems, from /proc/self/mountinfo: (fstype, mount point, super options).
pub(crate) fn cgroup_mounts(root: &Path) -> io::Result<Vec<(String, String, String)>> {
    let content = std::fs::read_to_string(root.join("proc/self/mountinfo"))?;
    let mut out = Vec::new();
    for line in content.lines() {
        // fields: id parent maj:min root mountpoint opts [optional...] - fstype source superopts
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let mount_point = left.split_whitespace().nth(4).unwrap_or("");
        let mut r = right.split_whitespace();
        let fstype = r.next().unwrap_or("");
        let _source = r.next();
        let superopts = r.next().unwrap_or("");
        if fstype == "cgroup" || fstype == "cgroup2" {
            out.push((
                fstype.to_string(),
                unescape_mount(mount_point),
                superopts.to_string(),
            ));
        }
    }
    Ok(out)
}

fn unescape_mount(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_values() {
        let s = "usage_usec 120\nuser_usec 100\nsystem_usec 20\n";
        assert_eq!(keyed_value(s, "user_usec"), Some(100));
        assert_eq!(keyed_value(s, "usage"), None);
        assert_eq!(
            keyed_value("oom_kill_disable 0\nunder_oom 0\noom_kill 3", "oom_kill"),
            Some(3)
        );
    }

    #[test]
    fn preference_parses() {
        assert_eq!("v1".parse::<Preference>(), Ok(Preference::V1));
        assert!("v3".parse::<Preference>().is_err());
    }
}
