//! The table's data: result files streamed into one row per input and one column per
//! result file × tool × configuration, each cell holding its repetitions; and the per-cell
//! aggregate (status by majority, medians with spread).
//!
//! Not for: formatting (see [`super::html`], [`super::csv`]) or comparing (see
//! [`super::dump`]). Memory stays small: statuses are interned, records are not kept.

use crate::suite::classify::Category;
use crate::suite::record::{self, RESULTS_FILE};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// One repetition of one cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rep {
    /// Index into [`Table::statuses`].
    pub status: u32,
    pub category: Category,
    pub score: f64,
    pub cpu: f64,
    pub wall: f64,
    pub memory: Option<u64>,
}

/// A column: one tool configuration of one result file.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub label: String,
    /// Index of the result file it came from.
    pub source: usize,
    pub tool: String,
    pub config: String,
}

/// A row: one input.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub set: String,
    pub input: String,
    pub expected: Option<String>,
    /// One entry per column; empty when that column has no run of this input.
    pub cells: Vec<Vec<Rep>>,
}

/// Everything read from the result files.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub sources: Vec<String>,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
    pub statuses: Vec<String>,
    /// Lines that could not be parsed (partial last lines of crashed suites).
    pub skipped_lines: usize,
    pub records: usize,
}

/// A result path as given: a suite output directory or a `.jsonl` file.
pub fn results_path(p: &Path) -> PathBuf {
    if p.is_dir() {
        p.join(RESULTS_FILE)
    } else {
        p.to_path_buf()
    }
}

/// A short label for a result file: its directory name for `results.jsonl`, else its stem.
pub fn source_label(p: &Path) -> String {
    let file = results_path(p);
    let name = if file.file_name().is_some_and(|n| n == RESULTS_FILE) {
        file.parent().and_then(|d| d.file_name())
    } else {
        file.file_stem()
    };
    name.map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// The error for a result path that holds no suite run record: what it is instead.
fn not_suite_results(given: &Path, file: &Path) -> anyhow::Error {
    let head = crate::results::input::open(file)
        .and_then(|f| {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut std::io::Read::take(f, 1 << 20), &mut v)?;
            Ok(v)
        })
        .unwrap_or_default();
    let what = if head.iter().all(|b| b.is_ascii_whitespace()) {
        "empty (the suite finished no run)".to_string()
    } else {
        let w = crate::results::read::what_is(&head);
        if w.starts_with("tare results") || w == "JSON, but not tare results" {
            // A whole JSON document: tell tare run results apart.
            match serde_json::from_slice::<serde_json::Value>(&head) {
                Ok(v) if v.get("benchmarks").is_some() => {
                    "results of `tare run` (read them with `tare report` or `tare compare`)".into()
                }
                _ => w,
            }
        } else {
            w
        }
    };
    crate::error::usage(format!(
        "{} is {what}, not suite results; give a suite output directory or its results.jsonl",
        if given == file {
            given.display().to_string()
        } else {
            file.display().to_string()
        }
    ))
}

