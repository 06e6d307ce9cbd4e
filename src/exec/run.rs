//! Spawns one command into a fresh run group, watches its limits, waits for it, kills what
//! remains and reads the kernel's accounting.

use super::cgroup::{Backend, ChildSetup, RunGroup};
use super::spawn;
use super::spec::{Input, Measurement, Priority, RunSpec, Sink};
use super::sys::{self, WaitStatus};
use crate::results::Termination;
use std::fs::File;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Why tare itself ended a run before its main process exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    Cpu,
    Wall,
    Interrupted,
}

/// An error that happened before the command could start (e.g. program not found).
#[derive(Debug)]
pub struct SpawnError {
    pub program: String,
    pub source: io::Error,
}

impl std::fmt::Display for SpawnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.source.kind() {
            io::ErrorKind::NotFound => {
                write!(
                    f,
                    "cannot run '{}': program not found; check the name or PATH, or use --shell",
                    self.program
                )
            }
            io::ErrorKind::PermissionDenied => {
                write!(
                    f,
                    "cannot run '{}': permission denied; is it executable?",
                    self.program
                )
            }
            _ => write!(f, "cannot run '{}': {}", self.program, self.source),
        }
    }
}

impl std::error::Error for SpawnError {}

/// With isolation the child forks twice more inside new namespaces and the first child never
/// execs (it waits for the tool and passes on its status), so a vfork-style spawn would keep
/// tare suspended for the whole run: isolated runs are started with fork through std.
fn open_sink(sink: &Sink) -> io::Result<Stdio> {
    Ok(match sink {
        Sink::Null => Stdio::null(),
        Sink::Inherit => Stdio::inherit(),
        Sink::File(p) => Stdio::from(crate::results::fsio::open_append(p)?),
    })
}

/// After an isolated run as root: clears set-ID bits the tool left in its `--writable`
/// directories (see `isolate::sweep`), saying so on stderr. A directory that cannot be checked
/// whole is an error: the session stops rather than leave a set-ID file unseen.
fn sweep_writable(spec: &RunSpec, since: std::time::SystemTime) -> anyhow::Result<()> {
    let Some(iso) = &spec.isolation else {
        return Ok(());
    };
    if iso.writable.is_empty() || !super::isolate::sys::is_root() {
        return Ok(());
    }
    for dir in &iso.writable {
        match super::isolate::sweep::sweep(dir, since) {
            Ok(cleared) => {
                for c in cleared {
                    eprintln!(
                        "tare: warning: the isolated command left {} set-ID (mode {:o}); its set-user-ID/set-group-ID bits were cleared",
                        c.path.display(),
                        c.mode
                    );
                }
            }
            Err(e) => anyhow::bail!(
                "cannot check writable directory {} for set-ID files the isolated command left: {e}; check it by hand (find DIR -perm /6000) before anyone runs what is there",
                dir.display()
            ),
        }
    }
    Ok(())
}

