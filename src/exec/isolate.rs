//! Isolation of one run (seed 003 §2.6, §5.2): fresh mount, PID, IPC, UTS and network
//! namespaces, a read-only file system except the directories the user opens, a private
//! `/tmp`, `/dev/shm` and `/run`, the run's own `/proc`, optionally a hidden `$HOME`.
//!
//! Not for: measuring (the cgroup backends do that, unchanged under isolation) or collecting
//! result files (see [`files`]); this module only turns an [`Isolation`] into what the forked
//! child does before exec.
//!
//! How (decided, so that nothing allocates between fork and exec): the parent prepares every
//! path as a C string ([`Prepared::new`]); in the forked child, [`Prepared::enter`] calls
//! `unshare` and forks twice more, because a new PID namespace applies to children only and a
//! fresh `/proc` must be mounted from inside it:
//!
//! ```text
//! intermediate (host pid tare waits for) ── init (PID 1: mounts, lo up, reaps) ── tool (PID 2)
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
//! Root uses no user namespace; other users get one mapping their own uid and gid (not tested
//! in CI, which runs as root). Needs Linux ≥ 5.12.

pub mod files;
pub mod sys;

use serde::{Deserialize, Serialize};
use std::ffi::{CString, OsString};
use std::io;
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

/// An [`Isolation`] turned into C strings and flags before the fork.
#[derive(Debug)]
pub struct Prepared {
    flags: libc::c_int,
    /// uid_map and gid_map contents when a user namespace is needed (not root).
    user_maps: Option<(Vec<u8>, Vec<u8>)>,
    tmpfs: Vec<CString>,
    writable: Vec<WritableDir>,
    network: bool,
    cwd: CString,
    memory_mask: Option<Vec<libc::c_ulong>>,
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

impl Prepared {
    /// Checks the options and prepares everything the child needs. `cwd` is the run's working
    /// directory (tare's own when `None`); `env` the run's environment (for `$HOME`).
    pub fn new(
        iso: &Isolation,
        cwd: Option<&Path>,
        env: &[(OsString, OsString)],
    ) -> io::Result<Self> {
        let mut flags =
            libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
        if !iso.network {
            flags |= libc::CLONE_NEWNET;
        }
        let user_maps = if sys::is_root() {
            None
        } else {
            flags |= libc::CLONE_NEWUSER;
            let (uid, gid) = sys::ids();
            Some((
                format!("{uid} {uid} 1\n").into_bytes(),
                format!("{gid} {gid} 1\n").into_bytes(),
            ))
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
                    "--hide-home: cannot resolve HOME {}: {e}",
                    home.display()
                ))
            })?;
            if home == Path::new("/") {
                return Err(invalid(
                    "--hide-home: HOME is /; set HOME to a real home directory".into(),
                ));
            }
            tmpfs.push(home);
        }
        let mut dirs: Vec<(PathBuf, bool)> = Vec::new();
        for r in &iso.readable {
            let canon = r
                .canonicalize()
                .map_err(|e| invalid(format!("readable directory {}: {e}", r.display())))?;
            if tmpfs.iter().any(|t| canon.starts_with(t)) {
                dirs.push((canon, false));
            }
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
        let mut writable_paths: Vec<PathBuf> = Vec::new();
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
            let mut mkdirs = Vec::new();
            if let Some(base) = tmpfs
                .iter()
                .filter(|t| canon.starts_with(t))
                .max_by_key(|t| t.as_os_str().len())
            {
                let mut chain: Vec<&Path> = canon.ancestors().take_while(|a| a != base).collect();
                chain.reverse();
                for a in chain {
                    mkdirs.push(cstring(a)?);
                }
            }
            writable.push(WritableDir {
                path: cstring(&canon)?,
                write: *write,
                mkdirs,
            });
            writable_paths.push(canon);
        }
        let cwd = match cwd {
            Some(c) => c.to_path_buf(),
            None => std::env::current_dir()?,
        };
        let cwd = cwd.canonicalize().unwrap_or(cwd);
        let reachable = |p: &Path| {
            !tmpfs.iter().any(|t| p.starts_with(t))
                || writable_paths.iter().any(|w| p.starts_with(w))
        };
        if !reachable(&cwd) {
            return Err(invalid(format!(
                "the working directory {} is hidden in isolated runs (private /tmp, /run, /dev/shm or hidden home); run from another directory or make it writable",
                cwd.display()
            )));
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
        Ok(Prepared {
            flags,
            user_maps,
            tmpfs: tmpfs
                .iter()
                .map(|p| cstring(p))
                .collect::<io::Result<_>>()?,
            writable,
            network: iso.network,
            cwd: cstring(&cwd)?,
            memory_mask,
        })
    }

    /// Enters the isolation. Call in the forked child before exec and before it joins the
    /// run's cgroups. Async-signal-safe: only syscalls on prepared data. In the intermediate
    /// and init processes this never returns (see the module doc); in the tool's process it
    /// returns when the command may join its groups and be exec'd.
    pub fn enter(&self) -> io::Result<()> {
        sys::unshare(self.flags)?;
        if let Some((uid_map, gid_map)) = &self.user_maps {
            sys::write_file(c"/proc/self/setgroups", b"deny")?;
            sys::write_file(c"/proc/self/uid_map", uid_map)?;
            sys::write_file(c"/proc/self/gid_map", gid_map)?;
        }
        if let Some(mask) = &self.memory_mask {
            sys::bind_memory(mask)?;
        }
        let (status_r, status_w) = sys::pipe()?;
        let init = sys::fork()?;
        if init > 0 {
            // Intermediate (host PID namespace, the pid tare waits for).
            sys::close_all_but(status_r);
            let status = sys::recv_status(status_r);
            let own = sys::wait_for(init);
            sys::end_like(status.or(own).unwrap_or(127 << 8));
        }
        // Init: PID 1 of the new namespace.
        sys::close(status_r);
        sys::die_with_parent()?;
        self.mount_layout()?;
        if !self.network {
            sys::loopback_up()?;
        }
        sys::sethostname(b"tare")?;
        sys::chdir(&self.cwd)?;
        let tool = sys::fork()?;
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
        // The tool: PID 2, execs the command.
        sys::close(status_w);
        Ok(())
    }

    fn mount_layout(&self) -> io::Result<()> {
        sys::mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)?;
        let mut fds = [-1 as libc::c_int; MAX_WRITABLE];
        for (fd, w) in fds.iter_mut().zip(&self.writable) {
            *fd = sys::clone_tree(&w.path)?;
            if !w.write {
                sys::make_tree_readonly(*fd)?;
            }
        }
        sys::make_readonly_recursive(c"/")?;
        for t in &self.tmpfs {
            sys::mount(
                Some(c"tmpfs"),
                t,
                Some(c"tmpfs"),
                libc::MS_NOSUID | libc::MS_NODEV,
                Some(c"mode=1777"),
            )?;
        }
        for (fd, w) in fds.iter().zip(&self.writable) {
            for d in &w.mkdirs {
                sys::mkdir(d, 0o755)?;
            }
            sys::attach_tree(*fd, &w.path)?;
            sys::close(*fd);
        }
        sys::mount(
            Some(c"proc"),
            c"/proc",
            Some(c"proc"),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            None,
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
    fn network_keeps_host_namespace() {
        let iso = Isolation {
            network: true,
            ..Default::default()
        };
        let p = Prepared::new(&iso, Some(Path::new("/")), &[]).unwrap();
        assert_eq!(p.flags & libc::CLONE_NEWNET, 0);
    }
}
