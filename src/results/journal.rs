//! The journal: completed runs survive a crash. Beside `--export-json FILE` tare keeps
//! `FILE.journal`, JSON lines written and flushed as runs finish: first the session header,
//! then one line per run. At the end the exports are written and the journal removed; after a
//! crash `tare recover FILE.journal` rebuilds the results from it.
//!
//! Nothing destroys a journal: a session holds an exclusive flock on its journal for as long
//! as it runs, so a second session on the same path refuses at once (the lock dies with its
//! holder, even on `kill -9`), and a session never truncates an existing non-empty journal —
//! the runs of a session that crashed — unless told to (`--overwrite-journal`); `tare recover`
//! removes a journal only once its runs are safely in a JSON export. Recovery keeps every
//! valid run: lines that are not UTF-8, not a journal line (torn by a crash, damaged), or a
//! run seen already are skipped and counted.

use super::model::{Run, Session};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
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
    /// Holds the session's exclusive lock until dropped.
    file: File,
}

/// The journal path for an export path.
pub fn path_for(export: &Path) -> PathBuf {
    let mut p = export.as_os_str().to_owned();
    p.push(".journal");
    PathBuf::from(p)
}

/// Opens `path` (creating it and for writing when `create`, else only for reading) and takes its exclusive lock, proving the lock is on the file
/// that is at `path` now (not one a finishing session just removed). Errors are one line.
fn open_locked(path: &Path, create: bool) -> anyhow::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(create)
        .create(create)
        .truncate(false)
        .open(path)
        .map_err(|e| {
            crate::error::usage(format!(
                "cannot open journal {}: {e}; choose a writable export path",
                path.display()
            ))
        })?;
    let in_use = || {
        crate::error::usage(format!(
            "journal {} is in use by another running tare session; wait for it to finish, or choose another export path",
            path.display()
        ))
    };
    let locked = crate::lock::try_lock_exclusive(&file)
        .map_err(|e| crate::error::usage(format!("cannot lock journal {}: {e}", path.display())))?;
    if !locked {
        return Err(in_use());
    }
    let same = match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    };
    if !same {
        return Err(in_use());
    }
    Ok(file)
}

impl Journal {
    /// Starts a journal with the session header (benchmarks without runs). Refuses a journal
    /// another session holds, and one that already holds runs unless `overwrite`.
    pub fn create(path: PathBuf, session: &Session, overwrite: bool) -> anyhow::Result<Journal> {
        let mut file = open_locked(&path, true)?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len > 0 && !overwrite {
            return Err(crate::error::usage(format!(
                "journal {} holds the runs of a session that did not finish; keep them with `tare recover {}`, \
                 discard them with --overwrite-journal, or choose another export path",
                path.display(),
                path.display()
            )));
        }
        file.set_len(0).and_then(|()| file.rewind()).map_err(|e| {
            crate::error::usage(format!("cannot write journal {}: {e}", path.display()))
        })?;
        let line = serde_json::to_string(&Line::Session(Box::new(session.clone())))?;
        writeln!(file, "{line}").map_err(|e| {
            crate::error::usage(format!(
                "cannot write journal {}: {e}; choose a writable export path",
                path.display()
            ))
        })?;
        Ok(Journal { path, file })
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one finished run and flushes it to the kernel.
    pub fn append(&mut self, benchmark: usize, run: &Run) -> anyhow::Result<()> {
        let mut line = serde_json::to_string(&Line::Run {
            benchmark,
            run: run.clone(),
        })?;
        line.push('\n');
        self.file.write_all(line.as_bytes()).map_err(|e| {
            crate::error::UserError::run_failed(format!(
                "cannot append to journal {}: {e}; measuring stopped; free space on its disk or choose another export path",
                self.path.display()
            ))
        })?;
        Ok(())
    }

    /// Removes the journal once the exports are safely written (still holding its lock, so
    /// no other session can have taken it over).
    pub fn finish(self) -> anyhow::Result<()> {
        let r = std::fs::remove_file(&self.path)
            .with_context(|| format!("cannot remove {}", self.path.display()));
        drop(self.file);
        r
    }
}

/// What recovery skipped.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Lines that are not valid UTF-8.
    pub not_utf8: usize,
    /// Lines that are not a journal line (torn by a crash, damaged, foreign).
    pub invalid: usize,
    /// Runs seen already (same benchmark and index), and repeated session headers.
    pub duplicate: usize,
    /// Runs of a benchmark the session header does not have.
    pub unknown_benchmark: usize,
}

