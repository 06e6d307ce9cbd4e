//! Variance components of a one-level design (runs nested in setups): the one-way
//! random-effects ANOVA, with the method-of-moments estimators that are unbiased also for
//! unbalanced groups.
//!
//! With k groups of sizes n_i (N in all), group means m_i and grand mean m:
//! `SSB = Σ n_i (m_i − m)²`, `SSW = Σ Σ (x − m_i)²`, `MSB = SSB/(k − 1)`, `MSW = SSW/(N − k)`,
//! `F = MSB/MSW` with `p = P(F_{k−1, N−k} > F)` (as `scipy.stats.f_oneway`);
//! `n0 = (N − Σ n_i²/N)/(k − 1)` (= n for equal sizes), `σ²_within = MSW`,
//! `σ²_between = (MSB − MSW)/n0`. The between estimate is unbiased and may be negative; the
//! reported `var_between` is clipped at 0, `var_between_raw` is not. For equal group sizes
//! these are the corrected estimators of Kalibera & Jones (2013) for two levels:
//! `S²_between-means − S²_within/n`.
//!
//! For balanced designs with any number of levels (setups → runs → iterations, ...),
//! [`kalibera_jones`] gives the biased `S²_i` and corrected `T²_i` of each level,
//! [`plan_repetitions`] the repetitions per level that reach a CI width at the least cost, and
//! [`hierarchical_bootstrap_ratio`] a ratio CI that resamples every level.

use super::bootstrap::Interval;
use super::quantile::quantile;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF, FisherSnedecor, StudentsT};

/// The variance split of a one-way random-effects model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VarianceComponents {
    /// Non-empty groups.
    pub groups: usize,
    /// Values in all groups.
    pub n: usize,
    /// Effective group size `(N − Σ n_i²/N)/(k − 1)`.
    pub n0: f64,
    pub grand_mean: f64,
    pub ss_between: f64,
    pub ss_within: f64,
    pub df_between: f64,
    pub df_within: f64,
    pub ms_between: f64,
    pub ms_within: f64,
    /// `MSB / MSW` (infinite when the groups differ but no group varies).
    pub f: f64,
    pub p_value: f64,
    /// Between-group variance, clipped at 0.
    pub var_between: f64,
    /// Between-group variance as estimated (may be negative).
    pub var_between_raw: f64,
    /// Within-group variance.
    pub var_within: f64,
    /// Share of the total variance that lies between groups: `var_between / (var_between +
    /// var_within)` (the intraclass correlation).
    pub icc: f64,
}

/// One-way random-effects ANOVA of `groups` (see the module docs). NaN values are dropped,
/// empty groups ignored. `None` with fewer than two non-empty groups, no group with two values
/// (no within-group degrees of freedom), or all values equal.
pub fn one_way_random_effects(groups: &[&[f64]]) -> Option<VarianceComponents> {
    let groups: Vec<Vec<f64>> = groups
        .iter()
        .map(|g| {
            g.iter()
                .copied()
                .filter(|x| !x.is_nan())
                .collect::<Vec<f64>>()
        })
        .filter(|g| !g.is_empty())
        .collect();
    let k = groups.len();
    let n: usize = groups.iter().map(Vec::len).sum();
    if k < 2 || n <= k {
        return None;
    }
    let nf = n as f64;
    let grand_mean = groups.iter().flatten().sum::<f64>() / nf;
    let mut ss_between = 0.0;
    let mut ss_within = 0.0;
    let mut sum_sq_sizes = 0.0;
    for g in &groups {
        let ni = g.len() as f64;
        let mi = g.iter().sum::<f64>() / ni;
        ss_between += ni * (mi - grand_mean).powi(2);
        ss_within += g.iter().map(|x| (x - mi).powi(2)).sum::<f64>();
        sum_sq_sizes += ni * ni;
    }
    let df_between = (k - 1) as f64;
    let df_within = (n - k) as f64;
    let ms_between = ss_between / df_between;
    let ms_within = ss_within / df_within;
    if ms_between == 0.0 && ms_within == 0.0 {
        return None;
    }
    let (f, p_value) = if ms_within == 0.0 {
        (f64::INFINITY, 0.0)
    } else {
        let f = ms_between / ms_within;
        let dist = FisherSnedecor::new(df_between, df_within).ok()?;
        (f, dist.sf(f).clamp(0.0, 1.0))
    };
    let n0 = (nf - sum_sq_sizes / nf) / df_between;
    let var_between_raw = (ms_between - ms_within) / n0;
    let var_between = var_between_raw.max(0.0);
    let total = var_between + ms_within;
    Some(VarianceComponents {
        groups: k,
        n,
        n0,
        grand_mean,
        ss_between,
        ss_within,
        df_between,
        df_within,
        ms_between,
        ms_within,
        f,
        p_value,
        var_between,
        var_between_raw,
        var_within: ms_within,
        icc: if total > 0.0 {
            var_between / total
        } else {
            0.0
        },
    })
}

