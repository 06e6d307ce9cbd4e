//! Tukey's fences: which values lie more than 1.5 (mild) or 3 (severe) interquartile ranges
//! outside the quartiles.

use serde::{Deserialize, Serialize};

use super::quantile::{quantile, sorted_without_nan};

/// Which fence a value crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OutlierKind {
    /// Below `q1 − 3·iqr`.
    LowSevere,
    /// In `[q1 − 3·iqr, q1 − 1.5·iqr)`.
    LowMild,
    /// In `(q3 + 1.5·iqr, q3 + 3·iqr]`.
    HighMild,
    /// Above `q3 + 3·iqr`.
    HighSevere,
}

/// Tukey outlier classification of a sample. The four counts are disjoint (a severe outlier is
/// not also counted as mild).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outliers {
    /// First quartile (type-7).
    pub q1: f64,
    /// Third quartile (type-7).
    pub q3: f64,
    /// `q3 − q1`.
    pub iqr: f64,
    /// Values below `q1 − 3·iqr`.
    pub low_severe: usize,
    /// Values in `[q1 − 3·iqr, q1 − 1.5·iqr)`.
    pub low_mild: usize,
    /// Values in `(q3 + 1.5·iqr, q3 + 3·iqr]`.
    pub high_mild: usize,
    /// Values above `q3 + 3·iqr`.
    pub high_severe: usize,
    /// Every outlier as (index into the input slice, kind), in input order.
    pub indices: Vec<(usize, OutlierKind)>,
}

impl Outliers {
    /// Total number of outliers, mild and severe.
    pub fn total(&self) -> usize {
        self.low_severe + self.low_mild + self.high_mild + self.high_severe
    }
}

/// Classifies each value of `xs` against Tukey's fences built from numpy-default (type-7)
/// quartiles. NaN values are ignored (neither used for the quartiles nor reported). `None` if
/// no non-NaN value exists.
pub fn tukey_outliers(xs: &[f64]) -> Option<Outliers> {
    let s = sorted_without_nan(xs);
    let (q1, q3) = (quantile(&s, 0.25)?, quantile(&s, 0.75)?);
    let iqr = q3 - q1;
    let mut out = Outliers {
        q1,
        q3,
        iqr,
        low_severe: 0,
        low_mild: 0,
        high_mild: 0,
        high_severe: 0,
        indices: Vec::new(),
    };
    for (i, &x) in xs.iter().enumerate() {
        let kind = if x < q1 - 3.0 * iqr {
            out.low_severe += 1;
            OutlierKind::LowSevere
        } else if x < q1 - 1.5 * iqr {
            out.low_mild += 1;
            OutlierKind::LowMild
        } else if x > q3 + 3.0 * iqr {
            out.high_severe += 1;
            OutlierKind::HighSevere
        } else if x > q3 + 1.5 * iqr {
            out.high_mild += 1;
            OutlierKind::HighMild
        } else {
            continue;
        };
        out.indices.push((i, kind));
    }
    Some(out)
}
