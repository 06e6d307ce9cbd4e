//! Where tare runs — a container, a systemd host or a bare root shell — and the one change
//! that gets it exact measurements there (the advice every cgroup v2 warning ends with).
//!
//! For: telling the places apart from what is visible inside ([`Clues`]) and naming the fix
//! for that place ([`advice`]). Not for: deciding where run groups go (see `v2::decide`).

use std::path::Path;
use std::sync::OnceLock;

/// The page that lists every layout, what is measured there and what gets the rest.
pub const DOC: &str = "docs/where-tare-measures.md";

/// Which container engine the clues point to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Docker,
    Podman,
    Kubernetes,
    /// A container whose engine is unknown (the `container` variable of systemd-nspawn, LXC…).
    Other,
}

/// Where tare runs, as far as it can tell from inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Container(Engine),
    /// systemd is the init system (`/run/systemd/system` exists).
    SystemdHost,
    /// Neither: a root shell on a machine without systemd, a chroot…
    Bare,
}

/// What is visible from inside that tells the places apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Clues {
    /// tare's cgroup is the root of a cgroup namespace: `/proc/self/cgroup` says `0::/` while
    /// the mounted hierarchy's root is not the real root (it has `cgroup.type`).
    pub cgroupns_root: bool,
    pub dockerenv: bool,
    pub containerenv: bool,
    /// The `container` environment variable (set by podman, systemd-nspawn, LXC).
    pub container_var: Option<String>,
    /// `KUBERNETES_SERVICE_HOST` is set (every pod's containers get it).
    pub kubernetes: bool,
    pub systemd: bool,
}

impl Clues {
    /// Reads the clues below `root` ("/" outside tests) and from this process's environment.
    pub fn read(root: &Path) -> Clues {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Clues {
            cgroupns_root: cgroupns_root(root),
            dockerenv: root.join(".dockerenv").exists(),
            containerenv: root.join("run/.containerenv").exists(),
            container_var: var("container"),
            kubernetes: var("KUBERNETES_SERVICE_HOST").is_some(),
            systemd: root.join("run/systemd/system").is_dir(),
        }
    }

    pub fn place(&self) -> Place {
        let engine = if self.kubernetes {
            Some(Engine::Kubernetes)
        } else if self.containerenv || self.container_var.as_deref() == Some("podman") {
            Some(Engine::Podman)
        } else if self.dockerenv || self.container_var.as_deref() == Some("docker") {
            Some(Engine::Docker)
        } else if self.container_var.is_some() || self.cgroupns_root {
            Some(Engine::Other)
        } else {
            None
        };
        match engine {
            Some(e) => Place::Container(e),
            None if self.systemd => Place::SystemdHost,
            None => Place::Bare,
        }
    }
}

/// Whether tare's own cgroup v2 is the root of a cgroup namespace below `root`.
pub fn cgroupns_root(root: &Path) -> bool {
    let Ok(own) = super::own_cgroup(root, None) else {
        return false;
    };
    let Ok(mounts) = super::cgroup_mounts(root) else {
        return false;
    };
    let Some((_, mp, _)) = mounts.iter().find(|(fs, _, _)| fs == "cgroup2") else {
        return false;
    };
    own == "/"
        && root
            .join(mp.trim_start_matches('/'))
            .join("cgroup.type")
            .exists()
}

/// The one change that gets exact measurements in `place`; `root_user` says whether tare runs
/// as root; `parent_ok` names a cgroup directory whose parent passes the needed controllers
/// down (checked by the caller), for the TARE_CGROUP_PARENT alternative.
pub fn advice(place: Place, root_user: bool, parent_ok: Option<&Path>) -> String {
    let docker = "`docker run --privileged --cgroupns=private …`";
    let podman = "`podman run --privileged …`";
    let k8s = "`securityContext: {privileged: true}` on the container (cgroup v2 nodes)";
    let fix = match place {
        Place::Container(Engine::Docker) => format!(
            "in a container: give it its own writable cgroup with {docker}"
        ),
        Place::Container(Engine::Podman) => {
            format!("in a container: give it its own writable cgroup with {podman}")
        }
        Place::Container(Engine::Kubernetes) => {
            format!("in a Kubernetes pod: give the container its own writable cgroup with {k8s}")
        }
        Place::Container(Engine::Other) => format!(
            "in a container: give it its own writable cgroup ({docker}, {podman}, Kubernetes: {k8s})"
        ),
        Place::SystemdHost if root_user => {
            "start tare as the only process of a delegated cgroup: `systemd-run --scope -p Delegate=yes tare …`"
                .to_string()
        }
        Place::SystemdHost => {
            "start tare as the only process of a delegated cgroup: `systemd-run --user --scope -p Delegate=yes tare …`"
                .to_string()
        }
        Place::Bare if root_user => {
            "mount the cgroup v2 file system read-write (`mount -t cgroup2 none /sys/fs/cgroup`) and run tare as root"
                .to_string()
        }
        Place::Bare => "run tare as root".to_string(),
    };
    let alt = match parent_ok {
        Some(dir) => format!(
            ", or as root `mkdir {d} && chown -R $USER {d}` and set TARE_CGROUP_PARENT={d}",
            d = dir.display()
        ),
        None => String::new(),
    };
    format!("{fix}{alt} (see {DOC})")
}

