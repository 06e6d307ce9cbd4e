//! Narrow wrappers around the syscalls isolation needs: namespaces, mounts, the loopback
//! interface, NUMA memory policy and the intermediate process's wait-and-forward.
//!
//! Every function here is async-signal-safe (a single syscall, or a few, on data prepared
//! before the fork): they run in the forked child between fork and exec. Not for anything that
//! allocates; paths arrive as `&CStr` made by the parent.

use std::ffi::CStr;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

fn check(r: libc::c_long) -> io::Result<libc::c_long> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn check_int(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `fork(2)`; returns 0 in the child and the child's pid in the parent.
///
/// Only for use in an already-forked, single-threaded child (between fork and exec), where
/// forking again cannot leave another thread's lock held.
pub fn fork() -> io::Result<libc::pid_t> {
    // SAFETY: called only in the single-threaded child before exec (see above); the new child
    // continues with async-signal-safe calls only.
    check_int(unsafe { libc::fork() })
}

/// `mount(2)`; `None` arguments are passed as NULL.
pub fn mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> io::Result<()> {
    let p = |c: Option<&CStr>| c.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: every pointer is NULL or a valid NUL-terminated string that outlives the call.
    check_int(unsafe { libc::mount(p(source), target.as_ptr(), p(fstype), flags, p(data).cast()) })
        .map(drop)
}

/// `struct mount_attr` of `mount_setattr(2)` (linux/mount.h).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;

/// Makes the mount at `path` and every mount below it read-only (`mount_setattr`, Linux ≥ 5.12).
pub fn make_readonly_recursive(path: &CStr) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `path` is a valid C string and `attr` a valid mount_attr of the size passed;
    // both outlive the call.
    check(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    })
    .map(drop)
}

/// Makes the detached mount tree `fd` (from [`clone_tree`]) read-only, recursively.
pub fn make_tree_readonly(fd: libc::c_int) -> io::Result<()> {
    set_tree_attr(
        fd,
        &MountAttr {
            attr_set: MOUNT_ATTR_RDONLY,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        },
    )
}

/// `mount_setattr` on the whole detached mount tree `fd`.
fn set_tree_attr(fd: libc::c_int, attr: &MountAttr) -> io::Result<()> {
    let empty = c"";
    // SAFETY: `empty` is a valid C string and `attr` a valid mount_attr of the size passed;
    // both outlive the call; `fd` (and any user namespace fd in `attr`) is the caller's.
    check(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd,
            empty.as_ptr(),
            AT_RECURSIVE | libc::AT_EMPTY_PATH as libc::c_uint,
            attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    })
    .map(drop)
}

/// Clones the mount tree at `path` into a detached tree (`open_tree(OPEN_TREE_CLONE |
/// AT_RECURSIVE)`, Linux ≥ 5.2); returns its fd (close-on-exec).
pub fn clone_tree(path: &CStr) -> io::Result<libc::c_int> {
    // SAFETY: `path` is a valid C string that outlives the call; the result is a new fd.
    check(unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            path.as_ptr(),
            OPEN_TREE_CLONE | AT_RECURSIVE | libc::O_CLOEXEC as libc::c_uint,
        )
    })
    .map(|fd| fd as libc::c_int)
}

/// Attaches the detached tree `fd` at `target` (`move_mount`, Linux ≥ 5.2).
pub fn attach_tree(fd: libc::c_int, target: &CStr) -> io::Result<()> {
    let empty = c"";
    // SAFETY: both strings are valid C strings that outlive the call; `fd` is ours.
    check(unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd,
            empty.as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    })
    .map(drop)
}

/// `mkdir(2)`; an existing directory is not an error.
pub fn mkdir(path: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: `path` is a valid C string that outlives the call.
    if unsafe { libc::mkdir(path.as_ptr(), mode) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(e);
        }
    }
    Ok(())
}

/// `chdir(2)`.
pub fn chdir(path: &CStr) -> io::Result<()> {
    // SAFETY: `path` is a valid C string that outlives the call.
    check_int(unsafe { libc::chdir(path.as_ptr()) }).map(drop)
}

