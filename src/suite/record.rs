//! The per-run result record and the JSON-lines file that holds them: appended as runs finish
//! (a crash or Ctrl-C loses nothing finished), read back by `--resume` and by `tare table`.
//!
//! Units: seconds and bytes, plain numbers. Not for: aggregation (see `crate::table`).

use super::classify::Category;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;

/// Name of the results file inside a suite's output directory.
pub const RESULTS_FILE: &str = "results.jsonl";

/// One finished run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// `tool/config/set/input#rep`, unique within a suite.
    pub key: String,
    pub suite: String,
    pub tool: String,
    pub config: String,
    pub input_set: String,
    /// Path of the input relative to the suite file's directory.
    pub input: String,
    pub rep: usize,
    pub expected: Option<String>,
    /// The tool's result or why there is none ("timeout", "error (exit 3)", ...).
    pub status: String,
    pub category: Category,
    pub score: f64,
    pub wall_time: f64,
    pub cpu_time: f64,
    pub user_time: f64,
    pub system_time: f64,
    pub peak_memory: Option<u64>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// How the run ended (`exit`, `cpu`, `wall`, `memory`, `signal`, `failed`).
    pub termination: String,
    /// Logical CPUs the run was pinned to.
    pub cores: Vec<usize>,
    /// The run's output log, relative to the output directory.
    pub log: String,
    /// Result files kept, relative to `files/<run>/` in the output directory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Result files not kept and logs cut, with the reason (symbolic link, device, over the
    /// output limit; see `exec::isolate::collect`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withheld: Vec<crate::exec::isolate::collect::Withheld>,
    pub isolated: bool,
    /// How CPU time and memory were measured (`cgroup-v1`, `cgroup-v2`, `rusage`); empty in
    /// files written before tare recorded it.
    #[serde(default)]
    pub method: String,
    /// Processes of the run left its cgroups and were found outside them at its end (tare is
    /// their subreaper, `exec::reaper`): how many were killed. Its CPU time and peak memory
    /// then miss what ran outside. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub orphans_killed: usize,
    /// Unix time (seconds) the run finished.
    pub finished_at: f64,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Appends records, one JSON object per line, flushed after each.
pub struct Writer {
    file: File,
}

impl Writer {
    pub fn append(path: &Path) -> io::Result<Writer> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| {
                io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display()))
            })?;
        Ok(Writer { file })
    }

    pub fn write(&mut self, r: &RunRecord) -> io::Result<()> {
        let mut line = serde_json::to_vec(r).map_err(io::Error::other)?;
        line.push(b'\n');
        // One write call per record: a crash leaves at most one partial last line.
        self.file.write_all(&line)?;
        self.file.flush()
    }
}

/// The longest line taken for a record (records hold outputs' digests, never outputs).
const MAX_RECORD_LINE: usize = 16 << 20;

