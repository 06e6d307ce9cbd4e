//! What a table shows: the rows and columns left after filters, each cell summarized once,
//! and the summary of each column (counts per category, score, totals, medians).
//!
//! Not for: output formats (see [`super::html`], [`super::csv`]).

use super::model::{summarize, CellSummary, Spread, Table};
use crate::suite::classify::Category;
use std::collections::BTreeMap;

/// Which rows and columns to show.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// Rows whose `set/input` matches.
    pub input: Option<regex::Regex>,
    /// Columns whose label matches.
    pub columns: Option<regex::Regex>,
    /// Rows where some shown cell has one of these categories (all rows when empty).
    pub categories: Vec<Category>,
    /// Only rows where the shown cells' statuses differ.
    pub diff: bool,
}

/// The summary row values of one column.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnSummary {
    pub counts: BTreeMap<Category, usize>,
    pub score: f64,
    pub cpu_total: f64,
    pub wall_total: f64,
    pub cpu_median_correct: Option<f64>,
    pub memory_median: Option<f64>,
}

/// A filtered, summarized table.
#[derive(Debug, Clone)]
pub struct View {
    /// Indices into `table.columns`.
    pub columns: Vec<usize>,
    /// Indices into `table.rows`, with one summary per shown column.
    pub rows: Vec<(usize, Vec<Option<CellSummary>>)>,
    /// Whether the row's shown cells all have the same status (parallel to `rows`).
    pub same: Vec<bool>,
    pub summaries: Vec<ColumnSummary>,
}

impl View {
    pub fn new(t: &Table, f: &Filters) -> View {
        let columns: Vec<usize> = (0..t.columns.len())
            .filter(|&c| {
                f.columns
                    .as_ref()
                    .is_none_or(|re| re.is_match(&t.columns[c].label))
            })
            .collect();
        let mut rows = Vec::new();
        let mut same = Vec::new();
        for (ri, row) in t.rows.iter().enumerate() {
            if let Some(re) = &f.input {
                if !re.is_match(&format!("{}/{}", row.set, row.input)) {
                    continue;
                }
            }
            let cells: Vec<Option<CellSummary>> =
                columns.iter().map(|&c| summarize(&row.cells[c])).collect();
            if cells.iter().all(Option::is_none) {
                continue;
            }
            if !f.categories.is_empty()
                && !cells
                    .iter()
                    .flatten()
                    .any(|c| f.categories.contains(&c.category))
            {
                continue;
            }
            let mut statuses = cells.iter().map(|c| c.as_ref().map(|c| c.status));
            let first = statuses.next().flatten();
            let all_same = statuses.all(|s| s == first);
            if f.diff && all_same {
                continue;
            }
            rows.push((ri, cells));
            same.push(all_same);
        }
        let summaries = (0..columns.len())
            .map(|ci| {
                let mut s = ColumnSummary::default();
                let mut cpu_correct = Vec::new();
                let mut mem = Vec::new();
                for (_, cells) in &rows {
                    let Some(c) = &cells[ci] else { continue };
                    *s.counts.entry(c.category).or_default() += 1;
                    s.score += c.score;
                    let cpu = c.cpu.map_or(0.0, |x| x.median);
                    s.cpu_total += cpu;
                    s.wall_total += c.wall.map_or(0.0, |x| x.median);
                    if c.category == Category::Correct {
                        cpu_correct.push(cpu);
                    }
                    if let Some(m) = c.memory {
                        mem.push(m.median);
                    }
                }
                s.cpu_median_correct = Spread::of(cpu_correct).map(|x| x.median);
                s.memory_median = Spread::of(mem).map(|x| x.median);
                s
            })
            .collect();
        View {
            columns,
            rows,
            same,
            summaries,
        }
    }

    /// Points for a scatter plot of `metric` in shown columns `a` and `b`.
    pub fn pairs(&self, a: usize, b: usize, metric: Metric) -> Vec<(f64, f64, bool)> {
        self.rows
            .iter()
            .filter_map(|(_, cells)| {
                let (x, y) = (cells.get(a)?.as_ref()?, cells.get(b)?.as_ref()?);
                let ok = x.category == Category::Correct && y.category == Category::Correct;
                Some((metric.of(x)?, metric.of(y)?, ok))
            })
            .collect()
    }

    /// Quantile series per shown column: sorted CPU times of correct results, plain
    /// (x = rank) and score-based (x = accumulated score from the sum of penalties).
    pub fn quantiles(&self, t: &Table, metric: Metric) -> (QuantileSeries, QuantileSeries) {
        let mut plain = Vec::new();
        let mut scored = Vec::new();
        for (ci, &col) in self.columns.iter().enumerate() {
            let mut correct: Vec<(f64, f64)> = Vec::new();
            let mut penalty = 0.0;
            for (_, cells) in &self.rows {
                let Some(c) = &cells[ci] else { continue };
                match c.category {
                    Category::Correct => {
                        if let Some(v) = metric.of(c) {
                            correct.push((v, c.score));
                        }
                    }
                    Category::Wrong => penalty += c.score,
                    _ => {}
                }
            }
            correct.sort_by(|a, b| a.0.total_cmp(&b.0));
            let label = t.columns[col].label.clone();
            plain.push((
                label.clone(),
                correct
                    .iter()
                    .enumerate()
                    .map(|(i, &(v, _))| ((i + 1) as f64, v))
                    .collect(),
            ));
            let mut x = penalty;
            let mut pts = Vec::new();
            for &(v, s) in &correct {
                x += s;
                pts.push((x, v));
            }
            scored.push((label, pts));
        }
        (plain, scored)
    }
}

/// Named point lists for quantile plots.
pub type QuantileSeries = Vec<(String, Vec<(f64, f64)>)>;

/// A plotted metric (times only: the plots have time axes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Cpu,
    Wall,
}

impl Metric {
    pub fn of(self, c: &CellSummary) -> Option<f64> {
        match self {
            Metric::Cpu => c.cpu.map(|s| s.median),
            Metric::Wall => c.wall.map(|s| s.median),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Metric::Cpu => "CPU time",
            Metric::Wall => "wall time",
        }
    }
}

impl std::str::FromStr for Metric {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cpu" => Ok(Metric::Cpu),
            "wall" => Ok(Metric::Wall),
            _ => Err(format!("unknown metric '{s}': use cpu or wall")),
        }
    }
}
