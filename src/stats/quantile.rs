//! Sample quantiles with numpy's default definition (Hyndman & Fan type 7, linear
//! interpolation between order statistics), plus helpers to obtain a sorted copy of a sample.

/// Returns a sorted (ascending) copy of `xs` with every NaN removed.
///
/// Infinities are kept and sort to the ends. The sort uses [`f64::total_cmp`], so it never
/// panics; `-0.0` sorts before `+0.0`.
pub fn sorted_without_nan(xs: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// The `p`-quantile (`0 ≤ p ≤ 1`) of an already sorted sample, with linear interpolation
/// between order statistics: `h = (n − 1)·p`, result `x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])`.
///
/// This is numpy's default (`np.quantile(x, p)`, method `"linear"`, Hyndman & Fan type 7).
/// Hand-written because statrs' `OrderStatistics::quantile` implements type 8, which gives
/// different numbers than numpy, R's default and every other tool our users compare with.
/// `sorted` must be ascending and free of NaN (see [`sorted_without_nan`]); this is not checked.
/// Returns `None` for an empty slice or when `p` is NaN or outside `[0, 1]`.
pub fn quantile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=1.0).contains(&p) {
        return None;
    }
    let n = sorted.len();
    let h = (n - 1) as f64 * p;
    let lo = (h.floor() as usize).min(n - 1);
    let hi = (lo + 1).min(n - 1);
    let t = h - lo as f64;
    let (a, b) = (sorted[lo], sorted[hi]);
    if t == 0.0 || a == b {
        return Some(a);
    }
    // Same two-sided form as numpy's `_lerp`, which keeps the result monotone in `t` and
    // exact at both ends.
    let d = b - a;
    Some(if t >= 0.5 {
        b - d * (1.0 - t)
    } else {
        a + d * t
    })
}

/// The median of an already sorted, NaN-free sample: [`quantile`] at `p = 0.5`
/// (mean of the two middle values when `n` is even). `None` if empty.
pub fn median(sorted: &[f64]) -> Option<f64> {
    quantile(sorted, 0.5)
}
