//! The journal: completed runs survive a crash. Beside `--export-json FILE` tare keeps
//! `FILE.journal`, JSON lines written and flushed as runs finish: first the session header,
//! then one line per run. At the end the exports are written and the journal removed; after a
//! crash `tare recover FILE.journal` rebuilds the results from it.

use super::model::{Run, Session};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Line {
    Session(Box<Session>),
    Run { benchmark: usize, run: Run },
}

/// An open journal.
pub struct Journal {
    path: PathBuf,
    file: File,
}

/// The journal path for an export path.
pub fn path_for(export: &Path) -> PathBuf {
    let mut p = export.as_os_str().to_owned();
    p.push(".journal");
    PathBuf::from(p)
}

impl Journal {
    /// Starts a journal with the session header (benchmarks without runs).
    pub fn create(path: PathBuf, session: &Session) -> anyhow::Result<Journal> {
        let mut file = File::create(&path).map_err(|e| {
            crate::error::usage(format!(
                "cannot write journal {}: {e}; choose a writable export path",
                path.display()
            ))
        })?;
        let line = serde_json::to_string(&Line::Session(Box::new(session.clone())))?;
        writeln!(file, "{line}").with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Journal { path, file })
    }

    /// Appends one finished run and flushes it to the kernel.
    pub fn append(&mut self, benchmark: usize, run: &Run) -> anyhow::Result<()> {
        let line = serde_json::to_string(&Line::Run {
            benchmark,
            run: run.clone(),
        })?;
        writeln!(self.file, "{line}")
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok(())
    }

    /// Removes the journal once the exports are safely written.
    pub fn finish(self) -> anyhow::Result<()> {
        drop(self.file);
        std::fs::remove_file(&self.path)
            .with_context(|| format!("cannot remove {}", self.path.display()))
    }
}

/// Rebuilds a session from a journal; a torn last line (crash mid-write) is ignored.
/// The session is marked incomplete; summaries are left for the caller to compute.
pub fn recover(path: &Path) -> anyhow::Result<Session> {
    let f = File::open(path)
        .map_err(|e| crate::error::usage(format!("cannot read journal {}: {e}", path.display())))?;
    let mut session: Option<Session> = None;
    for (n, line) in BufReader::new(f).lines().enumerate() {
        let line = line?;
        let Ok(parsed) = serde_json::from_str::<Line>(&line) else {
            continue;
        };
        match parsed {
            Line::Session(s) => session = Some(*s),
            Line::Run { benchmark, run } => {
                let s = session.as_mut().ok_or_else(|| {
                    crate::error::usage(format!(
                        "{}: line {} comes before the session header",
                        path.display(),
                        n + 1
                    ))
                })?;
                if let Some(b) = s.benchmarks.get_mut(benchmark) {
                    b.runs.push(run);
                }
            }
        }
    }
    let mut s = session.ok_or_else(|| {
        crate::error::usage(format!(
            "{} is not a tare journal (no session header)",
            path.display()
        ))
    })?;
    s.complete = false;
    Ok(s)
}
