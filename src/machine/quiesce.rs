//! Background work stopped for a session (`--quiesce PATTERN|CGROUP`) and resumed on every
//! exit path — the seeds' Rancid stops background applications, temci SIGSTOPs them.
//!
//! A PATTERN (a regular expression) stops every process whose name (`comm`) or command line
//! matches it with SIGSTOP; a CGROUP (an absolute path of a cgroup directory) is frozen with the
//! cgroup freezer (v2 `cgroup.freeze`, v1 `freezer.state`). Never stopped: PID 1, kernel
//! threads, tare itself and its ancestors (the shell that started it), and a cgroup that holds
//! any of them. What was stopped is written to a record in tare's runtime directory (as
//! `machine::pinned` does) and held with a lock: when the session ends, however it ends short of
//! kill -9, the guard resumes them and removes the record; after a kill -9 the lock is free, and
//! the next tare that starts resumes what the record lists ([`resume_leftovers`]). A process is
//! only resumed when its start time still matches: a reused PID is left alone.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What to stop.
#[derive(Debug, Clone)]
pub enum Target {
    Pattern(regex::Regex),
    Cgroup(PathBuf),
}

impl Target {
    /// An absolute path of a directory is a cgroup; anything else a regular expression.
    pub fn parse(spec: &str) -> Result<Target, String> {
        if spec.starts_with('/') && Path::new(spec).is_dir() {
            return Ok(Target::Cgroup(PathBuf::from(spec)));
        }
        if spec.is_empty() {
            return Err("an empty pattern would match every process".into());
        }
        regex::Regex::new(spec).map(Target::Pattern).map_err(|e| {
            format!("'{spec}' is neither a cgroup directory nor a regular expression: {e}")
        })
    }
}

/// One stopped process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stopped {
    pub pid: i32,
    /// Field 22 of /proc/PID/stat: tells a reused PID apart.
    pub start_time: u64,
    pub comm: String,
}

/// One frozen cgroup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frozen {
    pub path: PathBuf,
    /// "v2" (`cgroup.freeze`) or "v1" (`freezer.state`).
    pub freezer: String,
}

/// What a session stopped: the record kept while it lives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub stopped: Vec<Stopped>,
    pub frozen: Vec<Frozen>,
}

/// The guard: resumes everything when dropped.
pub struct Quiesced {
    pub record: Record,
    path: Option<PathBuf>,
    _file: Option<std::fs::File>,
}

fn stat_fields(pid: i32) -> Option<(i32, u64, String)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // comm is in parentheses and may hold spaces: the fields follow the last ')'.
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    let comm = s[open + 1..close].to_string();
    let rest: Vec<&str> = s[close + 1..].split_whitespace().collect();
    // rest[0] is field 3 (state), rest[1] field 4 (ppid), rest[19] field 22 (starttime).
    let ppid = rest.get(1)?.parse().ok()?;
    let start = rest.get(19)?.parse().ok()?;
    Some((ppid, start, comm))
}

/// tare and its ancestors up to PID 1.
fn protected() -> Vec<i32> {
    let mut out = vec![1];
    let mut pid = std::process::id() as i32;
    while pid > 1 && !out.contains(&pid) {
        out.push(pid);
        pid = match stat_fields(pid) {
            Some((ppid, _, _)) => ppid,
            None => break,
        };
    }
    out
}

/// The state letter of a process (`T` when stopped), for tests and checks.
pub fn state(pid: i32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s[s.rfind(')')? + 1..]
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

fn matching(re: &regex::Regex, keep: &[i32]) -> Vec<Stopped> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if keep.contains(&pid) {
            continue;
        }
        let Some((ppid, start_time, comm)) = stat_fields(pid) else {
            continue;
        };
        // Kernel threads (children of kthreadd, PID 2) have no command line.
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if pid == 2 || ppid == 2 || cmdline.is_empty() {
            continue;
        }
        let line = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if re.is_match(&comm) || re.is_match(line.trim_end()) {
            out.push(Stopped {
                pid,
                start_time,
                comm,
            });
        }
    }
    out
}

/// PIDs in `dir` and every cgroup below it.
fn cgroup_pids(dir: &Path) -> Vec<i32> {
    let mut out: Vec<i32> = std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                out.extend(cgroup_pids(&e.path()));
            }
        }
    }
    out
}

fn freezer_of(dir: &Path) -> Option<&'static str> {
    if dir.join("cgroup.freeze").exists() {
        Some("v2")
    } else if dir.join("freezer.state").exists() {
        Some("v1")
    } else {
        None
    }
}

