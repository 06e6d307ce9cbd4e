//! Analysis across setups (seed 002 §7): per-setup medians, the variance split into
//! between-setup and within-setup (run-to-run) parts, the `setup-spread` diagnostic, the
//! comparison of commands paired by setup (per-setup medians → bootstrap over setups), and
//! the sweep analysis of `tare bias` (one factor's levels: Kruskal–Wallis, spread).
//!
//! Reads results, calls `stats`, returns records; prints nothing.

use super::analysis::CompareSettings;
use crate::results::{Benchmark, ComparisonRecord, Diagnostic, Run};
use crate::stats::{self, VarianceComponents};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Key of a run's setup record in `Run.extra`.
pub const RUN_KEY: &str = "setup";
/// Key of a benchmark's setup analysis in `Benchmark.extra`.
pub const EXTRA_KEY: &str = "setups";
/// Key of the same analysis of CPU time.
pub const EXTRA_KEY_CPU: &str = "setups_cpu_time";

/// The counted wall times of one setup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupGroup {
    pub seed: u64,
    /// The setup's factor values in words, e.g. `env=1234 aslr=off`.
    pub setup: String,
    pub runs: usize,
    pub median: f64,
}

/// How much of a benchmark's variation comes from its setups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupAnalysis {
    /// One entry per setup, in order of first use.
    pub setups: Vec<SetupGroup>,
    /// One-way random-effects ANOVA over setups; absent without repeated runs in a setup.
    pub components: Option<VarianceComponents>,
    /// √σ²_between and √σ²_within (absent with `components`).
    pub sd_between: Option<f64>,
    pub sd_within: Option<f64>,
    /// Largest over smallest per-setup median.
    pub spread: f64,
    pub fastest_setup: u64,
    pub slowest_setup: u64,
}

fn setup_seed(r: &Run) -> Option<u64> {
    r.extra.get(RUN_KEY)?.get("seed")?.as_u64()
}

fn describe_record(v: &serde_json::Value) -> String {
    serde_json::from_value::<crate::setup::Setup>(v.clone())
        .map(|s| s.describe())
        .unwrap_or_default()
}

/// Counted wall times grouped by setup seed, in order of first use, with the setup in words.
pub fn groups_by_setup(b: &Benchmark) -> Vec<(u64, String, Vec<f64>)> {
    groups_by_setup_of(b, |r| r.wall_time)
}

/// Counted values of `metric` grouped by setup seed, in order of first use.
pub fn groups_by_setup_of(
    b: &Benchmark,
    metric: impl Fn(&Run) -> f64,
) -> Vec<(u64, String, Vec<f64>)> {
    let mut out: Vec<(u64, String, Vec<f64>)> = Vec::new();
    for r in b.runs.iter().filter(|r| r.counted) {
        let Some(seed) = setup_seed(r) else { continue };
        match out.iter_mut().find(|g| g.0 == seed) {
            Some(g) => g.2.push(metric(r)),
            None => out.push((seed, describe_record(&r.extra[RUN_KEY]), vec![metric(r)])),
        }
    }
    out
}

fn median_of(xs: &[f64]) -> Option<f64> {
    stats::median(&stats::sorted_without_nan(xs))
}

/// Per-setup medians and the variance split of wall time; `None` with fewer than two setups.
pub fn analyse_setups(b: &Benchmark) -> Option<SetupAnalysis> {
    analyse_groups(groups_by_setup(b))
}

/// The same for CPU time (less disturbed by other load than wall time on a busy machine).
pub fn analyse_setups_cpu(b: &Benchmark) -> Option<SetupAnalysis> {
    analyse_groups(groups_by_setup_of(b, |r| r.cpu_time))
}

fn analyse_groups(groups: Vec<(u64, String, Vec<f64>)>) -> Option<SetupAnalysis> {
    if groups.len() < 2 {
        return None;
    }
    let setups: Vec<SetupGroup> = groups
        .iter()
        .filter_map(|(seed, words, xs)| {
            Some(SetupGroup {
                seed: *seed,
                setup: words.clone(),
                runs: xs.len(),
                median: median_of(xs)?,
            })
        })
        .collect();
    let slices: Vec<&[f64]> = groups.iter().map(|g| g.2.as_slice()).collect();
    let components = stats::one_way_random_effects(&slices);
    let (lo, hi) = setups.iter().fold((&setups[0], &setups[0]), |(lo, hi), s| {
        (
            if s.median < lo.median { s } else { lo },
            if s.median > hi.median { s } else { hi },
        )
    });
    Some(SetupAnalysis {
        sd_between: components.as_ref().map(|c| c.var_between.sqrt()),
        sd_within: components.as_ref().map(|c| c.var_within.sqrt()),
        spread: hi.median / lo.median,
        fastest_setup: lo.seed,
        slowest_setup: hi.seed,
        components,
        setups,
    })
}

