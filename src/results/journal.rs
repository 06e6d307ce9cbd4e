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
//! valid run: lines that are not UTF-8, not a journal line (torn by a crash, damaged), a run
//! seen already, or a run with values no measurement gives (a negative or non-finite time) are
//! skipped and counted. A damaged session header does not lose the runs: what can still be
//! parsed of it is kept (benchmarks, machine, method, ...), the rest is marked unknown.
//!
//! A journal is only ever a regular file: it is opened with `O_NOFOLLOW` (a symbolic link
//! planted at `FILE.journal` by another user is refused, not followed), a device or FIFO there
//! is refused, and `--overwrite-journal` empties only a file that holds journal lines.

use super::model::{Run, Session};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
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
    if let Ok(m) = std::fs::symlink_metadata(path) {
        regular(path, &m.file_type())?;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(create)
        .create(create)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                return link_refused(path);
            }
            crate::error::usage(format!(
                "cannot open journal {}: {e}; choose a writable export path",
                path.display()
            ))
        })?;
    let meta = file
        .metadata()
        .map_err(|e| crate::error::usage(format!("cannot open journal {}: {e}", path.display())))?;
    regular(path, &meta.file_type())?;
    if create {
        foreign(path, &meta)?;
    }
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

/// A journal tare writes into must be its own: another user's file (made in a shared
/// directory before the session, to forge runs or hold the lock) or a file with other hard
/// links (a victim's name under the journal's) is refused before a byte is written.
fn foreign(path: &Path, meta: &std::fs::Metadata) -> anyhow::Result<()> {
    let euid = crate::sys::euid();
    if meta.uid() != euid {
        return Err(crate::error::usage(format!(
            "journal {} belongs to uid {}, not to you (uid {euid}); tare writes only its own journal: remove it or choose another export path",
            path.display(),
            meta.uid()
        )));
    }
    if meta.nlink() > 1 {
        return Err(crate::error::usage(format!(
            "journal {} has {} hard links (another name for the same file); tare writes only a journal of its own: remove it or choose another export path",
            path.display(),
            meta.nlink()
        )));
    }
    Ok(())
}

fn link_refused(path: &Path) -> anyhow::Error {
    crate::error::usage(format!(
        "journal {} is a symbolic link, which tare does not follow (one planted by another user could point it at any file); remove the link or choose another export path",
        path.display()
    ))
}

/// Refuses anything but a regular file at a journal's path.
fn regular(path: &Path, ft: &std::fs::FileType) -> anyhow::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_file() {
        return Ok(());
    }
    if ft.is_symlink() {
        return Err(link_refused(path));
    }
    let what = if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Err(crate::error::usage(format!(
        "journal {} is {what}, not a journal; tare keeps journals only in regular files: choose another export path",
        path.display()
    )))
}

/// Whether `head` (the first bytes of a file) holds a journal line.
fn looks_like_journal(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    text.contains("{\"type\":\"session\"") || text.contains("{\"type\":\"run\"")
}

impl Journal {
    /// Starts a journal with the session header (benchmarks without runs). Refuses a journal
    /// another session holds, and one that already holds runs unless `overwrite`.
    pub fn create(path: PathBuf, session: &Session, overwrite: bool) -> anyhow::Result<Journal> {
        let mut file = open_locked(&path, true)?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len > 0 {
            let mut head = Vec::new();
            let _ = (&mut file).take(64 * 1024).read_to_end(&mut head);
            if !looks_like_journal(&head) {
                return Err(crate::error::usage(format!(
                    "{} exists and is not a tare journal; tare does not overwrite it: move it away or choose another export path",
                    path.display()
                )));
            }
        }
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
    /// Runs with values no measurement gives (a negative or non-finite time, ...).
    pub impossible: usize,
    /// Whether the session header was damaged (its runs were kept; what could not be parsed
    /// of it is marked unknown).
    pub header_damaged: bool,
}

impl Skipped {
    pub fn total(&self) -> usize {
        self.not_utf8 + self.invalid + self.duplicate + self.unknown_benchmark + self.impossible
    }

