//! Mann–Kendall test for a monotonic trend over run order, with Sen's slope.
//!
//! Hand-written (statrs has neither); the normal tail uses statrs' `erfc`.

use serde::{Deserialize, Serialize};
use statrs::function::erf::erfc;

use super::quantile::sorted_without_nan;

/// Largest series analysed point by point; longer series are thinned (see [`mann_kendall`]).
const MAX_POINTS: usize = 2500;

/// Result of the Mann–Kendall trend test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// Number of points used (after dropping NaN and any thinning).
    pub n: usize,
    /// Kendall's S: `Σ_{i<j} sign(x_j − x_i)`.
    pub s: f64,
    /// Variance of S under no trend, tie-corrected:
    /// `[n(n−1)(2n+5) − Σ t(t−1)(2t+5)] / 18`.
    pub var_s: f64,
    /// Standardised statistic with continuity correction: `(S − 1)/√var` if S > 0,
    /// `(S + 1)/√var` if S < 0, 0 if S = 0 (or var = 0).
    pub z: f64,
    /// Two-sided p-value `2·(1 − Φ(|z|))`.
    pub p_value: f64,
    /// Kendall's tau-a against time: `S / (n(n−1)/2)`.
    pub tau: f64,
    /// Sen's slope: median of `(x_j − x_i)/(j − i)` over all pairs `i < j`, in units per run
    /// (per position in the original series, also when thinned).
    pub sen_slope: f64,
}

/// Mann–Kendall test of `xs` (in run order) for a monotonic trend; matches
/// `pymannkendall.original_test(xs)` (its `s`, `var_s`, `z`, `p`, `Tau`, `slope`).
///
/// NaN values are dropped and the remaining values treated as consecutive. Cost is O(n²); a
/// series longer than 2500 points is thinned to every k-th point (k = ⌈n/2500⌉) first (keeping
/// the pairwise slopes for Sen's estimator under ~25 MB), and the slope rescaled to per-run
/// units. `None` for fewer than 3 points.
pub fn mann_kendall(xs: &[f64]) -> Option<Trend> {
    let all: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    let step = all.len().div_ceil(MAX_POINTS).max(1);
    let x: Vec<f64> = all.iter().copied().step_by(step).collect();
    let n = x.len();
    if n < 3 {
        return None;
    }
    let mut s = 0i64;
    for i in 0..n - 1 {
        for j in i + 1..n {
            s += sign(x[j] - x[i]);
        }
    }
    let s = s as f64;
    let nf = n as f64;
    let ties = tie_groups(&x);
    let tie_sum: f64 = ties
        .iter()
        .map(|&t| {
            let t = t as f64;
            t * (t - 1.0) * (2.0 * t + 5.0)
        })
        .sum();
    let var_s = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - tie_sum) / 18.0;
    let z = if var_s <= 0.0 || s == 0.0 {
        0.0
    } else if s > 0.0 {
        (s - 1.0) / var_s.sqrt()
    } else {
        (s + 1.0) / var_s.sqrt()
    };
    Some(Trend {
        n,
        s,
        var_s,
        z,
        p_value: erfc(z.abs() / std::f64::consts::SQRT_2).clamp(0.0, 1.0),
        tau: s / (0.5 * nf * (nf - 1.0)),
        sen_slope: sen_slope(&x)? / step as f64,
    })
}

fn sign(d: f64) -> i64 {
    if d > 0.0 {
        1
    } else if d < 0.0 {
        -1
    } else {
        0
    }
}

/// Sizes of groups of equal values (size > 1 only).
fn tie_groups(x: &[f64]) -> Vec<usize> {
    let s = sorted_without_nan(x);
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let j = i + s[i..].iter().take_while(|&&v| v == s[i]).count();
        if j - i > 1 {
            out.push(j - i);
        }
        i = j;
    }
    out
}

/// Median of all pairwise slopes (x_j − x_i)/(j − i), i < j, found by selection in O(n²)
/// rather than by sorting the n(n−1)/2 slopes. Non-finite slopes (from infinite inputs) are
/// dropped, like numpy's `nanmedian` drops NaN.
fn sen_slope(x: &[f64]) -> Option<f64> {
    let n = x.len();
    let mut d = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n - 1 {
        for j in i + 1..n {
            let s = (x[j] - x[i]) / (j - i) as f64;
            if s.is_finite() {
                d.push(s);
            }
        }
    }
    if d.is_empty() {
        return None;
    }
    let (len, mid) = (d.len(), d.len() / 2);
    let (left, &mut upper, _) = d.select_nth_unstable_by(mid, f64::total_cmp);
    if len % 2 == 1 {
        return Some(upper);
    }
    let lower = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // Same arithmetic as `quantile(.., 0.5)`.
    Some(if lower == upper {
        upper
    } else {
        upper - (upper - lower) * 0.5
    })
}
