//! Turning a ratio interval and a p-value into a verdict ("B is 1.12× faster than A"), and a
//! one-call comparison of two samples of run times.

use serde::{Deserialize, Serialize};

use super::bootstrap::{bootstrap_ratio_of_medians_with, BootstrapMethod, Interval};
use super::hypothesis::{mann_whitney_u, TestResult};

/// Outcome of comparing a candidate B against a reference A.
///
/// Every variant carries `ratio`, `low`, `high` and the interval's `confidence`. For
/// [`Verdict::Faster`] they are the **speedup** `A/B` (> 1), i.e. the inverted candidate/reference
/// interval `(1/high, 1/low)`; for every other variant they are the candidate/reference ratio
/// `B/A` as produced by [`bootstrap_ratio_of_medians`](super::bootstrap_ratio_of_medians).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Verdict {
    /// B is faster: significant, and the whole B/A interval is below 1. Values are A/B > 1.
    Faster {
        /// Speedup A/B of the medians (> 1).
        ratio: f64,
        /// Lower end of the speedup interval, `1 / high(B/A)`.
        low: f64,
        /// Upper end of the speedup interval, `1 / low(B/A)`.
        high: f64,
        /// Confidence level of the interval, e.g. 0.95.
        confidence: f64,
    },
    /// B is slower: significant, and the whole B/A interval is above 1. Values are B/A > 1.
    Slower {
        /// Ratio B/A of the medians.
        ratio: f64,
        /// Lower end of the B/A interval.
        low: f64,
        /// Upper end of the B/A interval.
        high: f64,
        /// Confidence level of the interval, e.g. 0.95.
        confidence: f64,
    },
    /// Neither equal within noise nor a significant difference. Values are B/A.
    NoSignificantDifference {
        /// Ratio B/A of the medians.
        ratio: f64,
        /// Lower end of the B/A interval.
        low: f64,
        /// Upper end of the B/A interval.
        high: f64,
        /// Confidence level of the interval, e.g. 0.95.
        confidence: f64,
    },
    /// The whole B/A interval lies within `[1 − noise, 1 + noise]`. Values are B/A.
    EqualWithinNoise {
        /// Ratio B/A of the medians.
        ratio: f64,
        /// Lower end of the B/A interval.
        low: f64,
        /// Upper end of the B/A interval.
        high: f64,
        /// Confidence level of the interval, e.g. 0.95.
        confidence: f64,
    },
}

impl Verdict {
    /// Classifies a candidate/reference ratio interval (B/A, as from
    /// [`bootstrap_ratio_of_medians`](super::bootstrap_ratio_of_medians)) together with a
    /// two-sided p-value:
    ///
    /// 1. if `1 − noise ≤ low` and `high ≤ 1 + noise` → [`Verdict::EqualWithinNoise`];
    /// 2. else if `p_value < alpha` and the interval excludes 1 → [`Verdict::Faster`] when
    ///    `high < 1`, [`Verdict::Slower`] when `low > 1`;
    /// 3. otherwise [`Verdict::NoSignificantDifference`].
    ///
    /// NaN anywhere makes the corresponding comparison false, so it ends in rule 3.
    pub fn classify(interval: &Interval, p_value: f64, alpha: f64, noise: f64) -> Verdict {
        let Interval {
            estimate: ratio,
            low,
            high,
            confidence,
        } = *interval;
        let significant = p_value < alpha;
        if low >= 1.0 - noise && high <= 1.0 + noise {
            Verdict::EqualWithinNoise {
                ratio,
                low,
                high,
                confidence,
            }
        } else if significant && high < 1.0 {
            Verdict::Faster {
                ratio: 1.0 / ratio,
                low: 1.0 / high,
                high: 1.0 / low,
                confidence,
            }
        } else if significant && low > 1.0 {
            Verdict::Slower {
                ratio,
                low,
                high,
                confidence,
            }
        } else {
            Verdict::NoSignificantDifference {
                ratio,
                low,
                high,
                confidence,
            }
        }
    }

    /// True for [`Verdict::Faster`] and [`Verdict::Slower`].
    pub fn is_significant(&self) -> bool {
        matches!(self, Verdict::Faster { .. } | Verdict::Slower { .. })
    }

