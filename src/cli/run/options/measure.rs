//! `tare run`'s limits, stop rule and comparison settings: `--cpu-limit`, `--wall-limit`,
//! `--memory-limit`, `--pids-limit`; `--runs`, `--stop`, `--min-runs`, `--max-runs`,
//! `--precision`, `--time-budget`, `--min-benchmarking-time`; `--reference`, `--test`,
//! `--alpha`, `--noise-threshold`.
//!
//! For: [`limits`], [`stop_rule`] and [`analysis_settings`]. Not for: the stop rule's grammar
//! (`plan::stop`) or what the machine is asked to do between runs (`countermeasures.rs`).

use crate::cli::run::args::*;
use crate::error::usage;
use crate::exec::Limits;
use crate::plan::stop::{self, Cmp, Metric, StopRule};
use crate::plan::{Analysis, BenchmarkPlan};
use crate::report::progress::Targets;
use crate::units;

/// Reference, test, α and noise threshold for the comparisons.
pub(super) fn analysis_settings(a: &RunArgs, plans: &[BenchmarkPlan]) -> anyhow::Result<Analysis> {
    let names: Vec<String> = plans.iter().map(|b| b.name.clone()).collect();
    let reference = crate::cli::opts::reference_index(a.reference.as_deref(), &names)?;
    let alpha = a.verdict.alpha()?;
    let noise = a.verdict.noise()?;
    Ok(Analysis {
        reference,
        welch: a.verdict.test == crate::cli::opts::TestArg::Welch,
        alpha,
        noise,
        discard_outliers: a.discard_outliers,
        compare: true,
    })
}

pub(super) fn limits(a: &RunArgs) -> anyhow::Result<Limits> {
    let dur = |opt: &Option<String>, flag: &str| -> anyhow::Result<Option<std::time::Duration>> {
        opt.as_deref()
            .map(|s| units::parse_duration(s).map_err(|e| usage(format!("{flag}: {e}"))))
            .transpose()
    };
    if a.pids_limit == Some(0) {
        return Err(usage("--pids-limit must be at least 1"));
    }
    Ok(Limits {
        cpu: dur(&a.cpu_limit, "--cpu-limit")?,
        wall: dur(&a.wall_limit, "--wall-limit")?,
        memory: a
            .memory_limit
            .as_deref()
            .map(|s| units::parse_size_limit(s).map_err(|e| usage(format!("--memory-limit: {e}"))))
            .transpose()?,
        pids: a.pids_limit,
    })
}

/// The stop rule: `--runs`, `--stop`, or the default — the median's CI for one benchmark, the
/// widest ratio CI for an interleaved comparison — with the budget and run bounds.
/// Runs of a session whose counts Valgrind simulates, when no --runs, --stop or --min-runs
/// says otherwise: its counts repeat to the last digit, so there is no spread for more runs to
/// average (and each run costs 20–100× the command); three show whether they repeat.
pub const EXACT_RUNS: usize = 3;

pub(super) fn stop_rule(
    a: &RunArgs,
    benchmarks: usize,
    exact: bool,
) -> anyhow::Result<(StopRule, Targets)> {
    let comparing = benchmarks > 1 && a.order == OrderArg::Interleaved;
    let precision = units::parse_fraction(&a.precision)
        .map_err(|e| usage(format!("--precision {}: {e}", a.precision)))?;
    let budget =
        units::parse_duration(&a.time_budget).map_err(|e| usage(format!("--time-budget: {e}")))?;
    let min_runs = a.min_runs.unwrap_or(10.min(a.max_runs));
    if a.max_runs == 0 {
        return Err(usage("--max-runs must be at least 1"));
    }
    if min_runs == 0 || a.max_runs < min_runs {
        return Err(usage(format!(
            "--min-runs ({min_runs}) must be at least 1 and at most --max-runs ({})",
            a.max_runs
        )));
    }
    let mut targets = Targets {
        runs: None,
        min_runs,
        max_runs: a.max_runs,
        precision,
        time_budget: (a.runs.is_none() && !a.no_cap).then_some(budget.as_secs_f64()),
    };
    let at_least = match &a.min_benchmarking_time {
        Some(t) => Some(
            units::parse_duration(t)
                .map_err(|e| usage(format!("--min-benchmarking-time: {e}")))?
                .as_secs_f64(),
        ),
        None => None,
    };
    // The precision (or --stop) part of a rule holds only after --min-benchmarking-time.
    let long_enough = |r: StopRule| match at_least {
        Some(t) => r.and(StopRule::Cond(Metric::Time, Cmp::Ge, t)),
        None => r,
    };
    let rule = if let Some(n) = a.runs {
        if n == 0 {
            return Err(usage("--runs must be at least 1"));
        }
        targets.runs = Some(n);
        StopRule::Cond(Metric::Runs, Cmp::Ge, n as f64)
    } else if exact && a.stop.is_none() && a.min_runs.is_none() {
        let n = EXACT_RUNS.min(a.max_runs);
        targets.runs = Some(n);
        StopRule::Cond(Metric::Runs, Cmp::Ge, n as f64)
    } else if let Some(text) = &a.stop {
        let rule = long_enough(stop::parse(text).map_err(usage)?);
        if a.no_cap {
            rule
        } else {
            rule.or(StopRule::Cond(Metric::Runs, Cmp::Ge, a.max_runs as f64))
                .or(StopRule::Cond(Metric::Time, Cmp::Ge, budget.as_secs_f64()))
        }
    } else {
        let metric = if comparing {
            Metric::RatioCi
        } else {
            Metric::CiMedian
        };
        match at_least {
            None => StopRule::default_rule(
                min_runs,
                a.max_runs,
                metric,
                precision,
                budget.as_secs_f64(),
            ),
            Some(_) => StopRule::Cond(Metric::Runs, Cmp::Ge, min_runs as f64).and(
                long_enough(StopRule::Cond(metric, Cmp::Le, precision))
                    .or(StopRule::Cond(Metric::Runs, Cmp::Ge, a.max_runs as f64))
                    .or(StopRule::Cond(Metric::Time, Cmp::Ge, budget.as_secs_f64())),
            ),
        }
    };
    if rule.uses_ratio() && !comparing {
        return Err(usage(
            "ci(ratio) in --stop needs several commands measured in interleaved order",
        ));
    }
    Ok((rule, targets))
}
