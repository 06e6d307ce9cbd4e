//! Head to head inside one process (`tare kernels --baseline KERNEL`, issue 46): every other
//! kernel of a program measured against the baseline kernel in the same processes, their
//! samples alternated, so what moves the machine (a VM's speed modes, steal, a build beside
//! it) falls on both sides of each pair.
//!
//! In each process, for each (kernel, baseline) pair, in an order drawn from the rounds' rng:
//! - **calibration** (first process): each side's loops grown as for any kernel
//!   (`calibrate`), then chosen from its time per loop so that a sample of either side lasts
//!   about the sample time: the same DURATION, not the same loops;
//! - **blocks**: a side's block is a sample dropped (the switch's warm-up: caches and branch
//!   predictors the other side left) and then [`BLOCK_MIN_SAMPLES`] or more samples, as many as
//!   make its block last as long as the other side's (a side whose one loop lasts far longer
//!   than the other's sample gets blocks of one sample, the other side as many as fill the
//!   same time) and at least [`SWITCH_SHARE`] × what a switch costs;
//! - **alternation**: [`PAIRS`] pairs of blocks in ABBA order (AB BA AB BA …; which side starts
//!   alternates across rounds: counterbalanced), each pair's ln(time per loop of the kernel /
//!   of the baseline) from its blocks' medians a paired difference; the process's value is
//!   the median of those, kept with its within-process interval;
//! - a JIT's warm-up (java, js, or `--steady-state on`) excluded on both sides alike: each
//!   side's samples until they stop getting faster (`jit_warmup`), in every process.
//!
//! Protocol v1 as it is: one kernel set up at a time, so a switch is `teardown` then `setup`
//! of the other side, which every client and native harness answers; its cost is measured in
//! each process and kept in the records (blocks are sized from it).
//!
//! Processes are the unit of replication. Their rounds are the round scheduler's
//! (`method::rounds`: programs in counterbalanced order, the cancellation check before each
//! process, the loop that asks after each round whether to stop); this engine's unit is one
//! process of a program running its pairs, and its rule: rounds until the verdict's interval
//! (`conclude::pairs`) is within `--precision` over at least [`SETTLE_MIN_PROCESSES`]
//! processes, within `--time-budget` a comparison (`rounds::Pace`) and `--max-invocations`, or
//! a fixed `-r N`.
//!
//! Not for: the verdict (`conclude::pairs`), printing and exports (`cli::kernels`).

use super::{
    calibrate, explain, jit_warmup, resolvable_ns, target_ns, Calibration, Discovered,
    KernelsObserver, KernelsOutcome, KernelsPlan,
};
use crate::conclude::pairs::{self as cp, PairVerdict};
use crate::exec::worker::{self, ClockInfo, Worker, WorkerError};
use crate::exec::Executor;
use crate::method::rounds::{self, Engine, Halt, Pace, Scope, Shape, Turn};
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Pairs of blocks in each process for each comparison.
pub const PAIRS: usize = 16;
/// Fewest counted samples in a block (after the dropped one).
pub const BLOCK_MIN_SAMPLES: usize = 3;
/// A block lasts at least this many times a switch (`teardown` + `setup`, the median of five
/// measured at calibration), so switches cost at most 1/SWITCH_SHARE of the time...
pub const SWITCH_SHARE: f64 = 5.0;
/// ... up to this long a block (ns; longer only for [`BLOCK_MIN_SAMPLES`] samples of a long
/// kernel): a block much longer than a machine's speed episode (seconds on the VM) would no
/// longer share it with the other side's. On the 2-vCPU VM at load 12, a switch took 3–20 ms.
pub const MAX_BLOCK_NS: f64 = 30e6;

/// By default the ratio is of CPU time where both sides had a sample whose CPU time was at
/// least this share of its wall time (a kernel that ran without waiting).
pub const BUSY_SHARE: f64 = 0.9;

/// A kernel against the baseline: indices of `KernelsPlan::targets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    pub baseline: usize,
    pub other: usize,
}

