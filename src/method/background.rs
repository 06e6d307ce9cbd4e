//! Interference on purpose (`--background CMD`): a co-runner started before a run and stopped
//! after it, so the slowdown a writer, a memory hog or a CPU burner causes can be measured.
//! Each command is measured twice, `[background=off]` and `[background=on]`, interleaved in
//! rounds, so the comparison (ratio of medians, paired by round, bootstrap CI) is the slowdown.
//!
//! The co-runner runs through the shell in a process group of its own (not in the run's
//! cgroups: its CPU time and memory are not the run's), starts `lead` before the run's clock,
//! and is killed with its whole process group after the run — a co-runner that leaves its
//! group (setsid, double fork into a new group) escapes that kill.
//!
//! [`CoRunnerMeter`] is the one way both engines use it: a unit's own meter
//! (`method::stages`), started before the interval (a run of `tare run`, an invocation of
//! `tare kernels`) and stopped right after it; its reading says whether the co-runner was
//! still running at the end.

use std::os::unix::process::CommandExt;
use std::time::Duration;

/// A running co-runner.
pub struct CoRunner {
    child: Option<std::process::Child>,
}

/// Starts `cmd` with `shell -c`, in a new process group, output discarded, then waits `lead`
/// so it is under way when the run starts.
pub fn start(shell: &str, cmd: &str, lead: Duration) -> anyhow::Result<CoRunner> {
    let child = std::process::Command::new(shell)
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| anyhow::anyhow!("--background: cannot start '{cmd}' with {shell}: {e}"))?;
    std::thread::sleep(lead);
    Ok(CoRunner { child: Some(child) })
}

/// Kills the group of `child` (its pid is the group's id) and reaps it; whether it was still
/// running.
fn end(mut child: std::process::Child) -> bool {
    let running = matches!(child.try_wait(), Ok(None));
    // Not reaped yet: the group id is still the co-runner's.
    let _ = crate::exec::sys::killpg(child.id() as i32, libc::SIGKILL);
    let _ = child.kill();
    let _ = child.wait();
    running
}

impl CoRunner {
    /// Kills the co-runner's whole process group and reaps it. Returns whether it was still
    /// running (a co-runner that ended before the run did not interfere for all of it).
    pub fn stop(mut self) -> bool {
        self.child.take().is_some_and(end)
    }
}

impl Drop for CoRunner {
    fn drop(&mut self) {
        if let Some(c) = self.child.take() {
            end(c);
        }
    }
}

/// The name of [`CoRunnerMeter`]'s reading: a run's `meters.background`, an invocation's
/// `background.…`.
pub const NAME: &str = "background";

/// `--background CMD` as a meter of the one meter system: the co-runner started (with its
/// lead) at `start`, killed with its group at `stop`. At the `off` level it has no command
/// and waits the lead alone: both levels' intervals start after the same pause.
pub struct CoRunnerMeter {
    pub shell: String,
    pub command: Option<String>,
    pub lead: Duration,
    running: Option<CoRunner>,
}

impl CoRunnerMeter {
    pub fn new(shell: &str, command: &str, lead: Duration) -> CoRunnerMeter {
        CoRunnerMeter {
            shell: shell.to_string(),
            command: Some(command.to_string()),
            lead,
            running: None,
        }
    }

    /// The `off` level's: the same lead, no co-runner, nothing recorded.
    pub fn lead_alone(lead: Duration) -> CoRunnerMeter {
        CoRunnerMeter {
            shell: String::new(),
            command: None,
            lead,
            running: None,
        }
    }
}

impl crate::method::stages::Meter for CoRunnerMeter {
    fn name(&self) -> String {
        NAME.into()
    }
    fn start(&mut self) -> anyhow::Result<()> {
        match &self.command {
            Some(cmd) => self.running = Some(start(&self.shell, cmd, self.lead)?),
            None => std::thread::sleep(self.lead),
        }
        Ok(())
    }
    /// `background.ran_throughout`: 1 when the co-runner was still running at the end, 0
    /// when it had ended before (it did not interfere for all of the interval).
    fn stop(&mut self, _: &crate::method::stages::Span) -> crate::method::stages::Reading {
        let Some(c) = self.running.take() else {
            return Default::default();
        };
        let ran = c.stop();
        crate::method::stages::Reading {
            values: [(format!("{NAME}.ran_throughout"), f64::from(u8::from(ran)))]
                .into_iter()
                .collect(),
            record: Some(serde_json::json!({ "ran_throughout": ran })),
        }
    }
}
