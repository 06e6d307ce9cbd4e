//! Who owns a cgroup named `tare-…`, and the sweep of groups whose owner is gone.
//!
//! Every group a tare session makes is named `tare-<pid>.<token>-<n>`: the pid for people
//! reading `ls`, a random 64-bit token so that sessions in different PID namespaces (which can
//! share a pid) never collide. For its whole life the session holds an exclusive `flock` on
//! `<runtime dir>/sessions/<pid>.<token>.lock` (the fd is close-on-exec, so no command inherits the lock).
//! A `kill -9`ed session leaves the file, unlocked.
//!
//! At start, [`sweep`] looks at the `tare-*` groups beside the ones it will make: a group is
//! stale when its lock file exists and can be locked — its owner is gone. Its processes (left
//! by a `kill -9`ed session) are killed and the group removed, children first. A group whose
//! lock file cannot be found belongs to a session tare cannot see (another mount namespace,
//! another lock directory): it is left alone. Groups of tare before 0.2 (`tare-<pid>-<n>`)
//! are swept only when that pid does not exist in this PID namespace. Nothing that is not
//! named like tare's groups is ever touched.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// This session's lease: its token and the locked file.
struct Lease {
    /// `<pid>.<token>`, the part of every group name before `-<n>`.
    id: String,
    path: Option<PathBuf>,
    _file: Option<File>,
}

static LEASE: OnceLock<Lease> = OnceLock::new();

/// Where lock files live: `sessions/` in tare's runtime directory ([`crate::lock::runtime_dir`]).
/// `TARE_LOCK_DIR` overrides (tests). `None`: no runtime directory of tare's own (the session
/// keeps no lock file, and judges no group stale).
pub fn lock_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("TARE_LOCK_DIR") {
        return Some(PathBuf::from(d));
    }
    crate::lock::runtime_dir().map(|d| d.join("sessions"))
}

fn random_token() -> u64 {
    // rand's thread RNG is seeded from the OS (getrandom), which is what matters here.
    rand::random::<u64>()
}

use crate::lock::try_lock_exclusive as try_lock;

fn lease() -> &'static Lease {
    LEASE.get_or_init(|| {
        let id = format!("{}.{:016x}", std::process::id(), random_token());
        let Some(dir) = lock_dir() else {
            return Lease {
                id,
                path: None,
                _file: None,
            };
        };
        let path = dir.join(format!("{id}.lock"));
        let file = std::fs::create_dir_all(&dir)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)
            })
            .and_then(|f| try_lock(&f).map(|_| f));
        match file {
            Ok(f) => Lease {
                id,
                path: Some(path),
                _file: Some(f),
            },
            // Without a lock file the groups are still unique; a later session just cannot
            // tell that they are stale.
            Err(_) => Lease {
                id,
                path: None,
                _file: None,
            },
        }
    })
}

/// A fresh, session-unique name for a group: `tare-<pid>.<token>-<n>`.
pub fn group_name() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "tare-{}-{}",
        lease().id,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// This session's id (`<pid>.<token>`), as it appears in its group names.
pub fn session_id() -> &'static str {
    &lease().id
}

/// A group of this session could not be removed: [`release`] keeps the lock file, so the next
/// tare start sees the owner gone (the lock is free once this process exits) and sweeps it.
pub fn keep_for_sweep() {
    KEEP.store(true, std::sync::atomic::Ordering::Relaxed);
}

static KEEP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Removes this session's lock file at a normal end, unless a group was left behind
/// ([`keep_for_sweep`]); a killed session leaves it for the next sweep to find.
pub fn release() {
    if KEEP.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    if let Some(p) = LEASE.get().and_then(|l| l.path.as_ref()) {
        let _ = std::fs::remove_file(p);
    }
}

/// Whether the owner of group `name` is known to be gone. `None`: not a tare group name.
pub fn stale(name: &str, locks: &Path) -> Option<bool> {
    let rest = name.strip_prefix("tare-")?;
    let (owner, n) = rest.rsplit_once('-')?;
    n.parse::<u64>().ok()?;
    if let Some((pid, token)) = owner.split_once('.') {
        pid.parse::<u32>().ok()?;
        if token.len() != 16 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        if owner == session_id() {
            return Some(false);
        }
        let lock = locks.join(format!("{owner}.lock"));
        let Ok(f) = std::fs::OpenOptions::new().write(true).open(&lock) else {
            return Some(false); // an owner this session cannot see: not ours to judge
        };
        return Some(try_lock(&f).unwrap_or(false));
    }
    // Before session tokens (tare-<pid>-<n>) nothing proves the owner gone: its pid may live
    // in another PID namespace, and a live session's reused groups are empty between runs.
    owner.parse::<u32>().ok()?;
    Some(false)
}