/// What one process gave for one pair.
#[derive(Debug, Clone, Serialize)]
pub struct PairProcess {
    pub round: usize,
    /// The baseline's block came first in this process's first pair of blocks.
    pub baseline_first: bool,
    /// exp(median of the pairs' log ratios): the process's ratio kernel / baseline.
    pub ratio: f64,
    /// The 95% interval of that median (the within-process interval).
    pub ratio_ci_low: f64,
    pub ratio_ci_high: f64,
    /// Which time the ratio is of: "wall", or "cpu" (the process's CPU time over each
    /// sample, `--pair-time cpu`, where the worker sends it).
    pub time: &'static str,
    /// The median ratio of wall time, and of CPU time where the worker sent it.
    pub wall_ratio: f64,
    pub cpu_ratio: Option<f64>,
    /// Each pair of blocks' ln(kernel / baseline) of wall time, in the order taken...
    pub log_ratios: Vec<f64>,
    /// ... and of CPU time (empty where the worker sent none).
    pub cpu_log_ratios: Vec<f64>,
    /// Each side's time per loop in this process, ns, [baseline, kernel]: the median of its
    /// blocks' medians, of wall time...
    pub ns_per_loop: [f64; 2],
    /// ... and of CPU time (None where the worker sent none).
    pub cpu_ns_per_loop: Option<[f64; 2]>,
    /// Mean time of a switch between the two kernels (`teardown` + `setup`), ms.
    pub switch_ms: f64,
    /// Time of this pair in this process, s.
    pub seconds: f64,
}

/// A pair across the session.
#[derive(Debug, Clone)]
pub struct PairResult {
    pub pair: Pair,
    /// Loops per sample of [baseline, kernel].
    pub loops: Option<[u64; 2]>,
    /// Counted samples per block of [baseline, kernel].
    pub block: [usize; 2],
    /// Expected ns of a sample of [baseline, kernel] (its loops at calibration's pace).
    pub sample_ns: [f64; 2],
    pub processes: Vec<PairProcess>,
    pub verdict: Option<PairVerdict>,
    pub failed: Option<String>,
    pub stop_reason: String,
    /// Whether the ratio is of CPU time (decided in the first process).
    pub cpu: Option<bool>,
    /// Median time of a switch measured at calibration, ns.
    pub switch_ns: f64,
}

/// Fewest processes before a comparison may stop on `--precision` (the plan's minimum when
/// larger). A stop on the interval's width picks the sessions whose few processes happen to
/// agree, whose interval is then too narrow: with 5 processes, an A/A comparison was called in
/// 6.8% of simulated sessions at α 0.05 (per-process values drawn from real A/A sessions, their
/// spread 1.5×), with 10 in 5.4% (`bench/head_to_head_stop.py`, docs/head-to-head.md).
pub const SETTLE_MIN_PROCESSES: usize = 10;

/// Runs the rounds of processes for `pairs`, the verdicts at `confidence`: the round
/// scheduler (`method::rounds`) drives them, a unit being one process of a program running
/// its pairs ([`HeadToHead`]).
#[allow(clippy::too_many_arguments)]
pub fn head_to_head(
    plan: &KernelsPlan,
    pairs: &[Pair],
    confidence: f64,
    cpu: Option<bool>,
    exec: &Executor,
    found: &[Discovered],
    observer: &mut dyn KernelsObserver,
    cancel: &AtomicBool,
) -> (Vec<PairResult>, KernelsOutcome) {
    let results: Vec<PairResult> = pairs
        .iter()
        .map(|&pair| PairResult {
            pair,
            loops: plan.loops.map(|l| [l, l]),
            block: [BLOCK_MIN_SAMPLES; 2],
            sample_ns: [0.0; 2],
            processes: Vec::new(),
            verdict: None,
            failed: None,
            stop_reason: String::new(),
            switch_ns: 0.0,
            cpu: None,
        })
        .collect();
    let mut programs: Vec<usize> = pairs
        .iter()
        .map(|p| plan.targets[p.baseline].program)
        .collect();
    programs.sort_unstable();
    programs.dedup();
    let budget = plan.adaptive.map(|a| {
        a.budget
            .saturating_mul(u32::try_from(pairs.len().max(1)).unwrap_or(u32::MAX))
    });
    let shape = Shape {
        units: programs.len(),
        warmups: 0,
        max_rounds: plan.max_invocations,
        seed: plan.seed,
    };
    let mut h = HeadToHead {
        plan,
        confidence,
        cpu,
        exec,
        found,
        observer,
        cancel,
        results,
        programs,
        budget,
        pace: Pace::default(),
    };
    let outcome = match rounds::interleaved(&mut h, &shape, cancel) {
        Ok(()) => KernelsOutcome::Complete,
        Err(Halt::Interrupted) => return (h.results, KernelsOutcome::Interrupted),
        Err(Halt::Failed(e)) => return (h.results, KernelsOutcome::Failed(e)),
    };
    for r in h.results.iter_mut() {
        if let Some(e) = &r.failed {
            r.stop_reason = format!("failed: {e}");
        } else if r.stop_reason.is_empty() {
            r.stop_reason = format!("{} processes", r.processes.len());
        }
    }
    (h.results, outcome)
}

