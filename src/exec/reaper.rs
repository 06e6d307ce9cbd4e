//! tare as child subreaper (`PR_SET_CHILD_SUBREAPER`): a process of a run that moved itself out
//! of the run's groups (a root command writing its pid into another group's `cgroup.procs`) is
//! not killed with the groups; once its parent dies with the run it is re-parented to tare
//! instead of init, and [`sweep`] kills and reaps it at the run's end. The run is then marked
//! escaped, with how many such processes were killed.
//!
//! What is swept: children of tare that were not its children when the run started, that are
//! not the main process of a run in flight (parallel suite slots) and that are in none of this
//! session's run groups (a parallel run's own orphans stay there until its group is killed).
//! Only with a cgroup backend: without groups tare cannot tell whose an orphan is.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

static ON: AtomicBool = AtomicBool::new(false);

/// Main processes of runs in flight; held while a run's process is being started and while a
/// sweep looks, so a sweep never takes a run's main process, just forked, for an orphan.
static IN_FLIGHT: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Makes tare the subreaper of what it starts. `false` (and nothing swept) when the kernel
/// refuses. Not for sessions whose actions may leave daemons on purpose
/// (`--keep-action-daemons`).
pub fn become_subreaper() -> bool {
    let pid = rustix::process::getpid();
    let ok = rustix::process::set_child_subreaper(Some(pid)).is_ok();
    ON.store(ok, Ordering::Relaxed);
    ok
}

/// Whether [`become_subreaper`] succeeded.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Held while a run's main process starts; [`Starting::started`] registers it.
pub struct Starting(Option<MutexGuard<'static, Vec<i32>>>);

/// Call before starting a run's main process.
pub fn starting() -> Starting {
    Starting(on().then(|| IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner())))
}

impl Starting {
    /// Registers `pid` as a run in flight until the returned guard is dropped.
    pub fn started(mut self, pid: i32) -> InFlight {
        match self.0.take() {
            Some(mut g) => {
                g.push(pid);
                InFlight(Some(pid))
            }
            None => InFlight(None),
        }
    }
}

/// A run's main process in flight; dropped once it is reaped.
pub struct InFlight(Option<i32>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let mut g = IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner());
            g.retain(|&p| p != pid);
        }
    }
}

/// A `children` file of one of tare's threads, opened once and re-read from offset 0 (procfs
/// regenerates it on every read), so a run's two looks cost two reads and no open.
struct ChildrenFile(Option<std::fs::File>);

impl ChildrenFile {
    fn read(&mut self, path: &str, out: &mut Vec<i32>) {
        use std::os::unix::fs::FileExt;
        if self.0.is_none() {
            self.0 = std::fs::File::open(path).ok();
        }
        let Some(f) = &self.0 else { return };
        let mut buf = [0u8; 4096];
        let mut text = Vec::new();
        loop {
            match f.read_at(&mut buf, text.len() as u64) {
                Ok(0) => break,
                Ok(n) => {
                    text.extend_from_slice(&buf[..n]);
                    if n < buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.0 = None;
                    return;
                }
            }
        }
        out.extend(
            String::from_utf8_lossy(&text)
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
}

/// The main thread's file: orphans are re-parented to the first live thread of a subreaper,
/// its main thread.
static MAIN_CHILDREN: Mutex<ChildrenFile> = Mutex::new(ChildrenFile(None));

thread_local! {
    /// The calling thread's own file: the runs it started (a parallel suite's slot threads).
    static OWN_CHILDREN: std::cell::RefCell<ChildrenFile> =
        const { std::cell::RefCell::new(ChildrenFile(None)) };
}

/// tare's children that a run's sweep may meet: the main thread's (where orphans go) and the
/// calling thread's (what it started); empty when tare is not a subreaper. Other threads'
/// children are theirs to sweep. Reads two kept-open files, opens none after the first call.
pub fn children() -> Vec<i32> {
    if !on() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let main = format!("/proc/self/task/{}/children", std::process::id());
    MAIN_CHILDREN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .read(&main, &mut out);
    if crate::sys::gettid() != std::process::id() as i32 {
        OWN_CHILDREN.with(|f| f.borrow_mut().read("/proc/thread-self/children", &mut out));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether `pid` is in one of this session's run groups in a hierarchy whose group is what a
/// run's kill empties: v1 `cpuacct`, or the v2 unified tree. (Being left in another v1
/// hierarchy's run group — `cpuset` when the run is pinned — does not keep a process alive.)
fn in_a_run_group(pid: i32) -> bool {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
        return true; // gone, or not ours to judge
    };
    let mark = format!("/tare-{}-", super::cgroup::lease::session_id());
    text.lines().any(|l| {
        let mut f = l.splitn(3, ':');
        let (_, controllers, path) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or(""));
        let counted = controllers.is_empty() || controllers.split(',').any(|c| c == "cpuacct");
        counted && path.contains(&mark)
    })
}

/// Whether `pid` is a zombie or exiting (`PF_EXITING` in its flags).
fn dying(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return true;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state, ppid, pgrp, session, tty, tpgid, flags.
    let state = fields.first().copied().unwrap_or("Z");
    let flags: u64 = fields.get(6).and_then(|f| f.parse().ok()).unwrap_or(0);
    state == "Z" || state == "X" || flags & 0x4 != 0
}

/// Kills and reaps the children of tare that were not in `before`, are not a run in flight and
/// are in none of this session's run groups; returns how many. See the module's text.
pub fn sweep(before: &[i32]) -> usize {
    if !on() {
        return 0;
    }
    let mut killed = 0;
    // An orphan's own children come to tare when it dies: a few rounds, until none is left.
    for _ in 0..20 {
        let held = IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner());
        let orphans: Vec<i32> = children()
            .into_iter()
            .filter(|p| !before.contains(p) && !held.contains(p) && !in_a_run_group(*p))
            .collect();
        drop(held);
        if orphans.is_empty() {
            break;
        }
        for &p in &orphans {
            // A process killed with the run's groups is already dying (a zombie reads `/` in
            // every hierarchy): reaped, not counted.
            if !dying(p) {
                let _ = super::sys::kill(p, libc::SIGKILL);
                killed += 1;
            }
        }
        for &p in &orphans {
            let _ = super::sys::wait4(p);
        }
    }
    killed
}
