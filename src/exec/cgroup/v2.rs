//! cgroup v2 backend: run groups below a subtree of the unified hierarchy that tare sets up
//! once per process and leaves exactly as it found it.
//!
//! CPU time: `cpu.stat` `user_usec` / `system_usec` (core accounting, always present).
//! Peak memory: `memory.peak` (Linux ≥ 5.19, memory controller enabled); otherwise none, with
//! the reason.
//!
//! Which group a run gets: making and removing a cgroup costs more kernel time than spawning
//! `/bin/true` (measured on a 16-vCPU cgroup v2 VM, it was most of tare's per-run cost above
//! `hyperfine -N`), so runs share one group per core set, as on cgroup v1, wherever that gives
//! the same numbers: CPU time is the rise of `cpu.stat` across the run, and the peak is the
//! rise of `memory.peak` above the charge at the run's start, the mark having been reset
//! through tare's open descriptor of it (a write resets it for that descriptor: Linux ≥ 6.12).
//! A run gets a fresh group of its own when it has a memory or task limit (the limit must
//! count it alone), reads its group's own files (`--io`'s `io.stat`, `--memory-high`, a memory
//! timeline), or where `memory.peak` cannot be reset. Limits: `memory.max` + `memory.swap.max` = 0 (so the limit is memory + swap),
//! `pids.max`, `cpuset.cpus` (CPU affinity when cpuset is not tare's). Kill: `cgroup.kill`
//! (Linux ≥ 5.14), else freeze with `cgroup.freeze` and SIGKILL every member. The child is
//! started in its group with clone3(CLONE_INTO_CGROUP) (see `spawn`).
//!
//! Where the subtree comes from ([`decide`]): the kernel refuses domain controllers (memory)
//! in a non-root cgroup that holds processes, and enabling a threaded one (pids, cpuset) there
//! turns it "domain threaded" for good. So tare never enables a controller in a cgroup with
//! processes, and never in one it did not create unless it emptied it itself:
//! - tare alone in its delegated cgroup B (`systemd-run --scope -p Delegate=yes tare …`, a
//!   service with `Delegate=yes`): `B/tare-<id>/supervisor` gets tare (the whole process), B
//!   and `B/tare-<id>` get the controllers, run groups are `B/tare-<id>/tare-…`; at exit the
//!   controllers come off, tare moves back into B, and the directories are removed;
//! - `TARE_CGROUP_PARENT=P`: run groups in `P/tare-<id>/`; P gets controllers only if empty;
//! - root, not alone: run groups in `tare-<id>/` at the root of the hierarchy;
//! - tare's cgroup is a container's cgroup namespace root, or delegated to it, and holds other
//!   processes: they move into its leaf `init` ([`super::adopt`]), where they keep running,
//!   then as beside it; likewise the delegated parent of `TARE_CGROUP_PARENT` when its
//!   processes keep it from passing controllers down;
//! - otherwise a writable cgroup with other processes: CPU time and kill only, with the hint.
//!
//! A cgroup2 mount that is read-only (a container's default) is mounted once more read-write
//! for the session when tare may ([`super::mount`]); every hint names the change for the place
//! tare runs in ([`super::place`]).
//!
//! After a SIGKILL, the next start removes unpopulated `tare-*/supervisor` trees it finds.

use super::{
    cgroup_mounts, group_name, keyed_value, own_cgroup, read_pids, read_trimmed,
    remove_dir_retrying, write_file, Accounting, Backend, ChildSetup, Needs, RunGroup,
};
use crate::exec::spec::Limits;
use crate::exec::sys::{self, Rusage};
use crate::results::{MeasurementMethod, MethodKind};
use std::cell::{Cell, RefCell};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

mod shared;
use shared::{Shared, SharedRun};

/// The v2 backend of one thread: a handle on the process-wide [`Subtree`], and the group its
/// runs share.
#[derive(Debug)]
pub struct V2 {
    subtree: Arc<Subtree>,
    /// The group runs of one core set share (see the module docs), made on the first run.
    shared: RefCell<Option<Rc<Shared>>>,
    /// Whether a shared group works here (`memory.peak` resettable), learnt on the first try.
    shareable: Cell<Option<bool>>,
}

/// The one change that gets a user a usable subtree where tare runs (a container's flags, a
/// delegated systemd scope, …), with the page that lists every layout.
pub fn howto() -> &'static str {
    super::place::here()
}