fn build_isolated_command(
    spec: &RunSpec,
    setup: ChildSetup,
) -> io::Result<(Command, super::isolate::FailureReport)> {
    let priority = spec.priority;
    let aslr_off = spec.aslr_off;
    let inherit_fds = spec.inherit_fds.clone();
    let program = spec
        .argv
        .first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let mut cmd = Command::new(program);
    cmd.args(&spec.argv[1..]);
    cmd.env_clear();
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    cmd.stdin(match &spec.stdin {
        Input::Null => Stdio::null(),
        Input::File(p) => Stdio::from(File::open(p).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot open input file {}: {e}", p.display()),
            )
        })?),
    });
    cmd.stdout(open_sink(&spec.stdout)?);
    cmd.stderr(open_sink(&spec.stderr)?);
    let isolation = match &spec.isolation {
        Some(iso) => Some(super::isolate::Prepared::new(
            iso,
            spec.cwd.as_deref(),
            &spec.env,
        )?),
        None => None,
    };
    let report = match &isolation {
        Some(iso) => {
            if let Ok(path) = spawn::resolve(program, &spec.env, spec.cwd.as_deref()) {
                iso.check_program(&path)?;
            }
            iso.failure_report()?
        }
        None => return Err(io::Error::other("isolated command without isolation")),
    };
    // SAFETY (of the closure's contents): between fork and exec only async-signal-safe calls
    // are made — signal, setpgid, write, sched_setaffinity, setrlimit, personality — on data prepared
    // before the fork; nothing allocates or takes a lock.
    unsafe {
        cmd.pre_exec(move || {
            sys::reset_signals();
            sys::setpgid_self()?;
            for &fd in &inherit_fds {
                sys::clear_cloexec(fd)?;
            }
            if aslr_off {
                sys::disable_aslr_self()?;
            }
            // Priority first: raising it needs privileges the tool no longer has after
            // `enter`; init and the tool inherit it.
            match priority {
                Priority::Normal => {}
                Priority::High => sys::set_nice_self(-20)?,
                Priority::Realtime { cap_seconds } => {
                    let us = cap_seconds.saturating_mul(1_000_000);
                    sys::setrlimit(libc::RLIMIT_RTTIME, us, us.saturating_add(1_000_000))?;
                    sys::set_fifo_self(1)?;
                }
            }
            if let Some(iso) = &isolation {
                // Async-signal-safe by design; returns only in the tool's process, with every
                // capability dropped, which then joins the run's groups alone (see
                // exec::isolate).
                iso.enter()?;
            }
            for &fd in &setup.procs_fds {
                sys::write_raw(fd, b"0")?;
            }
            if let Some(cpus) = &setup.affinity {
                sys::set_affinity_self(cpus)?;
            }
            if let Some(secs) = setup.rlimit_cpu {
                sys::setrlimit(libc::RLIMIT_CPU, secs, secs + 1)?;
            }
            if let Some(bytes) = setup.rlimit_as {
                sys::setrlimit(libc::RLIMIT_AS, bytes, bytes)?;
            }
            Ok(())
        });
    }
    Ok((cmd, report))
}

/// What [`Executor::run_with`] does once its `during` callback has returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Kill the whole tree now; the run is `failed`.
    Kill,
    /// Wait for the command to exit: at most this long from now (then kill it: `wall`), or,
    /// with `None`, under the spec's own limits.
    Wait(Option<Duration>),
}

/// Runs commands one at a time through a measuring backend.
pub struct Executor {
    backend: Box<dyn Backend>,
    /// Logical CPUs tare may use, read once (it costs several file reads).
    cpus: usize,
    /// tare's blkio group for the I/O meter (cgroup v1), made on the first run that asks.
    blkio: std::cell::OnceCell<Option<super::io::BlkioGroup>>,
}

impl Executor {
    pub fn new(backend: Box<dyn Backend>) -> Self {
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        Executor {
            backend,
            cpus,
            blkio: std::cell::OnceCell::new(),
        }
    }

    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    /// Runs `spec` once and measures it. `cancel` is checked while the run is alive; when it
    /// becomes true the whole tree is killed and the run is marked `failed`.
    ///
    /// Errors are returned only when tare could not do its job (group not created, program not
    /// found): a command that fails or hits a limit is a measurement, not an error.
    pub fn run(&self, spec: &RunSpec, cancel: &AtomicBool) -> anyhow::Result<Measurement> {
        let (m, _) = self.run_with(spec, cancel, |_| ((), After::Wait(None)))?;
        Ok(m)
    }

