//! How a plan is run: `tare run`'s engine for the round scheduler (`rounds`: warm-up, order,
//! interleaved rounds or sequential), the actions around runs, and when to stop (the stop
//! rule's values). One run is `measure.rs`'s; it calls `exec` and fills the results as it goes;
//! an [`Observer`] sees every finished run (progress bar, journal).
//!
//! Not for: measuring (that is `exec`) or printing (that is `report`).

pub mod actions;
pub mod background;
pub mod cache;
pub mod counters;
pub mod energy;
pub mod energy_ratio;
pub mod kernels;
mod measure;
pub mod order;
pub mod planning;
pub mod rounds;
pub mod stages;
pub mod success;

// The conclusions layer moved out of method/ into conclude/; these names keep the old paths
// (`method::analysis`, `method::summary`, `method::setups`) working for callers.
pub use crate::conclude::{analysis, setups, summary};

use crate::error::UserError;
use crate::exec::Executor;
use crate::machine::probe::RunProbe;
use crate::machine::sysfs::SysRoot;
use crate::plan::stop::{Schedule, StopContext};
use crate::plan::{Order, Plan};
use crate::results::{Benchmark, Session};
use crate::setup::build::Builds;
use crate::setup::realize::Workspace;
use actions::Script;
use rounds::{Engine, Halt, Scope, Shape, Turn};
use serde_json::json;
use stages::{Action, Stage, StageContext};
use std::cell::RefCell;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// Sees the session as it goes.
pub trait Observer {
    /// A benchmark is about to start (sequential order) or the rounds are (interleaved).
    fn started(&mut self, _benchmarks: &[Benchmark], _current: Option<usize>) {}
    /// A run finished and was appended to `benchmarks[index].runs`.
    fn run_finished(&mut self, _benchmarks: &[Benchmark], _index: usize) -> anyhow::Result<()> {
        Ok(())
    }
    /// A benchmark reached its stop rule (sequential order) or the rounds ended.
    fn finished(&mut self, _benchmarks: &[Benchmark], _current: Option<usize>) {}
}

/// How a session ended.
#[derive(Debug)]
pub enum Outcome {
    Complete,
    /// Ctrl-C: completed runs are kept.
    Interrupted,
    /// A run failed or hit a limit (and failures were not ignored), or an action failed.
    Failed(anyhow::Error),
}

/// After this many consecutive runs that do not count (limits hit with --ignore-failure), a
/// benchmark stops: its stop rule could never be reached.
const MAX_UNCOUNTED_STREAK: usize = 20;

/// What the uncounted runs of `b` did, in words: excluded runs (`--exclude-interfered`) did
/// not fail.
fn uncounted_cause(b: &Benchmark) -> &'static str {
    let uncounted = || b.runs.iter().filter(|r| !r.warmup && !r.counted);
    let excluded = uncounted()
        .filter(|r| r.extra.get("excluded").and_then(|v| v.as_str()) == Some("interfered"))
        .count();
    if excluded == 0 {
        "hit a limit or failed"
    } else if excluded == uncounted().count() {
        "were excluded as interfered with"
    } else {
        "hit a limit, failed or were excluded as interfered with"
    }
}

/// With an exact run count (`--runs N`), a benchmark stops once this many of its measured runs
/// did not count in all: at most `max(N, 3)` attempts beyond the `N` counted ones, so
/// `--runs 1` with a command that always hits its limit stops after 3 attempts, not 20.
fn max_uncounted_for(runs: usize) -> usize {
    runs.max(3)
}

/// `Run.extra`: `true` when the run's processes left its cgroups (see
/// `exec::Measurement::escaped`).
pub const ESCAPED_KEY: &str = "escaped";
/// `Run.extra`: how many processes of an escaped run were found outside its groups at its end
/// and killed (`exec::reaper`).
pub const ORPHANS_KEY: &str = "orphans_killed";
/// `Run.extra`: the run's fields that miss part of its work (an escaped run's CPU and memory).
pub const INCOMPLETE_KEY: &str = "incomplete";

/// `Run.extra`: seconds the child spent joining its cgroups before exec (cgroup v1
/// migration), measured by the child and already taken out of `wall_time`.
pub const CGROUP_JOIN_KEY: &str = "cgroup_join";