/// Calls `f` for every complete record of `path`, streaming. A line that does not parse (the
/// partial last line of a crash, invalid UTF-8, or garbage) is skipped and counted; the count is returned.
pub fn for_each(path: &Path, mut f: impl FnMut(RunRecord)) -> io::Result<usize> {
    // Opened without blocking on a FIFO nobody writes (it then reads as empty).
    let file = crate::results::input::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display())))?;
    // A device or FIFO may never end: it is read up to the input limit (TARE_INPUT_LIMIT),
    // past which it is an error; a regular file is read whole, however large.
    let endless = !file.metadata().is_ok_and(|m| m.is_file());
    let cap = if endless {
        crate::results::input::limit().map_err(|e| io::Error::other(format!("{e:#}")))?
    } else {
        u64::MAX
    };
    let mut reader = BufReader::with_capacity(1 << 16, file.take(cap));
    let mut line = Vec::new();
    let mut bad = 0;
    loop {
        line.clear();
        // A line longer than any record (a damaged or hostile file) is one bad line, read
        // past in pieces, never held whole.
        if (&mut reader)
            .take(MAX_RECORD_LINE as u64 + 1)
            .read_until(b'\n', &mut line)?
            == 0
        {
            break;
        }
        if line.len() > MAX_RECORD_LINE && line.last() != Some(&b'\n') {
            bad += 1;
            loop {
                let buf = reader.fill_buf()?;
                if buf.is_empty() {
                    break;
                }
                match buf.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        reader.consume(i + 1);
                        break;
                    }
                    None => {
                        let n = buf.len();
                        reader.consume(n);
                    }
                }
            }
            continue;
        }
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        // Bytes, not a String: a line that is not UTF-8 is one bad line, not a failed read.
        match serde_json::from_slice::<RunRecord>(&line) {
            Ok(r) => f(r),
            Err(_) => bad += 1,
        }
    }
    if endless && reader.get_ref().limit() == 0 {
        return Err(io::Error::other(format!(
            "{} did not end within {} (an endless device or FIFO?); give the results file, or raise the limit with {}=SIZE",
            path.display(),
            crate::units::format_bytes(cap as f64, None),
            crate::results::input::LIMIT_VAR
        )));
    }
    Ok(bad)
}

/// Drops a trailing partial line (no newline at the end) so appending starts on a fresh line.
pub fn repair_tail(path: &Path) -> io::Result<()> {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if data.is_empty() || data.ends_with(b"\n") {
        return Ok(());
    }
    let keep = data.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let f = OpenOptions::new().write(true).open(path)?;
    f.set_len(keep as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample(key: &str) -> RunRecord {
        RunRecord {
            key: key.into(),
            suite: "s".into(),
            tool: "t".into(),
            config: "c".into(),
            input_set: "i".into(),
            input: "a.txt".into(),
            rep: 0,
            expected: Some("ok".into()),
            status: "ok".into(),
            category: Category::Correct,
            score: 2.0,
            wall_time: 0.5,
            cpu_time: 0.4,
            user_time: 0.3,
            system_time: 0.1,
            peak_memory: Some(1000),
            exit_code: Some(0),
            signal: None,
            termination: "exit".into(),
            cores: vec![1],
            log: "logs/x.log".into(),
            files: vec![],
            withheld: vec![],
            isolated: true,
            method: "cgroup-v1".into(),
            orphans_killed: 0,
            finished_at: 1.0,
        }
    }

    #[test]
    fn round_trip_and_partial_tail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(RESULTS_FILE);
        let mut w = Writer::append(&p).unwrap();
        w.write(&sample("a")).unwrap();
        w.write(&sample("b")).unwrap();
        drop(w);
        // A crash mid-write leaves a partial line.
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"key\":\"c\",\"su").unwrap();
        drop(f);
        let mut keys = Vec::new();
        let bad = for_each(&p, |r| keys.push(r.key)).unwrap();
        assert_eq!((keys, bad), (vec!["a".to_string(), "b".to_string()], 1));
        repair_tail(&p).unwrap();
        let mut w = Writer::append(&p).unwrap();
        w.write(&sample("d")).unwrap();
        let mut keys = Vec::new();
        assert_eq!(for_each(&p, |r| keys.push(r.key)).unwrap(), 0);
        assert_eq!(keys, ["a", "b", "d"]);
    }

    #[test]
    fn a_line_longer_than_any_record_is_one_bad_line_read_past() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(RESULTS_FILE);
        let mut w = Writer::append(&p).unwrap();
        w.write(&sample("a")).unwrap();
        drop(w);
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(&vec![b'x'; MAX_RECORD_LINE + 5000]).unwrap();
        f.write_all(b"\n").unwrap();
        drop(f);
        let mut w = Writer::append(&p).unwrap();
        w.write(&sample("b")).unwrap();
        drop(w);
        let mut keys = Vec::new();
        let bad = for_each(&p, |r| keys.push(r.key)).unwrap();
        assert_eq!((keys, bad), (vec!["a".to_string(), "b".to_string()], 1));
    }
}