impl Skipped {
    pub fn total(&self) -> usize {
        self.not_utf8 + self.invalid + self.duplicate + self.unknown_benchmark
    }

    /// One line for a warning, e.g. "skipped 3 lines (1 not UTF-8, 2 duplicate runs)".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (n, what) in [
            (self.not_utf8, "not UTF-8"),
            (self.invalid, "not a journal line"),
            (self.duplicate, "duplicate"),
            (self.unknown_benchmark, "run of an unknown benchmark"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        format!("skipped {} lines ({})", self.total(), parts.join(", "))
    }
}

/// A session rebuilt from a journal, and what was skipped.
pub struct Recovered {
    pub session: Session,
    pub skipped: Skipped,
}

/// Rebuilds a session from a journal's bytes. Every valid run is kept; anything else is
/// skipped and counted. The session is marked incomplete; summaries are left for the caller.
pub fn recover_bytes(bytes: &[u8], name: &str) -> anyhow::Result<Recovered> {
    let mut session: Option<Session> = None;
    let mut skipped = Skipped::default();
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    let mut orphans = 0usize;
    for raw in bytes.split(|&b| b == b'\n') {
        if raw.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let Ok(line) = std::str::from_utf8(raw) else {
            skipped.not_utf8 += 1;
            continue;
        };
        let Ok(parsed) = serde_json::from_str::<Line>(line) else {
            skipped.invalid += 1;
            continue;
        };
        match parsed {
            Line::Session(s) => {
                if session.is_some() {
                    skipped.duplicate += 1;
                } else {
                    session = Some(*s);
                }
            }
            Line::Run { benchmark, run } => {
                let Some(s) = session.as_mut() else {
                    orphans += 1;
                    continue;
                };
                let Some(b) = s.benchmarks.get_mut(benchmark) else {
                    skipped.unknown_benchmark += 1;
                    continue;
                };
                if !seen.insert((benchmark, run.index)) {
                    skipped.duplicate += 1;
                    continue;
                }
                b.runs.push(run);
            }
        }
    }
    let mut s = session.ok_or_else(|| {
        crate::error::usage(format!(
            "{name} is not a tare journal (no session header line); give the FILE.journal a session left beside its export"
        ))
    })?;
    skipped.invalid += orphans;
    for b in &mut s.benchmarks {
        b.runs.sort_by_key(|r| r.index);
    }
    s.complete = false;
    Ok(Recovered {
        session: s,
        skipped,
    })
}

/// An opened journal being recovered: holds its lock so no session starts on it meanwhile.
pub struct Recovering {
    path: PathBuf,
    _file: File,
    pub recovered: Recovered,
}

impl Recovering {
    /// Removes the journal (its runs are safely exported).
    pub fn remove(self) -> anyhow::Result<()> {
        std::fs::remove_file(&self.path)
            .with_context(|| format!("cannot remove {}", self.path.display()))
    }
}

/// Opens, locks and reads a journal (refused while a running session holds it).
pub fn open_for_recovery(path: &Path) -> anyhow::Result<Recovering> {
    if !path.is_file() {
        return Err(crate::error::usage(format!(
            "cannot read journal {}: no such file; give the FILE.journal a session left beside its export",
            path.display()
        )));
    }
    let mut file = open_locked(path, false).map_err(|e| {
        if e.to_string().contains("in use") {
            crate::error::usage(format!(
                "journal {} belongs to a tare session that is still running; recover it after that session ends",
                path.display()
            ))
        } else {
            e
        }
    })?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| crate::error::usage(format!("cannot read journal {}: {e}", path.display())))?;
    let recovered = recover_bytes(&bytes, &path.display().to_string())?;
    Ok(Recovering {
        path: path.to_path_buf(),
        _file: file,
        recovered,
    })
}

/// Rebuilds a session from a journal file (see [`recover_bytes`]).
pub fn recover(path: &Path) -> anyhow::Result<Session> {
    Ok(open_for_recovery(path)?.recovered.session)
}
