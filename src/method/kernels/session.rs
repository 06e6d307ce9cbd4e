//! A `tare kernels` session: rounds of invocations, each program once a round in a
//! counterbalanced order (driven by `method::rounds`, whose unit here is one invocation), each
//! invocation with its actions, meters, machine
//! probe, randomized setup and counts around it; after each round the loops shared across
//! programs and the invocation-level rule (by default [`Adaptive`]: processes until
//! `--precision`, within `--time-budget`), until every benchmark's rule holds.
//!
//! Not for: the conversation inside one invocation (`invoke.rs`), the records made of it
//! (`records.rs`), or the conclusions (`conclude::kernels`).

use super::calibrate::share_loops;
use super::counts::{count_taken, counts_region, read_counts, wrap_region};
use super::discover::Discovered;
use super::invoke::{invocation, At};
use super::records::record;
use super::{
    explain, Adaptive, KernelsObserver, KernelsOutcome, KernelsPlan, Samples, State, Taken,
};
use crate::exec::worker::{self, WorkerError};
use crate::exec::{Executor, Measurement, RunSpec};
use crate::machine::probe::RunProbe;
use crate::method::rounds::{self, Engine, Halt, Pace, Scope, Shape, Turn};
use crate::method::stages::{Actions, Meter, Span, Stage, StageContext, UnitStages};
use crate::results::{Benchmark, Termination, INVOCATIONS_KEY};
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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
    units: &mut [UnitStages],
    observer: &mut dyn KernelsObserver,
    cancel: &AtomicBool,
) -> KernelsOutcome {
    // Snapshots of the machine around each invocation, as `tare run` takes around each run.
    let root = crate::machine::sysfs::SysRoot::from_env();
    let (probe, _) = RunProbe::for_runs(&root, plan.spec.cores.as_deref(), Default::default());
    let mut s = Session {
        plan,
        exec,
        found,
        benches,
        actions,
        meters,
        units,
        observer,
        cancel,
        state: vec![
            State {
                loops: plan.loops,
                ..State::default()
            };
            plan.targets.len()
        ],
        probe,
        t0: Instant::now(),
        pace: Pace::default(),
        metered: Vec::new(),
    };
    let shape = Shape {
        units: plan.programs.len(),
        warmups: 0,
        max_rounds: plan.max_invocations,
        seed: plan.seed,
    };
    match rounds::interleaved(&mut s, &shape, cancel) {
        Ok(()) => {}
        Err(Halt::Interrupted) => {
            s.finish_meters();
            return KernelsOutcome::Interrupted;
        }
        Err(Halt::Failed(e)) => {
            s.finish_meters();
            return KernelsOutcome::Failed(e);
        }
    }
    s.finish_meters();
    for (i, st) in s.state.iter().enumerate() {
        if let Some(e) = &st.failed {
            s.benches[i].stop_reason = format!("failed: {e}");
        }
    }
    KernelsOutcome::Complete
}

/// What a session works with and on, across its rounds.
struct Session<'a> {
    plan: &'a KernelsPlan,
    exec: &'a Executor,
    found: &'a [Discovered],
    benches: &'a mut [Benchmark],
    actions: &'a mut Actions,
    meters: &'a mut [Box<dyn Meter>],
    /// Each program's own actions and meters (its level of `--cache`, `--background`); empty
    /// when the session has no factor.
    units: &'a mut [UnitStages],
    observer: &'a mut dyn KernelsObserver,
    cancel: &'a AtomicBool,
    state: Vec<State>,
    probe: RunProbe,
    t0: Instant,
    /// The rounds' times for the time budget's forecast of the next (less what later rounds
    /// do not repeat: calibration, linearity).
    pace: Pace,
    /// Per metered invocation, in order, the (benchmark, invocation index) records it made:
    /// where the readings meters give after the session (`Meter::finish`) go.
    metered: Vec<Vec<(usize, usize)>>,
}

/// How many invocation records a benchmark has.
fn invocations_of(b: &Benchmark) -> usize {
    b.extra
        .get(INVOCATIONS_KEY)
        .and_then(|v| v.as_array())
        .map_or(0, Vec::len)
}

