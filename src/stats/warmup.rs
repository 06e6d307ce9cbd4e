//! Warm-up detection: do the first runs of a series differ from the steady state, and how many
//! should be discarded?
//!
//! Method: MSER-5 (White 1997; Hoad, Robinson & Davies 2010), the standard truncation rule for
//! simulation output. The series is cut into batches of 5 and the batch means `Y_1..Y_m`
//! formed (a trailing partial batch is left out of the batch means). For each candidate
//! truncation of `d` batches, `0 ≤ d ≤ ⌊m/2⌋`, MSER(d) = Σ_{j>d} (Y_j − Ȳ_d)² / (m − d)²,
//! the squared standard error of the mean of what remains; the `d` minimising it (the first
//! such `d` on ties) is the truncation point. Batching smooths single outliers so they do
//! not masquerade as warm-up.
//!
//! MSER alone truncates something in a sizeable fraction of stationary series, so the
//! suggestion is only kept when the truncated prefix differs from the rest by a two-sided
//! Mann–Whitney test at α = 0.01 (stricter than 0.05 because the prefix was chosen to look
//! different).
//!
//! Limits: truncation comes in steps of 5 runs and MSER tends to over-truncate a little (a
//! clean 10-run step is typically cut at 15–20). A single slow first run (cold cache) is
//! usually *not* confirmed as warm-up (2% of simulated series); it shows up as a Tukey outlier
//! instead (see [`super::outliers`]).
//!
//! MSER is hand-written (a few sums; statrs has nothing similar).

use serde::{Deserialize, Serialize};

use super::hypothesis::mann_whitney_u;
use super::quantile::{median, sorted_without_nan};

/// Batch size of MSER-5.
pub const MSER_BATCH: usize = 5;
/// Significance level of the confirming Mann–Whitney test.
pub const WARMUP_ALPHA: f64 = 0.01;
/// Shortest series analysed: 4 batches.
pub const WARMUP_MIN_RUNS: usize = 4 * MSER_BATCH;

/// Warm-up evidence for one series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Warmup {
    /// Runs to discard: `5·d` when MSER-5 truncates `d > 0` batches and the prefix differs
    /// significantly from the rest, else 0.
    pub suggested_warmup: usize,
    /// Truncation proposed by MSER-5, in runs (`5·d`), before the confirming test.
    pub mser_truncation: usize,
    /// Two-sided Mann–Whitney p-value of the first `mser_truncation` runs against the rest;
    /// `None` when MSER proposed no truncation.
    pub p_value: Option<f64>,
    /// Median of the proposed prefix (`None` when it is empty).
    pub prefix_median: Option<f64>,
    /// Median of the runs after the proposed prefix.
    pub rest_median: f64,
}

/// MSER-5 warm-up detection on `xs` in run order, confirmed by Mann–Whitney (see the module
/// docs). NaN values are dropped and the rest treated as consecutive. `None` for fewer than
/// 20 values.
pub fn warmup_transient(xs: &[f64]) -> Option<Warmup> {
    let x: Vec<f64> = xs.iter().copied().filter(|v| !v.is_nan()).collect();
    if x.len() < WARMUP_MIN_RUNS {
        return None;
    }
    let d = mser_truncation(&x, MSER_BATCH)?;
    let cut = d * MSER_BATCH;
    let rest_median = median(&sorted_without_nan(&x[cut..]))?;
    if cut == 0 {
        return Some(Warmup {
            suggested_warmup: 0,
            mser_truncation: 0,
            p_value: None,
            prefix_median: None,
            rest_median,
        });
    }
    let p = mann_whitney_u(&x[..cut], &x[cut..]).map(|t| t.p_value);
    let significant = p.is_some_and(|p| p < WARMUP_ALPHA);
    Some(Warmup {
        suggested_warmup: if significant { cut } else { 0 },
        mser_truncation: cut,
        p_value: p,
        prefix_median: median(&sorted_without_nan(&x[..cut])),
        rest_median,
    })
}

/// MSER-`batch` truncation point in batches (see the module docs). `None` if fewer than two
/// full batches or a non-finite statistic.
pub fn mser_truncation(xs: &[f64], batch: usize) -> Option<usize> {
    if batch == 0 {
        return None;
    }
    let y: Vec<f64> = xs
        .chunks_exact(batch)
        .map(|c| c.iter().sum::<f64>() / batch as f64)
        .collect();
    let m = y.len();
    if m < 2 {
        return None;
    }
    // Suffix sums give every MSER(d) in O(m). The batch means are centred on their overall
    // mean first so that Σy² − (Σy)²/k does not cancel catastrophically for run times whose
    // spread is tiny compared with their level.
    let centre = y.iter().sum::<f64>() / m as f64;
    let (mut sum, mut sum_sq) = (0.0, 0.0);
    let mut stat = vec![0.0; m];
    for d in (0..m).rev() {
        let v = y[d] - centre;
        sum += v;
        sum_sq += v * v;
        let k = (m - d) as f64;
        stat[d] = (sum_sq - sum * sum / k).max(0.0) / (k * k);
    }
    let mut best: Option<(usize, f64)> = None;
    for (d, &st) in stat.iter().enumerate().take(m / 2 + 1) {
        if !st.is_finite() {
            return None;
        }
        if best.is_none_or(|(_, b)| st < b) {
            best = Some((d, st));
        }
    }
    best.map(|(d, _)| d)
}
