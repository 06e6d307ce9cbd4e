//! `--host`: `tare run` and `tare suite run` measured by tare on another machine, driven
//! over a [`Transport`]. The tare over there does the measuring with its own cgroups and
//! cores; this side only forwards the arguments, keeps what streams back and writes the
//! exports.
//!
//! The protocol is the journal's: `tare run --stream-journal` prints the session header, one
//! line per finished run (the same JSON lines as `FILE.journal`) and finally the results;
//! `tare suite run --stream-results` prints each `results.jsonl` record as it is written.
//! This side appends each line to the local journal (or `results.jsonl`) as it arrives, so a
//! connection that breaks loses no finished run: the error (one line) names the journal to
//! give `tare recover`. Before anything runs, `tare --version` over there must match this
//! tare's (one line when it is missing or differs; `--remote-tare PATH` names another), and
//! the other machine's inventory (`tare machine --json`) is recorded with the results.
//!
//! Not for: measuring here (see `crate::exec`) or how bytes reach the host (see
//! [`super::transport`]).

use super::transport::{Ssh, Transport};
use crate::error::{usage, UserError};
use crate::results::export::{self, Export};
use crate::results::input::Line as Bounded;
use crate::results::journal::{self, Journal};
use crate::results::{Run, Session};
use serde::{Deserialize, Serialize};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Where and with what tare to measure.
#[derive(Debug, Clone)]
pub struct HostOptions {
    pub transport: Ssh,
    /// The tare over there (a name in its PATH or a path).
    pub tare: String,
    /// Directory to run in over there.
    pub dir: Option<String>,
    /// The flags that stay on this side (exports, style, the host's own), as the command line
    /// defines them: the caller derives them from the argument definitions by id.
    pub local_flags: Vec<LocalFlag>,
}

/// A flag of this side: every spelling of it (`--long`, its aliases, `-s`) and whether it takes
/// a value.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalFlag {
    pub spellings: Vec<String>,
    pub takes_value: bool,
}

/// What this side writes for `tare run --host`.
#[derive(Debug, Clone, Default)]
pub struct Local {
    pub exports: Vec<Export>,
    pub html: Option<PathBuf>,
    /// Print the summary (style is not none).
    pub summary: bool,
    pub color: bool,
    pub verbose: bool,
    pub overwrite_journal: bool,
}

/// One line of the stream; `session` and `run` are exactly the journal's lines.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Line {
    Session(Box<Session>),
    Run { benchmark: usize, run: Run },
    Results(Box<Session>),
}

fn emit(line: &Line) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string(line)?);
    Ok(())
}

/// `--stream-journal`: the session header.
pub fn stream_session(s: &Session) -> anyhow::Result<()> {
    emit(&Line::Session(Box::new(s.clone())))
}

/// `--stream-journal`: one finished run.
pub fn stream_run(benchmark: usize, run: &Run) -> anyhow::Result<()> {
    emit(&Line::Run {
        benchmark,
        run: run.clone(),
    })
}

/// `--stream-journal`: the final results.
pub fn stream_results(s: &Session) -> anyhow::Result<()> {
    emit(&Line::Results(Box::new(s.clone())))
}

/// This process's arguments after the first `skip` (never panics on non-UTF-8, unlike
/// `std::env::args`: such an argument is a one-line error, since ssh passes text).
pub fn own_args(skip: usize) -> anyhow::Result<Vec<String>> {
    std::env::args_os()
        .skip(skip)
        .map(|a| {
            a.into_string().map_err(|a| {
                usage(format!(
                    "argument {} is not valid UTF-8; --host passes arguments as text",
                    a.to_string_lossy()
                ))
            })
        })
        .collect()
}

/// The arguments without this side's flags (`--flag value`, `--flag=value`, `-s value`,
/// `-svalue`, and flags without a value), up to `--`, after which everything is the command's.
pub fn remote_args(args: &[String], local: &[LocalFlag]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            out.extend(args[i..].iter().cloned());
            break;
        }
        // (flag, whether the value is the next argument)
        let hit = local.iter().find_map(|f| {
            f.spellings.iter().find_map(|sp| {
                if a == sp {
                    Some(f.takes_value)
                } else if f.takes_value
                    && (a.strip_prefix(sp.as_str()).is_some_and(|rest| {
                        rest.starts_with('=') || (!sp.starts_with("--") && !rest.is_empty())
                    }))
                {
                    Some(false)
                } else {
                    None
                }
            })
        });
        match hit {
            Some(true) => i += 2,
            Some(false) => i += 1,
            None => {
                out.push(a.clone());
                i += 1;
            }
        }
    }
    out
}

