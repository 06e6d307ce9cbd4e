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

/// The Mann–Kendall test without Sen's slope: everything of [`Trend`] but the slope, in
/// O(n log n). For callers that want the slope only when the trend is significant (Sen's slope
/// is O(n²) in time and memory).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrendTest {
    pub n: usize,
    pub s: f64,
    pub var_s: f64,
    pub z: f64,
    pub p_value: f64,
    pub tau: f64,
}

/// The test statistic of [`mann_kendall`] without the slope, on the same (thinned) points.
pub fn mann_kendall_test(xs: &[f64]) -> Option<TrendTest> {
    let (x, _) = points(xs, MAX_POINTS)?;
    Some(test_of(&x))
}

/// NaN dropped, thinned to at most `max_points`; the thinning step. `None` below 3 points.
fn points(xs: &[f64], max_points: usize) -> Option<(Vec<f64>, usize)> {
    let all: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    let step = all.len().div_ceil(max_points).max(1);
    let x: Vec<f64> = all.iter().copied().step_by(step).collect();
    (x.len() >= 3).then_some((x, step))
}

fn test_of(x: &[f64]) -> TrendTest {
    let n = x.len();
    let s = kendall_s(x) as f64;
    let nf = n as f64;
    let ties = tie_groups(x);
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
    TrendTest {
        n,
        s,
        var_s,
        z,
        p_value: erfc(z.abs() / std::f64::consts::SQRT_2).clamp(0.0, 1.0),
        tau: s / (0.5 * nf * (nf - 1.0)),
    }
}

/// Kendall's S = Σ_{i<j} sign(x_j − x_i) in O(n log n): walking the series in order, a
/// Fenwick tree over the ranks of the values seen so far counts how many earlier values are
/// below and above the current one (equal values count for neither). Hand-written: a few
/// lines, and no maintained crate offers the count on its own.
fn kendall_s(x: &[f64]) -> i64 {
    // `+ 0.0` turns −0 into +0: equal under `==`, as the pairwise sign has them.
    let x: Vec<f64> = x.iter().map(|v| v + 0.0).collect();
    let mut sorted: Vec<f64> = x.clone();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup_by(|a, b| a.total_cmp(b).is_eq());
    let rank = |v: f64| sorted.partition_point(|u| u.total_cmp(&v).is_lt());
    let mut tree = vec![0i64; sorted.len() + 1];
    let count_upto = |tree: &[i64], r: usize| -> i64 {
        // Number of seen values with rank < r.
        let (mut i, mut c) = (r, 0);
        while i > 0 {
            c += tree[i];
            i &= i - 1;
        }
        c
    };
    let mut s = 0i64;
    for (seen, &v) in x.iter().enumerate() {
        let r = rank(v);
        let below = count_upto(&tree, r);
        let not_above = count_upto(&tree, r + 1);
        let above = seen as i64 - not_above;
        s += below - above;
        let mut i = r + 1;
        while i < tree.len() {
            tree[i] += 1;
            i += i & i.wrapping_neg();
        }
    }
    s
}

/// Mann–Kendall test of `xs` (in run order) for a monotonic trend; matches
/// `pymannkendall.original_test(xs)` (its `s`, `var_s`, `z`, `p`, `Tau`, `slope`).
///
/// NaN values are dropped and the remaining values treated as consecutive. Cost is O(n²) for
/// Sen's slope (S itself is O(n log n), see [`mann_kendall_test`]); a
/// series longer than 2500 points is thinned to every k-th point (k = ⌈n/2500⌉) first (keeping
/// the pairwise slopes for Sen's estimator under ~25 MB), and the slope rescaled to per-run
/// units. `None` for fewer than 3 points.
pub fn mann_kendall(xs: &[f64]) -> Option<Trend> {
    mann_kendall_thinned(xs, MAX_POINTS)
}

/// [`mann_kendall`] with the series thinned to at most `max_points` (at least 3) points first.
/// Sen's slope costs O(n²): a diagnostic that only needs its size and sign can ask for fewer.
pub fn mann_kendall_thinned(xs: &[f64], max_points: usize) -> Option<Trend> {
    let (x, step) = points(xs, max_points.max(3))?;
    let t = test_of(&x);
    Some(Trend {
        n: t.n,
        s: t.s,
        var_s: t.var_s,
        z: t.z,
        p_value: t.p_value,
        tau: t.tau,
        sen_slope: sen_slope(&x)? / step as f64,
    })
}

#[cfg(test)]
fn naive_s(x: &[f64]) -> i64 {
    let mut s = 0i64;
    for i in 0..x.len().saturating_sub(1) {
        for j in i + 1..x.len() {
            s += sign(x[j] - x[i]);
        }
    }
    s
}

#[cfg(test)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn fast_s_equals_the_pairwise_sum_with_ties() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for n in [3usize, 4, 10, 57, 400] {
            for levels in [2u32, 5, 1000] {
                let x: Vec<f64> = (0..n)
                    .map(|i| {
                        f64::from(rng.gen_range(0..levels))
                            + i as f64 * 0.001 * f64::from(levels % 2)
                    })
                    .collect();
                assert_eq!(kendall_s(&x), naive_s(&x), "n={n} levels={levels}");
            }
        }
        assert_eq!(kendall_s(&[1.0, 2.0, 3.0]), 3);
        assert_eq!(kendall_s(&[3.0, 2.0, 1.0]), -3);
        assert_eq!(kendall_s(&[1.0, 1.0, 1.0]), 0);
        assert_eq!(kendall_s(&[0.0, -0.0, 1.0]), naive_s(&[0.0, -0.0, 1.0]));
    }
}
