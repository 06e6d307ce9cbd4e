//! One-sample summaries: location, spread, quartiles and a distribution-free confidence
//! interval for the median (the order-statistic / binomial interval).

use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, DiscreteCDF};

use super::quantile::{median, quantile, sorted_without_nan};

/// Summary of one sample. NaN values are ignored; `n` counts the values that were used.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Describe {
    /// Number of non-NaN values summarised.
    pub n: usize,
    /// Sample median (type-7 quantile at 0.5, i.e. `np.median`).
    pub median: f64,
    /// Lower end of the 95% order-statistic confidence interval for the median (see
    /// [`median_ci`]); the sample minimum when `median_ci_exact` is false.
    pub median_ci_low: f64,
    /// Upper end of the 95% order-statistic confidence interval for the median; the sample
    /// maximum when `median_ci_exact` is false.
    pub median_ci_high: f64,
    /// True when `[median_ci_low, median_ci_high]` is a genuine interval with coverage ≥ 95%.
    /// False when n < 6: no pair of order statistics reaches 95% then, so the bounds are just
    /// min and max and callers should say "too few runs for a 95% interval".
    pub median_ci_exact: bool,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation with the `n − 1` denominator (`np.std(x, ddof=1)`); 0 when n = 1.
    pub stddev: f64,
    /// Coefficient of variation `stddev / mean`; 0 when `mean == 0`.
    pub cv: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// First quartile (type-7 quantile at 0.25).
    pub q1: f64,
    /// Third quartile (type-7 quantile at 0.75).
    pub q3: f64,
    /// Interquartile range `q3 − q1`.
    pub iqr: f64,
    /// 5th percentile (type-7).
    pub p5: f64,
    /// 95th percentile (type-7).
    pub p95: f64,
}

/// Summarises `xs` (NaN ignored). `None` when no non-NaN value is left.
///
/// Quantiles use numpy's default linear interpolation; the median interval is
/// [`median_ci`] at 95%.
pub fn describe(xs: &[f64]) -> Option<Describe> {
    let s = sorted_without_nan(xs);
    let n = s.len();
    let med = median(&s)?;
    let mean = s.iter().sum::<f64>() / n as f64;
    // Two-pass variance on the sorted copy we already hold: numerically safer than a one-pass
    // sum of squares, and as accurate as statrs' `Statistics::variance` (which would need the
    // values again as an iterator).
    let stddev = if n > 1 {
        (s.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let cv = if mean == 0.0 { 0.0 } else { stddev / mean };
    let (q1, q3) = (quantile(&s, 0.25)?, quantile(&s, 0.75)?);
    let (min, max) = (s[0], s[n - 1]);
    let ci = median_ci(&s, 0.95);
    let (lo, hi) = ci.unwrap_or((min, max));
    Some(Describe {
        n,
        median: med,
        median_ci_low: lo,
        median_ci_high: hi,
        median_ci_exact: ci.is_some(),
        mean,
        stddev,
        cv,
        min,
        max,
        q1,
        q3,
        iqr: q3 - q1,
        p5: quantile(&s, 0.05)?,
        p95: quantile(&s, 0.95)?,
    })
}

/// 1-based rank `k` of the lower order statistic of the two-sided distribution-free
/// confidence interval for the median at level `confidence`; the interval is
/// `[x_(k), x_(n−k+1)]`.
///
/// With `X ~ Binomial(n, 1/2)` and `a = (1 − confidence)/2`, `k` is the smallest integer with
/// `P(X ≤ k) ≥ a` (the binomial `ppf(a)`), exactly as `scipy.stats.quantile_test(x, p=0.5)
/// .confidence_interval(confidence)` chooses it. Then `P(X ≤ k − 1) < a`, so the coverage
/// `1 − 2·P(X ≤ k − 1)` is at least `confidence` (for continuous data). `None` when `k = 0`,
/// i.e. even `[min, max]` does not reach the requested level (n < 6 at 95%), or when
/// `confidence` is not strictly between 0 and 1.
pub fn median_ci_rank(n: usize, confidence: f64) -> Option<usize> {
    if n == 0 || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let a = (1.0 - confidence) / 2.0;
    // statrs' Binomial CDF (regularised incomplete beta) costs O(1); bisection over k keeps the
    // whole computation O(log n) so it is cheap enough to run after every measured run.
    let bin = Binomial::new(0.5, n as u64).ok()?;
    let (mut lo, mut hi) = (0u64, n as u64); // invariant: cdf(hi) >= a
    if bin.cdf(0) >= a {
        return None;
    }
    // now cdf(lo) < a <= cdf(hi)
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if bin.cdf(mid) >= a {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let k = hi as usize;
    // k ≤ n/2 always holds for a < 1/2; guard anyway so indexing can never go wrong.
    if k == 0 || 2 * k > n + 1 {
        return None;
    }
    Some(k)
}

/// Distribution-free two-sided confidence interval for the median of an already sorted,
/// NaN-free sample: `(x_(k), x_(n−k+1))` with `k` from [`median_ci_rank`] (1-based order
/// statistics). Matches `scipy.stats.quantile_test(x, q=median, p=0.5)
/// .confidence_interval(confidence)`. Coverage is ≥ `confidence` for continuous data.
/// `None` if the sample is too small for that level (n < 6 at 95%) or `confidence` is not in
/// (0, 1).
pub fn median_ci(sorted: &[f64], confidence: f64) -> Option<(f64, f64)> {
    let n = sorted.len();
    let k = median_ci_rank(n, confidence)?;
    Some((sorted[k - 1], sorted[n - k]))
}

/// Relative half-width of the 95% median interval: `max(median − low, high − median) /
/// |median|`, for the adaptive stop rule. Sorts a copy (O(n log n)); NaN ignored.
/// `None` when n < 6 (no 95% interval exists) or the median is 0.
pub fn relative_median_ci_halfwidth(xs: &[f64]) -> Option<f64> {
    let s = sorted_without_nan(xs);
    let m = median(&s)?;
    let (lo, hi) = median_ci(&s, 0.95)?;
    if m == 0.0 {
        return None;
    }
    Some((m - lo).max(hi - m) / m.abs())
}
