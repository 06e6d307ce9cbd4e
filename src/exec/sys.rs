//! Narrow wrappers around the few Linux syscalls `exec` needs and `std` does not offer.
//!
//! Every `unsafe` block of the exec layer lives here, each with its SAFETY argument; `euid` and
//! `kill`, which layers below exec use too, are `crate::sys`'s.

pub use crate::sys::{euid, kill};
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

/// Opens `name` (a plain file name) read-only relative to the directory `dir`: one path
/// component to walk instead of the whole path (~2.5 µs less per open of a cgroup file).
pub fn open_in(dir: &std::fs::File, name: &std::ffi::CStr) -> io::Result<std::fs::File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    // SAFETY: `name` is NUL-terminated and `dir` an open descriptor for the call.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat and is owned by nothing else.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
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

/// Everything the child of [`spawn_vfork`] needs, prepared by the parent so the child only
/// makes raw syscalls on this data (it shares the parent's memory until it execs).
pub struct ChildPlan {
    pub path: std::ffi::CString,
    /// NUL-terminated pointer arrays into `_argv` / `_envp`.
    pub argv_ptrs: Vec<*const libc::c_char>,
    pub envp_ptrs: Vec<*const libc::c_char>,
    pub _argv: Vec<std::ffi::CString>,
    pub _envp: std::rc::Rc<Vec<std::ffi::CString>>,
    pub cwd: Option<std::ffi::CString>,
    /// Source fds for stdin, stdout, stderr; -1 keeps tare's own.
    pub stdio: [RawFd; 3],
    /// Open join files (`tasks` on v1, `cgroup.procs` on v2) the child writes "0" into.
    pub procs_fds: Vec<RawFd>,
    /// A cgroup v2 directory to start the child in with clone3(CLONE_INTO_CGROUP) (see
    /// [`spawn_clone3_into`]); the child then skips `procs_fds`.
    pub cgroup_fd: Option<RawFd>,
    /// Set by [`spawn_clone3_into`]: the child was born in its group.
    pub in_cgroup: std::sync::atomic::AtomicBool,
    pub affinity: Option<Vec<usize>>,
    pub rlimits: Vec<(libc::__rlimit_resource_t, u64, u64)>,
    pub nice: Option<i32>,
    pub fifo: bool,
    /// Turn ASLR off (`personality(ADDR_NO_RANDOMIZE)`) for the command.
    pub aslr_off: bool,
    /// Signals whose disposition the child resets to the default.
    pub reset_signals: Vec<i32>,
    /// Extra descriptors the command inherits (their FD_CLOEXEC is cleared in the child), e.g.
    /// the worker's end of the `tare kernels` socketpair.
    pub inherit_fds: Vec<RawFd>,
    /// Set by the child when a step fails: (step, errno).
    pub failed: std::sync::atomic::AtomicU64,
    /// Set by the child: nanoseconds it spent joining its cgroups (the writes into
    /// `procs_fds`), read on CLOCK_MONOTONIC around them. A cgroup v1 migration can sleep for an
    /// RCU grace period; the parent takes this time out of the run's wall clock.
    pub join_ns: std::sync::atomic::AtomicU64,
}

