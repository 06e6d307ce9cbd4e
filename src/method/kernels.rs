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
//!   ([`share_loops`]), kept in every later invocation, so samples are comparable within a
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
//! Not for: the protocol's wire format or time limits (`exec::protocol`, `exec::worker`),
//! statistics (`conclude`, `stats`), printing (`cli::kernels`, `report`).

use super::stages::{Actions, Meter, Stage, StageContext};
use crate::exec::worker::{self, ClockInfo, Hello, Sample, Worker, WorkerError};
use crate::exec::{Executor, RunSpec, Sink};
use crate::plan::stop::{StopContext, StopRule};
use crate::results::{
    Benchmark, InvocationRecord, KernelRecord, Run, SampleRecord, Termination, INVOCATIONS_KEY,
    KERNEL_KEY, SAMPLE_KEY,
};
use crate::stats;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Most loops per sample calibration tries before calling a kernel unmeasurable.
pub const MAX_LOOPS: u64 = 1 << 40;
/// Samples per `run` request while measuring (each streams back as it is taken).
const BATCH: u64 = 3;
/// N/2N pairs of the linearity check: at least (the fewest with a 95% median interval), at most.
pub const LINEARITY_PAIRS: (usize, usize) = (6, 16);
/// Pairs past [`LINEARITY_PAIRS`].1 while the samples so far took less than
/// [`LINEARITY_CHEAP_NS`] together, and the check as long in wall time: a kernel of a few µs (or one optimized away, whose times
/// are all clock noise) gets up to this many for a few ms more.
pub const LINEARITY_CHEAP_PAIRS: usize = 64;
pub const LINEARITY_CHEAP_NS: f64 = 1e9;

/// The linearity check's result: the median of the pairs' time(2N)/time(N), its 95% interval,
/// and the number of pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Linearity {
    pub ratio: f64,
    pub ci: (f64, f64),
    pub pairs: usize,
}

/// The linearity check over `time(n)` (one sample of `n` loops, in ns): N and 2N alternated in
/// pairs (which goes first alternates too), from [`LINEARITY_PAIRS`].0 pairs on until the
/// median ratio's 95% interval is settled — wholly inside or wholly outside the linear range —
/// or [`LINEARITY_PAIRS`].1 pairs ([`LINEARITY_CHEAP_PAIRS`] while they are cheap). Errors of
/// `time` are passed on.
pub fn check_linearity<E>(
    loops: u64,
    mut time: impl FnMut(u64) -> Result<f64, E>,
) -> Result<Linearity, E> {
    use crate::conclude::kernels::{LINEARITY_MAX, LINEARITY_MIN};
    let (least, most) = LINEARITY_PAIRS;
    let mut ratios: Vec<f64> = Vec::new();
    let twice = loops.saturating_mul(2);
    let mut spent = 0.0;
    // Wall time too: a harness that starts a process per request (Go, pyperf) pays that.
    let started = Instant::now();
    loop {
        let (one, two) = if ratios.len().is_multiple_of(2) {
            let one = time(loops)?;
            (one, time(twice)?)
        } else {
            let two = time(twice)?;
            (time(loops)?, two)
        };
        spent += one + two;
        // A clock too coarse for the samples reads 0: 0 against 0 did not grow.
        ratios.push(match (one > 0.0, two > 0.0) {
            (true, _) => two / one,
            (false, true) => f64::INFINITY,
            (false, false) => 1.0,
        });
        if ratios.len() < least {
            continue;
        }
        let sorted = stats::sorted_without_nan(&ratios);
        let ratio = stats::median(&sorted).unwrap_or(0.0);
        let ci = stats::describe::median_ci(&sorted, 0.95).unwrap_or((ratio, ratio));
        let inside = LINEARITY_MIN <= ci.0 && ci.1 <= LINEARITY_MAX;
        let outside = ci.1 < LINEARITY_MIN || ci.0 > LINEARITY_MAX;
        let cheap = Duration::from_nanos(LINEARITY_CHEAP_NS as u64);
        let most = if spent < LINEARITY_CHEAP_NS && started.elapsed() < cheap {
            LINEARITY_CHEAP_PAIRS
        } else {
            most
        };
        if inside || outside || ratios.len() >= most {
            return Ok(Linearity {
                ratio,
                ci,
                pairs: ratios.len(),
            });
        }
    }
}

/// Calibration's first steps screen for a first loop at least this many times a later one
/// (state left by loop 1); samples of 1 and 2 loops then confirm it.
pub const FIRST_LOOP_RATIO: f64 = 10.0;
/// Confirmed where 2 loops took under this many times 1 loop (the median of the pairs): the
/// second loop cost under half the first, which a body whose cost is in its loop never shows
/// once one loop is 100 clock reads or more.
pub const FIRST_LOOP_CONFIRM: f64 = 1.5;
/// The first-loop check is made only where one loop took at least this (ns) in calibration
/// and at least 100 clock reads: below that a sample of one loop is mostly the clock's cost.
pub const FIRST_LOOP_MIN_NS: f64 = 10_000.0;
/// Pairs of samples (1 loop, 2 loops) the first-loop check takes.
pub const FIRST_LOOP_PAIRS: usize = 5;

/// The first-loop check: from calibration's first two steps (`steps`: loops and the first
/// sample's ns at each), whether a later loop looked [`FIRST_LOOP_RATIO`] times cheaper than
/// the first (taking one more sample of the second step's loops where the first did not: the
/// faster of the two); if so, [`FIRST_LOOP_PAIRS`] pairs of samples of 1 and 2 loops (`time(n)`, each
/// after the kernel's per-sample init) confirm it: the median of time(2)/time(1) under
/// [`FIRST_LOOP_CONFIRM`]. Returns `[first, later]` ns (the medians of time(1) and of
/// time(2) less that) where confirmed. A body that sorts in place with its input copied once
/// per sample: loop 1 sorts unsorted data, the rest sorted data, and a calibrated N of
/// thousands hides loop 1 from the N/2N check.
pub fn check_first_loop<E>(
    steps: &[(u64, f64)],
    min_ns: f64,
    mut time: impl FnMut(u64) -> Result<f64, E>,
) -> Result<Option<[f64; 2]>, E> {
    let (Some(&(1, t1)), Some(&(n2, t2))) = (steps.first(), steps.get(1)) else {
        return Ok(None);
    };
    if n2 < 2 || t1 < min_ns {
        return Ok(None);
    }
    let later = |t2: f64| (t2 - t1) / (n2 - 1) as f64;
    if later(t2) * FIRST_LOOP_RATIO > t1 {
        // One preempted or stolen sample of n2 loops hides the first loop (a CI run here: the
        // sort's per-sample shape went unnoticed under steal); the screen takes the faster of
        // two such samples, one more sample of a kernel's first invocation.
        if later(time(n2)?.min(t2)) * FIRST_LOOP_RATIO > t1 {
            return Ok(None);
        }
    }
    let (mut ones, mut twos, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..FIRST_LOOP_PAIRS {
        let (one, two) = if i % 2 == 0 {
            let one = time(1)?;
            (one, time(2)?)
        } else {
            let two = time(2)?;
            (time(1)?, two)
        };
        ones.push(one);
        twos.push(two);
        ratios.push(if one > 0.0 { two / one } else { f64::INFINITY });
    }
    let median = |xs: &[f64]| stats::median(&stats::sorted_without_nan(xs)).unwrap_or(0.0);
    let (first, second) = (median(&ones), median(&twos));
    // A first loop that shrank under the floor (a JIT compiled it since calibration's first
    // step: 1.5 µs against 0.55 µs a loop is the sample's own cost) says nothing.
    Ok((median(&ratios) < FIRST_LOOP_CONFIRM && first >= min_ns)
        .then_some([first, (second - first).max(0.0)]))
}

/// A JIT worker's samples after calibration, before N is taken again: at least this much
/// sampled time (ns), at most [`JIT_WARMUP_MAX_NS`] or [`JIT_WARMUP_MAX_SAMPLES`].
pub const JIT_WARMUP_MIN_NS: f64 = 0.5e9;
pub const JIT_WARMUP_MAX_NS: f64 = 10e9;
pub const JIT_WARMUP_MAX_SAMPLES: usize = 200;
/// Or this many samples, where they are short.
pub const JIT_WARMUP_SETTLED_SAMPLES: usize = 50;
/// And at most this long in wall time (s): a harness whose every request costs tens of ms
/// (JMH's Runner) would take [`JIT_WARMUP_MAX_SAMPLES`] of them otherwise.
pub const JIT_WARMUP_MAX_WALL: f64 = 2.0;

/// Calibration after a JIT's warm-up: samples of `loops` (`take(n)`: one sample's ns) until at
/// least [`JIT_WARMUP_MIN_NS`] were sampled (or [`JIT_WARMUP_SETTLED_SAMPLES`] taken) and the median of the last 5 is no longer under
/// 0.9× that of the 5 before (the code stopped getting faster), or the caps (at least 10
/// samples past [`JIT_WARMUP_MAX_WALL`] s of wall time); then, where that
/// median is under `target`, the loops that reach it at that pace (aimed 1.2× past it, as
/// calibration aims). Returns the loops per sample to use.
pub fn jit_warmup<E>(
    target: f64,
    loops: u64,
    mut take: impl FnMut(u64) -> Result<f64, E>,
) -> Result<u64, E> {
    let mut xs: Vec<f64> = Vec::new();
    let mut spent = 0.0;
    let median = |xs: &[f64]| stats::median(&stats::sorted_without_nan(xs)).unwrap_or(0.0);
    let began = Instant::now();
    loop {
        let ns = take(loops)?;
        spent += ns.max(0.0);
        xs.push(ns);
        let n = xs.len();
        let settled = n >= 10 && median(&xs[n - 5..]) >= 0.9 * median(&xs[n - 10..n - 5]);
        if (settled && (spent >= JIT_WARMUP_MIN_NS || n >= JIT_WARMUP_SETTLED_SAMPLES))
            || spent >= JIT_WARMUP_MAX_NS
            || n >= JIT_WARMUP_MAX_SAMPLES
            || (n >= 10 && began.elapsed().as_secs_f64() >= JIT_WARMUP_MAX_WALL)
        {
            break;
        }
    }
    let pace = median(&xs[xs.len().saturating_sub(5)..]);
    if pace <= 0.0 || pace >= target {
        return Ok(loops);
    }
    let grown = (loops as f64 * target / pace * 1.2).ceil();
    Ok((grown as u64).clamp(loops, MAX_LOOPS))
}

/// Why a request of the measurement stopped: the conversation failed (the invocation ends), or
/// the worker answered with its own `error` (this kernel ends, the worker goes on).
enum Stop {
    Worker(WorkerError),
    Kernel(String),
}

/// Fewest loops a sample must hold before calibration may call the body optimized away.
pub const VANISHED_LOOPS: u64 = 1 << 20;
/// A loop of any real body takes at least this (ns): a 4 GHz core's cycle is 0.25 ns.
pub const MIN_LOOP_NS: f64 = 0.01;

/// What calibration found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Calibration {
    /// Loops per sample.
    Loops(u64),
    /// The time did not grow with the loops: `loops` (≥ [`VANISHED_LOOPS`]) took `ns`, under
    /// [`MIN_LOOP_NS`] a loop, though that many loops of any real body would be well above
    /// what the clock resolves (`floor`).
    Vanished { loops: u64, ns: f64 },
}

