//! Exporters: the whole session as JSON, one tidy CSV row per run, a Markdown summary table.
//! Every format is one function from a [`Session`] to bytes, written through [`super::fsio`]
//! (a regular file is replaced atomically; a device, FIFO, link or `-` is written in place).

use super::model::{Benchmark, Run, Session};
use crate::units;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    Markdown,
    AsciiDoc,
    OrgMode,
    /// hyperfine's `--export-json` shape, for the scripts hyperfine users have.
    Hyperfine,
}

impl Format {
    /// The command-line option that asks for this format.
    pub fn option(self) -> &'static str {
        match self {
            Format::Json => "--export-json",
            Format::Csv => "--export-csv",
            Format::Markdown => "--export-markdown",
            Format::AsciiDoc => "--export-asciidoc",
            Format::OrgMode => "--export-orgmode",
            Format::Hyperfine => "--export-json-hyperfine",
        }
    }
}

/// Checks a session's outputs before its first run: no two name the same file, and each can be
/// written (see [`super::fsio`]). `html` is `--export-html`'s path. Checks, too, that
/// and no other running session writes one of them (the returned claims hold them until
/// dropped).
pub fn check_all(exports: &[Export], html: Option<&Path>) -> anyhow::Result<super::fsio::Claims> {
    let mut outputs: Vec<(&str, &Path)> = exports
        .iter()
        .map(|e| (e.format.option(), e.path.as_path()))
        .collect();
    if let Some(p) = html {
        outputs.push(("--export-html", p));
    }
    super::fsio::distinct(&outputs)?;
    for (_, p) in &outputs {
        super::fsio::check(p)?;
    }
    super::fsio::claim(&outputs)
}

/// The export a journal is kept beside: the first whose path is a file tare replaces (not
/// standard output, a device, a FIFO or a link).
pub fn journal_beside(exports: &[Export]) -> Option<&Export> {
    exports.iter().find(|e| super::fsio::journals(&e.path))
}

/// One requested export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    pub format: Format,
    pub path: PathBuf,
}

/// Writes one export of the session.
pub fn write(export: &Export, session: &Session) -> anyhow::Result<()> {
    let bytes = match export.format {
        Format::Json => to_json(session)?.into_bytes(),
        Format::Csv => to_csv(session)?,
        Format::Markdown => to_markdown(session).into_bytes(),
        Format::AsciiDoc => to_table(session, TableSyntax::AsciiDoc).into_bytes(),
        Format::OrgMode => to_table(session, TableSyntax::OrgMode).into_bytes(),
        Format::Hyperfine => to_hyperfine_json(session)?.into_bytes(),
    };
    super::fsio::write(&export.path, &bytes)
}

/// The session as pretty-printed JSON.
pub fn to_json(session: &Session) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(session)?;
    s.push('\n');
    Ok(s)
}