/// `tare kernels`' engine for the round scheduler (`method::rounds`): a unit is one worker
/// invocation of a program, running its benchmarks (many samples each).
impl Engine for Session<'_> {
    type Failure = String;

    fn begin(&mut self, _: Scope) -> Result<(), Halt<String>> {
        self.pace.begin();
        Ok(())
    }

    /// The invocation of program `p` for its benchmarks not done and not failed, in an order
    /// drawn from the rounds' rng (none: nothing to invoke).
    fn unit(&mut self, p: usize, turn: Turn, rng: &mut ChaCha8Rng) -> Result<(), Halt<String>> {
        let plan = self.plan;
        let mut mine: Vec<usize> = (0..plan.targets.len())
            .filter(|&i| plan.targets[i].program == p && !self.state[i].done)
            .filter(|&i| self.state[i].failed.is_none())
            .collect();
        if mine.is_empty() {
            return Ok(());
        }
        mine.shuffle(rng);
        let once = self.invoke(turn.round.unwrap_or(0), p, &mine)?;
        self.pace.once(once);
        Ok(())
    }

    /// Shares loops across programs, then the invocation-level rule, checked once per round
    /// so rounds stay paired.
    fn settled(&mut self, round: usize) -> bool {
        if self.plan.counters.is_none() {
            share_loops(&self.plan.targets, &mut self.state);
        }
        match self.plan.adaptive {
            Some(ad) => self.settled_within(&ad),
            None => self.invocation_rule_holds(round),
        }
    }

    /// Another round starts only when it would end within the budget, at the pace of the
    /// slowest round so far (the first, which calibrates, only while it is alone, and less its
    /// calibration and linearity check, which later rounds do not repeat: a harness that
    /// starts a process per request spent most of its first round there).
    fn bounded(&mut self, round: usize) -> bool {
        let Some(ad) = self.plan.adaptive else {
            return false;
        };
        self.pace.end_round();
        self.bounded_by(&ad, round)
    }
}

/// The run of program `p` in `round`, and its randomized setup in words where the plan has
/// one (or why it could not be made).
fn spec_of(
    plan: &KernelsPlan,
    round: usize,
    p: usize,
) -> Result<(RunSpec, Option<String>), String> {
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
            Some(f(&mut spec, seed)?)
        }
    };
    Ok((spec, setup))
}

/// How an invocation ended: its measurement where the process ran, and its failure in one
/// line where it failed (the conversation, or the worker's exit after it).
fn ended(
    result: anyhow::Result<(Measurement, Result<(), WorkerError>)>,
) -> (Option<Measurement>, Option<String>) {
    match result {
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
    }
}