/// One level of a balanced multi-level design (Kalibera & Jones 2013, §4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelVariance {
    /// 1 for the lowest level (the values themselves), upwards.
    pub level: usize,
    /// Repetitions at this level per unit of the level above (`n_i`).
    pub repetitions: usize,
    /// `S²_i`: the average sample variance (n_i − 1 denominator) of the level-(i−1) means
    /// within each unit of level i+1 (biased for i > 1: it carries the lower levels' noise).
    pub s2: f64,
    /// `T²_i`: the corrected, unbiased estimate of this level's own variance:
    /// `T²_1 = S²_1`, `T²_i = S²_i − S²_{i−1}/n_{i−1}`. May be negative.
    pub t2: f64,
}

/// Kalibera & Jones's variance estimators for a balanced design. `values` lists the
/// measurements with the lowest level varying fastest (all runs of setup 1, then of setup 2,
/// ...); `dims` gives the repetitions per level, lowest first (`[runs per setup, setups]`), and
/// their product must be `values.len()`. `None` when a level has fewer than 2 repetitions, the
/// sizes do not match, or a value is not finite.
pub fn kalibera_jones(values: &[f64], dims: &[usize]) -> Option<Vec<LevelVariance>> {
    if dims.is_empty()
        || dims.iter().any(|&d| d < 2)
        || dims.iter().product::<usize>() != values.len()
        || values.iter().any(|v| !v.is_finite())
    {
        return None;
    }
    let mut current: Vec<f64> = values.to_vec();
    let mut out: Vec<LevelVariance> = Vec::with_capacity(dims.len());
    for (i, &n) in dims.iter().enumerate() {
        let blocks = current.len() / n;
        let mut s2 = 0.0;
        let mut means = Vec::with_capacity(blocks);
        for b in current.chunks(n) {
            let m = b.iter().sum::<f64>() / n as f64;
            s2 += b.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64;
            means.push(m);
        }
        s2 /= blocks as f64;
        let t2 = match out.last() {
            None => s2,
            Some(below) => s2 - below.s2 / dims[i - 1] as f64,
        };
        out.push(LevelVariance {
            level: i + 1,
            repetitions: n,
            s2,
            t2,
        });
        current = means;
    }
    Some(out)
}

/// How many repetitions per level, and what they are expected to give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepetitionPlan {
    /// Repetitions per level, lowest first; the last is the number of top-level units.
    pub repetitions: Vec<usize>,
    /// Expected relative half-width of the CI of the mean (at the `assurance` quantile of the
    /// top-level sample variance).
    pub halfwidth: f64,
    /// Cost of the whole experiment in the unit of `costs`.
    pub cost: f64,
}

