//! One model of a measurement, for every verdict between two versions (issue 22).
//!
//! The levels are session → process → iteration (sample). Samples of one process share its
//! state (layout, JIT, caches, frequency) and are not independent of each other (Kalibera &
//! Jones): the process is the unit of replication. So a comparison
//!
//! 1. groups the counted samples of each side by process ([`groups`]): a `tare run` run is a
//!    process; a `tare kernels` sample belongs to its invocation; an imported sample to the
//!    process its harness records (`Run.extra["process"]`: hyperfine run, JMH fork, pyperf
//!    worker, go test binary run) or, where the format records none, to its file;
//! 2. takes each process's median, and compares the two sides' medians of those medians: a
//!    bootstrap CI over processes for the ratio new/old, and a test (Mann–Whitney or Welch) on
//!    the per-process medians, Holm-adjusted across benchmarks;
//! 3. calls a difference significant only when the CI excludes 1, the Holm-adjusted p is below
//!    α and the change is at least the noise threshold — and says which of these failed
//!    otherwise; with fewer than two processes on a side there is no verdict:
//!    "inconclusive: one process per side" (iterations alone never make one).
//!
//! Pure: takes samples grouped by process (or benchmarks), returns records; never prints.

use super::analysis::Test;
use super::kernels;
use crate::results::{
    Benchmark, MethodKind, ProcessLevel, Session, PROCESS_KEY, PROCESS_LEVEL_KEY,
};
use crate::stats;
use serde::Serialize;
use std::collections::BTreeMap;

/// Where a benchmark's samples come from, which decides what a process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `tare run`: each run is a process.
    Run,
    /// `tare kernels`: samples belong to invocations.
    Kernels,
    /// Another harness's results (`tare import`): the recorded process, else the file.
    Imported,
}

impl Origin {
    pub fn of(s: &Session) -> Origin {
        if kernels::is_kernels(s) {
            Origin::Kernels
        } else if s.method.kind == MethodKind::Imported {
            Origin::Imported
        } else {
            Origin::Run
        }
    }
}

/// What one process is for a benchmark of this origin, in a few words ("run", "invocation",
/// "JMH fork", "file").
pub fn unit(b: &Benchmark, origin: Origin) -> String {
    match origin {
        Origin::Run => "run".into(),
        Origin::Kernels => "invocation".into(),
        Origin::Imported => b
            .extra
            .get(PROCESS_LEVEL_KEY)
            .and_then(|v| serde_json::from_value::<ProcessLevel>(v.clone()).ok())
            .map(|l| l.unit)
            .unwrap_or_else(|| "file".into()),
    }
}

/// Counted wall times of a benchmark grouped by process, in process order. An imported sample
/// with no process recorded belongs to the one process of its file (and of its source, in a
/// merged import).
pub fn groups(b: &Benchmark, origin: Origin) -> Groups {
    // (source, numeric id, textual id): numbers sort as numbers.
    let mut by: BTreeMap<(u64, u64, String), Vec<f64>> = BTreeMap::new();
    for r in b.runs.iter().filter(|r| r.counted) {
        let source = r.extra.get("source").and_then(|v| v.as_u64()).unwrap_or(0);
        let key = match origin {
            Origin::Run => (source, r.index as u64, String::new()),
            Origin::Kernels => match kernels::sample_of(r) {
                Some(s) => (source, s.invocation as u64, String::new()),
                None => continue,
            },
            Origin::Imported => match r.extra.get(PROCESS_KEY) {
                Some(v) => match v.as_u64() {
                    Some(n) => (source, n, String::new()),
                    None => (source, u64::MAX, v.to_string()),
                },
                None => (source, 0, String::new()),
            },
        };
        by.entry(key).or_default().push(r.wall_time);
    }
    by.into_values().collect()
}

/// The groups of one side made of several parts (the same benchmark in several files): each
/// file's processes are distinct processes.
pub fn side_groups(parts: &[(Origin, &Benchmark)]) -> Groups {
    parts.iter().flat_map(|(o, b)| groups(b, *o)).collect()
}

