//! Untimed actions around runs: `--setup`/`--cleanup` once per benchmark, `--prepare`/
//! `--conclude` around every run, each a [`Script`], an action of `stages` (the one action
//! system of `tare run` and `tare kernels`) at the stage its option names. They run through the shell, in the runs' environment and
//! working directory, with their output discarded; a failing action stops the session with
//! its exit code and the last line it printed on stderr.
//!
//! Each action runs like a run: in a group of its own through the session's executor, under
//! the plan's action wall limit, and whatever it leaves running is killed when it ends
//! (`--keep-action-daemons` runs it as a plain child instead, so its daemons live on).

use crate::error::UserError;
use crate::exec::{Executor, Limits, RunSpec, Sink};
use crate::method::stages::{Action, Stage, StageContext};
use crate::plan::Plan;
use crate::results::Termination;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;

/// One of `tare run`'s action options with its command, as a `stages::Action`: made where it
/// runs (on the stack, no allocation), run through the session's executor by [`run_action`].
pub struct Script<'a> {
    pub plan: &'a Plan,
    pub exec: &'a Executor,
    pub cancel: &'a AtomicBool,
    /// The stage: `--setup`, `--prepare`, `--conclude` or `--cleanup` by [`option`].
    pub stage: Stage,
    pub script: &'a str,
}

/// The option of `tare run` that runs a command at `stage`, for messages.
pub fn option(stage: Stage) -> &'static str {
    match stage {
        Stage::BeforeBenchmark => "--setup",
        Stage::AfterBenchmark => "--cleanup",
        Stage::BeforeInvocation | Stage::BeforeRepetition => "--prepare",
        Stage::AfterInvocation | Stage::AfterRepetition => "--conclude",
    }
}

impl Action for Script<'_> {
    fn describe(&self) -> String {
        format!("{} command '{}'", option(self.stage), self.script)
    }
    fn run(&mut self, _: &StageContext) -> anyhow::Result<()> {
        run_action(
            self.plan,
            self.exec,
            self.cancel,
            option(self.stage),
            self.script,
        )
    }
}

/// Runs `script` with the plan's shell; `what` names the option for the error message.
pub fn run_action(
    plan: &Plan,
    exec: &Executor,
    cancel: &AtomicBool,
    what: &str,
    script: &str,
) -> anyhow::Result<()> {
    if plan.actions.keep_daemons {
        return run_plain(plan, what, script);
    }
    // stderr is kept bounded while the command writes it: at most STDERR_KEPT bytes.
    let err_dir = tempfile::tempdir()
        .map_err(|e| anyhow::anyhow!("cannot make a temporary folder for {what}'s stderr: {e}"))?;
    let err_path = err_dir.path().join("stderr");
    let capture = crate::exec::capture::Capture::start(&err_path, STDERR_KEPT)
        .map_err(|e| anyhow::anyhow!("cannot capture {what}'s stderr: {e}"))?;
    let spec = RunSpec {
        argv: vec![plan.shell.clone().into(), "-c".into(), script.into()],
        cwd: plan.cwd.clone(),
        env: plan.env.clone(),
        stdin: crate::exec::Input::Null,
        stdout: Sink::Null,
        stderr: Sink::File(capture.sink().to_path_buf()),
        limits: Limits {
            wall: plan.actions.timeout,
            ..Limits::default()
        },
        // The runs' cores: the executor keeps one set of groups per core set.
        cores: plan.cores.clone(),
        priority: Default::default(),
        isolation: None,
        aslr_off: false,
        meters: Default::default(),
        inherit_fds: Vec::new(),
    };
    let m = exec.run(&spec, cancel).map_err(|e| {
        UserError::usage(format!(
            "cannot run {what} command '{script}' with {}: {e}",
            plan.shell
        ))
    })?;
    capture.finish()?;
    let stderr = std::fs::read(&err_path).unwrap_or_default();
    let status = match (m.termination, m.exit_code, m.signal) {
        (Termination::Exit, Some(0), _) => return Ok(()),
        (Termination::Wall, _, _) => format!(
            "did not finish within --action-timeout {}",
            humantime::format_duration(plan.actions.timeout.unwrap_or_default())
        ),
        (_, Some(c), _) => format!("failed with exit code {c}"),
        _ => "was killed by a signal".to_string(),
    };
    Err(failure(what, script, &status, &stderr))
}

/// How much of an action's stderr is kept and read (its last non-empty line is shown).
const STDERR_KEPT: u64 = 64 << 10;

/// The last `n` bytes of the file at `path` (nothing when it cannot be read).
fn read_last(path: &std::path::Path, n: u64) -> Vec<u8> {
    use std::io::{Read, Seek};
    let mut buf = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = f.seek(std::io::SeekFrom::Start(len.saturating_sub(n)));
        let _ = f.take(n).read_to_end(&mut buf);
    }
    buf
}

/// At most this many characters of a failed action's last line are shown.
const LINE_SHOWN: usize = 200;

fn failure(what: &str, script: &str, status: &str, stderr: &[u8]) -> anyhow::Error {
    let last = String::from_utf8_lossy(stderr)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    // Shown on one terminal line: no control characters (a NUL-filled line is not text).
    let last: String = last.chars().filter(|c| !c.is_control()).collect();
    let chars = last.chars().count();
    let last = if chars > LINE_SHOWN {
        let end: String = last.chars().skip(chars - LINE_SHOWN).collect();
        format!("…{end}")
    } else {
        last
    };
    let detail = if last.is_empty() {
        String::new()
    } else {
        format!(" ({last})")
    };
    UserError::run_failed(format!(
        "{what} command '{script}' {status}{detail}; fix it or remove {what}"
    ))
    .into()
}

/// `--keep-action-daemons`: a plain child of tare, whose background processes live on.
fn run_plain(plan: &Plan, what: &str, script: &str) -> anyhow::Result<()> {
    let mut cmd = Command::new(&plan.shell);
    cmd.arg("-c")
        .arg(script)
        .env_clear()
        .envs(plan.env.iter().map(|(k, v)| (k, v)));
    if let Some(dir) = &plan.cwd {
        cmd.current_dir(dir);
    }
    // stderr to a file, not a pipe: a daemon that inherits a pipe would keep `output` waiting.
    let err_file = tempfile::NamedTempFile::new()
        .map_err(|e| anyhow::anyhow!("cannot make a temporary file for {what}'s stderr: {e}"))?;
    let status = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(err_file.reopen()?))
        .status()
        .map_err(|e| {
            UserError::usage(format!(
                "cannot run {what} command '{script}' with {}: {e}",
                plan.shell
            ))
        })?;
    if status.success() {
        return Ok(());
    }
    let stderr = read_last(err_file.path(), STDERR_KEPT);
    let st = status.code().map_or_else(
        || "was killed by a signal".to_string(),
        |c| format!("failed with exit code {c}"),
    );
    Err(failure(what, script, &st, &stderr))
}