enum Step {
    Ok,
    Interrupted,
}

struct Runner<'a> {
    plan: &'a Plan,
    exec: &'a Executor,
    cancel: &'a AtomicBool,
    t0: Instant,
    root: SysRoot,
    /// Snapshots of the machine around each run (other load, steal, frequency, temperature).
    probe: RefCell<RunProbe>,
    /// Cores the run may use (pinned ones, else all online), for probes and heat-up.
    cores: Vec<usize>,
    /// Where setups put their symlinks (only when setups are used).
    workspace: Option<Workspace>,
    /// The runs' real working directory (for setups that reach it through a longer path).
    real_cwd: std::path::PathBuf,
    /// Build variants (`--build`), built before the first run.
    builds: Option<Builds>,
    /// The meters around each run (`--energy`: RAPL, NVIDIA GPUs; `stages::Meter`); empty
    /// when none was asked for, and then nothing is read.
    meters: RefCell<Vec<Box<dyn stages::Meter>>>,
    /// Where each metered run sits (benchmark, run), in the order the meters stopped; `None`
    /// for a run not recorded. For the readings meters give after the runs (`finish`).
    metered: RefCell<Vec<Option<(usize, usize)>>>,
    /// Each benchmark's own actions and meters (its level of `--cache`, `--background`);
    /// empty when the session has no factor.
    units: RefCell<Vec<stages::UnitStages>>,
}

/// Runs the plan, appending runs to `session.benchmarks` (which the caller made from the plan,
/// one per benchmark, in the same order) and filling summaries and stop reasons at the end,
/// whatever the outcome.
pub fn execute(
    plan: &Plan,
    exec: &Executor,
    session: &mut Session,
    obs: &mut dyn Observer,
    cancel: &AtomicBool,
) -> Outcome {
    let root = SysRoot::from_env();
    let (probe, cores) = RunProbe::for_runs(&root, plan.cores.as_deref(), plan.machine.thresholds);
    let probe = RefCell::new(probe);
    let uses_setups =
        plan.setups.is_some() || plan.benchmarks.iter().any(|b| b.fixed_setup.is_some());
    let workspace = match uses_setups.then(Workspace::create).transpose() {
        Ok(w) => w,
        Err(e) => {
            analyse(plan, session);
            return Outcome::Failed(e.into());
        }
    };
    let real_cwd = plan
        .cwd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| "/".into());
    let build = plan
        .setups
        .as_ref()
        .and_then(|sp| Some((sp.build.clone()?, sp.config.build_variants?)));
    let builds = match build {
        None => None,
        Some((template, n)) => {
            match Builds::build_all(&template, n, &plan.shell, &plan.env, plan.cwd.as_deref()) {
                Ok(b) => {
                    session.extra.insert("builds".into(), json!(b.variants));
                    Some(b)
                }
                Err(e) => {
                    analyse(plan, session);
                    return Outcome::Failed(UserError::run_failed(e.to_string()).into());
                }
            }
        }
    };
    // `--energy`: RAPL and NVIDIA GPUs as meters, idle power measured over one window before
    // the first run (the GPU meter's sampler thread also learns its counter's update period
    // there).
    let meters = match plan.meters.energy {
        None => Vec::new(),
        Some(idle) => match energy::meters(&root, plan.cores.as_deref(), idle) {
            Err(record) => {
                session.extra.insert("energy".into(), record);
                Vec::new()
            }
            Ok(mut meters) => {
                let quiet = stages::quiet_window(&mut meters);
                session
                    .extra
                    .insert("energy".into(), energy::session_record(idle, quiet));
                meters
            }
        },
    };
    let units = plan
        .meters
        .levels
        .iter()
        .map(|l| {
            level_stages(
                l,
                &plan.shell,
                plan.meters.background_lead,
                Stage::BeforeInvocation,
            )
        })
        .collect();
    let runner = Runner {
        meters: RefCell::new(meters),
        metered: RefCell::new(Vec::new()),
        units: RefCell::new(units),
        plan,
        exec,
        cancel,
        t0: Instant::now(),
        root,
        probe,
        cores,
        workspace,
        real_cwd,
        builds,
    };
    let mut engine = RunEngine {
        runner: &runner,
        counted: vec![0; session.benchmarks.len()],
        benches: &mut session.benchmarks,
        obs,
        schedule: Schedule::new(),
        started: Instant::now(),
    };
    let shape = Shape {
        units: plan.benchmarks.len(),
        warmups: plan.warmup,
        max_rounds: usize::MAX,
        seed: plan.seed,
    };
    let result = match plan.order {
        Order::Sequential => rounds::sequential(&mut engine, &shape, cancel),
        Order::Interleaved => rounds::interleaved(&mut engine, &shape, cancel),
    };
    finish_meters(session, &runner);
    analyse(plan, session);
    match result {
        Ok(()) => Outcome::Complete,
        Err(Halt::Interrupted) => Outcome::Interrupted,
        Err(Halt::Failed(e)) => Outcome::Failed(e),
    }
}

