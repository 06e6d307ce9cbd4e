//! A benchmark's counted samples grouped by process and session ([`groups`], [`sessions`]):
//! what a process is for each [`Origin`] (a `tare run` run, a kernel's invocation, an imported
//! harness's recorded process or its file).
//!
//! For: turning a benchmark (or a side of several) into [`Groups`] and [`Sessions`] of one
//! metric's values. Not for: what a metric's value is (`metric.rs`) or comparing the groups
//! (`compare.rs`).

use super::{Groups, Metric, Sessions};
use crate::results::kernels;
use crate::results::{
    Benchmark, MethodKind, ProcessLevel, Session, PROCESS_KEY, PROCESS_LEVEL_KEY,
};
use std::collections::BTreeMap;

/// Where a benchmark's samples come from, which decides what a process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `tare run`: each run is a process.
    Run,
    /// `tare kernels`: samples belong to invocations.
    Kernels,
    /// Another harness's results (`tare import`): the recorded process, else the file.
    Imported,
}

impl Origin {
    pub fn of(s: &Session) -> Origin {
        if kernels::is_kernels(s) {
            Origin::Kernels
        } else if s.method.kind == MethodKind::Imported {
            Origin::Imported
        } else {
            Origin::Run
        }
    }
}

/// What one process is for a benchmark of this origin, in a few words ("run", "invocation",
/// "JMH fork", "file").
pub fn unit(b: &Benchmark, origin: Origin) -> String {
    match origin {
        Origin::Run => "run".into(),
        Origin::Kernels => "invocation".into(),
        Origin::Imported => b
            .extra
            .get(PROCESS_LEVEL_KEY)
            .and_then(|v| serde_json::from_value::<ProcessLevel>(v.clone()).ok())
            .map(|l| l.unit)
            .unwrap_or_else(|| "file".into()),
    }
}

/// Counted wall times of a benchmark keyed by (source, process): numbers sort as numbers.
fn keyed(b: &Benchmark, origin: Origin) -> BTreeMap<(u64, u64, String), Vec<f64>> {
    keyed_by(b, origin, &Metric::WallTime)
}

/// Counted values of `metric` keyed by (source, process); runs without a value are left out.
fn keyed_by(
    b: &Benchmark,
    origin: Origin,
    metric: &Metric,
) -> BTreeMap<(u64, u64, String), Vec<f64>> {
    let mut by: BTreeMap<(u64, u64, String), Vec<f64>> = BTreeMap::new();
    // A failed invocation's samples are no value of the kernel (its line and its stop rule
    // leave it out too).
    let failed = match origin {
        Origin::Kernels => kernels::failed_invocations(b),
        _ => Default::default(),
    };
    for r in b.runs.iter().filter(|r| r.counted) {
        let source = r.extra.get("source").and_then(|v| v.as_u64()).unwrap_or(0);
        let key = match origin {
            Origin::Run => (source, r.index as u64, String::new()),
            Origin::Kernels => match kernels::sample_of(r) {
                Some(s) if !failed.contains(&s.invocation) => {
                    (source, s.invocation as u64, String::new())
                }
                _ => continue,
            },
            Origin::Imported => match r.extra.get(PROCESS_KEY) {
                Some(v) => match v.as_u64() {
                    Some(n) => (source, n, String::new()),
                    None => (source, u64::MAX, v.to_string()),
                },
                None => (source, 0, String::new()),
            },
        };
        if let Some(v) = metric.value(r) {
            by.entry(key).or_default().push(v);
        }
    }
    by
}

/// Counted wall times of a benchmark grouped by process, in process order. An imported sample
/// with no process recorded belongs to the one process of its file (and of its source, in a
/// merged import).
pub fn groups(b: &Benchmark, origin: Origin) -> Groups {
    keyed(b, origin).into_values().collect()
}

/// Counted wall times of a benchmark of `tare kernels` keyed by the invocation's index (each
/// program once a round; `results::kernels::invocations` gives each index its round).
pub fn groups_by_invocation(b: &Benchmark) -> Vec<(usize, Vec<f64>)> {
    keyed(b, Origin::Kernels)
        .into_iter()
        .map(|((_, i, _), g)| (i as usize, g))
        .collect()
}

/// Counted wall times grouped by session, then process: a results file is one session, and
/// each source file of a merged import is one of its own (each was a separate harness run).
pub fn sessions(b: &Benchmark, origin: Origin) -> Sessions {
    sessions_of(b, origin, &Metric::WallTime)
}

/// [`sessions`] of any metric.
pub fn sessions_of(b: &Benchmark, origin: Origin, metric: &Metric) -> Sessions {
    let mut out: Vec<(u64, Groups)> = Vec::new();
    for ((source, _, _), g) in keyed_by(b, origin, metric) {
        match out.last_mut() {
            Some((s, gs)) if *s == source => gs.push(g),
            _ => out.push((source, vec![g])),
        }
    }
    out.into_iter().map(|(_, g)| g).collect()
}

/// The groups of one side made of several parts (the same benchmark in several files): each
/// file's processes are distinct processes.
pub fn side_groups(parts: &[(Origin, &Benchmark)]) -> Groups {
    parts.iter().flat_map(|(o, b)| groups(b, *o)).collect()
}

/// The sessions of one side made of several parts (one or more sessions per file).
pub fn side_sessions(parts: &[(Origin, &Benchmark)]) -> Sessions {
    side_sessions_of(parts, &Metric::WallTime)
}

/// [`side_sessions`] of any metric.
pub fn side_sessions_of(parts: &[(Origin, &Benchmark)], metric: &Metric) -> Sessions {
    parts
        .iter()
        .flat_map(|(o, b)| sessions_of(b, *o, metric))
        .collect()
}