impl Table {
    /// Streams the given result files into a table. Column labels get the file's label as a
    /// prefix when there is more than one file.
    pub fn load(paths: &[PathBuf]) -> anyhow::Result<Table> {
        let mut t = Table::default();
        let mut col_index: HashMap<(usize, String, String), usize> = HashMap::new();
        let mut row_index: HashMap<(String, String), usize> = HashMap::new();
        let mut status_index: HashMap<String, u32> = HashMap::new();
        let multi = paths.len() > 1;
        for (si, p) in paths.iter().enumerate() {
            let label = source_label(p);
            t.sources.push(label.clone());
            let file = results_path(p);
            let before = t.records;
            let mut seen: HashSet<String> = HashSet::new();
            let mut dups: Vec<String> = Vec::new();
            let bad = record::for_each(&file, |r| {
                if !seen.insert(r.key.clone()) {
                    dups.push(r.key);
                    return;
                }
                t.records += 1;
                let ck = (si, r.tool.clone(), r.config.clone());
                let ci = *col_index.entry(ck).or_insert_with(|| {
                    t.columns.push(Column {
                        label: if multi {
                            format!("{label}: {}/{}", r.tool, r.config)
                        } else {
                            format!("{}/{}", r.tool, r.config)
                        },
                        source: si,
                        tool: r.tool.clone(),
                        config: r.config.clone(),
                    });
                    t.columns.len() - 1
                });
                let ri = match row_index.get(&(r.input_set.clone(), r.input.clone())) {
                    Some(&i) => i,
                    None => {
                        t.rows.push(Row {
                            set: r.input_set.clone(),
                            input: r.input.clone(),
                            expected: r.expected.clone(),
                            cells: Vec::new(),
                        });
                        row_index.insert((r.input_set, r.input), t.rows.len() - 1);
                        t.rows.len() - 1
                    }
                };
                let status = match status_index.get(&r.status) {
                    Some(&s) => s,
                    None => {
                        let s = t.statuses.len() as u32;
                        status_index.insert(r.status.clone(), s);
                        t.statuses.push(r.status);
                        s
                    }
                };
                let row = &mut t.rows[ri];
                if row.cells.len() <= ci {
                    row.cells.resize(ci + 1, Vec::new());
                }
                row.cells[ci].push(Rep {
                    status,
                    category: r.category,
                    score: r.score,
                    cpu: r.cpu_time,
                    wall: r.wall_time,
                    memory: r.peak_memory,
                });
            })
            .map_err(|e| {
                crate::error::usage(format!(
                    "{e}; give a suite output directory or its results.jsonl"
                ))
            })?;
            t.skipped_lines += bad;
            if !dups.is_empty() {
                return Err(crate::error::usage(format!(
                    "{}: {} run{} recorded more than once (e.g. {}): two sessions wrote the same output directory, or shards of different counts are merged; keep one record per run (or rerun into a fresh --output-dir)",
                    file.display(),
                    dups.len(),
                    if dups.len() == 1 { " is" } else { "s are" },
                    dups[0]
                )));
            }
            if t.records == before {
                return Err(not_suite_results(p, &file));
            }
        }
        let n = t.columns.len();
        // Columns in a stable order: by result file, then tool and configuration name.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| {
            let (x, y) = (&t.columns[a], &t.columns[b]);
            (x.source, &x.tool, &x.config).cmp(&(y.source, &y.tool, &y.config))
        });
        t.columns = order.iter().map(|&i| t.columns[i].clone()).collect();
        for row in &mut t.rows {
            row.cells.resize(n, Vec::new());
            let mut old = std::mem::take(&mut row.cells);
            row.cells = order.iter().map(|&i| std::mem::take(&mut old[i])).collect();
        }
        t.rows
            .sort_by(|a, b| (&a.set, &a.input).cmp(&(&b.set, &b.input)));
        Ok(t)
    }
}

/// A metric's median over repetitions and its half-range (spread).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(mut xs: Vec<f64>) -> Option<Spread> {
        xs.retain(|x| x.is_finite());
        if xs.is_empty() {
            return None;
        }
        xs.sort_by(f64::total_cmp);
        let median = crate::stats::quantile::median(&xs)?;
        Some(Spread {
            median,
            min: xs[0],
            max: xs[xs.len() - 1],
        })
    }
    pub fn half_range(&self) -> f64 {
        (self.max - self.min) / 2.0
    }
}

/// One cell summarized over its repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct CellSummary {
    /// The most frequent status (ties: the first seen).
    pub status: u32,
    pub category: Category,
    /// Repetitions that agree with `status`, and all repetitions.
    pub agreeing: usize,
    pub reps: usize,
    /// Mean score over repetitions.
    pub score: f64,
    pub cpu: Option<Spread>,
    pub wall: Option<Spread>,
    pub memory: Option<Spread>,
}

/// Summarizes a cell; `None` when it has no repetition.
pub fn summarize(reps: &[Rep]) -> Option<CellSummary> {
    let first = reps.first()?;
    let mut best = (first.status, first.category, 0usize);
    for r in reps {
        let n = reps.iter().filter(|x| x.status == r.status).count();
        if n > best.2 {
            best = (r.status, r.category, n);
        }
    }
    Some(CellSummary {
        status: best.0,
        category: best.1,
        agreeing: best.2,
        reps: reps.len(),
        score: reps.iter().map(|r| r.score).sum::<f64>() / reps.len() as f64,
        cpu: Spread::of(reps.iter().map(|r| r.cpu).collect()),
        wall: Spread::of(reps.iter().map(|r| r.wall).collect()),
        memory: Spread::of(
            reps.iter()
                .filter_map(|r| r.memory.map(|m| m as f64))
                .collect(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(status: u32, cat: Category, cpu: f64) -> Rep {
        Rep {
            status,
            category: cat,
            score: if cat == Category::Correct { 2.0 } else { 0.0 },
            cpu,
            wall: cpu,
            memory: Some(100),
        }
    }

    #[test]
    fn majority_status_and_median_spread() {
        let s = summarize(&[
            rep(0, Category::Correct, 1.0),
            rep(1, Category::Timeout, 9.0),
            rep(0, Category::Correct, 2.0),
        ])
        .unwrap();
        assert_eq!(
            (s.status, s.category, s.agreeing, s.reps),
            (0, Category::Correct, 2, 3)
        );
        let cpu = s.cpu.unwrap();
        assert_eq!((cpu.median, cpu.min, cpu.max), (2.0, 1.0, 9.0));
        assert!((s.score - 4.0 / 3.0).abs() < 1e-9);
        assert!(summarize(&[]).is_none());
    }
}
