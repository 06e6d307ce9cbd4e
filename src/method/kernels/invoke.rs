//! One invocation's conversation with a worker process: for each of its kernels, setup,
//! calibration and the checks where not done yet, warm-up, samples until the iteration-level
//! rule holds, teardown; what each kernel got goes to a [`Taken`] as it comes.
//!
//! Not for: starting the process and the rounds around it (`session.rs`), the rules of loops
//! per sample (`calibrate.rs`), or the records made of the samples (`records.rs`).

use super::{
    calibrate, check_first_loop, check_linearity, jit_warmup, resolvable_ns, target_ns,
    Calibration, KernelsPlan, Samples, State, SteadyState, Taken, FIRST_LOOP_MIN_NS, MIN_LOOP_NS,
    ONE_LOOP_IS_LONG,
};
use crate::exec::worker::{self, ClockInfo, Sample, Worker, WorkerError};
use crate::method::stages::{Actions, Stage, StageContext};
use crate::stats;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Samples per `run` request while measuring (each streams back as it is taken).
const BATCH: u64 = 3;
/// A sample expected to take this long (1 s) or more is asked for one at a time: the stop rule
/// is checked after each, and batching saves nothing there (below it, a native harness that
/// starts a process per request keeps serving batches from one process).
const LONG_SAMPLE_NS: f64 = 1e9;

/// Why a request of the measurement stopped: the conversation failed (the invocation ends), or
/// the worker answered with its own `error` (this kernel ends, the worker goes on).
enum Stop {
    Worker(WorkerError),
    Kernel(String),
}

/// The actions of a session and of the program (its level of `--cache`), and where the
/// conversation is, for the inner stages.
pub(super) struct At<'a> {
    pub(super) actions: &'a mut Actions,
    pub(super) own: Option<&'a mut Actions>,
    pub(super) program: &'a str,
    pub(super) round: usize,
}

impl At<'_> {
    /// The session's actions at `stage` and the program's own, nearer the sample: after the
    /// session's before it, before them after it.
    fn run(&mut self, stage: Stage, benchmark: &str) -> Result<(), WorkerError> {
        let ctx = StageContext {
            stage,
            benchmark: Some(benchmark),
            program: self.program,
            round: self.round,
        };
        let actions = &mut *self.actions;
        Actions::nested(self.own.as_deref_mut(), &ctx, || actions.run(&ctx), |e| e)
            .map_err(WorkerError::Aborted)
    }

    /// Whether any action runs at `stage`.
    fn has(&self, stage: Stage) -> bool {
        self.actions.has(stage) || self.own.as_ref().is_some_and(|o| o.has(stage))
    }
}

/// The start of an invocation's conversation: the worker's hello, whether its kernels get
/// steady-state detection (`--steady-state`; under `auto`, a JIT's `java` or `js`), and the
/// clock measured now, in this process (it can differ between processes a little), the
/// discovery's `fallback` where the worker cannot measure it.
pub(super) fn greet(
    w: &mut Worker,
    plan: &KernelsPlan,
    fallback: &ClockInfo,
) -> Result<(bool, ClockInfo), WorkerError> {
    let hello = w.hello(plan.start_timeout)?;
    let steady = match plan.steady_state {
        SteadyState::Auto => matches!(hello.lang.as_str(), "java" | "js"),
        SteadyState::On => true,
        SteadyState::Off => false,
    };
    let clock = match w.clock()? {
        Ok(c) => c,
        Err(_) => *fallback,
    };
    Ok((steady, clock))
}

/// One invocation's conversation: for each of `mine` (already shuffled), setup, calibrate and
/// check linearity where not done yet, warm up, sample until the rule holds, tear down.
/// What each benchmark got goes to `taken` as soon as it has it, so a later failure keeps it.
#[allow(clippy::too_many_arguments)]
pub(super) fn invocation(
    plan: &KernelsPlan,
    clock: &ClockInfo,
    w: &mut Worker,
    mine: &[usize],
    state: &[State],
    taken: &mut Vec<Taken>,
    at: &mut At,
    cancel: &AtomicBool,
) -> Result<(), WorkerError> {
    let (steady, clock) = greet(w, plan, clock)?;
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
    let per_rep = at.has(Stage::BeforeRepetition) || at.has(Stage::AfterRepetition);
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
        None => match calibration(clock, target, w, &mut got.loop_ns, &mut at_n, &mut steps) {
            Ok(Calibration::Loops(n)) => n,
            Ok(Calibration::Vanished { loops, ns }) => {
                return Ok(Err(format!(
                    "no counted sample: calibration stopped at {loops} loops a sample, which took {ns:.0} ns (under {MIN_LOOP_NS} ns a loop: the time does not grow with the loops); the body was optimized away or its timed region ignores the loops: pass a value the body computes to the client's do-not-optimize helper (black_box)"
                )))
            }
            Err(Stop::Worker(e)) => return Err(e),
            Err(Stop::Kernel(e)) => return Ok(Err(in_worker(e))),
        },
    };
    // A JIT's compiled code is faster than what calibration timed (the interpreter's, C1's):
    // samples at that N until they stop getting faster, then N again from their pace, so
    // the steady state's samples are not shorter than the target (51 of 51 were, before).
    let long_one = loops == 1
        && at_n
            .first()
            .is_some_and(|(s, _)| s.ns as f64 >= ONE_LOOP_IS_LONG * target);
    if steady && calibrated_here && !long_one {
        let warmed = jit_warmup(target, loops, |n| sample_ns(w, n, &mut got.loop_ns));
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
    match checks(plan, clock, target, w, state, got, loops, one_loop, &steps) {
        Ok(()) => {}
        Err(Stop::Worker(e)) => return Err(e),
        Err(Stop::Kernel(e)) => return Ok(Err(in_worker(e))),
    }
    got.once_seconds = began.elapsed().as_secs_f64();
    // Samples of a second or so are asked for one at a time: the stop rule is checked after
    // each (3 at a time of 5 s a loop ran up to 10 s past it).
    let long = got
        .loop_ns
        .is_some_and(|l| l * loops as f64 >= LONG_SAMPLE_NS);
    let batch_size = if per_rep || long { 1 } else { BATCH };
    if let Err(e) = warm_up(plan, per_rep, w, got, at, name, loops, at_n)? {
        return Ok(Err(e));
    }
    let xs = match sample(plan, clock, steady, batch_size, w, got, at, name, loops)? {
        Ok(xs) => xs,
        Err(e) => return Ok(Err(e)),
    };
    if steady {
        mark_steady_state(got, &xs);
    }
    Ok(Ok(()))
}

