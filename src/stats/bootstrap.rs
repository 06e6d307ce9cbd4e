//! Seeded percentile-bootstrap confidence interval for the ratio of two medians
//! (candidate / reference), unpaired or paired by round.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::quantile::{median_in_place, quantile};

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

/// Percentile-bootstrap confidence interval for `median(candidate) / median(reference)`.
///
/// Direction: the ratio is **candidate over reference**, so for run times a ratio > 1 means the
/// candidate is slower and < 1 means it is faster.
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
/// The interval is the `(1 − confidence)/2` and `(1 + confidence)/2` type-7 quantiles of the
/// `resamples` bootstrap ratios (scipy's `bootstrap(..., method="percentile")`). Resampling
/// uses `ChaCha8Rng::seed_from_u64(seed)`, so the result is reproducible. Resampled ratios that
/// are not finite (a resampled reference median of 0) are discarded.
///
/// `None` if a sample has fewer than 2 usable values, the lengths differ when paired,
/// `confidence` is not in (0, 1), `resamples == 0`, the point estimate is not finite (reference
/// median 0), or more than half of the resampled ratios were discarded.
pub fn bootstrap_ratio_of_medians(
    reference: &[f64],
    candidate: &[f64],
    paired: bool,
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<Interval> {
    if !(confidence > 0.0 && confidence < 1.0) || resamples == 0 {
        return None;
    }
    let (a, b) = usable(reference, candidate, paired)?;
    let estimate = ratio(&mut a.clone(), &mut b.clone())?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    let mut stats = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        if paired {
            for j in 0..a.len() {
                let i = rng.gen_range(0..a.len());
                ra[j] = a[i];
                rb[j] = b[i];
            }
        } else {
            for x in ra.iter_mut() {
                *x = a[rng.gen_range(0..a.len())];
            }
            for x in rb.iter_mut() {
                *x = b[rng.gen_range(0..b.len())];
            }
        }
        if let Some(r) = ratio(&mut ra, &mut rb) {
            stats.push(r);
        }
    }
    if stats.len() * 2 < resamples {
        return None;
    }
    stats.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    Some(Interval {
        estimate,
        low: quantile(&stats, tail)?,
        high: quantile(&stats, 1.0 - tail)?,
        confidence,
    })
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

/// `median(b) / median(a)` (reorders both slices); `None` if not finite.
fn ratio(a: &mut [f64], b: &mut [f64]) -> Option<f64> {
    let r = median_in_place(b)? / median_in_place(a)?;
    r.is_finite().then_some(r)
}
