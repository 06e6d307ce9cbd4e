//! `tare table`: builds result tables from suite results (see `crate::table`).
//!
//! Exit codes: 0; 1 with `--dump` when there are regressions against the baseline; 2 on bad
//! input, or (without `--allow-missing`) when a column has nothing in common with the baseline
//! or baseline runs have no run now.

use crate::error::{exit, usage};
use crate::suite::classify::Category;
use crate::table::{self, dump, html, Filters, Metric, Table, View};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct TableArgs {
    /// Suite output directories or results.jsonl files.
    #[arg(required = true)]
    results: Vec<PathBuf>,
    /// Write the HTML page (tables and plots) here.
    #[arg(long = "export-html", alias = "html", value_name = "FILE")]
    html: Option<PathBuf>,
    /// Write one CSV row per run here ("-" for stdout).
    #[arg(long = "export-csv", alias = "csv", value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Print counts, scores and regressions as lines for CI; exit 1 when there are regressions.
    #[arg(long)]
    dump: bool,
    /// Results to compare against for --dump (default: the first RESULTS against the rest).
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Only rows where the statuses differ between columns.
    #[arg(long)]
    diff: bool,
    /// Only rows whose set/input matches this regex.
    #[arg(long, value_name = "REGEX")]
    input: Option<String>,
    /// Only columns whose label matches this regex.
    #[arg(long, value_name = "REGEX")]
    columns: Option<String>,
    /// Only rows with one of these categories (comma-separated: correct, wrong, unknown,
    /// timeout, out-of-memory, error, missing).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    category: Vec<String>,
    /// Columns of the scatter plot, 1-based positions among the shown columns (default 1,2).
    #[arg(long, value_name = "A,B")]
    scatter: Option<String>,
    /// Metric of the plots: cpu or wall.
    #[arg(long, default_value = "cpu")]
    metric: String,
    /// Title of the page.
    #[arg(long)]
    title: Option<String>,
    /// With --dump and a baseline: accept baseline runs that have no run now, and columns with
    /// nothing in common with the baseline (by default they exit 2: a gate never passes on
    /// nothing).
    #[arg(long)]
    allow_missing: bool,
    /// Shards measured on different machines: one column set per machine instead of refusing.
    #[arg(long)]
    per_machine: bool,
}

fn regex(s: &Option<String>, flag: &str) -> anyhow::Result<Option<regex::Regex>> {
    s.as_deref()
        .map(|r| {
            regex::Regex::new(r).map_err(|e| {
                usage(format!(
                    "{flag}: invalid regex: {}",
                    e.to_string().replace('\n', " ")
                ))
            })
        })
        .transpose()
}

pub fn run(mut a: TableArgs) -> anyhow::Result<i32> {
    // Shard directories (a sharded or Slurm run) merged into one source each.
    let prepared = crate::remote::merge::prepare(&a.results, a.per_machine)?;
    for w in &prepared.warnings {
        eprintln!("tare: warning: {w}");
    }
    a.results = prepared.paths.clone();
    if a.html.is_none() && a.csv.is_none() && !a.dump {
        return Err(usage(
            "nothing to write: give --export-html FILE, --export-csv FILE or --dump",
        ));
    }
    let metric: Metric = a.metric.parse().map_err(usage)?;
    let categories = a
        .category
        .iter()
        .map(|c| {
            Category::parse(c).ok_or_else(|| {
                usage(format!(
                    "--category: unknown category '{c}'; use correct, wrong, unknown, timeout, out-of-memory, error or missing"
                ))
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let filters = Filters {
        input: regex(&a.input, "--input")?,
        columns: regex(&a.columns, "--columns")?,
        categories,
        diff: a.diff,
    };
    let scatter = match &a.scatter {
        Some(s) => {
            let parts: Vec<usize> = s
                .split(',')
                .map(|p| p.trim().parse::<usize>())
                .collect::<Result<_, _>>()
                .ok()
                .filter(|v: &Vec<usize>| v.len() == 2 && v.iter().all(|&x| x >= 1))
                .ok_or_else(|| {
                    usage(format!(
                        "--scatter '{s}': give two column positions, e.g. 1,2"
                    ))
                })?;
            Some((parts[0] - 1, parts[1] - 1))
        }
        None => Some((0, 1)),
    };
    let t = Table::load(&a.results)?;
    let v = View::new(&t, &filters);
    if let Some(out) = &a.html {
        let title = a
            .title
            .clone()
            .unwrap_or_else(|| format!("Results: {}", t.sources.join(", ")));
        let page = html::render(
            &t,
            &v,
            &html::PageOptions {
                title,
                scatter,
                metric,
            },
        );
        std::fs::write(out, page)
            .map_err(|e| usage(format!("cannot write {}: {e}", out.display())))?;
    }
    if let Some(out) = &a.csv {
        if out.as_os_str() == "-" {
            table::csv::write(&t, &v, std::io::stdout().lock())?;
        } else {
            let f = std::fs::File::create(out)
                .map_err(|e| usage(format!("cannot write {}: {e}", out.display())))?;
            table::csv::write(&t, &v, std::io::BufWriter::new(f))?;
        }
    }
    if a.dump {
        let (base_label, base, cur_t, cur_v) = match &a.baseline {
            Some(b) => {
                let base = Table::load(std::slice::from_ref(b))?;
                (table::model::source_label(b), Some(base), t, v)
            }
            None if a.results.len() > 1 => {
                let base = Table::load(&a.results[..1])?;
                let cur = Table::load(&a.results[1..])?;
                let cur_v = View::new(&cur, &filters);
                (
                    table::model::source_label(&a.results[0]),
                    Some(base),
                    cur,
                    cur_v,
                )
            }
            None => (String::new(), None, t, v),
        };
        let regs = base
            .as_ref()
            .map(|b| dump::compare(b, &cur_t, &cur_v.columns));
        print!(
            "{}",
            dump::render(
                &cur_t,
                &cur_v,
                regs.as_deref().map(|r| (base_label.as_str(), r))
            )
        );
        if let Some(r) = regs.as_ref().filter(|_| !a.allow_missing) {
            if let Some(x) = r.iter().find(|x| x.compared == 0 || x.missing > 0) {
                return Err(usage(if x.compared == 0 {
                    format!(
                        "column {} has no run in common with the baseline {base_label}: a regression count of 0 would pass on nothing; check the files, or pass --allow-missing",
                        x.column
                    )
                } else {
                    format!(
                        "column {}: {} runs of the baseline {base_label} have no run now (the regression count does not cover them); pass --allow-missing to accept",
                        x.column, x.missing
                    )
                }));
            }
        }
        if regs.is_some_and(|r| r.iter().any(|x| x.regressions > 0)) {
            return Ok(exit::VERDICT);
        }
    }
    Ok(exit::OK)
}
