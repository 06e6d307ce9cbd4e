//! After measuring: comparisons against the reference (`compare_all`: the one process-level
//! model of `conclude::levels`, each run a process; `compare_pairs`: the sample-level ratio of
//! medians `tare kernels` starts from) and diagnostics that explain noise (outliers,
//! warm-up, drift, modes, serial correlation, too few runs). Reads results, calls the pure
//! `stats` functions, returns result records; prints nothing.

use crate::results::{Benchmark, ComparisonRecord, Diagnostic, Run};
use crate::stats::{self, Verdict};
use serde_json::json;

mod diagnose;
pub use diagnose::*;

/// The test behind comparison p-values: the one model's (`conclude::levels`).
pub use super::levels::Test;

/// How comparisons are made.
#[derive(Debug, Clone, Copy)]
pub struct CompareSettings {
    pub reference: usize,
    pub test: Test,
    pub alpha: f64,
    /// Relative half-width under which a difference is "equal within noise".
    pub noise: f64,
    /// Resample rounds jointly (interleaved order).
    pub paired: bool,
    pub resamples: usize,
    pub seed: u64,
}

/// Counted wall times in run order.
pub fn walls(b: &Benchmark) -> Vec<f64> {
    b.runs
        .iter()
        .filter(|r| r.counted)
        .map(|r| r.wall_time)
        .collect()
}

/// Wall times of the rounds where both benchmarks have a counted run, aligned by round.
fn paired_walls(a: &Benchmark, b: &Benchmark) -> (Vec<f64>, Vec<f64>) {
    let by_round = |x: &Benchmark| -> std::collections::BTreeMap<usize, f64> {
        x.runs
            .iter()
            .filter(|r| r.counted)
            .filter_map(|r| r.round.map(|k| (k, r.wall_time)))
            .collect()
    };
    let (ra, rb) = (by_round(a), by_round(b));
    ra.iter()
        .filter_map(|(k, va)| rb.get(k).map(|vb| (*va, *vb)))
        .unzip()
}

fn samples(a: &Benchmark, b: &Benchmark, paired: bool) -> (Vec<f64>, Vec<f64>, bool) {
    if paired {
        let (x, y) = paired_walls(a, b);
        if x.len() >= 2 {
            return (x, y, true);
        }
    }
    (walls(a), walls(b), false)
}

/// How much stricter than `--alpha` a comparison's interval must exclude 1 (or lie within the
/// noise band) for measuring to end early on it. The stop rule looks after every round;
/// stopping at the first look under α itself would multiply false verdicts. At α/500 the
/// looks of up to a thousand rounds end an A/A comparison early on a false verdict in 0.22%
/// of sessions at α 0.05 (`bench/sequential_stop.py`), on top of the final test's α. Being
/// stricter than the verdict's level, a comparison decided here keeps its verdict when the
/// session ends.
pub const SEQUENTIAL_STRICTNESS: f64 = 500.0;

/// The comparisons (by candidate index) already decided at the sequential level
/// ([`SEQUENTIAL_STRICTNESS`]): faster, slower or equal within noise, under the one model.
pub fn decided(benches: &[Benchmark], s: &CompareSettings) -> Vec<usize> {
    let strict = CompareSettings {
        alpha: s.alpha / SEQUENTIAL_STRICTNESS,
        // Paired rounds draw a t interval; the bootstrap a pair without rounds falls back to
        // is bounded as `ratio_precision`'s, since this runs between rounds.
        resamples: s.resamples.min(500),
        ..*s
    };
    compare_all(benches, &strict)
        .into_iter()
        .filter(|c| {
            matches!(
                c.verdict.as_str(),
                "faster" | "slower" | "equal-within-noise"
            )
        })
        .map(|c| c.candidate)
        .collect()
}

