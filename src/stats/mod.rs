//! Pure statistics over numbers: summaries, quantiles, intervals, tests, diagnostics.
//!
//! No I/O, no processes, no clocks: every function takes numbers (and a seed where it
//! resamples) and returns numbers. Each is unit-tested against reference values computed with
//! an established package (see `tests/data/stats/` and `scripts/stats_reference.py`).
//!
//! No function panics: empty input, a single value, all-equal values and NaN give `None` or a
//! documented result. NaN values are ignored (dropped) unless a function says otherwise.
//!
//! Submodules:
//! * [`quantile`](mod@quantile) — type-7 quantiles, sorting helpers;
//! * [`describe`](mod@describe) — one-sample summary and distribution-free median interval;
//! * [`bootstrap`](mod@bootstrap) — seeded bootstrap interval for a ratio of medians;
//! * [`mean_ratio`](mod@mean_ratio) — seeded bootstrap interval for a ratio of means (per-process
//!   values), expanded for small samples;
//! * [`hypothesis`](mod@hypothesis) — Mann–Whitney, Welch, Kruskal–Wallis, Holm;
//! * [`next_value`](mod@next_value) — one new value against a baseline (prediction interval);
//! * [`welch_ratio`](mod@welch_ratio) — ratio of geometric means from Welch's t on logs, its
//!   interval and test one procedure (few processes a side);
//! * [`compare`](mod@compare) — verdicts ("B is 1.12× faster than A");
//! * [`scaling`](mod@scaling) — power law and complexity class of a parameter scan;
//! * [`outliers`](mod@outliers), [`trend`], [`autocorr`], [`warmup`], [`modality`] — diagnostics.

pub mod autocorr;
pub mod binomial;
pub mod bootstrap;
pub mod changepoint;
pub mod compare;
pub mod describe;
pub mod geomean;
pub mod hypothesis;
pub mod mean_ratio;
pub mod modality;
pub mod next_value;
pub mod outliers;
pub mod paired_ratio;
pub mod quantile;
mod rank;
#[cfg(test)]
mod reference;
pub mod scaling;
pub mod session_ratio;
pub mod trend;
pub mod variance;
pub mod warmup;
pub mod welch_ratio;

pub use autocorr::{lag1_autocorrelation, Autocorrelation};
pub use bootstrap::{
    bca_acceleration, bootstrap_ratio_of_medians, bootstrap_ratio_of_medians_with, BootstrapMethod,
    Interval,
};
pub use compare::{compare, CompareOptions, Comparison, Verdict};
pub use describe::{describe, median_ci, median_ci_rank, relative_median_ci_halfwidth, Describe};
pub use hypothesis::{
    holm, kruskal_wallis, mann_whitney_u, mann_whitney_u_with, min_runs_for_significance,
    welch_t_test, MannWhitneyMethod, TestResult,
};
pub use mean_ratio::{bootstrap_ratio_of_means, expansion};
pub use modality::{bimodality_coefficient, gaussian_kde, modes, silverman_bandwidth, Modality};
pub use outliers::{tukey_outliers, OutlierKind, Outliers};
pub use quantile::{median, quantile, sorted_without_nan};
pub use trend::{mann_kendall, Trend};
pub use variance::{
    bootstrap_mean, hierarchical_bootstrap_ratio, kalibera_jones, one_sample_t,
    one_way_random_effects, plan_repetitions, LevelVariance, RepetitionPlan, VarianceComponents,
};
pub use warmup::{mser_truncation, warmup_transient, Warmup};

/// A ratio of new to old with its two-sided interval and the test of "no difference" that goes
/// with it, one procedure (the interval excludes 1 exactly when the p-value is below its
/// level): what [`paired_ratio::paired_ratio`], [`welch_ratio::welch_log_ratio`] and
/// [`session_ratio::thirds_ratio`] return, each saying which ratio it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatioTest {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub p_value: f64,
    /// Degrees of freedom of the test's t distribution (NaN where no value spreads).
    pub df: f64,
}
