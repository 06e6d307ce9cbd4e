//! The ratio of two single sessions' means, each session's uncertainty the spread of the means
//! of its three consecutive thirds (issue 22).
//!
//! Why not the standard error of the processes: processes of one session share the machine's
//! state, and on a VM that state moves in episodes of seconds (a C loop at 19 ms for a while,
//! then at 40 ms; lag-1 autocorrelation 0.3–0.7 between consecutive runs). Back-to-back sessions
//! of the same program, cut from 800 real runs, gave Welch's t false verdicts in 6% of pairs at 6
//! runs a session, 21% at 12 and 35% at 30: more runs only narrow an interval around a mean that
//! the next session does not share. Batch means (the thirds' spread divided by 3) still gave
//! 5–9% (the VM in its speed modes: 7–13%), and a random-effects split into within- and
//! between-thirds variance up to 10%. Taking each session's mean to be as uncertain as the
//! mean of one of its thirds, with the conservative 2 degrees of freedom (each side's spread
//! rests on 3 values), gave 0.8–4.3% on the same pairs (0–0.2% on independent values), while
//! a 10% change of a program with a 2% run-to-run spread is still found in 68% (6 runs), 94%
//! (12) and 100% (30) of pairs. Welch–Satterthwaite's df (2 to 4) instead gave up to 7% in the
//! speed modes.
//! The runs and the simulation: `bench/session_aa_simulation.py` (docs/statistics.md).
//!
//! What no rule inside two sessions can see: a machine that stays in one state through a whole
//! session and in another through the next. That is why a verdict from one session a side says
//! what it assumes.
//!
//! The interval is on the log scale by the delta method: `v = var(third means) / mean²` per
//! side (not divided by the number of thirds), `se = √(v_old + v_new)`, Student's t with 2
//! degrees of freedom (the conservative choice, the smaller side's), `ratio · exp(∓t·se)`, and
//! the p-value of the t statistic `|ln ratio| / se`. Reference values: `scripts/session_ratio_reference.py`.

use super::RatioTest;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Degrees of freedom of the test: each side's spread rests on its 3 thirds.
pub const DF: f64 = 2.0;

/// The means of three consecutive thirds of `v` (cut at `i·n/3`), or None with fewer than 3
/// values.
pub fn thirds(v: &[f64]) -> Option<[f64; 3]> {
    let n = v.len();
    if n < 3 {
        return None;
    }
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    Some([
        mean(&v[..n / 3]),
        mean(&v[n / 3..2 * n / 3]),
        mean(&v[2 * n / 3..]),
    ])
}

/// The relative variance of one session's mean (the variance of its thirds' means over the
/// squared mean) and the mean.
fn side(v: &[f64]) -> Option<(f64, f64)> {
    let t = thirds(v)?;
    let m = v.iter().sum::<f64>() / v.len() as f64;
    if !(m.is_finite() && m > 0.0) || t.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let tm = (t[0] + t[1] + t[2]) / 3.0;
    let var = t.iter().map(|x| (x - tm).powi(2)).sum::<f64>() / 2.0;
    Some((m, var / (m * m)))
}

/// The ratio of `new`'s mean to `old`'s (mean(new) / mean(old)) (per-process values of one session each, in time
/// order), its two-sided interval at `confidence` and its p-value; None with fewer than 3
/// values a side, a non-positive mean or a confidence outside (0, 1).
pub fn thirds_ratio(old: &[f64], new: &[f64], confidence: f64) -> Option<RatioTest> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let (mo, vo) = side(old)?;
    let (mn, vn) = side(new)?;
    let ratio = mn / mo;
    let se2 = vo + vn;
    if se2 == 0.0 {
        // Every third of both sessions alike (a deterministic metric): no spread to speak of.
        let p = if ratio == 1.0 { 1.0 } else { 0.0 };
        return Some(RatioTest {
            ratio,
            low: ratio,
            high: ratio,
            p_value: p,
            df: DF,
        });
    }
    let se = se2.sqrt();
    let df = DF;
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let q = t.inverse_cdf((1.0 + confidence) / 2.0);
    let stat = ratio.ln().abs() / se;
    Some(RatioTest {
        ratio,
        low: ratio * (-q * se).exp(),
        high: ratio * (q * se).exp(),
        p_value: (2.0 * (1.0 - t.cdf(stat))).clamp(0.0, 1.0),
        df,
    })
}

/// How far the next session's mean may lie from this one's (relative, above it) before
/// [`thirds_ratio`] would call the two different, if the next session's thirds spread as this
/// one's do: `exp(t · √(2v)) − 1`. None where [`thirds_ratio`] would be.
pub fn next_session_half(values: &[f64], confidence: f64) -> Option<f64> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let (_, v) = side(values)?;
    let q = StudentsT::new(0.0, 1.0, DF)
        .ok()?
        .inverse_cdf((1.0 + confidence) / 2.0);
    Some((q * (2.0 * v).sqrt()).exp() - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_scipy_reference() {
        // tests/data/stats/session_ratio.json, from scripts/session_ratio_reference.py.
        let json = include_str!("../../tests/data/stats/session_ratio.json");
        crate::stats::reference::check_ratio(json, 4, thirds_ratio);
    }

    #[test]
    fn a_slow_third_widens_the_interval_past_one() {
        let steady: Vec<f64> = (0..12).map(|i| 40.0 + (i % 3) as f64 * 0.2).collect();
        let mut episode = steady.clone();
        for v in &mut episode[..4] {
            *v *= 2.0;
        }
        let r = thirds_ratio(&episode, &steady, 0.95).unwrap();
        assert!(r.low < 1.0 && r.high > 1.0, "{r:?}");
        // The same change spread evenly over the session is a change of the session.
        let even: Vec<f64> = steady.iter().map(|v| v * 1.5).collect();
        let r = thirds_ratio(&even, &steady, 0.95).unwrap();
        assert!(r.high < 1.0 && r.p_value < 0.05, "{r:?}");
    }

    #[test]
    fn the_next_session_half_is_where_the_test_turns() {
        let a: Vec<f64> = (0..12).map(|i| 40.0 + (i % 5) as f64).collect();
        let h = next_session_half(&a, 0.95).unwrap();
        let inside: Vec<f64> = a.iter().map(|v| v * (1.0 + 0.99 * h)).collect();
        let outside: Vec<f64> = a.iter().map(|v| v * (1.0 + 1.01 * h)).collect();
        assert!(thirds_ratio(&a, &inside, 0.95).unwrap().p_value > 0.05);
        assert!(thirds_ratio(&a, &outside, 0.95).unwrap().p_value < 0.05);
    }

    #[test]
    fn too_few_values_or_bad_confidence_give_none() {
        assert!(thirds_ratio(&[1.0, 2.0], &[1.0, 2.0, 3.0], 0.95).is_none());
        assert!(thirds_ratio(&[1.0; 6], &[1.0; 6], 1.0).is_none());
        assert!(thirds_ratio(&[0.0; 6], &[1.0; 6], 0.95).is_none());
        let same = thirds_ratio(&[2.0; 6], &[2.0; 6], 0.95).unwrap();
        assert_eq!((same.ratio, same.p_value), (1.0, 1.0));
    }
}
