//! The ratio of two sides' geometric means from Welch's t on the logs of their values — the
//! interval and the test of one procedure, for comparisons with few processes a side (issue 43).
//!
//! Why: with 3 vs 3 processes the rank test's smallest p-value is 0.1 (all of one side below
//! the other), so it can never reject at α 0.05 however large the change, while a bootstrap of
//! 3 values has only 10 distinct resamples a side and no tail to speak of. Welch's t on the
//! logs has power there (2 or more values a side), and its interval and its p-value are two
//! faces of one test: the interval at level 1 − a excludes 1 exactly when p < a.
//!
//! The statistic: `lx = ln(old)`, `ly = ln(new)`; `d = mean(ly) − mean(lx)`,
//! `se = √(var(lx)/n_x + var(ly)/n_y)` (sample variances, n − 1), Welch–Satterthwaite degrees
//! of freedom; the ratio `exp(d)`, the interval `exp(d ∓ t.ppf((1+c)/2, df)·se)`, the p-value
//! `2·t.sf(|d|/se, df)`. As `scipy.stats.ttest_ind(ln new, ln old, equal_var=False)` and its
//! `confidence_interval(c)`. Reference values: `scripts/welch_ratio_reference.py`.

use super::RatioTest;
use statrs::distribution::{ContinuousCDF, StudentsT};

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (
        m,
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0),
    )
}

/// The Welch ratio of `new` to `old` (exp(mean(ln new) − mean(ln old)): the ratio of the
/// geometric means; Welch–Satterthwaite degrees of freedom) at two-sided `confidence`. None with fewer than 2 values a
/// side, a value that is not positive and finite, or a confidence outside (0, 1). Where neither
/// side spreads (a deterministic metric) the interval is the ratio itself, with p 1 if the
/// sides are equal and 0 otherwise.
pub fn welch_log_ratio(old: &[f64], new: &[f64], confidence: f64) -> Option<RatioTest> {
    if old.len() < 2 || new.len() < 2 || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let ok = |v: &f64| v.is_finite() && *v > 0.0;
    if !old.iter().all(ok) || !new.iter().all(ok) {
        return None;
    }
    let lx: Vec<f64> = old.iter().map(|v| v.ln()).collect();
    let ly: Vec<f64> = new.iter().map(|v| v.ln()).collect();
    let ((mx, vx), (my, vy)) = (mean_var(&lx), mean_var(&ly));
    let (wx, wy) = (vx / lx.len() as f64, vy / ly.len() as f64);
    let se2 = wx + wy;
    let d = my - mx;
    let ratio = d.exp();
    if se2 == 0.0 {
        let p = if d == 0.0 { 1.0 } else { 0.0 };
        return Some(RatioTest {
            ratio,
            low: ratio,
            high: ratio,
            p_value: p,
            df: f64::NAN,
        });
    }
    let df = se2 * se2 / (wx * wx / (lx.len() - 1) as f64 + wy * wy / (ly.len() - 1) as f64);
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let q = t.inverse_cdf((1.0 + confidence) / 2.0);
    let se = se2.sqrt();
    Some(RatioTest {
        ratio,
        low: (d - q * se).exp(),
        high: (d + q * se).exp(),
        p_value: (2.0 * t.sf((d / se).abs())).clamp(0.0, 1.0),
        df,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_scipy_reference() {
        // tests/data/stats/welch_ratio.json, from scripts/welch_ratio_reference.py.
        let json = include_str!("../../tests/data/stats/welch_ratio.json");
        crate::stats::reference::check_ratio(json, 4, welch_log_ratio);
    }

    #[test]
    fn the_interval_excludes_one_exactly_when_p_is_below_its_level() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(43);
        for _ in 0..2000 {
            let n = rng.gen_range(2..6);
            let m = rng.gen_range(2..6);
            let shift = rng.gen_range(0.8..1.25);
            let old: Vec<f64> = (0..n).map(|_| rng.gen_range(0.9..1.1)).collect();
            let new: Vec<f64> = (0..m).map(|_| shift * rng.gen_range(0.9..1.1)).collect();
            let level: f64 = [0.95, 0.975, 0.99][rng.gen_range(0..3)];
            let r = welch_log_ratio(&old, &new, level).unwrap();
            assert_eq!(
                r.low > 1.0 || r.high < 1.0,
                r.p_value < 1.0 - level,
                "{r:?} at {level}"
            );
        }
    }

    #[test]
    fn three_a_side_can_find_a_clear_change() {
        let old = [10.1e-3, 10.2e-3, 10.15e-3];
        let new = [20.2e-3, 20.1e-3, 20.3e-3];
        let r = welch_log_ratio(&old, &new, 0.95).unwrap();
        assert!(r.low > 1.9 && r.high < 2.1 && r.p_value < 1e-4, "{r:?}");
    }

    #[test]
    fn refuses_what_it_cannot_take_logs_of() {
        assert!(welch_log_ratio(&[1.0], &[1.0, 2.0], 0.95).is_none());
        assert!(welch_log_ratio(&[1.0, 0.0], &[1.0, 2.0], 0.95).is_none());
        assert!(welch_log_ratio(&[1.0, 2.0], &[1.0, 2.0], 1.0).is_none());
        let same = welch_log_ratio(&[2.0, 2.0], &[2.0, 2.0], 0.95).unwrap();
        assert_eq!((same.ratio, same.p_value), (1.0, 1.0));
    }
}
