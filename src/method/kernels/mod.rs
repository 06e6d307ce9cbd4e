//! How kernels inside programs are measured (`tare kernels`): tare holds every policy, the
//! worker obeys (docs/protocol.md).
//!
//! Levels, as Kalibera & Jones name them: invocations (fresh processes of a worker) ×
//! iterations (samples inside one process, each of `loops` calls of the kernel body). For each
//! benchmark (a kernel, its parameters, one program):
//!
//! - **calibration** (first invocation): loops per sample grow from 1 until one sample lasts at
//!   least `max(1000 × clock resolution, 100 × clock read cost, --sample-time)`; at 2^20 loops
//!   or more a sample implying under 0.01 ns a loop ends it (the body was optimized away: that
//!   kernel fails, saying so, rather than climbing to 2^40 loops). From the next round on, the
//!   programs of one kernel run the same loops per sample, the larger of their calibrations
//!   ([`share_loops`](calibrate::share_loops)), kept in every later invocation, so samples are comparable within a
//!   program and between programs;
//! - **linearity** (first invocation): N and 2N loops alternated in pairs, each pair's
//!   time(2N)/time(N) a ratio (the two samples are next to each other in time, so a machine's
//!   slow phase or speed mode hits both); 6 to 16 pairs, until the 95% interval of the median
//!   ratio lies inside or outside the linear range (`conclude::kernels::LINEARITY_MIN..MAX`).
//!   Only an interval outside it is a warning (optimized away, overhead, or growing state), so
//!   noise at N = 1 is not read as dead code;
//! - **warm-up** per invocation: `--warmup` samples dropped, then (for JIT workers, or with
//!   `--steady-state on`) the initial non-stationary samples detected (MSER-5 confirmed by
//!   Mann–Whitney, `stats::warmup`) and excluded, saying which;
//! - **samples** per invocation until the iteration-level stop rule holds (`plan::stop`, over
//!   this invocation's samples); samples shorter than the clock can resolve are refused;
//! - **invocations** in rounds: each program once per round, counterbalanced (every program in
//!   every position once per block of rounds, `method::order`), and inside a
//!   process its kernels in a shuffled order, until the invocation-level rule holds for every
//!   benchmark (over per-invocation medians), so rounds stay paired. By default the rule
//!   adapts ([`Adaptive`]): at least 5 processes, more while a benchmark's process-level
//!   interval is wider than `--precision`, within `--time-budget` and `--max-invocations`; a
//!   benchmark that stops unsettled says so ("inconclusive: processes differ by X%; about N
//!   more invocations ...") in its stop reason.
//!
//! The files, by job: `discover.rs` asks each program for its kernels and clock and makes the
//! benchmarks; `session.rs` runs the rounds of invocations and applies the invocation-level
//! rule; `invoke.rs` is one invocation's conversation (calibration, checks, warm-up and samples
//! of each of its kernels); `calibrate.rs` the pure rules of loops per sample (calibration, the
//! linearity, first-loop and JIT warm-up checks, loops shared across programs); `records.rs`
//! turns an invocation's samples into results records; `counts.rs` Valgrind's counts of the
//! kernels (`--counters`). This file holds the plan and the state they share.
//!
//! Not for: the protocol's wire format or time limits (`exec::protocol`, `exec::worker`),
//! statistics (`conclude`, `stats`), printing (`cli::kernels`, `report`).

mod calibrate;
mod counts;
mod discover;
mod invoke;
mod pairs;
mod records;
mod session;

