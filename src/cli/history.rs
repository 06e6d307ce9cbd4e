//! `tare history …` (the store: add, rebuild, show, check, report, alerts, confirm) and
//! `tare bisect`. Parses arguments, opens the store, calls `crate::store` and
//! `crate::report::history`, and maps outcomes to exit codes: `check` (and `report
//! --fail-on-new`) exit 1 when new regression alerts were raised (a regression at the newest
//! commit, `store::detect::tip`, raises one). `confirm` and `bisect` build
//! commits in git work trees, measure them interleaved with the `tare run` machinery, in this
//! process, and judge them with `conclude::commits` (the one model of `conclude::levels`).

use crate::error::{exit, usage, UserError};
use crate::report::history::{self as view, SeriesView};
use crate::results::model::Session;
use crate::store::detect::{self, DetectSettings};
use crate::store::git::{self, CommitInfo};
use crate::store::judge::{self, Scope};
use crate::store::{self, ingest, query, Store};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};

mod builds;
mod ratios;
use super::run::store::open;
use crate::serve::webhook;
pub use builds::bisect;
use builds::confirm;

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  tare run --store default --export-json r.json './prog'\n  tare history add results/*.json --commit v1.2\n  tare history show --last 15\n  tare history check            # exit 1 on new regression alerts (the newest commit judged too)\n  tare history report --export-html history.html --export-markdown summary.md"
)]
pub struct HistoryArgs {
    /// The store: an SQLite file or postgresql://user:pass@host:port/db (default: TARE_STORE,
    /// else .tare/history.sqlite in the git repository, else $XDG_DATA_HOME/tare/history.sqlite).
    #[arg(long, global = true, value_name = "URL|PATH|default")]
    store: Option<String>,
    #[command(subcommand)]
    command: HistoryCommand,
}

#[derive(Subcommand, Debug)]
enum HistoryCommand {
    /// Add results files (from `tare run --export-json`) to the store, with their commit.
    Add(AddArgs),
    /// Empty the store and add the given results files again (the files are the portable record).
    Rebuild(AddArgs),
    /// Show each series in the terminal: sparkline, newest commits, change points, alerts; then every open alert.
    Show(ShowArgs),
    /// Find change points, judge the newest commit against the ones before it, update the alerts and print the new ones; exit 1 on new regressions (a CI gate).
    Check(CheckArgs),
    /// Write the HTML dashboard and/or the Markdown summary (alerts as `check` left them).
    Report(ReportArgs),
    /// List alerts: the open ones (new and acknowledged, of every metric) by default.
    Alerts(AlertsArgs),
    /// Set an alert's status: acknowledged, dismissed, fixed, or new again.
    Alert(AlertArgs),
    /// Rebuild two commits and measure them interleaved in one session: is the change real?
    Confirm(ConfirmArgs),
    /// Count what the store holds.
    Info,
}

#[derive(Args, Debug)]
struct AddArgs {
    /// Results files (JSON from `tare run --export-json`); directories are searched for *.json.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The commit the results measured (default: what the file recorded, else HEAD of the git
    /// repository in the current directory).
    #[arg(long, value_name = "REV")]
    commit: Option<String>,
    /// Branch name to record with --commit.
    #[arg(long, value_name = "NAME")]
    branch: Option<String>,
    /// Do not ask git: store the sessions without a commit unless the files recorded one.
    #[arg(long, conflicts_with = "commit")]
    no_git: bool,
    /// Upload to a `tare serve` server instead of writing a store (default: TARE_SERVER when
    /// no --store is given).
    #[arg(long, value_name = "URL")]
    server: Option<String>,
    /// The server's write token (default: TARE_TOKEN).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// Store each ratio of a head to head (`tare kernels --baseline`) as a series too:
    /// benchmark 'KERNEL vs BASELINE', metric ratio.
    #[arg(long)]
    ratios: bool,
}

#[derive(Args, Debug, Clone)]
struct SelectArgs {
    /// Only benchmarks whose name contains this text.
    #[arg(short, long, value_name = "TEXT")]
    benchmark: Option<String>,
    /// Metric: wall_time, cpu_time, user_time, system_time, peak_memory, a counted event
    /// (instructions, … from --counters), or all (default: wall_time, the counted events and ratios).
    #[arg(short, long, value_name = "METRIC", default_value = "default")]
    metric: String,
}

#[derive(Args, Debug, Clone)]
struct DetectArgs {
    /// Largest permutation p-value at which a change point is kept, and the one-sided level at
    /// which the newest commit is judged a regression against the commits before it.
    #[arg(long, value_name = "ALPHA", default_value_t = DetectSettings::default().changepoint.alpha)]
    alpha: f64,
    /// Permutations per change-point test.
    #[arg(long, value_name = "N", default_value_t = DetectSettings::default().changepoint.permutations)]
    permutations: usize,
    /// Fewest commits on each side of a change point.
    #[arg(long, value_name = "N", default_value_t = DetectSettings::default().changepoint.min_size)]
    min_size: usize,
    /// Smallest change that raises an alert (its 95% interval must also exclude no change).
    #[arg(long, value_name = "PERCENT", default_value_t = format!("{}%", 100.0 * DetectSettings::default().min_effect))]
    min_effect: String,
    /// Look for change points among the newest N commits of each series.
    #[arg(long, value_name = "N", default_value_t = detect::WINDOW)]
    window: usize,
    /// Judge the newest commit of each series against up to N commits before it (at least 3;
    /// the baseline stops at a change point or a machine change).
    #[arg(long, value_name = "N", default_value_t = DetectSettings::default().tip_baseline)]
    tip_baseline: usize,
    /// Runs tare flagged as interfered with: flag (a commit counts without them unless every
    /// run was, then it keeps them: a shared runner's history never empties), drop (never
    /// counted: such a commit is left out), keep (counted like the others). Said per series.
    #[arg(long, value_name = "POLICY", default_value = "flag", value_parser = detect::Interfered::NAMES)]
    interfered: String,
    /// Per-series thresholds: the smallest change that alerts for the series a rule's globs
    /// match, instead of --min-effect (default: .tare/thresholds.toml in the git repository,
    /// when there; `none`: no file). See docs/store.md.
    #[arg(long, value_name = "FILE|none")]
    thresholds: Option<String>,
}

#[derive(Args, Debug)]
struct ShowArgs {
    #[command(flatten)]
    select: SelectArgs,
    #[command(flatten)]
    detect: DetectArgs,
    /// Rows of newest commits per series.
    #[arg(long, value_name = "N", default_value_t = 12)]
    last: usize,
}

#[derive(Args, Debug)]
struct CheckArgs {
    #[command(flatten)]
    select: SelectArgs,
    #[command(flatten)]
    detect: DetectArgs,
    /// Also write the Markdown summary here (`-` for standard output).
    #[arg(long = "export-markdown", alias = "markdown", value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Judge this commit (a CI job's: the pull request's) instead of each series' newest,
    /// against the history of --baseline-branch up to their merge base, read from git here;
    /// exit 1 while its regression alert is new (acknowledge or dismiss it to pass).
    #[arg(long, value_name = "REV")]
    commit: Option<String>,
    /// The branch whose history is the baseline of --commit (default: the remote's default
    /// branch, origin/HEAD, else main); the branch's own other commits never count.
    #[arg(long, value_name = "BRANCH")]
    baseline_branch: Option<String>,
    /// POST each new alert as JSON to this http:// URL (10 s timeout; a failure is a warning,
    /// never the gate's outcome). The shape is in docs/store.md.
    #[arg(long, value_name = "URL")]
    webhook: Option<String>,
    /// The link each webhook alert carries (e.g. the CI job's page).
    #[arg(long, value_name = "URL", requires = "webhook")]
    webhook_link: Option<String>,
}

#[derive(Args, Debug)]
struct ReportArgs {
    #[command(flatten)]
    select: SelectArgs,
    #[command(flatten)]
    detect: DetectArgs,
    /// Write the self-contained HTML dashboard here.
    #[arg(long = "export-html", alias = "html", value_name = "FILE")]
    html: Option<PathBuf>,
    /// Write the Markdown summary here (`-` for standard output).
    #[arg(long = "export-markdown", alias = "markdown", value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Raise alerts as `check` does, and exit 1 when new regression alerts were raised.
    #[arg(long)]
    fail_on_new: bool,
}

#[derive(Args, Debug)]
struct AlertsArgs {
    /// All alerts, closed ones too.
    #[arg(long)]
    all: bool,
}

#[derive(Args, Debug)]
struct AlertArgs {
    /// The alert's number (from `tare history alerts`).
    #[arg(value_name = "ID")]
    id: i64,
    /// New status: acknowledged, dismissed, fixed or new.
    #[arg(value_name = "STATUS")]
    status: String,
    /// Why (kept with the alert).
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
}

/// Building and measuring two commits (for `confirm` and `bisect`).
#[derive(Args, Debug, Clone)]
pub struct BuildRunArgs {
    /// Shell command that builds a commit, run in its work tree (e.g. 'make' or 'cc -O2 -o prog prog.c').
    #[arg(long, value_name = "CMD")]
    build: String,
    /// Command to measure, run in the commit's work tree; `{dir}` is replaced by the work tree's path.
    #[arg(long = "run", value_name = "CMD")]
    run_cmd: String,
    /// Runs per commit (interleaved rounds).
    #[arg(short = 'r', long, value_name = "N", default_value_t = 15)]
    runs: usize,
    /// Warm-up runs per commit.
    #[arg(short = 'w', long, value_name = "N", default_value_t = 1)]
    warmup: usize,
    /// Metric compared: wall_time, or cpu_time (steadier on a machine shared with other work).
    #[arg(long, value_name = "METRIC", default_value = "wall_time")]
    metric: String,
    /// Write the measured session as JSON here.
    #[arg(long, value_name = "FILE")]
    export_json: Option<PathBuf>,
    #[command(flatten)]
    level: super::opts::LevelArgs,
}

#[derive(Args, Debug)]
struct ConfirmArgs {
    /// The commit before the change.
    #[arg(value_name = "BEFORE")]
    before: String,
    /// The commit after the change.
    #[arg(value_name = "AFTER")]
    after: String,
    #[command(flatten)]
    spec: BuildRunArgs,
    /// Set this alert to acknowledged when the change is confirmed, dismissed when not.
    #[arg(long, value_name = "ID")]
    alert: Option<i64>,
}

#[derive(Args, Debug)]
pub struct BisectArgs {
    /// A commit known to be fast.
    #[arg(value_name = "GOOD")]
    good: String,
    /// A later commit known to be slow.
    #[arg(value_name = "BAD")]
    bad: String,
    #[command(flatten)]
    spec: BuildRunArgs,
}

pub fn history(a: HistoryArgs) -> Result<i32> {
    let spec = store::location(a.store.as_deref());
    match a.command {
        HistoryCommand::Add(x) => {
            let env_server = std::env::var("TARE_SERVER").is_ok_and(|v| !v.is_empty());
            if x.server.is_some() && a.store.is_some() {
                return Err(usage(
                    "give --store (write the store) or --server (upload to tare serve), not both",
                ));
            }
            if x.server.is_some() || (a.store.is_none() && env_server) {
                add_to_server(x)
            } else {
                add(&spec, x, false)
            }
        }
        HistoryCommand::Rebuild(x) => add(&spec, x, true),
        HistoryCommand::Show(x) => {
            let mut st = open(&spec)?;
            let (views, tips, _) = analyse(&mut st, &x.select, &x.detect, false, None)?;
            print!(
                "{}",
                view::terminal_with_tips(&views, &tips, x.last, crate::report::Style::Full.color())
            );
            print!("{}", view::open_alerts_text(&open_listed(&mut st)?));
            Ok(exit::OK)
        }
        HistoryCommand::Check(x) => {
            if let Some(url) = &x.webhook {
                if !url.starts_with("http://") && !url.starts_with("https://") {
                    return Err(usage(format!(
                        "--webhook {url}: give an http:// or https:// URL"
                    )));
                }
            }
            let scope = scope(x.commit.as_deref(), x.baseline_branch.as_deref())?;
            let mut st = open(&spec)?;
            let (views, tips, new) = analyse(&mut st, &x.select, &x.detect, true, scope.as_ref())?;
            if let Some(sc) = &scope {
                if views.is_empty() {
                    return Err(usage(format!(
                        "commit {} has no results in {} (of the metric selected): add them first (tare history add FILE --commit {})",
                        short(&sc.commit),
                        st.location,
                        sc.commit
                    )));
                }
                println!("{}", sc.words(false));
            }
            let open = open_listed(&mut st)?;
            if let Some(p) = &x.markdown {
                let line = scope.as_ref().map(|sc| sc.words(true));
                write_out(
                    p,
                    &view::markdown_of_check(&views, &tips, &open, &new, line.as_deref()),
                )?;
            }
            for v in &views {
                if let Some(line) = view::left_out_words(v) {
                    let s = &v.series;
                    println!("{} {} on {}: {line}", s.label(), s.metric, s.hostname);
                }
            }
            print!("{}", view::open_alerts_text(&open));
            let code = print_verdict(
                &views,
                &tips,
                &verdict(&views, &tips, &new, scope.as_ref()),
                scope.as_ref(),
            );
            if let Some(url) = &x.webhook {
                let fresh: Vec<_> = views
                    .iter()
                    .flat_map(|v| {
                        v.alerts
                            .iter()
                            .filter(|a| new.contains(&a.id))
                            .map(move |a| (a, &v.series))
                    })
                    .collect();
                let sent = webhook::post(url, &fresh, x.webhook_link.as_deref(), "tare");
                if !fresh.is_empty() {
                    println!(
                        "webhook: {sent} of {} new alert(s) delivered to {url}",
                        fresh.len()
                    );
                }
            }
            Ok(code)
        }
        HistoryCommand::Report(x) => {
            if x.html.is_none() && x.markdown.is_none() {
                return Err(usage(
                    "tare history report: say what to write: --export-html FILE and/or --export-markdown FILE",
                ));
            }
            let mut st = open(&spec)?;
            let (views, tips, new) = analyse(&mut st, &x.select, &x.detect, x.fail_on_new, None)?;
            let open = open_listed(&mut st)?;
            if let Some(p) = &x.html {
                write_out(p, &view::html(&views, "tare history", &open, &new))?;
                eprintln!("wrote {}", p.display());
            }
            if let Some(p) = &x.markdown {
                write_out(p, &view::markdown_with_tips(&views, &tips, &open, &new))?;
            }
            Ok(if x.fail_on_new {
                print_verdict(&views, &tips, &verdict(&views, &tips, &new, None), None)
            } else {
                exit::OK
            })
        }
        HistoryCommand::Alerts(x) => {
            let mut st = open(&spec)?;
            let list = if x.all {
                detect::alerts(&mut st.db, &[])?
            } else {
                detect::open_alerts(&mut st.db)?
            };
            let list = crate::store::overview::with_series(&mut st.db, list)?;
            if list.is_empty() {
                println!(
                    "no {}alerts in {}",
                    if x.all { "" } else { "open " },
                    st.location
                );
            }
            for (al, s) in &list {
                println!("{}", view::alert_line(al, s.as_ref()));
            }
            Ok(exit::OK)
        }
        HistoryCommand::Alert(x) => {
            let status = match x.status.as_str() {
                "ack" | "acknowledge" | "acknowledged" => "acknowledged",
                "dismiss" | "dismissed" => "dismissed",
                "fix" | "fixed" => "fixed",
                "new" | "reopen" => "new",
                other => {
                    return Err(usage(format!(
                        "unknown alert status '{other}': give acknowledged, dismissed, fixed or new"
                    )))
                }
            };
            let mut st = open(&spec)?;
            if !detect::set_status(&mut st.db, x.id, status, x.note.as_deref(), &store::now())? {
                return Err(usage(format!(
                    "there is no alert #{} in {}: list them with `tare history alerts --all`",
                    x.id, st.location
                )));
            }
            println!("alert #{} is {status}", x.id);
            Ok(exit::OK)
        }
        HistoryCommand::Confirm(x) => confirm(&spec, x),
        HistoryCommand::Info => {
            let mut st = open(&spec)?;
            let c = query::counts(&mut st.db)?;
            println!(
                "{}: {} commits, {} machines, {} sessions, {} benchmarks, {} runs (schema version {})",
                st.location,
                c[0],
                c[1],
                c[2],
                c[3],
                c[4],
                crate::store::schema::SCHEMA_VERSION
            );
            Ok(exit::OK)
        }
    }
}

fn write_out(p: &Path, text: &str) -> Result<()> {
    if p.as_os_str() == "-" {
        print!("{text}");
        return Ok(());
    }
    crate::results::fsio::write(p, text.as_bytes())
        .map_err(|e| UserError::usage(format!("{e:#}")).into())
}

fn short(h: &str) -> String {
    judge::short(h)
}

/// The scope of `check --commit REV --baseline-branch BRANCH` (None without either).
fn scope(commit: Option<&str>, branch: Option<&str>) -> Result<Option<Scope>> {
    if commit.is_none() && branch.is_none() {
        return Ok(None);
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    Scope::from_git(&cwd, commit, branch)
        .map(Some)
        .map_err(usage)
}

/// Where a series is, for the gate's lines.
fn where_(v: &SeriesView) -> String {
    format!(
        "{} {} on {}",
        v.series.label(),
        v.series.metric,
        v.series.hostname
    )
}

/// Prints the gate's verdict (`judge::verdict`) as `check` says it; its exit code.
fn print_verdict(views: &[SeriesView], tips: &Tips, v: &judge::Verdict, sc: Option<&Scope>) -> i32 {
    for &i in &v.no_value {
        eprintln!(
            "{}: commit {} not judged: no value of its own (every run flagged as interfered with, under --interfered drop)",
            where_(&views[i]),
            short(sc.map(|s| s.commit.as_str()).unwrap_or(""))
        );
    }
    for &i in &v.said {
        if let Some(t) = &tips[i] {
            eprintln!(
                "{}: {}",
                where_(&views[i]),
                view::tip_line(t, &views[i].points, &views[i].alerts)
            );
        }
    }
    // "new alert #ID{tag}: BENCHMARK METRIC KIND at COMMIT: RATIO" of each new alert listed.
    let new_alerts = |tag: &str| -> Vec<String> {
        v.new_alerts
            .iter()
            .filter_map(|&(i, id)| {
                let a = views[i].alerts.iter().find(|a| a.id == id)?;
                Some(format!(
                    "new alert #{}{tag}: {} {} at {}: {}",
                    a.id,
                    where_(&views[i]),
                    a.kind,
                    short(&a.commit_key),
                    view::alert_ratio(a)
                ))
            })
            .collect()
    };
    match sc {
        Some(sc) => {
            for line in new_alerts(
                " in the baseline's history (not this commit's: it does not fail this check)",
            ) {
                println!("{line}");
            }
            println!(
                "judged commit {} in {} series: {}",
                short(&sc.commit),
                v.judged,
                match (v.failing, v.accepted) {
                    (0, 0) => "no regression".to_string(),
                    (0, k) => format!("{k} regression(s), their alerts acknowledged or dismissed"),
                    (n, _) => format!("{n} regression(s)"),
                }
            );
            if v.failing > 0 {
                eprintln!(
                    "tare: commit {} is a regression in {} series: confirm with `tare history confirm`, then acknowledge (accepted) or dismiss its alert with `tare history alert ID STATUS` to pass",
                    short(&sc.commit),
                    v.failing
                );
            }
        }
        None => {
            println!(
                "judged the newest commit of {} series against the commits before it: {}",
                v.judged,
                match v.failing {
                    0 => "no regression".to_string(),
                    n => format!("{n} regression(s)"),
                }
            );
            for line in new_alerts("") {
                eprintln!("{line}");
            }
            if v.new_regressions > 0 {
                eprintln!(
                    "tare: {} new regression alert(s): confirm with `tare history confirm`, then acknowledge or dismiss with `tare history alert ID STATUS`",
                    v.new_regressions
                );
            } else {
                println!("no new regression alerts");
            }
        }
    }
    v.code
}

/// `judge::verdict` of the views.
fn verdict(views: &[SeriesView], tips: &Tips, new: &[i64], sc: Option<&Scope>) -> judge::Verdict {
    let seen: Vec<judge::Seen> = views
        .iter()
        .zip(tips)
        .map(|(v, t)| judge::Seen {
            tip: t.as_ref(),
            points: &v.points,
            alerts: &v.alerts,
        })
        .collect();
    judge::verdict(&seen, new, sc)
}

/// The detection parameters of the options.
fn params(d: &DetectArgs) -> judge::Params {
    judge::Params {
        alpha: d.alpha,
        permutations: d.permutations,
        min_size: d.min_size,
        min_effect: d.min_effect.clone(),
        window: d.window,
        tip_baseline: d.tip_baseline,
        interfered: d.interfered.clone(),
    }
}

/// The thresholds file of `--thresholds` (default: `.tare/thresholds.toml` in the repository
/// here, when there; `none`: none). A file named but missing or wrong is a usage error.
fn thresholds(d: &DetectArgs) -> Result<Option<store::thresholds::Thresholds>> {
    let path = match d.thresholds.as_deref() {
        Some("none") => return Ok(None),
        Some(p) => PathBuf::from(p),
        None => {
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            match store::thresholds::default_path(&cwd) {
                Some(p) => p,
                None => return Ok(None),
            }
        }
    };
    store::thresholds::Thresholds::load(&path)
        .map(Some)
        .map_err(|e| usage(format!("{e} (--thresholds FILE|none)")))
}

/// The store's open alerts with their series: what every view lists (every metric).
fn open_listed(st: &mut Store) -> Result<Vec<view::Listed>> {
    let open = detect::open_alerts(&mut st.db)?;
    crate::store::overview::with_series(&mut st.db, open)
}

/// The judgment of each series' newest commit, by index of its view.
type Tips = Vec<Option<detect::Tip>>;

/// `judge::analyse` of the options: the views, their tips, the ids of new alerts.
fn analyse(
    st: &mut Store,
    sel: &SelectArgs,
    d: &DetectArgs,
    raise: bool,
    scope: Option<&Scope>,
) -> Result<(Vec<SeriesView>, Tips, Vec<i64>)> {
    let settings = params(d).settings("--").map_err(usage)?;
    let thresholds = thresholds(d)?;
    if let Some(e) = judge::metric_error(st, &sel.metric, "--metric")? {
        return Err(usage(e));
    }
    let selection = judge::Selection {
        metric: &sel.metric,
        benchmark: sel.benchmark.as_deref(),
        settings,
        window: d.window,
        thresholds: thresholds.as_ref(),
    };
    let (judged, new) = judge::analyse(st, &selection, raise, scope)?;
    let (views, tips) = judged
        .into_iter()
        .map(|j| {
            (
                SeriesView {
                    series: j.series,
                    points: j.points,
                    changes: j.changes,
                    alerts: j.alerts,
                    interfered: j.interfered,
                },
                j.tip,
            )
        })
        .unzip();
    Ok((views, tips, new))
}

/// The results files among `paths` (directories searched for *.json, not recursively).
fn files_of(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("cannot read directory {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "json"))
                .collect();
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Files per transaction of `history add`, and runs: a batch is written when either is
/// reached. Memory holds one batch of parsed sessions, whatever the number of files (2,000
/// files held all at once took 951 MB).
const BATCH_FILES: usize = 200;
const BATCH_RUNS: usize = 50_000;

fn add(spec: &str, a: AddArgs, rebuild: bool) -> Result<i32> {
    let files = files_of(&a.files)?;
    if files.is_empty() {
        // A gate must not pass on nothing: a directory without results is an error.
        return Err(usage(format!(
            "no results file (*.json) in {}: nothing to add; give files written by --export-json",
            a.files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if let Some(missing) = files.iter().find(|f| !f.exists()) {
        return Err(usage(format!(
            "cannot read results file {}: no such file; check the path",
            missing.display()
        )));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let given = given_commit(&a, &cwd);
    // HEAD is asked once, and only when a file recorded no commit.
    let mut head: Option<Option<CommitInfo>> = None;
    if rebuild {
        // The store is emptied only when every file reads: each is parsed and let go.
        for f in &files {
            crate::results::read::load_session(f)?;
        }
    }
    let mut st = open(spec)?;
    if rebuild {
        st.reset()?;
    }
    let (mut added, mut skipped, mut runs) = (0, 0, 0);
    let mut cache = ingest::Cache::default();
    let mut done_files = 0;
    // Files are read and written a batch at a time (one transaction each): memory stays at
    // one batch whatever the number of files, and a bad file or a failure loses no batch
    // already committed; the same command run again skips the sessions already stored.
    let mut batch: Vec<(PathBuf, Session, Option<CommitInfo>, String)> = Vec::new();
    let mut batch_runs = 0;
    let mut k = 0;
    while k < files.len() || !batch.is_empty() {
        if k < files.len() && batch.len() < BATCH_FILES && batch_runs < BATCH_RUNS {
            let f = &files[k];
            k += 1;
            let s = crate::results::read::load_session(f).map_err(|e| {
                if done_files > 0 {
                    usage(format!(
                        "{e:#} (the {done_files} files before it were added to {}; fix or leave out this one and run the same command again: stored sessions are skipped)",
                        st.location
                    ))
                } else {
                    e
                }
            })?;
            let s = if a.ratios { ratios::with_series(s) } else { s };
            let commit = commit_of(&given, &s, a.no_git, &mut head, &cwd);
            ingest::check(&s, commit.as_ref()).map_err(|e| {
                usage(format!(
                    "{}: {e}{}",
                    f.display(),
                    if done_files > 0 {
                        format!(" (the {done_files} files before it were added; fix or leave out this one and run the same command again)")
                    } else {
                        String::new()
                    }
                ))
            })?;
            let source = std::fs::canonicalize(f).unwrap_or_else(|_| f.clone());
            batch_runs += s.benchmarks.iter().map(|b| b.runs.len()).sum::<usize>();
            batch.push((f.clone(), s, commit, source.to_string_lossy().into_owned()));
            continue;
        }
        let items: Vec<(&Session, Option<&CommitInfo>, Option<&str>)> = batch
            .iter()
            .map(|(_, s, c, src)| (s, c.as_ref(), Some(src.as_str())))
            .collect();
        let done = ingest::add_sessions(&mut st.db, &items, &mut cache).map_err(|e| {
            UserError::run_failed(format!(
                "cannot add the files from {} on to {}: {e:#}{}",
                batch[0].0.display(),
                st.location,
                if done_files > 0 {
                    format!(" (the first {done_files} files were added)")
                } else {
                    String::new()
                }
            ))
        })?;
        done_files += batch.len();
        for r in done {
            if r.added {
                added += 1;
                runs += r.runs;
            } else {
                skipped += 1;
            }
        }
        batch.clear();
        batch_runs = 0;
    }
    println!(
        "{} {} ({} runs){} in {}",
        if rebuild { "rebuilt from" } else { "added" },
        crate::units::plural(added, "session"),
        runs,
        if skipped > 0 {
            format!("; {skipped} already stored")
        } else {
            String::new()
        },
        st.location
    );
    Ok(exit::OK)
}

/// The commit of each file as `add` finds it: `--commit`, else what the file recorded, else
/// HEAD of the repository here (asked once), unless `--no-git`.
fn commit_of(
    given: &Option<CommitInfo>,
    s: &Session,
    no_git: bool,
    head: &mut Option<Option<CommitInfo>>,
    cwd: &Path,
) -> Option<CommitInfo> {
    match (given, ingest::recorded_commit(s), no_git) {
        (Some(c), _, _) => Some(c.clone()),
        (None, Some(c), _) => Some(c),
        (None, None, false) => head
            .get_or_insert_with(|| git::commit_info(cwd, None).ok())
            .clone(),
        (None, None, true) => None,
    }
}

/// `history add --server URL`: what `add` would store, uploaded to `tare serve` (the commits
/// resolved here, where the repository is), BATCH_FILES files a request.
fn add_to_server(a: AddArgs) -> Result<i32> {
    let server = crate::serve::client::Server::from(a.server.as_deref(), a.token.as_deref())
        .map_err(|e| usage(format!("{e:#}")))?;
    let files = files_of(&a.files)?;
    if files.is_empty() {
        return Err(usage(
            "no results file (*.json) given: nothing to upload; give files written by --export-json",
        ));
    }
    if let Some(missing) = files.iter().find(|f| !f.exists()) {
        return Err(usage(format!(
            "cannot read results file {}: no such file; check the path",
            missing.display()
        )));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let given = given_commit(&a, &cwd);
    let mut head = None;
    let mut total = crate::serve::client::Uploaded::default();
    for chunk in files.chunks(BATCH_FILES) {
        let mut batch = Vec::with_capacity(chunk.len());
        for f in chunk {
            let s = crate::results::read::load_session(f)?;
            let s = if a.ratios { ratios::with_series(s) } else { s };
            let c = commit_of(&given, &s, a.no_git, &mut head, &cwd);
            crate::store::ingest::check(&s, c.as_ref())
                .map_err(|e| usage(format!("{}: {e}", f.display())))?;
            batch.push((s, c));
        }
        let u = server.upload(batch).map_err(|e| {
            UserError::run_failed(if total.added + total.already_stored > 0 {
                format!(
                    "{e:#} ({} sessions before were stored)",
                    total.added + total.already_stored
                )
            } else {
                format!("{e:#}")
            })
        })?;
        total.added += u.added;
        total.already_stored += u.already_stored;
        total.runs += u.runs;
    }
    println!(
        "added {} ({} runs){} on {}",
        crate::units::plural(total.added as usize, "session"),
        total.runs,
        if total.already_stored > 0 {
            format!("; {} already stored", total.already_stored)
        } else {
            String::new()
        },
        server.url
    );
    Ok(exit::OK)
}

fn given_commit(a: &AddArgs, cwd: &Path) -> Option<CommitInfo> {
    match (&a.commit, a.no_git) {
        (_, true) => None,
        (Some(rev), false) => Some(match git::commit_info(cwd, Some(rev)) {
            Ok(mut c) => {
                c.branch = a.branch.clone().or(c.branch);
                c
            }
            // Not a repository here: store the hash as given.
            Err(_) => CommitInfo {
                hash: rev.clone(),
                branch: a.branch.clone(),
                ..Default::default()
            },
        }),
        (None, false) => None,
    }
}