/// Relative half-width of the widest ratio CI over the pairs with the reference that are not
/// yet [`decided`] (a decided pair counts 0: its answer is settled, however wide its
/// interval): the quantity the `ci(ratio)` stop rule looks at, so the default rule ends once
/// every ratio is decided or known within `--precision`. Uses fewer resamples than the final
/// analysis.
pub fn ratio_precision(benches: &[Benchmark], s: &CompareSettings) -> Option<f64> {
    let reference = benches.get(s.reference)?;
    let settled = decided(benches, s);
    let mut worst: Option<f64> = None;
    for (i, b) in benches.iter().enumerate() {
        if i == s.reference {
            continue;
        }
        if settled.contains(&i) {
            worst = Some(worst.unwrap_or(0.0));
            continue;
        }
        let (x, y, paired) = samples(reference, b, s.paired);
        let iv = stats::bootstrap_ratio_of_medians(&x, &y, paired, 0.95, 500, s.seed)?;
        let w = ((iv.estimate - iv.low).max(iv.high - iv.estimate)) / iv.estimate;
        worst = Some(worst.map_or(w, |m: f64| m.max(w)));
    }
    worst
}

pub(crate) fn verdict_kind(v: &Verdict) -> &'static str {
    match v {
        Verdict::Faster { .. } => "faster",
        Verdict::Slower { .. } => "slower",
        Verdict::NoSignificantDifference { .. } => "no-significant-difference",
        Verdict::EqualWithinNoise { .. } => "equal-within-noise",
    }
}

/// Every benchmark against the reference on wall time, under the one process-level model of
/// `conclude::levels` (issue 43): each counted run is a process with one sample; where the
/// runs were interleaved they pair by round (`levels::compare_rounds`). The interval of each
/// comparison is at 1 − α/m for the m comparisons drawn, and the verdict is whether it
/// excludes 1, so the words and the interval beside them are one procedure's — as `tare
/// kernels`, `tare compare` and imports print them. Pairs with fewer than two runs a side are
/// left out.
pub fn compare_all(benches: &[Benchmark], s: &CompareSettings) -> Vec<ComparisonRecord> {
    use super::levels;
    let Some(reference) = benches.get(s.reference) else {
        return Vec::new();
    };
    let candidates: Vec<usize> = (0..benches.len()).filter(|&i| i != s.reference).collect();
    let settings = levels::Settings {
        test: s.test,
        alpha: s.alpha,
        noise: s.noise,
        confidence: 1.0 - s.alpha,
        resamples: s.resamples,
        seed: s.seed,
    };
    let model: Vec<levels::Comparison> = if s.paired {
        // A run without a round pairs with nothing (a key no round has).
        let by_round = |b: &Benchmark| -> levels::ByRound {
            b.runs
                .iter()
                .filter(|r| r.counted)
                .enumerate()
                .map(|(i, r)| (r.round.unwrap_or(usize::MAX - i), vec![r.wall_time]))
                .collect()
        };
        let pairs: Vec<_> = candidates
            .iter()
            .map(|&c| (by_round(reference), by_round(&benches[c])))
            .collect();
        levels::compare_rounds(&pairs, &settings)
    } else {
        let groups =
            |b: &Benchmark| -> levels::Groups { walls(b).into_iter().map(|w| vec![w]).collect() };
        let pairs: Vec<_> = candidates
            .iter()
            .map(|&c| (groups(reference), groups(&benches[c])))
            .collect();
        levels::compare(&pairs, &settings)
    };
    let names: Vec<&str> = benches.iter().map(|b| b.name.as_str()).collect();
    let labels = short_labels(&names);
    candidates
        .iter()
        .zip(model)
        .filter_map(|(&c, m)| {
            let (low, high) = m.ci?;
            let cand = &benches[c];
            let (a, b) = (&labels[s.reference], &labels[c]);
            let p = m.p_value.unwrap_or(if m.ratio == 1.0 { 1.0 } else { 0.0 });
            Some(ComparisonRecord {
                metric: "wall_time".into(),
                reference: s.reference,
                candidate: c,
                reference_name: reference.name.clone(),
                candidate_name: cand.name.clone(),
                ratio: m.ratio,
                ratio_ci_low: low,
                ratio_ci_high: high,
                confidence: m.confidence,
                paired: m.paired_rounds.is_some(),
                test: match m.procedure {
                    Some(levels::Procedure::WelchLogs) => "welch (logs)".into(),
                    Some(levels::Procedure::Paired) => "paired t (logs)".into(),
                    _ => s.test.name().into(),
                },
                p_value: p,
                p_adjusted: m.p_adjusted.unwrap_or((p * m.adjusted_for as f64).min(1.0)),
                verdict: m.outcome.as_str().into(),
                words: run_words(&m, a, b, s.noise),
            })
        })
        .collect()
}