/// `close(2)`, errors ignored.
pub fn close(fd: libc::c_int) {
    // SAFETY: closing an fd we own; close is async-signal-safe.
    unsafe {
        libc::close(fd);
    }
}

/// `sethostname(2)`.
pub fn sethostname(name: &[u8]) -> io::Result<()> {
    // SAFETY: `name` is a valid buffer of the given length for the call.
    check_int(unsafe { libc::sethostname(name.as_ptr().cast(), name.len()) }).map(drop)
}

/// `struct ifreq` with the flags member of its union (linux/if.h; 40 bytes on 64-bit).
#[repr(C)]
struct IfReqFlags {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Brings the loopback interface of the current network namespace up (SIOCSIFFLAGS).
pub fn loopback_up() -> io::Result<()> {
    // SAFETY: socket takes plain integers and returns a new fd or -1.
    let fd = check_int(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) })?;
    let mut req = IfReqFlags {
        name: [0; 16],
        flags: (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short,
        _pad: [0; 22],
    };
    req.name[..2].copy_from_slice(b"lo");
    // SAFETY: `req` is a valid ifreq-shaped buffer that lives for the call; SIOCSIFFLAGS reads
    // the name and flags members only.
    let r = unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS, &mut req as *mut IfReqFlags) };
    let err = (r < 0).then(io::Error::last_os_error);
    close(fd);
    err.map_or(Ok(()), Err)
}

/// Writes `bytes` to the file at `path` (open, write, close): for uid_map and friends.
pub fn write_file(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is a valid C string that outlives the call.
    let fd = check_int(unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) })?;
    // SAFETY: `bytes` is a valid buffer of the given length for the call.
    let r = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    let err = (r < 0).then(io::Error::last_os_error);
    close(fd);
    err.map_or(Ok(()), Err)
}

/// Binds all future memory allocations of this process (and its children) to the NUMA nodes
/// in `mask` (bit i = node i): `set_mempolicy(MPOL_BIND)`.
pub fn bind_memory(mask: &[libc::c_ulong]) -> io::Result<()> {
    const MPOL_BIND: libc::c_int = 2;
    let maxnode = (mask.len() * 8 * std::mem::size_of::<libc::c_ulong>()) as libc::c_ulong;
    // SAFETY: `mask` is a valid array of `maxnode` bits that outlives the call.
    check(unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            MPOL_BIND,
            mask.as_ptr(),
            maxnode + 1,
        )
    })
    .map(drop)
}

/// Asks the kernel to SIGKILL this process when its parent dies.
pub fn die_with_parent() -> io::Result<()> {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes plain integers.
    check_int(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) }).map(drop)
}

/// Closes every fd from 3 up except `keep` (`close_range`, Linux ≥ 5.9).
pub fn close_all_but(keep: libc::c_int) {
    let keep = keep.max(2) as u32;
    // SAFETY: close_range takes plain integers; it closes fds this process no longer needs.
    unsafe {
        if keep > 3 {
            libc::syscall(libc::SYS_close_range, 3u32, keep - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32);
    }
}

/// `pipe2(O_CLOEXEC)`: (read end, write end).
pub fn pipe() -> io::Result<(libc::c_int, libc::c_int)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for the call.
    check_int(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    Ok((fds[0], fds[1]))
}

/// Writes a raw wait status to `fd` (errors ignored: the reader then falls back).
pub fn send_status(fd: libc::c_int, status: libc::c_int) {
    let b = status.to_ne_bytes();
    // SAFETY: `b` is a valid buffer of its length for the call.
    unsafe {
        libc::write(fd, b.as_ptr().cast(), b.len());
    }
}

/// Reads a raw wait status from `fd`; `None` at end of file (the writer died first).
pub fn recv_status(fd: libc::c_int) -> Option<libc::c_int> {
    let mut b = [0u8; 4];
    loop {
        // SAFETY: `b` is a valid, writable buffer of its length for the call.
        let r = unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) };
        if r == 4 {
            return Some(libc::c_int::from_ne_bytes(b));
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return None;
    }
}

