//! `--dump`: counts per category and score per column, and regression counts against a
//! baseline, as plain lines for CI logs.
//!
//! A regression is a run that was correct in the baseline and is not now, or that was not
//! wrong and is now wrong (same tool, configuration and input). `tare table --dump` exits 1
//! when there is at least one. Not for: people (see html).

use super::model::{summarize, Table};
use super::view::View;
use crate::suite::classify::Category;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// Regression counts of one column against the baseline.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Regressions {
    pub column: String,
    pub compared: usize,
    pub regressions: usize,
    pub fixed: usize,
    pub changed: usize,
    /// Baseline runs of this column's tool and configuration with no run now (a gate must
    /// not pass on them).
    pub missing: usize,
    /// "correct→timeout" and the like, with counts.
    pub transitions: BTreeMap<String, usize>,
}

/// Compares the given columns of `cur` with the baseline columns of the same tool
/// configuration.
pub fn compare(base: &Table, cur: &Table, columns: &[usize]) -> Vec<Regressions> {
    let mut base_cells: HashMap<(&str, &str, &str, &str), (Category, &str)> = HashMap::new();
    for row in &base.rows {
        for (ci, reps) in row.cells.iter().enumerate() {
            if let Some(s) = summarize(reps) {
                let col = &base.columns[ci];
                base_cells.insert(
                    (&col.tool, &col.config, &row.set, &row.input),
                    (s.category, &base.statuses[s.status as usize]),
                );
            }
        }
    }
    columns
        .iter()
        .map(|&ci| {
            let col = &cur.columns[ci];
            let mut r = Regressions {
                column: col.label.clone(),
                ..Default::default()
            };
            let mut seen: Vec<(&str, &str)> = Vec::new();
            for row in &cur.rows {
                let Some(now) = summarize(&row.cells[ci]) else {
                    continue;
                };
                let Some(&(was, was_status)) = base_cells.get(&(
                    col.tool.as_str(),
                    col.config.as_str(),
                    row.set.as_str(),
                    row.input.as_str(),
                )) else {
                    continue;
                };
                r.compared += 1;
                seen.push((row.set.as_str(), row.input.as_str()));
                let now_status = &cur.statuses[now.status as usize];
                if now_status != was_status {
                    r.changed += 1;
                }
                let regressed = (was == Category::Correct && now.category != Category::Correct)
                    || (was != Category::Wrong && now.category == Category::Wrong);
                if regressed {
                    r.regressions += 1;
                    *r.transitions
                        .entry(format!("{}→{}", was.as_str(), now.category.as_str()))
                        .or_default() += 1;
                } else if was != Category::Correct && now.category == Category::Correct {
                    r.fixed += 1;
                }
            }
            r.missing = base_cells
                .keys()
                .filter(|(t, c, s, i)| {
                    *t == col.tool && *c == col.config && !seen.contains(&(*s, *i))
                })
                .count();
            r
        })
        .collect()
}

/// The dump text: STATS lines per column, then REGRESSIONS lines when a baseline is given.
pub fn render(t: &Table, v: &View, regressions: Option<(&str, &[Regressions])>) -> String {
    let mut out = String::new();
    for (i, &c) in v.columns.iter().enumerate() {
        let s = &v.summaries[i];
        let counts: Vec<String> = s
            .counts
            .iter()
            .map(|(k, n)| format!("{} {n}", k.as_str()))
            .collect();
        let _ = writeln!(
            out,
            "STATS {}: {}; score {}; CPU time {}",
            t.columns[c].label,
            counts.join(", "),
            s.score,
            crate::units::format_time(s.cpu_total, None)
        );
    }
    if let Some((base, regs)) = regressions {
        let mut total = 0;
        for r in regs {
            total += r.regressions;
            let tr: Vec<String> = r
                .transitions
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            let _ = writeln!(
                out,
                "REGRESSIONS {} against {base}: {}{}; fixed {}; status changed {} of {} compared",
                r.column,
                r.regressions,
                if tr.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", tr.join(", "))
                },
                r.fixed,
                r.changed,
                r.compared
            );
        }
        let _ = writeln!(out, "REGRESSIONS total {total}");
    }
    out
}
