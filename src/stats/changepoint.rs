//! Change points in a series: E-divisive means (Matteson & James 2014, α = 1) with a
//! permutation test, the method MongoDB's `signal-processing-algorithms` package and Hunter /
//! Apache Otava use for performance history.
//!
//! For a window `x[a..b)` and a split `τ`, with X = `x[a..τ)` (n values) and Y = `x[τ..b)` (m
//! values), the statistic is `t(τ) = n·m/(n+m) · (2·ΣX,Y|x−y|/(n·m) − ΣX,X|x−x'|/n² −
//! ΣY,Y|y−y'|/m²)` (sums over ordered pairs, so the within-sample terms are V-statistics, as in
//! the package). The best split of every window bounded by the change points found so far is a
//! candidate; the strongest candidate is tested by permuting each window's values
//! (`permutations` times) and counting how often the largest permuted statistic reaches it; it
//! is kept when `p ≤ alpha`, and the search repeats until a candidate fails.
//!
//! Differences from the package, on purpose: the p-value is `(k + 1)/(permutations + 1)` (the
//! package's `k/(permutations + 1)` can be 0), the permutations are drawn from a seeded ChaCha
//! generator so a result is reproducible, and a segment is at least `min_size` values long (the
//! package allows 1: a single outlying commit then looks like a change). With `min_size = 1`
//! the statistics and the best split are the package's (`tests/stats_changepoint.rs`, reference
//! values from `scripts/changepoint_reference.py`).
//!
//! Pure: no I/O. What is a commit, a machine or an alert is the store's business
//! (`crate::store::detect`).

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Settings of [`e_divisive`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Largest permutation p-value at which a change point is kept.
    pub alpha: f64,
    /// Permutations per test (the smallest p-value is `1/(permutations + 1)`).
    pub permutations: usize,
    /// Fewest values on each side of a change point.
    pub min_size: usize,
    /// Seed of the permutations.
    pub seed: u64,
    /// Also search the end of the second segment (Matteson & James's κ): the statistic of a
    /// split τ is the largest over `Y = x[τ..κ)` for every κ, not only `κ = end`. A temporary
    /// level (a regression fixed a few commits later) is then found; with `false` the
    /// statistic is the package's. Windows longer than [`KAPPA_MAX_WINDOW`] use `false`.
    pub kappa: bool,
}

/// Longest window searched over κ (its table of prefix sums is O(n²) memory).
pub const KAPPA_MAX_WINDOW: usize = 2000;

impl Default for Settings {
    /// α = 0.01, 199 permutations, segments of at least 3 values, seed 0.
    fn default() -> Self {
        Settings {
            alpha: 0.01,
            permutations: 199,
            min_size: 3,
            seed: 0,
            kappa: true,
        }
    }
}

/// One change point: the series changes between `index − 1` and `index`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    /// First index of the new segment.
    pub index: usize,
    /// Permutation p-value of the test that accepted it.
    pub p_value: f64,
    /// The statistic `t(τ)` at the split, within the window it was found in.
    pub statistic: f64,
}

/// E-statistic, test statistic and coefficient of inhomogeneity of two samples, as the
/// package's `get_energy_statistics` (`e`, `t`, `h`). `None` when either sample is empty or
/// holds NaN.
pub fn energy_statistics(x: &[f64], y: &[f64]) -> Option<(f64, f64, f64)> {
    if x.is_empty() || y.is_empty() || x.iter().chain(y).any(|v| v.is_nan()) {
        return None;
    }
    let sum = |a: &[f64], b: &[f64]| -> f64 {
        a.iter()
            .map(|p| b.iter().map(|q| (p - q).abs()).sum::<f64>())
            .sum()
    };
    let (n, m) = (x.len() as f64, y.len() as f64);
    let xy = sum(x, y) / (n * m);
    let xx = sum(x, x) / (n * n);
    let yy = sum(y, y) / (m * m);
    let e = 2.0 * xy - xx - yy;
    let t = n * m / (n + m) * e;
    let h = if xy > 0.0 { e / (2.0 * xy) } else { 0.0 };
    Some((e, t, h))
}