/// Waits for any child; returns (pid, raw status), or `None` when there is none left.
pub fn wait_any() -> Option<(libc::pid_t, libc::c_int)> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid, writable int for the call.
        let r = unsafe { libc::waitpid(-1, &mut status, 0) };
        if r > 0 {
            return Some((r, status));
        }
        if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

/// Waits for `child`; returns its raw status (or `None` on an error other than EINTR).
pub fn wait_for(child: libc::pid_t) -> Option<libc::c_int> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid, writable int for the call.
        let r = unsafe { libc::waitpid(child, &mut status, 0) };
        if r == child {
            return Some(status);
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

/// `_exit(2)`.
pub fn exit(code: libc::c_int) -> ! {
    // SAFETY: _exit never returns and is async-signal-safe.
    unsafe { libc::_exit(code) }
}

/// Ends this process the way raw wait status `status` says: the same exit code, or the same
/// signal (default action, unblocked, core dumps off). Never returns.
pub fn end_like(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        let nocore = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: plain syscalls on our own process: no core file, default action, then the
        // same signal, unblocked, so tare sees the run end by it. `set` is a valid sigset_t.
        unsafe {
            libc::setrlimit(libc::RLIMIT_CORE, &nocore);
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
        }
        exit(128 + sig)
    }
    exit(if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        127
    })
}

/// Whether this process runs with effective uid 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Real uid and gid of this process.
pub fn ids() -> (u32, u32) {
    // SAFETY: getuid and getgid take nothing and cannot fail.
    unsafe { (libc::getuid(), libc::getgid()) }
}

/// `clone(2)` without a new stack (fork semantics) into the new namespaces in `flags`; the
/// child gets SIGCHLD semantics like a forked child. Returns 0 in the child, its pid in the
/// parent. A raw syscall, so no atfork handler runs; only for a single-threaded child
/// between fork and exec, like [`fork`].
pub fn clone_into(flags: libc::c_int) -> io::Result<libc::pid_t> {
    let flags = (flags | libc::SIGCHLD) as libc::c_ulong;
    // SAFETY: with a NULL stack, clone copies the calling (single-threaded) process like
    // fork; the child continues on its own copy of this stack with async-signal-safe calls.
    check(unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) })
        .map(|p| p as libc::pid_t)
}

/// Formats `/proc/<pid>/<name>` into `buf` as a C string, without allocating.
fn proc_path<'a>(buf: &'a mut [u8; 64], pid: libc::pid_t, name: &[u8]) -> io::Result<&'a CStr> {
    let mut digits = [0u8; 12];
    let mut n = pid.unsigned_abs();
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let total = 6 + len + 1 + name.len() + 1;
    if total > buf.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    buf[..6].copy_from_slice(b"/proc/");
    for i in 0..len {
        buf[6 + i] = digits[len - 1 - i];
    }
    buf[6 + len] = b'/';
    buf[7 + len..7 + len + name.len()].copy_from_slice(name);
    buf[total - 1] = 0;
    CStr::from_bytes_with_nul(&buf[..total]).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Writes `bytes` to `/proc/<pid>/<name>` (uid_map, gid_map, setgroups of a child).
pub fn write_proc_file(pid: libc::pid_t, name: &[u8], bytes: &[u8]) -> io::Result<()> {
    let mut buf = [0u8; 64];
    write_file(proc_path(&mut buf, pid, name)?, bytes)
}

/// Opens `/proc/<pid>/ns/user` (close-on-exec): the user namespace of a child, for ID-mapped
/// mounts.
pub fn open_user_ns(pid: libc::pid_t) -> io::Result<libc::c_int> {
    let mut buf = [0u8; 64];
    let path = proc_path(&mut buf, pid, b"ns/user")?;
    // SAFETY: `path` is a valid C string that outlives the call.
    check_int(unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) })
}

const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;