    /// One line of English, with `name_a` the reference and `name_b` the candidate:
    ///
    /// * `"B is 1.12× faster than A (95% CI 1.10–1.14)"` (speedup A/B),
    /// * `"B is 1.12× slower than A (95% CI 1.10–1.14)"` (slowdown B/A),
    /// * `"no significant difference (B/A 95% CI 0.99–1.02)"`,
    /// * `"equal within noise (B/A 95% CI 0.995–1.004)"`.
    ///
    /// Two decimals, or three/four when the interval is narrower than 0.02/0.002 so its ends
    /// stay distinguishable.
    pub fn words(&self, name_a: &str, name_b: &str) -> String {
        match *self {
            Verdict::Faster {
                ratio,
                low,
                high,
                confidence,
            } => {
                let d = decimals(low, high);
                format!(
                    "{name_b} is {ratio:.d$}× faster than {name_a} ({} CI {low:.d$}–{high:.d$})",
                    percent(confidence)
                )
            }
            Verdict::Slower {
                ratio,
                low,
                high,
                confidence,
            } => {
                let d = decimals(low, high);
                format!(
                    "{name_b} is {ratio:.d$}× slower than {name_a} ({} CI {low:.d$}–{high:.d$})",
                    percent(confidence)
                )
            }
            Verdict::NoSignificantDifference {
                low,
                high,
                confidence,
                ..
            } => {
                let d = decimals(low, high);
                format!(
                    "no significant difference ({name_b}/{name_a} {} CI {low:.d$}–{high:.d$})",
                    percent(confidence)
                )
            }
            Verdict::EqualWithinNoise {
                low,
                high,
                confidence,
                ..
            } => {
                let d = decimals(low, high);
                format!(
                    "equal within noise ({name_b}/{name_a} {} CI {low:.d$}–{high:.d$})",
                    percent(confidence)
                )
            }
        }
    }
}

/// Decimals of a ratio and its interval: two, or three/four when the interval is narrower than
/// 0.02/0.002 so its ends stay distinguishable. Every view that prints a ratio uses it.
pub fn decimals(low: f64, high: f64) -> usize {
    let w = (high - low).abs();
    if w >= 0.02 || w.is_nan() {
        2
    } else if w >= 0.002 {
        3
    } else {
        4
    }
}

fn percent(confidence: f64) -> String {
    let p = confidence * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// Settings for [`compare`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CompareOptions {
    /// Resample rounds jointly (see [`bootstrap_ratio_of_medians`](super::bootstrap_ratio_of_medians)).
    pub paired: bool,
    /// Confidence level of the ratio interval (default 0.95).
    pub confidence: f64,
    /// Significance level for the test (default 0.05).
    pub alpha: f64,
    /// Relative noise threshold for "equal within noise" (default 0.01 = ±1%).
    pub noise: f64,
    /// Bootstrap resamples (default 10 000).
    pub resamples: usize,
    /// Bootstrap seed (default 0).
    pub seed: u64,
    /// Bootstrap interval method (default [`BootstrapMethod::Percentile`]).
    pub method: BootstrapMethod,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            paired: false,
            confidence: 0.95,
            alpha: 0.05,
            noise: 0.01,
            resamples: 10_000,
            seed: 0,
            method: BootstrapMethod::Percentile,
        }
    }
}

/// Everything [`compare`] found.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Bootstrap interval for median(candidate) / median(reference).
    pub ratio: Interval,
    /// Two-sided Mann–Whitney U test of reference against candidate.
    pub test: TestResult,
    /// [`Verdict::classify`] of the two.
    pub verdict: Verdict,
}

/// Compares a candidate sample against a reference sample of run times: bootstrap ratio of
/// medians ([`bootstrap_ratio_of_medians`](super::bootstrap_ratio_of_medians)), two-sided [`mann_whitney_u`], and
/// [`Verdict::classify`]. `None` if either step returns `None`.
///
/// When `paired`, the test still treats the samples as independent; with the positively
/// correlated rounds of interleaved runs this makes it conservative (fewer false alarms, less
/// power), which the simulations in `tests/stats_simulation.rs` confirm.
pub fn compare(reference: &[f64], candidate: &[f64], opts: &CompareOptions) -> Option<Comparison> {
    let ratio = bootstrap_ratio_of_medians_with(
        reference,
        candidate,
        opts.paired,
        opts.confidence,
        opts.resamples,
        opts.seed,
        opts.method,
    )?;
    let test = mann_whitney_u(reference, candidate)?;
    let verdict = Verdict::classify(&ratio, test.p_value, opts.alpha, opts.noise);
    Some(Comparison {
        ratio,
        test,
        verdict,
    })
}