/// The argv that runs `tare args…` over there (in `dir` when given).
fn tare_argv(o: &HostOptions, args: &[String]) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(d) = &o.dir {
        v.extend(
            [
                "sh",
                "-c",
                "cd \"$1\" || exit 2; shift; exec \"$@\"",
                "sh",
                d,
            ]
            .iter()
            .map(|s| s.to_string()),
        );
    }
    v.push(o.tare.clone());
    v.extend(args.iter().cloned());
    v
}

/// Checks that the host answers and runs the same tare; returns its version line.
pub fn check_remote(o: &HostOptions) -> anyhow::Result<String> {
    let t = &o.transport;
    let out = t
        .command(&tare_argv(o, &["--version".into()]))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                usage("ssh is not installed here: --host needs the ssh client (Debian: openssh-client)")
            } else {
                usage(format!("cannot run ssh: {e}"))
            }
        })?;
    let err = crate::exec::capture::last_lines(&out.stderr, 1);
    let mine = format!("tare {}", env!("CARGO_PKG_VERSION"));
    match out.status.code() {
        Some(0) => {
            let theirs = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if theirs != mine {
                return Err(usage(format!(
                    "{} on {} says '{theirs}', this is {mine}: install the same version there, or give --remote-tare PATH of one",
                    o.tare,
                    t.name()
                )));
            }
            Ok(theirs)
        }
        Some(255) => Err(usage(format!(
            "cannot reach {} over ssh ({err}); check that `ssh -o BatchMode=yes {} true` works without a password prompt (a key or an agent)",
            t.name(),
            t.name()
        ))),
        Some(126 | 127) => Err(usage(format!(
            "{} is not installed on {} ({err}); install tare {} there, or give its path with --remote-tare PATH",
            o.tare,
            t.name(),
            env!("CARGO_PKG_VERSION")
        ))),
        c => Err(usage(format!(
            "`{} --version` on {} failed (exit {}: {err}); give a working tare with --remote-tare PATH",
            o.tare,
            t.name(),
            c.map_or("by a signal".into(), |c| c.to_string())
        ))),
    }
}

/// The other machine's inventory (`tare machine --json`), if it gives one.
fn inventory(o: &HostOptions) -> Option<serde_json::Value> {
    let mut child = o
        .transport
        .command(&tare_argv(o, &["machine".into(), "--json".into()]))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // Bounded: an inventory is a few kilobytes; an endless answer is no inventory.
    let out = crate::results::input::read_all(
        child.stdout.take()?,
        Path::new("machine --json"),
        "the other side's inventory",
        16 << 20,
    );
    let _ = child.kill();
    let _ = child.wait();
    serde_json::from_slice(&out.ok()?).ok()
}

/// A remote tare running, its stdout lines and its error line.
/// Longest line read from the other side's standard output (a session header or a run with
/// its meters), and from its standard error; most error lines kept.
const MAX_STREAM_LINE: usize = 64 << 20;
const MAX_ERROR_LINE: usize = 64 << 10;
const MAX_ERROR_LINES: usize = 100;

struct Stream {
    child: Child,
    lines: mpsc::Receiver<String>,
    errors: Arc<Mutex<Vec<String>>>,
    stderr_thread: Option<std::thread::JoinHandle<()>>,
}