/// The head to head's engine for the round scheduler: a unit is one process of a program
/// (`programs[unit]`), running that program's pairs not failed, in an order drawn from the
/// rounds' rng; after each round the verdicts and the stop rule.
struct HeadToHead<'a> {
    plan: &'a KernelsPlan,
    confidence: f64,
    cpu: Option<bool>,
    exec: &'a Executor,
    found: &'a [Discovered],
    observer: &'a mut dyn KernelsObserver,
    cancel: &'a AtomicBool,
    results: Vec<PairResult>,
    /// The programs with pairs, the scheduler's units.
    programs: Vec<usize>,
    /// The session's time budget (`--time-budget` a comparison), adaptive only.
    budget: Option<Duration>,
    pace: Pace,
}

impl Engine for HeadToHead<'_> {
    type Failure = String;

    fn begin(&mut self, _: Scope) -> Result<(), Halt<String>> {
        self.pace.begin();
        Ok(())
    }

    fn unit(&mut self, unit: usize, turn: Turn, rng: &mut ChaCha8Rng) -> Result<(), Halt<String>> {
        let (plan, p) = (self.plan, self.programs[unit]);
        let round = turn.round.unwrap_or(0);
        let mut mine: Vec<usize> = (0..self.results.len())
            .filter(|&i| plan.targets[self.results[i].pair.baseline].program == p)
            .filter(|&i| self.results[i].failed.is_none())
            .collect();
        if mine.is_empty() {
            return Ok(());
        }
        mine.shuffle(rng);
        let mut spec = plan.spec.clone();
        spec.argv = plan.programs[p].argv.iter().map(Into::into).collect();
        let mut running: Option<usize> = None;
        let mut calibrating = Duration::ZERO;
        let (clock, cpu, cancel) = (self.found[p].clock, self.cpu, self.cancel);
        let res = &mut self.results;
        let r = worker::invoke(self.exec, &spec, plan.timeout, cancel, |w| {
            process(
                plan,
                &clock,
                w,
                &mine,
                res,
                round,
                cpu,
                &mut running,
                &mut calibrating,
                cancel,
            )
        });
        self.pace.once(calibrating);
        let error = match r {
            Ok((m, Ok(()))) if m.succeeded() => None,
            Ok((m, Ok(()))) => Some(format!(
                "worker ended with {:?} after 'bye' (exit status {:?})",
                m.termination, m.exit_code
            )),
            Ok((m, Err(e))) => Some(explain(e, &m)),
            Err(e) => Some(format!("{e:#}")),
        };
        self.observer
            .invocation(round, &plan.programs[p], error.as_deref());
        if cancel.load(Ordering::Relaxed) {
            return Err(Halt::Interrupted);
        }
        if let Some(e) = error {
            if !plan.ignore_failure {
                let kernel = running
                    .map(|i| {
                        let other = self.results[i].pair.other;
                        format!("kernel '{}', ", plan.targets[other].kernel)
                    })
                    .unwrap_or_default();
                return Err(Halt::Failed(format!(
                    "{e} ({kernel}program '{}', round {})",
                    plan.programs[p].command,
                    round + 1
                )));
            }
            let blamed: Vec<usize> = running.map_or(mine.clone(), |i| vec![i]);
            for i in blamed {
                self.results[i].failed.get_or_insert(e.clone());
            }
        }
        Ok(())
    }

    /// The verdicts over the processes so far; with the adaptive rule, whether every
    /// comparison not failed has its interval within `--precision` over enough processes
    /// (each one's stop reason then saying so). A fixed `-r N` never settles early.
    fn settled(&mut self, _round: usize) -> bool {
        for r in self.results.iter_mut() {
            let logs: Vec<f64> = r.processes.iter().map(|p| p.ratio.ln()).collect();
            r.verdict = cp::verdict(&logs, self.confidence);
        }
        let Some(ad) = self.plan.adaptive else {
            return false;
        };
        let min = ad.min.max(SETTLE_MIN_PROCESSES);
        let mut all = true;
        for r in self.results.iter_mut().filter(|r| r.failed.is_none()) {
            match &r.verdict {
                Some(v) if v.processes >= min && cp::half_width(v) <= ad.precision => {
                    r.stop_reason = format!(
                        "settled: ±{:.2}% over {} processes (--precision {:.2}%)",
                        100.0 * cp::half_width(v),
                        v.processes,
                        100.0 * ad.precision
                    );
                }
                _ => all = false,
            }
        }
        all
    }

    /// Adaptive only: whether another round would pass `--max-invocations` or end past the
    /// time budget (at the pace of the slowest round after the first, calibration left out);
    /// if so, every comparison not settled and not failed says it is inconclusive, and why.
    fn bounded(&mut self, round: usize) -> bool {
        let Some(ad) = self.plan.adaptive else {
            return false;
        };
        self.pace.end_round();
        let (next, spent) = (self.pace.next(), self.pace.spent());
        let why = if round + 1 == self.plan.max_invocations {
            format!("--max-invocations {} reached", self.plan.max_invocations)
        } else if self.budget.is_some_and(|b| spent + next > b) {
            format!(
                "--time-budget reached: another round (~{:.1} s) would end at {:.1} s",
                next.as_secs_f64(),
                (spent + next).as_secs_f64()
            )
        } else {
            return false;
        };
        for r in self.results.iter_mut().filter(|r| r.failed.is_none()) {
            if r.stop_reason.is_empty() {
                let min = ad.min.max(SETTLE_MIN_PROCESSES);
                r.stop_reason = match &r.verdict {
                    Some(v) if v.processes < min => format!(
                        "inconclusive: ±{:.2}% over {} processes, fewer than {min} ({why})",
                        100.0 * cp::half_width(v),
                        v.processes
                    ),
                    Some(v) => format!(
                        "inconclusive: ±{:.2}% over {} processes, wider than --precision {:.2}% ({why})",
                        100.0 * cp::half_width(v),
                        v.processes,
                        100.0 * ad.precision
                    ),
                    None => format!("inconclusive: {} processes ({why})", r.processes.len()),
                };
            }
        }
        true
    }
}