/// What discovery saw of the cgroup it starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// The base directory is writable by tare (it may create cgroups in it).
    pub writable: bool,
    /// Pids in the base's `cgroup.procs`.
    pub procs: Vec<i32>,
    /// tare's own pid.
    pub own_pid: i32,
    /// The base is tare's own cgroup (not `TARE_CGROUP_PARENT`).
    pub own_cgroup: bool,
    /// The base is the root of the hierarchy.
    pub is_root: bool,
    /// `cgroup.type` of the base ("domain" when the file is missing, as at the root).
    pub cgroup_type: String,
    /// Running as root (euid 0).
    pub euid_root: bool,
    /// The base carries systemd's delegation mark (xattr `trusted.delegate` / `user.delegate`).
    pub delegated: bool,
    /// The root of the hierarchy is writable (root may create groups there).
    pub hierarchy_root_writable: bool,
    /// The base is the root of a cgroup namespace (a container's cgroup): tare's own cgroup,
    /// the mounted hierarchy's root, and not the real root.
    pub ns_root: bool,
    /// `TARE_CGROUP_PARENT` only: a controller tare needs is not available in the base (its
    /// parent does not pass it down).
    pub missing: bool,
    /// `TARE_CGROUP_PARENT` only: what discovery saw of the base's parent.
    pub parent: Option<ParentSeen>,
}

/// The parent of a `TARE_CGROUP_PARENT` directory, which may hold processes that keep it from
/// passing controllers down (a user's delegated scope holding their shell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentSeen {
    pub dir: PathBuf,
    pub writable: bool,
    /// Carries systemd's delegation mark, or is a cgroup namespace root.
    pub delegated: bool,
    /// The real root of the hierarchy, or not a plain domain cgroup: never rearranged.
    pub untouchable: bool,
}

/// Where run groups go, decided from what discovery saw ([`decide`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// tare is the only process of its (delegated) cgroup B: it makes `B/tare-<id>/supervisor`,
    /// moves itself there, and creates run groups as siblings of the supervisor leaf. B, now
    /// empty, may get the controllers tare needs; they are taken off again at exit.
    Supervised,
    /// tare is not in the base (`TARE_CGROUP_PARENT`, or the hierarchy root for root): run groups
    /// go into `base/tare-<id>/`; controllers are enabled in the base only when it holds no
    /// process (and only where missing), and taken off again at exit.
    Beside { base: PathBuf },
    /// `clear` does not pass controllers down (where it holds processes, they keep them from
    /// being enabled), and it is tare's to
    /// rearrange (a container's cgroup namespace root, a delegated cgroup): its processes move
    /// into its leaf `clear/init` (see [`super::adopt`]), where they keep running; then as
    /// [`Layout::Beside`]. `clear` is the base itself, or the parent of `TARE_CGROUP_PARENT`.
    Adopt { clear: PathBuf, base: PathBuf },
    /// The base is writable but holds other processes: run groups go into `base/tare-<id>/`
    /// with no controller (CPU time and kill only); nothing is enabled anywhere.
    Unmanaged,
}

/// Chooses the layout, or says in one line why none is usable. `base` is the starting
/// directory, `hierarchy_root` the mount point of the unified hierarchy.
pub fn decide(base: &Path, hierarchy_root: &Path, o: &Observed) -> Result<Layout, String> {
    let threaded = o.cgroup_type != "domain";
    if !o.own_cgroup {
        if !o.writable {
            return Err(format!(
                "no permission to create cgroups in {} (TARE_CGROUP_PARENT); {}",
                base.display(),
                howto()
            ));
        }
        if let Some(p) = o.parent.as_ref().filter(|_| o.missing) {
            let mine = p.delegated || !o.euid_root;
            if p.writable && mine && !p.untouchable {
                return Ok(Layout::Adopt {
                    clear: p.dir.clone(),
                    base: base.to_path_buf(),
                });
            }
        }
        return Ok(Layout::Beside {
            base: base.to_path_buf(),
        });
    }
    let alone = !o.procs.is_empty() && o.procs.iter().all(|&p| p == o.own_pid);
    // A user's writable cgroup is delegated to them; root can write anywhere, so for root only
    // systemd's delegation mark counts.
    let ours = o.writable && (o.delegated || !o.euid_root);
    if ours && alone && !o.is_root && !threaded {
        return Ok(Layout::Supervised);
    }
    if o.euid_root && o.hierarchy_root_writable && !o.ns_root {
        return Ok(Layout::Beside {
            base: hierarchy_root.to_path_buf(),
        });
    }
    if o.writable && !o.is_root && !threaded && (ours || o.ns_root) {
        return Ok(Layout::Adopt {
            clear: base.to_path_buf(),
            base: base.to_path_buf(),
        });
    }
    if o.writable {
        return Ok(Layout::Unmanaged);
    }
    Err(format!(
        "no permission to create cgroups in {}; {}",
        base.display(),
        howto()
    ))
}