pub use calibrate::{
    calibrate, check_first_loop, check_linearity, jit_warmup, resolvable_ns, target_ns,
    Calibration, Linearity, FIRST_LOOP_CONFIRM, FIRST_LOOP_MIN_NS, FIRST_LOOP_PAIRS,
    FIRST_LOOP_RATIO, JIT_WARMUP_MAX_NS, JIT_WARMUP_MAX_SAMPLES, JIT_WARMUP_MAX_WALL,
    JIT_WARMUP_MIN_NS, JIT_WARMUP_SETTLED_SAMPLES, LINEARITY_CHEAP_NS, LINEARITY_CHEAP_PAIRS,
    LINEARITY_PAIRS, MAX_LOOPS, MIN_LOOP_NS, ONE_LOOP_IS_LONG, SHARED_LOOPS_WITHIN, VANISHED_LOOPS,
};
pub use counts::{counts_region, COUNT_METHOD_KEY, DELTA_METHOD, DETERMINISTIC_ENV, REGION_METHOD};
pub use discover::{discover, empty_benchmarks, targets, Discovered};
pub use pairs::{
    head_to_head, Pair, PairProcess, PairResult, BLOCK_MIN_SAMPLES, BUSY_SHARE, MAX_BLOCK_NS,
    PAIRS, SWITCH_SHARE,
};
pub use records::{uncounted, unmeasured};
pub use session::execute;

use crate::exec::worker::{Sample, WorkerError};
use crate::exec::RunSpec;
use crate::plan::stop::{StopContext, StopRule};
use crate::stats;
use std::collections::BTreeMap;
use std::time::Duration;

/// One worker program.
#[derive(Debug, Clone)]
pub struct Program {
    /// Short name of the implementation (its language, or `--name`).
    pub label: String,
    /// The command line as given.
    pub command: String,
    pub argv: Vec<String>,
}

/// One benchmark: a kernel with all its parameters, in one program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub kernel: String,
    pub params: BTreeMap<String, String>,
    pub program: usize,
}

/// When to look for a JIT's steady state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteadyState {
    /// For workers whose language has a JIT (java, js).
    Auto,
    On,
    Off,
}

/// Changes an invocation's run for its randomized setup, drawn from the seed given; returns
/// the setup in words (or why it could not be made).
pub type Randomizer = Box<dyn Fn(&mut RunSpec, u64) -> Result<String, String>>;

/// Invocations that adapt: at least `min` processes, more while a benchmark's process-level
/// 95% interval (`conclude::kernels::process_spread`) is wider than ±`precision`, until
/// another round, as slow as the slowest so far, would end past `budget` × the benchmarks
/// measured (`--time-budget` is each benchmark's share of the session's time from its first
/// invocation, as `tare run`'s is each command's): none is started then.
#[derive(Debug, Clone, Copy)]
pub struct Adaptive {
    pub min: usize,
    pub precision: f64,
    /// Each benchmark's share (`--time-budget`).
    pub budget: Duration,
}

/// Everything `tare kernels` decided before the first invocation.
pub struct KernelsPlan {
    pub programs: Vec<Program>,
    /// Benchmarks, in display order (kernel-major, then program).
    pub targets: Vec<Target>,
    /// Rule over one invocation's samples (runs = samples).
    pub sample_stop: StopRule,
    /// Hard cap on samples per invocation.
    pub max_samples: usize,
    /// Rule over a benchmark's invocations (runs = invocations, ci(median) over their medians).
    pub invocation_stop: StopRule,
    pub max_invocations: usize,
    /// Invocations that adapt (the default when no count is given): replaces
    /// `invocation_stop`; `max_invocations` still bounds them.
    pub adaptive: Option<Adaptive>,
    /// Samples dropped at the start of every invocation.
    pub warmup: usize,
    pub steady_state: SteadyState,
    /// Shortest sample calibration aims for.
    pub min_sample: Duration,
    /// `--loops N`: every sample exactly N loops, not calibrated, no linearity check.
    pub loops: Option<u64>,
    /// Wall limit on each line of a reply (the worker's start: `start_timeout`).
    pub timeout: Duration,
    pub start_timeout: Duration,
    pub seed: u64,
    /// Stop at the first failed invocation (else record it and go on).
    pub ignore_failure: bool,
    /// The run template (environment, cores, stdio, limits, isolation) for every invocation.
    pub spec: RunSpec,
    /// Randomized setups (`setup::Setup`), one drawn per invocation.
    pub randomize: Option<Randomizer>,
    /// Events Valgrind counts in each sample's timed region (`--counters`), if any.
    pub counters: Option<crate::plan::Counters>,
}

