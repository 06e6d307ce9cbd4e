//! `tare compare OLD NEW`: saved results of two versions, compared under the one model of a
//! measurement (`conclude::levels`): samples grouped by session and process, the process the
//! unit of replication — or the session, where sessions differ; with one session a side each
//! session's mean is as uncertain as one of its thirds'. Each side may be several results files or a directory of them; benchmarks are
//! matched by name and parameters. `--fail-if-slower PCT` exits 1 on a significant regression
//! larger than PCT; a side with no counted run, or a benchmark in only one side (unless
//! `--allow-missing`), exits 2 with the reason — a gate never passes on nothing.

use crate::conclude::analysis::Test;
use crate::conclude::levels::{self, Metric, Origin, Outcome};
use crate::error::{exit, usage};
use crate::report::comparison;
use crate::results::{Benchmark, Session};
use crate::units;
use clap::Args;
use std::collections::BTreeMap;
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
    /// What to compare: `time` (the runs' wall time) or a counter recorded with --counters
    /// (e.g. instructions, cycles-estimate). Counts that repeat in every run (Valgrind's) need
    /// no interval: a change of 0.1% or more is a change in work.
    #[arg(long, value_name = "time|EVENT", default_value = "time")]
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

type Key = (String, BTreeMap<String, String>);

fn key(b: &Benchmark) -> Key {
    (b.name.clone(), b.parameters.clone())
}

