//! How a plan is run: warm-up, order (interleaved rounds or sequential), the actions around
//! runs, and when to stop. Calls `exec` for each run and fills the results as it goes; an
//! [`Observer`] sees every finished run (progress bar, journal).
//!
//! Not for: measuring (that is `exec`) or printing (that is `report`).

pub mod actions;
pub mod background;
pub mod cache;
pub mod counters;
pub mod energy_ratio;
pub mod kernels;
pub mod order;
pub mod planning;
pub mod stages;
pub mod success;

// The conclusions layer moved out of method/ into conclude/; these names keep the old paths
// (`method::analysis`, `method::summary`, `method::setups`) working for callers.
pub use crate::conclude::{analysis, setups, summary};

use crate::error::UserError;
use crate::exec::{Executor, RunSpec};
use crate::machine::cooldown::{self, SystemClock};
use crate::machine::extra_keys;
use crate::machine::probe::RunProbe;
use crate::machine::sysfs::SysRoot;
use crate::machine::topology;
use crate::plan::stop::{Schedule, StopContext};
use crate::plan::{BenchmarkPlan, CounterBackend, Order, Plan};
use crate::results::{Benchmark, Run, Session, Termination};
use crate::setup::build::Builds;
use crate::setup::realize::Workspace;
use crate::setup::Setup;
use actions::run_action;
use rand::SeedableRng;
use serde_json::json;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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

/// With an exact run count (`--runs N`), a benchmark stops once this many of its measured runs
/// did not count in all: at most `max(N, 3)` attempts beyond the `N` counted ones, so
/// `--runs 1` with a command that always hits its limit stops after 3 attempts, not 20.
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
    /// RAPL energy around each run (`--energy` on a machine that has it).
    energy: Option<crate::machine::energy::EnergyMeter>,
    /// Each run's window, for the GPU energy meter (`--energy` on a machine with an NVIDIA
    /// GPU): its energy is computed once the runs are over.
    gpu_energy_runs: RefCell<Option<Vec<GpuEnergyRun>>>,
}