    /// Runs `spec` once like [`Executor::run`], and calls `during(pid)` as soon as the command
    /// has started (in its run group, pinned, isolated as asked) — e.g. to hold a conversation
    /// with it over a descriptor it inherited (`RunSpec::inherit_fds`). `during` must not block
    /// without bound: it enforces its own time limits and watches `cancel`. What it returns says
    /// what happens next: kill the whole tree at once (the run is then `failed`), or wait for
    /// the command to exit, at most the given time (then kill it: `wall`) or under the spec's
    /// limits. The accounting (CPU time, peak memory) covers the whole run, conversation
    /// included. `during` is not called when the command could not start.
    pub fn run_with<R>(
        &self,
        spec: &RunSpec,
        cancel: &AtomicBool,
        during: impl FnOnce(i32) -> (R, After),
    ) -> anyhow::Result<(Measurement, R)> {
        let cores = spec.cores.as_deref();
        let m = &spec.meters;
        let own = m.io || m.memory_high.is_some() || m.memory_sample.is_some();
        let mut group = self.backend.create(&spec.limits, cores, own)?;
        let since = std::time::SystemTime::now();
        // Orphans of the run that left its groups are tare's (subreaper): swept at its end.
        let grouped = self.backend.kind() != crate::results::MethodKind::Rusage;
        let before = if grouped {
            super::reaper::children()
        } else {
            Vec::new()
        };
        let result = self.run_in(spec, group.as_mut(), cancel, during);
        let destroyed = group.destroy();
        let orphans = if grouped {
            super::reaper::sweep(&before)
        } else {
            0
        };
        let swept = sweep_writable(spec, since);
        let mut m = result?;
        if orphans > 0 {
            m.0.escaped = true;
            m.0.orphans_killed = orphans;
        }
        destroyed?;
        swept?;
        Ok(m)
    }