impl Stream {
    /// Starts `tare args…` over there; `forward`: pass its messages (warnings, progress) on.
    fn start(o: &HostOptions, args: &[String], forward: bool) -> anyhow::Result<Stream> {
        let mut child = o
            .transport
            .command(&tare_argv(o, args))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| usage(format!("cannot run ssh: {e}")))?;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        // The other side's messages go on, as they come; its error lines are kept (at most
        // MAX_ERROR_LINES) for the one line this side ends with. Every line read is bounded:
        // an endless line ends the stream with an error instead of filling memory.
        let errors = Arc::new(Mutex::new(Vec::new()));
        let errs = Arc::clone(&errors);
        let too_long = Arc::clone(&errors);
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                match crate::results::input::read_line(&mut r, MAX_STREAM_LINE) {
                    Ok(Bounded::Line(line)) => {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                    Ok(Bounded::TooLong) => {
                        if let Ok(mut e) = too_long.lock() {
                            e.push(format!(
                                "the other side sent a line longer than {MAX_STREAM_LINE} bytes; the stream was stopped"
                            ));
                        }
                        break;
                    }
                    Ok(Bounded::End) | Err(_) => break,
                }
            }
        });
        let host = o.transport.name().to_string();
        let stderr_thread = std::thread::spawn(move || {
            let mut r = BufReader::new(stderr);
            while let Ok(Bounded::Line(line)) =
                crate::results::input::read_line(&mut r, MAX_ERROR_LINE)
            {
                // Its progress (`[3/40] …`) and messages go on; other lines (an error's
                // explanation) are kept for the one line this side ends with.
                if line.starts_with("tare: error: ")
                    || !(line.starts_with("tare: ") || line.starts_with('['))
                {
                    if let Ok(mut e) = errs.lock() {
                        if e.len() < MAX_ERROR_LINES {
                            e.push(line);
                        }
                    }
                } else if forward {
                    match line.strip_prefix("tare: ") {
                        Some(rest) => eprintln!("tare: {host}: {rest}"),
                        None => eprintln!("{line}"),
                    }
                }
            }
        });
        Ok(Stream {
            child,
            lines: rx,
            errors,
            stderr_thread: Some(stderr_thread),
        })
    }

    /// The next line, None at the end; stops the connection when `cancel` is set.
    fn next(&mut self, cancel: &AtomicBool) -> Option<String> {
        loop {
            if cancel.load(Ordering::Relaxed) {
                let _ = self.child.kill();
                return None;
            }
            match self.lines.recv_timeout(Duration::from_millis(200)) {
                Ok(l) => return Some(l),
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Waits for ssh; returns its exit code and the last error line from over there.
    fn finish(mut self) -> (Option<i32>, Option<String>) {
        let status = self.child.wait().ok().and_then(|s| s.code());
        if let Some(t) = self.stderr_thread.take() {
            let _ = t.join();
        }
        let errors = self.errors.lock().map(|e| e.clone()).unwrap_or_default();
        let tare_error = errors
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix("tare: error: "))
            .or_else(|| errors.iter().find_map(|l| l.strip_prefix("error: ")))
            .map(str::to_string);
        let last = tare_error.or_else(|| {
            errors
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.trim().to_string())
        });
        (status, last)
    }
}

/// What is recorded about the other machine under `extra["remote"]`.
fn remote_record(
    o: &HostOptions,
    version: &str,
    inv: &Option<serde_json::Value>,
) -> serde_json::Value {
    serde_json::json!({
        "host": o.transport.name(),
        "transport": "ssh",
        "tare": version,
        "inventory": inv,
    })
}

