//! After an isolated run: clears set-user-ID and set-group-ID bits the tool left on files in
//! its `--writable` directories. The tool writes there as root of its namespace, and its
//! files are root's on the host (the directories are ID-mapped), so a `chmod 4755` copy of a
//! shell would be a root shell for every local user.
//!
//! For: [`sweep`]. Not for: the per-run work directory's result files (copied, never kept in
//! place: see [`super::collect`]).
//!
//! Only regular files whose status changed at or after the run's start (ctime) are touched, so
//! set-ID programs the user keeps there are left alone; symbolic links are not followed and
//! the walk stays on the directory's file system.

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, ResolveFlags};
use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Files looked at per directory tree at most (a tool could leave millions), and the deepest
/// directory entered (one descriptor is held per level). Reaching either is an error, never a
/// silent stop: a set-ID file past the limit would otherwise stay unseen.
const MAX_ENTRIES: usize = 1_000_000;
const MAX_DEPTH: usize = 256;

/// A file whose set-ID bits were cleared: its path and its mode before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cleared {
    pub path: PathBuf,
    pub mode: u32,
}

/// Clears the set-ID bits of regular files below `dir` changed at or after `since`.
pub fn sweep(dir: &Path, since: SystemTime) -> io::Result<Vec<Cleared>> {
    // ctime comes from the kernel's coarse clock, which may lag the real-time clock by a tick.
    let since = since
        .checked_sub(std::time::Duration::from_millis(50))
        .unwrap_or(since)
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let since = (since.as_secs() as i64, since.subsec_nanos() as i64);
    let root = rfs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut out = Vec::new();
    let mut seen = 0;
    walk(&root, dir, since, 0, &mut seen, &mut out)?;
    Ok(out)
}

fn walk(
    dir: &OwnedFd,
    path: &Path,
    since: (i64, i64),
    depth: usize,
    seen: &mut usize,
    out: &mut Vec<Cleared>,
) -> io::Result<()> {
    let mut names = Vec::new();
    for e in rfs::Dir::read_from(dir)? {
        let e = e?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." {
            names.push(n.to_vec());
        }
    }
    for n in names {
        *seen += 1;
        if *seen > MAX_ENTRIES {
            return Err(io::Error::other(format!(
                "more than {MAX_ENTRIES} entries below it; set-ID files past them were not checked"
            )));
        }
        let name = OsStr::from_bytes(&n);
        let Ok(st) = rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory if depth >= MAX_DEPTH => {
                return Err(io::Error::other(format!(
                    "{} is nested deeper than {MAX_DEPTH} directories; set-ID files below it were not checked",
                    path.join(name).display()
                )));
            }
            FileType::Directory => {
                let sub = rfs::openat2(
                    dir,
                    name,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                    ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_XDEV,
                );
                if let Ok(sub) = sub {
                    walk(&sub, &path.join(name), since, depth + 1, seen, out)?;
                }
            }
            FileType::RegularFile if st.st_mode & 0o6000 != 0 => {
                // The field types differ between architectures.
                #[allow(clippy::unnecessary_cast)]
                let changed = (st.st_ctime as i64, st.st_ctime_nsec as i64);
                if changed < since {
                    continue;
                }
                // Decided again on the opened file (it may have been replaced meanwhile).
                let Ok(fd) = rfs::openat2(
                    dir,
                    name,
                    OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                    ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_XDEV,
                ) else {
                    continue;
                };
                let st = rfs::fstat(&fd)?;
                if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                    continue;
                }
                let mode = st.st_mode & 0o7777;
                // O_PATH descriptors cannot be fchmod'ed; chmod through /proc/self/fd, which
                // names exactly this file (no path lookup in the directory).
                let proc = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
                rfs::chmod(proc.as_str(), Mode::from_raw_mode(mode & !0o6000))?;
                out.push(Cleared {
                    path: path.join(name),
                    mode,
                });
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn set_id_files_changed_since_the_start_are_cleared_older_ones_kept() {
        let t = tempfile::tempdir().unwrap();
        let old = t.path().join("old");
        std::fs::write(&old, "x").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o4755)).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let start = SystemTime::now();
        std::fs::create_dir(t.path().join("sub")).unwrap();
        let new = t.path().join("sub/new");
        std::fs::write(&new, "x").unwrap();
        std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o6755)).unwrap();
        std::os::unix::fs::symlink(&old, t.path().join("link")).unwrap();
        let got = sweep(t.path(), start).unwrap();
        assert_eq!(
            got,
            vec![Cleared {
                path: new.clone(),
                mode: 0o6755
            }]
        );
        assert_eq!(std::fs::metadata(&new).unwrap().mode() & 0o7777, 0o755);
        assert_eq!(std::fs::metadata(&old).unwrap().mode() & 0o7777, 0o4755);
    }

    #[test]
    fn a_tree_deeper_than_the_walk_goes_is_an_error_not_a_silent_stop() {
        // The review's attack: a set-ID copy of a shell 70 directories down was left in place
        // when the walk stopped at depth 64 and said nothing.
        let t = tempfile::tempdir().unwrap();
        let start = SystemTime::now();
        let mut d = t.path().to_path_buf();
        for _ in 0..=MAX_DEPTH {
            d.push("d");
        }
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("sh");
        std::fs::write(&f, "x").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o4755)).unwrap();
        let e = sweep(t.path(), start).unwrap_err().to_string();
        assert!(e.contains("deeper than"), "{e}");
    }
}
