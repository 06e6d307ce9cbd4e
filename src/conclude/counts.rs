//! Comparisons of a count that repeats: instructions (or simulated cache misses) counted by
//! Valgrind are the same in every run of a deterministic program, whatever the machine's load.
//! Where every run of each side agrees within [`REPEAT`], there is no noise for an interval or
//! a test to weigh: a change of at least [`WORK_CHANGE`] is a change in the work the program
//! does, a smaller one is none. Where the counts do not repeat (a program whose work depends
//! on time, randomness, hash seeds or scheduling), or a side has a single run (whether its
//! count repeats is unknown), this gives no comparison and the process-level model of
//! `levels` decides, as it does for times.
//!
//! Pure: takes values grouped by session and process, returns a record; never prints.

use super::levels::{Comparison, Outcome, Sessions};

/// Largest relative spread (max − min over the median) of one side's counts still called
/// repeating: 0.01%.
pub const REPEAT: f64 = 1e-4;

/// Smallest relative change of a repeating count reported as a change in work: 0.1%.
pub const WORK_CHANGE: f64 = 1e-3;

fn flat(side: &Sessions) -> Vec<f64> {
    side.iter().flatten().flatten().copied().collect()
}

/// Relative spread of `xs` (max − min over the median), None for fewer than two values or a
/// median that is not positive.
pub fn spread(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let median = crate::stats::median(&v)?;
    (median > 0.0).then(|| (v[v.len() - 1] - v[0]) / median)
}

/// The comparison of a repeating count `metric` (its event name, for the words); None where a
/// side's counts do not repeat or a side has fewer than two runs. The interval is the range of
/// the ratios of every new run to every old run (it holds all of them: confidence 1).
pub fn compare(old: &Sessions, new: &Sessions, metric: &str) -> Option<Comparison> {
    let (x, y) = (flat(old), flat(new));
    let (sx, sy) = (spread(&x)?, spread(&y)?);
    if sx > REPEAT || sy > REPEAT {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (om, nm) = (mean(&x), mean(&y));
    let ratio = nm / om;
    let lo = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let range = (lo(&y) / hi(&x), hi(&y) / lo(&x));
    let repeat = if sx == 0.0 && sy == 0.0 {
        "every run of each side counted the same".to_string()
    } else {
        format!("each side's runs agree within {:.4}%", sx.max(sy) * 100.0)
    };
    let change = format!("{:+.3}%", (ratio - 1.0) * 100.0);
    let (outcome, words) = if (ratio - 1.0).abs() < WORK_CHANGE {
        (
            Outcome::EqualWithinNoise,
            format!(
                "equal ({metric} differ by {change}, less than the {}% a change in work needs; {repeat})",
                WORK_CHANGE * 100.0
            ),
        )
    } else {
        let (outcome, more) = if ratio > 1.0 {
            (Outcome::Slower, "more")
        } else {
            (Outcome::Faster, "fewer")
        };
        (
            outcome,
            format!(
                "new counts {change} {more} {metric}: a change in work ({repeat}: no interval or test needed)"
            ),
        )
    };
    let processes = |s: &Sessions| s.iter().map(Vec::len).sum();
    Some(Comparison {
        old_processes: processes(old),
        new_processes: processes(new),
        old_samples: x.len(),
        new_samples: y.len(),
        old_median: om,
        new_median: nm,
        ratio,
        ci: Some(range),
        confidence: 1.0,
        p_value: None,
        p_adjusted: None,
        outcome,
        why: Vec::new(),
        words,
        session: None,
        paired_rounds: None,
        procedure: None,
        adjusted_for: 0,
    })
}

/// Which backend counted a run: a fact of the record, read as exports read it.
pub use crate::results::facts::{backend_of, BACKEND_KEY};

/// Key of a run's busiest functions (Valgrind) in `Run.extra`.
pub const FUNCTIONS_KEY: &str = "functions";

/// The functions whose instructions moved most between two sides of a benchmark: each side's
/// per-function counts (the median over its counted runs, a function missing from a run's list
/// counting 0 there), the `top` largest absolute differences, new − old, largest first. Empty
/// when a side kept no functions.
pub fn functions_moved(
    old: &[&crate::results::Benchmark],
    new: &[&crate::results::Benchmark],
    top: usize,
) -> Vec<(String, f64)> {
    fn side(bs: &[&crate::results::Benchmark]) -> std::collections::BTreeMap<String, f64> {
        let runs: Vec<std::collections::BTreeMap<String, f64>> = bs
            .iter()
            .flat_map(|b| b.runs.iter().filter(|r| r.counted))
            .filter_map(|r| r.extra.get(FUNCTIONS_KEY)?.as_array().cloned())
            .map(|list| {
                list.iter()
                    .filter_map(|f| {
                        Some((
                            f["function"].as_str()?.to_string(),
                            f["instructions"].as_f64()?,
                        ))
                    })
                    .collect()
            })
            .collect();
        let names: std::collections::BTreeSet<&String> =
            runs.iter().flat_map(|r| r.keys()).collect();
        names
            .into_iter()
            .map(|n| {
                let mut xs: Vec<f64> = runs
                    .iter()
                    .map(|r| r.get(n).copied().unwrap_or(0.0))
                    .collect();
                xs.sort_by(f64::total_cmp);
                (n.clone(), crate::stats::median(&xs).unwrap_or(0.0))
            })
            .collect()
    }
    let (o, n) = (side(old), side(new));
    if o.is_empty() || n.is_empty() {
        return Vec::new();
    }
    let names: std::collections::BTreeSet<&String> = o.keys().chain(n.keys()).collect();
    let mut moved: Vec<(String, f64)> = names
        .into_iter()
        .map(|f| {
            let d = n.get(f).copied().unwrap_or(0.0) - o.get(f).copied().unwrap_or(0.0);
            (f.clone(), d)
        })
        .filter(|(_, d)| *d != 0.0)
        .collect();
    moved.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()).then_with(|| a.0.cmp(&b.0)));
    moved.truncate(top);
    moved
}