/// `tare run --host`: runs `args` (the arguments after `run`) over there.
pub fn run_command(o: &HostOptions, args: &[String], local: &Local) -> anyhow::Result<i32> {
    let _claims = export::check_all(&local.exports, local.html.as_deref())?;
    let version = check_remote(o)?;
    let inv = inventory(o);
    let record = remote_record(o, &version, &inv);
    let host = o.transport.name().to_string();
    let journal_path = match export::journal_beside(&local.exports) {
        Some(e) => journal::path_for(&e.path),
        None => std::env::temp_dir().join(format!("tare-remote-{}.journal", std::process::id())),
    };
    // Refused now, not after the other side has started measuring.
    if !local.overwrite_journal && std::fs::metadata(&journal_path).is_ok_and(|m| m.len() > 0) {
        return Err(usage(format!(
            "journal {} holds the runs of a session that did not finish; keep them with `tare recover {}`, discard them with --overwrite-journal, or choose another export path",
            journal_path.display(),
            journal_path.display()
        )));
    }
    let mut remote = vec!["run".to_string()];
    remote.extend(remote_args(args, &o.local_flags));
    remote.extend(["--stream-journal".into(), "--style".into(), "basic".into()]);
    let cancel = crate::output::install_stop_signals()?;
    let mut stream = Stream::start(o, &remote, local.summary)?;
    let mut journal: Option<Journal> = None;
    let mut runs = 0usize;
    let mut results: Option<Session> = None;
    let mut last = Instant::now();
    let mut failure: Option<anyhow::Error> = None;
    while let Some(line) = stream.next(&cancel) {
        let Ok(parsed) = serde_json::from_str::<Line>(&line) else {
            continue; // not the protocol (a login banner, say)
        };
        match parsed {
            Line::Session(mut s) => {
                s.extra.insert("remote".into(), record.clone());
                match Journal::create(journal_path.clone(), &s, local.overwrite_journal) {
                    Ok(j) => journal = Some(j),
                    Err(e) => {
                        failure = Some(e);
                        let _ = stream.child.kill();
                        break;
                    }
                }
            }
            Line::Run { benchmark, run } => {
                if let Some(j) = &mut journal {
                    if let Err(e) = j.append(benchmark, &run) {
                        failure = Some(e);
                        let _ = stream.child.kill();
                        break;
                    }
                }
                runs += 1;
                if local.summary && last.elapsed() >= Duration::from_secs(5) {
                    last = Instant::now();
                    eprintln!("tare: {host}: {runs} runs finished");
                }
            }
            Line::Results(mut s) => {
                s.extra.insert("remote".into(), record.clone());
                results = Some(*s);
            }
        }
    }
    let (status, remote_error) = stream.finish();
    if let Some(e) = failure {
        return Err(e);
    }
    let kept = |j: &Option<Journal>| match j {
        Some(j) => format!(
            "{runs} finished runs are kept in {}: rebuild the results with `tare recover {}`",
            j.path().display(),
            j.path().display()
        ),
        None => "no run had finished".into(),
    };
    let Some(session) = results else {
        if cancel.load(Ordering::Relaxed) {
            return Err(UserError {
                code: crate::output::stop_exit_code(),
                message: format!(
                    "interrupted; the session on {host} was stopped; {}",
                    kept(&journal)
                ),
            }
            .into());
        }
        let why = remote_error.unwrap_or_else(|| "no message".into());
        let msg = if status == Some(255) || journal.is_some() && status != Some(2) {
            format!("the connection to {host} broke before the session finished (ssh exit {}: {why}); {}",
                status.map_or("by a signal".into(), |c| c.to_string()), kept(&journal))
        } else {
            format!("on {host}: {why}")
        };
        return Err(UserError {
            code: match status {
                Some(2) => crate::error::exit::USAGE,
                _ => crate::error::exit::RUN_FAILED,
            },
            message: msg,
        }
        .into());
    };
    if local.summary {
        print!(
            "{}",
            crate::report::terminal::summary_with(&session, local.color, local.verbose)
        );
    }
    let mut failures = Vec::new();
    for e in &local.exports {
        if let Err(err) = export::write(e, &session) {
            failures.push(format!("{err:#}"));
        }
    }
    if let Some(p) = &local.html {
        let label = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "tare".into());
        let page = crate::report::html::render_html(&[(label, session.clone())]);
        if let Err(err) = crate::results::fsio::write(p, page.as_bytes()) {
            failures.push(format!("{err:#}"));
        }
    }
    if let Some(j) = journal {
        if failures.is_empty() {
            j.finish()?;
        } else {
            failures.push(format!("journal {} kept", j.path().display()));
        }
    }
    if !failures.is_empty() {
        return Err(UserError::run_failed(failures.join("; ")).into());
    }
    match status {
        Some(0) => Ok(crate::error::exit::OK),
        code => Err(UserError {
            code: code.unwrap_or(crate::error::exit::RUN_FAILED),
            message: format!(
                "on {host}: {}",
                remote_error.unwrap_or_else(|| "the session ended with an error".into())
            ),
        }
        .into()),
    }
}

