//! The suite line of a head-to-head `tare kernels` session: for each implementation against
//! the reference (two builds of one benchmark suite, say), how many of the benchmarks compared
//! are slower, faster or within noise, and the geometric mean of their ratios with its interval
//! (`stats::geomean`, benchstat's summary, its interval from the benchmarks' own intervals):
//! `new against old: 42 benchmarks: 2 slower, 1 faster, 39 within noise; geometric mean 1.003×
//! [0.998, 1.008]`. Recorded in `Session.extra["suites"]` so the store and exports keep it.

use crate::results::Session;
use serde::{Deserialize, Serialize};

/// Key of the suite lines in `Session.extra`.
pub const EXTRA_KEY: &str = "suites";

/// One implementation against the reference over every benchmark they share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteRecord {
    pub reference: String,
    pub candidate: String,
    pub benchmarks: usize,
    pub slower: usize,
    pub faster: usize,
    /// No verdict of a difference: no significant difference, or equal within noise.
    pub within_noise: usize,
    /// Stopped unsettled (too few processes, or too noisy to say).
    pub inconclusive: usize,
    pub geomean: Option<f64>,
    pub geomean_ci: Option<(f64, f64)>,
    /// The line people read.
    pub line: String,
}

/// The suite records of a session's comparisons: one per candidate implementation that shares
/// two or more benchmarks with the reference (one benchmark has its own line already).
pub fn suites(s: &Session) -> Vec<SuiteRecord> {
    let label = |i: usize| {
        s.benchmarks
            .get(i)
            .and_then(super::kernels::kernel_record)
            .map(|k| k.implementation)
            .unwrap_or_default()
    };
    let mut groups: Vec<((String, String), Vec<usize>)> = Vec::new();
    for (i, c) in s.comparisons.iter().enumerate() {
        let key = (label(c.reference), label(c.candidate));
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    let mut out = Vec::new();
    for ((reference, candidate), idx) in groups {
        if idx.len() < 2 {
            continue;
        }
        let cs: Vec<_> = idx.iter().map(|&i| &s.comparisons[i]).collect();
        let count = |v: &[&str]| {
            cs.iter()
                .filter(|c| v.contains(&c.verdict.as_str()))
                .count()
        };
        let items: Vec<(f64, Option<(f64, f64)>)> = cs
            .iter()
            .map(|c| {
                let ci = (c.ratio_ci_low > 0.0 && c.ratio_ci_high.is_finite())
                    .then_some((c.ratio_ci_low, c.ratio_ci_high));
                (c.ratio, ci)
            })
            .collect();
        let g = crate::stats::geomean::geomean(&items, 0.95);
        let mut r = SuiteRecord {
            reference,
            candidate,
            benchmarks: cs.len(),
            slower: count(&["slower"]),
            faster: count(&["faster"]),
            within_noise: count(&["no-significant-difference", "equal-within-noise"]),
            inconclusive: 0,
            geomean: g.map(|g| g.value),
            geomean_ci: g.and_then(|g| g.ci),
            line: String::new(),
        };
        r.inconclusive = r.benchmarks - r.slower - r.faster - r.within_noise;
        r.line = line(&r);
        out.push(r);
    }
    out
}

/// `b against a: 5 benchmarks: 1 slower, 0 faster, 4 within noise; geometric mean 1.143×
/// [1.021, 1.280]`.
pub fn line(r: &SuiteRecord) -> String {
    let mut l = format!(
        "{} against {}: {} benchmarks: {} slower, {} faster, {} within noise",
        r.candidate, r.reference, r.benchmarks, r.slower, r.faster, r.within_noise
    );
    if r.inconclusive > 0 {
        l.push_str(&format!(", {} inconclusive", r.inconclusive));
    }
    match (r.geomean, r.geomean_ci) {
        (Some(g), Some((lo, hi))) => {
            l.push_str(&format!("; geometric mean {g:.3}× [{lo:.3}, {hi:.3}]"))
        }
        (Some(g), None) => l.push_str(&format!(
            "; geometric mean {g:.3}× (no interval: a benchmark's comparison has none)"
        )),
        (None, _) => {}
    }
    l
}

/// Computes the suite records and keeps them in the session.
pub fn record(s: &mut Session) {
    let recs = suites(s);
    if recs.is_empty() {
        s.extra.remove(EXTRA_KEY);
    } else if let Ok(v) = serde_json::to_value(&recs) {
        s.extra.insert(EXTRA_KEY.to_string(), v);
    }
}

/// The suite records kept in a session (empty when none or unreadable).
pub fn recorded(s: &Session) -> Vec<SuiteRecord> {
    s.extra
        .get(EXTRA_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_the_geometric_mean() {
        let mut r = SuiteRecord {
            reference: "a".into(),
            candidate: "b".into(),
            benchmarks: 5,
            slower: 1,
            faster: 0,
            within_noise: 3,
            inconclusive: 1,
            geomean: Some(1.1432),
            geomean_ci: Some((1.0213, 1.2799)),
            line: String::new(),
        };
        assert_eq!(
            line(&r),
            "b against a: 5 benchmarks: 1 slower, 0 faster, 3 within noise, 1 inconclusive; geometric mean 1.143× [1.021, 1.280]"
        );
        r.geomean_ci = None;
        r.inconclusive = 0;
        assert!(line(&r).ends_with(
            "within noise; geometric mean 1.143× (no interval: a benchmark's comparison has none)"
        ));
    }
}
