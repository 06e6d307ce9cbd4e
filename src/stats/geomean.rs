//! The geometric mean of ratios over benchmarks (benchstat's summary line), with a 95% interval
//! that treats the benchmarks as the sample: the t interval of the mean log ratio, exponentiated.
//! It answers "did the suite as a whole move", not whether one benchmark did (each benchmark's
//! own verdict does that). Reference values: `scripts/geomean_reference.py` (scipy.stats.gmean
//! and scipy.stats.t), in `tests/data/stats/geomean.json`.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// A geometric mean and, with at least two ratios that are not all equal, its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeoMean {
    pub value: f64,
    pub n: usize,
    pub ci: Option<(f64, f64)>,
}

/// The geometric mean of the positive, finite `ratios` (others are left out) and its
/// `confidence` interval; `None` without one usable ratio.
pub fn geomean(ratios: &[f64], confidence: f64) -> Option<GeoMean> {
    let logs: Vec<f64> = ratios
        .iter()
        .filter(|r| r.is_finite() && **r > 0.0)
        .map(|r| r.ln())
        .collect();
    let n = logs.len();
    if n == 0 {
        return None;
    }
    let mean = logs.iter().sum::<f64>() / n as f64;
    let ci = (n >= 2)
        .then(|| {
            let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
                .ok()?
                .inverse_cdf(0.5 + confidence / 2.0);
            let half = t * (var / n as f64).sqrt();
            half.is_finite()
                .then(|| ((mean - half).exp(), (mean + half).exp()))
        })
        .flatten();
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
            let g = geomean(&xs, 0.95).unwrap();
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
    fn nothing_usable_is_none() {
        assert_eq!(geomean(&[], 0.95), None);
        assert_eq!(geomean(&[f64::NAN, -1.0, 0.0], 0.95), None);
        let one = geomean(&[1.5], 0.95).unwrap();
        assert_eq!((one.n, one.ci), (1, None));
    }
}