/// `tare suite run --host`: the suite file (a path over there) runs over there into
/// `remote_out`; its records stream into `local_out/results.jsonl`.
pub fn suite_command(
    o: &HostOptions,
    args: &[String],
    local_out: &Path,
    remote_out: &str,
    shard: Option<super::shard::Shard>,
    resume: bool,
) -> anyhow::Result<i32> {
    // A shard writes below its own directory over there, and so here.
    let (local_out, remote_files) = match shard {
        Some(s) => (s.dir(local_out), format!("{remote_out}/{}", s.dir_name())),
        None => (local_out.to_path_buf(), remote_out.to_string()),
    };
    let local_out = local_out.as_path();
    use crate::suite::record::{self, RunRecord, Writer, RESULTS_FILE};
    let version = check_remote(o)?;
    let host = o.transport.name().to_string();
    std::fs::create_dir_all(local_out)
        .map_err(|e| usage(format!("cannot create {}: {e}", local_out.display())))?;
    let results = local_out.join(RESULTS_FILE);
    let mut have = std::collections::HashSet::new();
    if results.exists() {
        if !resume {
            return Err(usage(format!(
                "{} already exists; use --resume to continue that suite, or another --output-dir",
                results.display()
            )));
        }
        record::repair_tail(&results)?;
        record::for_each(&results, |r| {
            have.insert(r.key);
        })?;
    }
    let mut writer = Writer::append(&results)?;
    let cat = |file: &str| -> Option<Vec<u8>> {
        let out = o
            .transport
            .command(&tare_argv_cat(o, &format!("{remote_files}/{file}")))
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status.success().then_some(out.stdout)
    };
    if resume {
        // Runs that finished over there while the connection was down.
        if let Some(bytes) = cat(RESULTS_FILE) {
            for line in bytes.split(|b| *b == b'\n') {
                if let Ok(r) = serde_json::from_slice::<RunRecord>(line) {
                    if have.insert(r.key.clone()) {
                        writer.write(&r)?;
                    }
                }
            }
        }
    }
    let mut remote = remote_args(args, &o.local_flags);
    remote.extend([
        "--output-dir".into(),
        remote_out.into(),
        "--stream-results".into(),
    ]);
    let cancel = crate::output::install_stop_signals()?;
    let mut stream = Stream::start(o, &remote, true)?;
    let mut runs = 0;
    while let Some(line) = stream.next(&cancel) {
        let Ok(r) = serde_json::from_str::<RunRecord>(&line) else {
            continue;
        };
        if have.insert(r.key.clone()) {
            writer.write(&r).map_err(|e| {
                UserError::run_failed(format!("cannot append to {}: {e}", results.display()))
            })?;
            runs += 1;
        }
    }
    let (status, remote_error) = stream.finish();
    if let Some(bytes) = cat("suite.json") {
        if let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&bytes) {
            v["remote"] = serde_json::json!({
                "host": host, "transport": "ssh", "tare": version, "output_dir": remote_files,
                "inventory": inventory(o),
            });
            let _ = std::fs::write(local_out.join("suite.json"), serde_json::to_vec_pretty(&v)?);
        }
    }
    match status {
        Some(0) => {
            eprintln!(
                "tare: {runs} runs from {host} in {}; logs and result files stay on {host} in {remote_files}",
                local_out.display()
            );
            Ok(crate::error::exit::OK)
        }
        _ if cancel.load(Ordering::Relaxed) => Err(UserError {
            code: crate::output::stop_exit_code(),
            message: format!(
                "interrupted; {runs} finished runs from {host} kept in {}; continue with --resume",
                local_out.display()
            ),
        }
        .into()),
        Some(255) | None => Err(UserError::run_failed(format!(
            "the connection to {host} broke ({}); {runs} finished runs are kept in {}; continue with --resume",
            remote_error.unwrap_or_else(|| "no message".into()),
            results.display()
        ))
        .into()),
        Some(c) => Err(UserError {
            code: c,
            message: format!(
                "on {host}: {}",
                remote_error.unwrap_or_else(|| "the suite ended with an error".into())
            ),
        }
        .into()),
    }
}

fn tare_argv_cat(o: &HostOptions, file: &str) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(d) = &o.dir {
        v.extend(
            ["sh", "-c", "cd \"$1\" && cat \"$2\"", "sh", d, file]
                .iter()
                .map(|s| s.to_string()),
        );
    } else {
        v.extend(["cat".to_string(), file.to_string()]);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_sides_flags_are_stripped() {
        let a: Vec<String> = [
            "--host",
            "u@h",
            "--runs",
            "5",
            "--export-json=x.json",
            "--ssh-option",
            "-p22",
            "--style",
            "none",
            "--remote-tare=/t",
            "sleep 0.1",
            "--",
            "--host",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let flag = |spellings: &[&str], takes_value| LocalFlag {
            spellings: spellings.iter().map(|s| s.to_string()).collect(),
            takes_value,
        };
        let local = [
            flag(&["--host"], true),
            flag(&["--export-json"], true),
            flag(&["--ssh-option"], true),
            flag(&["--style"], true),
            flag(&["--remote-tare"], true),
            flag(&["--quiet", "-q"], false),
            flag(&["--output", "-o"], true),
        ];
        assert_eq!(
            remote_args(&a, &local),
            ["--runs", "5", "sleep 0.1", "--", "--host"]
        );
        let b: Vec<String> = ["-q", "-ox.json", "-o", "y.json", "--runs", "3", "true"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(remote_args(&b, &local), ["--runs", "3", "true"]);
    }

    #[test]
    fn stream_lines_are_journal_lines() {
        // What --stream-journal prints is what a journal holds: recovery reads it.
        let mut s: Session =
            serde_json::from_str(include_str!("../../tests/data/remote/session.json")).unwrap();
        let run = s.benchmarks[0].runs[0].clone();
        s.benchmarks[0].runs.clear();
        let mut text = serde_json::to_string(&Line::Session(Box::new(s))).unwrap();
        text.push('\n');
        text.push_str(&serde_json::to_string(&Line::Run { benchmark: 0, run }).unwrap());
        text.push('\n');
        let r = journal::recover_bytes(text.as_bytes(), "stream").unwrap();
        assert_eq!(r.session.benchmarks[0].runs.len(), 1);
        assert_eq!(r.skipped.total(), 0);
    }
}