/// The least costly balanced design whose CI of the grand mean reaches `precision` (relative
/// half-width) with probability about `assurance` (Kalibera & Jones 2013, §5).
///
/// `t2[i]` is the variance of level i+1 (lowest first; negative estimates count as 0);
/// `costs[i]` the cost of one repetition at that level excluding the levels below (e.g. the
/// time of one run; the time to make a setup). Below the top, `n_i = ⌈√(c_{i+1} T²_i /
/// (c_i T²_{i+1}))⌉` (at least 1, at most `max_repetitions`); when the level above shows no
/// variance (`T²_{i+1} ≤ 0`) the formula has no answer and the cheapest count on a geometric
/// grid is used instead. The top count is the smallest n
/// with `t_{(1+confidence)/2, n−1} · √(q · V(n)) ≤ precision · mean`, where
/// `V(n) = Σ_i T²_i / (n_i ⋯ n_top)` is the variance of the grand mean and
/// `q = χ²_{assurance, n−1}/(n − 1)` allows for the sample variance coming out above its
/// expectation (`assurance` 0.5 gives about the expected width). `None` on inputs that are not
/// positive and finite, or when no top count up to `max_repetitions` is enough.
pub fn plan_repetitions(
    t2: &[f64],
    costs: &[f64],
    mean: f64,
    precision: f64,
    confidence: f64,
    assurance: f64,
    max_repetitions: usize,
) -> Option<RepetitionPlan> {
    let k = t2.len();
    if k == 0
        || costs.len() != k
        || !(mean > 0.0 && precision > 0.0 && mean.is_finite())
        || !(confidence > 0.0 && confidence < 1.0 && assurance > 0.0 && assurance < 1.0)
        || t2.iter().chain(costs).any(|v| !v.is_finite())
        || costs.iter().any(|&c| c < 0.0)
    {
        return None;
    }
    let var: Vec<f64> = t2.iter().map(|&v| v.max(0.0)).collect();
    let max_r = max_repetitions.max(2);
    let mut reps = vec![1usize; k];
    let mut free: Option<usize> = None;
    for i in 0..k.saturating_sub(1) {
        let (num, den) = (costs[i + 1] * var[i], costs[i] * var[i + 1]);
        reps[i] = if num <= 0.0 {
            1
        } else if den <= 0.0 {
            free.get_or_insert(i);
            1
        } else {
            ((num / den).sqrt().ceil()).clamp(1.0, max_r as f64) as usize
        };
    }
    let total_var = |top: usize, reps: &[usize]| -> f64 {
        let mut v = 0.0;
        for i in 0..k {
            let units: f64 = reps[i..k - 1].iter().map(|&r| r as f64).product::<f64>() * top as f64;
            v += var[i] / units;
        }
        v
    };
    let halfwidth = |top: usize, reps: &[usize]| -> Option<f64> {
        let df = (top - 1) as f64;
        let t = StudentsT::new(0.0, 1.0, df)
            .ok()?
            .inverse_cdf((1.0 + confidence) / 2.0);
        let q = ChiSquared::new(df).ok()?.inverse_cdf(assurance) / df;
        Some(t * (q * total_var(top, reps)).sqrt() / mean)
    };
    // The smallest top count that reaches the precision (the width falls as it grows).
    let finish = |reps: &[usize]| -> Option<RepetitionPlan> {
        if halfwidth(max_r, reps)? > precision {
            return None;
        }
        let (mut lo, mut hi) = (2usize, max_r);
        if halfwidth(lo, reps)? <= precision {
            hi = lo;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if halfwidth(mid, reps)? <= precision {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let mut reps = reps.to_vec();
        reps[k - 1] = hi;
        let mut cost = 0.0;
        for i in 0..k {
            cost = reps[i] as f64 * (costs[i] + cost);
        }
        Some(RepetitionPlan {
            halfwidth: halfwidth(hi, &reps)?,
            repetitions: reps,
            cost,
        })
    };
    match free {
        None => finish(&reps),
        // No variance above this level: the formula has no answer; try counts on a
        // geometric grid and keep the cheapest plan.
        Some(i) => {
            let mut best: Option<RepetitionPlan> = None;
            let mut n = 1usize;
            while n <= max_r {
                let mut r = reps.clone();
                r[i] = n;
                if let Some(p) = finish(&r) {
                    if best.as_ref().is_none_or(|b| p.cost < b.cost) {
                        best = Some(p);
                    }
                }
                n = (n + 1).max(n * 5 / 4);
            }
            best
        }
    }
}

/// Two-level hierarchical bootstrap CI of `mean(candidate) / mean(reference)`, each given as
/// groups (setups) of values (runs). A resample draws groups with replacement — the same group
/// indices for both when `paired` (group i of each measured in the same setup; equal group
/// counts required) — then values within each drawn group with replacement; the statistic is
/// the ratio of the means of the group means. Percentile interval (type-7 quantiles), seeded
/// ChaCha8. `None` with fewer than 2 groups, an empty group, unequal counts when paired, a
/// confidence outside (0, 1), no resamples, or a non-positive reference mean.
pub fn hierarchical_bootstrap_ratio(
    reference: &[Vec<f64>],
    candidate: &[Vec<f64>],
    paired: bool,
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<Interval> {
    let bad = |g: &[Vec<f64>]| g.len() < 2 || g.iter().any(|x| x.is_empty());
    if bad(reference)
        || bad(candidate)
        || (paired && reference.len() != candidate.len())
        || !(confidence > 0.0 && confidence < 1.0)
        || resamples == 0
    {
        return None;
    }
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let grand = |g: &[Vec<f64>]| g.iter().map(|x| mean(x)).sum::<f64>() / g.len() as f64;
    let (mr, mc) = (grand(reference), grand(candidate));
    if !(mr > 0.0 && mr.is_finite() && mc.is_finite()) {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let draw_group = |g: &[Vec<f64>], idx: &[usize], rng: &mut ChaCha8Rng| -> f64 {
        let mut total = 0.0;
        for &i in idx {
            let xs = &g[i];
            let s: f64 = (0..xs.len()).map(|_| xs[rng.gen_range(0..xs.len())]).sum();
            total += s / xs.len() as f64;
        }
        total / idx.len() as f64
    };
    let mut stats = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let ir: Vec<usize> = (0..reference.len())
            .map(|_| rng.gen_range(0..reference.len()))
            .collect();
        let ic: Vec<usize> = if paired {
            ir.clone()
        } else {
            (0..candidate.len())
                .map(|_| rng.gen_range(0..candidate.len()))
                .collect()
        };
        let r = draw_group(reference, &ir, &mut rng);
        let c = draw_group(candidate, &ic, &mut rng);
        if r > 0.0 {
            stats.push(c / r);
        }
    }
    if stats.len() * 2 < resamples {
        return None;
    }
    stats.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    Some(Interval {
        estimate: mc / mr,
        low: quantile(&stats, tail)?,
        high: quantile(&stats, 1.0 - tail)?,
        confidence,
    })
}

/// Percentile bootstrap CI of the mean of `values` (e.g. per-setup ratios): each resample
/// draws `values.len()` values with replacement (seeded ChaCha8); type-7 quantiles of the
/// resampled means. NaN values are dropped. `None` with fewer than 2 values, a confidence
/// outside (0, 1) or no resamples.
pub fn bootstrap_mean(
    values: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<Interval> {
    let xs: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if xs.len() < 2 || !(confidence > 0.0 && confidence < 1.0) || resamples == 0 {
        return None;
    }
    let n = xs.len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| (0..n).map(|_| xs[rng.gen_range(0..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    Some(Interval {
        estimate: xs.iter().sum::<f64>() / n as f64,
        low: quantile(&means, tail)?,
        high: quantile(&means, 1.0 - tail)?,
        confidence,
    })
}

/// One-sample t-test of `mean(values) = mu`, two-sided; as `scipy.stats.ttest_1samp`. Used
/// on the logs of per-setup ratios (a paired t-test over setups). NaN values are dropped.
/// `None` with fewer than 2 values; with zero spread the p-value is 0 (mean ≠ mu) or 1.
pub fn one_sample_t(values: &[f64], mu: f64) -> Option<super::TestResult> {
    let xs: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    let n = xs.len();
    if n < 2 {
        return None;
    }
    let m = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64;
    if var == 0.0 {
        let differs = m != mu;
        return Some(super::TestResult {
            statistic: if differs {
                f64::INFINITY.copysign(m - mu)
            } else {
                0.0
            },
            p_value: if differs { 0.0 } else { 1.0 },
        });
    }
    let t = (m - mu) / (var / n as f64).sqrt();
    let dist = StudentsT::new(0.0, 1.0, (n - 1) as f64).ok()?;
    Some(super::TestResult {
        statistic: t,
        p_value: (2.0 * dist.sf(t.abs())).clamp(0.0, 1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_balanced() {
        // Groups {1,2,3}, {4,5,6}: means 2 and 5, grand mean 3.5.
        // SSB = 3·1.5² + 3·1.5² = 13.5, SSW = 2 + 2 = 4; MSB = 13.5, MSW = 1; n0 = 3;
        // σ²_between = (13.5 − 1)/3 = 25/6.
        let v = one_way_random_effects(&[&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]]).unwrap();
        assert!((v.ss_between - 13.5).abs() < 1e-12);
        assert!((v.ss_within - 4.0).abs() < 1e-12);
        assert!((v.f - 13.5).abs() < 1e-12);
        assert!((v.n0 - 3.0).abs() < 1e-12);
        assert!((v.var_between - 25.0 / 6.0).abs() < 1e-12);
        assert!((v.var_within - 1.0).abs() < 1e-12);
    }

    #[test]
    fn degenerate_inputs() {
        assert!(one_way_random_effects(&[&[1.0, 2.0]]).is_none());
        assert!(one_way_random_effects(&[&[1.0], &[2.0]]).is_none());
        assert!(one_way_random_effects(&[&[1.0, 1.0], &[1.0, 1.0]]).is_none());
        let v = one_way_random_effects(&[&[1.0, 1.0], &[2.0, 2.0]]).unwrap();
        assert!(v.f.is_infinite() && v.p_value == 0.0);
        let v = one_way_random_effects(&[&[1.0, 2.0], &[], &[f64::NAN, 3.0]]).unwrap();
        assert_eq!(v.groups, 2);
        // Between-group variance below what within-group noise alone gives: clipped at 0.
        let v = one_way_random_effects(&[&[1.0, 3.0], &[1.1, 2.9]]).unwrap();
        assert!(v.var_between_raw < 0.0 && v.var_between == 0.0);
    }
}
