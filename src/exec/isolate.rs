//! Isolation of one run (seed 003 §2.6, §5.2): fresh mount, PID, IPC, UTS and network
//! namespaces, a read-only file system except the directories the user opens, a private
//! `/tmp`, `/dev/shm` and `/run`, the run's own `/proc`, optionally a hidden `$HOME`.
//!
//! Not for: measuring (the cgroup backends do that, unchanged under isolation) or collecting
//! result files (see [`files`]); this module only turns an [`Isolation`] into what the forked
//! child does before exec.
//!
//! How (decided, so that nothing allocates between fork and exec): the parent prepares every
//! path as a C string ([`Prepared::new`]); in the forked child, [`Prepared::enter`] clones
//! into the new namespaces and forks once more, because a new PID namespace applies to
//! children only and a fresh `/proc` must be mounted from inside it:
//!
//! ```text
//! intermediate (host pid tare waits for; maps ids) ── init (PID 1: mounts, lo up, reaps)
//!   ── tool (PID 2: drops privileges, execs)
//! ```
//!
//! Only the tool's process returns from `enter`; it then joins the run's cgroups and execs.
//! So CPU time, peak memory and the task limit cover the tool's whole tree and nothing of the
//! setup (namespaces, mounts, the two helper processes), as in BenchExec; wall time, measured
//! by tare from spawn to the intermediate's exit, does include the setup (see
//! `bench/isolation_overhead.sh` for its size). The tool is not PID 1, so signals behave as
//! usual for it (a PID 1 ignores its own `abort()`). Init reaps orphans, passes the tool's raw
//! wait status up a pipe and exits; the kernel then kills whatever is left in the namespace.
//! The intermediate ends exactly as the tool ended (exit code or signal), so tare's pidfd,
//! limits and kill-all work as without isolation: killing the tool's group makes both helpers
//! exit, and killing the intermediate kills init (parent-death signal) and so the namespace.

//! File system: `/` and every mount below it is made read-only in the run's mount namespace
//! (`mount_setattr`), and each writable directory is re-attached read-write from a clone taken
//! before (`open_tree` + `move_mount`; also works for directories below the private `/tmp`).
//! Kernel overlayfs refuses `/` as a lower layer on this kind of machine, so tare does not
//! offer BenchExec's overlay mode: writes outside writable directories fail with EROFS instead
//! of going to a discarded overlay. Files written to the private `/tmp` (tmpfs) are memory
//! charged to the run's memory cgroup (tmpfs pages are charged to the process that writes
//! them): they count against `--memory-limit` and in peak memory.
//!
//! Identity (threat model: `docs/isolation.md`): every run gets a user namespace. As root, its
//! uid/gid 0 is host [`TOOL_HOST_ID`], an unprivileged id no account uses, and the writable
//! directories are ID-mapped to it (so the tool writes there as root's files, and nowhere
//! else); other users are mapped to themselves. The intermediate, still in the host's
//! namespaces, writes the maps and ID-maps the clones while init waits on a pipe. The tool
//! drops every capability for good before exec (locked securebits, empty bounding set,
//! `no_new_privs`) and, with Landlock ABI ≥ 6, may not reach abstract sockets or signal
//! processes outside the run. Needs Linux ≥ 5.12 (ID-mapped mounts; Landlock scopes ≥ 6.12).

pub mod collect;
pub mod files;
pub mod sweep;
pub mod sys;

use serde::{Deserialize, Serialize};
use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What a run is allowed to reach. The default isolates fully: no network but a private
/// loopback, nothing writable but the work directory, `$HOME` visible (read-only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Isolation {
    /// Keep the host's network (no network namespace).
    pub network: bool,
    /// Directories the run may write to (everything else is read-only).
    pub writable: Vec<PathBuf>,
    /// Directories kept visible (read-only) even below a private directory (`/tmp`, `/run`,
    /// `/dev/shm`, a hidden `$HOME`), e.g. a suite's inputs below /tmp. Others are visible
    /// anyway.
    pub readable: Vec<PathBuf>,
    /// Mount an empty tmpfs over `$HOME`.
    pub hide_home: bool,
    /// Globs, relative to the work directory, of files to keep after the run (used by the
    /// caller through [`files::Workdir::collect`]; exec ignores it).
    pub result_files: Vec<String>,
    /// A per-run directory made writable (the caller creates it and usually makes it the cwd).
    #[serde(skip)]
    pub workdir: Option<PathBuf>,
    /// NUMA nodes to bind the run's memory to (`set_mempolicy(MPOL_BIND)`), if any.
    #[serde(skip)]
    pub memory_nodes: Option<Vec<usize>>,
}