impl V2 {
    /// Finds a usable subtree: `TARE_CGROUP_PARENT`, or this process's own cgroup. The subtree
    /// is set up once per process and shared by every thread's backend.
    pub fn discover(root: &Path, needs: &Needs) -> io::Result<V2> {
        let mounts = cgroup_mounts(root)?;
        let mount = mounts
            .iter()
            .find(|(fs, _, _)| fs == "cgroup2")
            .map(|(_, mp, _)| root.join(mp.trim_start_matches('/')));
        let (base, own) = match std::env::var_os("TARE_CGROUP_PARENT") {
            Some(p) => (PathBuf::from(p), false),
            None => {
                let mount = mount.clone().ok_or_else(|| {
                    io::Error::new(io::ErrorKind::NotFound, "no cgroup2 file system is mounted")
                })?;
                let own = own_cgroup(root, None)?;
                (mount.join(own.trim_start_matches('/')), true)
            }
        };
        // A read-only mount (a container's default) is worked around only for tare's own
        // cgroup, and only when tare could not write there anyway.
        let read_only = own
            && mounts
                .iter()
                .find(|(fs, _, _)| fs == "cgroup2")
                .is_some_and(|(_, mp, _)| super::mount::read_only(root, mp));
        let hierarchy_root = mount.unwrap_or_else(|| base.clone());
        Self::at_with(&base, &hierarchy_root, own, read_only, needs)
    }

    /// Uses `parent` as the subtree's base, with tare not in it (like `TARE_CGROUP_PARENT`).
    pub fn at(parent: &Path, needs: &Needs) -> io::Result<V2> {
        Self::at_with(parent, parent, false, false, needs)
    }

    fn at_with(
        base: &Path,
        hierarchy_root: &Path,
        own: bool,
        read_only: bool,
        needs: &Needs,
    ) -> io::Result<V2> {
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        shared.retain(|(_, w)| w.strong_count() > 0);
        if let Some(s) = shared
            .iter()
            .find(|(b, _)| b == base)
            .and_then(|(_, w)| w.upgrade())
        {
            s.check(needs)?;
            return Ok(V2::on(s));
        }
        let s = Arc::new(Subtree::set_up(
            base,
            hierarchy_root,
            own,
            read_only,
            needs,
        )?);
        s.check(needs)?;
        shared.push((base.to_path_buf(), Arc::downgrade(&s)));
        Ok(V2::on(s))
    }

    fn on(subtree: Arc<Subtree>) -> V2 {
        V2 {
            subtree,
            shared: RefCell::new(None),
            shareable: Cell::new(None),
        }
    }

    fn has(&self, c: &str) -> bool {
        self.subtree.has(c)
    }

    /// The directory run groups are created in.
    pub fn parent(&self) -> &Path {
        &self.subtree.parent
    }
}

/// The process-wide subtree of each base (suite slots each detect a backend in their own
/// thread, and tare moves itself into a supervisor leaf only once).
static SHARED: Mutex<Vec<(PathBuf, Weak<Subtree>)>> = Mutex::new(Vec::new());

/// What tare set up in the unified hierarchy for this process, undone when the last backend
/// using it is dropped.
#[derive(Debug)]
struct Subtree {
    /// Where run groups are created (`tare-<id>/`).
    parent: PathBuf,
    /// The leaf tare moved itself into, and the cgroup it came from.
    supervisor: Option<(PathBuf, PathBuf)>,
    /// Controllers tare enabled in cgroups it did not create: (cgroup, controller).
    borrowed: Vec<(PathBuf, String)>,
    /// Controllers enabled for the run groups.
    controllers: Vec<String>,
    warnings: Vec<String>,
    /// The read-write cgroup2 mount tare made for the session (dropped, so detached, last).
    _mount: Option<super::mount::PrivateMount>,
}

