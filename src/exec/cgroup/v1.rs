//! cgroup v1 backend: one fresh group per run in the cpuacct, memory and freezer hierarchies
//! (plus pids and cpuset when asked for), below this process's own cgroup in each.
//!
//! CPU time: `cpuacct.usage_user` / `cpuacct.usage_sys` (nanoseconds, whole tree).
//! Peak memory: `memory.memsw.max_usage_in_bytes` when swap accounting exists, else
//! `memory.max_usage_in_bytes` (whole tree, page cache charged to it included).
//! Kill: freeze (`freezer.state`), SIGKILL every member, thaw, wait until empty.

use super::{
    cgroup_mounts, group_name, keyed_value, own_cgroup, read_pids, read_trimmed, read_u64, remove_dir_retrying,
    write_file, Accounting, Backend, ChildSetup, Needs, RunGroup,
};
use crate::exec::spec::Limits;
use crate::exec::sys::{self, Rusage};
use crate::results::{MeasurementMethod, MethodKind};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The v1 hierarchies this backend uses: the parent directory of run groups in each.
#[derive(Debug)]
pub struct V1 {
    cpuacct: PathBuf,
    memory: PathBuf,
    freezer: PathBuf,
    pids: Option<PathBuf>,
    cpuset: Option<PathBuf>,
    memsw: bool,
}

fn parent_in(root: &Path, mounts: &[(String, String, String)], ctrl: &str) -> io::Result<PathBuf> {
    let mount = mounts
        .iter()
        .find(|(fs, _, opts)| fs == "cgroup" && opts.split(',').any(|o| o == ctrl))
        .map(|(_, mp, _)| mp.clone())
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("controller '{ctrl}' is not mounted")))?;
    let own = own_cgroup(root, Some(ctrl))?;
    let dir = root.join(mount.trim_start_matches('/')).join(own.trim_start_matches('/'));
    // Probe that we may create groups here: the directory must be writable.
    let procs = dir.join("cgroup.procs");
    if !procs.exists() {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("{} does not exist", procs.display())));
    }
    if !sys::writable(&dir) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("no permission to create cgroups in {} (run as root)", dir.display()),
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
        let pids = if needs.pids { Some(parent_in(root, &mounts, "pids")?) } else { None };
        let cpuset = if needs.cpuset { Some(parent_in(root, &mounts, "cpuset")?) } else { None };
        let memsw = memory.join("memory.memsw.max_usage_in_bytes").exists();
        Ok(V1 { cpuacct, memory, freezer, pids, cpuset, memsw })
    }
}

impl Backend for V1 {
    fn kind(&self) -> MethodKind {
        MethodKind::CgroupV1
    }

    fn method(&self) -> MeasurementMethod {
        MeasurementMethod {
            kind: MethodKind::CgroupV1,
            cpu_time: "user and system CPU time of the whole process tree, children never waited for and \
                       killed ones included (cgroup v1 cpuacct.usage_user/usage_sys, nanoseconds)"
                .into(),
            peak_memory: if self.memsw {
                "peak memory + swap of the whole tree, page cache charged to it included \
                 (cgroup v1 memory.memsw.max_usage_in_bytes)"
            } else {
                "peak memory of the whole tree, page cache charged to it included (cgroup v1 memory.max_usage_in_bytes)"
            }
            .into(),
            wall_time: "CLOCK_MONOTONIC from just before spawn to the main process's exit".into(),
            warnings: Vec::new(),
        }
    }

    fn create(&self, limits: &Limits, cores: Option<&[usize]>) -> io::Result<Box<dyn RunGroup>> {
        let name = group_name();
        let mut g = V1Group { dirs: Vec::new(), procs: Vec::new(), freezer: None, cpuacct: None, memory: None, memsw: self.memsw };
        // On any error the partially built group is dropped, which removes what was made.
        let cpuacct = g.make(&self.cpuacct, &name)?;
        g.cpuacct = Some(cpuacct);
        let memory = g.make(&self.memory, &name)?;
        if let Some(bytes) = limits.memory {
            write_file(&memory.join("memory.limit_in_bytes"), &bytes.to_string())?;
            if self.memsw {
                write_file(&memory.join("memory.memsw.limit_in_bytes"), &bytes.to_string())?;
            }
        }
        g.memory = Some(memory);
        let freezer = g.make(&self.freezer, &name)?;
        g.freezer = Some(freezer);
        if let Some(p) = &self.pids {
            let dir = g.make(p, &name)?;
            if let Some(max) = limits.pids {
                write_file(&dir.join("pids.max"), &max.to_string())?;
            }
        }
        if let (Some(p), Some(cores)) = (&self.cpuset, cores) {
            let dir = g.make_unjoined(p, &name)?;
            let list: Vec<String> = cores.iter().map(|c| c.to_string()).collect();
            write_file(&dir.join("cpuset.cpus"), &list.join(","))?;
            let mems = read_trimmed(&p.join("cpuset.mems"))?;
            write_file(&dir.join("cpuset.mems"), &mems)?;
            g.join(&dir)?;
        }
        Ok(Box::new(g))
    }
}

