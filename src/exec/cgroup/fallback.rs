//! The rusage fallback, used when no cgroup is usable (not mounted, no permission) or when
//! forced with `--backend rusage`. It is announced loudly, on the terminal and in the results.
//!
//! CPU time: `wait4` rusage of the main process and the descendants it waited for — CPU time
//! of children never waited for is MISSED. Peak memory: `ru_maxrss`, the largest resident set of
//! a single waited process, not the tree — and never below tare's own resident set when it
//! spawned the command: Linux carries the parent's high-water mark into the child across fork
//! and exec (posix_spawn alike; `/bin/true` under a 210 MB parent reports 210 MB), so a small
//! command reads as tare's size (~24 MB), as `/usr/bin/time` reads ~1 MB, its own. Kill: SIGKILL to the run's process group; a process
//! that called setsid or changed its group escapes. Limits: RLIMIT_CPU on the main process,
//! RLIMIT_AS per process, wall time by tare; no task limit.

use super::{Accounting, Backend, ChildSetup, RunGroup};
use crate::exec::spec::Limits;
use crate::exec::sys::{self, Rusage};
use crate::results::{MeasurementMethod, MethodKind};
use std::io;
use std::time::Duration;

/// The fallback backend; `reasons` say why no cgroup backend was usable.
pub struct RusageBackend {
    reasons: Vec<String>,
}

impl RusageBackend {
    pub fn new(reasons: Vec<String>) -> Self {
        RusageBackend { reasons }
    }
}

/// The loud notice printed and recorded whenever the fallback measures.
pub const NOTICE: &str = "no cgroup is usable: measuring with wait4 rusage — CPU time of children that are not \
                          waited for is MISSED, peak memory is that of the largest single process and never below tare's own size, and \
                          processes that leave the process group survive the run (what gets exact numbers where tare \
                          runs: docs/where-tare-measures.md)";

impl Backend for RusageBackend {
    fn kind(&self) -> MethodKind {
        MethodKind::Rusage
    }

    fn method(&self) -> MeasurementMethod {
        let mut warnings = vec![NOTICE.to_string()];
        warnings.extend(self.reasons.iter().map(|r| format!("not used: {r}")));
        MeasurementMethod {
            kind: MethodKind::Rusage,
            cpu_time: "user and system CPU time of the main process and the descendants it waited for (wait4 \
                       rusage); children never waited for are missed"
                .into(),
            peak_memory: "largest resident set of a single waited-for process (ru_maxrss), not the tree; never below tare's own resident set when it spawned the command (Linux carries the parent's high-water mark into the child)".into(),
            wall_time: "CLOCK_MONOTONIC from just before spawn to the main process's exit".into(),
            warnings,
        }
    }

    fn create(
        &self,
        limits: &Limits,
        cores: Option<&[usize]>,
        _own: bool,
    ) -> io::Result<Box<dyn RunGroup>> {
        if limits.pids.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "--pids-limit needs a cgroup (pids controller)",
            ));
        }
        Ok(Box::new(RusageGroup {
            setup: ChildSetup {
                procs_fds: Vec::new(),
                cgroup_dir_fd: None,
                affinity: cores.map(<[usize]>::to_vec),
                rlimit_cpu: limits.cpu.map(|d| d.as_secs_f64().ceil().max(1.0) as u64),
                rlimit_as: limits.memory,
            },
        }))
    }
}

struct RusageGroup {
    setup: ChildSetup,
}

/// CPU time of one live process from /proc/<pid>/stat (fields 14 and 15, in clock ticks).
fn proc_cpu(pid: i32) -> io::Result<Duration> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // After the ')' field 3 (state) is index 0, so utime (14) is 11 and stime (15) is 12.
    let total = ticks(11) + ticks(12);
    Ok(Duration::from_secs_f64(
        total as f64 / sys::clock_ticks() as f64,
    ))
}

impl RunGroup for RusageGroup {
    fn child_setup(&self) -> ChildSetup {
        self.setup.clone()
    }

    fn cpu_so_far(&self, main_pid: i32) -> io::Result<Duration> {
        proc_cpu(main_pid)
    }

    fn kill_all(&mut self, main_pid: i32) -> io::Result<usize> {
        if main_pid <= 0 {
            return Ok(0);
        }
        // The child made itself leader of process group `main_pid` before exec.
        Ok(usize::from(sys::killpg(main_pid, libc::SIGKILL)?))
    }

    fn account(&self, rusage: &Rusage) -> io::Result<Accounting> {
        Ok(Accounting {
            user: rusage.user,
            system: rusage.system,
            peak_memory: Some(rusage.max_rss),
            oom_killed: false,
            at_memory_limit: false,
            pids_limited: false,
        })
    }

    fn destroy(&mut self) -> io::Result<()> {
        Ok(())
    }
}
