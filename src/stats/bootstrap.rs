//! Seeded bootstrap confidence interval for the ratio of two medians (candidate / reference),
//! unpaired or paired by round, with percentile or BCa (bias-corrected and accelerated)
//! intervals.
//!
//! Hand-written (statrs has no resampling); normal CDF and quantile come from statrs' `erfc`
//! and `erfc_inv`.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use statrs::function::erf::{erfc, erfc_inv};

use super::quantile::{median, quantile};

/// A point estimate with a two-sided confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Point estimate computed on the original samples.
    pub estimate: f64,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Nominal two-sided confidence level, e.g. 0.95.
    pub confidence: f64,
}

/// How the bootstrap distribution is turned into an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BootstrapMethod {
    /// The `(1 − c)/2` and `(1 + c)/2` quantiles of the bootstrap ratios
    /// (scipy `method="percentile"`).
    Percentile,
    /// Efron's BCa: the quantiles are moved by a bias correction `z0` and a jackknife
    /// acceleration `a` (scipy `method="BCa"`, same formulas).
    Bca,
}

/// Bootstrap confidence interval for `median(candidate) / median(reference)` with
/// [`BootstrapMethod::Percentile`]; see [`bootstrap_ratio_of_medians_with`].
///
/// Percentile is the default because it is the conservative choice for this lumpy statistic.
/// In 2000-trial simulations (lognormal, CV 2%, 2000 resamples, true ratio 1.02) its 95%
/// intervals covered 96–97% unpaired and 97–98% paired for n = 10…100, while BCa covered
/// ≈ 95% unpaired but only 91–95% paired (91% at n = 10). Use
/// [`bootstrap_ratio_of_medians_with`] to choose BCa.
pub fn bootstrap_ratio_of_medians(
    reference: &[f64],
    candidate: &[f64],
    paired: bool,
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<Interval> {
    bootstrap_ratio_of_medians_with(
        reference,
        candidate,
        paired,
        confidence,
        resamples,
        seed,
        BootstrapMethod::Percentile,
    )
}

/// Bootstrap confidence interval for `median(candidate) / median(reference)`.
///
/// Direction: the ratio is **candidate over reference**, so for run times a ratio > 1 means the
/// candidate is slower and < 1 means it is faster. `estimate` is the ratio of the sample
/// medians (numpy `median`).
///
/// * Unpaired (`paired = false`): each resample draws `n_ref` values from `reference` and,
///   independently, `n_cand` values from `candidate`, with replacement. NaN values are dropped
///   from each sample first.
/// * Paired (`paired = true`): the samples are rounds, `reference[i]` and `candidate[i]`
///   measured together; each resample draws round indices with replacement and uses both
///   values of each drawn round, so effects shared by a round cancel. Requires equal lengths;
///   rounds where either value is NaN are dropped. The statistic is still the ratio of the two
///   medians (not the median of per-round ratios).
///
/// Interval quantiles are type-7 (as `np.percentile`, which scipy's `bootstrap` uses). For
/// BCa, `z0 = Φ⁻¹((#{θ* < θ̂} + #{θ* ≤ θ̂}) / 2B)`; `a` comes from the jackknife (leave one
/// value out of each sample in turn when unpaired, one round when paired) as
/// `a = Σ_j Σ_i U_ji³/n_j³ / (6 (Σ_j Σ_i U_ji²/n_j²)^{3/2})`, `U_ji = (n_j − 1)(θ̄_j − θ_ji)`;
/// the quantile levels are `Φ(z0 + (z0 + z)/(1 − a(z0 + z)))` for `z = ±Φ⁻¹((1 − c)/2)`.
/// When `z0` is infinite (every resample on one side of the estimate) or the levels are not
/// finite, BCa falls back to the percentile interval; a non-finite `a` is taken as 0.
///
/// Resampling uses `ChaCha8Rng::seed_from_u64(seed)`, so results are reproducible; cost is
/// O(resamples · n). Resampled ratios that are not finite (resampled reference median 0) are
/// discarded.
///
/// `None` if a sample has fewer than 2 usable values, the lengths differ when paired,
/// `confidence` is not in (0, 1), `resamples == 0`, the point estimate is not finite (reference
/// median 0), or more than half of the resampled ratios were discarded.
pub fn bootstrap_ratio_of_medians_with(
    reference: &[f64],
    candidate: &[f64],
    paired: bool,
    confidence: f64,
    resamples: usize,
    seed: u64,
    method: BootstrapMethod,
) -> Option<Interval> {
    if !(confidence > 0.0 && confidence < 1.0) || resamples == 0 {
        return None;
    }
    let (a, b) = usable(reference, candidate, paired)?;
    let (sa, rank_a) = sorted_with_ranks(&a);
    let (sb, rank_b) = sorted_with_ranks(&b);
    let estimate = ratio_of(median(&sb)?, median(&sa)?)?;
    let mut stats = resample(&sa, &rank_a, &sb, &rank_b, paired, resamples, seed);
    if stats.len() * 2 < resamples {
        return None;
    }
    stats.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    let (mut lo_level, mut hi_level) = (tail, 1.0 - tail);
    if method == BootstrapMethod::Bca {
        let accel = acceleration(&sa, &rank_a, &sb, &rank_b, paired);
        if let Some((l, h)) = bca_levels(&stats, estimate, accel, tail) {
            (lo_level, hi_level) = (l, h);
        }
    }
    Some(Interval {
        estimate,
        low: quantile(&stats, lo_level)?,
        high: quantile(&stats, hi_level)?,
        confidence,
    })
}

/// The bootstrap ratios (unsorted, non-finite ones dropped).
fn resample(
    sa: &[f64],
    rank_a: &[usize],
    sb: &[f64],
    rank_b: &[usize],
    paired: bool,
    resamples: usize,
    seed: u64,
) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut ca, mut cb) = (vec![0u32; sa.len()], vec![0u32; sb.len()]);
    let mut stats = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        ca.fill(0);
        cb.fill(0);
        if paired {
            for _ in 0..sa.len() {
                let i = draw_index(&mut rng, sa.len());
                ca[rank_a[i]] += 1;
                cb[rank_b[i]] += 1;
            }
        } else {
            for _ in 0..sa.len() {
                ca[draw_index(&mut rng, sa.len())] += 1;
            }
            for _ in 0..sb.len() {
                cb[draw_index(&mut rng, sb.len())] += 1;
            }
        }
        if let Some(r) = ratio_of(median_of_counts(sb, &cb), median_of_counts(sa, &ca)) {
            stats.push(r);
        }
    }
    stats
}

