//! `tare report`: reads stored results files and writes the HTML report, standalone SVG plots,
//! or a terminal report with text plots. Several files are compared side by side.
//!
//! For: turning results files into things people read. Not for: measuring (see `run.rs`) or
//! drawing (see `crate::report::html` and `crate::report::text_plots`).

use crate::error::usage;
use crate::report::html::{self, Metric};
use crate::report::{text_plots, Style};
use crate::results::fsio;
use crate::results::Session;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  tare report results.json --export-html report.html\n  \
                  tare report before.json after.json --export-html compare.html\n  \
                  tare report results.json --export-svg plots/\n  tare report --terminal results.json"
)]
pub struct ReportArgs {
    /// Results files written by `tare run --export-json`.
    #[arg(value_name = "RESULTS.json", required = true)]
    files: Vec<PathBuf>,
    /// Write one self-contained HTML report (tables and SVG plots; no network needed).
    #[arg(long = "export-html", alias = "html", value_name = "FILE")]
    html: Option<PathBuf>,
    /// Write each plot as its own standalone SVG file into this directory (created if missing).
    #[arg(long, value_name = "DIR")]
    export_svg: Option<PathBuf>,
    /// Print the summary with text histograms and sparklines (the default when no --export-html or
    /// --export-svg is given).
    #[arg(long)]
    terminal: bool,
    /// The metric the HTML report and SVG plots show.
    #[arg(long, value_enum, default_value_t = MetricArg::WallTime)]
    metric: MetricArg,
    #[command(flatten)]
    style: super::opts::StyleArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum MetricArg {
    WallTime,
    CpuTime,
    UserTime,
    SystemTime,
    PeakMemory,
}

impl MetricArg {
    fn metric(self) -> Metric {
        match self {
            MetricArg::WallTime => Metric::WallTime,
            MetricArg::CpuTime => Metric::CpuTime,
            MetricArg::UserTime => Metric::UserTime,
            MetricArg::SystemTime => Metric::SystemTime,
            MetricArg::PeakMemory => Metric::PeakMemory,
        }
    }
}

/// Reads one results file; every failure is one line naming the file and what to do.
pub fn load(path: &Path) -> anyhow::Result<Session> {
    crate::results::read::load_session(path)
}

/// Labels for the files: their names, or the paths as given when two names are equal.
fn labels(files: &[PathBuf]) -> Vec<String> {
    let names: Vec<String> = files
        .iter()
        .map(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.display().to_string())
        })
        .collect();
    let mut out: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if names.iter().filter(|m| *m == n).count() > 1 {
                files[i].display().to_string()
            } else {
                n.clone()
            }
        })
        .collect();
    // The same path twice: number the repeats.
    for i in 1..out.len() {
        let seen = out[..i].iter().filter(|l| **l == out[i]).count();
        if seen > 0 {
            out[i] = format!("{} ({})", out[i], seen + 1);
        }
    }
    out
}

/// Runs `tare report`; returns the exit code.
pub fn report(args: ReportArgs) -> anyhow::Result<i32> {
    let mut sessions: Vec<(String, Session)> = Vec::new();
    for (path, label) in args.files.iter().zip(labels(&args.files)) {
        sessions.push((label, load(path)?));
    }
    let metric = args.metric.metric();
    if let Some(out) = &args.html {
        let page = html::render_html_for(&sessions, &metric);
        fsio::write(out, page.as_bytes()).map_err(|e| {
            usage(format!(
                "cannot write the HTML report to {}: {e:#}; choose a writable path",
                out.display()
            ))
        })?;
        eprintln!("tare: wrote {}", out.display());
    }
    if let Some(dir) = &args.export_svg {
        std::fs::create_dir_all(dir).map_err(|e| {
            usage(format!(
                "cannot create the SVG directory {}: {e}; choose a writable directory",
                dir.display()
            ))
        })?;
        let files = html::svg_files(&sessions, &metric);
        for (name, doc) in &files {
            let path = dir.join(name);
            fsio::write(&path, doc.as_bytes()).map_err(|e| {
                usage(format!(
                    "cannot write {}: {e:#}; choose a writable directory",
                    path.display()
                ))
            })?;
        }
        eprintln!("tare: wrote {} SVG plots to {}", files.len(), dir.display());
    }
    let style = args.style.style();
    if style != Style::None && (args.terminal || (args.html.is_none() && args.export_svg.is_none()))
    {
        print!("{}", text_plots::report(&sessions, style.color()));
    }
    Ok(crate::error::exit::OK)
}
