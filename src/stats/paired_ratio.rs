//! The ratio of two programs measured in the same rounds — one process of each per round, in a
//! counterbalanced order, as `tare kernels` runs them — from the per-round log ratios (issue 26).
//!
//! Why pair: on a VM whose speed moves in episodes of seconds, the processes of one round share
//! the machine's state, and most of the spread between processes is that state. An unpaired
//! test (Welch's t on the process values) counts it as noise of each side; the per-round ratio
//! cancels what both sides of a round saw. On a Google Benchmark suite under load (20 rounds,
//! between-process σ 25%), the per-round values of two identical builds correlated 0.07–0.70
//! and the paired p-value was the smaller in 8 of 10 comparisons; on the real C-loop series of
//! `bench/data/` (consecutive runs taken as a round's two sides, in a random order), a 15%
//! change was found at α 0.05 in 42% (10 rounds) and 66% (20 rounds) of windows of the series
//! in speed modes, against Welch's 17% and 34%, and identical sides gave no more false verdicts
//! than Welch (0–4%, 6–20 rounds). See docs/statistics.md.
//!
//! What pairing assumes: rounds independent of each other given the machine's state — the
//! order inside a round is counterbalanced (every program in every position equally often,
//! `method::order`), so a state that favours whichever side runs first or last does not favour
//! one program.
//!
//! The statistic: `d = ln(new) − ln(old)` per round; the ratio `exp(mean d)` (the geometric
//! mean of the per-round ratios), Student's t with `n − 1` degrees of freedom on `d`, the
//! interval `exp(mean d ∓ t·sd/√n)`. Reference values: `scripts/paired_ratio_reference.py`
//! (scipy's `ttest_rel`).

use super::RatioTest;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The paired ratio (exp(mean(ln new − ln old)): the geometric mean of the per-round ratios) of `new` to `old` (same length, one value per round, all positive) at
/// two-sided `confidence`. None with fewer than 3 rounds, unequal lengths, a value that is not
/// positive and finite, or a confidence outside (0, 1).
pub fn paired_ratio(old: &[f64], new: &[f64], confidence: f64) -> Option<RatioTest> {
    if old.len() != new.len() || old.len() < 3 || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let ok = |v: &f64| v.is_finite() && *v > 0.0;
    if !old.iter().all(ok) || !new.iter().all(ok) {
        return None;
    }
    let d: Vec<f64> = old.iter().zip(new).map(|(o, n)| n.ln() - o.ln()).collect();
    let n = d.len() as f64;
    let mean = d.iter().sum::<f64>() / n;
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let df = n - 1.0;
    let ratio = mean.exp();
    if var == 0.0 {
        // Every round gave the same ratio (a deterministic metric): no spread to speak of.
        let p = if mean == 0.0 { 1.0 } else { 0.0 };
        return Some(RatioTest {
            ratio,
            low: ratio,
            high: ratio,
            p_value: p,
            df,
        });
    }
    let se = (var / n).sqrt();
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let q = t.inverse_cdf((1.0 + confidence) / 2.0);
    Some(RatioTest {
        ratio,
        low: (mean - q * se).exp(),
        high: (mean + q * se).exp(),
        p_value: (2.0 * (1.0 - t.cdf((mean / se).abs()))).clamp(0.0, 1.0),
        df,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_scipy_reference() {
        // tests/data/stats/paired_ratio.json, from scripts/paired_ratio_reference.py.
        let json = include_str!("../../tests/data/stats/paired_ratio.json");
        crate::stats::reference::check_ratio(json, 4, paired_ratio);
    }

    #[test]
    fn a_level_both_sides_share_cancels() {
        // Rounds at 1x and 2x the time on both sides alike; new 10% slower in every round.
        let level = [1.0, 2.0, 1.0, 2.0, 2.0, 1.0];
        let old: Vec<f64> = level.iter().map(|l| 40.0 * l).collect();
        let new: Vec<f64> = level
            .iter()
            .enumerate()
            .map(|(i, l)| 44.0 * l * (1.0 + 0.01 * (i % 2) as f64))
            .collect();
        let r = paired_ratio(&old, &new, 0.95).unwrap();
        assert!(r.low > 1.05 && r.high < 1.15 && r.p_value < 1e-4, "{r:?}");
        // The same values unpaired: the levels swamp the change.
        let w = crate::stats::welch_t_test(&old, &new).unwrap();
        assert!(w.p_value > 0.05, "{w:?}");
    }

    #[test]
    fn refuses_what_it_cannot_pair() {
        assert!(paired_ratio(&[1.0, 2.0], &[1.0, 2.0], 0.95).is_none());
        assert!(paired_ratio(&[1.0, 2.0, 3.0], &[1.0, 2.0], 0.95).is_none());
        assert!(paired_ratio(&[1.0, 0.0, 3.0], &[1.0, 2.0, 3.0], 0.95).is_none());
        let same = paired_ratio(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0], 0.95).unwrap();
        assert_eq!((same.ratio, same.p_value), (1.0, 1.0));
    }
}
