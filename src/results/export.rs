//! Exporters: the whole session as JSON, one tidy CSV row per run, a Markdown summary table.
//! Every format is one function from a [`Session`] to bytes written atomically (temporary file
//! and rename), so a reader never sees half a file.

use super::model::{Benchmark, Run, Session};
use crate::units;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    Markdown,
}

/// One requested export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    pub format: Format,
    pub path: PathBuf,
}

/// Fails now, before any run, when `path` cannot be written (missing directory, no
/// permission). Leaves no file behind that was not there.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| {
            crate::error::usage(format!(
                "cannot write export file {}: {e}; choose a writable path",
                path.display()
            ))
        })?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename. On
/// failure the temporary file is removed and the error names `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = std::fs::File::create(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow::anyhow!(
            "cannot write export {}: {e}; free space or choose another path",
            path.display()
        ));
    }
    Ok(())
}

/// Writes one export of the session.
pub fn write(export: &Export, session: &Session) -> anyhow::Result<()> {
    let bytes = match export.format {
        Format::Json => to_json(session)?.into_bytes(),
        Format::Csv => to_csv(session)?,
        Format::Markdown => to_markdown(session).into_bytes(),
    };
    write_atomic(&export.path, &bytes)
}

/// The session as pretty-printed JSON.
pub fn to_json(session: &Session) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(session)?;
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
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = CSV_FIELDS.iter().map(|s| s.to_string()).collect();
    header.extend(params.iter().map(|p| format!("parameter_{p}")));
    w.write_record(&header)?;
    for b in &session.benchmarks {
        for r in &b.runs {
            w.write_record(csv_row(b, r, &params, &cores))?;
        }
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('`', "'")
}

/// The summary table in Markdown: one row per benchmark, units chosen per column.
pub fn to_markdown(session: &Session) -> String {
    let mut out = String::new();
    out.push_str("| Command | Wall time (median) | 95% CI | Mean ± σ | Min … Max | CPU time (median) | Peak memory (median) | Runs |\n");
    out.push_str("|:---|---:|---:|---:|---:|---:|---:|---:|\n");
    for b in &session.benchmarks {
        let Some(w) = &b.summary.wall_time else {
            out.push_str(&format!(
                "| `{}` | – | – | – | – | – | – | 0 |\n",
                md_escape(&b.name)
            ));
            continue;
        };
        let res = Some((w.median_ci_high - w.median_ci_low) / 2.0)
            .filter(|r| *r > 0.0 && w.median_ci_exact);
        let (scale, unit) = units::time_scale(w.median);
        let f = |v: f64| units::format_scaled(v, scale, unit, res);
        let cpu = b
            .summary
            .cpu_time
            .as_ref()
            .map_or("–".into(), |c| units::format_time(c.median, None));
        let mem = b
            .summary
            .peak_memory
            .as_ref()
            .map_or("–".into(), |m| units::format_bytes(m.median, None));
        out.push_str(&format!(
            "| `{}` | {} | {} … {} | {} ± {} | {} … {} | {} | {} | {} |\n",
            md_escape(&b.name),
            f(w.median),
            f(w.median_ci_low),
            f(w.median_ci_high),
            f(w.mean),
            units::format_scaled(w.stddev, scale, unit, None),
            f(w.min),
            f(w.max),
            cpu,
            mem,
            w.n
        ));
    }
    if !session.comparisons.is_empty() {
        out.push_str(
            "\n| Candidate | Reference | Ratio (median) | 95% CI | p (Holm) | Verdict |\n",
        );
        out.push_str("|:---|:---|---:|---:|---:|:---|\n");
        for c in &session.comparisons {
            out.push_str(&format!(
                "| `{}` | `{}` | {:.4} | {:.4} … {:.4} | {} | {} |\n",
                md_escape(&c.candidate_name),
                md_escape(&c.reference_name),
                c.ratio,
                c.ratio_ci_low,
                c.ratio_ci_high,
                units::format_p(c.p_adjusted),
                md_escape(&c.words)
            ));
        }
    }
    out
}