/// ID-maps the detached mount tree `fd` (from [`clone_tree`]) through the user namespace
/// `userns_fd`: a file owned by host uid/gid N appears owned by whatever N maps to there.
/// Needs CAP_SYS_ADMIN over the file system (root on the host) and a file system that
/// supports ID-mapped mounts.
pub fn idmap_tree(fd: libc::c_int, userns_fd: libc::c_int) -> io::Result<()> {
    set_tree_attr(
        fd,
        &MountAttr {
            attr_set: MOUNT_ATTR_IDMAP,
            attr_clr: 0,
            propagation: 0,
            userns_fd: userns_fd as u64,
        },
    )
}

/// Writes one byte to `fd` (a go-ahead between the helper processes).
pub fn send_byte(fd: libc::c_int) -> io::Result<()> {
    let b = [1u8];
    // SAFETY: `b` is a valid buffer of its length for the call.
    check(unsafe { libc::write(fd, b.as_ptr().cast(), 1) } as libc::c_long).map(drop)
}

/// Reads one byte from `fd`; false at end of file (the writer died or gave up).
pub fn recv_byte(fd: libc::c_int) -> bool {
    let mut b = [0u8; 1];
    loop {
        // SAFETY: `b` is a valid, writable buffer of its length for the call.
        let r = unsafe { libc::read(fd, b.as_mut_ptr().cast(), 1) };
        if r == 1 {
            return true;
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return false;
    }
}

/// `kill(pid, SIGKILL)`, errors ignored.
pub fn kill_child(pid: libc::pid_t) {
    // SAFETY: kill takes plain integers.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// Becomes uid and gid 0 of the current user namespace, with no supplementary groups
/// (`clear_groups`; not allowed where setgroups was denied). Raw syscalls: glibc's wrappers
/// would synchronise with other threads, which a forked child has none of.
pub fn become_ns_root(clear_groups: bool) -> io::Result<()> {
    // SAFETY: setgroups with size 0 reads no memory; setresgid/setresuid take integers.
    unsafe {
        if clear_groups {
            check(libc::syscall(
                libc::SYS_setgroups,
                0usize,
                std::ptr::null::<libc::gid_t>(),
            ))?;
        }
        check(libc::syscall(libc::SYS_setresgid, 0u32, 0u32, 0u32))?;
        check(libc::syscall(libc::SYS_setresuid, 0u32, 0u32, 0u32))?;
    }
    Ok(())
}

/// `struct __user_cap_header_struct` (linux/capability.h).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
const PR_SET_SECUREBITS: libc::c_int = 28;
const PR_CAPBSET_DROP: libc::c_int = 24;
const PR_CAP_AMBIENT: libc::c_int = 47;
const PR_CAP_AMBIENT_CLEAR_ALL: libc::c_ulong = 4;
/// NOROOT, NO_SETUID_FIXUP, KEEP_CAPS off, NO_CAP_AMBIENT_RAISE, each with its lock bit: a
/// uid 0 that execs gets no capabilities, and nothing can turn that back on.
const SECUREBITS_LOCKED_DOWN: libc::c_ulong = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80;

/// Drops every capability for good: locked securebits (uid 0 gains nothing on exec), an empty
/// bounding set, no ambient capabilities, `no_new_privs` (set-user-ID bits and file
/// capabilities are ignored on exec), then empty effective, permitted and inheritable sets.
/// `last_cap` is the highest capability the kernel knows (`/proc/sys/kernel/cap_last_cap`,
/// read before the fork). Needs CAP_SETPCAP in the current user namespace for the first two
/// steps.
pub fn drop_privileges(last_cap: u32) -> io::Result<()> {
    // SAFETY: prctl and capset with plain integers and a valid header/data array that outlive
    // the calls.
    unsafe {
        check_int(libc::prctl(
            PR_SET_SECUREBITS,
            SECUREBITS_LOCKED_DOWN,
            0,
            0,
            0,
        ))?;
        for cap in 0..=last_cap.min(63) {
            if libc::prctl(PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) < 0
                && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
            {
                return Err(io::Error::last_os_error());
            }
        }
        check_int(libc::prctl(
            PR_CAP_AMBIENT,
            PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        ))?;
        check_int(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        let header = CapHeader {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [
            CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
            CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
        ];
        check(libc::syscall(
            libc::SYS_capset,
            &header as *const CapHeader,
            data.as_ptr(),
        ))?;
    }
    Ok(())
}

/// `struct landlock_ruleset_attr` (linux/landlock.h, ABI 6).
#[repr(C)]
struct LandlockRulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
const LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1;
const LANDLOCK_SCOPE_SIGNAL: u64 = 2;

/// The Landlock ABI version of the running kernel (0: no Landlock). Call before the fork.
pub fn landlock_abi() -> i32 {
    // SAFETY: with a NULL attribute and the VERSION flag the call only returns a number.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<LandlockRulesetAttr>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    r.max(0) as i32
}

/// Puts this process in a Landlock domain (ABI ≥ 6) that may neither connect to abstract Unix
/// sockets nor signal processes created outside it. Needs `no_new_privs` set first.
pub fn landlock_scope() -> io::Result<()> {
    let attr = LandlockRulesetAttr {
        handled_access_fs: 0,
        handled_access_net: 0,
        scoped: LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL,
    };
    // SAFETY: `attr` is a valid ruleset attribute of the size passed; the result is a new fd.
    let fd = check(unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const LandlockRulesetAttr,
            std::mem::size_of::<LandlockRulesetAttr>(),
            0u32,
        )
    })? as libc::c_int;
    // SAFETY: restrict_self takes our ruleset fd and flags.
    let r = check(unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) });
    close(fd);
    r.map(drop)
}

