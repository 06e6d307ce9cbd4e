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
/// `$XDG_RUNTIME_DIR/tare`, else `<temporary directory>/tare-<uid>`.
pub fn runtime_dir() -> PathBuf {
    // SAFETY: geteuid takes no arguments and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        return PathBuf::from("/run/tare");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("tare"),
        _ => std::env::temp_dir().join(format!("tare-{uid}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
