//! Turns a [`RunSpec`] and its group's [`ChildSetup`] into a [`ChildPlan`] — program resolved
//! in PATH, argv and environment as C strings, stdio and cgroup fds, limits and priority — and
//! starts it with [`sys::spawn_vfork`].
//!
//! Why not `std::process::Command`: any `pre_exec` hook (needed to join the cgroups before
//! exec) makes std fork instead of vfork, and fork copies tare's page tables — a cost that
//! grows with tare's memory and made a run of /bin/true twice as expensive as hyperfine's.

use super::cgroup::ChildSetup;
use super::spec::{Input, Priority, RunSpec, Sink};
use super::sys::{self, ChildPlan, STEP_NAMES};
use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Files the parent keeps open while the child starts (their fds are in the plan).
pub struct Held {
    _files: Vec<File>,
}

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "argument contains a NUL byte"))
}

/// Finds `program` like execvp would, in the run's PATH (tare's own when the run has none).
/// A path with a slash is checked (relative to `cwd`) and returned as given. Errors are
/// `NotFound`, or `PermissionDenied` for a file that is not executable.
pub fn resolve(
    program: &OsStr,
    env: &[(OsString, OsString)],
    cwd: Option<&Path>,
) -> io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| -> io::Result<()> {
        let meta = p.metadata()?;
        if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
            Ok(())
        } else {
            Err(io::Error::from(io::ErrorKind::PermissionDenied))
        }
    };
    if program.as_bytes().contains(&b'/') {
        let p = Path::new(program);
        match cwd {
            Some(c) if p.is_relative() => executable(&c.join(p))?,
            _ => executable(p)?,
        }
        return Ok(PathBuf::from(program));
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os("PATH"));
    let path = path.unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    let mut denied = false;
    for dir in std::env::split_paths(&path) {
        let dir = match cwd {
            Some(c) if dir.is_relative() => c.join(dir),
            _ => dir,
        };
        let candidate = dir.join(program);
        match executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => denied = true,
            Err(_) => {}
        }
    }
    Err(io::Error::from(if denied {
        io::ErrorKind::PermissionDenied
    } else {
        io::ErrorKind::NotFound
    }))
}

fn open_sink(sink: &Sink, files: &mut Vec<File>) -> io::Result<i32> {
    Ok(match sink {
        Sink::Inherit => -1,
        Sink::Null => null_fd()?,
        Sink::File(p) => {
            let f = crate::results::fsio::open_append(p)?;
            let fd = f.as_raw_fd();
            files.push(f);
            fd
        }
    })
}

/// /dev/null, opened once per process and kept (it is opened with O_CLOEXEC, so no command
/// inherits it except through the dup2 onto its stdio).
static DEV_NULL: std::sync::OnceLock<File> = std::sync::OnceLock::new();

fn null_fd() -> io::Result<i32> {
    if let Some(f) = DEV_NULL.get() {
        return Ok(f.as_raw_fd());
    }
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    Ok(DEV_NULL.get_or_init(|| f).as_raw_fd())
}

/// The child's `KEY=value` strings. Runs of a session mostly share one environment, so the
/// last block is kept and reused while the environment is equal: comparing ~40 short pairs is
/// far cheaper than the ~120 allocations of building the block again for every run.
fn environment_block(env: &[(OsString, OsString)]) -> io::Result<Rc<Vec<CString>>> {
    type Cached = Option<(Vec<(OsString, OsString)>, Rc<Vec<CString>>)>;
    thread_local! {
        static LAST: std::cell::RefCell<Cached> = const { std::cell::RefCell::new(None) };
    }
    if let Some(block) = LAST.with(|l| {
        l.borrow()
            .as_ref()
            .filter(|(e, _)| e.as_slice() == env)
            .map(|(_, b)| Rc::clone(b))
    }) {
        return Ok(block);
    }
    let block: Vec<CString> = env
        .iter()
        .map(|(k, v)| {
            let mut kv = k.clone();
            kv.push("=");
            kv.push(v);
            cstring(&kv)
        })
        .collect::<io::Result<_>>()?;
    let block = Rc::new(block);
    LAST.with(|l| *l.borrow_mut() = Some((env.to_vec(), Rc::clone(&block))));
    Ok(block)
}