/// Settings of a comparison.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub test: Test,
    pub alpha: f64,
    /// Relative change below which a difference is not called one, and within which a whole
    /// CI is "equal within noise".
    pub noise: f64,
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
}

/// The outcome of one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Faster,
    Slower,
    NoSignificantDifference,
    EqualWithinNoise,
    /// Too few processes on a side for any verdict.
    Inconclusive,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Faster => "faster",
            Outcome::Slower => "slower",
            Outcome::NoSignificantDifference => "no-significant-difference",
            Outcome::EqualWithinNoise => "equal-within-noise",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

/// One benchmark, old against new, at the process level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub old_processes: usize,
    pub new_processes: usize,
    pub old_samples: usize,
    pub new_samples: usize,
    /// Median of the per-process medians of each side (NaN when a side has no sample).
    pub old_median: f64,
    pub new_median: f64,
    /// new_median / old_median: above 1 means the new version is slower.
    pub ratio: f64,
    /// Bootstrap CI of the ratio over processes; None with fewer than two processes a side.
    pub ci: Option<(f64, f64)>,
    pub confidence: f64,
    /// Test on the per-process medians, raw and Holm-adjusted over the benchmarks compared.
    pub p_value: Option<f64>,
    pub p_adjusted: Option<f64>,
    pub outcome: Outcome,
    /// Why a difference is not significant (each failed criterion), or why inconclusive.
    pub why: Vec<String>,
    /// The verdict in words.
    pub words: String,
}

fn median(xs: &[f64]) -> f64 {
    stats::median(&stats::sorted_without_nan(xs)).unwrap_or(f64::NAN)
}

/// Per-process medians of groups of samples.
pub fn process_medians(groups: &[Vec<f64>]) -> Vec<f64> {
    groups
        .iter()
        .filter(|g| !g.is_empty())
        .map(|g| median(g))
        .collect()
}

/// Samples grouped by process: one inner vector per process.
pub type Groups = Vec<Vec<f64>>;

/// Compares each `(old, new)` pair of sample groups (one group per process) under the model;
/// p-values are Holm-adjusted across the pairs that could be tested.
pub fn compare(pairs: &[(Groups, Groups)], s: &Settings) -> Vec<Comparison> {
    struct Raw {
        x: Vec<f64>,
        y: Vec<f64>,
        samples: (usize, usize),
        interval: Option<stats::Interval>,
        p: Option<f64>,
    }
    let raws: Vec<Raw> = pairs
        .iter()
        .map(|(old, new)| {
            let (x, y) = (process_medians(old), process_medians(new));
            let samples = (
                old.iter().map(Vec::len).sum(),
                new.iter().map(Vec::len).sum(),
            );
            let (interval, p) = if x.len() >= 2 && y.len() >= 2 {
                let iv = stats::bootstrap_ratio_of_medians(
                    &x,
                    &y,
                    false,
                    s.confidence,
                    s.resamples,
                    s.seed,
                );
                let t = match s.test {
                    Test::MannWhitney => stats::mann_whitney_u(&x, &y),
                    Test::Welch => stats::welch_t_test(&x, &y),
                };
                (iv, t.map(|t| t.p_value).filter(|p| p.is_finite()))
            } else {
                (None, None)
            };
            Raw {
                x,
                y,
                samples,
                interval,
                p,
            }
        })
        .collect();
    let tested: Vec<f64> = raws.iter().filter_map(|r| r.p).collect();
    let mut adjusted = stats::holm(&tested).into_iter();
    raws.into_iter()
        .map(|r| {
            let p_adj = r.p.and_then(|_| adjusted.next());
            classify(r.x, r.y, r.samples, r.interval, r.p, p_adj, s)
        })
        .collect()
}

fn pct(x: f64) -> String {
    format!("{:+.2}%", (x - 1.0) * 100.0)
}

