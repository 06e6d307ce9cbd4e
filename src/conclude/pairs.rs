//! The verdict of a head to head inside one process (`tare kernels --baseline`, issue 46):
//! each process gave one paired log ratio of a kernel to the baseline (the median of its
//! alternated blocks' ratios, `method::kernels::pairs`); the processes are the unit of
//! replication, so the ratio is `exp(mean)` of those log ratios with Student's t over them
//! (`stats::paired_ratio`) at the level the one verdict procedure uses for m comparisons,
//! 1 − α/m (Bonferroni, as `conclude::levels`), and the verdict is that interval's: slower or
//! faster where it excludes 1, no significant difference where it includes 1.
//!
//! Pure: takes the per-process log ratios, returns the record. Not for: taking the samples or
//! the stop rule's bookkeeping (`method::kernels::pairs`), or printing (`cli::kernels`).

use crate::stats;
use serde::Serialize;

/// Fewest processes a verdict is drawn from (Student's t needs two; three give it an interval
/// that is not absurdly wide at 1 − α/m).
pub const MIN_PROCESSES: usize = 3;

/// A kernel against the baseline over the processes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairVerdict {
    /// Time per loop of the kernel / of the baseline: the geometric mean of the processes'.
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    /// Level of the interval: 1 − α/m.
    pub confidence: f64,
    pub p_value: f64,
    pub processes: usize,
    /// "slower", "faster" or "no significant difference".
    pub verdict: String,
}

/// The level of the interval for `m` comparisons at `alpha`: 1 − α/m.
pub fn level(alpha: f64, m: usize) -> f64 {
    1.0 - alpha / m.max(1) as f64
}

/// The verdict over the processes' log ratios (ln(kernel/baseline), one a process), at
/// `confidence`. None with fewer than [`MIN_PROCESSES`], or a value that is not finite.
pub fn verdict(logs: &[f64], confidence: f64) -> Option<PairVerdict> {
    if logs.len() < MIN_PROCESSES || !logs.iter().all(|x| x.is_finite()) {
        return None;
    }
    let ones = vec![1.0; logs.len()];
    let new: Vec<f64> = logs.iter().map(|x| x.exp()).collect();
    let p = stats::paired_ratio::paired_ratio(&ones, &new, confidence)?;
    let verdict = if p.low > 1.0 {
        "slower"
    } else if p.high < 1.0 {
        "faster"
    } else {
        "no significant difference"
    };
    Some(PairVerdict {
        ratio: p.ratio,
        low: p.low,
        high: p.high,
        confidence,
        p_value: p.p_value,
        processes: logs.len(),
        verdict: verdict.into(),
    })
}

/// Half the width of the verdict's interval on the log scale (≈ the relative ± of the ratio):
/// what the adaptive stop compares with `--precision`.
pub fn half_width(v: &PairVerdict) -> f64 {
    (v.high.ln() - v.low.ln()) / 2.0
}

/// The within-process interval of one process's paired log ratios (one a pair of blocks): the
/// median ratio with the 95% order-statistic interval of the median, as ratios.
pub fn within(logs: &[f64]) -> Option<(f64, f64, f64)> {
    let d = stats::describe(logs)?;
    Some((
        d.median.exp(),
        d.median_ci_low.exp(),
        d.median_ci_high.exp(),
    ))
}

/// The verdict's line: `more3 vs base: 1.030× [1.024, 1.036] slower`, digits from the
/// interval's width (`stats::compare::decimals`, at least three so 0.5% shows).
pub fn line(name: &str, baseline: &str, v: &PairVerdict) -> String {
    let d = stats::compare::decimals(v.low, v.high).max(3);
    format!(
        "{name} vs {baseline}: {:.d$}× [{:.d$}, {:.d$}] {}",
        v.ratio, v.low, v.high, v.verdict
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_over_processes_is_called_where_its_interval_excludes_one() {
        // 3% more work, processes within ±0.1%: slower, the interval around 1.03.
        let logs: Vec<f64> = [1.029, 1.031, 1.030, 1.0305, 1.0295]
            .iter()
            .map(|r: &f64| r.ln())
            .collect();
        let v = verdict(&logs, level(0.05, 2)).unwrap();
        assert_eq!(v.verdict, "slower");
        assert!(v.low > 1.0 && v.low < 1.03 && v.high > 1.03, "{v:?}");
        assert!((v.confidence - 0.975).abs() < 1e-12);
        assert!(line("more3", "base", &v).starts_with("more3 vs base: 1.030× [1.02"));
        // Identical kernels: the interval holds 1.
        let aa: Vec<f64> = [1.001, 0.999, 1.0005, 0.9995, 1.0]
            .iter()
            .map(|r: &f64| r.ln())
            .collect();
        let v = verdict(&aa, level(0.05, 1)).unwrap();
        assert_eq!(v.verdict, "no significant difference");
        assert!(v.low < 1.0 && v.high > 1.0);
        assert!(half_width(&v) < 0.002, "{v:?}");
        // Faster, and too few processes.
        let fast: Vec<f64> = [0.9, 0.91, 0.89].iter().map(|r: &f64| r.ln()).collect();
        assert_eq!(verdict(&fast, 0.95).unwrap().verdict, "faster");
        assert_eq!(verdict(&fast[..2], 0.95), None);
        assert_eq!(verdict(&[0.0, f64::NAN, 0.0], 0.95), None);
    }

    #[test]
    fn a_process_says_its_own_interval() {
        let logs: Vec<f64> = (0..20).map(|i| 0.03 + 0.001 * (i % 5) as f64).collect();
        let (m, lo, hi) = within(&logs).unwrap();
        assert!(lo <= m && m <= hi && lo > 1.0, "{lo} {m} {hi}");
    }
}