/// The one-line reason of a failed conversation, with how the process ended when that says
/// more (it exited or was killed by a signal).
fn explain(e: WorkerError, m: &crate::exec::Measurement) -> String {
    // tare kills the tree with SIGKILL after a failed conversation: only another signal, or
    // an exit status, is the worker's own end.
    match (&e, m.exit_code, m.signal) {
        (WorkerError::Closed { .. }, Some(c), _) => format!("{e}; it exited with status {c}"),
        (WorkerError::Closed { .. }, _, Some(s)) if s != libc::SIGKILL => {
            format!("{e}; it was killed by signal {s}")
        }
        _ => e.to_string(),
    }
}

pub use crate::conclude::kernels::{invocations, kernel_record, sample_of};

/// Progress and failures, as they happen.
pub trait KernelsObserver {
    /// An invocation ended (`error` when it failed).
    fn invocation(&mut self, round: usize, program: &Program, error: Option<&str>);
}

/// How a kernels session ended.
#[derive(Debug)]
pub enum KernelsOutcome {
    Complete,
    Interrupted,
    /// An invocation failed: the one-line reason.
    Failed(String),
}

/// Per-benchmark state across invocations.
#[derive(Default, Clone)]
struct State {
    loops: Option<u64>,
    linearity_done: bool,
    /// Per-invocation values (mean s/loop of the counted samples) for the invocation-level
    /// stop rule.
    values: Vec<f64>,
    seconds: f64,
    done: bool,
    failed: Option<String>,
    /// The slowest time per loop seen (ns), what later requests are expected to take.
    loop_ns: Option<f64>,
}

/// What one benchmark got in one invocation.
struct Taken {
    target: usize,
    samples: Vec<(Sample, Option<String>)>,
    steady_from: usize,
    error: Option<String>,
    loops: Option<u64>,
    linearity: Option<Linearity>,
    /// Why the linearity check was not made, where it was skipped.
    linearity_skipped: Option<String>,
    /// The first-loop check's [first, later] ns, where it found loop 1 far dearer.
    first_loop: Option<[f64; 2]>,
    /// The slowest time per loop seen so far (ns).
    loop_ns: Option<f64>,
    seconds: f64,
    /// Of `seconds`, the calibration and the linearity check: done once per session, so not
    /// the pace of later rounds.
    once_seconds: f64,
    /// For each sample, the number of the worker's repetition it was (its Callgrind dump).
    reps: Vec<u64>,
    /// Its part of the conversation ended (torn down, or failed in the worker with the worker
    /// still answering): a failure of the process after it is not its own.
    finished: bool,
    /// For each sample, its counts per loop (`--counters`), where Valgrind dumped them.
    counts: Vec<Option<Vec<crate::method::counters::CounterValue>>>,
    /// How `counts` were counted, where not in the timed region ([`DELTA_METHOD`]).
    count_method: Option<&'static str>,
}

struct Samples<'a> {
    xs: &'a [f64],
    seconds: f64,
}

impl StopContext for Samples<'_> {
    fn runs(&self) -> usize {
        self.xs.len()
    }
    fn time(&self) -> f64 {
        self.seconds
    }
    fn ci_median(&self) -> Option<f64> {
        let d = stats::describe(self.xs)?;
        if d.n < 2 || d.median <= 0.0 {
            return None;
        }
        Some((d.median_ci_high - d.median_ci_low) / 2.0 / d.median)
    }
    fn cv(&self, window: Option<usize>) -> Option<f64> {
        let xs = match window {
            Some(w) if self.xs.len() >= w => &self.xs[self.xs.len() - w..],
            Some(_) => return None,
            None => self.xs,
        };
        let d = stats::describe(xs)?;
        (d.n >= 2).then_some(d.cv)
    }
    fn ratio_ci(&self) -> Option<f64> {
        None
    }
}