/// Gives each run what its meters knew only once the runs were over (the GPU energy, see
/// `machine::gpu_energy`), where `tare run` keeps it (`energy::place`).
fn finish_meters(session: &mut Session, runner: &Runner) {
    let metered = runner.metered.take();
    for m in runner.meters.borrow_mut().iter_mut() {
        let name = m.name();
        for (at, r) in metered.iter().zip(m.finish()) {
            let Some(run) = at.and_then(|(b, i)| session.benchmarks.get_mut(b)?.runs.get_mut(i))
            else {
                continue;
            };
            energy::place(run, &name, r);
        }
    }
}

/// One empty results benchmark per planned benchmark, in the plan's order: what `execute`
/// fills.
pub fn empty_benchmarks(plan: &Plan) -> Vec<Benchmark> {
    plan.benchmarks
        .iter()
        .map(|b| Benchmark {
            name: b.name.clone(),
            command: b.command.clone(),
            argv: b.argv.clone(),
            parameters: b.parameters.clone(),
            summary: Default::default(),
            stop_reason: String::new(),
            runs: Vec::new(),
            diagnostics: Vec::new(),
            extra: Default::default(),
        })
        .collect()
}

/// Comparison settings for a plan (paired by round when interleaved).
pub fn compare_settings(plan: &Plan) -> analysis::CompareSettings {
    analysis::CompareSettings {
        reference: plan.analysis.reference,
        test: if plan.analysis.welch {
            analysis::Test::Welch
        } else {
            analysis::Test::MannWhitney
        },
        alpha: plan.analysis.alpha,
        noise: plan.analysis.noise,
        paired: plan.order == Order::Interleaved,
        resamples: 10_000,
        seed: plan.seed,
    }
}

/// Outliers, summaries, comparisons, diagnostics and the scaling of parameter scans over
/// whatever was measured.
pub fn analyse(plan: &Plan, session: &mut Session) {
    for b in &mut session.benchmarks {
        analysis::mark_outliers(b, plan.analysis.discard_outliers);
        b.summary = summary::summarize(b);
        if let Some(c) = crate::conclude::counts::summary(b) {
            b.extra
                .insert(crate::conclude::counts::SUMMARY_KEY.into(), c);
        }
        if plan.ignore_failure {
            if let Some(r) = success::record(b) {
                b.extra.insert(success::EXTRA_KEY.into(), r);
            }
        }
    }
    let comparing = session.benchmarks.len() > 1 && plan.analysis.compare;
    if comparing && plan.meters.energy.is_some() {
        let e = energy_ratio::compare(
            &session.benchmarks,
            plan.analysis.reference,
            plan.order == Order::Interleaved,
            plan.seed,
        );
        if !e.is_empty() {
            session.extra.insert("energy_comparisons".into(), json!(e));
        }
    }
    let by_setup = plan.setups.is_some()
        && comparing
        && setups::setups_compared(&session.benchmarks, plan.analysis.reference) >= 2;
    session.comparisons = if !comparing {
        Vec::new()
    } else if by_setup {
        session
            .extra
            .insert("comparison_unit".into(), json!("setup"));
        let h = setups::hierarchical_ratios(&session.benchmarks, &compare_settings(plan));
        session.extra.insert("hierarchical_ratio".into(), json!(h));
        setups::compare_by_setup(&session.benchmarks, &compare_settings(plan))
    } else {
        analysis::compare_all(&session.benchmarks, &compare_settings(plan))
    };
    let advice = analysis::Advice {
        comparing,
        alpha: plan.analysis.alpha,
        sequential_several: plan.order == Order::Sequential && plan.benchmarks.len() > 1,
    };
    for b in &mut session.benchmarks {
        b.diagnostics = analysis::diagnose(b, &advice);
        if plan.setups.is_some() {
            let wall = setups::analyse_setups(b);
            let cpu = setups::analyse_setups_cpu(b);
            let alpha = plan.analysis.alpha;
            // One warning: on wall time, else on CPU time (steadier on a busy machine).
            let d = wall
                .as_ref()
                .and_then(|a| setups::spread_diagnostic(a, alpha))
                .or_else(|| {
                    cpu.as_ref()
                        .and_then(|a| setups::spread_diagnostic_of(a, alpha, "CPU time"))
                });
            b.diagnostics.extend(d);
            if let Some(a) = wall {
                b.extra.insert(setups::EXTRA_KEY.into(), json!(a));
            }
            if let Some(a) = cpu {
                b.extra.insert(setups::EXTRA_KEY_CPU.into(), json!(a));
            }
        }
    }
    crate::conclude::scaling::record(session);
}