/// The session in hyperfine's `--export-json` shape (hyperfine 1.x `results[]`: command, mean,
/// stddev, median, user, system, min, max, times, exit_codes, parameters), so the scripts
/// written for hyperfine (plot_whisker.py, plot_histogram.py, advanced_statistics.py, …) read
/// it unchanged. Times are the counted runs' wall times in seconds; user and system are their
/// means, as hyperfine reports them; stddev is null below two runs, as in hyperfine. What
/// hyperfine has no field for (CPU time of the whole tree, peak memory, the method) is only
/// in tare's own JSON.
pub fn to_hyperfine_json(session: &Session) -> anyhow::Result<String> {
    let results: Vec<serde_json::Value> = session
        .benchmarks
        .iter()
        .map(|b| {
            let runs: Vec<&Run> = b.runs.iter().filter(|r| r.counted).collect();
            let times: Vec<f64> = runs.iter().map(|r| r.wall_time).collect();
            let d = crate::stats::describe(&times);
            let mean_of = |f: fn(&Run) -> f64| {
                (!runs.is_empty())
                    .then(|| runs.iter().map(|r| f(r)).sum::<f64>() / runs.len() as f64)
            };
            serde_json::json!({
                "command": b.command,
                "mean": d.as_ref().map(|d| d.mean),
                "stddev": d.as_ref().filter(|d| d.n >= 2).map(|d| d.stddev),
                "median": d.as_ref().map(|d| d.median),
                "user": mean_of(|r| r.user_time),
                "system": mean_of(|r| r.system_time),
                "min": d.as_ref().map(|d| d.min),
                "max": d.as_ref().map(|d| d.max),
                "times": times,
                "exit_codes": runs.iter().map(|r| r.exit_code).collect::<Vec<_>>(),
                "parameters": b.parameters,
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&serde_json::json!({ "results": results }))?;
    s.push('\n');
    Ok(s)
}

/// Column names of the per-run CSV, before the parameter columns.
pub const CSV_FIELDS: [&str; 18] = [
    "benchmark",
    "command",
    "index",
    "round",
    "warmup",
    "counted",
    "start_offset",
    "wall_time",
    "user_time",
    "system_time",
    "cpu_time",
    "peak_memory",
    "exit_code",
    "signal",
    "termination",
    "involuntary_context_switches",
    "cores",
    "outlier",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

fn csv_row(b: &Benchmark, r: &Run, params: &[String], cores: &str) -> Vec<String> {
    let mut row = vec![
        b.name.clone(),
        b.command.clone(),
        r.index.to_string(),
        opt(r.round),
        r.warmup.to_string(),
        r.counted.to_string(),
        r.start_offset.to_string(),
        r.wall_time.to_string(),
        r.user_time.to_string(),
        r.system_time.to_string(),
        r.cpu_time.to_string(),
        opt(r.peak_memory),
        opt(r.exit_code),
        opt(r.signal),
        r.termination.as_str().to_string(),
        opt(r.involuntary_context_switches),
        cores.to_string(),
        r.extra
            .get("outlier")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string(),
    ];
    row.extend(
        params
            .iter()
            .map(|p| b.parameters.get(p).cloned().unwrap_or_default()),
    );
    row
}

/// One row per run (warm-up included, marked), tidy: ready for pandas or R. Parameters get a
/// column each, named `parameter_<NAME>`.
pub fn to_csv(session: &Session) -> anyhow::Result<Vec<u8>> {
    let params: Vec<String> = session
        .benchmarks
        .iter()
        .flat_map(|b| b.parameters.keys().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let cores = session
        .cores
        .as_ref()
        .map(|c| {
            c.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    // Counters (`--counters`): one column per event, `counter_<EVENT>`, empty when not counted.
    let counter_of = |r: &Run, event: &str| -> String {
        r.extra
            .get("counters")
            .and_then(|v| v.as_array())
            .and_then(|list| list.iter().find(|c| c["event"] == event))
            .and_then(|c| c["value"].as_f64())
            .map(|v| v.to_string())
            .unwrap_or_default()
    };
    let events: Vec<String> = session
        .benchmarks
        .iter()
        .flat_map(|b| &b.runs)
        .filter_map(|r| r.extra.get("counters").and_then(|v| v.as_array()))
        .flatten()
        .filter_map(|c| c["event"].as_str().map(String::from))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = CSV_FIELDS.iter().map(|s| s.to_string()).collect();
    header.extend(params.iter().map(|p| format!("parameter_{p}")));
    header.extend(events.iter().map(|e| format!("counter_{e}")));
    // Which backend counted them (perf or valgrind: times of valgrind's runs are its own).
    if !events.is_empty() {
        header.push("counters_backend".into());
    }
    let meter_cols = super::facts::meter_columns(session);
    header.extend(meter_cols.iter().map(|c| c.to_string()));
    // A head to head's process: its ratio to the baseline.
    let ratios = session
        .benchmarks
        .iter()
        .flat_map(|b| &b.runs)
        .any(|r| process_ratio(r).is_some());
    if ratios {
        header.push("ratio_to_baseline".into());
    }
    w.write_record(&header)?;
    for b in &session.benchmarks {
        for r in &b.runs {
            let mut row = csv_row(b, r, &params, &cores);
            row.extend(events.iter().map(|e| counter_of(r, e)));
            if !events.is_empty() {
                row.push(super::facts::backend_of(r).unwrap_or_default().to_string());
            }
            row.extend(meter_cols.iter().map(|c| super::facts::meter_value(r, c)));
            if ratios {
                row.push(opt(process_ratio(r)));
            }
            w.write_record(row)?;
        }
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))
}

/// The order benchmarks are shown in: as given, or fastest median first when the session
/// recorded `--sort median-time`.
pub fn display_order(session: &Session) -> Vec<usize> {
    let mut order: Vec<usize> = (0..session.benchmarks.len()).collect();
    if session.extra.get("sort").and_then(|v| v.as_str()) == Some("median-time") {
        let key = |i: &usize| {
            session.benchmarks[*i]
                .summary
                .wall_time
                .as_ref()
                .map_or(f64::INFINITY, |w| w.median)
        };
        order.sort_by(|a, b| key(a).total_cmp(&key(b)));
    }
    order
}

/// The markup of a summary table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableSyntax {
    Markdown,
    AsciiDoc,
    OrgMode,
}

impl TableSyntax {
    fn code(self, s: &str) -> String {
        match self {
            TableSyntax::Markdown => format!("`{}`", s.replace('|', "\\|").replace('`', "'")),
            TableSyntax::AsciiDoc => format!("`{}`", s.replace('|', "\\|").replace('`', "'")),
            TableSyntax::OrgMode => format!("={}=", s.replace('|', "\\vert{}")),
        }
    }
    fn text(self, s: &str) -> String {
        match self {
            TableSyntax::OrgMode => s.replace('|', "\\vert{}"),
            _ => s.replace('|', "\\|"),
        }
    }

    /// One table: a header row, then rows; `right[i]` aligns column i to the right.
    fn render(self, header: &[&str], right: &[bool], rows: &[Vec<String>]) -> String {
        let mut out = String::new();
        match self {
            TableSyntax::Markdown => {
                out.push_str(&format!("| {} |\n", header.join(" | ")));
                let align: Vec<&str> = right
                    .iter()
                    .map(|r| if *r { "---:" } else { ":---" })
                    .collect();
                out.push_str(&format!("|{}|\n", align.join("|")));
                for r in rows {
                    out.push_str(&format!("| {} |\n", r.join(" | ")));
                }
            }
            TableSyntax::AsciiDoc => {
                let cols: Vec<&str> = right.iter().map(|r| if *r { ">" } else { "<" }).collect();
                out.push_str(&format!(
                    "[cols=\"{}\", options=\"header\"]\n|===\n",
                    cols.join(",")
                ));
                out.push_str(&format!("|{}\n", header.join("\n|")));
                for r in rows {
                    out.push_str(&format!("\n|{}\n", r.join("\n|")));
                }
                out.push_str("|===\n");
            }
            TableSyntax::OrgMode => {
                out.push_str(&format!("| {} |\n", header.join(" | ")));
                let dashes: Vec<&str> = header.iter().map(|_| "---").collect();
                out.push_str(&format!("|{}|\n", dashes.join("+")));
                for r in rows {
                    out.push_str(&format!("| {} |\n", r.join(" | ")));
                }
            }
        }
        out
    }
}

/// The summary table in Markdown: one row per benchmark, units chosen per column.
pub fn to_markdown(session: &Session) -> String {
    to_table(session, TableSyntax::Markdown) + &io_markdown(session)
}

/// The I/O and cache medians as a table in Markdown (empty when no benchmark has them).
fn io_markdown(session: &Session) -> String {
    let mut rows = Vec::new();
    for b in &session.benchmarks {
        let Some(io) = super::facts::io_medians(b) else {
            continue;
        };
        rows.push(format!(
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            b.name.replace('|', "\\|"),
            bytes(io.block_read),
            ops(io.block_read_ops),
            bytes(io.block_write),
            ops(io.block_write_ops),
            bytes(io.syscall_read),
            bytes(io.syscall_write),
            bytes(io.dirty_left_max)
        ));
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nI/O per run (medians of counted runs; disk = block layer of the whole tree, \
         syscalls = main process and the children it waited for):\n\n\
         | Command | Disk read | Read ops | Disk written | Write ops | Syscall read | Syscall written | Dirty left (max) |\n\
         |:---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        out.push_str(&r);
        out.push('\n');
    }
    out
}

fn bytes(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| units::format_bytes(x, None))
}

fn ops(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{x:.0}"))
}

/// The summary table (and the comparisons, if any) in `syntax`, with the session's
/// measurement method as a note under it.
pub fn to_table(session: &Session, syntax: TableSyntax) -> String {
    let mut rows = Vec::new();
    for b in display_order(session)
        .into_iter()
        .map(|i| &session.benchmarks[i])
    {
        let name = syntax.code(&b.name);
        let Some(w) = &b.summary.wall_time else {
            let mut r = vec![name];
            r.extend(["–"; 6].iter().map(|s| s.to_string()));
            r.push("0".into());
            rows.push(r);
            continue;
        };
        let res = Some((w.median_ci_high - w.median_ci_low) / 2.0)
            .filter(|r| *r > 0.0 && w.median_ci_exact);
        let (scale, unit) = session_time_scale(session, w.median);
        let f = |v: f64| units::format_scaled(v, scale, unit, res);
        let cpu = b.summary.cpu_time.as_ref().map_or("–".into(), |c| {
            let (scale, unit) = session_time_scale(session, c.median);
            units::format_scaled(c.median, scale, unit, None)
        });
        let mem = b
            .summary
            .peak_memory
            .as_ref()
            .map_or("–".into(), |m| units::format_peak(m.median, None));
        rows.push(vec![
            name,
            f(w.median),
            if w.median_ci_exact {
                format!("{} … {}", f(w.median_ci_low), f(w.median_ci_high))
            } else {
                // Below 6 runs no order statistics give the median 95% coverage: min … max is
                // not a 95% interval, and the column must not pretend it is.
                "too few runs".to_string()
            },
            format!(
                "{} ± {}",
                f(w.mean),
                units::format_scaled(w.stddev, scale, unit, None)
            ),
            format!("{} … {}", f(w.min), f(w.max)),
            cpu,
            mem,
            w.n.to_string(),
        ]);
    }
    let mut out = syntax.render(
        &[
            "Command",
            "Wall time (median)",
            "95% CI",
            "Mean ± σ",
            "Min … Max",
            "CPU time (median)",
            "Peak memory (median)",
            "Runs",
        ],
        &[false, true, true, true, true, true, true, true],
        &rows,
    );
    if !session.comparisons.is_empty() {
        let rows: Vec<Vec<String>> = session
            .comparisons
            .iter()
            .map(|c| {
                let d = crate::stats::compare::decimals(c.ratio_ci_low, c.ratio_ci_high);
                vec![
                    syntax.code(&c.candidate_name),
                    syntax.code(&c.reference_name),
                    format!("{:.d$}", c.ratio),
                    format!("{:.d$} … {:.d$}", c.ratio_ci_low, c.ratio_ci_high),
                    units::format_p(c.p_adjusted),
                    syntax.text(&c.words),
                ]
            })
            .collect();
        out.push('\n');
        out.push_str(&syntax.render(
            &[
                "Candidate",
                "Reference",
                "Ratio",
                "CI (level in the verdict)",
                "p (adj.)",
                "Verdict",
            ],
            &[false, false, true, true, true, false],
            &rows,
        ));
    }
    out.push_str(&head_to_head_table(session, syntax));
    let m = &session.method;
    let kind = match m.kind {
        super::model::MethodKind::CgroupV1 => "cgroup v1",
        super::model::MethodKind::CgroupV2 => "cgroup v2",
        super::model::MethodKind::Rusage => "rusage (fallback)",
        super::model::MethodKind::Imported => "another harness (imported)",
        super::model::MethodKind::Unknown => "an unknown method",
    };
    out.push_str(&format!(
        "\nMeasured with {kind}: CPU time = {}; peak memory = {}.\n",
        m.cpu_time, m.peak_memory
    ));
    out
}

/// Key of a head to head's record of a process (`Run.extra`): its ratio to the baseline and
/// that ratio's within-process interval (`tare kernels --baseline`).
pub const HEAD_TO_HEAD_KEY: &str = "head_to_head";

/// A run's ratio to the baseline, where it is a process of a head to head.
pub fn process_ratio(r: &Run) -> Option<f64> {
    r.extra.get(HEAD_TO_HEAD_KEY)?.get("ratio")?.as_f64()
}

/// The per-process ratios of a head to head inside one process (`tare kernels --baseline`):
/// one row a comparison whose candidate's runs are processes with their ratio (empty
/// otherwise).
fn head_to_head_table(session: &Session, syntax: TableSyntax) -> String {
    let rows: Vec<Vec<String>> = session
        .comparisons
        .iter()
        .filter_map(|c| {
            let b = session.benchmarks.get(c.candidate)?;
            let ratios: Vec<f64> = b.runs.iter().filter_map(process_ratio).collect();
            if ratios.is_empty() {
                return None;
            }
            let d = crate::stats::compare::decimals(c.ratio_ci_low, c.ratio_ci_high).max(3);
            let list: Vec<String> = ratios.iter().map(|r| format!("{r:.d$}")).collect();
            Some(vec![
                syntax.code(&c.candidate_name),
                syntax.code(&c.reference_name),
                if c.metric == "cpu_time" {
                    "CPU"
                } else {
                    "wall"
                }
                .to_string(),
                format!(
                    "±{:.2}%",
                    100.0 * ((c.ratio_ci_high / c.ratio_ci_low).sqrt() - 1.0)
                ),
                ratios.len().to_string(),
                list.join(" "),
            ])
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nHead to head inside one process: each process's ratio (time per loop of the candidate / of the reference, the median of its paired blocks); the verdict is over processes.\n\n",
    );
    out.push_str(&syntax.render(
        &[
            "Candidate",
            "Reference",
            "Time",
            "Interval ±",
            "Processes",
            "Per-process ratios",
        ],
        &[false, false, false, true, true, false],
        &rows,
    ));
    out
}

/// The unit of times in the tables: the session's `--time-unit` if recorded, else per value.
fn session_time_scale(session: &Session, seconds: f64) -> (f64, &'static str) {
    match session.extra.get("time_unit").and_then(|v| v.as_str()) {
        Some("s") => (1.0, "s"),
        Some("ms") => (1e3, "ms"),
        Some("µs") => (1e6, "µs"),
        Some("ns") => (1e9, "ns"),
        _ => units::time_scale(seconds),
    }
}