fn classify(
    x: Vec<f64>,
    y: Vec<f64>,
    samples: (usize, usize),
    interval: Option<stats::Interval>,
    p: Option<f64>,
    p_adj: Option<f64>,
    s: &Settings,
) -> Comparison {
    let (om, nm) = (median(&x), median(&y));
    let ratio = nm / om;
    let mut c = Comparison {
        old_processes: x.len(),
        new_processes: y.len(),
        old_samples: samples.0,
        new_samples: samples.1,
        old_median: om,
        new_median: nm,
        ratio,
        ci: interval.map(|iv| (iv.low, iv.high)),
        confidence: s.confidence,
        p_value: p,
        p_adjusted: p_adj,
        outcome: Outcome::Inconclusive,
        why: Vec::new(),
        words: String::new(),
    };
    let counts = format!("{} vs {} processes", x.len(), y.len());
    if x.len() < 2 || y.len() < 2 {
        let which = match (x.len() < 2, y.len() < 2) {
            (true, true) => "one process per side".to_string(),
            (true, false) => format!("{} process in old", x.len()),
            _ => format!("{} process in new", y.len()),
        };
        c.why.push(which.clone());
        c.words = format!(
            "inconclusive: {which} ({counts}, {} vs {} samples; samples of one process make no verdict): give more processes (files a side, forks, workers, runs)",
            samples.0, samples.1
        );
        return c;
    }
    let (Some(iv), Some(p_adj)) = (interval, p_adj) else {
        c.why.push("no interval or test on these values".into());
        c.words = format!("inconclusive: no interval or test could be computed ({counts})");
        return c;
    };
    let conf = format!("{:.0}%", 100.0 * s.confidence);
    let d = if iv.high - iv.low < 0.002 { 4 } else { 3 };
    let ci_words = format!("{conf} CI {:.d$}–{:.d$}", iv.low, iv.high);
    if iv.low >= 1.0 - s.noise && iv.high <= 1.0 + s.noise {
        c.outcome = Outcome::EqualWithinNoise;
        c.words = format!(
            "equal within noise (new/old {ci_words}, within ±{:.1}%; {counts})",
            100.0 * s.noise
        );
        return c;
    }
    if iv.low <= 1.0 && 1.0 <= iv.high {
        c.why
            .push(format!("CI {:.d$}–{:.d$} includes 1", iv.low, iv.high));
    }
    if p_adj >= s.alpha {
        c.why.push(format!(
            "Holm p = {} ≥ α {}",
            crate::units::format_p(p_adj),
            s.alpha
        ));
    }
    if (ratio - 1.0).abs() < s.noise {
        c.why.push(format!(
            "change {} below the ±{:.1}% noise threshold",
            pct(ratio),
            100.0 * s.noise
        ));
    }
    if !c.why.is_empty() {
        c.outcome = Outcome::NoSignificantDifference;
        c.words = format!("no significant difference ({}; {counts})", c.why.join("; "));
        return c;
    }
    if ratio < 1.0 {
        c.outcome = Outcome::Faster;
        c.words = format!(
            "new is {:.3}× faster ({conf} CI {:.3}–{:.3}, Holm p = {}; {counts})",
            1.0 / ratio,
            1.0 / iv.high,
            1.0 / iv.low,
            crate::units::format_p(p_adj)
        );
    } else {
        c.outcome = Outcome::Slower;
        c.words = format!(
            "new is {:.3}× slower ({ci_words}, Holm p = {}; {counts})",
            ratio,
            crate::units::format_p(p_adj)
        );
    }
    c
}