/// Most directories a run may have re-attached (writable ones, and readable ones below a
/// private directory): a fixed array in the child avoids allocating.
pub const MAX_WRITABLE: usize = 32;

/// The host uid and gid an isolated tool runs as when tare is root (uid 0 inside the run's
/// user namespace). No account owns it, so no host file or socket is the tool's own outside
/// its writable directories, which are ID-mapped to it.
pub const TOOL_HOST_ID: u32 = 2_147_483_646;

/// Directories that get a fresh, empty tmpfs in every isolated run.
const PRIVATE_DIRS: [&str; 3] = ["/tmp", "/dev/shm", "/run"];

#[derive(Debug)]
struct WritableDir {
    path: CString,
    /// Re-attached read-write (else read-only).
    write: bool,
    /// Directories to create (parents first) before attaching, when `path` lies below a fresh
    /// tmpfs.
    mkdirs: Vec<CString>,
}

/// A fresh tmpfs of the run and the directories to create for its mount point first (when
/// it lies below another private tmpfs, e.g. a hidden home below /tmp).
#[derive(Debug)]
struct Tmpfs {
    path: CString,
    mkdirs: Vec<CString>,
}

/// The user namespace of a run: how ids are mapped and what the init process does with them.
#[derive(Debug)]
struct Users {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Write "deny" to setgroups first (needed when tare is not root).
    deny_setgroups: bool,
    /// tare is root: the tool becomes uid 0 of the namespace (host [`TOOL_HOST_ID`]), with no
    /// supplementary groups, and writable directories are ID-mapped to it.
    root: bool,
}

/// Setup steps a failure can be reported for (see [`Prepared::failure_report`]); a step on
/// one directory carries its index.
mod step {
    pub const MEMORY: u32 = 1;
    pub const CLONE_DIR: u32 = 2;
    pub const READONLY_DIR: u32 = 3;
    pub const NAMESPACES: u32 = 4;
    pub const MAP_IDS: u32 = 5;
    pub const IDMAP_DIR: u32 = 6;
    pub const IDS: u32 = 7;
    pub const PRIVATE: u32 = 8;
    pub const READONLY_ROOT: u32 = 9;
    pub const TMPFS: u32 = 10;
    pub const MKDIR_TMPFS: u32 = 11;
    pub const MKDIR_DIR: u32 = 12;
    pub const ATTACH_DIR: u32 = 13;
    pub const PROC: u32 = 14;
    pub const LOOPBACK: u32 = 15;
    pub const HOSTNAME: u32 = 16;
    pub const CHDIR: u32 = 17;
    pub const FORK: u32 = 18;
    pub const PRIVILEGES: u32 = 19;
    pub const LANDLOCK: u32 = 20;
    pub const PIPE: u32 = 21;
}

/// An [`Isolation`] turned into C strings and flags before the fork.
#[derive(Debug)]
pub struct Prepared {
    flags: libc::c_int,
    users: Users,
    tmpfs: Vec<Tmpfs>,
    writable: Vec<WritableDir>,
    network: bool,
    cwd: CString,
    memory_mask: Option<Vec<libc::c_ulong>>,
    /// Landlock ABI ≥ 6: scope abstract Unix sockets and signals to the run.
    landlock: bool,
    /// The highest capability number of this kernel (for the bounding set).
    last_cap: u32,
    /// For [`Prepared::check_program`] (root only): the private tmpfs mount points, the
    /// re-attached directories and those of them the tool owns (ID-mapped).
    paths: Option<(Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>)>,
    /// Failure report pipe (read end kept for [`Prepared::failure_report`], write end used by
    /// the child); both close-on-exec.
    report: (OwnedFd, OwnedFd),
}