/// The advice for this process, computed once: where it runs, and TARE_CGROUP_PARENT offered
/// only when the root of the unified hierarchy passes memory and pids down (a directory made
/// there gets them).
pub fn here() -> &'static str {
    static HERE: OnceLock<String> = OnceLock::new();
    HERE.get_or_init(|| {
        let root = Path::new("/");
        let clues = Clues::read(root);
        let place = clues.place();
        let parent = match place {
            Place::Container(_) => None,
            _ => unified_root(root).filter(|r| passes_down(r, &["memory", "pids"])),
        };
        let bench = parent.map(|p| p.join("bench"));
        advice(place, crate::exec::sys::euid() == 0, bench.as_deref())
    })
}

/// The mount point of the unified hierarchy below `root`.
pub fn unified_root(root: &Path) -> Option<std::path::PathBuf> {
    let mounts = super::cgroup_mounts(root).ok()?;
    mounts
        .iter()
        .find(|(fs, _, _)| fs == "cgroup2")
        .map(|(_, mp, _)| root.join(mp.trim_start_matches('/')))
}

/// Whether a new child of `dir` gets every controller in `wanted`: they are enabled in `dir`'s
/// `cgroup.subtree_control`.
pub fn passes_down(dir: &Path, wanted: &[&str]) -> bool {
    let Ok(s) = std::fs::read_to_string(dir.join("cgroup.subtree_control")) else {
        return false;
    };
    wanted.iter().all(|w| s.split_whitespace().any(|c| c == *w))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic root: /proc/self/cgroup, /proc/self/mountinfo and a cgroup2 tree.
    fn fake_root(own: &str, ns_root: bool) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        std::fs::create_dir_all(r.join("proc/self")).unwrap();
        std::fs::write(r.join("proc/self/cgroup"), format!("0::{own}\n")).unwrap();
        std::fs::write(
            r.join("proc/self/mountinfo"),
            "30 20 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
        )
        .unwrap();
        let cg = r.join("sys/fs/cgroup");
        std::fs::create_dir_all(&cg).unwrap();
        std::fs::write(cg.join("cgroup.procs"), "1\n").unwrap();
        std::fs::write(cg.join("cgroup.subtree_control"), "cpu memory pids\n").unwrap();
        if ns_root {
            std::fs::write(cg.join("cgroup.type"), "domain\n").unwrap();
        }
        d
    }

    #[test]
    fn a_cgroup_namespace_root_is_a_container() {
        let d = fake_root("/", true);
        let c = Clues::read(d.path());
        assert!(c.cgroupns_root);
        if std::env::var_os("container").is_none()
            && std::env::var_os("KUBERNETES_SERVICE_HOST").is_none()
        {
            assert_eq!(c.place(), Place::Container(Engine::Other));
        }
        // The real root of the hierarchy (no cgroup.type) is not a namespace root.
        let d = fake_root("/", false);
        assert!(!Clues::read(d.path()).cgroupns_root);
        // Nor is a cgroup below it.
        let d = fake_root("/system.slice/x.service", true);
        assert!(!Clues::read(d.path()).cgroupns_root);
    }

    #[test]
    fn engines_from_their_marks() {
        let d = fake_root("/user.slice", false);
        std::fs::write(d.path().join(".dockerenv"), "").unwrap();
        let mut c = Clues::read(d.path());
        c.container_var = None;
        c.kubernetes = false;
        assert_eq!(c.place(), Place::Container(Engine::Docker));
        std::fs::create_dir_all(d.path().join("run")).unwrap();
        std::fs::write(d.path().join("run/.containerenv"), "").unwrap();
        let c2 = Clues {
            containerenv: true,
            ..c.clone()
        };
        assert_eq!(c2.place(), Place::Container(Engine::Podman));
        let k = Clues {
            kubernetes: true,
            ..c.clone()
        };
        assert_eq!(k.place(), Place::Container(Engine::Kubernetes));
        let host = Clues {
            systemd: true,
            ..Clues::default()
        };
        assert_eq!(host.place(), Place::SystemdHost);
        assert_eq!(Clues::default().place(), Place::Bare);
        let nspawn = Clues {
            container_var: Some("systemd-nspawn".into()),
            systemd: true,
            ..Clues::default()
        };
        assert_eq!(nspawn.place(), Place::Container(Engine::Other));
    }

    #[test]
    fn advice_names_the_fix_for_the_place() {
        let a = advice(Place::Container(Engine::Docker), true, None);
        assert!(
            a.contains("--cgroupns=private") && !a.contains("systemd-run"),
            "{a}"
        );
        let a = advice(Place::Container(Engine::Kubernetes), true, None);
        assert!(
            a.contains("privileged: true") && !a.contains("systemd-run"),
            "{a}"
        );
        let a = advice(Place::SystemdHost, false, None);
        assert!(
            a.contains("systemd-run --user --scope -p Delegate=yes tare"),
            "{a}"
        );
        assert!(!a.contains("TARE_CGROUP_PARENT"), "{a}");
        let a = advice(
            Place::SystemdHost,
            true,
            Some(Path::new("/sys/fs/cgroup/bench")),
        );
        assert!(a.contains("TARE_CGROUP_PARENT=/sys/fs/cgroup/bench"), "{a}");
        assert!(a.contains(DOC), "{a}");
    }

    #[test]
    fn parent_offered_only_where_controllers_pass_down() {
        let d = fake_root("/", false);
        let cg = d.path().join("sys/fs/cgroup");
        assert!(passes_down(&cg, &["memory", "pids"]));
        std::fs::write(cg.join("cgroup.subtree_control"), "cpu pids\n").unwrap();
        assert!(!passes_down(&cg, &["memory", "pids"]));
        assert_eq!(unified_root(d.path()), Some(cg));
    }
}
