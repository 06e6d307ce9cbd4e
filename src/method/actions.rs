//! Untimed actions around runs: `--setup`/`--cleanup` once per benchmark, `--prepare`/
//! `--conclude` around every run. They run through the shell, in the runs' environment and
//! working directory, with their output discarded; a failing action stops the session with
//! its exit code and the last line it printed on stderr.

use crate::error::UserError;
use crate::plan::Plan;
use std::process::{Command, Stdio};

/// Runs `script` with the plan's shell; `what` names the option for the error message.
pub fn run_action(plan: &Plan, what: &str, script: &str) -> anyhow::Result<()> {
    let mut cmd = Command::new(&plan.shell);
    cmd.arg("-c")
        .arg(script)
        .env_clear()
        .envs(plan.env.iter().map(|(k, v)| (k, v)));
    if let Some(dir) = &plan.cwd {
        cmd.current_dir(dir);
    }
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| {
            UserError::usage(format!(
                "cannot run {what} command '{script}' with {}: {e}",
                plan.shell
            ))
        })?;
    if !out.status.success() {
        let last = String::from_utf8_lossy(&out.stderr)
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string();
        let status = out
            .status
            .code()
            .map_or_else(|| "a signal".to_string(), |c| format!("exit code {c}"));
        let detail = if last.is_empty() {
            String::new()
        } else {
            format!(" ({last})")
        };
        return Err(UserError::run_failed(format!(
            "{what} command '{script}' failed with {status}{detail}; fix it or remove {what}"
        ))
        .into());
    }
    Ok(())
}
