//! Lag-1 autocorrelation of a series in run order, with the Ljung–Box test at lag 1: are
//! consecutive runs dependent (drift, periodic interference), so that iid-based intervals are
//! too narrow?
//!
//! The sums are hand-written (statrs has no autocorrelation); the χ² tail is statrs'.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// Lag-1 autocorrelation evidence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Autocorrelation {
    /// Number of non-NaN values used.
    pub n: usize,
    /// Lag-1 sample autocorrelation `Σ_{t<n−1} (x_t − x̄)(x_{t+1} − x̄) / Σ_t (x_t − x̄)²`
    /// (`statsmodels.tsa.stattools.acf(x, nlags=1)[1]`).
    pub r1: f64,
    /// Ljung–Box statistic at lag 1: `Q = n(n+2)·r1²/(n−1)`.
    pub ljung_box_q: f64,
    /// `P(χ²₁ > Q)` (`acorr_ljungbox(x, lags=[1])["lb_pvalue"]`).
    pub p_value: f64,
    /// Approximate 95% white-noise band `1.96/√n`; `|r1|` beyond it suggests dependence.
    pub band: f64,
}

/// Lag-1 autocorrelation and Ljung–Box test of `xs` in run order. NaN values are dropped and
/// the rest treated as consecutive. `None` for fewer than 3 values or zero variance.
pub fn lag1_autocorrelation(xs: &[f64]) -> Option<Autocorrelation> {
    let x: Vec<f64> = xs.iter().copied().filter(|v| !v.is_nan()).collect();
    let n = x.len();
    if n < 3 {
        return None;
    }
    let nf = n as f64;
    let mean = x.iter().sum::<f64>() / nf;
    let c0: f64 = x.iter().map(|v| (v - mean) * (v - mean)).sum();
    let c1: f64 = x.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    let r1 = c1 / c0;
    if !(c0 > 0.0 && r1.is_finite()) {
        return None;
    }
    let q = nf * (nf + 2.0) * r1 * r1 / (nf - 1.0);
    let p = ChiSquared::new(1.0).ok()?.sf(q);
    Some(Autocorrelation {
        n,
        r1,
        ljung_box_q: q,
        p_value: p.clamp(0.0, 1.0),
        band: 1.96 / nf.sqrt(),
    })
}
