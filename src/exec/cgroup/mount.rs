//! A read-write view of a cgroup2 hierarchy that is mounted read-only (a container's default):
//! tare, as root with CAP_SYS_ADMIN, mounts cgroup2 once more in its own runtime directory
//! for the session — inside a cgroup namespace the new mount shows the same namespace root —
//! and detaches it at the end. The container's own mount stays read-only.

use std::io;
use std::path::{Path, PathBuf};

/// Whether the mount at `mount_point` (as written in /proc/self/mountinfo below `root`) is
/// read-only (its per-mount options, field 6, start with `ro`).
pub fn read_only(root: &Path, mount_point: &str) -> bool {
    let Ok(content) = std::fs::read_to_string(root.join("proc/self/mountinfo")) else {
        return false;
    };
    content
        .lines()
        .rev()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((*f.get(4)?, *f.get(5)?))
        })
        .find(|(mp, _)| *mp == mount_point)
        .is_some_and(|(_, opts)| opts.split(',').any(|o| o == "ro"))
}

/// A cgroup2 mount tare made; detached and its directory removed when dropped.
#[derive(Debug)]
pub struct PrivateMount {
    pub dir: PathBuf,
}

impl PrivateMount {
    /// Mounts cgroup2 read-write at `<dir>`, made fresh (it must not exist).
    pub fn new(dir: PathBuf) -> io::Result<PrivateMount> {
        std::fs::create_dir_all(&dir).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display()))
        })?;
        let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| io::Error::other("mount point has a NUL byte"))?;
        let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        // SAFETY: every pointer is a valid NUL-terminated string for the call; data is null.
        let rc = unsafe {
            libc::mount(
                c"cgroup2".as_ptr(),
                c.as_ptr(),
                c"cgroup2".as_ptr(),
                flags,
                std::ptr::null(),
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            let _ = std::fs::remove_dir(&dir);
            return Err(io::Error::new(
                e.kind(),
                format!("cannot mount cgroup2 read-write at {}: {e}", dir.display()),
            ));
        }
        Ok(PrivateMount { dir })
    }
}

impl Drop for PrivateMount {
    fn drop(&mut self) {
        if let Ok(c) = std::ffi::CString::new(self.dir.as_os_str().as_encoded_bytes()) {
            // SAFETY: `c` is a valid NUL-terminated path for the call.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_mounts_are_told_from_their_options() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc/self")).unwrap();
        std::fs::write(
            d.path().join("proc/self/mountinfo"),
            "30 20 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate\n\
             31 20 0:27 / /sys/fs/cgroup2 rw,nosuid - cgroup2 cgroup rw\n",
        )
        .unwrap();
        assert!(read_only(d.path(), "/sys/fs/cgroup"));
        assert!(!read_only(d.path(), "/sys/fs/cgroup2"));
        assert!(!read_only(d.path(), "/nowhere"));
    }
}