fn set_frozen(f: &Frozen, frozen: bool) -> std::io::Result<()> {
    let (file, value) = match (f.freezer.as_str(), frozen) {
        ("v2", true) => ("cgroup.freeze", "1"),
        ("v2", false) => ("cgroup.freeze", "0"),
        (_, true) => ("freezer.state", "FROZEN"),
        (_, false) => ("freezer.state", "THAWED"),
    };
    std::fs::OpenOptions::new()
        .write(true)
        .open(f.path.join(file))?
        .write_all(value.as_bytes())
}

fn resume(r: &Record) -> Vec<String> {
    let mut notes = Vec::new();
    for s in &r.stopped {
        match stat_fields(s.pid) {
            Some((_, start, _)) if start == s.start_time => {
                if let Err(e) = crate::sys::kill(s.pid, libc::SIGCONT) {
                    notes.push(format!("cannot resume {} ({}): {e}", s.pid, s.comm));
                }
            }
            _ => {} // gone, or the PID is another process now
        }
    }
    for f in &r.frozen {
        if let Err(e) = set_frozen(f, false) {
            notes.push(format!("cannot thaw {}: {e}", f.path.display()));
        }
    }
    notes
}

impl Drop for Quiesced {
    fn drop(&mut self) {
        for n in resume(&self.record) {
            eprintln!("tare: warning: {n}");
        }
        if let Some(p) = &self.path {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn record_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("TARE_QUIESCE_DIR") {
        return Some(PathBuf::from(d));
    }
    crate::lock::runtime_dir().map(|d| d.join("quiesced"))
}

/// Stops what `targets` name; the guard resumes it. Errors (one line each) before anything is
/// stopped: a cgroup without a freezer, one that holds tare, nothing matching at all.
pub fn quiesce(targets: &[Target]) -> anyhow::Result<Quiesced> {
    let keep = protected();
    let mut record = Record::default();
    for t in targets {
        match t {
            Target::Pattern(re) => {
                let found = matching(re, &keep);
                if found.is_empty() {
                    anyhow::bail!(
                        "--quiesce '{re}': no process matches it (by name or command line); check the pattern with pgrep -f"
                    );
                }
                record.stopped.extend(found);
            }
            Target::Cgroup(dir) => {
                let freezer = freezer_of(dir).ok_or_else(|| {
                    anyhow::anyhow!(
                        "--quiesce {}: not a cgroup with a freezer (no cgroup.freeze or freezer.state); give a cgroup v2 directory or one under the v1 freezer hierarchy",
                        dir.display()
                    )
                })?;
                if let Some(p) = cgroup_pids(dir).iter().find(|p| keep.contains(p)) {
                    anyhow::bail!(
                        "--quiesce {}: it holds tare or one of its ancestors (PID {p}); freezing it would stop tare itself",
                        dir.display()
                    );
                }
                record.frozen.push(Frozen {
                    path: dir.clone(),
                    freezer: freezer.into(),
                });
            }
        }
    }
    record.stopped.sort_by_key(|s| s.pid);
    record.stopped.dedup_by_key(|s| s.pid);
    // The record first, so that a kill -9 at any later point leaves what to resume.
    let (path, file) = match record_dir() {
        Some(dir) if std::fs::create_dir_all(&dir).is_ok() => {
            let path = dir.join(format!("{}.json", std::process::id()));
            let mut f = std::fs::File::create(&path)?;
            crate::lock::try_lock_exclusive(&f)?;
            f.write_all(serde_json::to_string(&record)?.as_bytes())?;
            (Some(path), Some(f))
        }
        _ => (None, None),
    };
    let q = Quiesced {
        record,
        path,
        _file: file,
    };
    for s in &q.record.stopped {
        let _ = crate::sys::kill(s.pid, libc::SIGSTOP);
    }
    for f in &q.record.frozen {
        set_frozen(f, true).map_err(|e| {
            anyhow::anyhow!("--quiesce {}: cannot freeze it: {e}", f.path.display())
        })?;
    }
    Ok(q)
}

/// Resumes what sessions that died without resuming (kill -9) had stopped; one line each.
pub fn resume_leftovers() -> Vec<String> {
    let mut notes = Vec::new();
    let Some(dir) = record_dir() else {
        return notes;
    };
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return notes;
    };
    for e in rd.flatten() {
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let Ok(f) = std::fs::File::open(&path) else {
            continue;
        };
        // A held lock: that session lives and resumes its own.
        if !crate::lock::try_lock_exclusive(&f).unwrap_or(false) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if let Ok(r) = serde_json::from_str::<Record>(&text) {
            notes.extend(resume(&r));
            notes.push(format!(
                "resumed {} process(es) and {} cgroup(s) that a tare session killed before it could resume them ({})",
                r.stopped.len(),
                r.frozen.len(),
                path.display()
            ));
        }
        let _ = std::fs::remove_file(&path);
    }
    notes
}