/// Clears FD_CLOEXEC on `fd` in the calling process (async-signal-safe: one fcntl), so an exec
/// keeps it open.
pub fn clear_cloexec(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl(F_SETFD) only changes the descriptor's flags; an invalid fd gives EBADF.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets FD_CLOEXEC on `fd`, so programs this process starts do not inherit it.
pub fn set_cloexec(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl(F_SETFD) only changes the descriptor's flags; an invalid fd gives EBADF.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Async-signal-safe: CLOCK_MONOTONIC in nanoseconds (0 if the clock cannot be read).
fn monotonic_ns() -> u64 {
    // SAFETY: an all-zero timespec is valid; clock_gettime is async-signal-safe (POSIX) and
    // writes only into `ts`, which lives for the call.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } != 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

/// Steps of the child, for error messages.
pub const STEP_NAMES: [&str; 11] = [
    "signals",
    "setpgid",
    "cgroup",
    "affinity",
    "rlimit",
    "priority",
    "stdio",
    "chdir",
    "exec",
    "personality",
    "inherit fd",
];

extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `&ChildPlan` passed by `spawn_vfork`, which stays borrowed and
    // unmoved until this child has exec'd or exited (CLONE_VFORK suspends the parent).
    let plan = unsafe { &*(arg as *const ChildPlan) };
    let fail = |step: u64| -> libc::c_int {
        let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0) as u64;
        plan.failed
            .store((step << 32) | errno, std::sync::atomic::Ordering::SeqCst);
        // SAFETY: _exit is async-signal-safe and never returns.
        unsafe { libc::_exit(127) }
    };
    // SAFETY (whole block): only async-signal-safe libc calls on data prepared by the parent;
    // no allocation, no locks, no Rust runtime state is touched.
    unsafe {
        for &sig in &plan.reset_signals {
            libc::signal(sig, libc::SIG_DFL);
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        if libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) != 0 {
            return fail(0);
        }
        if libc::setpgid(0, 0) != 0 {
            return fail(1);
        }
        if plan.aslr_off {
            let current = libc::personality(0xffff_ffff);
            if current < 0
                || libc::personality(
                    (current as libc::c_ulong) | libc::ADDR_NO_RANDOMIZE as libc::c_ulong,
                ) < 0
            {
                return fail(9);
            }
        }
        if !plan.in_cgroup.load(std::sync::atomic::Ordering::Relaxed) {
            let joining = monotonic_ns();
            for &fd in &plan.procs_fds {
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return fail(2);
                }
            }
            plan.join_ns.store(
                monotonic_ns().saturating_sub(joining),
                std::sync::atomic::Ordering::SeqCst,
            );
        }
        if let Some(cpus) = &plan.affinity {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in cpus {
                if c < libc::CPU_SETSIZE as usize {
                    libc::CPU_SET(c, &mut set);
                }
            }
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return fail(3);
            }
        }
        for &(res, soft, hard) in &plan.rlimits {
            let lim = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(res, &lim) != 0 {
                return fail(4);
            }
        }
        if let Some(n) = plan.nice {
            if libc::setpriority(libc::PRIO_PROCESS, 0, n) != 0 {
                return fail(5);
            }
        }
        if plan.fifo {
            let p = libc::sched_param { sched_priority: 1 };
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) != 0 {
                return fail(5);
            }
        }
        for &fd in &plan.inherit_fds {
            if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                return fail(10);
            }
        }
        for (target, &src) in plan.stdio.iter().enumerate() {
            if src >= 0 && libc::dup2(src, target as i32) < 0 {
                return fail(6);
            }
        }
        if let Some(dir) = &plan.cwd {
            if libc::chdir(dir.as_ptr()) != 0 {
                return fail(7);
            }
        }
        libc::execve(
            plan.path.as_ptr(),
            plan.argv_ptrs.as_ptr(),
            plan.envp_ptrs.as_ptr(),
        );
        fail(8)
    }
}

/// Starts `plan` in a child that shares tare's memory until it execs (like posix_spawn):
/// no page tables are copied, so the cost does not grow with tare's own memory. Returns the
/// child's pid once it has exec'd, or the step and error that stopped it (the child is reaped).
pub fn spawn_vfork(plan: &ChildPlan) -> Result<i32, (usize, io::Error)> {
    plan.in_cgroup
        .store(false, std::sync::atomic::Ordering::SeqCst);
    spawn_on_stack(plan, |top| {
        // SAFETY: `child_main` only reads `plan` and makes async-signal-safe calls; CLONE_VM with
        // CLONE_VFORK keeps this thread suspended (and `plan`, the stack alive) until it execs.
        unsafe {
            libc::clone(
                child_main,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                plan as *const ChildPlan as *mut libc::c_void,
            )
        }
    })
}

/// Like [`spawn_vfork`], but the child is born in the cgroup v2 directory `cgroup_fd`
/// (clone3 with CLONE_INTO_CGROUP, Linux ≥ 5.7): no `cgroup.procs` write, no migration while
/// the clock runs. Fails with ENOSYS where clone3 is missing or filtered (and on other
/// architectures than x86-64), EINVAL/E2BIG where the kernel predates CLONE_INTO_CGROUP; the
/// caller then falls back to [`spawn_vfork`].
pub fn spawn_clone3_into(plan: &ChildPlan, cgroup_fd: RawFd) -> Result<i32, (usize, io::Error)> {
    plan.in_cgroup
        .store(true, std::sync::atomic::Ordering::SeqCst);
    spawn_on_stack(plan, |top| {
        const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
        let args = CloneArgs {
            flags: (libc::CLONE_VM | libc::CLONE_VFORK) as u64 | CLONE_INTO_CGROUP,
            exit_signal: libc::SIGCHLD as u64,
            // The kernel puts the child's stack pointer at stack + stack_size = `top`; the
            // region stays inside the STACK bytes allocated (`top` is at most 15 below the end).
            stack: top as u64 - (STACK - 64) as u64,
            stack_size: (STACK - 64) as u64,
            cgroup: cgroup_fd as u64,
            ..Default::default()
        };
        // SAFETY: as for spawn_vfork: CLONE_VM | CLONE_VFORK suspends this thread until the
        // child execs or exits, so `plan`, `args` and the stack outlive the child's use of
        // them; the child runs only `child_main` on its own stack and never returns into Rust.
        let r = unsafe {
            raw_clone3(
                &args,
                child_main,
                plan as *const ChildPlan as *mut libc::c_void,
            )
        };
        if r < 0 {
            // SAFETY: errno is thread-local; setting it lets the caller read it as for clone.
            unsafe { *libc::__errno_location() = -r as i32 };
            -1
        } else {
            r as i32
        }
    })
}

