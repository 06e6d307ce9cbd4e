//! The plan: what to run — benchmarks (command × parameter combination), the actions around
//! runs, limits, cores, order, stop rule and exports — resolved once from the command line into
//! plain data that the `method` layer reads. Building a plan validates everything that can be
//! checked before the first run.

pub mod command;
pub mod meters;
pub mod repetitions;
pub mod stop;

use crate::exec::{Input, Limits, Priority, Sink};
use crate::machine::cooldown::CoolDown;
use crate::machine::probe::InterferenceThresholds;
use crate::setup::{Setup, SetupPlan};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;
use stop::StopRule;

/// One benchmark: a command with one combination of parameter values.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchmarkPlan {
    pub name: String,
    /// The command text, parameters substituted.
    pub command: String,
    /// What is executed (the shell and `-c` first when `--shell` is used).
    pub argv: Vec<String>,
    pub parameters: BTreeMap<String, String>,
    /// Untimed shell commands: once before/after this benchmark, before/after each run.
    pub setup: Option<String>,
    pub cleanup: Option<String>,
    pub prepare: Option<String>,
    pub conclude: Option<String>,
    /// Every run of this benchmark in this setup (the levels of `tare bias`); overrides
    /// [`Plan::setups`].
    pub fixed_setup: Option<Setup>,
}

/// Order of runs when there are several benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Round by round, each benchmark once per round, counterbalanced over blocks of rounds
    /// (`method::order`).
    Interleaved,
    /// All runs of one benchmark, then the next.
    Sequential,
}

/// How benchmarks are compared and diagnosed after (and, for `ci(ratio)`, while) measuring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Analysis {
    /// Index of the reference benchmark.
    pub reference: usize,
    /// Welch's t-test instead of Mann–Whitney U.
    pub welch: bool,
    /// Significance level.
    pub alpha: f64,
    /// Relative half-width under which a ratio CI means "equal within noise".
    pub noise: f64,
    /// Drop Tukey outliers from the statistics (they stay in the results, marked).
    pub discard_outliers: bool,
    /// Compare benchmarks with the reference at the end (off for `tare bias`, whose
    /// benchmarks are levels of one factor, analysed together).
    pub compare: bool,
}

/// What tare does about the machine around each run (seed 000 §IV), all optional and bounded.
#[derive(Debug, Clone, Default)]
pub struct Countermeasures {
    /// Wait before each run until the hottest CPU zone is below a temperature.
    pub cool_down: Option<CoolDown>,
    /// Spin on the run's cores before each run until they report their maximum frequency.
    pub heat_up: Option<Duration>,
    /// Pause between runs.
    pub sleep_between: Option<Duration>,
    pub priority: Priority,
    /// When a run counts as interfered with.
    pub thresholds: InterferenceThresholds,
    /// Interfered runs do not count (they stay in the results, marked).
    pub exclude_interfered: bool,
}

/// Actions (`--setup`, `--cleanup`, `--prepare`, `--conclude`) run in a group of their own,
/// like runs: under a wall limit, and whatever they leave running is killed when they end,
/// unless the user keeps it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ActionPolicy {
    /// Wall-time limit of one action (`None`: no limit).
    pub timeout: Option<Duration>,
    /// Leave the processes an action starts in the background running (outside any group).
    pub keep_daemons: bool,
}

impl Default for ActionPolicy {
    fn default() -> Self {
        ActionPolicy {
            timeout: Some(Duration::from_secs(600)),
            keep_daemons: false,
        }
    }
}

/// Everything a session needs, validated.
#[derive(Debug, Clone)]
pub struct Plan {
    pub benchmarks: Vec<BenchmarkPlan>,
    pub warmup: usize,
    pub stop: StopRule,
    pub order: Order,
    pub seed: u64,
    pub limits: Limits,
    pub cores: Option<Vec<usize>>,
    pub env: Vec<(OsString, OsString)>,
    pub cwd: Option<PathBuf>,
    pub stdin: Input,
    pub output: Sink,
    pub ignore_failure: bool,
    /// Shell used for setup/cleanup/prepare/conclude (and the commands with `--shell`).
    pub shell: String,
    /// How setup/cleanup/prepare/conclude actions are confined.
    pub actions: ActionPolicy,
    pub analysis: Analysis,
    pub machine: Countermeasures,
    /// Randomized setups (`--randomize`, `--setups`, `--replay-setup`), if any.
    pub setups: Option<SetupPlan>,
    /// Event counters per run (`--counters`), counted by `perf stat` or by Valgrind.
    pub counters: Option<Counters>,
    /// Namespaces and file-system layout of every run (`--isolate`), if any.
    pub isolation: Option<crate::exec::isolate::Isolation>,
    /// Optional meters and controlled factors (`--io`, `--cache`, ...).
    pub meters: meters::MeterPlan,
}

/// Which events to count per run, and with what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters {
    pub backend: CounterBackend,
    /// The program that counts (`perf` or `valgrind`, looked up in PATH).
    pub program: String,
    pub events: Vec<String>,
    /// Where each Valgrind run's Callgrind output files are kept (beside `--export-json`:
    /// `NAME.callgrind/`), for `callgrind_annotate`; None: removed with the run.
    pub keep: Option<PathBuf>,
}

/// What counts the events (`--counters-backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterBackend {
    /// The PMU and the kernel's software events, through `perf stat`.
    Perf,
    /// Callgrind's simulation: exact instruction counts, simulated caches and branches; runs
    /// 20–100× slower, so their times are not the command's.
    Valgrind,
}

impl CounterBackend {
    pub fn as_str(self) -> &'static str {
        match self {
            CounterBackend::Perf => "perf",
            CounterBackend::Valgrind => "valgrind",
        }
    }
}