fn observe(base: &Path, hierarchy_root: &Path, own: bool, wanted: &[&str]) -> io::Result<Observed> {
    if !base.join("cgroup.procs").exists() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} is not a cgroup2 directory", base.display()),
        ));
    }
    let is_root = !base.join("cgroup.type").exists();
    Ok(Observed {
        writable: sys::writable(base),
        procs: read_pids(&base.join("cgroup.procs"))?,
        own_pid: std::process::id() as i32,
        own_cgroup: own,
        is_root,
        cgroup_type: if is_root {
            "domain".into()
        } else {
            read_trimmed(&base.join("cgroup.type"))?
        },
        euid_root: sys::euid() == 0,
        delegated: sys::has_xattr(base, c"trusted.delegate")
            || sys::has_xattr(base, c"user.delegate"),
        hierarchy_root_writable: sys::writable(hierarchy_root),
        ns_root: own && !is_root && base == hierarchy_root,
        missing: !own && {
            let have = words(&base.join("cgroup.controllers")).unwrap_or_default();
            !wanted.iter().all(|w| have.iter().any(|h| h == w))
        },
        parent: if own {
            None
        } else {
            base.parent()
                .filter(|p| p.join("cgroup.procs").exists())
                .map(|p| observe_parent(p, hierarchy_root))
        },
    })
}

fn observe_parent(dir: &Path, hierarchy_root: &Path) -> ParentSeen {
    let is_root = !dir.join("cgroup.type").exists();
    let domain = read_trimmed(&dir.join("cgroup.type")).is_ok_and(|t| t == "domain");
    ParentSeen {
        dir: dir.to_path_buf(),
        writable: sys::writable(dir),
        delegated: sys::has_xattr(dir, c"trusted.delegate")
            || sys::has_xattr(dir, c"user.delegate")
            || (dir == hierarchy_root && !is_root),
        untouchable: is_root || !domain,
    }
}

/// Mounts cgroup2 read-write for the session when tare's cgroup is on a read-only mount
/// (see [`super::mount`]); returns the base and hierarchy root on the new mount.
fn read_write_view(
    base: &Path,
    hierarchy_root: &Path,
) -> io::Result<(PathBuf, PathBuf, super::mount::PrivateMount)> {
    let ro = || {
        format!(
            "the cgroup2 file system at {} is mounted read-only",
            hierarchy_root.display()
        )
    };
    if sys::euid() != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}; {}", ro(), howto()),
        ));
    }
    let dir = crate::lock::runtime_dir()
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{}: tare's runtime directory is not usable; {}",
                    ro(),
                    howto()
                ),
            )
        })?
        .join(format!("cgroup2.{}", super::lease::session_id()));
    let m = super::mount::PrivateMount::new(dir).map_err(|e| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} and tare cannot mount it read-write ({e}); {}",
                ro(),
                howto()
            ),
        )
    })?;
    let rel = base.strip_prefix(hierarchy_root).unwrap_or(Path::new(""));
    Ok((m.dir.join(rel), m.dir.clone(), m))
}

fn words(path: &Path) -> io::Result<Vec<String>> {
    Ok(read_trimmed(path)?
        .split_whitespace()
        .map(String::from)
        .collect())
}