/// Calibration of one benchmark (`calibrate`, its requests to the worker), keeping its
/// samples at the loops it chose (`at_n`, with their repetition numbers) and its steps (loops
/// and the first sample's ns at each).
fn calibration(
    clock: &ClockInfo,
    target: f64,
    w: &mut Worker,
    loop_ns: &mut Option<f64>,
    at_n: &mut Vec<(Sample, u64)>,
    steps: &mut Vec<(u64, f64)>,
) -> Result<Calibration, Stop> {
    let floor = resolvable_ns(clock);
    calibrate(target, floor, |n, reps| {
        let first = w.samples_received + 1;
        match ask(w, n, reps, loop_ns) {
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
    })
}

/// One sample of `n` loops (its ns, as if it had run `n`), for the JIT's warm-up and the
/// first-loop check.
fn sample_ns(w: &mut Worker, n: u64, loop_ns: &mut Option<f64>) -> Result<f64, Stop> {
    match ask(w, n, 1, loop_ns) {
        Err(e) => Err(Stop::Worker(e)),
        Ok(Err(e)) => Err(Stop::Kernel(e)),
        Ok(Ok(s)) => Ok(at_loops(&s[0], n)),
    }
}

/// The checks made once per benchmark at its final `loops`: the first-loop check and the
/// linearity check, or why linearity was not checked (`--loops`, or one loop many times the
/// sample time: `one_loop`, its ns).
#[allow(clippy::too_many_arguments)]
fn checks(
    plan: &KernelsPlan,
    clock: &ClockInfo,
    target: f64,
    w: &mut Worker,
    state: &State,
    got: &mut Taken,
    loops: u64,
    one_loop: Option<f64>,
    steps: &[(u64, f64)],
) -> Result<(), Stop> {
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
        // Under Valgrind (`--counters`) a sample's first loop pays the translation of the code
        // it reaches first: every kernel would look as if loop 1 left state behind.
        if plan.counters.is_none() {
            let min_ns = FIRST_LOOP_MIN_NS.max(100.0 * clock.cost_ns);
            got.first_loop =
                check_first_loop(steps, min_ns, |n| sample_ns(w, n, &mut got.loop_ns))?;
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
        got.linearity = Some(checked?);
    }
    Ok(())
}

/// The invocation's warm-up: `--warmup` samples at `loops`, calibration's samples at them
/// (`at_n`) first where there is no action between repetitions.
#[allow(clippy::too_many_arguments)]
fn warm_up(
    plan: &KernelsPlan,
    per_rep: bool,
    w: &mut Worker,
    got: &mut Taken,
    at: &mut At,
    name: &str,
    loops: u64,
    at_n: Vec<(Sample, u64)>,
) -> Result<Result<(), String>, WorkerError> {
    let kernel = &plan.targets[got.target].kernel;
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
            Err(e) => return Ok(Err(format!("'{kernel}' failed in the worker: {e}"))),
        }
        at.run(Stage::AfterRepetition, name)?;
        left -= reps;
    }
    Ok(Ok(()))
}

/// The measured samples, `batch_size` a request, until the iteration-level rule holds (or
/// `--max-samples`): the counted ones' seconds per loop, or why none was counted.
#[allow(clippy::too_many_arguments)]
fn sample(
    plan: &KernelsPlan,
    clock: &ClockInfo,
    steady: bool,
    batch_size: u64,
    w: &mut Worker,
    got: &mut Taken,
    at: &mut At,
    name: &str,
    loops: u64,
) -> Result<Result<Vec<f64>, String>, WorkerError> {
    let kernel = &plan.targets[got.target].kernel;
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
            Err(e) => return Ok(Err(format!("'{kernel}' failed in the worker: {e}"))),
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
    Ok(Ok(xs))
}

/// A JIT's steady state: the counted samples before it (`stats::warmup_transient` over their
/// seconds per loop, `xs`) excluded, and `steady_from` set past them.
fn mark_steady_state(got: &mut Taken, xs: &[f64]) {
    if let Some(wu) = stats::warmup_transient(xs) {
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
