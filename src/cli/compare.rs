//! `tare compare OLD NEW`: saved results of two versions, compared under the one model of a
//! measurement (`conclude::levels`): samples grouped by session and process, the process the
//! unit of replication — or the session, where sessions differ; with one session a side each
//! session's mean is as uncertain as one of its thirds'. Each side may be several results files or a directory of them; benchmarks are
//! matched by name and parameters. `--fail-if-slower PCT` exits 1 on a significant regression
//! larger than PCT; a side with no counted run, or a benchmark in only one side (unless
//! `--allow-missing`), exits 2 with the reason — a gate never passes on nothing.

use crate::conclude::analysis::Test;
use crate::conclude::levels::{self, Metric, Outcome};
use crate::conclude::sides::{self, Side};
use crate::error::{exit, usage};
use crate::report::comparison;
use crate::results::{Benchmark, Session};
use crate::units;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
#[command(
    after_help = "Sides: `tare compare OLD NEW`, each a results file or a directory (every *.json in it, \
                  each file a session or a process); or `--old A --old B --new C --new D`.\n\
                  Exit codes: 0 no regression beyond the threshold (or none asked for); 1 a significant \
                  regression larger than --fail-if-slower; 2 bad input, a side with no counted run, or a \
                  benchmark in only one side (without --allow-missing)."
)]
pub struct CompareArgs {
    /// OLD and NEW: each a results file or a directory of results files.
    #[arg(value_name = "OLD NEW", num_args = 0..=2)]
    paths: Vec<PathBuf>,
    /// A results file (or directory) of the old version; repeat for several.
    #[arg(long, value_name = "FILE|DIR")]
    old: Vec<PathBuf>,
    /// A results file (or directory) of the new version; repeat for several.
    #[arg(long, value_name = "FILE|DIR")]
    new: Vec<PathBuf>,
    /// Exit 1 when a benchmark is significantly slower by more than this (e.g. 5%).
    #[arg(long, value_name = "PCT")]
    fail_if_slower: Option<String>,
    #[command(flatten)]
    verdict: super::opts::VerdictArgs,
    /// Same as --test welch (kept for old scripts).
    #[arg(long, hide = true)]
    welch: bool,
    /// What to compare: `time` (the runs' wall time), `cpu_time`, `user_time`, `system_time`,
    /// `peak_memory` (every run records these), `energy`/`gpu_energy` (--energy), or a counter
    /// recorded with --counters (e.g. instructions, cycles-estimate). Counts that repeat in
    /// every run (Valgrind's) need no interval: a change of 0.1% or more is a change in work.
    #[arg(long, value_name = "METRIC", default_value = "time")]
    metric: String,
    /// Compare the benchmarks both sides have when some are in only one (listed, not compared).
    #[arg(long)]
    allow_missing: bool,
    /// Seed of the bootstrap.
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Write the comparison as a Markdown table (a pull-request comment): each benchmark's
    /// change, CI, p and verdict, the geometric mean, the model.
    #[arg(long, value_name = "FILE")]
    export_markdown: Option<PathBuf>,
    /// Write the comparison as JSON (for dashboards): the same rows, geometric mean and model.
    #[arg(long, value_name = "FILE")]
    export_json: Option<PathBuf>,
    #[command(flatten)]
    style: super::opts::StyleArgs,
}

/// Reads a results file; errors name the file, what it is and what to do.
pub fn load(path: &Path) -> anyhow::Result<Session> {
    crate::results::read::load_session(path)
}

/// The files of one side: each path a file, or a directory whose `*.json` files are taken.
fn expand(paths: &[PathBuf], side: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| usage(format!("cannot read directory {}: {e}", p.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "json"))
                .collect();
            if files.is_empty() {
                return Err(usage(format!(
                    "{} ({side}) holds no *.json results file; give files written by --export-json or `tare import -o`",
                    p.display()
                )));
            }
            files.sort();
            out.extend(files);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// The two sides from the arguments: `OLD NEW`, or `--old`/`--new` (repeatable), or one of each.
fn sides(a: &CompareArgs) -> anyhow::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut pos = a.paths.iter().cloned();
    let old = if a.old.is_empty() {
        pos.next().into_iter().collect()
    } else {
        a.old.clone()
    };
    let new = if a.new.is_empty() {
        pos.next().into_iter().collect()
    } else {
        a.new.clone()
    };
    if pos.next().is_some() {
        return Err(usage(
            "too many paths: give `tare compare OLD NEW`, or the sides with --old and --new",
        ));
    }
    if old.is_empty() || new.is_empty() {
        return Err(usage(format!(
            "no {} side: give `tare compare OLD NEW` (files or directories), or --old FILE --new FILE",
            if old.is_empty() { "old" } else { "new" }
        )));
    }
    Ok((old, new))
}

