//! What the escape tests share (`tests/cli_run.rs`, `tests/suite_runs.rs`): cgroups of the
//! test's own that a command moves itself into to leave its run's groups, and the end of any
//! process that survived tare.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Groups `/sys/fs/cgroup/{cpuacct,memory}/NAME-PID` (cgroup v1), made for one test and removed
/// when dropped (after the processes in them are gone: see [`kill_survivors`]).
pub struct EscapeGroups {
    groups: Vec<PathBuf>,
}

impl EscapeGroups {
    /// Makes the groups; `None` when this machine has no v1 cpuacct or memory hierarchy.
    pub fn make(name: &str) -> Option<EscapeGroups> {
        let name = format!("{name}-{}", std::process::id());
        let groups: Vec<PathBuf> = ["cpuacct", "memory"]
            .iter()
            .map(|c| Path::new("/sys/fs/cgroup").join(c).join(&name))
            .collect();
        if !groups
            .iter()
            .all(|g| g.parent().unwrap().join("cgroup.procs").exists())
        {
            return None;
        }
        for g in &groups {
            std::fs::create_dir_all(g).unwrap();
        }
        Some(EscapeGroups { groups })
    }

    /// Shell commands that move the shell running them (`$$`) into every group, each ending
    /// in `; ` (put before an `exec`).
    pub fn moves(&self) -> String {
        self.groups
            .iter()
            .map(|g| format!("echo $$ > {}/cgroup.procs; ", g.display()))
            .collect()
    }
}

impl Drop for EscapeGroups {
    fn drop(&mut self) {
        for g in &self.groups {
            let _ = std::fs::remove_dir(g);
        }
    }
}

/// Kills every process whose command line contains `marker` (see [`super::survivors`]) and
/// waits a moment for them to go; returns them, as "pid: cmdline", for the test to assert
/// that there were none.
pub fn kill_survivors(marker: &str) -> Vec<String> {
    let left = super::survivors(marker);
    for p in &left {
        if let Some(pid) = p.split(':').next().and_then(|s| s.parse::<i32>().ok()) {
            // SAFETY: kill(2) with the pid of a process whose command line holds the test's
            // marker: one the test's command started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    left
}
