//! Which cores other tare sessions on this machine have pinned their runs to, so that two
//! sessions do not measure on the same core without a word.
//!
//! Every session that pins runs (`tare run --cores/--cpus`, `tare suite run`) registers its
//! CPUs as a file `PID.cores` in a registry directory and holds an exclusive flock on it while
//! it lives; the kernel drops the lock when the session exits, however it exits, so an entry
//! whose lock is free is stale and ignored (and tidied away). The registry is `/run/tare/cores`
//! for root and `$XDG_RUNTIME_DIR/tare/cores` otherwise (or the temporary directory); readers
//! look at both, so unprivileged sessions see root's. `TARE_PINNED_DIR` replaces both (tests).
//!
//! An entry is written under a temporary name, locked, then renamed into place: a reader never
//! sees an entry that is not yet locked.

use super::topology::{format_cpu_list, parse_cpu_list, Topology};
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A live session's pinned CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub pid: u32,
    pub cpus: Vec<usize>,
    /// What the session is, in a few words ("tare run", "tare suite run NAME").
    pub what: String,
}

/// This session's registration; removed when dropped.
pub struct Registration {
    path: PathBuf,
    _file: File,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The directory this session registers in.
fn own_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("TARE_PINNED_DIR") {
        return Some(PathBuf::from(d));
    }
    crate::lock::runtime_dir().map(|d| d.join("cores"))
}

/// Every directory to read: this session's and root's.
fn dirs() -> Vec<PathBuf> {
    let own = own_dir();
    let mut v: Vec<PathBuf> = own.iter().cloned().collect();
    if std::env::var_os("TARE_PINNED_DIR").is_none()
        && own.as_deref() != Some(Path::new("/run/tare/cores"))
    {
        v.push(PathBuf::from("/run/tare/cores"));
    }
    v
}

/// Holds the registry's own lock (blocking until it is free, at most a few seconds) while a
/// session chooses its cores and registers them; `None` when there is no registry.
pub fn lock_registry() -> Option<File> {
    let dir = own_dir()?;
    std::fs::create_dir_all(&dir).ok()?;
    let f = File::create(dir.join(".lock")).ok()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !crate::lock::try_lock_exclusive(&f).unwrap_or(true) {
        if std::time::Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Some(f)
}

/// Registers `cpus` for this session until the returned guard is dropped. Failing to register
/// (no writable runtime directory) is not an error: the session goes on unregistered.
pub fn register(cpus: &[usize], what: &str) -> Option<Registration> {
    let dir = own_dir()?;
    std::fs::create_dir_all(&dir).ok()?;
    let pid = std::process::id();
    let tmp = dir.join(format!(".{pid}.tmp"));
    let path = dir.join(format!("{pid}.cores"));
    let mut file = File::create(&tmp).ok()?;
    if !crate::lock::try_lock_exclusive(&file).unwrap_or(false) {
        let _ = std::fs::remove_file(&tmp);
        return None;
    }
    let text = format!("{}\n{}\n", format_cpu_list(cpus), what.replace('\n', " "));
    if file.write_all(text.as_bytes()).is_err() || std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
        return None;
    }
    Some(Registration { path, _file: file })
}

/// The CPUs pinned by other live sessions.
pub fn others() -> Vec<Entry> {
    let own = std::process::id();
    let mut out = Vec::new();
    for dir in dirs() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_suffix(".cores")
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == own {
                continue;
            }
            let path = e.path();
            let Ok(mut f) = File::open(&path) else {
                continue;
            };
            if crate::lock::try_lock_shared(&f).unwrap_or(false) {
                // Nobody holds it: its session is gone. Tidy it away if it is still this file.
                let same = match (f.metadata(), std::fs::metadata(&path)) {
                    (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
                    _ => false,
                };
                if same {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            let mut text = String::new();
            if f.read_to_string(&mut text).is_err() {
                continue;
            }
            let mut lines = text.lines();
            let Some(cpus) = lines.next().and_then(|l| parse_cpu_list(l).ok()) else {
                continue;
            };
            out.push(Entry {
                pid,
                cpus,
                what: lines.next().unwrap_or("tare").to_string(),
            });
        }
    }
    out.sort_by_key(|e| e.pid);
    out
}

/// All CPUs in `entries`.
pub fn cpus_of(entries: &[Entry]) -> BTreeSet<usize> {
    entries
        .iter()
        .flat_map(|e| e.cpus.iter().copied())
        .collect()
}

/// Who holds which of `cpus`, for a message: "CPU 1 (tare suite run x, pid 42)".
pub fn describe(entries: &[Entry], cpus: &BTreeSet<usize>) -> String {
    entries
        .iter()
        .filter_map(|e| {
            let mine: Vec<usize> = e
                .cpus
                .iter()
                .copied()
                .filter(|c| cpus.contains(c))
                .collect();
            (!mine.is_empty())
                .then(|| format!("CPU {} ({}, pid {})", format_cpu_list(&mine), e.what, e.pid))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The topology without the physical cores that have a CPU in `busy` (a run never shares a
/// physical core with another session's run).
pub fn without(topo: &Topology, busy: &BTreeSet<usize>) -> Topology {
    let mut t = topo.clone();
    let gone: BTreeSet<usize> = topo
        .cores
        .iter()
        .filter(|c| c.cpus.iter().any(|id| busy.contains(id)))
        .flat_map(|c| c.cpus.iter().copied())
        .collect();
    t.cores
        .retain(|c| !c.cpus.iter().any(|id| gone.contains(id)));
    t.cpus.retain(|c| !gone.contains(&c.id));
    for cpus in t.nodes.values_mut() {
        cpus.retain(|id| !gone.contains(id));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_seen_while_its_holder_lives_and_ignored_once_it_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        // Another "session": a file locked through another open file description.
        let p = dir.path().join("4242.cores");
        std::fs::write(&p, "1,3\ntare suite run x\n").unwrap();
        let holder = File::open(&p).unwrap();
        assert!(crate::lock::try_lock_exclusive(&holder).unwrap());
        std::env::set_var("TARE_PINNED_DIR", dir.path());
        let seen = others();
        assert_eq!(
            seen,
            vec![Entry {
                pid: 4242,
                cpus: vec![1, 3],
                what: "tare suite run x".into()
            }]
        );
        assert_eq!(
            describe(&seen, &[3].into_iter().collect()),
            "CPU 3 (tare suite run x, pid 4242)"
        );
        // Our own registration is not "another session".
        let reg = register(&[0], "tare run").unwrap();
        assert_eq!(others().len(), 1);
        drop(holder);
        assert!(others().is_empty(), "stale entry ignored");
        assert!(!p.exists(), "and tidied away");
        drop(reg);
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
        std::env::remove_var("TARE_PINNED_DIR");
    }
}