impl Subtree {
    fn set_up(
        base: &Path,
        hierarchy_root: &Path,
        own: bool,
        read_only: bool,
        needs: &Needs,
    ) -> io::Result<Subtree> {
        let howto = howto();
        let mut wanted = vec!["memory"];
        if needs.pids {
            wanted.push("pids");
        }
        if needs.cpuset {
            wanted.push("cpuset");
        }
        let mut mount = None;
        let mut notes = Vec::new();
        let (base, hierarchy_root) = if read_only && !sys::writable(base) {
            let (b, h, m) = read_write_view(base, hierarchy_root)?;
            notes.push(format!(
                "the cgroup2 file system at {} is mounted read-only; tare mounted it read-write at {} for this session",
                hierarchy_root.display(),
                m.dir.display()
            ));
            mount = Some(m);
            (b, h)
        } else {
            (base.to_path_buf(), hierarchy_root.to_path_buf())
        };
        let (base, hierarchy_root) = (base.as_path(), hierarchy_root.as_path());
        let seen = observe(base, hierarchy_root, own, &wanted)?;
        let layout = decide(base, hierarchy_root, &seen)
            .map_err(|m| io::Error::new(io::ErrorKind::PermissionDenied, m))?;
        let outer = match &layout {
            Layout::Beside { base } | Layout::Adopt { base, .. } => base.clone(),
            Layout::Supervised | Layout::Unmanaged => base.to_path_buf(),
        };
        // Groups of kill -9'ed sessions (their lease is free): their processes killed, the
        // groups removed; then helper directories left empty.
        let swept = super::lease::sweep(&outer);
        super::lease::forget_stale_locks();
        sweep(&outer);
        let container = outer.join(group_name());
        make_dir(&container)?;
        let mut s = Subtree {
            parent: container.clone(),
            supervisor: None,
            borrowed: Vec::new(),
            controllers: Vec::new(),
            warnings: notes,
            _mount: mount,
        };
        if swept.groups > 0 {
            s.warnings.push(format!(
                "removed {} cgroups left by killed tare sessions ({} of their processes killed)",
                swept.groups, swept.processes
            ));
        }
        match layout {
            Layout::Supervised => {
                let leaf = container.join("supervisor");
                make_dir(&leaf)?;
                s.supervisor = Some((leaf.clone(), base.to_path_buf()));
                // cgroup.procs moves the whole process, every thread of it.
                write_file(&leaf.join("cgroup.procs"), &std::process::id().to_string())?;
                s.enable(base, &wanted, true);
                s.enable(&container, &wanted, false);
            }
            Layout::Adopt { clear, base: outer } => {
                match super::adopt::move_to_leaf(&clear) {
                    Ok(moved) => {
                        if !moved.processes.is_empty() {
                            s.warnings.push(moved.describe());
                        }
                        s.enable(&clear, &wanted, true);
                    }
                    Err(e) => s.warnings.push(format!("{e}; {howto}")),
                }
                if outer != clear {
                    let empty = read_pids(&outer.join("cgroup.procs"))?.is_empty();
                    s.enable(&outer, &wanted, empty);
                }
                s.enable(&container, &wanted, false);
            }
            Layout::Beside { base: outer } => {
                let empty = read_pids(&outer.join("cgroup.procs"))?.is_empty();
                // Enabling a controller where processes live would change the cgroup's type
                // (threaded ones) or fail (domain ones); the root is exempt but not ours.
                let may_change = empty && outer.join("cgroup.type").exists();
                s.enable(&outer, &wanted, may_change);
                s.enable(&container, &wanted, false);
            }
            Layout::Unmanaged => {
                s.warnings.push(format!(
                    "{} holds other processes, so tare enables no controller there (no peak memory, \
                     no memory or task limit); {howto}",
                    base.display()
                ));
            }
        }
        Ok(s)
    }

    /// Enables `wanted` controllers in `dir` (that tare created, or that has no process when
    /// `borrow` is set: what tare enables there is recorded and taken off at exit).
    fn enable(&mut self, dir: &Path, wanted: &[&str], borrow: bool) {
        let howto = howto();
        let available = words(&dir.join("cgroup.controllers")).unwrap_or_default();
        let subtree = dir.join("cgroup.subtree_control");
        let enabled = words(&subtree).unwrap_or_default();
        let created = dir.starts_with(&self.parent);
        // Without cpuset the run is pinned with CPU affinity instead: no warning for it.
        let mut warn = |w: String, c: &str| {
            if c != "cpuset" {
                self.warnings.push(w);
            }
        };
        let mut enabled_now = Vec::new();
        for &c in wanted {
            if enabled.iter().any(|e| e == c) {
                if created {
                    enabled_now.push((c, true));
                }
                continue;
            }
            if !available.iter().any(|a| a == c) {
                // The parent does not pass it down: name what is in the way, where it is
                // processes, else the change for this place.
                let why = dir
                    .parent()
                    .filter(|_| !created)
                    .and_then(|p| super::adopt::blocked_by(p, wanted))
                    .unwrap_or_else(|| howto.to_string());
                warn(
                    format!(
                        "cgroup v2 controller '{c}' is not available in {}; {why}",
                        dir.display()
                    ),
                    c,
                );
                continue;
            }
            if !created && !borrow {
                warn(
                    format!(
                        "cgroup v2 controller '{c}' is not enabled in {} and tare does not change a cgroup it did not create while it holds processes; {howto}",
                        dir.display()
                    ),
                    c,
                );
                continue;
            }
            if !created && !read_pids(&dir.join("cgroup.procs")).is_ok_and(|p| p.is_empty()) {
                warn(
                    format!(
                        "cgroup v2 controller '{c}' is not enabled in {}, which holds processes; {howto}",
                        dir.display()
                    ),
                    c,
                );
                continue;
            }
            match write_file(&subtree, &format!("+{c}")) {
                Ok(()) => enabled_now.push((c, created)),
                Err(e) => warn(format!("cannot enable cgroup v2 controller '{c}': {e}"), c),
            }
        }
        for (c, created) in enabled_now {
            if created {
                self.controllers.push(c.to_string());
            } else {
                self.borrowed.push((dir.to_path_buf(), c.to_string()));
            }
        }
    }