/// Loops per sample: from 1 up until one sample lasts at least `target` ns. `take(n, k)` takes
/// `k` samples of `n` loops and gives each one's ns. A sample long enough is confirmed by the
/// least of two more (a sample stretched by preemption must not choose N), except a first
/// loop of [`ONE_LOOP_IS_LONG`] times the target, which no preemption makes: N = 1 at once
/// (a kernel of 5 s a loop took 15 s here before). Gives up
/// at [`VANISHED_LOOPS`] or more when a sample implies less than [`MIN_LOOP_NS`] a loop while
/// that many loops would take at least `floor` ns (the shortest sample the clock resolves):
/// the body is gone, and 2^40 loops would not bring it back.
pub fn calibrate<E>(
    target: f64,
    floor: f64,
    mut take: impl FnMut(u64, u64) -> Result<Vec<f64>, E>,
) -> Result<Calibration, E> {
    let mut n: u64 = 1;
    loop {
        let mut ns = take(n, 1)?.first().copied().unwrap_or(0.0);
        let long_first = n == 1 && ns >= ONE_LOOP_IS_LONG * target;
        if ns >= target && n < MAX_LOOPS && !long_first {
            ns = take(n, 2)?.into_iter().fold(ns, f64::min);
        }
        if ns >= target || n >= MAX_LOOPS {
            return Ok(Calibration::Loops(n));
        }
        let least = n as f64 * MIN_LOOP_NS;
        if n >= VANISHED_LOOPS && ns < least && least >= floor {
            return Ok(Calibration::Vanished { loops: n, ns });
        }
        // Aim a little past the target; grow at least 2× (1.1× once near it), at most 16×
        // per step so a kernel whose first loop was slow (cold caches) is not overshot.
        let grow = if ns <= 0.0 {
            16.0
        } else {
            (target / ns * 1.2)
                .clamp(1.1, 16.0)
                .max(if ns * 2.0 < target { 2.0 } else { 1.1 })
        };
        n = ((n as f64 * grow).ceil() as u64).min(MAX_LOOPS);
    }
}

