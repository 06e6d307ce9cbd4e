//! What one run is given (argv, environment, stdio, limits, cores) and what it yields.

use crate::results::Termination;
use regex::Regex;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Where a run's standard input comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Null,
    File(PathBuf),
}

/// Where a run's standard output or error goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    Null,
    Inherit,
    /// Appended to this file.
    File(PathBuf),
}

/// Limits on the whole process tree of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    /// CPU time (user + system) of the whole tree.
    pub cpu: Option<Duration>,
    /// Wall time of the main process's life.
    pub wall: Option<Duration>,
    /// Memory + swap of the whole tree, in bytes.
    pub memory: Option<u64>,
    /// Number of tasks (processes and threads) alive at once.
    pub pids: Option<u64>,
}

/// Scheduling priority of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Priority {
    #[default]
    Normal,
    /// nice −20.
    High,
    /// SCHED_FIFO priority 1, with RLIMIT_RTTIME as a safety cap so a spinning run cannot
    /// starve the machine: the kernel kills it after this many seconds of CPU without blocking.
    Realtime { cap_seconds: u64 },
}

/// Everything one measured run needs.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// Program and arguments; the program is looked up in `PATH` when it has no slash.
    pub argv: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    /// The complete environment of the run (nothing else is inherited).
    pub env: Vec<(OsString, OsString)>,
    pub stdin: Input,
    pub stdout: Sink,
    pub stderr: Sink,
    pub limits: Limits,
    /// Logical CPUs to confine the run to (cpuset; sched_setaffinity in the fallback).
    pub cores: Option<Vec<usize>>,
    pub priority: Priority,
    /// Namespaces and file-system layout of the run (see `exec::isolate`); `None`: none.
    pub isolation: Option<super::isolate::Isolation>,
    /// Turn address-space layout randomization off for this run (`personality(2)`
    /// `ADDR_NO_RANDOMIZE`): the stack then starts at the same address every time, so its
    /// alignment follows the size of the environment and argv.
    pub aslr_off: bool,
    /// Optional meters of the run (`--io`, ...); all off by default, and then cost nothing.
    pub meters: Meters,
    /// Descriptors of tare's the command inherits under the same numbers (FD_CLOEXEC cleared
    /// in the child only), e.g. the worker's end of the `tare kernels` socketpair. The caller
    /// keeps them open until the command has started and closes its copy then.
    pub inherit_fds: Vec<std::os::fd::RawFd>,
}

/// Optional meters of one run (see `exec::io` and docs/meters.md).
#[derive(Debug, Clone, Default)]
pub struct Meters {
    /// Block-layer and syscall-level I/O of the tree, dirty data left (`--io`).
    pub io: bool,
    /// Time to ready, and stop or wait after it (`--ready`, `--ready-then`).
    pub ready: Option<Ready>,
    /// Sample the run group's memory at this interval (`--memory-sample`).
    pub memory_sample: Option<Duration>,
    /// cgroup v2 `memory.high` of the run group, in bytes (`--memory-high`).
    pub memory_high: Option<u64>,
}

impl RunSpec {
    /// A spec for `argv` with tare's own environment, null stdio and no limits.
    pub fn new<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        RunSpec {
            argv: argv.into_iter().map(Into::into).collect(),
            cwd: None,
            env: std::env::vars_os().collect(),
            stdin: Input::Null,
            stdout: Sink::Null,
            stderr: Sink::Null,
            limits: Limits::default(),
            cores: None,
            priority: Priority::Normal,
            isolation: None,
            aslr_off: false,
            meters: Meters::default(),
            inherit_fds: Vec::new(),
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Monotonic time from just before spawn to the main process's exit.
    pub wall: Duration,
    /// User CPU time of the whole tree (or of waited-for processes in the fallback).
    pub user: Duration,
    /// System CPU time of the whole tree (or of waited-for processes in the fallback).
    pub system: Duration,
    /// Peak memory in bytes (see the backend's description for what it includes).
    pub peak_memory: Option<u64>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub termination: Termination,
    pub involuntary_context_switches: u64,
    /// Processes that were still alive in the run's cgroup after the main process ended and
    /// were killed by tare.
    pub leftover_processes: usize,
    /// Time the child spent joining its cgroups between spawn and exec (cgroup v1 migration),
    /// measured by the child and already taken out of `wall`.
    pub join: Duration,
    /// What the I/O meter saw, when asked for.
    pub io: Option<crate::results::RunIo>,
    /// What the readiness watch saw (`--ready`), when asked for.
    pub ready: Option<Outcome>,
    /// The memory timeline (`[seconds, bytes]`), when asked for.
    pub memory_timeline: Option<Vec<[f64; 2]>>,
    /// The run's processes left its cgroups: wait4 saw more CPU time (main process and the
    /// descendants it waited for) than the group accounted. Its CPU time and peak memory then
    /// miss what ran outside (incomplete), and processes that left were not killed by tare.
    pub escaped: bool,
    /// Processes of the run found outside its groups at its end, re-parented to tare (its
    /// subreaper, see `exec::reaper`) and killed; such a run is also `escaped`.
    pub orphans_killed: usize,
}

impl Measurement {
    pub fn cpu(&self) -> Duration {
        self.user + self.system
    }
    /// Whether the main process exited with status 0 and no limit was hit.
    pub fn succeeded(&self) -> bool {
        self.termination == Termination::Exit && self.exit_code == Some(0)
    }
}

// `--ready`: what counts as ready, and what the watcher (`super::ready`) saw.

/// What counts as ready.
#[derive(Debug, Clone)]
pub enum ReadySource {
    Stdout(Regex),
    Stderr(Regex),
    Port(u16),
    File(PathBuf),
    Notify,
}

/// `--ready` and `--ready-then`.
#[derive(Debug, Clone)]
pub struct Ready {
    pub source: ReadySource,
    /// Let the program run to its end after it is ready (else it is stopped then).
    pub then_wait: bool,
}

impl std::str::FromStr for ReadySource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, arg) = s.split_once(':').unwrap_or((s, ""));
        let regex = |what: &str| {
            Regex::new(arg).map_err(|e| format!("--ready {what}: not a regular expression: {e}"))
        };
        match kind {
            "stdout" if !arg.is_empty() => Ok(ReadySource::Stdout(regex("stdout")?)),
            "stderr" if !arg.is_empty() => Ok(ReadySource::Stderr(regex("stderr")?)),
            "port" => arg
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .map(ReadySource::Port)
                .ok_or_else(|| format!("--ready port:{arg}: not a TCP port (1 to 65535)")),
            "file" if !arg.is_empty() => Ok(ReadySource::File(PathBuf::from(arg))),
            "notify" if arg.is_empty() => Ok(ReadySource::Notify),
            _ => Err(format!(
                "--ready '{s}': use stdout:REGEX, stderr:REGEX, port:N, file:PATH or notify"
            )),
        }
    }
}

/// What the watcher saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outcome {
    /// Time from spawn to the sign, if it came.
    pub ready: Option<Duration>,
    /// tare stopped the program because it was ready.
    pub stopped: bool,
}