/// The `setup-spread` warning: setups differ significantly (F-test at `alpha`) and the
/// between-setup standard deviation of wall time exceeds the run-to-run noise that is left in
/// the mean of one setup's runs (`σ_within/√n̄`, n̄ the average runs per setup): then repeating
/// runs in one setup cannot average the setup's bias away.
pub fn spread_diagnostic(a: &SetupAnalysis, alpha: f64) -> Option<Diagnostic> {
    spread_diagnostic_of(a, alpha, "wall time")
}

/// [`spread_diagnostic`] for the metric named `what` (e.g. "CPU time").
pub fn spread_diagnostic_of(a: &SetupAnalysis, alpha: f64, what: &str) -> Option<Diagnostic> {
    let c = a.components.as_ref()?;
    let (sb, sw) = (a.sd_between?, a.sd_within?);
    let per_setup = c.n as f64 / c.groups as f64;
    let noise = sw / per_setup.sqrt();
    if !(c.p_value < alpha && sb > noise) {
        return None;
    }
    let fmt = |v: f64| crate::units::format_time(v, None);
    let pct = |v: f64| crate::units::format_percent(v / c.grand_mean);
    Some(Diagnostic {
        kind: "setup-spread".into(),
        message: format!(
            "the setup changes {what}: between setups σ = {} ({}), more than the run-to-run noise of a {:.0}-run mean in one setup \
             ({} = σ {} / √{:.0}); per-setup medians span {:.3}× over {} setups (F = {:.1}, {})",
            fmt(sb),
            pct(sb),
            per_setup,
            fmt(noise),
            fmt(sw),
            per_setup,
            a.spread,
            a.setups.len(),
            c.f,
            crate::units::p_phrase(c.p_value)
        ),
        suggestion: "a result measured in one setup is biased by about that much, however many runs: report results over many \
                     setups (--setups N, tare plan), or find the factor with tare bias --factor env|aslr|cwd|argv0"
            .into(),
        evidence: json!({"metric": what, "sd_between": sb, "sd_within": sw, "runs_per_setup": per_setup,
                          "noise_of_setup_mean": noise, "icc": c.icc, "f": c.f, "p_value": c.p_value,
                          "spread": a.spread, "setups": a.setups.len(),
                          "fastest_setup": a.fastest_setup, "slowest_setup": a.slowest_setup}),
    })
}

/// The fewest setups any benchmark shares with the reference.
pub fn setups_compared(benches: &[Benchmark], reference: usize) -> usize {
    let Some(r) = benches.get(reference) else {
        return 0;
    };
    let rs: Vec<u64> = groups_by_setup(r).into_iter().map(|g| g.0).collect();
    benches
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != reference)
        .map(|(_, b)| {
            groups_by_setup(b)
                .iter()
                .filter(|g| rs.contains(&g.0))
                .count()
        })
        .min()
        .unwrap_or(0)
}

/// Every benchmark against the reference over setups (seed 002 §7, fig. 7): in each setup both
/// were measured in, the ratio of their medians (candidate / reference); the estimate is the
/// mean of those per-setup ratios, its CI a percentile bootstrap over setups, the p-value a
/// paired t-test over setups on the log ratios (Holm-corrected across comparisons). The CI
/// thus covers the setup-to-setup variation that one setup hides. Pairs sharing fewer than
/// two setups are left out.
pub fn compare_by_setup(benches: &[Benchmark], s: &CompareSettings) -> Vec<ComparisonRecord> {
    let Some(reference) = benches.get(s.reference) else {
        return Vec::new();
    };
    let medians = |b: &Benchmark| -> Vec<(u64, f64)> {
        groups_by_setup(b)
            .into_iter()
            .filter_map(|(seed, _, xs)| Some((seed, median_of(&xs)?)))
            .collect()
    };
    let rm = medians(reference);
    struct Raw {
        candidate: usize,
        interval: stats::Interval,
        p: f64,
        setups: usize,
    }
    let mut raws = Vec::new();
    for (i, b) in benches.iter().enumerate() {
        if i == s.reference {
            continue;
        }
        let cm = medians(b);
        let ratios: Vec<f64> = rm
            .iter()
            .filter_map(|(seed, r)| {
                let c = cm.iter().find(|(k, _)| k == seed)?.1;
                (*r > 0.0).then(|| c / r)
            })
            .collect();
        let Some(interval) = stats::bootstrap_mean(&ratios, 0.95, s.resamples, s.seed) else {
            continue;
        };
        let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
        let Some(t) = stats::one_sample_t(&logs, 0.0) else {
            continue;
        };
        raws.push(Raw {
            candidate: i,
            interval,
            p: t.p_value,
            setups: ratios.len(),
        });
    }
    let adjusted = stats::holm(&raws.iter().map(|r| r.p).collect::<Vec<_>>());
    raws.iter()
        .zip(adjusted)
        .map(|(r, p_adj)| {
            let cand = &benches[r.candidate];
            let verdict = stats::Verdict::classify(&r.interval, p_adj, s.alpha, s.noise);
            ComparisonRecord {
                metric: "wall_time".into(),
                reference: s.reference,
                candidate: r.candidate,
                reference_name: reference.name.clone(),
                candidate_name: cand.name.clone(),
                ratio: r.interval.estimate,
                ratio_ci_low: r.interval.low,
                ratio_ci_high: r.interval.high,
                confidence: r.interval.confidence,
                paired: true,
                test: "paired-t-over-setups".into(),
                p_value: r.p,
                p_adjusted: p_adj,
                verdict: super::analysis::verdict_kind(&verdict).into(),
                words: format!(
                    "{} (mean of per-setup ratios over {} setups)",
                    {
                        let names: Vec<&str> = benches.iter().map(|b| b.name.as_str()).collect();
                        let l = super::analysis::short_labels(&names);
                        verdict.words(&l[s.reference], &l[r.candidate])
                    },
                    r.setups
                ),
            }
        })
        .collect()
}