/// Standard normal CDF.
fn phi(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// Standard normal quantile, for `0 < p < 1`.
fn phi_inv(p: f64) -> f64 {
    -std::f64::consts::SQRT_2 * erfc_inv(2.0 * p)
}

/// BCa quantile levels from the sorted bootstrap ratios; `None` when not finite.
fn bca_levels(sorted_stats: &[f64], estimate: f64, accel: f64, tail: f64) -> Option<(f64, f64)> {
    let less = sorted_stats.partition_point(|&t| t < estimate);
    let less_eq = sorted_stats.partition_point(|&t| t <= estimate);
    let frac = (less + less_eq) as f64 / (2 * sorted_stats.len()) as f64;
    if !(frac > 0.0 && frac < 1.0) {
        return None;
    }
    let z0 = phi_inv(frac);
    let accel = if accel.is_finite() { accel } else { 0.0 };
    let level = |z: f64| {
        let num = z0 + z;
        phi(z0 + num / (1.0 - accel * num))
    };
    let z = phi_inv(tail);
    let (lo, hi) = (level(z), level(-z));
    let ok = |p: f64| (0.0..=1.0).contains(&p);
    (ok(lo) && ok(hi)).then_some((lo, hi))
}

/// The BCa jackknife acceleration `a` of `median(candidate) / median(reference)` used by
/// [`bootstrap_ratio_of_medians_with`] (formula there), exposed so it can be checked against
/// scipy. Same input rules and `None` cases as the bootstrap (apart from the resampling ones);
/// `None` also when `a` is not finite (e.g. all jackknife values equal).
pub fn bca_acceleration(reference: &[f64], candidate: &[f64], paired: bool) -> Option<f64> {
    let (a, b) = usable(reference, candidate, paired)?;
    let (sa, rank_a) = sorted_with_ranks(&a);
    let (sb, rank_b) = sorted_with_ranks(&b);
    ratio_of(median(&sb)?, median(&sa)?)?;
    let acc = acceleration(&sa, &rank_a, &sb, &rank_b, paired);
    acc.is_finite().then_some(acc)
}

/// Jackknife acceleration of the ratio of medians (see the public docs).
fn acceleration(sa: &[f64], rank_a: &[usize], sb: &[f64], rank_b: &[usize], paired: bool) -> f64 {
    let (ma, mb) = (median_without(sa, None), median_without(sb, None));
    let groups: Vec<Vec<f64>> = if paired {
        vec![(0..sa.len())
            .map(|i| median_without(sb, Some(rank_b[i])) / median_without(sa, Some(rank_a[i])))
            .collect()]
    } else {
        vec![
            (0..sa.len())
                .map(|p| mb / median_without(sa, Some(p)))
                .collect(),
            (0..sb.len())
                .map(|p| median_without(sb, Some(p)) / ma)
                .collect(),
        ]
    };
    let (mut num, mut den) = (0.0, 0.0);
    for theta in &groups {
        let n = theta.len() as f64;
        let mean = theta.iter().sum::<f64>() / n;
        let u = theta.iter().map(|t| (n - 1.0) * (mean - t));
        num += u.clone().map(|v| v * v * v).sum::<f64>() / (n * n * n);
        den += u.map(|v| v * v).sum::<f64>() / (n * n);
    }
    num / (6.0 * den.powf(1.5))
}

/// Median of `sorted` with the element at sorted position `skip` left out (O(1)); same
/// arithmetic as [`quantile`] at 0.5.
fn median_without(sorted: &[f64], skip: Option<usize>) -> f64 {
    let m = sorted.len() - usize::from(skip.is_some());
    let at = |k: usize| match skip {
        Some(s) if k >= s => sorted[k + 1],
        _ => sorted[k],
    };
    let (lo, hi) = (at((m - 1) / 2), at(m / 2));
    if lo == hi {
        hi
    } else {
        hi - (hi - lo) * 0.5
    }
}

/// Uniform index in `0..n` from one 32-bit draw by multiply-shift (Lemire) without the
/// rejection step: the bias is below n/2³² (< 10⁻⁵ for n < 40 000 runs), negligible next to
/// bootstrap Monte Carlo error, and it halves the cost of `gen_range`.
fn draw_index(rng: &mut ChaCha8Rng, n: usize) -> usize {
    ((u64::from(rng.next_u32()) * n as u64) >> 32) as usize
}

/// Sorted copy of `xs` and, for each original position, its position in the sorted copy.
fn sorted_with_ranks(xs: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_unstable_by(|&i, &j| xs[i].total_cmp(&xs[j]));
    let mut rank = vec![0; xs.len()];
    for (pos, &i) in idx.iter().enumerate() {
        rank[i] = pos;
    }
    (idx.iter().map(|&i| xs[i]).collect(), rank)
}

/// Median of a resample given as multiplicities `counts[i]` of `sorted[i]` (they sum to
/// `sorted.len()`). A resample only ever contains values of the original sample, so its order
/// statistics can be read off the counts in O(n) without sorting or selecting; the arithmetic
/// is the same as [`quantile`] at 0.5.
fn median_of_counts(sorted: &[f64], counts: &[u32]) -> f64 {
    let n = sorted.len();
    let (lo_pos, hi_pos) = ((n - 1) / 2, n / 2);
    let mut cum = 0usize;
    let mut lo = None;
    for (&x, &c) in sorted.iter().zip(counts) {
        cum += c as usize;
        if cum > lo_pos && lo.is_none() {
            lo = Some(x);
        }
        if cum > hi_pos {
            let lo = lo.unwrap_or(x);
            return if lo == x { x } else { x - (x - lo) * 0.5 };
        }
    }
    f64::NAN
}

/// `num / den` if finite.
fn ratio_of(num: f64, den: f64) -> Option<f64> {
    let r = num / den;
    r.is_finite().then_some(r)
}

/// The NaN-free samples to resample, or `None` if unusable (see the public function).
fn usable(reference: &[f64], candidate: &[f64], paired: bool) -> Option<(Vec<f64>, Vec<f64>)> {
    let (a, b): (Vec<f64>, Vec<f64>) = if paired {
        if reference.len() != candidate.len() {
            return None;
        }
        reference
            .iter()
            .zip(candidate)
            .filter(|(x, y)| !x.is_nan() && !y.is_nan())
            .map(|(x, y)| (*x, *y))
            .unzip()
    } else {
        let keep = |xs: &[f64]| xs.iter().copied().filter(|x| !x.is_nan()).collect();
        (keep(reference), keep(candidate))
    };
    (a.len() >= 2 && b.len() >= 2).then_some((a, b))
}
