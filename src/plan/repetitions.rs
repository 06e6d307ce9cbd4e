//! The repetition plan file written by `tare plan` and followed by `tare run --plan FILE`:
//! how many setups and how many runs in each (Kalibera & Jones 2013), and what the setups
//! randomize. Plain serde data.

use crate::setup::{Factor, Range};
use serde::{Deserialize, Serialize};

/// One level of the design, as planned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedLevel {
    /// `run` or `setup`.
    pub level: String,
    /// Repetitions at this level per unit of the level above (for the top: in all).
    pub repetitions: usize,
    /// Corrected (unbiased) variance estimate of this level from the pilot, seconds².
    pub variance: f64,
    /// Biased estimate `S²` of the level, seconds².
    pub variance_biased: f64,
    /// Cost of one repetition at this level, lower levels excluded, seconds.
    pub cost: f64,
}

/// What `tare plan` recommends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepetitionPlanFile {
    /// Levels from the lowest (`run`) up.
    pub levels: Vec<PlannedLevel>,
    pub setups: usize,
    pub runs_per_setup: usize,
    /// Target relative half-width of the CI of the mean.
    pub precision: f64,
    pub confidence: f64,
    /// Probability the planned experiment is meant to reach the target with.
    pub assurance: f64,
    /// Expected relative half-width with the plan.
    pub predicted_halfwidth: f64,
    /// Expected time of the measured runs and setups, seconds.
    pub predicted_cost: f64,
    /// Mean wall time of the pilot's runs, seconds.
    pub pilot_mean: f64,
    /// Setups and runs per setup the estimates came from.
    pub pilot_setups: usize,
    pub pilot_runs_per_setup: usize,
    /// The factors the pilot randomized (the plan's runs randomize the same).
    pub factors: Vec<Factor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_pad: Option<Range>,
    /// The benchmark of the pilot the plan is for.
    pub benchmark: String,
}