/// One process: for each pair of `mine` (already shuffled), calibration where not done yet,
/// a JIT's warm-up, the blocks; a pair the worker failed with its own `error` is marked
/// failed and the process goes on.
#[allow(clippy::too_many_arguments)]
fn process(
    plan: &KernelsPlan,
    clock: &ClockInfo,
    w: &mut Worker,
    mine: &[usize],
    results: &mut [PairResult],
    round: usize,
    cpu: Option<bool>,
    running: &mut Option<usize>,
    calibrating: &mut Duration,
    cancel: &AtomicBool,
) -> Result<(), WorkerError> {
    let (steady, clock) = super::invoke::greet(w, plan, clock)?;
    for &i in mine {
        if cancel.load(Ordering::Relaxed) {
            return Err(WorkerError::Interrupted);
        }
        *running = Some(i);
        let mut on = On {
            w,
            current: None,
            switches: Vec::new(),
            plan,
            cpu,
        };
        let baseline_first = (round + i).is_multiple_of(2);
        let got = one_pair(
            &mut on,
            &clock,
            steady,
            baseline_first,
            &mut results[i],
            calibrating,
            cancel,
        )?;
        // A kernel that failed in the worker is torn down (its own error said already).
        if got.is_err() && on.current.is_some() {
            let _ = on.w.teardown()?;
        }
        match got {
            Ok(mut p) => {
                p.round = round;
                results[i].processes.push(p);
            }
            Err(msg) => {
                results[i].failed.get_or_insert(msg);
            }
        }
    }
    *running = None;
    w.exit()
}

