//! Narrow wrappers around the few Linux syscalls `exec` needs and `std` does not offer.
//!
//! Every `unsafe` block of the exec layer lives here, each with its SAFETY argument.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Resource usage of a waited-for process and its waited-for descendants (from `wait4`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Rusage {
    pub user: Duration,
    pub system: Duration,
    /// Largest resident set size of any single waited process, in bytes.
    pub max_rss: u64,
    pub involuntary_context_switches: u64,
}

/// How a waited-for process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStatus {
    Exited(i32),
    Signaled(i32),
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64)
}

/// Blocks until process `pid` ends; returns how it ended and its rusage.
pub fn wait4(pid: i32) -> io::Result<(WaitStatus, Rusage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `ru` are valid, writable and live for the call.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    let ws = if libc::WIFEXITED(status) {
        WaitStatus::Exited(libc::WEXITSTATUS(status))
    } else {
        WaitStatus::Signaled(libc::WTERMSIG(status))
    };
    let usage = Rusage {
        user: timeval(ru.ru_utime),
        system: timeval(ru.ru_stime),
        max_rss: (ru.ru_maxrss.max(0) as u64) * 1024,
        involuntary_context_switches: ru.ru_nivcsw.max(0) as u64,
    };
    Ok((ws, usage))
}

/// Opens a pidfd for `pid` (Linux ≥ 5.3), readable once the process ends.
pub fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1; no memory is shared.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this fd to us and nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Waits up to `timeout` for `fd` to become readable; true when it did.
pub fn poll_readable(fd: &OwnedFd, timeout: Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: `pfd` is one valid pollfd that lives for the call.
    let r = unsafe { libc::poll(&mut pfd, 1, ms.max(0)) };
    if r < 0 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(err);
    }
    Ok(r > 0)
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

/// Async-signal-safe: writes `bytes` to `fd`. For use between fork and exec only.
pub fn write_raw(fd: RawFd, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `bytes` is a valid buffer of the given length for the call; write is
    // async-signal-safe, so this may run in a forked child before exec.
    let r = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Async-signal-safe: puts the calling process into a new process group of its own.
pub fn setpgid_self() -> io::Result<()> {
    // SAFETY: setpgid takes plain integers and is async-signal-safe.
    if unsafe { libc::setpgid(0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Async-signal-safe: sets a resource limit of the calling process.
pub fn setrlimit(resource: libc::__rlimit_resource_t, soft: u64, hard: u64) -> io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: `lim` is a valid rlimit that lives for the call; setrlimit is async-signal-safe.
    if unsafe { libc::setrlimit(resource, &lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Async-signal-safe: restores default dispositions for signals tare handles itself, so the
/// child starts as if spawned by a shell.
pub fn reset_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGPIPE, libc::SIGHUP] {
        // SAFETY: signal with SIG_DFL is async-signal-safe and touches no memory of ours.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
}

/// Number of clock ticks per second (for /proc/<pid>/stat times).
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf takes a plain integer.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// Async-signal-safe: confines the calling process to `cpus` (fallback when no cpuset).
pub fn set_affinity_self(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET only writes inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c < libc::CPU_SETSIZE as usize {
            // SAFETY: `c` is below CPU_SETSIZE, so the write stays inside `set`.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling process.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends `sig` to every process of group `pgid`; an empty group is not an error.
pub fn killpg(pgid: i32, sig: i32) -> io::Result<bool> {
    // SAFETY: killpg takes plain integers.
    if unsafe { libc::killpg(pgid, sig) } != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ESRCH) {
            return Ok(false);
        }
        return Err(err);
    }
    Ok(true)
}

/// Whether this process may write into `path` (access(2) with W_OK).
pub fn writable(path: &std::path::Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Async-signal-safe: sets the nice value of the calling process.
pub fn set_nice_self(nice: i32) -> io::Result<()> {
    // SAFETY: setpriority takes plain integers and is async-signal-safe.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Async-signal-safe: makes the calling process SCHED_FIFO with `priority`.
pub fn set_fifo_self(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param for the call; the syscall is async-signal-safe.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Async-signal-safe: turns address-space layout randomization off for the calling process
/// and what it executes (`personality(ADDR_NO_RANDOMIZE)`, the flag `setarch -R` sets); the
/// other personality bits are kept.
pub fn disable_aslr_self() -> io::Result<()> {
    // SAFETY: personality takes a plain integer; 0xffffffff only queries the current value.
    // The syscall is async-signal-safe and touches no memory of ours.
    let current = unsafe { libc::personality(0xffff_ffff) };
    if current < 0 {
        return Err(io::Error::last_os_error());
    }
    let wanted = (current as libc::c_ulong) | libc::ADDR_NO_RANDOMIZE as libc::c_ulong;
    // SAFETY: as above; setting a persona flag affects only this process and its exec image.
    if unsafe { libc::personality(wanted) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether this process may turn ASLR off for its children (seccomp filters in some
/// containers forbid it). Checked in a short-lived child so tare's own persona is unchanged.
pub fn can_disable_aslr() -> bool {
    let mut cmd = std::process::Command::new("/bin/true");
    // SAFETY (of the closure's contents): only the async-signal-safe personality syscall runs
    // between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, disable_aslr_self);
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}
