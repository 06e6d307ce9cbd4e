//! Multi-level repetition planning (Kalibera & Jones, "Rigorous benchmarking in reasonable
//! time", ISMM 2013) from a pilot session whose runs were spread over setups: the corrected
//! variance of each level (setup, run), the cost of a repetition at each, and the least costly
//! numbers of setups and runs per setup that reach a CI width. Reads results, calls `stats`.

use crate::conclude::setups::groups_by_setup;
use crate::plan::repetitions::{PlannedLevel, RepetitionPlanFile};
use crate::results::Session;
use crate::setup::{Factor, Range};
use crate::stats;

/// What to plan for.
#[derive(Debug, Clone, Copy)]
pub struct PlanRequest {
    /// Index of the pilot's benchmark.
    pub benchmark: usize,
    /// Target relative half-width of the CI of the mean.
    pub precision: f64,
    pub confidence: f64,
    pub assurance: f64,
    /// Cost of making one setup, seconds (tare's own setups cost about nothing).
    pub setup_cost: f64,
}

/// Average time per run in the session, tare's overhead between runs included: the span from
/// the first run's start to the last run's end over the number of runs.
pub fn time_per_run(session: &Session) -> Option<f64> {
    let runs: Vec<_> = session.benchmarks.iter().flat_map(|b| &b.runs).collect();
    let start = runs
        .iter()
        .map(|r| r.start_offset)
        .fold(f64::INFINITY, f64::min);
    let end = runs
        .iter()
        .map(|r| r.start_offset + r.wall_time)
        .fold(f64::NEG_INFINITY, f64::max);
    (!runs.is_empty() && end > start).then(|| (end - start) / runs.len() as f64)
}

/// The plan, and notes on what was assumed (e.g. runs left out to balance the design).
pub fn plan_from_pilot(
    session: &Session,
    req: &PlanRequest,
) -> Result<(RepetitionPlanFile, Vec<String>), String> {
    let b = session
        .benchmarks
        .get(req.benchmark)
        .ok_or("the pilot has no such benchmark; check --benchmark")?;
    let groups = groups_by_setup(b);
    if groups.len() < 2 {
        return Err(format!(
            "the pilot's '{}' has counted runs in {} setup(s); make the pilot with tare run --randomize env,aslr --setups 10 --runs 50",
            b.name,
            groups.len()
        ));
    }
    let m = groups.iter().map(|g| g.2.len()).min().unwrap_or(0);
    if m < 2 {
        return Err(format!(
            "the pilot's '{}' has a setup with a single counted run; give every setup at least 2 (e.g. --setups 10 --runs 50)",
            b.name
        ));
    }
    let mut notes = Vec::new();
    if groups.iter().any(|g| g.2.len() != m) {
        notes.push(format!(
            "the pilot is unbalanced: the first {m} runs of each setup are used"
        ));
    }
    let values: Vec<f64> = groups
        .iter()
        .flat_map(|g| g.2[..m].iter().copied())
        .collect();
    let k = groups.len();
    let est = stats::kalibera_jones(&values, &[m, k])
        .ok_or("the pilot's wall times are not usable (not finite)")?;
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let run_cost = time_per_run(session).unwrap_or(mean);
    if req.setup_cost == 0.0 {
        notes.push(
            "a new setup is assumed to cost nothing (tare's setups are a few symlinks); give --setup-cost when it does (e.g. a build)"
                .into(),
        );
    }
    if est[1].t2 <= 0.0 {
        notes.push(
            "the pilot shows no variance between setups (corrected estimate ≤ 0), so the cheapest split was searched for"
                .to_string(),
        );
    }
    let config = session
        .extra
        .get("setups")
        .and_then(|v| v.get("config"))
        .cloned()
        .unwrap_or_default();
    let factors: Vec<Factor> = config
        .get("factors")
        .and_then(|f| serde_json::from_value(f.clone()).ok())
        .unwrap_or_default();
    let env_pad: Option<Range> = config
        .get("env_pad")
        .and_then(|f| serde_json::from_value(f.clone()).ok());
    let pilot = Pilot {
        est: &est,
        costs: [run_cost, req.setup_cost],
        mean,
        outer: k,
        inner: m,
    };
    let file = two_level_plan(&pilot, req, ["run", "setup"], "setups", &b.name)?;
    Ok((
        RepetitionPlanFile {
            factors,
            env_pad,
            ..file
        },
        notes,
    ))
}

