//! `tare compare`'s results for people and programs: a Markdown table ready for a pull-request
//! comment and a JSON document for dashboards, each with the geometric mean over the matched
//! benchmarks (benchstat's summary line) and the model the verdicts rest on. The terminal
//! table is printed by `cli/compare.rs` from the same rows.

use crate::conclude::levels::{Comparison, Outcome};
use crate::stats::geomean::GeoMean;
use crate::units;
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write;

/// One compared benchmark.
pub struct Row<'a> {
    pub name: String,
    pub parameters: BTreeMap<String, String>,
    pub comparison: &'a Comparison,
    /// Significantly slower by more than `--fail-if-slower`.
    pub regression: bool,
    /// Where instructions changed: the functions whose own instructions moved most (new − old).
    pub functions: Vec<(String, f64)>,
}

/// The rows of a conclusion; `threshold` (`--fail-if-slower`) marks regressions.
pub fn rows(cn: &crate::conclude::sides::Conclusion, threshold: Option<f64>) -> Vec<Row<'_>> {
    cn.records
        .iter()
        .zip(&cn.names)
        .zip(&cn.matched)
        .zip(&cn.functions)
        .map(|(((c, name), k), functions)| Row {
            name: name.clone(),
            parameters: k.1.clone(),
            comparison: c,
            regression: c.outcome == crate::conclude::levels::Outcome::Slower
                && threshold.is_some_and(|t| c.ratio - 1.0 > t),
            functions: functions.clone(),
        })
        .collect()
}

/// `main +160,000, strtol -12` for the functions that moved.
pub fn functions_words(functions: &[(String, f64)]) -> String {
    functions
        .iter()
        .map(|(f, d)| {
            let sign = if *d > 0.0 { "+" } else { "" };
            format!("{f} {sign}{}", units::format_thousands(d.round()))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What every output says besides the rows.
pub struct Context<'a> {
    pub model: &'a str,
    pub sessions: &'a [String],
    pub geomean: Option<GeoMean>,
    pub fail_if_slower: Option<f64>,
    pub alpha: f64,
    /// Benchmarks in one side only (not compared, `--allow-missing`).
    pub missing: &'a [String],
    /// What was compared (`--metric`: `time` or a counter's event).
    pub metric: &'a str,
    /// The values are counts, not seconds.
    pub count: bool,
}

/// A value as the metric's unit writes it (`conclude::levels::Metric::format`).
fn value(cx: &Context, v: f64) -> String {
    crate::conclude::levels::Metric::parse(cx.metric).format(v)
}

/// `+5.69%` for a ratio of 1.0569.
fn change(ratio: f64) -> String {
    format!("{:+.2}%", (ratio - 1.0) * 100.0)
}

/// The geometric-mean line: `geometric mean: +2.31% (95% CI -0.20% … +4.88%, over 12
/// benchmarks)`; without an interval where a benchmark's comparison has none.
pub fn geomean_line(g: &GeoMean) -> String {
    let ci = match g.ci {
        Some((lo, hi)) => format!("95% CI {} … {}, ", change(lo), change(hi)),
        None => "no interval: a benchmark's comparison has none, ".to_string(),
    };
    format!(
        "geometric mean: {} ({ci}over {})",
        change(g.value),
        units::plural(g.n, "benchmark")
    )
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn marker(r: &Row) -> &'static str {
    match r.comparison.outcome {
        Outcome::Slower if r.regression => "**slower** :x:",
        Outcome::Slower => "slower",
        Outcome::Faster => "faster",
        Outcome::EqualWithinNoise => "equal within noise",
        Outcome::NoSignificantDifference => "no significant difference",
        Outcome::Inconclusive => "inconclusive",
    }
}

/// The header of the interval column: its level, which every comparison drawn shares (1 − α/m,
/// `conclude::levels`), e.g. "97.5% CI"; "CI" where none was drawn.
pub fn ci_header(comparisons: &[crate::conclude::levels::Comparison]) -> String {
    comparisons
        .iter()
        .find(|c| c.procedure.is_some())
        .map_or("CI".to_string(), |c| {
            crate::conclude::levels::level_words(c.confidence, 1).0
        })
}

/// The Markdown table, the geometric mean and the model, for a pull-request comment.
pub fn markdown(rows: &[Row], cx: &Context) -> String {
    let mut out = String::new();
    let comparisons: Vec<_> = rows.iter().map(|r| r.comparison.clone()).collect();
    let _ = writeln!(
        out,
        "| benchmark | old | new | change | {} | p (adj.) | verdict |",
        ci_header(&comparisons)
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---|---:|---|");
    for r in rows {
        let c = r.comparison;
        let ci = c.ci.map_or("—".to_string(), |(lo, hi)| {
            format!("{} … {}", change(lo), change(hi))
        });
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            cell(&r.name),
            value(cx, c.old_median),
            value(cx, c.new_median),
            change(c.ratio),
            ci,
            c.p_adjusted.map_or("—".to_string(), units::format_p),
            marker(r)
        );
    }
    out.push('\n');
    if let Some(g) = &cx.geomean {
        let _ = writeln!(out, "**{}**\n", geomean_line(g));
    }
    let regressions = rows.iter().filter(|r| r.regression).count();
    if let Some(t) = cx.fail_if_slower {
        let _ = writeln!(
            out,
            "{} significantly slower by more than {} (α = {}, the level adjusted for the benchmarks compared).\n",
            units::plural(regressions, "benchmark"),
            units::format_percent(t),
            cx.alpha
        );
    }
    for r in rows.iter().filter(|r| !r.functions.is_empty()) {
        let _ = writeln!(
            out,
            "- {}: functions that moved most: {}",
            cell(&r.name),
            cell(&functions_words(&r.functions))
        );
    }
    for m in cx.missing {
        let _ = writeln!(out, "- not compared: {}", cell(m));
    }
    let _ = writeln!(out, "<sub>model: {}</sub>", cell(cx.model));
    for s in cx.sessions {
        let _ = writeln!(out, "<sub>sessions: {}</sub>", cell(s));
    }
    out
}

/// The comparison as JSON: every row with its numbers and words, the geometric mean, the model.
pub fn json(rows: &[Row], cx: &Context) -> serde_json::Value {
    json!({
        "metric": cx.metric,
        "model": cx.model,
        "sessions": cx.sessions,
        "alpha": cx.alpha,
        "fail_if_slower": cx.fail_if_slower,
        "regression": rows.iter().any(|r| r.regression),
        "geometric_mean": cx.geomean.map(|g| json!({
            "ratio": g.value,
            "ci": g.ci.map(|(lo, hi)| [lo, hi]),
            "benchmarks": g.n,
        })),
        "comparisons": rows.iter().map(|r| {
            let c = r.comparison;
            json!({
                "benchmark": r.name,
                "parameters": r.parameters,
                "old_mean": c.old_median,
                "new_mean": c.new_median,
                "ratio": c.ratio,
                "ci": c.ci.map(|(lo, hi)| [lo, hi]),
                "confidence": c.confidence,
                "p_value": c.p_value,
                "p_adjusted": c.p_adjusted,
                "old_processes": c.old_processes,
                "new_processes": c.new_processes,
                "verdict": c.outcome.as_str(),
                "words": c.words,
                "regression": r.regression,
                "functions_moved": r.functions.iter().map(|(f, d)| json!({"function": f, "instructions": d})).collect::<Vec<_>>(),
            })
        }).collect::<Vec<_>>(),
        "not_compared": cx.missing,
    })
}