/// The one line stating the model of a comparison: the unit of replication and how many of
/// them each side has (a range when benchmarks differ).
pub fn model_line(units: &[String], comparisons: &[Comparison], test: Test) -> String {
    let range = |f: fn(&Comparison) -> usize| {
        let lo = comparisons.iter().map(f).min().unwrap_or(0);
        let hi = comparisons.iter().map(f).max().unwrap_or(0);
        if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}–{hi}")
        }
    };
    let mut u: Vec<&str> = units.iter().map(String::as_str).collect();
    u.sort();
    u.dedup();
    format!(
        "unit: process ({}); {} vs {} processes ({} vs {} samples); ratio of medians of per-process medians, bootstrap CI over processes, {} on per-process medians, Holm across {}",
        u.join(", "),
        range(|c| c.old_processes),
        range(|c| c.new_processes),
        range(|c| c.old_samples),
        range(|c| c.new_samples),
        match test {
            Test::MannWhitney => "Mann–Whitney",
            Test::Welch => "Welch's t",
        },
        crate::units::plural(comparisons.len(), "benchmark")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    const S: Settings = Settings {
        test: Test::MannWhitney,
        alpha: 0.05,
        noise: 0.01,
        confidence: 0.95,
        resamples: 2000,
        seed: 0,
    };

    /// `procs` processes of `n` samples: each process has its own offset (σ `between`), its
    /// samples 0.1% noise around it.
    fn side(rng: &mut impl Rng, procs: usize, n: usize, level: f64, between: f64) -> Groups {
        (0..procs)
            .map(|_| {
                let off = level * (1.0 + between * (rng.gen::<f64>() - 0.5) * 3.46);
                (0..n)
                    .map(|_| off * (1.0 + 0.001 * (rng.gen::<f64>() - 0.5)))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn one_process_per_side_is_inconclusive_however_many_samples() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        // Two processes that differ by 5% (the process offset), 1000 samples each: pooled
        // samples would call it significant; the model does not.
        let old = side(&mut rng, 1, 1000, 1.0, 0.0);
        let new = side(&mut rng, 1, 1000, 1.05, 0.0);
        let c = &compare(&[(old, new)], &S)[0];
        assert_eq!(c.outcome, Outcome::Inconclusive);
        assert!(c.words.contains("one process per side"), "{}", c.words);
        assert_eq!((c.old_samples, c.new_samples), (1000, 1000));
        assert!(c.ci.is_none() && c.p_value.is_none());
    }

    #[test]
    fn a_aa_with_process_noise_gives_few_false_verdicts() {
        // 40 A/A pairs, 5 processes a side, 3% between-process σ, 200 samples each.
        let mut false_verdicts = 0;
        for seed in 0..40 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let old = side(&mut rng, 5, 200, 1.0, 0.03);
            let new = side(&mut rng, 5, 200, 1.0, 0.03);
            let c = &compare(&[(old, new)], &S)[0];
            if matches!(c.outcome, Outcome::Faster | Outcome::Slower) {
                false_verdicts += 1;
            }
        }
        assert!(false_verdicts <= 4, "{false_verdicts} of 40");
    }

    #[test]
    fn a_real_change_across_processes_is_found_and_reasons_are_given() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let old = side(&mut rng, 8, 50, 1.0, 0.01);
        let new = side(&mut rng, 8, 50, 1.10, 0.01);
        let same_old = side(&mut rng, 8, 50, 1.0, 0.01);
        let same_new = side(&mut rng, 8, 50, 1.0, 0.01);
        let tiny_old = side(&mut rng, 8, 50, 1.0, 0.0005);
        let tiny_new = side(&mut rng, 8, 50, 1.005, 0.0005);
        let cs = compare(
            &[(old, new), (same_old, same_new), (tiny_old, tiny_new)],
            &S,
        );
        assert_eq!(cs[0].outcome, Outcome::Slower, "{}", cs[0].words);
        assert!(cs[0].words.contains("8 vs 8 processes"), "{}", cs[0].words);
        assert_ne!(cs[1].outcome, Outcome::Slower);
        if cs[1].outcome == Outcome::NoSignificantDifference {
            assert!(
                cs[1]
                    .why
                    .iter()
                    .any(|w| w.contains("includes 1") || w.contains("Holm p")),
                "{:?}",
                cs[1].why
            );
        }
        // +0.5%: significant, but under the 1% threshold: the reason says so.
        assert_ne!(cs[2].outcome, Outcome::Slower, "{}", cs[2].words);
        assert!(
            cs[2].outcome == Outcome::EqualWithinNoise
                || cs[2].why.iter().any(|w| w.contains("noise threshold")),
            "{}",
            cs[2].words
        );
        // Holm over the three: adjusted ≥ raw.
        for c in &cs {
            assert!(c.p_adjusted.unwrap() >= c.p_value.unwrap());
        }
    }

    #[test]
    fn process_medians_are_the_median_of_each_group() {
        let g = vec![vec![3.0, 1.0, 2.0], vec![], vec![10.0, 20.0]];
        assert_eq!(process_medians(&g), vec![2.0, 15.0]);
    }
}