/// What the parent keeps to explain a failed isolated start (see
/// [`Prepared::failure_report`]).
#[derive(Debug)]
pub struct FailureReport {
    fd: OwnedFd,
    dirs: Vec<PathBuf>,
    tmpfs: Vec<PathBuf>,
    cwd: PathBuf,
}

impl FailureReport {
    /// Turns the error of a failed spawn into one naming the setup step that failed, if the
    /// child reported one; otherwise returns `err` unchanged.
    pub fn explain(&self, err: io::Error) -> io::Error {
        let Some((code, errno)) = sys::read_failure(self.fd.as_raw_fd()) else {
            return err;
        };
        let (kind, i) = (code >> 16, (code & 0xffff) as usize);
        let dir = |v: &[PathBuf]| {
            v.get(i)
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        let what = match kind {
            step::MEMORY => "binding memory to the NUMA nodes".to_string(),
            step::CLONE_DIR => format!("cloning the mount of {}", dir(&self.dirs)),
            step::READONLY_DIR => format!("making {} read-only", dir(&self.dirs)),
            step::NAMESPACES => "creating the user, mount, PID, IPC, UTS and network namespaces"
                .to_string(),
            step::MAP_IDS => "writing the user namespace's uid_map/gid_map".to_string(),
            step::IDMAP_DIR => format!(
                "ID-mapping writable directory {} to the tool's user (its file system must support ID-mapped mounts)",
                dir(&self.dirs)
            ),
            step::IDS => "becoming uid 0 of the user namespace".to_string(),
            step::PRIVATE => "making the mount tree private".to_string(),
            step::READONLY_ROOT => "making / read-only".to_string(),
            step::TMPFS => format!("mounting a private tmpfs on {}", dir(&self.tmpfs)),
            step::MKDIR_TMPFS => format!(
                "creating the mount point {} in the private tmpfs",
                dir(&self.tmpfs)
            ),
            step::MKDIR_DIR => format!(
                "creating the mount point {} in the private tmpfs",
                dir(&self.dirs)
            ),
            step::ATTACH_DIR => format!("attaching {}", dir(&self.dirs)),
            step::PROC => "mounting the run's /proc".to_string(),
            step::LOOPBACK => "bringing up the loopback interface".to_string(),
            step::HOSTNAME => "setting the host name".to_string(),
            step::CHDIR => format!(
                "entering the working directory {} as the isolated tool's unprivileged user",
                self.cwd.display()
            ),
            step::FORK => "forking the run's init or tool process".to_string(),
            step::PRIVILEGES => "dropping capabilities".to_string(),
            step::LANDLOCK => "entering the Landlock domain".to_string(),
            step::PIPE => "creating a pipe".to_string(),
            _ => "setting up".to_string(),
        };
        let os = io::Error::from_raw_os_error(errno);
        io::Error::other(format!("isolation failed while {what}: {os}"))
    }
}

fn cstring(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("path {} contains a NUL byte", p.display()),
        )
    })
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// The directories to create, parents first, so that `path` exists below the fresh tmpfs
/// `base` (nothing when `path` is not below one of `bases`).
fn mkdir_chain(path: &Path, bases: &[PathBuf]) -> io::Result<Vec<CString>> {
    let mut mkdirs = Vec::new();
    if let Some(base) = bases
        .iter()
        .filter(|t| path.starts_with(t) && path != t.as_path())
        .max_by_key(|t| t.as_os_str().len())
    {
        let mut chain: Vec<&Path> = path.ancestors().take_while(|a| a != base).collect();
        chain.reverse();
        for a in chain {
            mkdirs.push(cstring(a)?);
        }
    }
    Ok(mkdirs)
}

