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

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, FisherSnedecor};

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