/// The worker and which side of the pair is set up on it, with the switches' times.
struct On<'a, 'w> {
    w: &'a mut Worker<'w>,
    /// 0 the baseline, 1 the kernel.
    current: Option<usize>,
    switches: Vec<Duration>,
    plan: &'a KernelsPlan,
    /// `--pair-time`: cpu (Some(true)), wall (Some(false)), or auto (None).
    cpu: Option<bool>,
}

/// A request's outcome: the conversation failed (`Err`), or the worker's own `error` (the
/// inner `Err`, this pair's failure).
type Asked<T> = Result<Result<T, String>, WorkerError>;

impl On<'_, '_> {
    /// Sets up `side` of `pair`, tearing down the other first; the time of a switch (both
    /// requests) is kept.
    fn switch(&mut self, pair: Pair, side: usize) -> Asked<()> {
        if self.current == Some(side) {
            return Ok(Ok(()));
        }
        let started = Instant::now();
        let was = self.current.take();
        if was.is_some() {
            if let Err(e) = self.w.teardown()? {
                return Ok(Err(format!("teardown failed in the worker: {e}")));
            }
        }
        let t = &self.plan.targets[if side == 0 { pair.baseline } else { pair.other }];
        if let Err(e) = self.w.setup(&t.kernel, &t.params)? {
            return Ok(Err(format!(
                "setup of '{}' failed in the worker: {e}",
                t.kernel
            )));
        }
        self.current = Some(side);
        if was.is_some() {
            self.switches.push(started.elapsed());
        }
        Ok(Ok(()))
    }

    /// `reps` samples of `n` loops: each one's ns per loop (by its own loops).
    fn take(&mut self, n: u64, reps: u64, per_loop: f64) -> Asked<Vec<f64>> {
        Ok(self
            .take_both(n, reps, per_loop)?
            .map(|s| s.iter().map(|x| x.0).collect()))
    }

    /// [`On::take`] with each sample's CPU ns per loop too, where the worker sent it.
    fn take_both(&mut self, n: u64, reps: u64, per_loop: f64) -> Asked<Vec<(f64, Option<f64>)>> {
        let expected = (per_loop > 0.0)
            .then(|| Duration::from_secs_f64((per_loop * n as f64 * 1e-9).min(1e6)));
        Ok(self.w.run_expecting(n, reps, expected, |_| {})?.map(|s| {
            s.iter()
                .map(|x| {
                    let l = x.loops.max(1) as f64;
                    (x.ns as f64 / l, x.cpu_ns.map(|c| c as f64 / l))
                })
                .collect()
        }))
    }
}

/// The median of `xs` (not empty).
fn median(xs: &[f64]) -> f64 {
    let s = crate::stats::quantile::sorted_without_nan(xs);
    crate::stats::quantile::median(&s).unwrap_or(f64::NAN)
}