    fn run_in<R>(
        &self,
        spec: &RunSpec,
        group: &mut dyn RunGroup,
        cancel: &AtomicBool,
        during: impl FnOnce(i32) -> (R, After),
    ) -> anyhow::Result<(Measurement, R)> {
        let program = || {
            spec.argv
                .first()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        // `--ready`: the pipe or socket exists before the spawn; the spec points at it.
        let armed = match &spec.meters.ready {
            Some(r) => Some(super::ready::arm(r)?),
            None => None,
        };
        let with_ready;
        let spec = match &armed {
            Some(a) => {
                with_ready = a.apply(spec);
                &with_ready
            }
            None => spec,
        };
        let mut setup = group.child_setup();
        let blkio = if spec.meters.io {
            self.blkio_group()?
        } else {
            None
        };
        if let Some(g) = blkio {
            setup.procs_fds.push(g.procs_fd());
        }
        let io_start = spec.meters.io.then(|| super::io::start(blkio));
        if let Some(bytes) = spec.meters.memory_high {
            super::timeline::set_memory_high(group.unified_dir().as_deref(), bytes)?;
        }
        let sampler = spec.meters.memory_sample.and_then(|iv| {
            let dir = group.memory_dir()?;
            super::timeline::arm(&dir, iv)
        });
        // `join`: time the child spent joining its groups inside the timed interval, taken
        // out of the wall time (see `sys::ChildPlan::join_ns`).
        // `_in_flight`: registered until the end of this function (the main process is reaped
        // by then), so a parallel run's orphan sweep never takes it for an orphan.
        let (start, pid, join, _in_flight) = if spec.isolation.is_some() {
            let (mut cmd, report) =
                build_isolated_command(spec, setup).map_err(|source| SpawnError {
                    program: program(),
                    source,
                })?;
            // spawn returns when the tool execs (the intermediate and init close std's exec
            // pipe), so the clock starts after the namespaces are set up, as in BenchExec.
            let starting = super::reaper::starting();
            let child = cmd.spawn().map_err(|e| SpawnError {
                program: program(),
                source: report.explain(e),
            })?;
            let in_flight = starting.started(child.id() as i32);
            (Instant::now(), child.id() as i32, Duration::ZERO, in_flight)
        } else {
            let (plan, held) = spawn::prepare(spec, &setup).map_err(|source| SpawnError {
                program: program(),
                source,
            })?;
            let starting = super::reaper::starting();
            let start = Instant::now();
            let pid = spawn::start(&plan).map_err(|source| SpawnError {
                program: program(),
                source,
            })?;
            let in_flight = starting.started(pid);
            drop(held);
            let join = Duration::from_nanos(plan.join_ns.load(Ordering::SeqCst));
            (start, pid, join, in_flight)
        };
        let started = (|| -> io::Result<_> {
            let sampler = sampler.map(|s| s.start(start)).transpose()?;
            let watcher = armed.map(|a| a.start(pid, start)).transpose()?;
            Ok((sampler, watcher))
        })();
        let (sampler, watcher) = match started {
            Ok(both) => both,
            Err(e) => {
                // No meter thread: end the run now rather than leave it unwatched.
                let _ = group.kill_all(pid);
                let _ = sys::kill(pid, libc::SIGKILL);
                let _ = sys::wait4(pid);
                return Err(anyhow::anyhow!("cannot start a meter's thread: {e}"));
            }
        };
        let (r, after) = during(pid);
        let stopped = match after {
            After::Kill => {
                group.kill_all(pid)?;
                // The main process may have been outside the group's reach (fallback).
                sys::kill(pid, libc::SIGKILL)?;
                Some(Stopped::Interrupted)
            }
            After::Wait(None) => self.watch(spec, group, pid, start, cancel)?,
            After::Wait(Some(grace)) => {
                let mut limited = spec.clone();
                let deadline = start.elapsed() + grace;
                limited.limits.wall = Some(spec.limits.wall.map_or(deadline, |w| w.min(deadline)));
                self.watch(&limited, group, pid, start, cancel)?
            }
        };
        let exited = watcher.as_ref().map(|_| start.elapsed());
        let ready = watcher.map(super::ready::Watcher::finish);
        let memory_timeline = sampler.map(super::timeline::Sampler::finish);
        // The exited main process is not reaped yet: its /proc/PID/io holds its own and its
        // reaped descendants' counts.
        let proc_io = io_start.as_ref().and_then(|_| super::io::proc_io(pid));
        let (status, rusage) = sys::wait4(pid)?;
        let wall = match ready {
            // Stopped because it was ready: the run's time is its time to ready.
            Some(super::ready::Outcome {
                ready: Some(t),
                stopped: true,
            }) => t.saturating_sub(join),
            // The watcher's join is not the run's time.
            Some(_) => exited.unwrap_or_default().saturating_sub(join),
            None => start.elapsed().saturating_sub(join),
        };
        let leftover = group.kill_all(pid)?;
        let acc = group.account(&rusage)?;
        let io = io_start.map(|s| {
            let unified = group.unified_dir().map(|d| d.join("io.stat"));
            let mem = group.memory_dir().map(|d| d.join("memory.stat"));
            super::io::finish(s, blkio, unified.as_deref(), proc_io, mem.as_deref())
        });
        let cpu = acc.user + acc.system;
        // Processes that left the run's groups (a root command writing its pid into another
        // group's `cgroup.procs`) ran outside the group's accounting, but wait4 still counts
        // the main process and the descendants it waited for. (A zombie's /proc/PID/cgroup
        // reads `/` in every hierarchy on this kernel, so membership at exit cannot be read.)
        let escaped = cpu_escaped(rusage.user + rusage.system, cpu);
        let (exit_code, signal) = match status {
            WaitStatus::Exited(c) => (Some(c), None),
            WaitStatus::Signaled(s) => (None, Some(s)),
        };
        let over_cpu = spec.limits.cpu.is_some_and(|l| cpu > l);
        let memory_bound = acc.oom_killed || acc.at_memory_limit;
        let termination = match stopped {
            // Stalled at the memory limit (reclaim, refaults) until another limit struck:
            // the memory limit is the one it really hit.
            Some(Stopped::Cpu | Stopped::Wall) if memory_bound => Termination::Memory,
            Some(Stopped::Cpu) => Termination::Cpu,
            Some(Stopped::Wall) => Termination::Wall,
            Some(Stopped::Interrupted) => Termination::Failed,
            None if acc.oom_killed => Termination::Memory,
            None if acc.pids_limited => Termination::Pids,
            None if over_cpu || signal == Some(libc::SIGXCPU) => Termination::Cpu,
            None if signal.is_some() => Termination::Signal,
            None => Termination::Exit,
        };
        // Killed by tare because it was ready: that is how such a run ends.
        let termination = if ready.is_some_and(|r| r.stopped) && stopped.is_none() {
            Termination::Exit
        } else {
            termination
        };
        Ok((
            Measurement {
                wall,
                user: acc.user,
                system: acc.system,
                peak_memory: acc.peak_memory,
                exit_code,
                signal,
                termination,
                involuntary_context_switches: rusage.involuntary_context_switches,
                leftover_processes: leftover,
                join,
                io,
                ready,
                memory_timeline,
                escaped,
                orphans_killed: 0,
            },
            r,
        ))
    }

    /// tare's v1 blkio group for the I/O meter, made once; `None` on cgroup v2 (io.stat of
    /// the run group) and the fallback, or where there is no blkio hierarchy.
    fn blkio_group(&self) -> anyhow::Result<Option<&super::io::BlkioGroup>> {
        if self.blkio.get().is_none() {
            let g = if self.backend.kind() == crate::results::MethodKind::CgroupV1 {
                super::io::BlkioGroup::create(std::path::Path::new("/"))
                    .map_err(|e| anyhow::anyhow!("--io: {e}"))?
            } else {
                None
            };
            let _ = self.blkio.set(g);
        }
        Ok(self.blkio.get().and_then(Option::as_ref))
    }

    /// Waits until the main process has exited (without reaping it), enforcing the wall and
    /// CPU limits and the cancel flag. Returns why tare stopped the run, if it did.
    fn watch(
        &self,
        spec: &RunSpec,
        group: &mut dyn RunGroup,
        pid: i32,
        start: Instant,
        cancel: &AtomicBool,
    ) -> anyhow::Result<Option<Stopped>> {
        let pidfd = sys::pidfd_open(pid)?;
        let cores = spec.cores.as_ref().map_or(self.cpus, |c| c.len()).max(1) as u32;
        loop {
            // The next moment a limit could be reached: wall directly; CPU at the earliest when
            // the remaining CPU time is used on every allowed core at once.
            let mut timeout: Option<Duration> = None;
            if let Some(wall) = spec.limits.wall {
                timeout = Some(wall.saturating_sub(start.elapsed()));
            }
            if let Some(cpu) = spec.limits.cpu {
                let used = group.cpu_so_far(pid).unwrap_or_default();
                let t = cpu.saturating_sub(used) / cores;
                timeout = Some(timeout.map_or(t, |w| w.min(t)));
            }
            // Keep checking the cancel flag even when no limit is set.
            let slice = timeout.map_or(Duration::from_millis(250), |t| {
                t.clamp(Duration::from_millis(1), Duration::from_millis(250))
            });
            if sys::poll_readable(&pidfd, slice)? {
                return Ok(None);
            }
            let why = if cancel.load(Ordering::Relaxed) {
                Some(Stopped::Interrupted)
            } else if spec.limits.wall.is_some_and(|w| start.elapsed() >= w) {
                Some(Stopped::Wall)
            } else if spec
                .limits
                .cpu
                .is_some_and(|c| group.cpu_so_far(pid).unwrap_or_default() >= c)
            {
                Some(Stopped::Cpu)
            } else {
                None
            };
            if let Some(why) = why {
                group.kill_all(pid)?;
                // The main process may have been outside the group's reach (fallback).
                sys::kill(pid, libc::SIGKILL)?;
                return Ok(Some(why));
            }
        }
    }
}

/// Whether wait4's CPU time of the main process and the descendants it waited for (`waited`)
/// exceeds what the run's group accounted (`grouped`, which includes them) by more than
/// accounting noise: processes that ran outside the group. The margin (10% + 5 ms) covers
/// rusage's and the group's different clocks; an escape that matters is far above it.
pub fn cpu_escaped(waited: Duration, grouped: Duration) -> bool {
    waited > grouped.mul_f64(1.1) + Duration::from_millis(5)
}

#[cfg(test)]
mod escape_tests {
    use super::cpu_escaped;
    use std::time::Duration;

    #[test]
    fn cpu_beyond_the_group_is_an_escape() {
        let ms = Duration::from_millis;
        assert!(!cpu_escaped(ms(100), ms(100)));
        assert!(!cpu_escaped(ms(104), ms(100)));
        assert!(!cpu_escaped(ms(3), ms(0)));
        assert!(cpu_escaped(ms(19), ms(1)));
        assert!(cpu_escaped(ms(200), ms(100)));
    }
}