/// One side, loaded from its files.
fn load_side(paths: &[PathBuf], side: &str) -> anyhow::Result<Side> {
    let files = expand(paths, side)?;
    let sessions = files
        .iter()
        .map(|f| load(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let label = match files.as_slice() {
        [one] => one.display().to_string(),
        many => format!("{} files ({}, …)", many.len(), many[0].display()),
    };
    Ok(Side { label, sessions })
}

pub fn compare(a: CompareArgs) -> anyhow::Result<i32> {
    let (old_paths, new_paths) = sides(&a)?;
    let threshold = a
        .fail_if_slower
        .as_deref()
        .map(|s| units::parse_fraction(s).map_err(|e| usage(format!("--fail-if-slower {s}: {e}"))))
        .transpose()?;
    let noise = a.verdict.noise()?;
    let alpha = a.verdict.alpha()?;
    let show = a.style.style() != crate::report::Style::None;
    let outputs: Vec<(&str, &Path)> = [
        ("--export-markdown", &a.export_markdown),
        ("--export-json", &a.export_json),
    ]
    .into_iter()
    .filter_map(|(o, p)| p.as_deref().map(|p| (o, p)))
    .collect();
    crate::results::fsio::distinct(&outputs)?;
    for (_, p) in &outputs {
        crate::results::fsio::check(p)?;
    }
    let old = load_side(&old_paths, "old")?;
    let new = load_side(&new_paths, "new")?;
    let test = if a.welch {
        Test::Welch
    } else {
        a.verdict.test.test()
    };
    let settings = levels::Settings {
        test,
        alpha,
        noise,
        seed: a.seed,
        ..crate::store::load::compare_settings()
    };
    let metric = Metric::parse(&a.metric);
    let cn = sides::compare(&old, &new, &a.metric, &settings, a.allow_missing)
        .map_err(|e| usage(format!("{e:#}")))?;
    for n in &cn.notes {
        eprintln!("tare: note: {n}");
    }
    let (names, missing, model, session_lines) =
        (&cn.names, &cn.missing, &cn.model, &cn.session_lines);
    let width = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(9)
        .max(9);
    let is_count = cn.is_count;
    let value = |v: f64| metric.format(v);
    if show {
        println!("model: {model}");
        for line in session_lines {
            println!("sessions: {line}");
        }
        if is_count {
            println!("metric: {}", metric.name());
        }
        println!(
            "{:<width$} {:>12} {:>12} {:>9} {:>17} {:>9}  verdict",
            "benchmark",
            "old mean",
            "new mean",
            "change",
            comparison::ci_header(&cn.records),
            "p (adj.)"
        );
    }
    let rows = comparison::rows(&cn, threshold);
    for ((r, name), k) in rows.iter().zip(names).zip(&cn.matched) {
        let (c, regression, functions) = (r.comparison, r.regression, &r.functions);
        let marker = match c.outcome {
            Outcome::Slower if regression => "!! slower",
            Outcome::Slower => "slower",
            Outcome::Faster => "faster",
            Outcome::EqualWithinNoise => "=",
            Outcome::NoSignificantDifference => "~",
            Outcome::Inconclusive => "?",
        };
        if !show {
            continue;
        }
        let ci = c.ci.map_or("—".to_string(), |(lo, hi)| {
            format!(
                "{:>+7.2}%…{:>+7.2}%",
                (lo - 1.0) * 100.0,
                (hi - 1.0) * 100.0
            )
        });
        println!(
            "{:<width$} {:>12} {:>12} {:>+8.2}% {:>17} {:>9}  {marker}: {}",
            name,
            value(c.old_median),
            value(c.new_median),
            (c.ratio - 1.0) * 100.0,
            ci,
            c.p_adjusted.map_or("—".to_string(), units::format_p),
            c.words
        );
        if !functions.is_empty() {
            println!(
                "{:<width$} functions that moved most: {}",
                "",
                comparison::functions_words(functions)
            );
            // Callgrind's own files, where the runs kept them: the line-level view.
            let dir = |side: &Vec<&Benchmark>| {
                side.iter()
                    .flat_map(|b| &b.runs)
                    .find_map(|r| {
                        r.extra
                            .get(crate::method::counters::CALLGRIND_KEY)?
                            .as_str()
                    })
                    .map(String::from)
            };
            let o: Vec<&Benchmark> = old.parts(k).into_iter().map(|(_, b)| b).collect();
            let n: Vec<&Benchmark> = new.parts(k).into_iter().map(|(_, b)| b).collect();
            if let (Some(a), Some(b)) = (dir(&o), dir(&n)) {
                println!(
                    "{:<width$} Callgrind's files: {a} and {b} (callgrind_annotate --auto=yes FILE)",
                    ""
                );
            }
        }
    }
    let geomean = cn.geomean;
    if show && rows.len() > 1 {
        if let Some(g) = &geomean {
            println!("{}", comparison::geomean_line(g));
        }
    }
    let regression = rows.iter().any(|r| r.regression);
    let cx = comparison::Context {
        model,
        sessions: session_lines,
        geomean,
        fail_if_slower: threshold,
        alpha,
        missing,
        metric: &a.metric,
        count: is_count,
    };
    if let Some(p) = &a.export_markdown {
        crate::results::fsio::write(p, comparison::markdown(&rows, &cx).as_bytes())?;
    }
    if let Some(p) = &a.export_json {
        let mut text = serde_json::to_string_pretty(&comparison::json(&rows, &cx))?;
        text.push('\n');
        crate::results::fsio::write(p, text.as_bytes())?;
    }
    for m in missing.iter().filter(|_| show) {
        eprintln!("tare: note: {m} (not compared: --allow-missing)");
    }
    if regression {
        eprintln!(
            "tare: regression: at least one benchmark is significantly slower by more than {}",
            units::format_percent(threshold.unwrap_or(0.0))
        );
        return Ok(exit::VERDICT);
    }
    Ok(exit::OK)
}