/// The benchmark's name with every parameter (for messages).
fn full_name(k: &Key, only: Option<&[String]>) -> String {
    let params: Vec<(&String, &String)> =
        k.1.iter()
            .filter(|(n, _)| only.is_none_or(|o| o.contains(n)))
            .collect();
    match params.as_slice() {
        [] => k.0.clone(),
        [(n, v)] if n.as_str() == "parameter" => format!("{}/{v}", k.0),
        ps => format!(
            "{}[{}]",
            k.0,
            ps.iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
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

/// One side, loaded: each benchmark key with its parts (one per file that has it), in order.
struct Side {
    label: String,
    sessions: Vec<Session>,
}

impl Side {
    fn load(paths: &[PathBuf], side: &str) -> anyhow::Result<Side> {
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

    fn keys(&self) -> Vec<Key> {
        let mut out: Vec<Key> = Vec::new();
        for b in self.sessions.iter().flat_map(|s| &s.benchmarks) {
            let k = key(b);
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }

    fn parts(&self, k: &Key) -> Vec<(Origin, &Benchmark)> {
        self.sessions
            .iter()
            .flat_map(|s| {
                let o = Origin::of(s);
                s.benchmarks
                    .iter()
                    .filter(|b| &key(b) == k)
                    .map(move |b| (o, b))
            })
            .collect()
    }

    fn counted(&self, k: &Key) -> usize {
        self.parts(k)
            .iter()
            .map(|(_, b)| b.runs.iter().filter(|r| r.counted).count())
            .sum()
    }
}

/// Every matched benchmark has the metric on both sides; a time metric compares no runs under
/// Valgrind with runs outside it (their times are Valgrind's, 20–100× the command's).
fn check_metric(metric: &Metric, old: &Side, new: &Side, matched: &[Key]) -> anyhow::Result<()> {
    for (side, name) in [(old, "old"), (new, "new")] {
        for k in matched {
            let runs = || {
                side.parts(k)
                    .into_iter()
                    .flat_map(|(_, b)| b.runs.iter().filter(|r| r.counted))
            };
            match metric {
                Metric::Counter(e) if !runs().any(|r| metric.value(r).is_some()) => {
                    return Err(usage(format!(
                        "--metric {e}: '{}' in the {name} side ({}) has no run with {e} counted; measure it with `tare run --counters {e}`, or compare --metric time",
                        full_name(k, None),
                        side.label
                    )));
                }
                _ => {}
            }
        }
    }
    if *metric == Metric::WallTime {
        let valgrind = |side: &Side| {
            side.sessions
                .iter()
                .flat_map(|s| &s.benchmarks)
                .flat_map(|b| &b.runs)
                .any(|r| crate::conclude::counts::backend_of(r) == Some("valgrind"))
        };
        match (valgrind(old), valgrind(new)) {
            (true, true) => eprintln!(
                "tare: note: both sides ran under Valgrind: their times are Valgrind's (20–100× the commands' own); --metric instructions compares their counts"
            ),
            (o, n) if o != n => {
                return Err(usage(format!(
                    "the {} side ran under Valgrind (--counters-backend valgrind) and the other did not: their times are not comparable; compare --metric instructions (both counted), or measure both alike",
                    if o { "old" } else { "new" }
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Each pair compared: a counter whose counts repeat on both sides by `conclude::counts`
/// (no interval needed), the others together under the process-level model (Holm over them).
fn compare_pairs(
    pairs: &[(levels::Sessions, levels::Sessions)],
    metric: &Metric,
    settings: &levels::Settings,
) -> Vec<levels::Comparison> {
    let exact: Vec<Option<levels::Comparison>> = pairs
        .iter()
        .map(|(o, n)| match metric {
            Metric::Counter(e) => crate::conclude::counts::compare(o, n, e),
            Metric::WallTime => None,
        })
        .collect();
    let rest: Vec<(levels::Sessions, levels::Sessions)> = pairs
        .iter()
        .zip(&exact)
        .filter(|(_, e)| e.is_none())
        .map(|(p, _)| p.clone())
        .collect();
    let mut modelled = levels::compare_sessions(&rest, settings).into_iter();
    exact
        .into_iter()
        .map(|e| e.unwrap_or_else(|| modelled.next().expect("one record per pair")))
        .collect()
}

pub fn compare(a: CompareArgs) -> anyhow::Result<i32> {
    let (old_paths, new_paths) = sides(&a)?;
    let threshold = a
        .fail_if_slower
        .as_deref()
        .map(|s| units::parse_fraction(s).map_err(|e| usage(format!("--fail-if-slower: {e}"))))
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
    let old = Side::load(&old_paths, "old")?;
    let new = Side::load(&new_paths, "new")?;
    // A gate never passes on nothing: a side without one counted run is an error.
    for (side, name) in [(&old, "old"), (&new, "new")] {
        if side.keys().iter().all(|k| side.counted(k) == 0) {
            return Err(usage(format!(
                "the {name} side ({}) has no counted run (a session stopped before its first run ended?): nothing to compare; measure it again",
                side.label
            )));
        }
    }
    let (old_keys, new_keys) = (old.keys(), new.keys());
    let mut matched = Vec::new();
    let mut missing = Vec::new();
    for k in &old_keys {
        if !new_keys.contains(k) {
            missing.push(format!("'{}' is only in old", full_name(k, None)));
        } else if old.counted(k) == 0 || new.counted(k) == 0 {
            let side = if old.counted(k) == 0 { "old" } else { "new" };
            missing.push(format!(
                "'{}' has no counted run in {side}",
                full_name(k, None)
            ));
        } else {
            matched.push(k.clone());
        }
    }
    for k in new_keys.iter().filter(|k| !old_keys.contains(k)) {
        missing.push(format!("'{}' is only in new", full_name(k, None)));
    }
    if matched.is_empty() {
        return Err(usage(format!(
            "no benchmark of {} matches one of {} by name and parameters; name them alike with --name",
            old.label, new.label
        )));
    }
    if !missing.is_empty() && !a.allow_missing {
        return Err(usage(format!(
            "{}{}: the two sides do not hold the same benchmarks; pass --allow-missing to compare those both have",
            missing[0],
            if missing.len() > 1 {
                format!(" (and {} more)", missing.len() - 1)
            } else {
                String::new()
            }
        )));
    }
    let test = if a.welch {
        Test::Welch
    } else {
        a.verdict.test.test()
    };
    let settings = levels::Settings {
        test,
        alpha,
        noise,
        confidence: 0.95,
        resamples: 10_000,
        seed: a.seed,
    };
    let metric = Metric::parse(&a.metric);
    check_metric(&metric, &old, &new, &matched)?;
    let mut units_seen = Vec::new();
    let pairs: Vec<(levels::Sessions, levels::Sessions)> = matched
        .iter()
        .map(|k| {
            let (o, n) = (old.parts(k), new.parts(k));
            for (origin, b) in o.iter().chain(&n) {
                units_seen.push(levels::unit(b, *origin));
            }
            (
                levels::side_sessions_of(&o, &metric),
                levels::side_sessions_of(&n, &metric),
            )
        })
        .collect();
    let records = compare_pairs(&pairs, &metric, &settings);
    // Names show the parameters that tell benchmarks apart (Criterion's sort/100 and
    // sort/1000), not those every benchmark shares.
    let varying: Vec<String> = {
        let mut values: BTreeMap<&String, Vec<&String>> = BTreeMap::new();
        for (_, p) in &matched {
            for (n, v) in p {
                let e = values.entry(n).or_default();
                if !e.contains(&v) {
                    e.push(v);
                }
            }
        }
        values
            .into_iter()
            .filter(|(n, v)| v.len() > 1 || matched.iter().any(|(_, p)| !p.contains_key(*n)))
            .map(|(n, _)| n.clone())
            .collect()
    };
    let names: Vec<String> = matched
        .iter()
        .map(|k| full_name(k, Some(&varying)))
        .collect();
    let width = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(9)
        .max(9);
    let model = match &metric {
        Metric::WallTime => levels::model_line(&units_seen, &records, test),
        Metric::Counter(e) => format!(
            "{e} per run; where each side's counts repeat within {}%, a change of {}% or more is a change in work (the interval: the range of the ratios of all runs); else {}",
            crate::conclude::counts::REPEAT * 100.0,
            crate::conclude::counts::WORK_CHANGE * 100.0,
            levels::model_line(&units_seen, &records, test)
        ),
    };
    let is_count = metric != Metric::WallTime;
    let value = |v: f64| {
        if is_count {
            units::format_count(v)
        } else {
            units::format_time(v, None)
        }
    };
    let session_lines = levels::session_lines(&records);
    if show {
        println!("model: {model}");
        for line in &session_lines {
            println!("sessions: {line}");
        }
        if is_count {
            println!("metric: {}", metric.name());
        }
        println!(
            "{:<width$} {:>12} {:>12} {:>9} {:>17} {:>9}  verdict",
            "benchmark", "old mean", "new mean", "change", "95% CI", "p (Holm)"
        );
    }
    let mut rows = Vec::new();
    for ((c, name), k) in records.iter().zip(&names).zip(&matched) {
        let regression =
            c.outcome == Outcome::Slower && threshold.is_some_and(|t| c.ratio - 1.0 > t);
        // Where instructions changed, the functions that moved most (Valgrind's runs keep
        // their busiest functions).
        let functions = if metric == Metric::Counter("instructions".into())
            && matches!(c.outcome, Outcome::Slower | Outcome::Faster)
        {
            let o: Vec<&Benchmark> = old.parts(k).into_iter().map(|(_, b)| b).collect();
            let n: Vec<&Benchmark> = new.parts(k).into_iter().map(|(_, b)| b).collect();
            crate::conclude::counts::functions_moved(&o, &n, 5)
        } else {
            Vec::new()
        };
        rows.push(comparison::Row {
            name: name.clone(),
            parameters: k.1.clone(),
            comparison: c,
            regression,
            functions: functions.clone(),
        });
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
                comparison::functions_words(&functions)
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
    let items: Vec<(f64, Option<(f64, f64)>)> = records.iter().map(|c| (c.ratio, c.ci)).collect();
    let geomean = crate::stats::geomean::geomean(&items, 0.95);
    if show && rows.len() > 1 {
        if let Some(g) = &geomean {
            println!("{}", comparison::geomean_line(g));
        }
    }
    let regression = rows.iter().any(|r| r.regression);
    let cx = comparison::Context {
        model: &model,
        sessions: &session_lines,
        geomean,
        fail_if_slower: threshold,
        alpha,
        missing: &missing,
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
