//! The geometric mean of ratios over benchmarks (benchstat's summary line), with an interval
//! built from the benchmarks' own intervals: each benchmark's log-ratio interval gives its
//! standard error (half-width / z), the mean of the logs gets the mean of those (Σ se / n), and
//! the interval is exp(mean ± z·se). So the interval rests on what each benchmark's comparison
//! rests on (the processes, the sessions), never on the spread between benchmarks: in one
//! session pair every benchmark shares the machine's state, so their errors may move together,
//! and Σ se / n is the standard error of the mean when they do (the most it can be; assuming
//! them independent, √(Σ se²) / n, would shrink the interval by √n on exactly that shared shift).
//! Without an interval for every benchmark there is none for the mean. Reference
//! values: `scripts/geomean_reference.py` (scipy.stats.gmean, scipy.stats.norm), in
//! `tests/data/stats/geomean.json`.

use statrs::distribution::{ContinuousCDF, Normal};

/// A geometric mean and, where every benchmark had one, its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeoMean {
    pub value: f64,
    pub n: usize,
    pub ci: Option<(f64, f64)>,
}

/// The geometric mean of the positive, finite ratios (others are left out) and its
/// `confidence` interval from each ratio's own `confidence` interval; `None` without one usable
/// ratio.
pub fn geomean(items: &[(f64, Option<(f64, f64)>)], confidence: f64) -> Option<GeoMean> {
    let usable: Vec<&(f64, Option<(f64, f64)>)> = items
        .iter()
        .filter(|(r, _)| r.is_finite() && *r > 0.0)
        .collect();
    let n = usable.len();
    if n == 0 {
        return None;
    }
    let mean = usable.iter().map(|(r, _)| r.ln()).sum::<f64>() / n as f64;
    let z = Normal::new(0.0, 1.0)
        .ok()?
        .inverse_cdf(0.5 + confidence / 2.0);
    let ses: Option<Vec<f64>> = usable
        .iter()
        .map(|(_, ci)| {
            let (lo, hi) = (*ci)?;
            (lo > 0.0 && hi >= lo && hi.is_finite()).then(|| (hi.ln() - lo.ln()) / 2.0 / z)
        })
        .collect();
    let ci = ses.map(|s| {
        let se = s.iter().sum::<f64>() / n as f64;
        ((mean - z * se).exp(), (mean + z * se).exp())
    });
    Some(GeoMean {
        value: mean.exp(),
        n,
        ci,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_scipy() {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/data/stats/geomean.json")).unwrap();
        for c in v["cases"].as_array().unwrap() {
            let xs: Vec<f64> = serde_json::from_value(c["ratios"].clone()).unwrap();
            let cis: Vec<Option<(f64, f64)>> = serde_json::from_value(c["cis"].clone()).unwrap();
            let items: Vec<(f64, Option<(f64, f64)>)> = xs.into_iter().zip(cis).collect();
            let g = geomean(&items, 0.95).unwrap();
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
            assert!(close(g.value, c["gmean"].as_f64().unwrap()), "{c}");
            match (g.ci, c["low"].as_f64(), c["high"].as_f64()) {
                (Some((lo, hi)), Some(l), Some(h)) => {
                    assert!(close(lo, l) && close(hi, h), "{c}: {lo} {hi}")
                }
                (None, None, None) => {}
                other => panic!("{c}: {other:?}"),
            }
        }
    }

    #[test]
    fn nothing_usable_is_none_and_a_missing_interval_is_none() {
        assert_eq!(geomean(&[], 0.95), None);
        assert_eq!(geomean(&[(f64::NAN, None), (-1.0, None)], 0.95), None);
        let g = geomean(&[(1.5, Some((1.4, 1.6))), (1.2, None)], 0.95).unwrap();
        assert_eq!((g.n, g.ci), (2, None));
    }

    #[test]
    fn benchmarks_that_moved_together_are_not_a_narrow_interval() {
        // Ten benchmarks all +50% in one session pair, each with a wide interval of its own:
        // the mean's interval is as wide as their combined uncertainty, not the 0-width spread
        // between them.
        let items: Vec<(f64, Option<(f64, f64)>)> =
            (0..10).map(|_| (1.5, Some((0.8, 2.8)))).collect();
        let (lo, hi) = geomean(&items, 0.95).unwrap().ci.unwrap();
        assert!(lo < 1.2 && hi > 1.9, "{lo} {hi}");
    }
}