impl Session<'_> {
    /// Adds what the meters knew only after the invocations (the GPU energy) to the
    /// invocation records' `meters`.
    fn finish_meters(&mut self) {
        let metered = std::mem::take(&mut self.metered);
        for m in self.meters.iter_mut() {
            for (at, r) in metered.iter().zip(m.finish()) {
                for &(i, n) in at {
                    let record = self.benches[i]
                        .extra
                        .get_mut(INVOCATIONS_KEY)
                        .and_then(|v| v.get_mut(n))
                        .and_then(|v| v.as_object_mut());
                    let Some(record) = record.filter(|_| !r.values.is_empty()) else {
                        continue;
                    };
                    let slot = record
                        .entry("meters")
                        .or_insert_with(|| serde_json::json!({}));
                    for (k, v) in &r.values {
                        slot[k.as_str()] = serde_json::json!(v);
                    }
                }
            }
        }
    }

    /// One invocation of program `p` in `round` for its benchmarks `mine` (already shuffled),
    /// recorded. Gives the part of its time later rounds do not repeat (calibration, the
    /// checks), or how the session ends where it ends here (interrupted, or failed).
    fn invoke(&mut self, round: usize, p: usize, mine: &[usize]) -> Result<Duration, Halt<String>> {
        let plan = self.plan;
        let (mut spec, setup) = spec_of(plan, round, p).map_err(Halt::Failed)?;
        let label = plan.programs[p].label.clone();
        let ctx = |stage| StageContext {
            stage,
            benchmark: None,
            program: &label,
            round,
        };
        // The program's own actions nearer the invocation than the session's, its meters (the
        // co-runner) started before the session's.
        let mut unit = self.units.get_mut(p);
        let actions = &mut *self.actions;
        let before = ctx(Stage::BeforeInvocation);
        Actions::nested(
            unit.as_mut().map(|u| &mut u.actions),
            &before,
            || actions.run(&before),
            |e| e,
        )
        .map_err(Halt::Failed)?;
        if let Some(u) = unit.as_mut() {
            if let Err(e) = u.start() {
                let _ = u.stop(&Span::now());
                return Err(Halt::Failed(format!("{e:#}")));
            }
        }
        for m in self.meters.iter_mut() {
            m.start().map_err(|e| Halt::Failed(format!("{e:#}")))?;
        }
        let started = Instant::now();
        // Valgrind writes its dumps into a fresh private directory (mode 0700). A worker
        // with no native timed region runs as without counters, and its loops are
        // counted after it by two invocations of their own (`count_delta`).
        let region = counts_region(&self.found[p].hello);
        let count_dir = wrap_region(plan.counters.as_ref().filter(|_| region), &mut spec)
            .map_err(Halt::Failed)?;
        let mut taken: Vec<Taken> = Vec::new();
        let probe_start = self.probe.start();
        let (actions, state, cancel) = (&mut *self.actions, &self.state, self.cancel);
        let clock = &self.found[p].clock;
        let own = unit.as_mut().map(|u| &mut u.actions);
        let result = worker::invoke(self.exec, &spec, plan.timeout, cancel, |w| {
            let mut at = At {
                actions,
                own,
                program: &label,
                round,
            };
            invocation(plan, clock, w, mine, state, &mut taken, &mut at, cancel)
        });
        let environment = result.as_ref().ok().map(|(m, _)| {
            serde_json::json!(self.probe.finish(
                probe_start,
                m.cpu().as_secs_f64(),
                m.wall.as_secs_f64()
            ))
        });
        let ended_at = Instant::now();
        let span = Span {
            start: started,
            end: ended_at,
            wall: result
                .as_ref()
                .map_or((ended_at - started).as_secs_f64(), |(m, _)| {
                    m.wall.as_secs_f64()
                }),
        };
        let mut metered: BTreeMap<String, f64> = self
            .meters
            .iter_mut()
            .flat_map(|m| m.stop(&span).values)
            .collect();
        if let Some(u) = unit.as_mut() {
            metered.extend(u.stop(&span).into_iter().flat_map(|(_, r)| r.values));
        }
        let before: Vec<usize> = mine
            .iter()
            .map(|&i| invocations_of(&self.benches[i]))
            .collect();
        let actions = &mut *self.actions;
        let after = ctx(Stage::AfterInvocation);
        Actions::nested(
            unit.as_mut().map(|u| &mut u.actions),
            &after,
            || actions.run(&after),
            |e| e,
        )
        .map_err(Halt::Failed)?;
        let (m, error) = ended(result);
        if let (Some(c), Some(d)) = (&plan.counters, &count_dir) {
            read_counts(&mut taken, c, d.path(), &plan.programs[p].command);
        }
        if let Some(c) = plan.counters.as_ref().filter(|_| !region) {
            let jit = matches!(self.found[p].hello.lang.as_str(), "java" | "js");
            count_taken(plan, self.exec, p, jit, c, &mut taken, self.cancel);
        }
        let interrupted = self.cancel.load(Ordering::Relaxed);
        let once = Duration::from_secs_f64(taken.iter().map(|t| t.once_seconds).sum());
        // A failed process is the failure of the kernel it was running; where none was
        // (its start, its exit), of every kernel it was to run.
        let running = taken.iter().find(|t| !t.finished).map(|t| t.target);
        let blamed: Vec<usize> = match (&error, running) {
            (None, _) => Vec::new(),
            (Some(_), Some(r)) => vec![r],
            (Some(_), None) => mine.to_vec(),
        };
        record(
            plan,
            self.benches,
            &mut self.state,
            &taken,
            mine,
            round,
            m.as_ref(),
            error.as_deref().map(|e| (e, blamed.as_slice())),
            (setup, metered, environment),
            self.t0,
        );
        if !self.meters.is_empty() {
            let at = mine
                .iter()
                .zip(before)
                .filter(|&(&i, n)| invocations_of(&self.benches[i]) > n)
                .map(|(&i, n)| (i, n))
                .collect();
            self.metered.push(at);
        }
        self.observer
            .invocation(round, &plan.programs[p], error.as_deref());
        if interrupted {
            return Err(Halt::Interrupted);
        }
        if let Some(e) = error {
            if !plan.ignore_failure {
                let kernel = running
                    .map(|r| format!("kernel '{}', ", plan.targets[r].kernel))
                    .unwrap_or_default();
                return Err(Halt::Failed(format!(
                    "{} ({kernel}program '{}', round {})",
                    e,
                    plan.programs[p].command,
                    round + 1
                )));
            }
            for &i in &blamed {
                self.state[i].failed.get_or_insert(e.clone());
            }
        }
        Ok(once)
    }

    /// The adaptive rule after a round: whether every benchmark that has not failed has
    /// settled (its process-level interval within `--precision` over `min` processes or
    /// more), each settled one's stop reason saying so.
    fn settled_within(&mut self, ad: &Adaptive) -> bool {
        use crate::conclude::kernels::process_spread;
        let mut all = true;
        for (i, s) in self.state.iter().enumerate() {
            if s.failed.is_some() {
                continue;
            }
            match process_spread(&s.values) {
                Some(p) if s.values.len() >= ad.min && p.half <= ad.precision => {
                    self.benches[i].stop_reason = format!(
                        "invocations: ±{:.1}% over {} processes (--precision {:.1}%)",
                        100.0 * p.half,
                        p.n,
                        100.0 * ad.precision
                    )
                }
                _ => all = false,
            }
        }
        all
    }

    /// The adaptive rule's bounds after a round (the pace so far): whether another round
    /// would pass `--max-invocations` or end past `--time-budget`; if so, every benchmark not
    /// settled and not failed says in its stop reason that it is inconclusive, and why.
    fn bounded_by(&mut self, ad: &Adaptive, round: usize) -> bool {
        use crate::conclude::kernels::{inconclusive, process_spread};
        let plan = self.plan;
        let (spent, next) = (self.pace.spent(), self.pace.next());
        let bound = if round + 1 == plan.max_invocations {
            Some(format!(
                "--max-invocations {} reached",
                plan.max_invocations
            ))
        } else if spent + next > session_budget(ad.budget, plan.targets.len()) {
            let total = session_budget(ad.budget, plan.targets.len());
            Some(format!(
                "--time-budget {} a benchmark reached ({} for {}): another round (~{:.1} s, the slowest so far) would end at {:.1} s",
                humantime::format_duration(Duration::from_secs(ad.budget.as_secs().max(1))),
                humantime::format_duration(Duration::from_secs(total.as_secs().max(1))),
                crate::units::plural(plan.targets.len(), "benchmark"),
                next.as_secs_f64(),
                (spent + next).as_secs_f64()
            ))
        } else {
            None
        };
        let Some(why) = bound else {
            return false;
        };
        for (i, s) in self.state.iter().enumerate() {
            let settled = self.benches[i].stop_reason.starts_with("invocations: ");
            if s.failed.is_some() || settled {
                continue;
            }
            self.benches[i].stop_reason = match process_spread(&s.values) {
                Some(p) if s.values.len() < ad.min => format!(
                    "inconclusive: {} invocations (fewer than {}; {why})",
                    p.n, ad.min
                ),
                Some(p) => inconclusive(&p, ad.precision, &why),
                None => format!("inconclusive: {} invocations ({why})", s.values.len()),
            };
        }
        true
    }

    /// The plan's invocation rule after a round (without [`Adaptive`]): whether it holds for
    /// every benchmark that has not failed, each one it holds for saying so in its stop
    /// reason; after the last round the rest say `--max-invocations` was reached.
    fn invocation_rule_holds(&mut self, round: usize) -> bool {
        let plan = self.plan;
        let mut all = true;
        for (i, s) in self.state.iter_mut().enumerate() {
            if s.failed.is_some() {
                continue;
            }
            let ctx = Samples {
                xs: &s.values,
                seconds: s.seconds,
            };
            if plan.invocation_stop.holds(&ctx) {
                self.benches[i].stop_reason =
                    format!("invocations: {}", plan.invocation_stop.explain(&ctx));
            } else {
                all = false;
            }
        }
        if all {
            return true;
        }
        if round + 1 == plan.max_invocations {
            for (i, s) in self.state.iter().enumerate() {
                if self.benches[i].stop_reason.is_empty() && s.failed.is_none() {
                    self.benches[i].stop_reason =
                        format!("--max-invocations {} reached", plan.max_invocations);
                }
            }
        }
        false
    }
}

/// The session's budget: each of `benchmarks` gets `each` (`--time-budget`) of the rounds'
/// time, as each of `tare run`'s commands does.
fn session_budget(each: Duration, benchmarks: usize) -> Duration {
    each.saturating_mul(u32::try_from(benchmarks.max(1)).unwrap_or(u32::MAX))
}
