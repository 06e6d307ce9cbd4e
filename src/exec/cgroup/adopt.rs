//! Clearing a cgroup v2 for controllers: cgroup v2 enables a domain controller (memory) for
//! a cgroup's children only while the cgroup itself holds no process ("no internal
//! processes"). A container's namespace root holds its first process, a user's delegated scope
//! their shell. As nested container set-ups do (docker-in-docker's entrypoint), tare moves
//! those processes into a leaf `init` of that same cgroup, where they keep running; nothing
//! outside the cgroup it was given is touched.
//!
//! For: the move ([`move_to_leaf`]) and, where tare may not make it, the one line that names the
//! processes in the way and the commands that move them ([`blocked_by`]).

use super::{read_pids, write_file};
use std::io;
use std::path::{Path, PathBuf};

/// The leaf the processes go to (the name docker-in-docker uses).
pub const LEAF: &str = "init";

/// What was moved: from where, to where, and which processes (pid, command name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    pub from: PathBuf,
    pub to: PathBuf,
    pub processes: Vec<(i32, String)>,
}

impl Moved {
    /// One line for the measurement method.
    pub fn describe(&self) -> String {
        format!(
            "moved {} process{} ({}) from {} into its leaf {}, where they keep running after tare exits, so that \
             controllers could be enabled there (cgroup v2 allows none in a cgroup that holds processes)",
            self.processes.len(),
            if self.processes.len() == 1 { "" } else { "es" },
            list(&self.processes),
            self.from.display(),
            self.to.display()
        )
    }
}

/// `12 (bash), 34 (sleep)`, at most 5 named.
fn list(p: &[(i32, String)]) -> String {
    let mut s: Vec<String> = p
        .iter()
        .take(5)
        .map(|(i, c)| format!("{i} ({c})"))
        .collect();
    if p.len() > 5 {
        s.push(format!("{} more", p.len() - 5));
    }
    s.join(", ")
}

/// The command name of a process, or `?` when it is gone.
pub fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Moves every process of `dir` (tare included, when it is there) into `dir/init`, made when
/// missing, until `dir` holds none (a process forking during the move is caught on the next
/// pass). A process that exits meanwhile is skipped. The error is one line naming the process,
/// the cgroups and the kernel's reason.
pub fn move_to_leaf(dir: &Path) -> io::Result<Moved> {
    let to = dir.join(LEAF);
    if read_pids(&dir.join("cgroup.procs")).is_ok_and(|p| p.is_empty()) {
        // Nothing in the way: no leaf made.
        return Ok(Moved {
            from: dir.to_path_buf(),
            to,
            processes: Vec::new(),
        });
    }
    match std::fs::create_dir(&to) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("cannot create the leaf cgroup {}: {e}", to.display()),
            ))
        }
    }
    let procs = to.join("cgroup.procs");
    let mut moved = Vec::new();
    for _ in 0..20 {
        let pids = read_pids(&dir.join("cgroup.procs"))?;
        if pids.is_empty() {
            return Ok(Moved {
                from: dir.to_path_buf(),
                to,
                processes: moved,
            });
        }
        for pid in pids {
            let name = comm(pid);
            match write_file(&procs, &pid.to_string()) {
                Ok(()) => moved.push((pid, name)),
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!(
                            "cannot move process {pid} ({name}) from {} into {}: {}",
                            dir.display(),
                            to.display(),
                            io::Error::from_raw_os_error(e.raw_os_error().unwrap_or(0))
                        ),
                    ))
                }
            }
        }
    }
    Err(io::Error::other(format!(
        "{} keeps getting new processes while tare moves them into {}",
        dir.display(),
        to.display()
    )))
}

/// Why `dir`'s children cannot get the `wanted` controllers, when it is the processes in `dir`:
/// names them and the commands that move them to a leaf and enable the controllers. `None`
/// when `dir` holds no process.
pub fn blocked_by(dir: &Path, wanted: &[&str]) -> Option<String> {
    let pids = read_pids(&dir.join("cgroup.procs")).ok()?;
    if pids.is_empty() {
        return None;
    }
    let named: Vec<(i32, String)> = pids.iter().map(|&p| (p, comm(p))).collect();
    let d = dir.display();
    let plus: Vec<String> = wanted.iter().map(|c| format!("+{c}")).collect();
    Some(format!(
        "{d} holds processes {} and so cannot pass controllers down; move them to a leaf: \
         `mkdir {d}/{LEAF}; for p in $(cat {d}/cgroup.procs); do echo $p > {d}/{LEAF}/cgroup.procs; done; \
         echo '{}' > {d}/cgroup.subtree_control`",
        list(&named),
        plus.join(" ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blockers_are_named_with_the_commands_that_clear_them() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("cgroup.procs"), "").unwrap();
        assert_eq!(blocked_by(d.path(), &["memory"]), None);
        let me = std::process::id();
        std::fs::write(d.path().join("cgroup.procs"), format!("{me}\n")).unwrap();
        let m = blocked_by(d.path(), &["memory", "pids"]).unwrap();
        assert!(m.contains(&format!("{me} (")), "{m}");
        assert!(m.contains("echo '+memory +pids' >"), "{m}");
        assert!(
            m.contains(&format!("{}/init/cgroup.procs", d.path().display())),
            "{m}"
        );
    }

    #[test]
    fn the_move_is_described_with_what_moved() {
        let m = Moved {
            from: "/sys/fs/cgroup".into(),
            to: "/sys/fs/cgroup/init".into(),
            processes: vec![(1, "sleep".into()), (7, "bash".into())],
        };
        let s = m.describe();
        assert!(s.starts_with("moved 2 processes (1 (sleep), 7 (bash)) from /sys/fs/cgroup into its leaf /sys/fs/cgroup/init"), "{s}");
    }

    #[test]
    fn a_leaf_that_cannot_be_made_is_one_line() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("gone");
        let e = move_to_leaf(&missing).unwrap_err().to_string();
        assert!(
            e.contains("cannot create the leaf cgroup") && e.contains("gone/init"),
            "{e}"
        );
    }
}