/// Prepares everything the child needs. The returned [`Held`] must live until the spawn.
pub fn prepare(spec: &RunSpec, setup: &ChildSetup) -> io::Result<(ChildPlan, Held)> {
    let program = spec
        .argv
        .first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let path = resolve(program, &spec.env, spec.cwd.as_deref())?;
    let argv: Vec<CString> = spec
        .argv
        .iter()
        .map(|a| cstring(a))
        .collect::<io::Result<_>>()?;
    let envp = environment_block(&spec.env)?;
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|c| c.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let mut envp_ptrs: Vec<*const libc::c_char> = envp.iter().map(|c| c.as_ptr()).collect();
    envp_ptrs.push(std::ptr::null());

    let mut files = Vec::new();
    let stdin = match &spec.stdin {
        Input::Null => null_fd()?,
        Input::File(p) => {
            let f = File::open(p).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot open input file {}: {e}", p.display()),
                )
            })?;
            let fd = f.as_raw_fd();
            files.push(f);
            fd
        }
    };
    let stdout = open_sink(&spec.stdout, &mut files)?;
    let stderr = open_sink(&spec.stderr, &mut files)?;

    let mut rlimits = Vec::new();
    if let Some(secs) = setup.rlimit_cpu {
        rlimits.push((libc::RLIMIT_CPU, secs, secs + 1));
    }
    if let Some(bytes) = setup.rlimit_as {
        rlimits.push((libc::RLIMIT_AS, bytes, bytes));
    }
    let (nice, fifo) = match spec.priority {
        Priority::Normal => (None, false),
        Priority::High => (Some(-20), false),
        Priority::Realtime { cap_seconds } => {
            let us = cap_seconds.saturating_mul(1_000_000);
            rlimits.push((libc::RLIMIT_RTTIME, us, us.saturating_add(1_000_000)));
            (None, true)
        }
    };
    let plan = ChildPlan {
        path: cstring(path.as_os_str())?,
        argv_ptrs,
        envp_ptrs,
        _argv: argv,
        _envp: envp,
        cwd: spec
            .cwd
            .as_ref()
            .map(|d| cstring(d.as_os_str()))
            .transpose()?,
        stdio: [stdin, stdout, stderr],
        procs_fds: setup.procs_fds.clone(),
        cgroup_fd: setup.cgroup_dir_fd,
        in_cgroup: Default::default(),
        affinity: setup.affinity.clone(),
        rlimits,
        nice,
        fifo,
        aslr_off: spec.aslr_off,
        reset_signals: vec![
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGPIPE,
            libc::SIGHUP,
            libc::SIGQUIT,
        ],
        inherit_fds: spec.inherit_fds.clone(),
        failed: Default::default(),
        join_ns: Default::default(),
    };
    Ok((plan, Held { _files: files }))
}

/// Starts the child; errors say which step failed.
pub fn start(plan: &ChildPlan) -> io::Result<i32> {
    spawn_into_cgroup(plan).map_err(|(step, e)| match step {
        8 => e, // exec: the kind (not found, permission) speaks for itself
        usize::MAX => io::Error::new(e.kind(), format!("clone failed: {e}")),
        s => io::Error::new(
            e.kind(),
            format!(
                "{} failed in the child: {e}",
                STEP_NAMES.get(s).unwrap_or(&"setup")
            ),
        ),
    })
}

/// clone3(CLONE_INTO_CGROUP) when the plan has a cgroup v2 directory and the kernel has it
/// (remembered after the first refusal), else the vfork-style spawn whose child writes itself
/// into its groups (`tasks` on v1, `cgroup.procs` on v2).
fn spawn_into_cgroup(plan: &ChildPlan) -> Result<i32, (usize, io::Error)> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static NO_CLONE3: AtomicBool = AtomicBool::new(false);
    if let Some(fd) = plan
        .cgroup_fd
        .filter(|_| !NO_CLONE3.load(Ordering::Relaxed))
    {
        match sys::spawn_clone3_into(plan, fd) {
            Err((usize::MAX, e))
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOSYS | libc::EINVAL | libc::E2BIG)
                ) =>
            {
                NO_CLONE3.store(true, Ordering::Relaxed);
            }
            r => return r,
        }
    }
    sys::spawn_vfork(plan)
}

#[cfg(test)]
mod tests {
    use super::environment_block;
    use std::ffi::OsString;
    use std::rc::Rc;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    #[test]
    fn the_environment_block_is_reused_only_while_the_environment_is_equal() {
        let a = env(&[("A", "1"), ("B", "2")]);
        let first = environment_block(&a).unwrap();
        assert!(Rc::ptr_eq(&first, &environment_block(&a.clone()).unwrap()));
        let changed = environment_block(&env(&[("A", "1"), ("B", "3")])).unwrap();
        assert!(!Rc::ptr_eq(&first, &changed));
        let text: Vec<_> = changed.iter().map(|c| c.to_str().unwrap()).collect();
        assert_eq!(text, ["A=1", "B=3"]);
        // Back to the first environment: built again, with its own values.
        let again = environment_block(&a).unwrap();
        let text: Vec<_> = again.iter().map(|c| c.to_str().unwrap()).collect();
        assert_eq!(text, ["A=1", "B=2"]);
    }
}