/// Values of one benchmark for its stop rule.
struct Ctx<'a> {
    bench: &'a Benchmark,
    /// Counted runs, tallied as they come.
    counted: usize,
    time: f64,
    /// Widest relative ratio CI half-width over all pairs (interleaved comparisons only).
    ratio: Option<f64>,
    /// Whether the metrics whose cost grows with the runs are computed (see `Schedule`).
    expensive: bool,
}

impl Ctx<'_> {
    fn walls(&self) -> Vec<f64> {
        summary::counted(&self.bench.runs)
            .map(|r| r.wall_time)
            .collect()
    }
}

impl StopContext for Ctx<'_> {
    fn runs(&self) -> usize {
        self.counted
    }
    fn time(&self) -> f64 {
        self.time
    }
    fn ci_median(&self) -> Option<f64> {
        if !self.expensive {
            return None;
        }
        crate::stats::relative_median_ci_halfwidth(&self.walls())
    }
    fn cv(&self, window: Option<usize>) -> Option<f64> {
        if !self.expensive {
            return None;
        }
        let w = self.walls();
        let tail = match window {
            Some(n) if w.len() >= n => &w[w.len() - n..],
            Some(_) => return None,
            None => &w[..],
        };
        crate::stats::describe(tail).map(|d| d.cv)
    }
    fn ratio_ci(&self) -> Option<f64> {
        self.ratio
    }
}

/// Consecutive measured runs at the end that did not count.
fn uncounted_streak(b: &Benchmark) -> usize {
    b.runs
        .iter()
        .rev()
        .take_while(|r| !r.warmup && !r.counted)
        .count()
}

/// `tare run`'s engine for the round scheduler (`rounds`): a unit is one run, one sample.
struct RunEngine<'r, 'a> {
    runner: &'r Runner<'a>,
    benches: &'r mut [Benchmark],
    obs: &'r mut dyn Observer,
    /// Counted runs of each benchmark, tallied as they come.
    counted: Vec<usize>,
    /// When the stop rule's expensive metrics are due.
    schedule: Schedule,
    /// When the measured runs (of the benchmark, or of the rounds) began.
    started: Instant,
}

impl RunEngine<'_, '_> {
    /// Benchmark `i`'s `--setup` or `--cleanup` (by `stage`), if it has one.
    fn action(&self, stage: Stage, i: usize) -> Result<(), Halt<anyhow::Error>> {
        let bp = &self.runner.plan.benchmarks[i];
        let script = match stage {
            Stage::BeforeBenchmark => &bp.setup,
            _ => &bp.cleanup,
        };
        self.runner
            .act(stage, script, i, None)
            .map_err(Halt::Failed)
    }
}