/// Writes a failed setup step (`code`) and its errno to the report pipe `fd`, so that the
/// parent can say which step failed (std passes only the errno on).
pub fn report_failure(fd: libc::c_int, code: u32, err: &io::Error) {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&code.to_ne_bytes());
    b[4..].copy_from_slice(&err.raw_os_error().unwrap_or(0).to_ne_bytes());
    // SAFETY: `b` is a valid buffer of its length for the call.
    unsafe {
        libc::write(fd, b.as_ptr().cast(), b.len());
    }
}

/// Reads a report written by [`report_failure`] from the non-blocking pipe `fd`, if any.
pub fn read_failure(fd: libc::c_int) -> Option<(u32, i32)> {
    let mut b = [0u8; 8];
    // SAFETY: `b` is a valid, writable buffer of its length for the call.
    let r = unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) };
    (r == 8).then(|| {
        (
            u32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
            i32::from_ne_bytes([b[4], b[5], b[6], b[7]]),
        )
    })
}

/// `pipe2(O_CLOEXEC | O_NONBLOCK)`: (read end, write end), for the failure report. Called
/// before the fork (it returns owned fds).
pub fn pipe_nonblocking() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for the call.
    check_int(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) })?;
    // SAFETY: both fds were just created by pipe2 and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Sets `no_new_privs` (needed before entering a Landlock domain).
pub fn set_no_new_privs() -> io::Result<()> {
    // SAFETY: prctl with plain integers.
    check_int(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_paths_are_formatted_without_allocating() {
        let mut buf = [0u8; 64];
        assert_eq!(
            proc_path(&mut buf, 4_194_304, b"uid_map").unwrap(),
            c"/proc/4194304/uid_map"
        );
        assert_eq!(
            proc_path(&mut buf, 1, b"ns/user").unwrap(),
            c"/proc/1/ns/user"
        );
        assert!(proc_path(&mut buf, 1, &[b'x'; 60]).is_err());
    }

    #[test]
    fn a_reported_failure_is_read_back_once() {
        use std::os::fd::AsRawFd;
        let (r_owned, w_owned) = pipe_nonblocking().unwrap();
        let (r, w) = (r_owned.as_raw_fd(), w_owned.as_raw_fd());
        assert_eq!(
            read_failure(r),
            None,
            "nothing written: no report, no blocking"
        );
        report_failure(
            w,
            (13 << 16) | 2,
            &io::Error::from_raw_os_error(libc::ENOENT),
        );
        assert_eq!(read_failure(r), Some(((13 << 16) | 2, libc::ENOENT)));
        assert_eq!(read_failure(r), None);
    }
}
