//! Confidence intervals of a proportion (k successes in n trials): Wilson's score interval
//! (tare's default for success rates: good coverage at small n, never outside [0, 1]) and the
//! Clopper–Pearson "exact" interval (conservative). Pure functions; reference values from
//! statsmodels and scipy (`scripts/binomial_reference.py`).

use statrs::distribution::{ContinuousCDF, Normal};

/// The two-sided normal quantile for `confidence` (1.96 for 0.95).
fn z(confidence: f64) -> f64 {
    let n = Normal::new(0.0, 1.0).expect("standard normal");
    n.inverse_cdf(1.0 - (1.0 - confidence) / 2.0)
}

/// Wilson score interval (no continuity correction), as statsmodels' `method="wilson"`.
/// `None` when `n == 0` or `k > n`.
pub fn wilson(k: u64, n: u64, confidence: f64) -> Option<(f64, f64)> {
    if n == 0 || k > n {
        return None;
    }
    let (k, n) = (k as f64, n as f64);
    let z = z(confidence);
    let p = k / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    Some(((center - half).max(0.0), (center + half).min(1.0)))
}

/// Clopper–Pearson interval from the beta distribution's quantiles, as statsmodels'
/// `method="beta"`. `None` when `n == 0` or `k > n`.
pub fn clopper_pearson(k: u64, n: u64, confidence: f64) -> Option<(f64, f64)> {
    if n == 0 || k > n {
        return None;
    }
    let a = (1.0 - confidence) / 2.0;
    let (kf, nf) = (k as f64, n as f64);
    let lo = if k == 0 {
        0.0
    } else {
        statrs::function::beta::inv_beta_reg(kf, nf - kf + 1.0, a)
    };
    let hi = if k == n {
        1.0
    } else {
        statrs::function::beta::inv_beta_reg(kf + 1.0, nf - kf, 1.0 - a)
    };
    Some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degenerate_inputs() {
        assert_eq!(wilson(0, 0, 0.95), None);
        assert_eq!(wilson(3, 2, 0.95), None);
        let (lo, hi) = wilson(0, 10, 0.95).unwrap();
        assert!(lo.abs() < 1e-12, "{lo}");
        assert!(hi > 0.2 && hi < 0.35);
        assert_eq!(clopper_pearson(10, 10, 0.95).unwrap().1, 1.0);
    }
}