/// A unit's own actions and meters for its level of the factors (`plan::meters::Level`):
/// `--cache` as an action at `cache_at` (before-invocation in `tare run`, right before the
/// clock; before-repetition in `tare kernels`), `--background` as a meter around the interval
/// (at the `off` level the same meter waits the same lead with no co-runner).
/// Both engines build their units' stages here.
pub fn level_stages(
    level: &crate::plan::meters::Level,
    shell: &str,
    lead: std::time::Duration,
    cache_at: Stage,
) -> stages::UnitStages {
    let mut unit = stages::UnitStages::default();
    if let Some(c) = &level.cache {
        unit.actions
            .at
            .push((cache_at, Box::new(cache::SetCache::new(c.clone()))));
    }
    if let Some(cmd) = &level.background {
        unit.meters
            .push(Box::new(background::CoRunnerMeter::new(shell, cmd, lead)));
    } else if level.lead_alone {
        unit.meters
            .push(Box::new(background::CoRunnerMeter::lead_alone(lead)));
    }
    unit
}

impl Runner<'_> {
    /// Runs `script`, if there is one, as the action at `stage` of benchmark `i` (in `round`):
    /// through the one action system (`stages::Action`), statically dispatched, nothing
    /// allocated; and the benchmark's own actions at `stage` (its level of the factors), nearer
    /// the run than the script: after it before the run, before it after.
    fn act(
        &self,
        stage: Stage,
        script: &Option<String>,
        i: usize,
        round: Option<usize>,
    ) -> anyhow::Result<()> {
        let mut units = self.units.borrow_mut();
        let unit = units.get_mut(i).filter(|u| u.actions.has(stage));
        if script.is_none() && unit.is_none() {
            return Ok(());
        }
        let bp = &self.plan.benchmarks[i];
        let ctx = StageContext {
            stage,
            benchmark: Some(&bp.name),
            program: &bp.command,
            round: round.unwrap_or(0),
        };
        let script = || match script {
            Some(script) => Script {
                plan: self.plan,
                exec: self.exec,
                cancel: self.cancel,
                stage,
                script,
            }
            .run(&ctx),
            None => Ok(()),
        };
        stages::Actions::nested(unit.map(|u| &mut u.actions), &ctx, script, |e| {
            UserError::run_failed(e).into()
        })
    }
}

impl Engine for RunEngine<'_, '_> {
    type Failure = anyhow::Error;

    /// `--setup` (sequential order: once its benchmark's turn comes, after the observer hears
    /// of it; interleaved: every benchmark's, before any warm-up).
    fn prepare(&mut self, scope: Scope) -> Result<(), Halt<anyhow::Error>> {
        let plan = self.runner.plan;
        match scope {
            Scope::One(i) => {
                self.obs.started(self.benches, Some(i));
                self.action(Stage::BeforeBenchmark, i)
            }
            Scope::All => {
                (0..plan.benchmarks.len()).try_for_each(|i| self.action(Stage::BeforeBenchmark, i))
            }
        }
    }

    fn begin(&mut self, scope: Scope) -> Result<(), Halt<anyhow::Error>> {
        if scope == Scope::All {
            self.obs.started(self.benches, None);
        }
        self.started = Instant::now();
        self.schedule = Schedule::new();
        Ok(())
    }

    fn unit(
        &mut self,
        i: usize,
        turn: Turn,
        _: &mut rand_chacha::ChaCha8Rng,
    ) -> Result<(), Halt<anyhow::Error>> {
        let bp = &self.runner.plan.benchmarks[i];
        match self
            .runner
            .measure(bp, self.benches, i, turn.warmup, turn.round, self.obs)
        {
            Ok(Step::Ok) => {
                let counted = self.benches[i].runs.last().is_some_and(|r| r.counted);
                self.counted[i] += usize::from(counted);
                Ok(())
            }
            Ok(Step::Interrupted) => Err(Halt::Interrupted),
            Err(e) => Err(Halt::Failed(e)),
        }
    }

    fn holds(&mut self, i: usize) -> bool {
        let elapsed = self.started.elapsed().as_secs_f64();
        let expensive = self
            .runner
            .expensive_due(&mut self.schedule, self.counted[i]);
        let b = &self.benches[i];
        match self
            .runner
            .stop_reason(b, self.counted[i], elapsed, None, expensive)
        {
            Some(reason) => {
                self.benches[i].stop_reason = reason;
                true
            }
            None => false,
        }
    }