/// One loop this many times the shortest sample: a single loop is the sample (N = 1, not
/// confirmed), and the linearity check, 18 or more such loops, is not made (said so).
pub const ONE_LOOP_IS_LONG: f64 = 20.0;
/// A sample expected to take this long (1 s) or more is asked for one at a time: the stop rule
/// is checked after each, and batching saves nothing there (below it, a native harness that
/// starts a process per request keeps serving batches from one process).
const LONG_SAMPLE_NS: f64 = 1e9;

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
/// another round, as slow as the slowest so far, would end past `budget` (the session's time
/// from its first invocation): none is started then.
#[derive(Debug, Clone, Copy)]
pub struct Adaptive {
    pub min: usize,
    pub precision: f64,
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

/// What one program said when asked.
#[derive(Debug, Clone)]
pub struct Discovered {
    pub hello: Hello,
    pub clock: ClockInfo,
}

/// Starts `program` once to read its kernels and its clock (one invocation, not measured).
pub fn discover(
    exec: &Executor,
    plan_spec: &RunSpec,
    program: &Program,
    timeout: Duration,
    start_timeout: Duration,
    cancel: &AtomicBool,
) -> Result<Discovered, String> {
    let mut spec = plan_spec.clone();
    spec.argv = program.argv.iter().map(Into::into).collect();
    // This invocation is not measured: a worker that dies at start (a missing module, a bad
    // path) has its stderr kept in a private file, and its last lines go into the error.
    let captured = match spec.stderr {
        Sink::Null => tempfile::Builder::new()
            .prefix("tare-worker-stderr-")
            .tempdir()
            .ok()
            .map(|d| {
                let p = d.path().join("stderr");
                spec.stderr = Sink::File(p.clone());
                (d, p)
            }),
        _ => None,
    };
    let (m, r) = worker::invoke(exec, &spec, timeout, cancel, |w| {
        let hello = w.hello(start_timeout)?;
        let clock = match w.clock()? {
            Ok(c) => c,
            Err(e) => return Err(WorkerError::Protocol(format!("'clock' failed: {e}"))),
        };
        w.exit()?;
        Ok(Discovered { hello, clock })
    })
    .map_err(|e| format!("{e:#}"))?;
    let d = r.map_err(|e| {
        let said = captured
            .as_ref()
            .and_then(|(_, p)| crate::exec::capture::last_lines_of_file(p, 3))
            .filter(|t| !t.is_empty())
            .map_or(String::new(), |t| format!(" (its stderr ends: {t})"));
        if e.closed_before_hello() {
            return not_a_worker(&m, &said);
        }
        format!("{}{said}", explain(e, &m))
    })?;
    Ok(d)
}

/// A program that ended before its 'hello': no tare worker (or one that died at start, which
/// its stderr then shows), in one line with what to run instead.
fn not_a_worker(m: &crate::exec::Measurement, said: &str) -> String {
    let how = match (m.exit_code, m.signal) {
        (Some(c), _) => format!("it exited with status {c}"),
        (_, Some(s)) if s != libc::SIGKILL => format!("it was killed by signal {s}"),
        _ => "it closed the connection".to_string(),
    };
    format!(
        "{how} without speaking tare's worker protocol (no 'hello'){said}; tare kernels runs \
         workers: link the program with a tare client library (docs/clients.md), or run an \
         existing suite through `tare native-worker HARNESS TARGET` (docs/native-workers.md); \
         the protocol is docs/protocol.md"
    )
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

/// The benchmarks for the kernels the programs announce: every kernel of any program (in the
/// order the programs list them, the first program's first), its declared parameters crossed
/// with the values given (`params`; the first program's defaults for the rest), in each
/// program that has the kernel. Errors name a parameter no selected kernel declares.
pub fn targets(
    found: &[Discovered],
    filter: Option<&regex::Regex>,
    params: &[crate::plan::command::Parameter],
) -> Result<Vec<Target>, String> {
    let mut names: Vec<String> = Vec::new();
    for d in found {
        for k in &d.hello.kernels {
            if !names.contains(&k.name) && filter.is_none_or(|f| f.is_match(&k.name)) {
                names.push(k.name.clone());
            }
        }
    }
    if names.is_empty() {
        return Err(match filter {
            Some(f) => format!("no kernel matches --filter '{}'", f.as_str()),
            None => "the programs announce no kernel".into(),
        });
    }
    for p in params {
        let declared = found.iter().any(|d| {
            d.hello
                .kernels
                .iter()
                .any(|k| names.contains(&k.name) && k.params.iter().any(|q| q.name == p.name))
        });
        if !declared {
            return Err(format!(
                "parameter '{}' is not declared by any selected kernel; see tare kernels --list",
                p.name
            ));
        }
    }
    let mut out = Vec::new();
    for name in &names {
        let info = found
            .iter()
            .flat_map(|d| d.hello.kernels.iter())
            .find(|k| &k.name == name)
            .expect("a kernel from the list");
        // Each declared parameter: the values given for it, else the values the worker
        // lists (`values=`), else its default; the grid is their cross product.
        let mut grid: Vec<BTreeMap<String, String>> = vec![BTreeMap::new()];
        for q in &info.params {
            let values: Vec<String> = match params.iter().find(|p| p.name == q.name) {
                Some(p) => p.values.clone(),
                None if !q.values.is_empty() => q.values.clone(),
                None => vec![q.default.clone()],
            };
            grid = grid
                .into_iter()
                .flat_map(|g| {
                    values.iter().map(move |v| {
                        let mut g = g.clone();
                        g.insert(q.name.clone(), v.clone());
                        g
                    })
                })
                .collect();
        }
        for g in grid {
            for (i, d) in found.iter().enumerate() {
                if d.hello.kernels.iter().any(|k| &k.name == name) {
                    out.push(Target {
                        kernel: name.clone(),
                        params: g.clone(),
                        program: i,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Empty benchmarks for the targets, named `KERNEL/IMPLEMENTATION`.
pub fn empty_benchmarks(plan: &KernelsPlan, found: &[Discovered]) -> Vec<Benchmark> {
    plan.targets
        .iter()
        .map(|t| {
            let p = &plan.programs[t.program];
            let d = &found[t.program];
            let mut extra = BTreeMap::new();
            let rec = KernelRecord {
                kernel: t.kernel.clone(),
                implementation: p.label.clone(),
                program: p.command.clone(),
                lang: d.hello.lang.clone(),
                client: format!("{} {}", d.hello.client, d.hello.version),
                clock_resolution_ns: d.clock.resolution_ns,
                clock_cost_ns: d.clock.cost_ns,
                min_sample_ns: target_ns(&d.clock, plan.min_sample),
                loops_fixed: plan.loops.is_some(),
                threads: d
                    .hello
                    .kernels
                    .iter()
                    .find(|k| k.name == t.kernel)
                    .map_or(1, |k| k.threads),
                ..Default::default()
            };
            extra.insert(KERNEL_KEY.to_string(), serde_json::json!(rec));
            Benchmark {
                name: format!("{}/{}", t.kernel, p.label),
                command: p.command.clone(),
                argv: p.argv.clone(),
                parameters: t.params.clone(),
                summary: Default::default(),
                stop_reason: String::new(),
                runs: Vec::new(),
                diagnostics: Vec::new(),
                extra,
            }
        })
        .collect()
}

/// Shortest sample calibration aims for: long enough against the clock's resolution (0.1%)
/// and its read cost (1%), and at least `min`.
pub fn target_ns(clock: &ClockInfo, min: Duration) -> f64 {
    (1000.0 * clock.resolution_ns)
        .max(100.0 * clock.cost_ns)
        .max(min.as_nanos() as f64)
}

/// Shortest sample that is kept: the clock resolves it to 1% and its reads cost under 10%.
pub fn resolvable_ns(clock: &ClockInfo) -> f64 {
    (100.0 * clock.resolution_ns).max(10.0 * clock.cost_ns)
}

pub use crate::conclude::kernels::{invocations, kernel_record, sample_of};

/// The first thing a session asked for and did not measure, in one line that names its
/// benchmark: a kernel that failed (its reason), one with no counted sample, or (with
/// `--ignore-failure`) an invocation that failed. `None` when everything was measured.
pub fn unmeasured(benches: &[Benchmark]) -> Option<String> {
    benches.iter().find_map(|b| {
        if let Some(why) = b.stop_reason.strip_prefix("failed: ") {
            return Some(format!("{}: {why}", b.name));
        }
        if let Some(why) = uncounted(std::slice::from_ref(b)) {
            return Some(why);
        }
        invocations(b).into_iter().find_map(|i| {
            i.error
                .map(|e| format!("{}: invocation {} failed: {e}", b.name, i.index + 1))
        })
    })
}

/// The first benchmark without a single counted sample, in one line: its failure where it
/// failed, else that every sample was excluded.
pub fn uncounted(benches: &[Benchmark]) -> Option<String> {
    let b = benches.iter().find(|b| !b.runs.iter().any(|r| r.counted))?;
    Some(match b.stop_reason.strip_prefix("failed: ") {
        Some(why) => format!("{}: {why}", b.name),
        None => format!(
            "{}: no counted sample: every sample was excluded (see the notes above); raise --sample-time, lower --warmup, or check that the body is not optimized away",
            b.name
        ),
    })
}

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

/// Runs the session: rounds of invocations until every benchmark's invocation rule holds (or
/// `max_invocations`), appending samples and invocation records to `benches`.
#[allow(clippy::too_many_arguments)]
pub fn execute(
    plan: &KernelsPlan,
    exec: &Executor,
    found: &[Discovered],
    benches: &mut [Benchmark],
    actions: &mut Actions,
    meters: &mut [Box<dyn Meter>],
    observer: &mut dyn KernelsObserver,
    cancel: &AtomicBool,
) -> KernelsOutcome {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(plan.seed);
    // Counterbalanced rounds: every program in every position once per block (`order`).
    let mut rounds = super::order::Rounds::new(plan.programs.len());
    let mut state = vec![
        State {
            loops: plan.loops,
            ..State::default()
        };
        plan.targets.len()
    ];
    // Snapshots of the machine around each invocation, as `tare run` takes around each run:
    // the worker's cores (all CPUs when not pinned).
    let root = crate::machine::sysfs::SysRoot::from_env();
    let cores = plan.spec.cores.clone().unwrap_or_else(|| {
        crate::machine::topology::read_topology(&root)
            .map(|t| t.cpus.iter().map(|c| c.id).collect())
            .unwrap_or_default()
    });
    let mut probe = crate::machine::probe::RunProbe::new(
        &root,
        &cores,
        plan.spec.cores.is_some(),
        Default::default(),
    );
    let t0 = Instant::now();
    // How long each round took, for the time budget's forecast of the next.
    let mut round_times: Vec<Duration> = Vec::new();
    for round in 0..plan.max_invocations {
        let round_start = Instant::now();
        // Of this round, what later rounds do not repeat (calibration, linearity).
        let mut once = Duration::ZERO;
        for p in rounds.next(&mut rng) {
            let mut mine: Vec<usize> = (0..plan.targets.len())
                .filter(|&i| plan.targets[i].program == p && !state[i].done)
                .filter(|&i| state[i].failed.is_none())
                .collect();
            if mine.is_empty() {
                continue;
            }
            mine.shuffle(&mut rng);
            let mut spec = plan.spec.clone();
            spec.argv = plan.programs[p].argv.iter().map(Into::into).collect();
            let setup = match &plan.randomize {
                None => None,
                Some(f) => {
                    // One seed per (round, program), reproducible from the session's seed.
                    let seed = plan
                        .seed
                        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                        .wrapping_add(((round as u64) << 20) | p as u64);
                    match f(&mut spec, seed) {
                        Ok(words) => Some(words),
                        Err(e) => return KernelsOutcome::Failed(e),
                    }
                }
            };
            let label = plan.programs[p].label.clone();
            let ctx = |stage| StageContext {
                stage,
                benchmark: None,
                program: &label,
                round,
            };
            if let Err(e) = actions.run(&ctx(Stage::BeforeInvocation)) {
                return KernelsOutcome::Failed(e);
            }
            for m in meters.iter_mut() {
                m.start();
            }
            // Valgrind writes its dumps into a fresh private directory (mode 0700). A worker
            // with no native timed region runs as without counters, and its loops are
            // counted after it by two invocations of their own (`count_delta`).
            let region = counts_region(&found[p].hello);
            let count_dir = match plan.counters.as_ref().filter(|_| region) {
                Some(c) => match tempfile::Builder::new().prefix("tare-counters-").tempdir() {
                    Ok(d) => {
                        spec.argv = crate::method::counters::valgrind::wrap_kernel(
                            &c.program,
                            &spec.argv,
                            &c.events,
                            d.path(),
                        );
                        Some(d)
                    }
                    Err(e) => {
                        return KernelsOutcome::Failed(format!(
                            "cannot make a temporary directory for the counts ({e}); check TMPDIR"
                        ))
                    }
                },
                None => None,
            };
            let mut taken: Vec<Taken> = Vec::new();
            let probe_start = probe.start();
            let result = worker::invoke(exec, &spec, plan.timeout, cancel, |w| {
                let mut at = At {
                    actions: &mut *actions,
                    program: &label,
                    round,
                };
                invocation(
                    plan,
                    &found[p].clock,
                    w,
                    &mine,
                    &state,
                    &mut taken,
                    &mut at,
                    cancel,
                )
            });
            let environment = result.as_ref().ok().map(|(m, _)| {
                serde_json::json!(probe.finish(
                    probe_start,
                    m.cpu().as_secs_f64(),
                    m.wall.as_secs_f64()
                ))
            });
            let metered: BTreeMap<String, f64> = meters.iter_mut().flat_map(|m| m.stop()).collect();
            if let Err(e) = actions.run(&ctx(Stage::AfterInvocation)) {
                return KernelsOutcome::Failed(e);
            }
            let (m, error) = match result {
                Ok((m, Ok(()))) if m.succeeded() => (Some(m), None),
                Ok((m, Ok(()))) => {
                    let why = match (m.termination, m.exit_code, m.signal) {
                        (Termination::Wall, _, _) => format!(
                            "worker did not exit within {} s after 'bye'",
                            worker::EXIT_GRACE.as_secs()
                        ),
                        (_, Some(c), _) => format!("worker exited with status {c} after 'bye'"),
                        (_, _, Some(s)) => format!("worker was killed by signal {s} after 'bye'"),
                        _ => format!("worker ended with {:?}", m.termination),
                    };
                    (Some(m), Some(why))
                }
                Ok((m, Err(e))) => {
                    let why = explain(e, &m);
                    (Some(m), Some(why))
                }
                Err(e) => (None, Some(format!("{e:#}"))),
            };
            if let (Some(c), Some(d)) = (&plan.counters, &count_dir) {
                read_counts(&mut taken, c, d.path(), &plan.programs[p].command);
            }
            if let Some(c) = plan.counters.as_ref().filter(|_| !region) {
                let jit = matches!(found[p].hello.lang.as_str(), "java" | "js");
                for t in taken.iter_mut().filter(|t| t.error.is_none()) {
                    let (Some(loops), Some(first)) =
                        (t.loops, t.samples.iter().position(|(_, why)| why.is_none()))
                    else {
                        continue;
                    };
                    if cancel.load(Ordering::Relaxed) {
                        break;
                    }
                    let target = &plan.targets[t.target];
                    match count_delta(plan, exec, p, target, loops, jit, c, cancel) {
                        Ok(v) => {
                            t.counts = vec![None; t.samples.len()];
                            t.counts[first] = Some(v);
                            t.count_method = Some(DELTA_METHOD);
                        }
                        Err(e) => eprintln!(
                            "tare: warning: no counts of kernel '{}' of '{}': {e}",
                            target.kernel, plan.programs[p].command
                        ),
                    }
                }
            }
            let interrupted = cancel.load(Ordering::Relaxed);
            once += Duration::from_secs_f64(taken.iter().map(|t| t.once_seconds).sum());
            // A failed process is the failure of the kernel it was running; where none was
            // (its start, its exit), of every kernel it was to run.
            let running = taken.iter().find(|t| !t.finished).map(|t| t.target);
            let blamed: Vec<usize> = match (&error, running) {
                (None, _) => Vec::new(),
                (Some(_), Some(r)) => vec![r],
                (Some(_), None) => mine.clone(),
            };
            record(
                plan,
                benches,
                &mut state,
                &taken,
                &mine,
                round,
                m.as_ref(),
                error.as_deref().map(|e| (e, blamed.as_slice())),
                (setup, metered, environment),
                t0,
            );
            observer.invocation(round, &plan.programs[p], error.as_deref());
            if interrupted {
                return KernelsOutcome::Interrupted;
            }
            if let Some(e) = error {
                if !plan.ignore_failure {
                    let kernel = running
                        .map(|r| format!("kernel '{}', ", plan.targets[r].kernel))
                        .unwrap_or_default();
                    return KernelsOutcome::Failed(format!(
                        "{} ({kernel}program '{}', round {})",
                        e,
                        plan.programs[p].command,
                        round + 1
                    ));
                }
                for &i in &blamed {
                    state[i].failed.get_or_insert(e.clone());
                }
            }
        }
        if plan.counters.is_none() {
            share_loops(&plan.targets, &mut state);
        }
        // Invocation-level rule, checked once per round so rounds stay paired.
        if let Some(ad) = &plan.adaptive {
            use crate::conclude::kernels::{inconclusive, process_spread};
            let mut all = true;
            for (i, s) in state.iter().enumerate() {
                if s.failed.is_some() {
                    continue;
                }
                match process_spread(&s.values) {
                    Some(p) if s.values.len() >= ad.min && p.half <= ad.precision => {
                        benches[i].stop_reason = format!(
                            "invocations: ±{:.1}% over {} processes (--precision {:.1}%)",
                            100.0 * p.half,
                            p.n,
                            100.0 * ad.precision
                        )
                    }
                    _ => all = false,
                }
            }
            if all {
                break;
            }
            // Another round starts only when it would end within the budget, at the pace of
            // the slowest round so far (the first, which calibrates, only while it is alone,
            // and less its calibration and linearity check, which later rounds do not repeat:
            // a harness that starts a process per request spent most of its first round there).
            round_times.push(round_start.elapsed().saturating_sub(once));
            let spent = t0.elapsed();
            let next = next_round(&round_times);
            let bound = if round + 1 == plan.max_invocations {
                Some(format!(
                    "--max-invocations {} reached",
                    plan.max_invocations
                ))
            } else if spent + next > ad.budget {
                Some(format!(
                    "--time-budget {} reached: another round (~{:.1} s, the slowest so far) would end at {:.1} s",
                    humantime::format_duration(Duration::from_secs(ad.budget.as_secs().max(1))),
                    next.as_secs_f64(),
                    (spent + next).as_secs_f64()
                ))
            } else {
                None
            };
            if let Some(why) = bound {
                for (i, s) in state.iter().enumerate() {
                    let settled = benches[i].stop_reason.starts_with("invocations: ");
                    if s.failed.is_some() || settled {
                        continue;
                    }
                    benches[i].stop_reason = match process_spread(&s.values) {
                        Some(p) if s.values.len() < ad.min => format!(
                            "inconclusive: {} invocations (fewer than {}; {why})",
                            p.n, ad.min
                        ),
                        Some(p) => inconclusive(&p, ad.precision, &why),
                        None => format!("inconclusive: {} invocations ({why})", s.values.len()),
                    };
                }
                break;
            }
            continue;
        }
        let mut all = true;
        for (i, s) in state.iter_mut().enumerate() {
            if s.failed.is_some() {
                continue;
            }
            let ctx = Samples {
                xs: &s.values,
                seconds: s.seconds,
            };
            if plan.invocation_stop.holds(&ctx) {
                benches[i].stop_reason =
                    format!("invocations: {}", plan.invocation_stop.explain(&ctx));
            } else {
                all = false;
            }
        }
        if all {
            break;
        }
        if round + 1 == plan.max_invocations {
            for (i, s) in state.iter().enumerate() {
                if benches[i].stop_reason.is_empty() && s.failed.is_none() {
                    benches[i].stop_reason =
                        format!("--max-invocations {} reached", plan.max_invocations);
                }
            }
        }
    }
    for (i, s) in state.iter().enumerate() {
        if let Some(e) = &s.failed {
            benches[i].stop_reason = format!("failed: {e}");
        }
    }
    KernelsOutcome::Complete
}

/// How far apart (a factor) the loops calibrated for one kernel in different programs may be
/// and still be made one (the larger): beyond it the programs differ more than a machine's
/// speed modes make calibrations differ (2× on the VM the tests run on), and the slower
/// program's samples would last that many times longer than it needs.
pub const SHARED_LOOPS_WITHIN: u64 = 4;

/// Gives the programs of one kernel (its name and parameters) the same loops per sample: the
/// largest any of them calibrated, where every one has calibrated and they are within
/// [`SHARED_LOOPS_WITHIN`] of each other; called after each round (a JIT's warm-up may raise
/// one program's loops in a later process).
///
/// Each program's first invocation calibrates alone, at whatever speed the machine had then:
/// on a VM with two speeds 2× apart, two identical pytest-benchmark suites got loop counts up to
/// 2× apart, kept for the whole session. A cost each sample carries whatever its loops (a
/// harness's bookkeeping between rounds, caches it leaves cold) then weighs more per loop on
/// the side with fewer: in pytest-benchmark processes, samples of 200 loops alternated with
/// samples of 100 were 3.4% ± 1.0% faster per loop for `test_sum[4096]` (32 processes,
/// `bench/loops_per_sample.py`; docs/native-workers.md), a difference of the two sides'
/// settings that pairing by round cannot cancel. Samples of the same loops carry the same
/// share of it.
///
/// Not with `--counters`: a program's counts per loop agree exactly between its invocations
/// only at one loop count (a sample's fixed instructions are spread over its loops: the C++
/// blur counted 186,824 a loop in its first process and 186,495 at the loops shared after it;
/// a JS worker counted by difference, 155,548 and 170,997), and counts do not move with the
/// machine's speed, which is what made calibrations differ.
fn share_loops(targets: &[Target], state: &mut [State]) {
    let mut groups: BTreeMap<(&str, &BTreeMap<String, String>), Vec<usize>> = BTreeMap::new();
    for (i, t) in targets.iter().enumerate() {
        if state[i].failed.is_none() {
            groups.entry((&t.kernel, &t.params)).or_default().push(i);
        }
    }
    for members in groups.values().filter(|m| m.len() > 1) {
        let loops: Option<Vec<u64>> = members.iter().map(|&i| state[i].loops).collect();
        let Some(loops) = loops else { continue };
        let (Some(&lo), Some(&hi)) = (loops.iter().min(), loops.iter().max()) else {
            continue;
        };
        if hi > lo && hi <= lo.saturating_mul(SHARED_LOOPS_WITHIN) {
            for &i in members {
                state[i].loops = Some(hi);
            }
        }
    }
}

/// The time the next round is expected to take: the slowest of the rounds after the first
/// (the first also calibrates and checks linearity), or the first while it is the only one.
fn next_round(rounds: &[Duration]) -> Duration {
    match rounds {
        [] => Duration::ZERO,
        [only] => *only,
        [_, rest @ ..] => rest.iter().copied().max().unwrap_or_default(),
    }
}

/// One invocation's conversation: for each of `mine` (already shuffled), setup, calibrate and
/// check linearity where not done yet, warm up, sample until the rule holds, tear down.
/// What each benchmark got goes to `taken` as soon as it has it, so a later failure keeps it.
/// The actions of a session and where the conversation is, for the inner stages.
struct At<'a> {
    actions: &'a mut Actions,
    program: &'a str,
    round: usize,
}

impl At<'_> {
    fn run(&mut self, stage: Stage, benchmark: &str) -> Result<(), WorkerError> {
        self.actions
            .run(&StageContext {
                stage,
                benchmark: Some(benchmark),
                program: self.program,
                round: self.round,
            })
            .map_err(WorkerError::Aborted)
    }
}

#[allow(clippy::too_many_arguments)]
fn invocation(
    plan: &KernelsPlan,
    clock: &ClockInfo,
    w: &mut Worker,
    mine: &[usize],
    state: &[State],
    taken: &mut Vec<Taken>,
    at: &mut At,
    cancel: &AtomicBool,
) -> Result<(), WorkerError> {
    let hello = w.hello(plan.start_timeout)?;
    let jit = matches!(hello.lang.as_str(), "java" | "js");
    let steady = match plan.steady_state {
        SteadyState::Auto => jit,
        SteadyState::On => true,
        SteadyState::Off => false,
    };
    // The clock measured now, in this process (it can differ between processes a little);
    // the discovery's is the fallback.
    let clock = match w.clock()? {
        Ok(c) => c,
        Err(_) => *clock,
    };
    for &i in mine {
        if cancel.load(Ordering::Relaxed) {
            return Err(WorkerError::Interrupted);
        }
        let t = &plan.targets[i];
        let started = Instant::now();
        let mut got = Taken {
            target: i,
            samples: Vec::new(),
            steady_from: 0,
            error: None,
            loops: state[i].loops,
            linearity: None,
            linearity_skipped: None,
            first_loop: None,
            loop_ns: state[i].loop_ns,
            seconds: 0.0,
            once_seconds: 0.0,
            reps: Vec::new(),
            counts: Vec::new(),
            count_method: None,
            finished: false,
        };
        let name = format!("{}/{}", t.kernel, at.program);
        // What fails in here fails this kernel, the one running: not those this process
        // finished before it.
        let mut one = || -> Result<(), WorkerError> {
            at.run(Stage::BeforeBenchmark, &name)?;
            if let Err(msg) = w.setup(&t.kernel, &t.params)? {
                got.error = Some(format!(
                    "setup of '{}' failed in the worker: {msg}",
                    t.kernel
                ));
                return Ok(());
            }
            let outcome = measure(plan, &clock, steady, w, &state[i], &mut got, at, &name);
            got.seconds = started.elapsed().as_secs_f64();
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(msg)) => got.error = Some(msg),
                Err(e) => return Err(e),
            }
            let torn = w.teardown()?;
            if let (Err(msg), None) = (torn, &got.error) {
                got.error = Some(format!(
                    "teardown of '{}' failed in the worker: {msg}",
                    t.kernel
                ));
            }
            at.run(Stage::AfterBenchmark, &name)
        };
        let r = one();
        got.finished = r.is_ok();
        taken.push(got);
        r?;
    }
    w.exit()
}

/// `run loops=n reps=k`, each sample expected to take `n` loops at the slowest time per loop
/// seen so far (its line may take `--worker-timeout` plus twice that); `loop_ns` then takes
/// in the samples' own times per loop.
fn ask(
    w: &mut Worker,
    n: u64,
    reps: u64,
    loop_ns: &mut Option<f64>,
) -> Result<worker::Reply<Vec<Sample>>, WorkerError> {
    let expected = loop_ns.map(|l| Duration::from_secs_f64((l * n as f64 * 1e-9).min(1e6)));
    let r = w.run_expecting(n, reps, expected, |_| {})?;
    if let Ok(samples) = &r {
        for s in samples {
            let per = s.ns as f64 / s.loops.max(1) as f64;
            *loop_ns = Some(loop_ns.map_or(per, |l| l.max(per)));
        }
    }
    Ok(r)
}

/// Calibration, linearity, warm-up and samples of one benchmark in one invocation.
#[allow(clippy::too_many_arguments)]
fn measure(
    plan: &KernelsPlan,
    clock: &ClockInfo,
    steady: bool,
    w: &mut Worker,
    state: &State,
    got: &mut Taken,
    at: &mut At,
    name: &str,
) -> Result<Result<(), String>, WorkerError> {
    // Actions between repetitions need one sample per request.
    let per_rep = at.actions.has(Stage::BeforeRepetition) || at.actions.has(Stage::AfterRepetition);
    let began = Instant::now();
    let target = target_ns(clock, plan.min_sample);
    let kernel = &plan.targets[got.target].kernel;
    let in_worker = |e: String| format!("'{kernel}' failed in the worker: {e}");
    // Calibration's samples at the loops it chose, with their repetition numbers: the
    // invocation's warm-up where there is no action between repetitions.
    let mut at_n: Vec<(Sample, u64)> = Vec::new();
    // Calibration's steps: loops and the first sample's ns at each (the first-loop check).
    let mut steps: Vec<(u64, f64)> = Vec::new();
    let calibrated_here = state.loops.is_none();
    let mut loops = match state.loops {
        Some(n) => n,
        None => {
            let floor = resolvable_ns(clock);
            let calibrated = calibrate(target, floor, |n, reps| {
                let first = w.samples_received + 1;
                match ask(w, n, reps, &mut got.loop_ns) {
                    Err(e) => Err(Stop::Worker(e)),
                    Ok(Err(e)) => Err(Stop::Kernel(e)),
                    Ok(Ok(s)) => {
                        if at_n.first().is_some_and(|(x, _)| x.loops != s[0].loops) {
                            at_n.clear();
                        }
                        let ns: Vec<f64> = s.iter().map(|x| at_loops(x, n)).collect();
                        if steps.last().is_none_or(|&(m, _)| m != n) {
                            steps.push((n, ns.first().copied().unwrap_or(0.0)));
                        }
                        at_n.extend(s.into_iter().zip(first..));
                        Ok(ns)
                    }
                }
            });
            match calibrated {
                Ok(Calibration::Loops(n)) => n,
                Ok(Calibration::Vanished { loops, ns }) => {
                    return Ok(Err(format!(
                        "no counted sample: calibration stopped at {loops} loops a sample, which took {ns:.0} ns (under {MIN_LOOP_NS} ns a loop: the time does not grow with the loops); the body was optimized away or its timed region ignores the loops: pass a value the body computes to the client's do-not-optimize helper (black_box)"
                    )))
                }
                Err(Stop::Worker(e)) => return Err(e),
                Err(Stop::Kernel(e)) => return Ok(Err(in_worker(e))),
            }
        }
    };
    // A JIT's compiled code is faster than what calibration timed (the interpreter's, C1's):
    // samples at that N until they stop getting faster, then N again from their pace, so
    // the steady state's samples are not shorter than the target (51 of 51 were, before).
    let long_one = loops == 1
        && at_n
            .first()
            .is_some_and(|(s, _)| s.ns as f64 >= ONE_LOOP_IS_LONG * target);
    if steady && calibrated_here && !long_one {
        let warmed = jit_warmup(target, loops, |n| match ask(w, n, 1, &mut got.loop_ns) {
            Err(e) => Err(Stop::Worker(e)),
            Ok(Err(e)) => Err(Stop::Kernel(e)),
            Ok(Ok(s)) => Ok(at_loops(&s[0], n)),
        });
        match warmed {
            Ok(n) => {
                if n != loops {
                    // Calibration's samples were at the old N: not this N's warm-up (every
                    // recorded sample has the kernel's loops).
                    at_n.clear();
                }
                loops = n;
            }
            Err(Stop::Worker(e)) => return Err(e),
            Err(Stop::Kernel(e)) => return Ok(Err(in_worker(e))),
        }
    }
    got.loops = Some(loops);
    // One loop many times the sample time: N = 1, and 2N against N would take 18 or more
    // such loops to say what one loop a sample cannot hide (an optimized-away body takes no
    // seconds).
    let one_loop = at_n
        .first()
        .filter(|(s, _)| loops == 1 && s.loops == 1)
        .map(|(s, _)| s.ns as f64);
    if let Some(n) = plan.loops.filter(|_| !state.linearity_done) {
        got.linearity_skipped = Some(format!(
            "--loops {n} fixes the loops per sample: 2N loops against N were not asked for"
        ));
    } else if let Some(ns) = one_loop.filter(|&ns| ns >= ONE_LOOP_IS_LONG * target) {
        got.linearity_skipped = Some(format!(
            "one loop took {} ({:.0}× the shortest sample, {}), so a sample is one loop and 2N loops against N (at least 18 loops more) were not asked for",
            crate::units::format_time(ns * 1e-9, None),
            ns / target,
            crate::units::format_time(target * 1e-9, None)
        ));
    } else if !state.linearity_done {
        let min_ns = FIRST_LOOP_MIN_NS.max(100.0 * clock.cost_ns);
        let first = check_first_loop(&steps, min_ns, |n| match ask(w, n, 1, &mut got.loop_ns) {
            Err(e) => Err(Stop::Worker(e)),
            Ok(Err(e)) => Err(Stop::Kernel(e)),
            Ok(Ok(s)) => Ok(at_loops(&s[0], n)),
        });
        match first {
            Ok(f) => got.first_loop = f,
            Err(Stop::Worker(e)) => return Err(e),
            Err(Stop::Kernel(e)) => return Ok(Err(in_worker(e))),
        }
        // CPU time where the worker reports it (steal and other load do not count there).
        let checked = check_linearity(loops, |n| match ask(w, n, 1, &mut got.loop_ns) {
            Err(e) => Err(Stop::Worker(e)),
            Ok(Err(e)) => Err(Stop::Kernel(e)),
            Ok(Ok(s)) => {
                let ns = s[0].cpu_ns.filter(|&c| c > 0).unwrap_or(s[0].ns);
                Ok(ns as f64 * n as f64 / s[0].loops.max(1) as f64)
            }
        });
        match checked {
            Ok(l) => got.linearity = Some(l),
            Err(Stop::Worker(e)) => return Err(e),
            Err(Stop::Kernel(e)) => return Ok(Err(in_worker(e))),
        }
    }
    got.once_seconds = began.elapsed().as_secs_f64();
    // Samples of a second or so are asked for one at a time: the stop rule is checked after
    // each (3 at a time of 5 s a loop ran up to 10 s past it).
    let long = got
        .loop_ns
        .is_some_and(|l| l * loops as f64 >= LONG_SAMPLE_NS);
    let batch_size = if per_rep || long { 1 } else { BATCH };
    let mut left = plan.warmup as u64;
    if !per_rep {
        // Calibration ran at these loops in this process just now: its samples are the
        // warm-up (a kernel of seconds a loop is not run once more for it).
        let reused: Vec<(Sample, u64)> = at_n.into_iter().take(plan.warmup).collect();
        left -= reused.len() as u64;
        for (s, rep) in reused {
            got.reps.push(rep);
            got.samples.push((s, Some("warm-up".to_string())));
        }
    }
    while left > 0 {
        let reps = if per_rep { 1 } else { left };
        at.run(Stage::BeforeRepetition, name)?;
        let first = w.samples_received + 1;
        match ask(w, loops, reps, &mut got.loop_ns)? {
            Ok(s) => {
                got.reps.extend(first..first + s.len() as u64);
                got.samples
                    .extend(s.into_iter().map(|s| (s, Some("warm-up".to_string()))))
            }
            Err(e) => return Ok(Err(in_worker(e))),
        }
        at.run(Stage::AfterRepetition, name)?;
        left -= reps;
    }
    let floor = resolvable_ns(clock);
    let started = Instant::now();
    // A JIT's steady state needs enough samples to be seen (stats::warmup needs 20).
    let min_steady = if steady {
        stats::warmup::WARMUP_MIN_RUNS
    } else {
        0
    };
    let mut xs: Vec<f64> = Vec::new();
    loop {
        let done = got.samples.len() - plan.warmup;
        let reps = batch_size
            .min(plan.max_samples.saturating_sub(done) as u64)
            .max(1);
        at.run(Stage::BeforeRepetition, name)?;
        let first = w.samples_received + 1;
        let batch = match ask(w, loops, reps, &mut got.loop_ns)? {
            Ok(s) => s,
            Err(e) => return Ok(Err(in_worker(e))),
        };
        got.reps.extend(first..first + batch.len() as u64);
        at.run(Stage::AfterRepetition, name)?;
        for s in batch {
            let why = ((s.ns as f64) < floor).then(|| "unresolved".to_string());
            if why.is_none() {
                xs.push(s.ns as f64 / s.loops as f64 * 1e-9);
            }
            got.samples.push((s, why));
        }
        let ctx = Samples {
            xs: &xs,
            seconds: started.elapsed().as_secs_f64(),
        };
        let measured = got.samples.len() - plan.warmup;
        if measured >= plan.max_samples
            || (xs.len() >= min_steady && plan.sample_stop.holds(&ctx))
            || (xs.is_empty() && measured >= 2 * BATCH as usize)
        {
            break;
        }
    }
    if xs.is_empty() {
        let n = got.samples.len() - plan.warmup;
        return Ok(Err(format!(
            "no counted sample: all {n} samples of {loops} loops were shorter than the worker's clock can resolve (< {floor:.0} ns; resolution {} ns, read cost {:.1} ns): raise --sample-time so a sample holds more loops, and check that the body is not optimized away",
            clock.resolution_ns, clock.cost_ns
        )));
    }
    if steady {
        if let Some(wu) = stats::warmup_transient(&xs) {
            if wu.suggested_warmup > 0 {
                // Mark the first `suggested_warmup` kept samples as before the steady state.
                let mut left = wu.suggested_warmup;
                for (i, (_, why)) in got.samples.iter_mut().enumerate() {
                    if left == 0 {
                        break;
                    }
                    if why.is_none() {
                        *why = Some("steady-state".into());
                        left -= 1;
                        got.steady_from = i + 1;
                    }
                }
            }
        }
    }
    Ok(Ok(()))
}

/// Key of how a sample's counts were taken in `Run.extra`: [`REGION_METHOD`] or
/// [`DELTA_METHOD`].
pub const COUNT_METHOD_KEY: &str = "counters_method";
/// Counted in the worker's timed region (`tare_timed_region`, Callgrind's toggle).
pub const REGION_METHOD: &str = "timed region";
/// Counted as the difference of whole invocations of 1× and 2× the loops
/// (`counters::delta`).
pub const DELTA_METHOD: &str = "1x/2x invocations";

/// Whether a program's timed region is a native function Callgrind can toggle collection on
/// (`tare_timed_region`, in workers of the C, C++ and Rust clients); the loops of other workers
/// (Python, Go, Java, JS, the native harnesses) are counted by [`count_delta`].
pub fn counts_region(h: &Hello) -> bool {
    matches!(
        h.client.as_str(),
        "tare-worker-c" | "tare-worker-cpp" | "tare-worker-rust"
    )
}

/// Environment of the invocations [`count_delta`] counts, where the user did not set it: what
/// makes a runtime's start-up the same in every process (Python's hash salt), and what keeps
/// Go's runtime from preempting goroutines by signals, which Callgrind's signal handling
/// asserts on (`vgCallgrind_post_signal`) and which lands wherever the simulated clock says.
pub const DETERMINISTIC_ENV: &[(&str, &str)] =
    &[("PYTHONHASHSEED", "0"), ("GODEBUG", "asyncpreemptoff=1")];

/// How much longer a worker's replies may take under Valgrind than `--worker-timeout` and
/// `--start-timeout` allow (it runs programs 20–100× slower).
const VALGRIND_SLOWER: u32 = 100;

/// Counts per loop of `target`'s body in program `p` by the difference of two whole
/// invocations under Valgrind (`counters::delta`): the same conversation (setup, for a JIT a
/// warm-up sample of `loops` loops, one sample, teardown, exit) with `loops` and with
/// `2 · loops` loops in its sample.
#[allow(clippy::too_many_arguments)]
fn count_delta(
    plan: &KernelsPlan,
    exec: &Executor,
    p: usize,
    target: &Target,
    loops: u64,
    jit: bool,
    c: &crate::plan::Counters,
    cancel: &AtomicBool,
) -> Result<Vec<crate::method::counters::CounterValue>, String> {
    use crate::method::counters::{delta, valgrind};
    let once = |n: u64| -> Result<(Vec<crate::method::counters::CounterValue>, u64), String> {
        let dir = tempfile::Builder::new()
            .prefix("tare-counters-")
            .tempdir()
            .map_err(|e| format!("cannot make a temporary directory ({e}); check TMPDIR"))?;
        let mut spec = plan.spec.clone();
        let argv: Vec<std::ffi::OsString> = plan.programs[p].argv.iter().map(Into::into).collect();
        spec.argv = valgrind::wrap(&c.program, &argv, &c.events, dir.path());
        // Python salts its string hashes per process (dict layouts, and so counts, differ by
        // ~0.1% of a start-up between processes); one fixed seed makes A and B the same
        // program but for the loops. A seed the user gave is kept.
        for (k, v) in DETERMINISTIC_ENV {
            if !spec.env.iter().any(|(n, _)| n == k) {
                spec.env.push((k.into(), v.into()));
            }
        }
        let limit = plan.timeout * VALGRIND_SLOWER;
        let start = plan.start_timeout * VALGRIND_SLOWER;
        let grace = worker::EXIT_GRACE * VALGRIND_SLOWER;
        let (m, r) = worker::invoke_with_grace(exec, &spec, limit, grace, cancel, |w| {
            w.hello(start)?;
            if let Err(e) = w.setup(&target.kernel, &target.params)? {
                return Ok(Err(format!("setup failed in the worker: {e}")));
            }
            if jit {
                if let Err(e) = w.run(loops, 1, |_| {})? {
                    return Ok(Err(format!(
                        "'{}' failed in the worker: {e}",
                        target.kernel
                    )));
                }
            }
            let ran = match w.run(n, 1, |_| {})? {
                Ok(s) => s[0].loops,
                Err(e) => {
                    return Ok(Err(format!(
                        "'{}' failed in the worker: {e}",
                        target.kernel
                    )))
                }
            };
            w.teardown()?.ok();
            w.exit()?;
            Ok(Ok(ran))
        })
        .map_err(|e| format!("{e:#}"))?;
        let ran = r.map_err(|e| {
            format!(
                "{} (valgrind's log: {})",
                explain(e, &m),
                valgrind::log_line(dir.path())
            )
        })??;
        if !m.succeeded() {
            return Err(format!(
                "its invocation under valgrind ended with {:?}",
                m.termination
            ));
        }
        Ok((valgrind::collect(dir.path(), &c.events)?, ran))
    };
    let (one, n1) = once(loops)?;
    let (two, n2) = once(loops.saturating_mul(2))?;
    Ok(delta::per_loop(&one, &two, n1, n2))
}

/// Each sample's counts per loop from Valgrind's dump of its repetition; a warning when a
/// program's worker dumped none (its timed region has no name Valgrind can find).
fn read_counts(
    taken: &mut [Taken],
    c: &crate::plan::Counters,
    dir: &std::path::Path,
    program: &str,
) {
    use crate::method::counters::valgrind;
    let mut any = false;
    for t in taken.iter_mut() {
        t.counts = t
            .samples
            .iter()
            .zip(&t.reps)
            .map(|((s, _), &n)| {
                let totals = valgrind::dump(dir, n)?;
                any = true;
                let mut v = valgrind::values(&totals, &c.events);
                for x in &mut v {
                    x.value = x.value.map(|v| v / s.loops.max(1) as f64);
                    x.unit = "per loop".into();
                }
                Some(v)
            })
            .collect();
    }
    let samples: usize = taken.iter().map(|t| t.samples.len()).sum();
    if !any && samples > 0 {
        eprintln!(
            "tare: warning: '{program}' gave no counts of its timed region: Valgrind found no function {} in it (workers of the C, C++ and Rust clients have it; a stripped binary loses it)",
            valgrind::TIMED_REGION
        );
    }
}

/// A sample's time as if it had run `loops` loops: its own where it did (every worker that
/// fixes its loops); scaled by its own count where the worker's harness picked another
/// (`loops=approximate`: Google Benchmark before 1.8 chooses its iterations).
fn at_loops(s: &Sample, loops: u64) -> f64 {
    if s.loops == loops || s.loops == 0 {
        s.ns as f64
    } else {
        s.ns as f64 * loops as f64 / s.loops as f64
    }
}

/// Appends what one invocation got to the benchmarks and updates their state.
#[allow(clippy::too_many_arguments)]
fn record(
    plan: &KernelsPlan,
    benches: &mut [Benchmark],
    state: &mut [State],
    taken: &[Taken],
    mine: &[usize],
    round: usize,
    m: Option<&crate::exec::Measurement>,
    // The process's failure, and the benchmarks it is pinned on.
    failure: Option<(&str, &[usize])>,
    (setup, meters, environment): (
        Option<String>,
        BTreeMap<String, f64>,
        Option<serde_json::Value>,
    ),
    t0: Instant,
) {
    for &i in mine {
        let got = taken.iter().find(|t| t.target == i);
        let error = failure.and_then(|(e, blamed)| blamed.contains(&i).then_some(e));
        if got.is_none() && error.is_none() && failure.is_some() {
            // The process failed before this kernel's turn: not measured in it, tried again
            // in the next round.
            continue;
        }
        let b = &mut benches[i];
        let mut invs = invocations(b);
        let index = invs.len();
        let mut counted = Vec::new();
        let mut n = 0;
        if let Some(got) = got {
            let mut rec = kernel_record(b).unwrap_or_default();
            if let Some(l) = got.loops {
                rec.loops = l;
                state[i].loops = Some(l);
            }
            if let Some(l) = got.linearity {
                rec.linearity = Some(l.ratio);
                rec.linearity_ci = Some([l.ci.0, l.ci.1]);
                rec.linearity_pairs = Some(l.pairs);
                state[i].linearity_done = true;
            }
            if let Some(why) = &got.linearity_skipped {
                rec.linearity_skipped = Some(why.clone());
                state[i].linearity_done = true;
            }
            if got.first_loop.is_some() {
                rec.first_loop_ns = got.first_loop;
            }
            state[i].loop_ns = got.loop_ns;
            for (pos, (s, why)) in got.samples.iter().enumerate() {
                if rec.bytes_per_loop.is_none() {
                    rec.bytes_per_loop = s.bytes.map(|x| x as f64 / s.loops as f64);
                }
                if rec.items_per_loop.is_none() {
                    rec.items_per_loop = s.items.map(|x| x as f64 / s.loops as f64);
                }
                let per = |ns: u64| ns as f64 / s.loops as f64 * 1e-9;
                let wall = per(s.ns);
                let cpu = s.cpu_ns.map(per).unwrap_or(0.0);
                if why.is_none() {
                    counted.push(wall);
                }
                let sample = SampleRecord {
                    invocation: index,
                    position: pos,
                    loops: s.loops,
                    ns: s.ns,
                    cpu_ns: s.cpu_ns,
                    bytes: s.bytes,
                    items: s.items,
                    metrics: s.metrics.clone(),
                    excluded: why.clone(),
                };
                let mut extra = BTreeMap::new();
                extra.insert(SAMPLE_KEY.to_string(), serde_json::json!(sample));
                if let Some(Some(counts)) = got.counts.get(pos) {
                    extra.insert(
                        crate::method::counters::RUN_KEY.to_string(),
                        serde_json::json!(counts),
                    );
                    extra.insert(
                        crate::method::counters::BACKEND_KEY.to_string(),
                        serde_json::json!("valgrind"),
                    );
                    extra.insert(
                        COUNT_METHOD_KEY.to_string(),
                        serde_json::json!(got.count_method.unwrap_or(REGION_METHOD)),
                    );
                }
                b.runs.push(Run {
                    index: b.runs.len(),
                    round: None,
                    warmup: why.is_some(),
                    start_offset: t0.elapsed().as_secs_f64(),
                    wall_time: wall,
                    user_time: cpu,
                    system_time: 0.0,
                    cpu_time: cpu,
                    peak_memory: None,
                    exit_code: None,
                    signal: None,
                    termination: Termination::Exit,
                    involuntary_context_switches: None,
                    counted: why.is_none(),
                    meters: Default::default(),
                    extra,
                });
                n += 1;
            }
            b.extra
                .insert(KERNEL_KEY.to_string(), serde_json::json!(rec));
            state[i].seconds += got.seconds;
        }
        let median = stats::median(&stats::sorted_without_nan(&counted));
        let mean =
            (!counted.is_empty()).then(|| counted.iter().sum::<f64>() / counted.len() as f64);
        let own_error = got.and_then(|g| g.error.clone());
        if let (Some(m), None, None) = (mean, &own_error, error) {
            state[i].values.push(m);
        }
        if own_error.is_some() && !plan.ignore_failure {
            state[i]
                .failed
                .get_or_insert(own_error.clone().unwrap_or_default());
        }
        invs.push(InvocationRecord {
            index,
            round,
            wall_time: m.map_or(0.0, |m| m.wall.as_secs_f64()),
            cpu_time: m.map_or(0.0, |m| m.cpu().as_secs_f64()),
            peak_memory: m.and_then(|m| m.peak_memory),
            samples: n,
            counted: counted.len(),
            median,
            mean,
            steady_from: got.map_or(0, |g| g.steady_from),
            error: own_error.or_else(|| error.map(str::to_string)),
            setup: setup.clone(),
            meters: meters.clone(),
            environment: environment.clone(),
        });
        b.extra
            .insert(INVOCATIONS_KEY.to_string(), serde_json::json!(invs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::worker::{KernelInfo, ParamInfo};
    use crate::plan::command::Parameter;

    #[test]
    fn programs_of_one_kernel_share_the_larger_loops_within_a_factor() {
        let t = |kernel: &str, n: &str, program: usize| Target {
            kernel: kernel.into(),
            params: [("n".to_string(), n.to_string())].into(),
            program,
        };
        let targets = [
            t("sort", "1", 0),
            t("sort", "1", 1),
            t("sort", "2", 0),
            t("sort", "2", 1),
            t("hash", "1", 0),
            t("hash", "1", 1),
            t("sum", "1", 0),
            t("sum", "1", 1),
            t("sum", "1", 2),
        ];
        let with = |loops: &[Option<u64>]| -> Vec<State> {
            loops
                .iter()
                .map(|&l| State {
                    loops: l,
                    ..State::default()
                })
                .collect()
        };
        let loops = |s: &[State]| s.iter().map(|s| s.loops).collect::<Vec<_>>();
        // sort n=1: 2× apart, both take 200; sort n=2 (other parameters): 4× apart, the limit,
        // shared; hash: 5× apart, kept; sum: one program not calibrated yet, kept.
        let mut s = with(&[
            Some(100),
            Some(200),
            Some(50),
            Some(200),
            Some(10),
            Some(50),
            Some(7),
            None,
            Some(9),
        ]);
        share_loops(&targets, &mut s);
        assert_eq!(
            loops(&s),
            [
                Some(200),
                Some(200),
                Some(200),
                Some(200),
                Some(10),
                Some(50),
                Some(7),
                None,
                Some(9)
            ]
        );
        // A failed program is left out of its kernel's group.
        s[7].failed = Some("crashed".into());
        share_loops(&targets, &mut s);
        assert_eq!(loops(&s)[6..], [Some(9), None, Some(9)]);
    }

    #[test]
    fn the_next_round_is_forecast_from_the_slowest_after_the_first() {
        let s = Duration::from_secs;
        assert_eq!(next_round(&[]), s(0));
        assert_eq!(next_round(&[s(9)]), s(9));
        // The first calibrates: not the pace; one slow round among fast ones is.
        assert_eq!(next_round(&[s(9), s(1), s(4), s(1), s(1)]), s(4));
    }

    fn program(kernels: &[(&str, &[(&str, &str)])]) -> Discovered {
        Discovered {
            hello: Hello {
                client: "t".into(),
                version: "1".into(),
                lang: "c".into(),
                approximate_loops: false,
                kernels: kernels
                    .iter()
                    .map(|(n, ps)| KernelInfo {
                        name: n.to_string(),
                        doc: String::new(),
                        threads: 1,
                        params: ps
                            .iter()
                            .map(|(p, d)| ParamInfo {
                                name: p.to_string(),
                                default: d.to_string(),
                                doc: String::new(),
                                values: Vec::new(),
                            })
                            .collect(),
                    })
                    .collect(),
            },
            clock: ClockInfo {
                resolution_ns: 1.0,
                cost_ns: 20.0,
            },
        }
    }

    #[test]
    fn kernels_match_by_name_across_programs_with_one_parameter_grid() {
        let a = program(&[
            ("blur", &[("size", "256"), ("radius", "3")]),
            ("empty", &[]),
        ]);
        let b = program(&[
            ("empty", &[]),
            ("blur", &[("size", "128"), ("radius", "3")]),
        ]);
        let c = program(&[("only_c", &[])]);
        let params = [Parameter {
            name: "size".into(),
            values: vec!["64".into(), "128".into()],
        }];
        let t = targets(&[a, b, c], None, &params).unwrap();
        let shown: Vec<String> = t
            .iter()
            .map(|t| format!("{}{:?}@{}", t.kernel, t.params, t.program))
            .collect();
        assert_eq!(
            shown,
            [
                r#"blur{"radius": "3", "size": "64"}@0"#,
                r#"blur{"radius": "3", "size": "64"}@1"#,
                r#"blur{"radius": "3", "size": "128"}@0"#,
                r#"blur{"radius": "3", "size": "128"}@1"#,
                "empty{}@0",
                "empty{}@1",
                "only_c{}@2",
            ]
        );
    }

    #[test]
    fn defaults_come_from_the_first_program_and_unknown_parameters_are_refused() {
        let a = program(&[("blur", &[("size", "256")])]);
        let b = program(&[("blur", &[("size", "128")])]);
        let t = targets(&[a.clone(), b], None, &[]).unwrap();
        assert!(t.iter().all(|t| t.params["size"] == "256"));
        let bad = [Parameter {
            name: "nope".into(),
            values: vec!["1".into()],
        }];
        assert!(targets(std::slice::from_ref(&a), None, &bad)
            .unwrap_err()
            .contains("parameter 'nope' is not declared"));
        let f = regex::Regex::new("^x").unwrap();
        assert!(targets(&[a], Some(&f), &[])
            .unwrap_err()
            .contains("no kernel matches"));
    }

    #[test]
    fn values_a_worker_lists_are_each_measured_unless_values_are_given() {
        let mut a = program(&[("sum", &[("size", "256"), ("kind", "int")])]);
        a.hello.kernels[0].params[0].values = vec!["256".into(), "4096".into()];
        let shown = |t: Vec<Target>| -> Vec<String> {
            t.iter()
                .map(|t| format!("{}={}", t.params["size"], t.params["kind"]))
                .collect()
        };
        let t = targets(std::slice::from_ref(&a), None, &[]).unwrap();
        assert_eq!(shown(t), ["256=int", "4096=int"]);
        let given = [Parameter {
            name: "size".into(),
            values: vec!["64".into()],
        }];
        let t = targets(&[a], None, &given).unwrap();
        assert_eq!(shown(t), ["64=int"]);
    }

    /// A noisy machine as a 2-vCPU VM is: two speed modes (the slow one 1.5× the fast) that
    /// persist for a few samples, and log-normal noise on every sample (σ = `sigma`). `cost`
    /// is the kernel's time for `n` loops without noise.
    fn noisy(seed: u64, sigma: f64, cost: impl Fn(u64) -> f64) -> impl FnMut(u64) -> f64 {
        use rand::Rng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut slow = false;
        move |n| {
            if rng.gen_bool(0.3) {
                slow = !slow;
            }
            // Box–Muller: one standard normal.
            let (u, v): (f64, f64) = (rng.gen_range(1e-12..1.0), rng.gen());
            let z = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
            cost(n) * if slow { 1.5 } else { 1.0 } * (sigma * z).exp()
        }
    }

    /// The check as it was: the least of 4 samples of 2N against the least of 4 of N.
    fn least_of_four(mut t: impl FnMut(u64) -> f64, n: u64) -> f64 {
        let (mut one, mut two) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..4 {
            one = one.min(t(n));
            two = two.min(t(2 * n));
        }
        two / one
    }

    fn warns(l: &Linearity) -> bool {
        use crate::conclude::kernels::{LINEARITY_MAX, LINEARITY_MIN};
        l.ci.1 < LINEARITY_MIN || l.ci.0 > LINEARITY_MAX
    }

    #[test]
    fn linearity_check_does_not_read_noise_as_dead_code() {
        use crate::conclude::kernels::{LINEARITY_MAX, LINEARITY_MIN};
        let ok = |r: f64| (LINEARITY_MIN..=LINEARITY_MAX).contains(&r);
        let linear = |n: u64| 67e6 * n as f64; // richards: 67 ms a loop, N = 1
        let (mut before, mut after) = (0, 0);
        for seed in 0..30 {
            if !ok(least_of_four(noisy(seed, 0.15, linear), 1)) {
                before += 1;
            }
            let mut t = noisy(seed, 0.15, linear);
            let l2 = check_linearity(1, |n| Ok::<_, ()>(t(n))).unwrap();
            assert!(l2.pairs >= LINEARITY_PAIRS.0 && l2.pairs <= LINEARITY_CHEAP_PAIRS);
            assert!(l2.ci.0 <= l2.ratio && l2.ratio <= l2.ci.1, "{l2:?}");
            if warns(&l2) {
                after += 1;
            }
        }
        eprintln!(
            "false linearity warnings over 30 noisy seeds: least-of-4 {before}, pairs {after}"
        );
        assert_eq!(after, 0, "false warnings with pairs");
        // What it is for: a body optimized away (time independent of N) and state that grows
        // (time ∝ N³ here: a ratio of 8) are still found, through the same noise.
        for seed in 0..30 {
            let mut gone = noisy(seed, 0.15, |_| 5e6);
            let l = check_linearity(1000, |n| Ok::<_, ()>(gone(n))).unwrap();
            assert!(warns(&l) && l.ci.1 < LINEARITY_MIN, "seed {seed}: {l:?}");
            let mut grows = noisy(seed, 0.15, |n| 1e-3 * (n as f64).powi(3));
            let l = check_linearity(1000, |n| Ok::<_, ()>(grows(n))).unwrap();
            assert!(warns(&l) && l.ci.0 > LINEARITY_MAX, "seed {seed}: {l:?}");
        }
        // Optimized away and read by a coarse clock (120 ns steps, as the fake worker's): the
        // times are clock noise, 0–360 ns whatever N is.
        for seed in 0..30 {
            let mut t = noisy(seed, 0.3, |_| 300.0);
            let l =
                check_linearity(1 << 40, |n| Ok::<_, ()>((t(n) / 120.0).floor() * 120.0)).unwrap();
            assert!(l.ci.1 < LINEARITY_MIN, "seed {seed}: {l:?}");
        }
        // A quiet linear kernel settles at the fewest pairs.
        let l = check_linearity(10, |n| Ok::<_, ()>(n as f64 * 100.0)).unwrap();
        assert_eq!((l.ratio, l.pairs), (2.0, LINEARITY_PAIRS.0));
        // An error of the worker ends the check and is passed on.
        assert_eq!(check_linearity(10, |_| Err::<f64, _>("gone")), Err("gone"));
    }

    /// Calibration over `ns(n)`, with every request's loops (and repetitions) kept.
    fn calibrated(target: f64, floor: f64, ns: impl Fn(u64) -> f64) -> (Calibration, Vec<u64>) {
        let mut asked = Vec::new();
        let c = calibrate(target, floor, |n, k| {
            asked.extend(std::iter::repeat_n(n, k as usize));
            Ok::<_, ()>((0..k).map(|_| ns(n)).collect())
        })
        .unwrap();
        (c, asked)
    }

    #[test]
    fn a_first_loop_far_dearer_than_the_rest_is_found_and_a_linear_one_is_not() {
        let check = |steps: &[(u64, f64)], t: &dyn Fn(u64) -> f64| {
            let mut asked = Vec::new();
            let r = check_first_loop::<()>(steps, 10_000.0, |n| {
                asked.push(n);
                Ok(t(n))
            })
            .unwrap();
            (r, asked)
        };
        // Sorting in place: loop 1 sorts unsorted data (700 µs), the rest sorted (4 µs).
        let sort = |n: u64| 700_000.0 + 4_000.0 * (n - 1) as f64;
        let (r, asked) = check(&[(1, sort(1)), (16, sort(16))], &sort);
        assert_eq!(r, Some([700_000.0, 4_000.0]));
        assert_eq!(asked, [1, 2, 2, 1, 1, 2, 2, 1, 1, 2]);
        // A body whose cost is in its loop: screened out by a second sample of 16 loops.
        let linear = |n: u64| 50_000.0 * n as f64;
        assert_eq!(check(&[(1, 50e3), (16, 800e3)], &linear), (None, vec![16]));
        // Calibration's sample of 16 loops preempted for 10 ms: the second one screens it in.
        let (r, asked) = check(&[(1, sort(1)), (16, sort(16) + 10e6)], &sort);
        assert_eq!(r, Some([700_000.0, 4_000.0]));
        assert_eq!(asked[0], 16);
        // Screened by a preempted first sample, not confirmed by the pairs.
        assert_eq!(check(&[(1, 9e6), (16, 800e3)], &linear).0, None);
        // Screened by an interpreted first step, then fast (a JIT): 1.5 µs a sample of one
        // loop, 2.05 µs of two, is the sample's cost, not state.
        let jit = |n: u64| 1_000.0 + 550.0 * n as f64;
        assert_eq!(check(&[(1, 50e3), (16, 60e3)], &jit).0, None);
        // Too short a loop (under 10 µs), or calibration not from 1: not made.
        let tiny = |n: u64| 5_000.0 + (n - 1) as f64;
        assert_eq!(check(&[(1, 5e3), (16, 5_015.0)], &tiny), (None, vec![]));
        assert_eq!(check(&[(4, 5e6), (16, 5e6)], &sort), (None, vec![]));
    }

    #[test]
    fn a_jit_worker_is_calibrated_again_once_its_code_stops_getting_faster() {
        // 100 µs a loop for the first 0.2 s of samples, then 10 µs (compiled): N = 60 for a
        // 5 ms target at the slow pace is taken again at the fast one.
        let mut clock = 0.0;
        let mut asked = 0;
        let n = jit_warmup::<()>(5e6, 60, |n| {
            asked += 1;
            let per = if clock < 0.2e9 { 100e3 } else { 10e3 };
            let ns = per * n as f64;
            clock += ns;
            Ok(ns)
        })
        .unwrap();
        assert_eq!(n, 600);
        assert!(
            (50..JIT_WARMUP_MAX_SAMPLES).contains(&asked),
            "{clock} {asked}"
        );
        // Steady from the start: the loops stay.
        let n = jit_warmup::<()>(5e6, 60, |n| Ok(100e3 * n as f64)).unwrap();
        assert_eq!(n, 60);
    }

    #[test]
    fn calibration_gives_up_on_a_body_optimized_away() {
        // Time independent of the loops (clock noise around 300 ns), or 0 from a coarse clock:
        // stopped after 2^20 loops, once that many would take more than the clock resolves.
        for flat in [300.0, 0.0] {
            let (c, asked) = calibrated(5e6, 3000.0, |_| flat);
            match c {
                Calibration::Vanished { loops, ns } => {
                    assert!((VANISHED_LOOPS..1 << 30).contains(&loops), "{loops}");
                    assert_eq!(ns, flat);
                }
                other => panic!("{other:?}"),
            }
            assert!(asked.iter().all(|&n| n < 1 << 30), "{asked:?}");
        }
        // A real loop of 0.3 ns (an empty body kept by a do-not-optimize helper) is calibrated.
        let (c, _) = calibrated(5e6, 3000.0, |n| 40.0 + 0.3 * n as f64);
        assert!(matches!(c, Calibration::Loops(n) if (16_000_000..40_000_000).contains(&n)));
        // One loop of 1 s against a 5 ms sample: N = 1 from the one sample, not confirmed by
        // two more; one of 50 ms (10×) is.
        let (c, asked) = calibrated(5e6, 3000.0, |n| 1e9 * n as f64);
        assert_eq!((c, asked), (Calibration::Loops(1), vec![1]));
        let (c, asked) = calibrated(5e6, 3000.0, |n| 5e7 * n as f64);
        assert_eq!((c, asked), (Calibration::Loops(1), vec![1, 1, 1]));
        // A coarse clock (1 ms steps) that reads 0 for a kernel of 1 ns a loop at 2^20 loops is
        // not called optimized away: that many loops are under what it resolves.
        let coarse = |n: u64| ((n as f64) / 1e6).floor() * 1e6;
        let (c, _) = calibrated(1e9, 1e8, coarse);
        assert!(
            matches!(c, Calibration::Loops(n) if n >= 1_000_000_000),
            "{c:?}"
        );
    }

    #[test]
    fn a_sample_is_long_enough_for_the_clock() {
        let c = ClockInfo {
            resolution_ns: 30.0,
            cost_ns: 25.0,
        };
        // 1000 × 30 ns = 30 µs, 100 × 25 ns = 2.5 µs, the minimum 1 ms wins.
        assert_eq!(target_ns(&c, Duration::from_millis(1)), 1e6);
        let coarse = ClockInfo {
            resolution_ns: 10_000.0,
            cost_ns: 25.0,
        };
        assert_eq!(target_ns(&coarse, Duration::from_millis(1)), 1e7);
        assert_eq!(resolvable_ns(&coarse), 1e6);
    }
}
