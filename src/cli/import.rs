//! `tare import FILE... [--format F] [-o OUT.json]`: reads other harnesses' results
//! (`crate::results::import`) and writes them as tare results, for `tare compare`, `tare
//! report` and the store. Several files become one session (trials of one benchmark merged).
//! Not for: measuring, or reading tare's own results (those need no import).

use crate::results::fsio;
use crate::results::import::{self, Format};
use crate::results::Session;
use crate::units;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
#[command(after_help = after_help())]
pub struct ImportArgs {
    /// Files written by another harness (Criterion: its target/criterion directory).
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
    /// The format of every FILE; recognised by content when not given.
    #[arg(long, value_parser = Format::parser(), value_name = "F")]
    format: Option<Format>,
    /// Write the imported results (tare results JSON) here.
    #[arg(
        long = "export-json",
        short_alias = 'o',
        alias = "output",
        value_name = "FILE"
    )]
    output: Option<PathBuf>,
}

/// The formats (from the harnesses' table, in the order detection tries them), what becomes
/// of a sample, and examples.
fn after_help() -> String {
    format!(
        "Formats (recognised by content when --format is not given): {}.\n\
         Every sample becomes a run whose wall time is the time of one iteration; \
         extra.loops and extra.elapsed keep the batch. See docs/import.md.\n\
         Examples:\n  tare import hyperfine.json --export-json results.json\n  \
         tare import target/criterion --export-json criterion.json\n  \
         tare import --format go bench.txt --export-json go.json",
        Format::list()
    )
}

pub fn run(a: ImportArgs) -> anyhow::Result<i32> {
    if let Some(out) = &a.output {
        fsio::check(out)?;
    }
    let mut sessions = Vec::new();
    for f in &a.files {
        let s = import::load(f, a.format)?;
        let rec = s.extra.get("import");
        let tool = rec
            .and_then(|r| r.get("tool"))
            .and_then(|t| t.as_str())
            .unwrap_or("?");
        let version = rec
            .and_then(|r| r.get("tool_version"))
            .and_then(|t| t.as_str())
            .map(|v| format!(" {v}"))
            .unwrap_or_default();
        let samples: usize = s
            .benchmarks
            .iter()
            .map(|b| b.runs.iter().filter(|r| r.counted).count())
            .sum();
        let unmapped = rec
            .and_then(|r| r.get("not_mapped"))
            .and_then(|n| n.as_array())
            .map_or(0, |n| n.len());
        eprintln!(
            "tare: imported {} ({tool}{version}): {}, {}; {} not mapped (extra.import.not_mapped)",
            f.display(),
            units::plural(s.benchmarks.len(), "benchmark"),
            units::plural(samples, "sample"),
            units::plural(unmapped, "part")
        );
        sessions.push(s);
    }
    let session = import::merge(sessions).expect("at least one file");
    let width = session
        .benchmarks
        .iter()
        .map(|b| label(b).chars().count())
        .max()
        .unwrap_or(0);
    println!(
        "{:<width$}  {:>7}  {:>12}  {:>12}",
        "benchmark", "samples", "median/iter", "mean/iter"
    );
    for b in &session.benchmarks {
        let (median, mean) = b
            .summary
            .wall_time
            .as_ref()
            .map(|w| {
                (
                    units::format_time(w.median, None),
                    units::format_time(w.mean, None),
                )
            })
            .unwrap_or_else(|| ("-".into(), "-".into()));
        let n = b.runs.iter().filter(|r| r.counted).count();
        println!("{:<width$}  {n:>7}  {median:>12}  {mean:>12}", label(b));
    }
    if let Some(out) = &a.output {
        write_streaming(out, &session)?;
        eprintln!("tare: wrote {}", out.display());
    }
    Ok(crate::error::exit::OK)
}

/// Writes the session as `export::to_json` does (pretty JSON and a newline), atomically, but
/// streamed: an import of millions of samples would otherwise hold the whole text in memory
/// besides the session (1.7 million pytest-benchmark rounds: 830 MB of text).
fn write_streaming(path: &Path, session: &Session) -> anyhow::Result<()> {
    crate::results::fsio::write_with(path, |w| {
        serde_json::to_writer_pretty(&mut *w, session)?;
        w.write_all(b"\n")?;
        Ok(())
    })
}

fn label(b: &crate::results::Benchmark) -> String {
    if b.parameters.is_empty() {
        b.name.clone()
    } else {
        let p: Vec<String> = b
            .parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{} ({})", b.name, p.join(", "))
    }
}