/// Kills every process in `dir` and below (depth first) and removes the groups.
fn destroy_tree(dir: &Path) -> io::Result<usize> {
    let mut killed = 0;
    for e in std::fs::read_dir(dir)?.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            killed += destroy_tree(&e.path())?;
        }
    }
    // v2 has cgroup.kill; v1 groups are killed per listed pid, repeatedly, until empty (the
    // freezer hierarchy's sweep freezes first, see `sweep`).
    let kill_file = dir.join("cgroup.kill");
    for _ in 0..100 {
        let pids = super::read_pids(&dir.join("cgroup.procs")).unwrap_or_default();
        if pids.is_empty() {
            break;
        }
        if kill_file.exists() {
            let _ = std::fs::write(&kill_file, "1");
        } else {
            for &p in &pids {
                let _ = crate::exec::sys::kill(p, libc::SIGKILL);
            }
        }
        killed += pids.len();
        std::thread::sleep(Duration::from_millis(10));
    }
    super::remove_dir_retrying(dir)?;
    Ok(killed)
}

/// What a sweep did: groups removed and processes killed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    pub groups: usize,
    pub processes: usize,
}

/// Removes stale tare groups directly below `parent` (one hierarchy) and kills what runs in
/// them. Lock files of swept owners are removed once every hierarchy was swept
/// ([`forget_stale_locks`]). Errors on single groups are skipped: a sweep never stops a
/// session.
pub fn sweep(parent: &Path) -> Swept {
    let mut out = Swept::default();
    let Some(locks) = lock_dir() else {
        return out; // no lock files to see: no owner is known to be gone
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if stale(name, &locks) != Some(true) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = e.path();
        // A v1 freezer group: freeze first so nothing forks while it is killed.
        let freezer = dir.join("freezer.state");
        if freezer.exists() {
            let _ = std::fs::write(&freezer, "FROZEN");
        }
        let pids = super::read_pids(&dir.join("cgroup.procs")).unwrap_or_default();
        for &p in &pids {
            let _ = crate::exec::sys::kill(p, libc::SIGKILL);
        }
        if freezer.exists() {
            let _ = std::fs::write(&freezer, "THAWED");
        }
        if let Ok(k) = destroy_tree(&dir) {
            out.groups += 1;
            out.processes += k.max(pids.len());
        }
    }
    out
}

/// Removes the lock files of owners that are gone (after their groups were swept from every
/// hierarchy).
pub fn forget_stale_locks() {
    let Some(locks) = lock_dir() else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(&locks) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(owner) = name.to_str().and_then(|n| n.strip_suffix(".lock")) else {
            continue;
        };
        if owner == session_id() {
            continue;
        }
        if let Ok(f) = std::fs::OpenOptions::new().write(true).open(e.path()) {
            if try_lock(&f).unwrap_or(false) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_session_and_are_unique() {
        let a = group_name();
        let b = group_name();
        assert_ne!(a, b);
        assert!(a.starts_with(&format!("tare-{}-", session_id())), "{a}");
        assert_eq!(
            stale(&a, &lock_dir().unwrap_or_default()),
            Some(false),
            "own group is never stale"
        );
    }

    #[test]
    fn only_tare_names_are_judged() {
        let locks = Path::new("/nonexistent");
        assert_eq!(stale("user.slice", locks), None);
        assert_eq!(stale("tare-x-1", locks), None);
        assert_eq!(stale("tare-12.zz-1", locks), None);
        // A tokened group whose lock file cannot be seen is left alone.
        assert_eq!(stale("tare-12.0123456789abcdef-0", locks), Some(false));
        // Old-style names: never judged stale (the pid may be another namespace's).
        assert_eq!(stale("tare-4194304999-0", locks), Some(false));
    }

    #[test]
    fn an_unlocked_lock_file_marks_the_owner_gone() {
        let d = tempfile::tempdir().unwrap();
        let owner = "77.00000000000000ff";
        std::fs::write(d.path().join(format!("{owner}.lock")), "").unwrap();
        assert_eq!(stale(&format!("tare-{owner}-3"), d.path()), Some(true));
        // Held by a live session: not stale.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(d.path().join(format!("{owner}.lock")))
            .unwrap();
        assert!(try_lock(&f).unwrap());
        assert_eq!(stale(&format!("tare-{owner}-3"), d.path()), Some(false));
    }
}
