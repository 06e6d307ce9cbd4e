//! Advisory whole-file locks (flock) that tare sessions take on files they must not share: the
//! journal of a session, a session's entry in the registry of pinned cores. The kernel drops
//! the lock when the holder exits, however it exits (even `kill -9`), so a lock that can be
//! taken marks a file nobody alive is using.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

/// Takes an exclusive lock on `file` without waiting: `Ok(true)` when taken, `Ok(false)` when
/// another open file description (another session) holds it.
pub fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    try_flock(file, libc::LOCK_EX)
}

/// Takes a shared lock on `file` without waiting (see [`try_lock_exclusive`]).
pub fn try_lock_shared(file: &File) -> io::Result<bool> {
    try_flock(file, libc::LOCK_SH)
}

fn try_flock(file: &File, kind: libc::c_int) -> io::Result<bool> {
    // SAFETY: flock only reads the descriptor number, which `file` keeps open for the call.
    let r = unsafe { libc::flock(file.as_raw_fd(), kind | libc::LOCK_NB) };
    if r == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// Where tare keeps the lock files of live sessions: `/run/tare` for root, else
/// `$XDG_RUNTIME_DIR/tare`, else `<temporary directory>/tare-<uid>` (the path only; see
/// [`runtime_dir`]).
pub fn runtime_path() -> PathBuf {
    let uid = crate::sys::euid();
    if uid == 0 {
        return PathBuf::from("/run/tare");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("tare"),
        _ => std::env::temp_dir().join(format!("tare-{uid}")),
    }
}

/// [`runtime_path`], made (mode 0700) if it is not there and checked to be tare's own: a
/// directory, not a symbolic link, owned by the user tare runs as and writable by nobody else.
/// In a shared `/tmp` another user can make `/tmp/tare-<uid>` first — a link to a folder of
/// theirs, or a folder they can write — and then see, remove or replace the lock files, or
/// point them at the user's own files. `None` when it cannot be made or is not tare's own; the
/// session then keeps no locks, and one warning line (once per process) says why and what to do.
pub fn runtime_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let path = runtime_path();
        match make_private(&path) {
            Ok(()) => Some(path),
            Err(why) => {
                eprintln!(
                    "tare: warning: lock directory {}: {why}; this session keeps no locks against other tare sessions: remove it, or set XDG_RUNTIME_DIR to a directory of your own",
                    path.display()
                );
                None
            }
        }
    })
    .clone()
}

/// Makes `path` (and what is missing above it) with mode 0700, then checks it is the euid's own
/// directory, not a link, and writable by nobody else. Errors say what is wrong.
pub fn make_private(path: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    if let Err(e) = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
    {
        // An existing link or file is judged below; anything else is the answer.
        if std::fs::symlink_metadata(path).is_err() {
            return Err(format!("cannot create it ({e})"));
        }
    }
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("cannot read it ({e})"))?;
    let me = crate::sys::euid();
    if meta.file_type().is_symlink() {
        return Err(format!(
            "it is a symbolic link (owned by uid {}), which tare does not follow",
            meta.uid()
        ));
    }
    if !meta.is_dir() {
        return Err("it is not a directory".into());
    }
    if meta.uid() != me {
        return Err(format!(
            "it belongs to uid {}, not to you (uid {me})",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "others can write into it (mode {:o})",
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_directory_is_made_0700_and_a_link_or_a_shared_one_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let mine = d.path().join("a/tare-1");
        make_private(&mine).unwrap();
        let mode = std::fs::metadata(&mine).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        make_private(&mine).unwrap(); // already there: fine
        let link = d.path().join("tare-2");
        std::os::unix::fs::symlink(&mine, &link).unwrap();
        let e = make_private(&link).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        let shared = d.path().join("tare-3");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = make_private(&shared).unwrap_err();
        assert!(e.contains("others can write"), "{e}");
        let file = d.path().join("tare-4");
        std::fs::write(&file, "").unwrap();
        assert!(make_private(&file).unwrap_err().contains("not a directory"));
    }

    #[test]
    fn a_second_open_file_cannot_take_a_held_lock_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let a = File::create(&p).unwrap();
        let b = File::open(&p).unwrap();
        assert!(try_lock_exclusive(&a).unwrap());
        assert!(!try_lock_exclusive(&b).unwrap());
        assert!(!try_lock_shared(&b).unwrap());
        drop(a);
        assert!(try_lock_exclusive(&b).unwrap());
    }
}