/// Where a run sits in the session and when it ran, for its GPU energy.
struct GpuEnergyRun {
    bench: usize,
    run: usize,
    start: Instant,
    end: Instant,
    wall: f64,
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
    let cores = plan.cores.clone().unwrap_or_else(|| {
        topology::read_topology(&root)
            .map(|t| t.cpus.iter().map(|c| c.id).collect())
            .unwrap_or_default()
    });
    let probe = RefCell::new(RunProbe::new(
        &root,
        &cores,
        plan.cores.is_some(),
        plan.machine.thresholds,
    ));
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
    // `--energy`: RAPL and NVIDIA GPUs, idle power measured over one window before the first
    // run (the GPU meter's sampler thread also learns its counter's update period there).
    let (energy, gpu_energy) = match plan.meters.energy {
        None => (None, None),
        Some(idle) => {
            let mut rapl = crate::machine::energy::EnergyMeter::discover(&root);
            let mut gpu = crate::machine::gpu_energy::GpuEnergyMeter::start();
            if rapl.is_none() && gpu.is_none() {
                session.extra.insert(
                    "energy".into(),
                    json!({"available": false, "reason": "no RAPL domains under /sys/class/powercap and no NVIDIA GPU with an energy counter (NVML)"}),
                );
            } else {
                let before = rapl.as_ref().map(|m| m.read());
                let t = Instant::now();
                std::thread::sleep(idle);
                let t1 = Instant::now();
                if let (Some(m), Some(b)) = (&mut rapl, before) {
                    let after = m.read();
                    m.set_idle(&b, &after, (t1 - t).as_secs_f64());
                }
                if let Some(g) = &mut gpu {
                    g.set_idle(t, t1);
                }
                let mut record = json!({"available": true, "idle_seconds": idle.as_secs_f64()});
                if let Some(m) = &rapl {
                    record["domains"] = json!(m.domains);
                    record["idle_watts"] = json!(m.idle_watts);
                }
                if let Some(g) = &gpu {
                    record["gpus"] = json!(g.info);
                }
                session.extra.insert("energy".into(), record);
            }
            (rapl, gpu)
        }
    };
    let runner = Runner {
        energy,
        gpu_energy_runs: RefCell::new(gpu_energy.as_ref().map(|_| Vec::new())),
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
    let result = match plan.order {
        Order::Sequential => runner.sequential(&mut session.benchmarks, obs),
        Order::Interleaved => runner.interleaved(&mut session.benchmarks, obs),
    };
    if let (Some(meter), Some(runs)) = (gpu_energy, runner.gpu_energy_runs.take()) {
        add_gpu_energy(session, meter, &runs);
    }
    analyse(plan, session);
    match result {
        Ok(Step::Ok) => Outcome::Complete,
        Ok(Step::Interrupted) => Outcome::Interrupted,
        Err(e) => Outcome::Failed(e),
    }
}

/// Gives each run its GPU energy, once the meter's counters moved past the last run (see
/// `machine::gpu_energy`): into `Run.meters.energy["gpus"]`, beside the run's RAPL record or
/// in a record of its own.
fn add_gpu_energy(
    session: &mut Session,
    meter: crate::machine::gpu_energy::GpuEnergyMeter,
    runs: &[GpuEnergyRun],
) {
    let windows: Vec<(Instant, Instant, f64)> =
        runs.iter().map(|r| (r.start, r.end, r.wall)).collect();
    for (r, gpus) in runs.iter().zip(meter.finish(&windows)) {
        let Some(run) = session
            .benchmarks
            .get_mut(r.bench)
            .and_then(|b| b.runs.get_mut(r.run))
        else {
            continue;
        };
        if gpus.is_empty() {
            continue;
        }
        let record = run.meters.energy.get_or_insert_with(|| {
            json!({"domains": [], "attributed": false,
                   "note": "no RAPL domains: GPU energy only"})
        });
        record["gpus"] = json!(gpus);
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

impl Runner<'_> {
    fn sequential(
        &self,
        benches: &mut [Benchmark],
        obs: &mut dyn Observer,
    ) -> anyhow::Result<Step> {
        for i in 0..benches.len() {
            let bp = &self.plan.benchmarks[i];
            obs.started(benches, Some(i));
            if let Some(s) = &bp.setup {
                run_action(self.plan, self.exec, self.cancel, "--setup", s)?;
            }
            let step = self.warm_up(bp, benches, i, obs)?;
            if let Step::Interrupted = step {
                return Ok(step);
            }
            let started = Instant::now();
            let mut counted = 0;
            let mut schedule = Schedule::new();
            loop {
                if let Step::Interrupted = self.measure(bp, benches, i, false, None, obs)? {
                    return Ok(Step::Interrupted);
                }
                counted += usize::from(benches[i].runs.last().is_some_and(|r| r.counted));
                let elapsed = started.elapsed().as_secs_f64();
                let expensive = self.expensive_due(&mut schedule, counted);
                if let Some(reason) =
                    self.stop_reason(&benches[i], counted, elapsed, None, expensive)
                {
                    benches[i].stop_reason = reason;
                    break;
                }
            }
            if let Some(c) = &bp.cleanup {
                run_action(self.plan, self.exec, self.cancel, "--cleanup", c)?;
            }
            obs.finished(benches, Some(i));
        }
        Ok(Step::Ok)
    }

    fn interleaved(
        &self,
        benches: &mut [Benchmark],
        obs: &mut dyn Observer,
    ) -> anyhow::Result<Step> {
        for bp in &self.plan.benchmarks {
            if let Some(s) = &bp.setup {
                run_action(self.plan, self.exec, self.cancel, "--setup", s)?;
            }
        }
        for (i, bp) in self.plan.benchmarks.iter().enumerate() {
            if let Step::Interrupted = self.warm_up(bp, benches, i, obs)? {
                return Ok(Step::Interrupted);
            }
        }
        obs.started(benches, None);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.plan.seed);
        // Counterbalanced rounds: every command in every position once per block (`order`).
        let mut rounds = order::Rounds::new(benches.len());
        let started = Instant::now();
        let mut counted = vec![0usize; benches.len()];
        let mut schedule = Schedule::new();
        for round in 0.. {
            for i in rounds.next(&mut rng) {
                let bp = &self.plan.benchmarks[i];
                if let Step::Interrupted = self.measure(bp, benches, i, false, Some(round), obs)? {
                    return Ok(Step::Interrupted);
                }
                counted[i] += usize::from(benches[i].runs.last().is_some_and(|r| r.counted));
            }
            // --time-budget is per command: each gets its share of the rounds' time.
            let t = started.elapsed().as_secs_f64() / benches.len().max(1) as f64;
            let fewest = counted.iter().copied().min().unwrap_or(0);
            let expensive = self.expensive_due(&mut schedule, fewest);
            let ratio = if expensive && self.plan.stop.uses_ratio() {
                analysis::ratio_precision(benches, &compare_settings(self.plan))
            } else {
                None
            };
            let reasons: Vec<Option<String>> = benches
                .iter()
                .zip(&counted)
                .map(|(b, &n)| self.stop_reason(b, n, t, ratio, expensive))
                .collect();
            if reasons.iter().all(Option::is_some) {
                let reasons: Vec<String> =
                    reasons.into_iter().map(Option::unwrap_or_default).collect();
                let unsettled = self.unsettled(benches, ratio, &reasons[0]);
                for (b, r) in benches.iter_mut().zip(reasons) {
                    b.stop_reason = r + &unsettled;
                }
                break;
            }
        }
        for bp in &self.plan.benchmarks {
            if let Some(c) = &bp.cleanup {
                run_action(self.plan, self.exec, self.cancel, "--cleanup", c)?;
            }
        }
        obs.finished(benches, None);
        Ok(Step::Ok)
    }

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

    fn warm_up(
        &self,
        bp: &BenchmarkPlan,
        benches: &mut [Benchmark],
        i: usize,
        obs: &mut dyn Observer,
    ) -> anyhow::Result<Step> {
        for _ in 0..self.plan.warmup {
            if let Step::Interrupted = self.measure(bp, benches, i, true, None, obs)? {
                return Ok(Step::Interrupted);
            }
        }
        Ok(Step::Ok)
    }

    /// One run with its prepare/conclude actions, appended to `benches[i]`.
    fn measure(
        &self,
        bp: &BenchmarkPlan,
        benches: &mut [Benchmark],
        i: usize,
        warmup: bool,
        round: Option<usize>,
        obs: &mut dyn Observer,
    ) -> anyhow::Result<Step> {
        if self.cancel.load(Ordering::Relaxed) {
            return Ok(Step::Interrupted);
        }
        let mc = &self.plan.machine;
        let mut extra = BTreeMap::new();
        if let Some(cd) = &mc.cool_down {
            let o = cooldown::cool_down(&self.root, cd, &SystemClock::default());
            extra.insert(extra_keys::RUN_COOLDOWN.to_string(), json!(o));
        }
        if let Some(max) = mc.heat_up {
            let o = cooldown::heat_up(&self.root, &self.cores, max);
            extra.insert(extra_keys::RUN_HEATUP.to_string(), json!(o));
        }
        let mut spec_argv: Vec<std::ffi::OsString> = bp.argv.iter().map(Into::into).collect();
        let mut spec_cwd = self.plan.cwd.clone();
        let mut spec_env = self.plan.env.clone();
        let mut aslr_off = false;
        if let (Some((setup, block)), Some(ws)) = (
            self.setup_of(bp, &benches[i], warmup, round),
            &self.workspace,
        ) {
            let mut words = bp.argv.clone();
            let built = setup.build.and_then(|v| self.builds.as_ref()?.out(v));
            if let Some(out) = built {
                let out = out.to_string_lossy();
                for w in &mut words {
                    *w = w.replace("{out}", &out);
                }
            }
            let r = ws.realize(&setup, &words, &self.plan.env, &self.real_cwd)?;
            spec_argv = r.argv;
            spec_env = r.env;
            spec_cwd = r.cwd.or(spec_cwd);
            aslr_off = r.aslr_off;
            let mut record = r.record;
            if let Some(block) = block {
                record["block"] = json!(block);
            }
            extra.insert(setups::RUN_KEY.to_string(), record);
        }
        // perf and Valgrind write their counts into a fresh private directory (mode 0700): a
        // predictable name in /tmp could be a FIFO or a link another user planted there
        // beforehand.
        let counter_dir = match &self.plan.counters {
            Some(_) => Some(
                tempfile::Builder::new()
                    .prefix("tare-counters-")
                    .tempdir()?,
            ),
            None => None,
        };
        let counter_file = self
            .plan
            .counters
            .as_ref()
            .zip(counter_dir.as_ref())
            .map(|(c, d)| match c.backend {
                CounterBackend::Perf => {
                    let f = d.path().join("counters.csv");
                    spec_argv = counters::wrap(&c.program, &spec_argv, &c.events, &f);
                    f
                }
                CounterBackend::Valgrind => {
                    spec_argv =
                        counters::valgrind::wrap(&c.program, &spec_argv, &c.events, d.path());
                    d.path().to_path_buf()
                }
            });
        if let Some(p) = &bp.prepare {
            run_action(self.plan, self.exec, self.cancel, "--prepare", p)?;
        }
        let spec = RunSpec {
            argv: spec_argv,
            cwd: spec_cwd,
            env: spec_env,
            stdin: self.plan.stdin.clone(),
            stdout: self.plan.output.clone(),
            stderr: self.plan.output.clone(),
            limits: self.plan.limits,
            cores: self.plan.cores.clone(),
            priority: mc.priority,
            isolation: self.plan.isolation.clone(),
            aslr_off,
            meters: self.plan.meters.run.clone(),
            inherit_fds: Vec::new(),
        };
        // The cache state last, right before the clock: nothing may read the files after it.
        let cache = match self.plan.meters.cache.get(i).and_then(Option::as_ref) {
            Some(cp) => Some(cache::prepare(cp)?),
            None => None,
        };
        let co_runner = match self.plan.meters.background.get(i).and_then(Option::as_ref) {
            Some(cmd) => Some(background::start(
                &self.plan.shell,
                cmd,
                self.plan.meters.background_lead,
            )?),
            None => None,
        };
        let start_offset = self.t0.elapsed().as_secs_f64();
        let probe_start = self.probe.borrow_mut().start();
        let energy_before = self.energy.as_ref().map(|e| e.read());
        let run_start = Instant::now();
        let m = self.exec.run(&spec, self.cancel);
        let run_end = Instant::now();
        let energy = match (&self.energy, energy_before, &m) {
            (Some(e), Some(before), Ok(m)) => Some(e.record(
                &before,
                &e.read(),
                m.wall.as_secs_f64(),
                self.plan.cores.as_deref(),
            )),
            _ => None,
        };
        let background = co_runner.map(background::CoRunner::stop);
        let with_background = self.plan.meters.background.iter().any(Option::is_some);
        if background == Some(false) {
            extra.insert("background_ended_early".into(), json!(true));
        }
        let m = m?;
        let env = self.probe.borrow_mut().finish(
            probe_start,
            m.cpu().as_secs_f64(),
            m.wall.as_secs_f64(),
        );
        let interfered = env.interfered;
        if let (Some(f), Some(c)) = (&counter_file, &self.plan.counters) {
            let values = match c.backend {
                CounterBackend::Perf => crate::results::input::read(f, "perf's counter file")
                    .map(|t| counters::parse_perf_csv(&String::from_utf8_lossy(&t)))
                    .unwrap_or_default(),
                CounterBackend::Valgrind => counters::valgrind::collect(f, &c.events)
                    .unwrap_or_else(|why| {
                        if m.termination == Termination::Exit && m.exit_code == Some(0) {
                            eprintln!(
                                "tare: warning: run {} of '{}' has no counts: {why}",
                                benches[i].runs.len() + 1,
                                benches[i].name
                            );
                        }
                        Vec::new()
                    }),
            };
            extra.insert(counters::RUN_KEY.to_string(), json!(values));
            extra.insert(counters::BACKEND_KEY.to_string(), json!(c.backend.as_str()));
            if c.backend == CounterBackend::Valgrind {
                let top = counters::valgrind::top_functions(f, counters::FUNCTIONS_KEPT);
                if !top.is_empty() {
                    let list: Vec<serde_json::Value> = top
                        .into_iter()
                        .map(|(name, ir)| json!({"function": name, "instructions": ir}))
                        .collect();
                    extra.insert(counters::FUNCTIONS_KEY.to_string(), json!(list));
                }
                if let Some(keep) = &c.keep {
                    let dest = keep.join(format!("{}-run{}", i + 1, benches[i].runs.len() + 1));
                    match counters::valgrind::keep_outputs(f, &dest) {
                        Ok(()) => {
                            extra.insert(
                                counters::CALLGRIND_KEY.to_string(),
                                json!(dest.display().to_string()),
                            );
                        }
                        Err(e) => eprintln!(
                            "tare: warning: Callgrind's files of run {} of '{}' were not kept: {e}",
                            benches[i].runs.len() + 1,
                            benches[i].name
                        ),
                    }
                }
            }
        }
        extra.insert(extra_keys::RUN_ENVIRONMENT.to_string(), json!(env));
        if !m.join.is_zero() {
            extra.insert(CGROUP_JOIN_KEY.to_string(), json!(m.join.as_secs_f64()));
        }
        if m.escaped {
            extra.insert(ESCAPED_KEY.to_string(), json!(true));
            extra.insert(
                INCOMPLETE_KEY.to_string(),
                json!(["cpu_time", "user_time", "system_time", "peak_memory"]),
            );
            if m.orphans_killed > 0 {
                extra.insert(ORPHANS_KEY.to_string(), json!(m.orphans_killed));
            }
            let first = !benches[i]
                .runs
                .iter()
                .any(|r| r.extra.contains_key(ESCAPED_KEY));
            if first {
                let fate = if m.orphans_killed > 0 {
                    format!(
                        "{} process(es) that left were killed at the run's end (tare is their subreaper)",
                        m.orphans_killed
                    )
                } else {
                    "what left was not killed".to_string()
                };
                eprintln!(
                    "tare: warning: run {} of '{}' left its cgroups (a process moved itself out): its CPU time and peak memory are incomplete and {fate}; marked escaped in the results",
                    benches[i].runs.len() + 1,
                    benches[i].name
                );
            }
        }
        if m.termination == Termination::Failed && self.cancel.load(Ordering::Relaxed) {
            // The interrupted run is incomplete: it is not recorded.
            return Ok(Step::Interrupted);
        }
        if let Some(c) = &bp.conclude {
            run_action(self.plan, self.exec, self.cancel, "--conclude", c)?;
        }
        let ready_stopped = m.ready.is_some_and(|r| r.stopped);
        let never_ready = m.ready.is_some_and(|r| r.ready.is_none());
        if never_ready {
            extra.insert("not_ready".into(), json!(true));
        }
        let ok_exit = m.termination == Termination::Exit
            && (m.exit_code == Some(0) || ready_stopped || self.plan.ignore_failure)
            && !never_ready;
        let excluded = interfered && mc.exclude_interfered;
        if excluded {
            extra.insert("excluded".into(), json!("interfered"));
        }
        let bench = &mut benches[i];
        let index = bench.runs.len();
        if let Some(runs) = self.gpu_energy_runs.borrow_mut().as_mut() {
            runs.push(GpuEnergyRun {
                bench: i,
                run: index,
                start: run_start,
                end: run_end,
                wall: m.wall.as_secs_f64(),
            });
        }
        bench.runs.push(Run {
            index,
            round,
            warmup,
            start_offset,
            wall_time: m.wall.as_secs_f64(),
            user_time: m.user.as_secs_f64(),
            system_time: m.system.as_secs_f64(),
            cpu_time: m.cpu().as_secs_f64(),
            peak_memory: m.peak_memory,
            exit_code: m.exit_code,
            signal: m.signal,
            termination: m.termination,
            involuntary_context_switches: Some(m.involuntary_context_switches),
            counted: ok_exit && !warmup && !excluded,
            extra,
            meters: Box::new(crate::results::RunMeters {
                io: m.io.clone().map(Box::new),
                cache: cache.map(Box::new),
                ready_time: m.ready.and_then(|r| r.ready).map(|t| t.as_secs_f64()),
                background: with_background.then_some(background.is_some()),
                memory_timeline: m.memory_timeline.clone(),
                energy: energy.map(|e| json!(e)),
            }),
        });
        obs.run_finished(benches, i)?;
        if let Some(pause) = mc.sleep_between {
            self.pause(pause);
        }
        if !ok_exit && !self.plan.ignore_failure {
            return Err(UserError::run_failed(failure_message(&benches[i], self.plan)).into());
        }
        Ok(Step::Ok)
    }
}

impl Runner<'_> {
    /// The setup of the next run of `b` and its block (none for a fixed setup), if setups are
    /// used: the fixed setup of the benchmark, else the plan's setup of the run's block (its
    /// round when interleaved, its position among measured runs otherwise; warm-ups use 0).
    fn setup_of(
        &self,
        bp: &BenchmarkPlan,
        b: &Benchmark,
        warmup: bool,
        round: Option<usize>,
    ) -> Option<(Setup, Option<usize>)> {
        if let Some(s) = &bp.fixed_setup {
            return Some((s.clone(), None));
        }
        let sp = self.plan.setups.as_ref()?;
        let index = if warmup {
            0
        } else {
            round.unwrap_or_else(|| b.runs.iter().filter(|r| !r.warmup).count())
        };
        let block = sp.block_of(index);
        Some((sp.setup_for(block), Some(block)))
    }