/// A `tare run` comparison in words, from the one model's comparison `m` of `b` against `a`:
/// the verdict and the interval it was drawn from, at its level.
fn run_words(m: &super::levels::Comparison, a: &str, b: &str, noise: f64) -> String {
    use super::levels::{level_words, Outcome, Procedure};
    let (low, high) = m.ci.unwrap_or((f64::NAN, f64::NAN));
    let (conf, adj) = level_words(m.confidence, m.adjusted_for);
    let comma = if adj.is_empty() { "" } else { "," };
    let d = stats::compare::decimals(low, high);
    let how = match (m.procedure, m.paired_rounds) {
        (_, Some(k)) => format!("; paired t over {k} rounds"),
        (Some(Procedure::WelchLogs), _) => format!(
            "; Welch's t on logs: {} vs {} runs, too few for the rank test",
            m.old_processes, m.new_processes
        ),
        _ => String::new(),
    };
    match m.outcome {
        Outcome::Slower => format!(
            "{b} is {:.d$}× slower than {a} ({conf} {low:.d$}–{high:.d$}{adj}{how})",
            m.ratio
        ),
        Outcome::Faster => format!(
            "{b} is {:.d$}× faster than {a} ({conf} {:.d$}–{:.d$}{adj}{how})",
            1.0 / m.ratio,
            1.0 / high,
            1.0 / low
        ),
        Outcome::EqualWithinNoise => {
            format!("equal within noise ({b}/{a} {conf} {low:.d$}–{high:.d$}{adj}{how})")
        }
        _ if low > 1.0 || high < 1.0 => format!(
            "below the noise threshold ({b}/{a} {conf} {low:.d$}–{high:.d$}{adj}{comma} excludes 1, but {:+.2}% is within ±{:.1}%{how})",
            (m.ratio - 1.0) * 100.0,
            noise * 100.0
        ),
        _ => format!(
            "no significant difference ({b}/{a} {conf} {low:.d$}–{high:.d$}{adj}{comma} includes 1{how})"
        ),
    }
}