/// The same planning for kernel results (`tare kernels`), over the levels invocation (a fresh
/// process; with `--randomize` each has its own setup, so this level holds the setups' variance
/// too) × iteration (a sample inside a process). Costs: an iteration is the median sample's
/// wall time; an invocation is the mean process wall time less its samples' time (start,
/// calibration, warm-up). The plan's `setups` are invocations and `runs_per_setup` samples
/// per invocation; the levels are named `iteration` and `invocation`.
pub fn plan_kernels_from_pilot(
    session: &Session,
    req: &PlanRequest,
) -> Result<(RepetitionPlanFile, Vec<String>), String> {
    use crate::conclude::kernels::{by_invocation, invocations, sample_of};
    let b = session
        .benchmarks
        .get(req.benchmark)
        .ok_or("the pilot has no such benchmark; check --benchmark")?;
    let groups = by_invocation(b);
    if groups.len() < 2 {
        return Err(format!(
            "the pilot's '{}' has counted samples in {} invocation(s); make the pilot with tare kernels --invocations 5 (or more)",
            b.name,
            groups.len()
        ));
    }
    let m = groups.iter().map(|g| g.len()).min().unwrap_or(0);
    if m < 2 {
        return Err(format!(
            "the pilot's '{}' has an invocation with fewer than 2 counted samples",
            b.name
        ));
    }
    let mut notes = Vec::new();
    if groups.iter().any(|g| g.len() != m) {
        notes.push(format!(
            "the pilot is unbalanced: the first {m} samples of each invocation are used"
        ));
    }
    let values: Vec<f64> = groups.iter().flat_map(|g| g[..m].iter().copied()).collect();
    let k = groups.len();
    let est = stats::kalibera_jones(&values, &[m, k])
        .ok_or("the pilot's samples are not usable (not finite)")?;
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let sample_secs: Vec<f64> = b
        .runs
        .iter()
        .filter_map(sample_of)
        .map(|s| s.ns as f64 * 1e-9)
        .collect();
    let iteration_cost = stats::median(&stats::sorted_without_nan(&sample_secs)).unwrap_or(mean);
    let invs = invocations(b);
    let per_inv = |f: &dyn Fn(&crate::results::InvocationRecord) -> f64| {
        invs.iter().map(f).sum::<f64>() / invs.len().max(1) as f64
    };
    let sampled = per_inv(&|i| i.samples as f64) * iteration_cost;
    let invocation_cost = (per_inv(&|i| i.wall_time) - sampled).max(iteration_cost);
    if est[1].t2 <= 0.0 {
        notes.push(
            "the pilot shows no variance between invocations (corrected estimate ≤ 0): more samples in fewer processes is cheapest".into(),
        );
    }
    // The mean of a sample is per loop; precision is relative, so the unit does not matter.
    let pilot = Pilot {
        est: &est,
        costs: [iteration_cost, invocation_cost],
        mean,
        outer: k,
        inner: m,
    };
    let file = two_level_plan(
        &pilot,
        req,
        ["iteration", "invocation"],
        "invocations",
        &b.name,
    )?;
    Ok((file, notes))
}

/// A balanced two-level pilot: variance estimates (inner level first), the cost of one
/// repetition at each level, the grand mean, and the pilot's shape (`outer` groups of `inner`).
struct Pilot<'a> {
    est: &'a [stats::LevelVariance],
    costs: [f64; 2],
    mean: f64,
    outer: usize,
    inner: usize,
}

/// The cheapest plan over two levels (`names`: inner, outer) that reaches the requested
/// precision, as `tare plan` writes it (no setup factors); `outer_word` names the outer
/// repetitions in the error when no plan within 100 000 of them does.
fn two_level_plan(
    pilot: &Pilot,
    req: &PlanRequest,
    names: [&str; 2],
    outer_word: &str,
    benchmark: &str,
) -> Result<RepetitionPlanFile, String> {
    let est = pilot.est;
    let t2 = [est[0].t2, est[1].t2];
    let plan = stats::plan_repetitions(
        &t2,
        &pilot.costs,
        pilot.mean,
        req.precision,
        req.confidence,
        req.assurance,
        100_000,
    )
    .ok_or_else(|| {
        format!(
            "no plan within 100000 {outer_word} reaches ±{}: ask for a looser --precision",
            crate::units::format_percent(req.precision)
        )
    })?;
    Ok(RepetitionPlanFile {
        levels: (0..2)
            .map(|i| PlannedLevel {
                level: names[i].into(),
                repetitions: plan.repetitions[i],
                variance: est[i].t2,
                variance_biased: est[i].s2,
                cost: pilot.costs[i],
            })
            .collect(),
        setups: plan.repetitions[1],
        runs_per_setup: plan.repetitions[0],
        precision: req.precision,
        confidence: req.confidence,
        assurance: req.assurance,
        predicted_halfwidth: plan.halfwidth,
        predicted_cost: plan.cost,
        pilot_mean: pilot.mean,
        pilot_setups: pilot.outer,
        pilot_runs_per_setup: pilot.inner,
        factors: Vec::new(),
        env_pad: None,
        benchmark: benchmark.to_string(),
    })
}