    /// Sleeps for `d`, waking early when the session is interrupted.
    fn pause(&self, d: Duration) {
        let end = Instant::now() + d;
        while !self.cancel.load(Ordering::Relaxed) {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
}

/// What a failed run said, for its error line: the last lines of its output file, or where to
/// see output tare discarded (`--show-output`, as hyperfine suggests).
fn output_cause(sink: &crate::exec::Sink) -> String {
    match sink {
        crate::exec::Sink::Null => " (its output was discarded: --show-output shows it)".into(),
        crate::exec::Sink::Inherit => String::new(),
        crate::exec::Sink::File(path) => match crate::exec::capture::last_lines_of_file(path, 3) {
            Some(t) if !t.is_empty() => format!(" (its output ends: {t})"),
            _ => String::new(),
        },
    }
}

/// One line saying which run failed how, and what to do.
fn failure_message(b: &Benchmark, plan: &Plan) -> String {
    let r = b.runs.last().expect("a run was just recorded");
    let which = format!("run {} of '{}'", r.index + 1, b.name);
    if r.extra.contains_key("not_ready") {
        return format!(
            "{which} ended without the --ready sign; check the sign (and that the program's output is not buffered), or pass --ignore-failure to record such runs and go on"
        );
    }
    let cause = output_cause(&plan.output);
    match r.termination {
        Termination::Exit => format!(
            "{which} exited with code {}{cause}; fix the command or pass --ignore-failure to measure it anyway",
            r.exit_code.unwrap_or(-1)
        ),
        Termination::Signal => format!(
            "{which} was killed by signal {}{cause}; fix the command or pass --ignore-failure to measure it anyway",
            r.signal.unwrap_or(0)
        ),
        Termination::Cpu => format!(
            "{which} hit the CPU time limit ({} s); raise --cpu-limit, or pass --ignore-failure to record such runs and go on",
            plan.limits.cpu.map_or(0.0, |d| d.as_secs_f64())
        ),
        Termination::Wall => format!(
            "{which} hit the wall time limit ({} s); raise --wall-limit, or pass --ignore-failure to record such runs and go on",
            plan.limits.wall.map_or(0.0, |d| d.as_secs_f64())
        ),
        Termination::Memory => format!(
            "{which} hit the memory limit ({}); raise --memory-limit, or pass --ignore-failure to record such runs and go on",
            crate::units::format_bytes(plan.limits.memory.unwrap_or(0) as f64, None)
        ),
        Termination::Pids => format!(
            "{which} hit the task limit ({} processes and threads); raise --pids-limit, or pass --ignore-failure to record such runs and go on",
            plan.limits.pids.unwrap_or(0)
        ),
        Termination::Failed => format!("{which} could not be completed"),
    }
}
