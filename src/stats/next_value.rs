//! Is one new value in line with a baseline of earlier ones? The prediction interval for one
//! new observation, on log values (issue 42: the newest commit of a history judged against the
//! commits before it, each commit one replicate).
//!
//! With baseline logs `b_1..b_k` (mean `m`, standard deviation `s`, k − 1 degrees of freedom)
//! and the new value `x`: `se = s·√(1 + 1/k)`, `t = (ln x − m) / se`, Student's t with k − 1
//! degrees of freedom. The ratio is `x / exp(m)`; its interval `ratio · exp(∓q·se)` with
//! `q = t.ppf(1 − α)`, a two-sided interval at 1 − 2α whose each end is a one-sided bound at
//! level α: the interval lies above 1 exactly when the one-sided p-value of a higher value,
//! `P(T ≥ t)`, is below α (and below 1 exactly when `P(T ≤ t)` is), so a verdict read off either
//! agrees with the other. Reference values: `scripts/next_value_reference.py` (scipy).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// One new value against a baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NextValue {
    /// x / exp(mean of the baseline's logs).
    pub ratio: f64,
    /// ratio · exp(∓q·se): above 1 exactly when `p_higher < α`, below 1 exactly when
    /// `p_lower < α`.
    pub low: f64,
    pub high: f64,
    /// The t statistic, (ln x − m) / se (±∞ when the baseline has no spread and x differs).
    pub t: f64,
    /// One-sided p-values: of a value this high or higher, and this low or lower.
    pub p_higher: f64,
    pub p_lower: f64,
    /// Degrees of freedom, k − 1.
    pub df: f64,
    /// The interval's two-sided confidence, 1 − 2α.
    pub confidence: f64,
}

/// Spreads of log values this small are none (rounding of equal values).
const NO_SPREAD: f64 = 1e-12;

/// `x` against `baseline` at one-sided level `alpha`; None with fewer than 2 baseline values, a
/// value that is not finite and positive, or `alpha` outside (0, 0.5).
///
/// A baseline with no spread (all values equal): the interval is the ratio itself, and the
/// p-values are 0 or 1 by the side `x` lies on (0.5 each when it equals them).
pub fn next_value(baseline: &[f64], x: f64, alpha: f64) -> Option<NextValue> {
    next_value_with(baseline, x, alpha, 0.0)
}

/// [`next_value`] with `extra` (a variance on the log scale, ≥ 0) added to the prediction's:
/// `se = √(s²·(1 + 1/k) + extra)` — the new value's own uncertainty beyond what the
/// baseline's spread holds (a session noisier than the baseline's sessions).
pub fn next_value_with(baseline: &[f64], x: f64, alpha: f64, extra: f64) -> Option<NextValue> {
    let extra = if extra.is_finite() {
        extra.max(0.0)
    } else {
        0.0
    };
    if baseline.len() < 2 || !(alpha > 0.0 && alpha < 0.5) {
        return None;
    }
    let ok = |v: f64| v.is_finite() && v > 0.0;
    if !ok(x) || !baseline.iter().all(|&v| ok(v)) {
        return None;
    }
    let k = baseline.len() as f64;
    // Deviations from the first log: equal values give exactly 0, and no rounding noise.
    let b0 = baseline[0].ln();
    let dev: Vec<f64> = baseline.iter().map(|v| v.ln() - b0).collect();
    let dm = dev.iter().sum::<f64>() / k;
    let ss = dev.iter().map(|d| (d - dm).powi(2)).sum::<f64>();
    let s = (ss / (k - 1.0)).sqrt();
    let d = (x.ln() - b0) - dm;
    let ratio = d.exp();
    let df = k - 1.0;
    let confidence = 1.0 - 2.0 * alpha;
    if s <= NO_SPREAD && extra <= NO_SPREAD * NO_SPREAD {
        let (t, p_higher, p_lower) = if d.abs() <= NO_SPREAD {
            (0.0, 0.5, 0.5)
        } else if d > 0.0 {
            (f64::INFINITY, 0.0, 1.0)
        } else {
            (f64::NEG_INFINITY, 1.0, 0.0)
        };
        return Some(NextValue {
            ratio,
            low: ratio,
            high: ratio,
            t,
            p_higher,
            p_lower,
            df,
            confidence,
        });
    }
    let se = (s * s * (1.0 + 1.0 / k) + extra).sqrt();
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let q = dist.inverse_cdf(1.0 - alpha);
    let t = d / se;
    Some(NextValue {
        ratio,
        low: (d - q * se).exp(),
        high: (d + q * se).exp(),
        t,
        p_higher: dist.sf(t).clamp(0.0, 1.0),
        p_lower: dist.cdf(t).clamp(0.0, 1.0),
        df,
        confidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_scipy_reference() {
        // tests/data/stats/next_value.json, from scripts/next_value_reference.py.
        let json = include_str!("../../tests/data/stats/next_value.json");
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let cases = v["cases"].as_array().unwrap();
        assert!(cases.len() >= 6, "{} cases", cases.len());
        for c in cases {
            let name = c["name"].as_str().unwrap();
            let b: Vec<f64> = serde_json::from_value(c["baseline"].clone()).unwrap();
            let x = c["x"].as_f64().unwrap();
            let alpha = c["alpha"].as_f64().unwrap();
            let got = next_value(&b, x, alpha).unwrap_or_else(|| panic!("{name}: none"));
            for (what, g) in [
                ("ratio", got.ratio),
                ("low", got.low),
                ("high", got.high),
                ("t", got.t),
                ("p_higher", got.p_higher),
                ("p_lower", got.p_lower),
                ("df", got.df),
            ] {
                let w = c[what].as_f64().unwrap();
                assert!(
                    (g - w).abs() <= 1e-9 * w.abs().max(1e-12) + 1e-12,
                    "{name} {what}: {g} vs scipy {w}"
                );
            }
            // One procedure: the interval's side and the p-value agree.
            assert_eq!(got.low > 1.0, got.p_higher < alpha, "{name}: {got:?}");
            assert_eq!(got.high < 1.0, got.p_lower < alpha, "{name}: {got:?}");
        }
    }

    #[test]
    fn the_interval_turns_where_the_p_value_does() {
        let b = [10.0, 10.2, 9.9, 10.1, 9.8];
        for i in 0..400 {
            let x = 9.0 + i as f64 * 0.005;
            let r = next_value(&b, x, 0.05).unwrap();
            assert_eq!(r.low > 1.0, r.p_higher < 0.05, "{x}: {r:?}");
            assert_eq!(r.high < 1.0, r.p_lower < 0.05, "{x}: {r:?}");
        }
    }

    #[test]
    fn equal_values_and_bad_input() {
        let same = next_value(&[0.3; 5], 0.3, 0.05).unwrap();
        assert_eq!(
            (same.ratio, same.p_higher, same.low, same.high),
            (1.0, 0.5, 1.0, 1.0)
        );
        let up = next_value(&[0.3; 5], 0.36, 0.05).unwrap();
        assert!(up.p_higher == 0.0 && up.low > 1.19, "{up:?}");
        assert!(next_value(&[1.0], 1.0, 0.05).is_none());
        assert!(next_value(&[1.0, 2.0], 0.0, 0.05).is_none());
        assert!(next_value(&[1.0, f64::NAN], 1.0, 0.05).is_none());
        assert!(next_value(&[1.0, 2.0], 1.0, 0.5).is_none());
    }
}