/// `t(τ)` for every split `τ` in `0..xs.len()` (τ = 0 gives 0), as the package's
/// `_calculate_t_stats`. O(n²) time, O(n) memory.
pub fn t_statistics(xs: &[f64]) -> Vec<f64> {
    let len = xs.len();
    let mut out = vec![0.0; len];
    // Row sums of the distance matrix restricted to later / earlier columns are updated as τ
    // moves right: xy = Σ_{i<τ≤j} d, x = Σ_{i<j<τ} d, y = Σ_{τ≤i<j} d.
    let mut y: f64 = 0.0;
    for i in 0..len {
        for j in i + 1..len {
            y += (xs[i] - xs[j]).abs();
        }
    }
    let (mut x, mut xy) = (0.0f64, 0.0f64);
    for tau in 0..len {
        let (n, m) = (tau as f64, (len - tau) as f64);
        let xy_avg = if tau > 0 { xy / (n * m) } else { 0.0 };
        let x_avg = if tau > 0 { 2.0 * x / (n * n) } else { 0.0 };
        let y_avg = 2.0 * y / (m * m);
        out[tau] = n * m / (n + m) * (2.0 * xy_avg - x_avg - y_avg);
        let column: f64 = xs[..tau].iter().map(|v| (v - xs[tau]).abs()).sum();
        let row: f64 = xs[tau + 1..].iter().map(|v| (v - xs[tau]).abs()).sum();
        xy = xy - column + row;
        x += column;
        y -= row;
    }
    out
}

/// The best split `(τ, max over κ of t(τ, κ))` with X = `xs[..τ)`, Y = `xs[τ..κ)`, both at
/// least `min_size` long. O(n²) time and memory: row prefix sums of the distance matrix make
/// each step of κ O(1).
pub fn best_split_kappa(xs: &[f64], min_size: usize) -> Option<(usize, f64)> {
    let min_size = min_size.max(1);
    let len = xs.len();
    if len < 2 * min_size {
        return None;
    }
    // p[k * (len + 1) + j] = Σ_{i < j} |x_k − x_i|
    let w = len + 1;
    let mut p = vec![0.0f64; len * w];
    for k in 0..len {
        let row = &mut p[k * w..(k + 1) * w];
        for j in 0..len {
            row[j + 1] = row[j] + (xs[k] - xs[j]).abs();
        }
    }
    let mut best: Option<(usize, f64)> = None;
    let mut within_x = 0.0f64; // Σ_{i<j<τ} d
    for tau in 1..len {
        within_x += p[(tau - 1) * w + (tau - 1)];
        if tau < min_size || len - tau < min_size {
            continue;
        }
        let n = tau as f64;
        let (mut between, mut within_y) = (0.0f64, 0.0f64);
        for kappa in tau + 1..=len {
            let k = kappa - 1; // the element added to Y
            between += p[k * w + tau];
            within_y += p[k * w + k] - p[k * w + tau];
            let m = (kappa - tau) as f64;
            if kappa - tau < min_size {
                continue;
            }
            let e = 2.0 * between / (n * m) - 2.0 * within_x / (n * n) - 2.0 * within_y / (m * m);
            let t = n * m / (n + m) * e;
            if best.is_none_or(|(_, b)| t > b) {
                best = Some((tau, t));
            }
        }
    }
    best
}

/// The best split of `xs` with at least `min_size` values on each side: `(τ, t(τ))`.
fn best_split_with(xs: &[f64], min_size: usize, kappa: bool) -> Option<(usize, f64)> {
    if kappa && xs.len() <= KAPPA_MAX_WINDOW {
        best_split_kappa(xs, min_size)
    } else {
        best_split(xs, min_size)
    }
}

/// The best split with Y running to the end (the package's statistic).
fn best_split(xs: &[f64], min_size: usize) -> Option<(usize, f64)> {
    let min_size = min_size.max(1);
    if xs.len() < 2 * min_size {
        return None;
    }
    let t = t_statistics(xs);
    let mut best: Option<(usize, f64)> = None;
    for (tau, &v) in t
        .iter()
        .enumerate()
        .take(xs.len() - min_size + 1)
        .skip(min_size)
    {
        if best.is_none_or(|(_, b)| v > b) {
            best = Some((tau, v));
        }
    }
    best
}