/// One pair in one process: calibration where not done yet, a JIT's warm-up, then [`PAIRS`]
/// pairs of blocks in ABBA order.
fn one_pair(
    on: &mut On,
    clock: &ClockInfo,
    steady: bool,
    baseline_first: bool,
    r: &mut PairResult,
    calibrating: &mut Duration,
    cancel: &AtomicBool,
) -> Asked<PairProcess> {
    macro_rules! ask {
        ($e:expr) => {
            match $e? {
                Ok(x) => x,
                Err(msg) => return Ok(Err(msg)),
            }
        };
    }
    let started = Instant::now();
    let pair = r.pair;
    let target = target_ns(clock, on.plan.min_sample);
    let name = |side: usize| {
        on.plan.targets[if side == 0 { pair.baseline } else { pair.other }]
            .kernel
            .clone()
    };
    if r.loops.is_none() || r.sample_ns[0] == 0.0 {
        let mut loops = [0u64; 2];
        let mut per_loop = [0.0f64; 2];
        for side in 0..2 {
            ask!(on.switch(pair, side));
            let n = match r.loops {
                Some(l) => l[side],
                None => {
                    let floor = resolvable_ns(clock);
                    let c = calibrate(target, floor, |n, k| match on.take(n, k, 0.0) {
                        Err(e) => Err(Err(e)),
                        Ok(Err(msg)) => Err(Ok(msg)),
                        Ok(Ok(xs)) => Ok(xs.iter().map(|x| x * n as f64).collect()),
                    });
                    match c {
                        Ok(Calibration::Loops(n)) => n,
                        Ok(Calibration::Vanished { loops, ns }) => {
                            return Ok(Err(format!(
                                "'{}': calibration stopped at {loops} loops a sample, which took {ns:.0} ns: the body was optimized away; pass a value it computes to the client's do-not-optimize helper",
                                name(side)
                            )))
                        }
                        Err(Err(e)) => return Err(e),
                        Err(Ok(msg)) => {
                            return Ok(Err(format!("'{}' failed in the worker: {msg}", name(side))))
                        }
                    }
                }
            };
            let xs = ask!(on.take(n, 3, 0.0));
            per_loop[side] = xs.iter().copied().fold(f64::INFINITY, f64::min);
            loops[side] = match r.loops {
                Some(l) => l[side],
                // The same duration for both sides: loops from the time per loop.
                None => ((target / per_loop[side]).round() as u64).max(1),
            };
        }
        r.loops = Some(loops);
        r.sample_ns = [loops[0] as f64 * per_loop[0], loops[1] as f64 * per_loop[1]];
        // A switch's cost, measured now: the median of five.
        for _ in 0..2 {
            ask!(on.switch(pair, 0));
            ask!(on.switch(pair, 1));
        }
        let switches: Vec<f64> = on.switches.iter().map(|d| d.as_nanos() as f64).collect();
        let switch_ns = median(&switches);
        r.switch_ns = switch_ns;
        let longest = r.sample_ns[0].max(r.sample_ns[1]);
        let shortest = BLOCK_MIN_SAMPLES as f64 * longest;
        let block_ns = (SWITCH_SHARE * switch_ns).min(MAX_BLOCK_NS).max(shortest);
        for side in 0..2 {
            r.block[side] =
                ((block_ns / r.sample_ns[side].max(1.0)).ceil() as usize).max(BLOCK_MIN_SAMPLES);
        }
        *calibrating += started.elapsed();
    }
    let mut loops = r.loops.unwrap_or([1, 1]);
    let mut per_loop = [
        r.sample_ns[0] / loops[0] as f64,
        r.sample_ns[1] / loops[1] as f64,
    ];
    if steady {
        // Both sides' JIT warm-up, alike: samples until they stop getting faster.
        for side in 0..2 {
            ask!(on.switch(pair, side));
            let got = jit_warmup(target, loops[side], |n| {
                match on.take(n, 1, per_loop[side]) {
                    Err(e) => Err(Err(e)),
                    Ok(Err(msg)) => Err(Ok(msg)),
                    Ok(Ok(xs)) => Ok(xs[0] * n as f64),
                }
            });
            match got {
                Ok(_) => {}
                Err(Err(e)) => return Err(e),
                Err(Ok(msg)) => {
                    return Ok(Err(format!("'{}' failed in the worker: {msg}", name(side))))
                }
            }
        }
    }
    on.switches.clear();
    let first = if baseline_first { 0 } else { 1 };
    let mut logs = Vec::with_capacity(PAIRS);
    let mut cpu_logs = Vec::with_capacity(PAIRS);
    let mut busy = [0.0f64; 2];
    // Each block's median per side, of wall and of CPU time (the process's time per loop).
    let mut walls: [Vec<f64>; 2] = Default::default();
    let mut cpus: [Vec<f64>; 2] = Default::default();
    for k in 0..PAIRS {
        if cancel.load(Ordering::Relaxed) {
            return Err(WorkerError::Interrupted);
        }
        let order = if k % 2 == 0 {
            [first, 1 - first]
        } else {
            [1 - first, first]
        };
        let mut value = [0.0f64; 2];
        let mut cpu_value = [None; 2];
        for side in order {
            ask!(on.switch(pair, side));
            let both = ask!(on.take_both(loops[side], r.block[side] as u64 + 1, per_loop[side]));
            let xs: Vec<f64> = both.iter().map(|x| x.0).collect();
            // The first sample after a switch is the block's warm-up.
            value[side] = median(&xs[1..]);
            let cpu: Option<Vec<f64>> = both[1..].iter().map(|x| x.1).collect();
            for (w, c) in &both[1..] {
                if let Some(c) = c.filter(|_| *w > 0.0) {
                    busy[side] = busy[side].max(c / w);
                }
            }
            cpu_value[side] = cpu
                .filter(|c| c.iter().all(|&x| x > 0.0))
                .map(|c| median(&c));
            // Samples of both sides last the same: loops from the fastest time per loop seen
            // (a median under preemption depends on how long a sample lasts, so a side with
            // longer samples would be read slower). Calibration's pace, taken on a moving
            // machine, is refined by every block.
            let fastest = xs[1..].iter().copied().fold(per_loop[side], f64::min);
            if fastest > 0.0 && on.plan.loops.is_none() {
                per_loop[side] = fastest;
                loops[side] = ((target / fastest).round() as u64).max(1);
            }
        }
        logs.push((value[1] / value[0]).ln());
        for side in 0..2 {
            walls[side].push(value[side]);
        }
        if let [Some(a), Some(b)] = cpu_value {
            cpu_logs.push((b / a).ln());
            cpus[0].push(a);
            cpus[1].push(b);
        }
    }
    let cpu_ratio = (cpu_logs.len() == logs.len())
        .then(|| cp::within(&cpu_logs))
        .flatten();
    let wall = cp::within(&logs);
    // Which time, decided in the first process and kept: CPU time where asked, or by default
    // where both sides had a sample that ran without waiting (CPU time at least
    // [`BUSY_SHARE`] of the wall time): a kernel that sleeps or waits for I/O is timed by the
    // wall clock.
    let use_cpu = *r.cpu.get_or_insert_with(|| {
        cpu_ratio.is_some() && on.cpu.unwrap_or(busy.iter().all(|&b| b >= BUSY_SHARE))
    });
    let (ratio, low, high) = match (use_cpu, cpu_ratio) {
        (true, Some(c)) => c,
        _ => wall.unwrap_or((f64::NAN, f64::NAN, f64::NAN)),
    };
    r.loops = Some(loops);
    r.sample_ns = [loops[0] as f64 * per_loop[0], loops[1] as f64 * per_loop[1]];
    let switch_ms = if on.switches.is_empty() {
        0.0
    } else {
        on.switches.iter().map(|d| d.as_secs_f64()).sum::<f64>() * 1e3 / on.switches.len() as f64
    };
    if on.current.take().is_some() {
        if let Err(e) = on.w.teardown()? {
            return Ok(Err(format!("teardown failed in the worker: {e}")));
        }
    }
    Ok(Ok(PairProcess {
        round: 0,
        baseline_first,
        ratio,
        ratio_ci_low: low,
        ratio_ci_high: high,
        time: if use_cpu && cpu_ratio.is_some() {
            "cpu"
        } else {
            "wall"
        },
        wall_ratio: wall.map_or(f64::NAN, |w| w.0),
        cpu_ratio: cpu_ratio.map(|c| c.0),
        ns_per_loop: [median(&walls[0]), median(&walls[1])],
        cpu_ns_per_loop: (cpus[0].len() == PAIRS).then(|| [median(&cpus[0]), median(&cpus[1])]),
        log_ratios: logs,
        cpu_log_ratios: cpu_logs,
        switch_ms,
        seconds: started.elapsed().as_secs_f64(),
    }))
}