    fn has(&self, c: &str) -> bool {
        self.controllers.iter().any(|e| e == c)
    }

    /// Fails when a controller the session needs is missing (pids: a task limit cannot be
    /// enforced otherwise). A missing cpuset is replaced by CPU affinity.
    fn check(&self, needs: &Needs) -> io::Result<()> {
        let howto = howto();
        if needs.pids && !self.has("pids") {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "cgroup v2 controller 'pids' is needed for --pids-limit but not usable in {}; {howto}",
                    self.parent.display()
                ),
            ));
        }
        Ok(())
    }

    /// Undoes the set-up: leftover run groups killed and removed, controllers taken off,
    /// tare moved back where it came from, the helper directories removed.
    fn tear_down(&mut self) {
        if let Ok(entries) = std::fs::read_dir(&self.parent) {
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() && self.supervisor.as_ref().is_none_or(|(l, _)| *l != p) {
                    let _ = remove_tree(&p);
                }
            }
        }
        let sub = self.parent.join("cgroup.subtree_control");
        for c in self.controllers.iter().rev() {
            let _ = write_file(&sub, &format!("-{c}"));
        }
        for (dir, c) in self.borrowed.iter().rev() {
            let _ = write_file(&dir.join("cgroup.subtree_control"), &format!("-{c}"));
        }
        if let Some((leaf, home)) = self.supervisor.take() {
            // Back home when it still takes processes; otherwise tare stays in its leaf until
            // it exits, and the next start sweeps the empty directories.
            if write_file(&home.join("cgroup.procs"), &std::process::id().to_string()).is_ok() {
                let _ = remove_dir_retrying(&leaf);
            }
        }
        let _ = remove_dir_retrying(&self.parent);
    }
}

impl Drop for Subtree {
    fn drop(&mut self) {
        self.tear_down();
    }
}

fn make_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir(dir).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot create cgroup {}: {e}", dir.display()),
        )
    })
}

/// Kills what is left in a cgroup tree and removes it, deepest first.
fn remove_tree(dir: &Path) -> io::Result<()> {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&e.path())?;
            }
        }
    }
    if !read_pids(&dir.join("cgroup.procs"))
        .unwrap_or_default()
        .is_empty()
    {
        let _ = write_file(&dir.join("cgroup.kill"), "1");
    }
    remove_dir_retrying(dir)
}

/// Removes helper directories that a tare killed with SIGKILL left behind in `dir`:
/// `tare-*` directories with a `supervisor` leaf and no process anywhere below them (a live
/// session always has itself in its supervisor leaf).
fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let named = e.file_name().to_string_lossy().starts_with("tare-");
        if !named || !p.join("supervisor").is_dir() {
            continue;
        }
        let populated = std::fs::read_to_string(p.join("cgroup.events"))
            .ok()
            .and_then(|s| keyed_value(&s, "populated"));
        if populated == Some(0) {
            let _ = remove_tree(&p);
        }
    }
}

impl Backend for V2 {
    fn kind(&self) -> MethodKind {
        MethodKind::CgroupV2
    }

    fn method(&self) -> MeasurementMethod {
        let howto = howto();
        let mut warnings = self.subtree.warnings.clone();
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let peak = if self.has("memory") && !kernel_has_memory_peak(release.trim()) {
            warnings.push(format!(
                "peak memory is not measured: Linux {} has no cgroup v2 memory.peak (added in 5.19), and a sampled \
                 value would not be exact",
                release.trim()
            ));
            "not measured (no memory.peak before Linux 5.19)".to_string()
        } else if self.has("memory") {
            "peak memory + page cache of the whole tree (cgroup v2 memory.peak)".to_string()
        } else {
            warnings.push(format!(
                "peak memory is not measured: the memory controller is not enabled; {howto}"
            ));
            "not measured (memory controller not enabled in the delegated cgroup)".to_string()
        };
        MeasurementMethod {
            kind: MethodKind::CgroupV2,
            cpu_time: "user and system CPU time of the whole process tree, children never waited for and killed \
                       ones included (cgroup v2 cpu.stat user_usec/system_usec, microseconds)"
                .into(),
            peak_memory: peak,
            wall_time: "CLOCK_MONOTONIC from just before spawn to the main process's exit".into(),
            warnings,
        }
    }