/// One run's groups across the v1 hierarchies.
struct V1Group {
    dirs: Vec<PathBuf>,
    procs: Vec<File>,
    freezer: Option<PathBuf>,
    cpuacct: Option<PathBuf>,
    memory: Option<PathBuf>,
    memsw: bool,
}

impl V1Group {
    fn make_unjoined(&mut self, parent: &Path, name: &str) -> io::Result<PathBuf> {
        let dir = parent.join(name);
        std::fs::create_dir(&dir)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot create cgroup {}: {e}", dir.display())))?;
        self.dirs.push(dir.clone());
        Ok(dir)
    }

    fn join(&mut self, dir: &Path) -> io::Result<()> {
        let f = OpenOptions::new().write(true).open(dir.join("cgroup.procs"))?;
        self.procs.push(f);
        Ok(())
    }

    fn make(&mut self, parent: &Path, name: &str) -> io::Result<PathBuf> {
        let dir = self.make_unjoined(parent, name)?;
        self.join(&dir)?;
        Ok(dir)
    }

    fn freezer_state(&self, state: &str) -> io::Result<()> {
        let Some(f) = &self.freezer else { return Ok(()) };
        write_file(&f.join("freezer.state"), state)
    }
}

impl RunGroup for V1Group {
    fn child_setup(&self) -> ChildSetup {
        ChildSetup { procs_fds: self.procs.iter().map(|f| f.as_raw_fd()).collect(), ..Default::default() }
    }

    fn cpu_so_far(&self, _main_pid: i32) -> io::Result<Duration> {
        let dir = self.cpuacct.as_ref().ok_or_else(|| io::Error::other("no cpuacct group"))?;
        Ok(Duration::from_nanos(read_u64(&dir.join("cpuacct.usage"))?))
    }

    fn kill_all(&mut self, _main_pid: i32) -> io::Result<usize> {
        let Some(freezer) = self.freezer.clone() else { return Ok(0) };
        let procs = freezer.join("cgroup.procs");
        let first = read_pids(&procs)?;
        if first.is_empty() {
            return Ok(0);
        }
        // Freeze so nothing can fork while we kill, then kill every member, then thaw so the
        // kill is delivered.
        self.freezer_state("FROZEN")?;
        let deadline = Instant::now() + Duration::from_secs(2);
        while read_trimmed(&freezer.join("freezer.state"))? != "FROZEN" && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(100));
        }
        let mut killed = 0;
        for pid in read_pids(&procs)? {
            sys::kill(pid, libc::SIGKILL)?;
            killed += 1;
        }
        self.freezer_state("THAWED")?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = read_pids(&procs)?;
            if left.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!("processes {left:?} survived SIGKILL in {}", freezer.display())));
            }
            for pid in left {
                sys::kill(pid, libc::SIGKILL)?;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Ok(killed.max(first.len()))
    }

    fn account(&self, _rusage: &Rusage) -> io::Result<Accounting> {
        let cpu = self.cpuacct.as_ref().ok_or_else(|| io::Error::other("no cpuacct group"))?;
        let user = Duration::from_nanos(read_u64(&cpu.join("cpuacct.usage_user"))?);
        let system = Duration::from_nanos(read_u64(&cpu.join("cpuacct.usage_sys"))?);
        let mem = self.memory.as_ref().ok_or_else(|| io::Error::other("no memory group"))?;
        let peak_file = if self.memsw { "memory.memsw.max_usage_in_bytes" } else { "memory.max_usage_in_bytes" };
        let peak = read_u64(&mem.join(peak_file))?;
        let oom = std::fs::read_to_string(mem.join("memory.oom_control"))
            .ok()
            .and_then(|s| keyed_value(&s, "oom_kill"))
            .unwrap_or(0);
        Ok(Accounting { user, system, peak_memory: Some(peak), oom_killed: oom > 0 })
    }

    fn destroy(&mut self) -> io::Result<()> {
        self.procs.clear();
        let mut first_err = None;
        for dir in self.dirs.drain(..).rev() {
            if let Err(e) = remove_dir_retrying(&dir) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl Drop for V1Group {
    fn drop(&mut self) {
        if !self.dirs.is_empty() {
            let _ = self.kill_all(0);
            let _ = self.destroy();
        }
    }
}