/// Change points of `xs` by E-divisive means with a permutation test (see the module
/// documentation), sorted by index. NaN values make the result empty; so does a series too
/// short to hold two segments of `min_size`.
pub fn e_divisive(xs: &[f64], settings: &Settings) -> Vec<ChangePoint> {
    if xs.iter().any(|v| !v.is_finite()) {
        return Vec::new();
    }
    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
    let mut found: Vec<ChangePoint> = Vec::new();
    let mut memo: std::collections::HashMap<(usize, usize), Option<(usize, f64)>> =
        Default::default();
    loop {
        let mut bounds: Vec<usize> = found.iter().map(|c| c.index).collect();
        bounds.push(0);
        bounds.push(xs.len());
        bounds.sort_unstable();
        let windows: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
        let mut best: Option<(usize, f64)> = None;
        for &(a, b) in &windows {
            let c = *memo.entry((a, b)).or_insert_with(|| {
                best_split_with(&xs[a..b], settings.min_size, settings.kappa)
                    .map(|(t, v)| (t + a, v))
            });
            if let Some((tau, v)) = c {
                if best.is_none_or(|(_, bv)| v > bv) {
                    best = Some((tau, v));
                }
            }
        }
        let Some((tau, stat)) = best else { break };
        let mut reached = 0usize;
        let mut scratch: Vec<f64> = Vec::new();
        for _ in 0..settings.permutations {
            let mut top = f64::NEG_INFINITY;
            for &(a, b) in &windows {
                scratch.clear();
                scratch.extend_from_slice(&xs[a..b]);
                scratch.shuffle(&mut rng);
                if let Some((_, v)) = best_split_with(&scratch, settings.min_size, settings.kappa) {
                    top = top.max(v);
                }
            }
            if top >= stat {
                reached += 1;
            }
        }
        let p = (reached + 1) as f64 / (settings.permutations + 1) as f64;
        if p > settings.alpha {
            break;
        }
        found.push(ChangePoint {
            index: tau,
            p_value: p,
            statistic: stat,
        });
    }
    found.sort_by_key(|c| c.index);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_match_the_direct_sums() {
        let xs = [1.0, 2.0, 1.5, 8.0, 9.0, 8.5, 9.5];
        let t = t_statistics(&xs);
        for tau in 1..xs.len() {
            let (_, direct, _) = energy_statistics(&xs[..tau], &xs[tau..]).unwrap();
            assert!(
                (t[tau] - direct).abs() < 1e-9,
                "τ={tau}: {} vs {direct}",
                t[tau]
            );
        }
        assert_eq!(t[0], 0.0);
        // κ = end is among the κ searched: the κ statistic is at least the package's.
        let (_, plain) = best_split(&xs, 1).unwrap();
        let (_, with_kappa) = best_split_kappa(&xs, 1).unwrap();
        assert!(with_kappa >= plain - 1e-12);
    }

    #[test]
    fn kappa_search_finds_a_temporary_level() {
        let mut xs: Vec<f64> = (0..30).map(|i| 100.0 + (i % 4) as f64 * 0.1).collect();
        for v in &mut xs[10..20] {
            *v += 10.0;
        }
        let got: Vec<usize> = e_divisive(&xs, &Settings::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(got, vec![10, 20]);
    }

    #[test]
    fn finds_a_clear_step_and_nothing_in_a_constant_series() {
        let mut xs = vec![10.0; 20];
        xs.extend(vec![12.0; 20]);
        for (i, v) in xs.iter_mut().enumerate() {
            *v += (i % 3) as f64 * 0.01;
        }
        let cps = e_divisive(&xs, &Settings::default());
        assert_eq!(cps.iter().map(|c| c.index).collect::<Vec<_>>(), vec![20]);
        assert!(cps[0].p_value <= 0.01);
        assert!(e_divisive(&[5.0; 30], &Settings::default()).is_empty());
        assert!(e_divisive(&[1.0, 2.0], &Settings::default()).is_empty());
        assert!(e_divisive(&[1.0, f64::NAN, 3.0, 4.0, 5.0, 6.0], &Settings::default()).is_empty());
    }
}