    fn create(
        &self,
        limits: &Limits,
        cores: Option<&[usize]>,
        own: bool,
    ) -> io::Result<Box<dyn RunGroup>> {
        if !own && limits.memory.is_none() && limits.pids.is_none() {
            if let Some(shared) = self.shared_for(cores)? {
                return Ok(Box::new(SharedRun::start(shared)?));
            }
        }
        let howto = howto();
        if limits.memory.is_some() && !self.has("memory") {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("--memory-limit needs the cgroup v2 memory controller; {howto}"),
            ));
        }
        let dir = self.subtree.parent.join(group_name());
        make_dir(&dir)?;
        let mut g = V2Group {
            dir: Some(dir.clone()),
            procs: None,
            dir_fd: None,
            affinity: None,
        };
        // Without cpuset (not enabled, or not tare's to enable) the run is confined with CPU
        // affinity, as in the fallback.
        let cpuset = self.has("cpuset");
        write_limits(&dir, limits, cores.filter(|_| cpuset))?;
        if !cpuset {
            g.affinity = cores.map(<[usize]>::to_vec);
        }
        g.procs = Some(
            OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))?,
        );
        // For clone3(CLONE_INTO_CGROUP): the child starts in the group, no migration.
        g.dir_fd = File::open(&dir).ok();
        Ok(Box::new(g))
    }
}

impl V2 {
    /// The shared group for `cores`, made (and the previous core set's removed) when needed;
    /// `None` where runs cannot share one (`memory.peak` not resettable).
    fn shared_for(&self, cores: Option<&[usize]>) -> io::Result<Option<Rc<Shared>>> {
        if self.shareable.get() == Some(false) {
            return Ok(None);
        }
        let key = cores.map(<[usize]>::to_vec);
        let mut slot = self.shared.borrow_mut();
        if let Some(s) = slot.as_ref().filter(|s| s.key == key) {
            return Ok(Some(Rc::clone(s)));
        }
        *slot = None; // removes the previous core set's group
        let cpuset = self.has("cpuset");
        match Shared::make(
            &self.subtree.parent,
            key,
            cpuset,
            self.has("memory"),
            self.has("pids"),
        )? {
            Some(s) => {
                self.shareable.set(Some(true));
                let s = Rc::new(s);
                *slot = Some(Rc::clone(&s));
                Ok(Some(s))
            }
            None => {
                self.shareable.set(Some(false));
                Ok(None)
            }
        }
    }
}

/// Kills every process in the group at `dir` (`cgroup.kill`, Linux ≥ 5.14; else freeze,
/// SIGKILL each, thaw) and waits until `members` lists none.
fn kill_members(dir: &Path, members: impl Fn() -> io::Result<Vec<i32>>) -> io::Result<()> {
    let kill_file = dir.join("cgroup.kill");
    if kill_file.exists() {
        write_file(&kill_file, "1")?;
    } else {
        write_file(&dir.join("cgroup.freeze"), "1")?;
        for pid in members()? {
            sys::kill(pid, libc::SIGKILL)?;
        }
        write_file(&dir.join("cgroup.freeze"), "0")?;
    }
    super::kill_until_empty(dir, members)
}

/// Writes a run group's limits: `memory.max` and `memory.swap.max` = 0 (so the limit covers
/// memory + swap), `pids.max`, `cpuset.cpus`.
pub fn write_limits(dir: &Path, limits: &Limits, cores: Option<&[usize]>) -> io::Result<()> {
    if let Some(bytes) = limits.memory {
        write_file(&dir.join("memory.max"), &bytes.to_string())?;
        if dir.join("memory.swap.max").exists() {
            write_file(&dir.join("memory.swap.max"), "0")?;
        }
    }
    if let Some(max) = limits.pids {
        write_file(&dir.join("pids.max"), &max.to_string())?;
    }
    if let Some(cores) = cores {
        let list: Vec<String> = cores.iter().map(|c| c.to_string()).collect();
        write_file(&dir.join("cpuset.cpus"), &list.join(","))?;
    }
    Ok(())
}

