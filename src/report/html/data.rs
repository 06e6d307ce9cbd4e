//! What the report reads out of a results file: the values of one metric per run, the
//! environment records runs carry, setups, paired rounds, and how to print a value.
//!
//! For: turning [`Session`]/[`Benchmark`] into plain numbers for tables and plots, tolerating
//! missing or odd data. Not for: statistics (see `crate::stats`) or drawing.

use crate::results::{Benchmark, MetricSummary, Run};
use std::collections::BTreeMap;

/// The metric a report shows: the one of every comparison.
pub use crate::conclude::levels::Metric;

/// How one run took part in a benchmark's statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Counted,
    Warmup,
    /// Not warm-up and not counted: failed, killed, or hit a limit.
    Excluded,
}

/// A run's value of a metric, with its position and role.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// `Run.index`.
    pub index: usize,
    pub value: f64,
    pub role: Role,
}

/// Every run's value of `metric`, in run order (runs without a value are skipped).
pub fn points(b: &Benchmark, metric: &Metric) -> Vec<Point> {
    let mut pts: Vec<Point> = b
        .runs
        .iter()
        .filter_map(|r| {
            let value = metric.of_run(r)?;
            let role = if r.warmup {
                Role::Warmup
            } else if r.counted {
                Role::Counted
            } else {
                Role::Excluded
            };
            Some(Point {
                index: r.index,
                value,
                role,
            })
        })
        .collect();
    pts.sort_by_key(|p| p.index);
    pts
}

/// The counted values of `metric`, in run order.
pub fn counted(b: &Benchmark, metric: &Metric) -> Vec<f64> {
    points(b, metric)
        .into_iter()
        .filter(|p| p.role == Role::Counted)
        .map(|p| p.value)
        .collect()
}

/// What the machine did around one run (`Run.extra["environment"]`); every field optional.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EnvSample {
    pub index: usize,
    pub temp_before_c: Option<f64>,
    /// CPU seconds used by other processes during the run.
    pub other_cpu_time: Option<f64>,
    /// Mean frequency of the run's cores before the run, in MHz (`freq_before_khz`: one
    /// number or one per core, nulls where unknown).
    pub freq_mhz: Option<f64>,
    pub interfered: bool,
}

/// The environment records of a benchmark's runs; empty when runs carry none.
pub fn environment(b: &Benchmark) -> Vec<EnvSample> {
    let mut out: Vec<EnvSample> = b
        .runs
        .iter()
        .filter_map(|r| {
            let e = r.extra.get("environment")?.as_object()?;
            let num = |k: &str| e.get(k).and_then(|v| v.as_f64()).filter(|v| v.is_finite());
            Some(EnvSample {
                index: r.index,
                temp_before_c: num("temp_before_c"),
                other_cpu_time: num("other_cpu_time"),
                freq_mhz: mean_khz(e.get("freq_before_khz")).map(|k| k / 1000.0),
                interfered: e
                    .get("interfered")
                    .and_then(|v| v.as_bool())
                    .unwrap_or(false),
            })
        })
        .collect();
    out.sort_by_key(|e| e.index);
    out
}

fn mean_khz(v: Option<&serde_json::Value>) -> Option<f64> {
    let xs: Vec<f64> = match v? {
        serde_json::Value::Array(a) => a.iter().filter_map(|x| x.as_f64()).collect(),
        other => other.as_f64().into_iter().collect(),
    };
    let xs: Vec<f64> = xs
        .into_iter()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// A readable key for a run's randomized setup (`Run.extra["setup"]`), if it has one: a string
/// or number as is; an object by its `id`, `index` or `name`; anything else as compact JSON.
pub fn setup_key(r: &Run) -> Option<String> {
    let v = r.extra.get("setup")?;
    Some(match v {
        serde_json::Value::Null => return None,
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::Object(o) => ["id", "index", "name"]
            .iter()
            .find_map(|k| match o.get(*k) {
                Some(serde_json::Value::String(s)) => Some(s.clone()),
                Some(serde_json::Value::Number(n)) => Some(n.to_string()),
                _ => None,
            })
            .unwrap_or_else(|| v.to_string()),
        other => other.to_string(),
    })
}

/// Counted values of `metric` grouped by setup; empty unless at least two setups occur.
pub fn by_setup(b: &Benchmark, metric: &Metric) -> Vec<(String, Vec<f64>)> {
    let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in b.runs.iter().filter(|r| r.counted && !r.warmup) {
        if let (Some(k), Some(v)) = (setup_key(r), metric.of_run(r)) {
            groups.entry(k).or_default().push(v);
        }
    }
    if groups.len() < 2 {
        return Vec::new();
    }
    let mut out: Vec<(String, Vec<f64>)> = groups.into_iter().collect();
    // Numeric setup ids sort numerically.
    out.sort_by(|a, b| match (a.0.parse::<f64>(), b.0.parse::<f64>()) {
        (Ok(x), Ok(y)) => x.total_cmp(&y),
        _ => a.0.cmp(&b.0),
    });
    out
}

/// Pairs of counted values of two benchmarks measured in the same interleaved round.
pub fn paired_rounds(
    reference: &Benchmark,
    candidate: &Benchmark,
    metric: &Metric,
) -> Vec<(f64, f64)> {
    let by_round = |b: &Benchmark| -> BTreeMap<usize, f64> {
        b.runs
            .iter()
            .filter(|r| r.counted && !r.warmup)
            .filter_map(|r| Some((r.round?, metric.of_run(r)?)))
            .collect()
    };
    let a = by_round(reference);
    let c = by_round(candidate);
    a.iter()
        .filter_map(|(round, x)| Some((*x, *c.get(round)?)))
        .collect()
}

/// A benchmark's identity across result files: its name and parameters.
pub fn benchmark_key(b: &Benchmark) -> String {
    let mut k = b.name.clone();
    for (p, v) in &b.parameters {
        k.push_str(&format!("\u{1f}{p}={v}"));
    }
    k
}

/// The name with its parameters, for people.
pub fn display_name(b: &Benchmark) -> String {
    if b.parameters.is_empty()
        || b.parameters
            .iter()
            .all(|(k, v)| b.name.contains(&format!("{k}={v}")) || b.name.contains(v.as_str()))
    {
        b.name.clone()
    } else {
        let ps: Vec<String> = b
            .parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{} ({})", b.name, ps.join(", "))
    }
}

pub use crate::results::facts::resolution;

/// Relative half-width of the median CI (e.g. 0.012 for ±1.2%), when exact.
pub fn relative_ci(m: &MetricSummary) -> Option<f64> {
    let r = resolution(m)?;
    (m.median.abs() > 0.0)
        .then(|| r / m.median.abs())
        .filter(|v| v.is_finite())
}