/// clone3's argument block (`struct clone_args`, CLONE_ARGS_SIZE_VER2 = 88 bytes).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// The raw clone3 syscall: returns the child's pid or -errno in the parent; the child, on the
/// stack given in `args`, calls `f(arg)` and exits with its result. There is no libc wrapper,
/// and a plain `syscall()` cannot be used: with CLONE_VM the child would return through the
/// parent's stack frames.
///
/// # Safety
/// `args` must describe a valid stack that stays alive, unused by anyone else, until the child
/// execs or exits; `f` must never unwind.
#[cfg(target_arch = "x86_64")]
unsafe fn raw_clone3(
    args: &CloneArgs,
    f: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    arg: *mut libc::c_void,
) -> i64 {
    let ret: i64;
    std::arch::asm!(
        "syscall",
        "test rax, rax",
        "jnz 2f",
        // Child: on its own 16-byte aligned stack; f(arg), then exit(result).
        "xor ebp, ebp",
        "mov rdi, r12",
        "call r13",
        "mov edi, eax",
        "mov eax, 60",
        "syscall",
        "ud2",
        "2:",
        inlateout("rax") libc::SYS_clone3 => ret,
        in("rdi") args as *const CloneArgs,
        in("rsi") std::mem::size_of::<CloneArgs>(),
        in("r12") arg,
        in("r13") f,
        lateout("rcx") _,
        lateout("r11") _,
        options(nostack),
    );
    ret
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn raw_clone3(
    _args: &CloneArgs,
    _f: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    _arg: *mut libc::c_void,
) -> i64 {
    -(libc::ENOSYS as i64)
}

const STACK: usize = 256 * 1024;

/// Runs `clone` (which gets the 16-byte aligned stack top) with every signal blocked, then
/// reports the child's pid or the step that failed in it.
fn spawn_on_stack(
    plan: &ChildPlan,
    clone: impl FnOnce(*mut libc::c_void) -> i32,
) -> Result<i32, (usize, io::Error)> {
    // The child's stack: made once per thread and reused, never zeroed. A fresh
    // `vec![0u8; STACK]` per spawn cost a 256 KiB memset (~7 µs) inside the timed interval.
    thread_local! {
        static CHILD_STACK: std::cell::RefCell<Vec<std::mem::MaybeUninit<u8>>> =
            std::cell::RefCell::new(Vec::with_capacity(STACK));
    }
    CHILD_STACK.with(|s| spawn_with_stack(plan, clone, &mut s.borrow_mut()))
}

fn spawn_with_stack(
    plan: &ChildPlan,
    clone: impl FnOnce(*mut libc::c_void) -> i32,
    stack: &mut Vec<std::mem::MaybeUninit<u8>>,
) -> Result<i32, (usize, io::Error)> {
    // SAFETY: the capacity is STACK bytes (reserved at creation, never shrunk), so the pointer
    // is one past the end of the allocation; the stack outlives the child's use of it
    // (CLONE_VFORK returns only after exec or exit), and the child writes before it reads
    // (uninitialized bytes are never read). The top is 16-byte aligned as the ABI requires.
    let top = unsafe { stack.as_mut_ptr().add(stack.capacity().min(STACK)) };
    let top = ((top as usize) & !15) as *mut libc::c_void;
    // Block every signal so no handler of tare runs on the child's stack; the child clears
    // the mask after resetting dispositions.
    // SAFETY: plain sigset manipulation on local values.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    plan.failed.store(0, std::sync::atomic::Ordering::SeqCst);
    plan.join_ns.store(0, std::sync::atomic::Ordering::SeqCst);
    let pid = clone(top);
    let clone_err = io::Error::last_os_error();
    // SAFETY: restores the mask saved above.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
    if pid < 0 {
        return Err((usize::MAX, clone_err));
    }
    let failed = plan.failed.load(std::sync::atomic::Ordering::SeqCst);
    if failed != 0 {
        let _ = wait4(pid);
        let step = (failed >> 32) as usize;
        return Err((
            step,
            io::Error::from_raw_os_error((failed & 0xffff_ffff) as i32),
        ));
    }
    Ok(pid)
}

/// Whether `path` has the extended attribute `name` (e.g. systemd's `trusted.delegate`).
pub fn has_xattr(path: &std::path::Path, name: &std::ffi::CStr) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: both strings are valid and NUL-terminated for the call; a null buffer of size 0
    // only asks for the value's size, nothing is written.
    unsafe { libc::getxattr(c.as_ptr(), name.as_ptr(), std::ptr::null_mut(), 0) >= 0 }
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