    /// One line for a warning, e.g. "skipped 3 lines (1 not UTF-8, 2 duplicate runs)".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (n, what) in [
            (self.not_utf8, "not UTF-8"),
            (self.invalid, "not a journal line"),
            (self.duplicate, "duplicate"),
            (self.unknown_benchmark, "run of an unknown benchmark"),
            (self.impossible, "run with impossible values"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        let mut line = format!("skipped {} lines ({})", self.total(), parts.join(", "));
        if self.header_damaged {
            line.push_str(
                "; the session header was damaged: its runs were kept, what could not be read of it is marked unknown",
            );
        }
        line
    }
}

/// A session rebuilt from a journal, and what was skipped.
pub struct Recovered {
    pub session: Session,
    pub skipped: Skipped,
}

/// Benchmarks beyond this index in a journal whose header was damaged are not re-created (a
/// damaged index must not make millions of empty benchmarks).
const MAX_REDERIVED_BENCHMARKS: usize = 4096;

/// Rebuilds a session from a journal's bytes. Every valid run is kept; anything else is
/// skipped and counted. The session is marked incomplete; summaries are left for the caller.
pub fn recover_bytes(bytes: &[u8], name: &str) -> anyhow::Result<Recovered> {
    let mut session: Option<Session> = None;
    let mut skipped = Skipped::default();
    let mut damaged_header: Option<String> = None;
    let mut runs: Vec<(usize, Run)> = Vec::new();
    let mut first = true;
    for raw in bytes.split(|&b| b == b'\n') {
        if raw.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let was_first = std::mem::replace(&mut first, false);
        let Ok(line) = std::str::from_utf8(raw) else {
            skipped.not_utf8 += 1;
            if was_first {
                damaged_header = Some(String::from_utf8_lossy(raw).into_owned());
            }
            continue;
        };
        let Ok(parsed) = serde_json::from_str::<Line>(line) else {
            skipped.invalid += 1;
            if was_first || (damaged_header.is_none() && line.contains("\"type\":\"session\"")) {
                damaged_header = Some(line.to_string());
            }
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
            Line::Run { benchmark, run } => runs.push((benchmark, run)),
        }
    }
    let mut s = match (session, damaged_header) {
        (Some(s), _) => s,
        (None, Some(header)) if !runs.is_empty() => {
            skipped.header_damaged = true;
            rederive(&header, &runs)
        }
        _ => {
            return Err(crate::error::usage(format!(
                "{name} is not a tare journal (no session header line); give the FILE.journal a session left beside its export"
            )))
        }
    };
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    for (benchmark, run) in runs {
        let Some(b) = s.benchmarks.get_mut(benchmark) else {
            skipped.unknown_benchmark += 1;
            continue;
        };
        if super::read::impossible(&run).is_some() {
            skipped.impossible += 1;
            continue;
        }
        if !seen.insert((benchmark, run.index)) {
            skipped.duplicate += 1;
            continue;
        }
        b.runs.push(run);
    }
    for b in &mut s.benchmarks {
        b.runs.sort_by_key(|r| r.index);
    }
    s.complete = false;
    Ok(Recovered {
        session: s,
        skipped,
    })
}

/// The value after the first `"key":` in a damaged header, when it still parses.
fn salvage<T: serde::de::DeserializeOwned>(header: &str, key: &str) -> Option<T> {
    let at = header.find(&format!("\"{key}\":"))? + key.len() + 3;
    serde_json::Deserializer::from_str(&header[at..])
        .into_iter::<T>()
        .next()?
        .ok()
}

/// A session header re-derived from a damaged one: every field that still parses is kept;
/// benchmarks that do not are re-created from the runs' indices, named as unknown.
fn rederive(header: &str, runs: &[(usize, Run)]) -> Session {
    use super::model::{MeasurementMethod, MethodKind, Summary};
    const LOST: &str = "unknown (the journal's session header was damaged)";
    let benchmarks =
        salvage::<Vec<super::model::Benchmark>>(header, "benchmarks").unwrap_or_else(|| {
            let n = runs
                .iter()
                .map(|(b, _)| *b)
                .filter(|&b| b < MAX_REDERIVED_BENCHMARKS)
                .max()
                .map_or(0, |m| m + 1);
            (0..n)
                .map(|i| super::model::Benchmark {
                    name: format!("benchmark {} (name lost)", i + 1),
                    command: LOST.into(),
                    argv: Vec::new(),
                    parameters: Default::default(),
                    summary: Summary::default(),
                    stop_reason: String::new(),
                    runs: Vec::new(),
                    diagnostics: Vec::new(),
                    extra: Default::default(),
                })
                .collect()
        });
    // The session's own fields come before its benchmarks: look for them there only.
    let header = &header[..header.find("\"benchmarks\":").unwrap_or(header.len())];
    let mut extra = std::collections::BTreeMap::new();
    extra.insert("header_damaged".into(), serde_json::json!(true));
    Session {
        schema_version: salvage(header, "schema_version").unwrap_or(super::model::SCHEMA_VERSION),
        tare_version: salvage(header, "tare_version").unwrap_or_else(|| LOST.into()),
        invocation: salvage(header, "invocation").unwrap_or_default(),
        started_at: salvage(header, "started_at").unwrap_or_default(),
        machine: salvage(header, "machine").unwrap_or_default(),
        method: salvage(header, "method").unwrap_or_else(|| MeasurementMethod {
            kind: MethodKind::Unknown,
            cpu_time: LOST.into(),
            peak_memory: LOST.into(),
            wall_time: LOST.into(),
            warnings: vec![
                "the journal's session header was damaged: how these runs were measured is unknown"
                    .into(),
            ],
        }),
        cores: salvage(header, "cores").unwrap_or_default(),
        limits: salvage(header, "limits").unwrap_or_default(),
        environment: salvage(header, "environment").unwrap_or_default(),
        seed: salvage(header, "seed").unwrap_or_default(),
        benchmarks,
        comparisons: Vec::new(),
        complete: false,
        extra,
    }
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
    let bytes = super::input::read_all(&mut file, path, "journal", super::input::limit()?)?;
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