    fn settled(&mut self, _round: usize) -> bool {
        let r = self.runner;
        let benches = &mut *self.benches;
        // --time-budget is per command: each gets its share of the rounds' time.
        let t = self.started.elapsed().as_secs_f64() / benches.len().max(1) as f64;
        let fewest = self.counted.iter().copied().min().unwrap_or(0);
        let expensive = r.expensive_due(&mut self.schedule, fewest);
        let ratio = if expensive && r.plan.stop.uses_ratio() {
            analysis::ratio_precision(benches, &compare_settings(r.plan))
        } else {
            None
        };
        let reasons: Vec<Option<String>> = benches
            .iter()
            .zip(&self.counted)
            .map(|(b, &n)| r.stop_reason(b, n, t, ratio, expensive))
            .collect();
        if !reasons.iter().all(Option::is_some) {
            return false;
        }
        let reasons: Vec<String> = reasons.into_iter().map(Option::unwrap_or_default).collect();
        let unsettled = r.unsettled(benches, ratio, &reasons[0]);
        for (b, reason) in benches.iter_mut().zip(reasons) {
            b.stop_reason = reason + &unsettled;
        }
        true
    }

    /// `--cleanup`, then the observer hears the benchmark (or the rounds) ended.
    fn end(&mut self, scope: Scope) -> Result<(), Halt<anyhow::Error>> {
        let plan = self.runner.plan;
        match scope {
            Scope::One(i) => {
                self.action(Stage::AfterBenchmark, i)?;
                self.obs.finished(self.benches, Some(i));
            }
            Scope::All => {
                for i in 0..plan.benchmarks.len() {
                    self.action(Stage::AfterBenchmark, i)?;
                }
                self.obs.finished(self.benches, None);
            }
        }
        Ok(())
    }
}

impl Runner<'_> {
    /// What a comparison session stopped by its caps (time, runs) could not settle, in words
    /// for the stop reason: "; not settled: a ratio is undecided and known only within ±4.2%".
    /// Empty where the rule does not look at ratios or held on them (`reason` names
    /// `ci(ratio)` then: every ratio settled).
    fn unsettled(&self, benches: &[Benchmark], ratio: Option<f64>, reason: &str) -> String {
        if !self.plan.stop.uses_ratio() || reason.contains("ci(ratio)") {
            return String::new();
        }
        match ratio.or_else(|| analysis::ratio_precision(benches, &compare_settings(self.plan))) {
            Some(w) if w > 0.0 => format!(
                "; not settled: a ratio is undecided and known only within ±{:.1}%",
                w * 100.0
            ),
            _ => String::new(),
        }
    }

    /// Whether this round evaluates the stop rule's expensive metrics (see `Schedule`).
    fn expensive_due(&self, schedule: &mut Schedule, counted: usize) -> bool {
        let rule = &self.plan.stop;
        if rule.is_cheap() {
            return false;
        }
        rule.negates_expensive() | schedule.due(counted)
    }

    fn stop_reason(
        &self,
        b: &Benchmark,
        counted: usize,
        time: f64,
        ratio: Option<f64>,
        expensive: bool,
    ) -> Option<String> {
        let ctx = Ctx {
            bench: b,
            counted,
            time,
            ratio,
            expensive,
        };
        if self.plan.stop.holds(&ctx) {
            return Some(self.plan.stop.explain(&ctx));
        }
        if let Some(n) = self.plan.stop.exact_runs() {
            let uncounted = b.runs.iter().filter(|r| !r.warmup && !r.counted).count();
            let cap = max_uncounted_for(n);
            if uncounted >= cap {
                return Some(format!(
                    "{uncounted} runs {} (at most {cap} such attempts with --runs {n}); {counted} of {n} runs count",
                    uncounted_cause(b)
                ));
            }
        }
        let streak = uncounted_streak(b);
        (streak >= MAX_UNCOUNTED_STREAK).then(|| {
            format!(
                "the last {streak} runs {}; none of them counts",
                uncounted_cause(b)
            )
        })
    }
}