/// Key of a benchmark's counter summary in `Benchmark.extra`.
pub const SUMMARY_KEY: &str = "counters";

/// Each counted event of a benchmark's counted runs: its median, min, max, the runs it was
/// counted in, its relative spread and whether it repeats (spread ≤ [`REPEAT`]), with the
/// backend that counted it; None when no run has counters.
pub fn summary(b: &crate::results::Benchmark) -> Option<serde_json::Value> {
    let mut events: Vec<(String, Vec<f64>)> = Vec::new();
    let mut backend = None;
    for r in b.runs.iter().filter(|r| r.counted) {
        let Some(list) = r.extra.get("counters").and_then(|v| v.as_array()) else {
            continue;
        };
        backend = backend.or_else(|| backend_of(r).map(String::from));
        for c in list {
            let (Some(ev), Some(v)) = (c["event"].as_str(), c["value"].as_f64()) else {
                continue;
            };
            match events.iter_mut().find(|e| e.0 == ev) {
                Some(e) => e.1.push(v),
                None => events.push((ev.to_string(), vec![v])),
            }
        }
    }
    if events.is_empty() {
        return None;
    }
    let list: Vec<serde_json::Value> = events
        .into_iter()
        .filter_map(|(event, xs)| {
            let d = crate::stats::describe(&xs)?;
            let spread = spread(&xs);
            Some(serde_json::json!({
                "event": event,
                "median": d.median,
                "min": d.min,
                "max": d.max,
                "runs": xs.len(),
                "spread": spread,
                "repeats": spread.is_some_and(|s| s <= REPEAT),
            }))
        })
        .collect();
    Some(serde_json::json!({"backend": backend, "events": list}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(values: &[f64]) -> Sessions {
        vec![values.iter().map(|v| vec![*v]).collect()]
    }

    #[test]
    fn one_percent_more_work_is_slower() {
        let c = compare(
            &side(&[1_000_000.0, 1_000_000.0, 1_000_000.0]),
            &side(&[1_010_000.0, 1_010_000.0]),
            "instructions",
        )
        .unwrap();
        assert_eq!(c.outcome, Outcome::Slower);
        assert!((c.ratio - 1.01).abs() < 1e-12);
        assert!(c.words.contains("change in work"), "{}", c.words);
    }

    #[test]
    fn a_a_and_tiny_changes_are_equal() {
        let same = side(&[5e8, 5e8, 5e8]);
        assert_eq!(
            compare(&same, &same, "instructions").unwrap().outcome,
            Outcome::EqualWithinNoise
        );
        // 0.05% more: below the 0.1% of a change in work.
        let c = compare(&same, &side(&[5.0025e8, 5.0025e8]), "instructions").unwrap();
        assert_eq!(c.outcome, Outcome::EqualWithinNoise);
        // 0.1% fewer: a change.
        let c = compare(&same, &side(&[4.995e8, 4.995e8]), "instructions").unwrap();
        assert_eq!(c.outcome, Outcome::Faster);
    }

    #[test]
    fn counts_that_do_not_repeat_or_single_runs_are_left_to_the_model() {
        let same = side(&[1e6, 1e6]);
        assert!(compare(&same, &side(&[1e6, 1.001e6]), "instructions").is_none());
        assert!(compare(&same, &side(&[1e6]), "instructions").is_none());
        // Within 0.01%: still repeating.
        assert!(compare(&same, &side(&[1e6, 1.00005e6]), "instructions").is_some());
    }
}
