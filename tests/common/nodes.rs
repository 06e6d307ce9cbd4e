//! Special files the robustness tests make in a temporary directory (never the machine's
//! /dev): FIFOs and character devices.

use std::ffi::CString;
use std::path::Path;

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_encoded_bytes()).expect("a path without NUL")
}

/// Makes a FIFO (mode 0600) at `path`; panics when it cannot.
pub fn mkfifo(path: &Path) {
    let c = c_path(path);
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    let r = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(r, 0, "mkfifo {}", path.display());
}

/// Makes a character device (mode 0666) `major:minor` at `path` (needs CAP_MKNOD: root).
pub fn mknod_char(path: &Path, major: u32, minor: u32) -> std::io::Result<()> {
    let c = c_path(path);
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    let r = unsafe {
        libc::mknod(
            c.as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(major, minor),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
