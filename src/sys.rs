//! The few system calls that layers below `exec` need too (`lock`, `results`, `machine`), each
//! a narrow wrapper with its SAFETY argument; `exec::sys` re-exports them beside its own.

use std::io;

/// The effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { libc::geteuid() }
}

/// The calling thread's id (the process id on its main thread).
pub fn gettid() -> i32 {
    // SAFETY: gettid(2) takes no argument, touches no memory and cannot fail.
    unsafe { libc::gettid() }
}

/// Sends `sig` to process `pid`; a process that is already gone is not an error.
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: kill takes plain integers.
    if unsafe { libc::kill(pid, sig) } != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ESRCH) {
            return Err(err);
        }
    }
    Ok(())
}