/// Reads a run group's accounting: `cpu.stat` user/system, `memory.peak` (None when the file
/// is missing: memory controller off, or Linux before 5.19), `memory.events` oom_kill.
pub fn read_accounting(dir: &Path) -> io::Result<Accounting> {
    let stat = read_trimmed(&dir.join("cpu.stat"))?;
    let (user, system) = parse_cpu_stat(&stat).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}/cpu.stat lacks user_usec/system_usec", dir.display()),
        )
    })?;
    let peak_memory = match read_trimmed(&dir.join("memory.peak")) {
        Ok(s) => s.parse::<u64>().ok(),
        Err(_) => None,
    };
    let events = std::fs::read_to_string(dir.join("memory.events")).ok();
    let event = |key| {
        events
            .as_deref()
            .and_then(|s| keyed_value(s, key))
            .unwrap_or(0)
    };
    let pids_max = std::fs::read_to_string(dir.join("pids.events"))
        .ok()
        .and_then(|s| keyed_value(&s, "max"))
        .unwrap_or(0);
    Ok(Accounting {
        user,
        system,
        peak_memory,
        oom_killed: event("oom_kill") > 0,
        at_memory_limit: event("max") > 0,
        pids_limited: pids_max > 0,
    })
}

/// Whether a kernel release (e.g. "5.15.0-91-generic") has cgroup v2 `memory.peak` (5.19+).
pub fn kernel_has_memory_peak(release: &str) -> bool {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty());
    let major: u32 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let minor: u32 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    (major, minor) >= (5, 19)
}

/// One run's group in the unified hierarchy.
pub struct V2Group {
    dir: Option<PathBuf>,
    procs: Option<File>,
    /// The group's directory, for clone3(CLONE_INTO_CGROUP).
    dir_fd: Option<File>,
    /// CPUs to confine the run to when the cpuset controller is not enabled.
    affinity: Option<Vec<usize>>,
}

impl V2Group {
    fn dir(&self) -> io::Result<&Path> {
        self.dir
            .as_deref()
            .ok_or_else(|| io::Error::other("cgroup already removed"))
    }
}

/// Reads user and system time from a cgroup v2 `cpu.stat` text.
pub fn parse_cpu_stat(content: &str) -> Option<(Duration, Duration)> {
    let user = keyed_value(content, "user_usec")?;
    let system = keyed_value(content, "system_usec")?;
    Some((Duration::from_micros(user), Duration::from_micros(system)))
}

impl RunGroup for V2Group {
    fn child_setup(&self) -> ChildSetup {
        ChildSetup {
            procs_fds: self.procs.iter().map(|f| f.as_raw_fd()).collect(),
            cgroup_dir_fd: self.dir_fd.as_ref().map(|f| f.as_raw_fd()),
            affinity: self.affinity.clone(),
            ..Default::default()
        }
    }

    fn cpu_so_far(&self, _main_pid: i32) -> io::Result<Duration> {
        let s = std::fs::read_to_string(self.dir()?.join("cpu.stat"))?;
        keyed_value(&s, "usage_usec")
            .map(Duration::from_micros)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "cpu.stat has no usage_usec"))
    }

    fn kill_all(&mut self, _main_pid: i32) -> io::Result<usize> {
        let dir = self.dir()?.to_path_buf();
        let procs = dir.join("cgroup.procs");
        let first = read_pids(&procs)?;
        if !first.is_empty() {
            kill_members(&dir, || read_pids(&procs))?;
        }
        Ok(first.len())
    }

    fn account(&self, _rusage: &Rusage) -> io::Result<Accounting> {
        read_accounting(self.dir()?)
    }

    fn memory_dir(&self) -> Option<PathBuf> {
        self.dir.clone()
    }

    fn unified_dir(&self) -> Option<PathBuf> {
        self.dir.clone()
    }

    fn destroy(&mut self) -> io::Result<()> {
        self.procs = None;
        self.dir_fd = None;
        match self.dir.take() {
            Some(dir) => remove_dir_retrying(&dir),
            None => Ok(()),
        }
    }
}

impl Drop for V2Group {
    fn drop(&mut self) {
        if self.dir.is_some() {
            let _ = self.kill_all(0);
            let _ = self.destroy();
        }
    }
}