/// Checks, for a root tare, that the isolated tool (an unprivileged host user, see
/// [`TOOL_HOST_ID`]) can reach `path`: every directory on the way that is not created fresh
/// in a private tmpfs or owned by the tool must be searchable by others.
fn reachable_by_tool(
    path: &Path,
    what: &str,
    fresh: &[PathBuf],
    owned: &[PathBuf],
) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mut chain: Vec<&Path> = path.ancestors().collect();
    chain.reverse();
    for a in chain {
        if fresh.iter().any(|t| a == t) || owned.iter().any(|w| a.starts_with(w)) {
            continue;
        }
        let Ok(meta) = a.metadata() else { continue };
        if meta.mode() & 0o001 == 0 {
            return Err(invalid(format!(
                "{what} {}: an isolated run executes the tool as an unprivileged user (host uid {TOOL_HOST_ID}), which cannot enter {} (mode {:o}); make it searchable by others (chmod o+x {}) or use a directory elsewhere",
                path.display(),
                a.display(),
                meta.mode() & 0o7777,
                a.display()
            )));
        }
    }
    Ok(())
}

impl Prepared {
    /// Checks the options and prepares everything the child needs. `cwd` is the run's working
    /// directory (tare's own when `None`); `env` the run's environment (for `$HOME`).
    pub fn new(
        iso: &Isolation,
        cwd: Option<&Path>,
        env: &[(OsString, OsString)],
    ) -> io::Result<Self> {
        let mut flags = libc::CLONE_NEWUSER
            | libc::CLONE_NEWNS
            | libc::CLONE_NEWPID
            | libc::CLONE_NEWIPC
            | libc::CLONE_NEWUTS;
        if !iso.network {
            flags |= libc::CLONE_NEWNET;
        }
        let root = sys::is_root();
        let users = if root {
            let id = TOOL_HOST_ID;
            Users {
                uid_map: format!("0 {id} 1\n").into_bytes(),
                gid_map: format!("0 {id} 1\n").into_bytes(),
                deny_setgroups: false,
                root: true,
            }
        } else {
            let (uid, gid) = sys::ids();
            Users {
                uid_map: format!("{uid} {uid} 1\n").into_bytes(),
                gid_map: format!("{gid} {gid} 1\n").into_bytes(),
                deny_setgroups: true,
                root: false,
            }
        };
        let mut tmpfs: Vec<PathBuf> = PRIVATE_DIRS
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.is_dir())
            .collect();
        if iso.hide_home {
            let home = env
                .iter()
                .find(|(k, _)| k == "HOME")
                .map(|(_, v)| PathBuf::from(v))
                .ok_or_else(|| invalid("--hide-home needs HOME in the run's environment".into()))?;
            let home = home.canonicalize().map_err(|e| {
                invalid(format!(
                    "--hide-home: cannot resolve HOME {}: {e}; create it or set HOME to an existing directory",
                    home.display()
                ))
            })?;
            if home == Path::new("/") {
                return Err(invalid(
                    "--hide-home: HOME is /; set HOME to a real home directory".into(),
                ));
            }
            if !tmpfs.contains(&home) {
                tmpfs.push(home);
            }
        }
        // Mount points below another private tmpfs are created in it after it is mounted.
        tmpfs.sort_by_key(|t| t.components().count());
        let mut dirs: Vec<(PathBuf, bool)> = Vec::new();
        let mut readable_canon = Vec::new();
        for r in &iso.readable {
            let canon = r
                .canonicalize()
                .map_err(|e| invalid(format!("readable directory {}: {e}", r.display())))?;
            if tmpfs.iter().any(|t| canon.starts_with(t)) {
                dirs.push((canon.clone(), false));
            }
            readable_canon.push(canon);
        }
        dirs.extend(
            iso.writable
                .iter()
                .chain(&iso.workdir)
                .map(|w| (w.clone(), true)),
        );
        if dirs.len() > MAX_WRITABLE {
            return Err(invalid(format!(
                "{} writable (or hidden readable) directories given; at most {MAX_WRITABLE} are supported",
                dirs.len()
            )));
        }
        let mut writable = Vec::new();
        let mut dir_paths: Vec<PathBuf> = Vec::new();
        let mut owned: Vec<PathBuf> = Vec::new();
        for (d, write) in &dirs {
            let canon = d.canonicalize().map_err(|e| {
                invalid(format!(
                    "writable directory {}: {e}; create it first",
                    d.display()
                ))
            })?;
            if !canon.is_dir() {
                return Err(invalid(format!(
                    "directory {} given to isolation is not a directory",
                    d.display()
                )));
            }
            if root && *write {
                use std::os::unix::fs::MetadataExt;
                let meta = canon.metadata()?;
                if meta.uid() != 0 && meta.mode() & 0o003 != 0o003 {
                    return Err(invalid(format!(
                        "writable directory {} is owned by uid {}: the isolated tool, an unprivileged user to which only root's files are ID-mapped, could not write it; use a directory owned by root or writable by others",
                        d.display(),
                        meta.uid()
                    )));
                }
                owned.push(canon.clone());
            }
            writable.push(WritableDir {
                path: cstring(&canon)?,
                write: *write,
                mkdirs: mkdir_chain(&canon, &tmpfs)?,
            });
            dir_paths.push(canon);
        }
        let cwd = match cwd {
            Some(c) => c.to_path_buf(),
            None => std::env::current_dir()?,
        };
        let cwd = cwd.canonicalize().unwrap_or(cwd);
        let reachable = |p: &Path| {
            !tmpfs.iter().any(|t| p.starts_with(t)) || dir_paths.iter().any(|w| p.starts_with(w))
        };
        if !reachable(&cwd) {
            return Err(invalid(format!(
                "the working directory {} is hidden in isolated runs (private /tmp, /run, /dev/shm or hidden home); run from another directory or make it writable",
                cwd.display()
            )));
        }
        if root {
            // Ancestors below a private tmpfs are created fresh (mode 0755) or are the tmpfs
            // itself (mode 1777): the tool can enter them whatever the host's modes are.
            let fresh = |p: &Path| -> Vec<PathBuf> {
                p.ancestors()
                    .skip(1)
                    .filter(|a| tmpfs.iter().any(|t| a.starts_with(t)))
                    .map(Path::to_path_buf)
                    .collect()
            };
            for r in &readable_canon {
                reachable_by_tool(r, "readable directory", &fresh(r), &owned)?;
            }
            for d in &dir_paths {
                reachable_by_tool(d, "directory", &fresh(d), &owned)?;
            }
            reachable_by_tool(&cwd, "working directory", &fresh(&cwd), &owned)?;
        }
        let memory_mask = iso.memory_nodes.as_ref().map(|nodes| {
            let bits = 8 * std::mem::size_of::<libc::c_ulong>();
            let max = nodes.iter().copied().max().unwrap_or(0);
            let mut mask = vec![0 as libc::c_ulong; max / bits + 1];
            for &n in nodes {
                mask[n / bits] |= 1 << (n % bits);
            }
            mask
        });
        let mut tmpfs_prepared = Vec::new();
        for (i, t) in tmpfs.iter().enumerate() {
            tmpfs_prepared.push(Tmpfs {
                path: cstring(t)?,
                mkdirs: mkdir_chain(t, &tmpfs[..i])?,
            });
        }
        let report = sys::pipe_nonblocking()?;
        let paths = root.then(|| (tmpfs.clone(), dir_paths.clone(), owned.clone()));
        Ok(Prepared {
            paths,
            flags,
            users,
            tmpfs: tmpfs_prepared,
            writable,
            network: iso.network,
            cwd: cstring(&cwd)?,
            memory_mask,
            landlock: sys::landlock_abi() >= 6,
            last_cap: std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(63),
            report,
        })
    }

    /// Checks that the isolated tool can execute `program` (resolved in PATH): visible in
    /// the run's layout and, for a root tare, executable by others on a path others may enter
    /// (the tool is an unprivileged host user). Errors are one line naming the fix.
    pub fn check_program(&self, program: &Path) -> io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let Some((tmpfs, dirs, owned)) = &self.paths else {
            return Ok(());
        };
        let Ok(p) = program.canonicalize() else {
            return Ok(());
        };
        if tmpfs.iter().any(|t| p.starts_with(t)) && !dirs.iter().any(|d| p.starts_with(d)) {
            return Err(invalid(format!(
                "program {} is hidden in isolated runs (private /tmp, /run, /dev/shm or hidden home); install it elsewhere or make its directory --readable",
                p.display()
            )));
        }
        let fresh: Vec<PathBuf> = p
            .ancestors()
            .skip(1)
            .filter(|a| tmpfs.iter().any(|t| a.starts_with(t)))
            .map(Path::to_path_buf)
            .collect();
        if let Some(parent) = p.parent() {
            reachable_by_tool(parent, "program directory", &fresh, owned)?;
        }
        let meta = p.metadata()?;
        if meta.mode() & 0o001 == 0 && !owned.iter().any(|o| p.starts_with(o)) {
            return Err(invalid(format!(
                "program {}: an isolated run executes it as an unprivileged user (host uid {TOOL_HOST_ID}), but it is not executable by others (mode {:o}); chmod o+rx it",
                p.display(),
                meta.mode() & 0o7777
            )));
        }
        Ok(())
    }

    /// What the parent needs to name the step that failed when the spawn fails (the child
    /// reports it through a pipe; std passes on the errno only).
    pub fn failure_report(&self) -> io::Result<FailureReport> {
        let path = |c: &CString| PathBuf::from(std::ffi::OsStr::from_bytes(c.as_bytes()));
        Ok(FailureReport {
            fd: self.report.0.try_clone()?,
            dirs: self.writable.iter().map(|w| path(&w.path)).collect(),
            tmpfs: self.tmpfs.iter().map(|t| path(&t.path)).collect(),
            cwd: path(&self.cwd),
        })
    }

    /// Reports a failed step to the parent and passes the error on.
    fn step<T>(&self, kind: u32, index: usize, r: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &r {
            sys::report_failure(self.report.1.as_raw_fd(), (kind << 16) | index as u32, e);
        }
        r
    }

    /// Enters the isolation. Call in the forked child before exec and before it joins the
    /// run's cgroups. Async-signal-safe: only syscalls on prepared data. In the intermediate
    /// and init processes this never returns (see the module doc); in the tool's process it
    /// returns, with every capability dropped, when the command may join its groups and be
    /// exec'd.
    pub fn enter(&self) -> io::Result<()> {
        if let Some(mask) = &self.memory_mask {
            self.step(step::MEMORY, 0, sys::bind_memory(mask))?;
        }
        // A root tare clones the directories to re-attach here, in the host's mount
        // namespace, so that it can ID-map them; init inherits the clones. Other users may
        // clone mounts only in init's own mount namespace.
        let mut fds = [-1 as libc::c_int; MAX_WRITABLE];
        if self.users.root {
            self.clone_dirs(&mut fds)?;
        }
        let (go_r, go_w) = self.step(step::PIPE, 0, sys::pipe())?;
        let (status_r, status_w) = self.step(step::PIPE, 0, sys::pipe())?;
        let init = self.step(step::NAMESPACES, 0, sys::clone_into(self.flags))?;
        if init > 0 {
            // Intermediate (host namespaces, the pid tare waits for): map the ids of init's
            // user namespace, ID-map the writable directories to the tool, then let init go.
            sys::close(go_r);
            sys::close(status_w);
            if let Err(e) = self.map_ids(init, &fds) {
                sys::kill_child(init);
                sys::wait_for(init);
                return Err(e);
            }
            self.step(step::PIPE, 0, sys::send_byte(go_w))?;
            sys::close_all_but(status_r);
            let status = sys::recv_status(status_r);
            let own = sys::wait_for(init);
            sys::end_like(status.or(own).unwrap_or(127 << 8));
        }
        // Init: PID 1 of the new namespaces, with every capability in its user namespace and
        // none outside it.
        sys::close(go_w);
        sys::close(status_r);
        sys::die_with_parent()?;
        if !sys::recv_byte(go_r) {
            sys::exit(127);
        }
        sys::close(go_r);
        if self.users.root {
            self.step(
                step::IDS,
                0,
                sys::become_ns_root(!self.users.deny_setgroups),
            )?;
        }
        if !self.users.root {
            self.clone_dirs(&mut fds)?;
        }
        self.mount_layout(&fds)?;
        if !self.network {
            self.step(step::LOOPBACK, 0, sys::loopback_up())?;
        }
        self.step(step::HOSTNAME, 0, sys::sethostname(b"tare"))?;
        self.step(step::CHDIR, 0, sys::chdir(&self.cwd))?;
        let tool = self.step(step::FORK, 0, sys::fork())?;
        if tool > 0 {
            sys::close_all_but(status_w);
            while let Some((pid, status)) = sys::wait_any() {
                if pid == tool {
                    sys::send_status(status_w, status);
                    sys::exit(0);
                }
            }
            sys::exit(127);
        }
        // The tool: PID 2. Drops every privilege for good, then execs the command.
        sys::close(status_w);
        self.lock_down()
    }

    /// Clones the mount trees of the directories to re-attach (read-only ones made so).
    fn clone_dirs(&self, fds: &mut [libc::c_int; MAX_WRITABLE]) -> io::Result<()> {
        for (i, (fd, w)) in fds.iter_mut().zip(&self.writable).enumerate() {
            *fd = self.step(step::CLONE_DIR, i, sys::clone_tree(&w.path))?;
            if !w.write {
                self.step(step::READONLY_DIR, i, sys::make_tree_readonly(*fd))?;
            }
        }
        Ok(())
    }

    /// In the intermediate: writes init's uid and gid maps and, for a root tare, ID-maps the
    /// writable directories' clones (root's files there appear as the tool's own).
    fn map_ids(&self, init: libc::pid_t, fds: &[libc::c_int; MAX_WRITABLE]) -> io::Result<()> {
        let u = &self.users;
        if u.deny_setgroups {
            self.step(
                step::MAP_IDS,
                0,
                sys::write_proc_file(init, b"setgroups", b"deny"),
            )?;
        }
        self.step(
            step::MAP_IDS,
            0,
            sys::write_proc_file(init, b"uid_map", &u.uid_map),
        )?;
        self.step(
            step::MAP_IDS,
            0,
            sys::write_proc_file(init, b"gid_map", &u.gid_map),
        )?;
        if u.root && self.writable.iter().any(|w| w.write) {
            let ns = self.step(step::MAP_IDS, 0, sys::open_user_ns(init))?;
            for (i, (fd, w)) in fds.iter().zip(&self.writable).enumerate() {
                if w.write {
                    if let Err(e) = self.step(step::IDMAP_DIR, i, sys::idmap_tree(*fd, ns)) {
                        sys::close(ns);
                        return Err(e);
                    }
                }
            }
            sys::close(ns);
        }
        Ok(())
    }

    /// In the tool: no capability in any namespace, none to regain on exec (locked
    /// securebits, empty bounding set, no_new_privs), and, where the kernel has Landlock
    /// ABI ≥ 6, no abstract Unix socket or signal reaching outside the run.
    fn lock_down(&self) -> io::Result<()> {
        if self.landlock {
            // Landlock needs no_new_privs (set again, harmlessly, in drop_privileges).
            self.step(step::PRIVILEGES, 0, sys::set_no_new_privs())?;
            self.step(step::LANDLOCK, 0, sys::landlock_scope())?;
        }
        self.step(step::PRIVILEGES, 0, sys::drop_privileges(self.last_cap))
    }

    fn mount_layout(&self, fds: &[libc::c_int; MAX_WRITABLE]) -> io::Result<()> {
        self.step(
            step::PRIVATE,
            0,
            sys::mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None),
        )?;
        self.step(step::READONLY_ROOT, 0, sys::make_readonly_recursive(c"/"))?;
        for (i, t) in self.tmpfs.iter().enumerate() {
            for d in &t.mkdirs {
                self.step(step::MKDIR_TMPFS, i, sys::mkdir(d, 0o755))?;
            }
            self.step(
                step::TMPFS,
                i,
                sys::mount(
                    Some(c"tmpfs"),
                    &t.path,
                    Some(c"tmpfs"),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    Some(c"mode=1777"),
                ),
            )?;
        }
        for (i, (fd, w)) in fds.iter().zip(&self.writable).enumerate() {
            for d in &w.mkdirs {
                self.step(step::MKDIR_DIR, i, sys::mkdir(d, 0o755))?;
            }
            self.step(step::ATTACH_DIR, i, sys::attach_tree(*fd, &w.path))?;
            sys::close(*fd);
        }
        self.step(
            step::PROC,
            0,
            sys::mount(
                Some(c"proc"),
                c"/proc",
                Some(c"proc"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
                None,
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writable_below_tmp_gets_mkdirs() {
        let dir = std::env::temp_dir().join(format!("tare-iso-unit-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        let iso = Isolation {
            writable: vec![dir.join("a/b")],
            ..Default::default()
        };
        let p = Prepared::new(&iso, Some(Path::new("/")), &[]).unwrap();
        let canon_tmp = std::env::temp_dir().canonicalize().unwrap();
        if canon_tmp == Path::new("/tmp") {
            assert_eq!(p.writable[0].mkdirs.len(), 3);
        }
        assert!(!p.network);
        assert_ne!(p.flags & libc::CLONE_NEWNET, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_writable_dir_is_one_line() {
        let iso = Isolation {
            writable: vec![PathBuf::from("/nonexistent/tare")],
            ..Default::default()
        };
        let e = Prepared::new(&iso, None, &[]).unwrap_err().to_string();
        assert!(
            e.contains("/nonexistent/tare") && e.contains("create it first"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn hidden_working_directory_is_refused() {
        let e = Prepared::new(&Isolation::default(), Some(Path::new("/tmp")), &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("hidden in isolated runs"), "{e}");
    }

    #[test]
    fn every_run_gets_a_user_namespace_and_root_maps_to_an_unprivileged_id() {
        let p = Prepared::new(&Isolation::default(), Some(Path::new("/")), &[]).unwrap();
        assert_ne!(p.flags & libc::CLONE_NEWUSER, 0);
        if sys::is_root() {
            assert_eq!(
                p.users.uid_map,
                format!("0 {TOOL_HOST_ID} 1\n").into_bytes()
            );
            assert!(p.users.root && !p.users.deny_setgroups);
        } else {
            let (uid, _) = sys::ids();
            assert_eq!(p.users.uid_map, format!("{uid} {uid} 1\n").into_bytes());
            assert!(p.users.deny_setgroups);
        }
    }

    #[test]
    fn a_failed_step_is_named_with_its_directory() {
        let dir = std::env::temp_dir().join(format!("tare-iso-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let iso = Isolation {
            writable: vec![dir.clone()],
            ..Default::default()
        };
        let p = Prepared::new(&iso, Some(Path::new("/")), &[]).unwrap();
        let report = p.failure_report().unwrap();
        let plain = report.explain(io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(
            plain.kind(),
            io::ErrorKind::NotFound,
            "no report: unchanged"
        );
        let _ = p.step::<()>(
            step::ATTACH_DIR,
            0,
            Err(io::Error::from_raw_os_error(libc::ENOENT)),
        );
        let e = report
            .explain(io::Error::from_raw_os_error(libc::ENOENT))
            .to_string();
        assert!(
            e.contains("attaching") && e.contains(&*dir.canonicalize().unwrap().to_string_lossy()),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn network_keeps_host_namespace() {
        let iso = Isolation {
            network: true,
            ..Default::default()
        };
        let p = Prepared::new(&iso, Some(Path::new("/")), &[]).unwrap();
        assert_eq!(p.flags & libc::CLONE_NEWNET, 0);
    }
}