/// Compares `candidates[c]` with `references[r]` for each `(r, c)` on wall time; p-values are
/// Holm-corrected over all pairs. Pairs with too few runs are left out.
pub fn compare_pairs(
    references: &[Benchmark],
    candidates: &[Benchmark],
    pairs: &[(usize, usize)],
    s: &CompareSettings,
) -> Vec<ComparisonRecord> {
    struct Raw {
        reference: usize,
        candidate: usize,
        interval: stats::Interval,
        p: f64,
        paired: bool,
    }
    let mut raws = Vec::new();
    for &(r, c) in pairs {
        let (Some(reference), Some(cand)) = (references.get(r), candidates.get(c)) else {
            continue;
        };
        let (x, y, paired) = samples(reference, cand, s.paired);
        let Some(interval) =
            stats::bootstrap_ratio_of_medians(&x, &y, paired, 0.95, s.resamples, s.seed)
        else {
            continue;
        };
        let test = match s.test {
            Test::MannWhitney => stats::mann_whitney_u(&x, &y),
            Test::Welch => stats::welch_t_test(&x, &y),
        };
        let Some(test) = test else { continue };
        raws.push(Raw {
            reference: r,
            candidate: c,
            interval,
            p: test.p_value,
            paired,
        });
    }
    let adjusted = stats::holm(&raws.iter().map(|r| r.p).collect::<Vec<_>>());
    let names: Vec<&str> = references.iter().map(|b| b.name.as_str()).collect();
    let labels = short_labels(&names);
    raws.iter()
        .zip(adjusted)
        .map(|(r, p_adj)| {
            let reference = &references[r.reference];
            let cand = &candidates[r.candidate];
            let verdict = Verdict::classify(&r.interval, p_adj, s.alpha, s.noise);
            ComparisonRecord {
                metric: "wall_time".into(),
                reference: r.reference,
                candidate: r.candidate,
                reference_name: reference.name.clone(),
                candidate_name: cand.name.clone(),
                ratio: r.interval.estimate,
                ratio_ci_low: r.interval.low,
                ratio_ci_high: r.interval.high,
                confidence: r.interval.confidence,
                paired: r.paired,
                test: s.test.name().into(),
                p_value: r.p,
                p_adjusted: p_adj,
                verdict: verdict_kind(&verdict).into(),
                words: {
                    let same = std::ptr::eq(references, candidates);
                    let (a, b) = if same {
                        (labels[r.reference].clone(), labels[r.candidate].clone())
                    } else {
                        // Saved results: the same benchmark, old and new.
                        (
                            format!("old {}", reference.name),
                            format!("new {}", cand.name),
                        )
                    };
                    verdict.words(&a, &b)
                },
            }
        })
        .collect()
}

/// Labels for a session's benchmarks in comparison sentences: without the trailing words every
/// name shares (`gzip -9 -c f`, `gzip -1 -c f`, `xz -1 -c f` → `gzip -9`, `gzip -1`, `xz -1`),
/// else the names as they are — and the names as they are wherever the shortened ones would not
/// tell two benchmarks apart or one would be empty.
pub fn short_labels(names: &[&str]) -> Vec<String> {
    let words: Vec<Vec<&str>> = names
        .iter()
        .map(|n| n.split_whitespace().collect())
        .collect();
    let whole = || names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let Some(first) = words.first() else {
        return Vec::new();
    };
    let tail = (0..first.len())
        .take_while(|&k| {
            let w = first[first.len() - 1 - k];
            words
                .iter()
                .all(|ws| ws.len() > k && ws[ws.len() - 1 - k] == w)
        })
        .count();
    if tail == 0 || words.len() < 2 {
        return whole();
    }
    let short: Vec<String> = words
        .iter()
        .map(|ws| ws[..ws.len() - tail].join(" "))
        .collect();
    let distinct: std::collections::HashSet<&String> = short.iter().collect();
    if short.iter().any(String::is_empty) || distinct.len() < short.len() {
        return whole();
    }
    short
}

#[cfg(test)]
mod label_tests {
    use super::short_labels;

    #[test]
    fn labels_keep_only_the_words_that_differ() {
        let l = |names: &[&str]| short_labels(names);
        assert_eq!(
            l(&["gzip -9 -c /etc/services", "gzip -1 -c /etc/services"]),
            ["gzip -9", "gzip -1"]
        );
        assert_eq!(l(&["fast", "slow"]), ["fast", "slow"]);
        assert_eq!(l(&["sort f", "sort -n f"]), ["sort", "sort -n"]);
        // A name that is all shared words keeps every name whole.
        assert_eq!(l(&["f", "sort f"]), ["f", "sort f"]);
        assert_eq!(l(&["xz -1 a", "zstd -1 a"]), ["xz", "zstd"]);
        // Only the words all names share go: two gzip commands stay apart from each other.
        assert_eq!(
            l(&["gzip -1 -c f.txt", "gzip -9 -c f.txt", "xz -1 -c f.txt"]),
            ["gzip -1", "gzip -9", "xz -1"]
        );
        // Shortened names that would coincide are not shortened.
        assert_eq!(l(&["a x", "a y x", "a x"]), ["a x", "a y x", "a x"]);
        assert_eq!(l(&["one"]), ["one"]);
    }
}