/// Every benchmark against the reference by the two-level hierarchical bootstrap (setups,
/// then runs within them; setups shared with the reference, resampled jointly): the ratio of
/// mean wall times with its 95% CI, for `Session.extra["hierarchical_ratio"]`.
pub fn hierarchical_ratios(benches: &[Benchmark], s: &CompareSettings) -> Vec<serde_json::Value> {
    let Some(reference) = benches.get(s.reference) else {
        return Vec::new();
    };
    let rg = groups_by_setup(reference);
    let mut out = Vec::new();
    for (i, b) in benches.iter().enumerate() {
        if i == s.reference {
            continue;
        }
        let cg = groups_by_setup(b);
        let (x, y): (Vec<Vec<f64>>, Vec<Vec<f64>>) = rg
            .iter()
            .filter_map(|(seed, _, xs)| {
                cg.iter()
                    .find(|g| g.0 == *seed)
                    .map(|g| (xs.clone(), g.2.clone()))
            })
            .unzip();
        if let Some(iv) =
            stats::hierarchical_bootstrap_ratio(&x, &y, true, 0.95, s.resamples, s.seed)
        {
            out.push(
                json!({"reference": s.reference, "candidate": i, "setups": x.len(),
                            "statistic": "ratio of means", "ratio": iv.estimate,
                            "ci_low": iv.low, "ci_high": iv.high, "confidence": iv.confidence}),
            );
        }
    }
    out
}

/// One level of a factor sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelResult {
    pub level: String,
    pub runs: usize,
    pub median: f64,
    /// This level's median over the smallest level median.
    pub relative: f64,
}

/// Whether a factor's levels differ (`tare bias`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepAnalysis {
    pub levels: Vec<LevelResult>,
    /// Kruskal–Wallis H over the levels and its p-value.
    pub h: f64,
    pub p_value: f64,
    pub alpha: f64,
    pub significant: bool,
    pub fastest_level: String,
    pub slowest_level: String,
    /// Largest over smallest level median.
    pub spread: f64,
}

/// Kruskal–Wallis over the levels' values; `None` with fewer than two levels with values, or
/// when every value is the same.
pub fn sweep(levels: &[(String, Vec<f64>)], alpha: f64) -> Option<SweepAnalysis> {
    let kept: Vec<(&String, &Vec<f64>, f64)> = levels
        .iter()
        .filter_map(|(l, xs)| Some((l, xs, median_of(xs)?)))
        .collect();
    if kept.len() < 2 {
        return None;
    }
    let groups: Vec<&[f64]> = kept.iter().map(|k| k.1.as_slice()).collect();
    let test = stats::kruskal_wallis(&groups)?;
    let min = kept.iter().map(|k| k.2).fold(f64::INFINITY, f64::min);
    let fastest = kept.iter().find(|k| k.2 == min)?;
    let max = kept.iter().map(|k| k.2).fold(f64::NEG_INFINITY, f64::max);
    let slowest = kept.iter().find(|k| k.2 == max)?;
    Some(SweepAnalysis {
        levels: kept
            .iter()
            .map(|(l, xs, m)| LevelResult {
                level: (*l).clone(),
                runs: xs.len(),
                median: *m,
                relative: m / min,
            })
            .collect(),
        h: test.statistic,
        p_value: test.p_value,
        alpha,
        significant: test.p_value < alpha,
        fastest_level: fastest.0.clone(),
        slowest_level: slowest.0.clone(),
        spread: max / min,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn noisy(rng: &mut rand_chacha::ChaCha8Rng, center: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| center * (1.0 + 0.02 * (rng.gen::<f64>() - 0.5)))
            .collect()
    }

    #[test]
    fn sweep_finds_a_level_effect_and_not_its_absence() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let with: Vec<(String, Vec<f64>)> = (0..8)
            .map(|l| {
                let c = if l % 4 == 0 { 1.3 } else { 1.0 };
                (format!("{}", l * 16), noisy(&mut rng, c, 6))
            })
            .collect();
        let a = sweep(&with, 0.05).unwrap();
        assert!(a.significant, "{a:?}");
        assert!(a.spread > 1.2);
        assert_eq!(a.slowest_level, "0");
        let without: Vec<(String, Vec<f64>)> = (0..8)
            .map(|l| (format!("{l}"), noisy(&mut rng, 1.0, 6)))
            .collect();
        assert!(sweep(&without, 0.05).unwrap().p_value > 0.001);
        assert!(sweep(&with[..1], 0.05).is_none());
    }
}
