//! cgroup v2 file handling against a synthetic cgroupfs tree, and the choice of where run
//! groups go. This machine's unified hierarchy has no memory/pids/cpuset controllers (they are
//! bound to v1); the real thing is tested in a cgroup v2 guest by `tests/vm/run.sh`, CPU time
//! and kill also in `exec_backend.rs`.

use std::fs;
use std::path::Path;
use std::time::Duration;
use tare::exec::cgroup::v2::{self, decide, Layout, Observed, ParentSeen, V2};
use tare::exec::{Backend, Limits, Needs};

fn file(dir: &Path, name: &str, content: &str) {
    fs::write(dir.join(name), content).unwrap();
}

/// An empty delegated parent as the kernel shows it: controllers available, none enabled yet.
fn parent(controllers: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    file(d.path(), "cgroup.procs", "");
    file(d.path(), "cgroup.type", "domain\n");
    file(d.path(), "cgroup.controllers", controllers);
    file(d.path(), "cgroup.subtree_control", "");
    d
}

#[test]
fn enables_controllers_in_an_empty_parent_and_takes_them_off_at_exit() {
    let p = parent("cpuset cpu io memory hugetlb pids rdma misc\n");
    let b = V2::at(p.path(), &Needs::default()).unwrap();
    let sub = || fs::read_to_string(p.path().join("cgroup.subtree_control")).unwrap();
    assert_eq!(sub(), "+memory");
    let made: Vec<_> = fs::read_dir(p.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(b.parent(), made[0].path());
    drop(b);
    // The kernel file takes one "-ctrl" per write; the synthetic file keeps the last one.
    assert_eq!(
        sub(),
        "-memory",
        "what tare enabled in a cgroup it did not create comes off"
    );
    let left = fs::read_dir(p.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .count();
    assert_eq!(left, 0, "the helper directory is removed");
}

#[test]
fn never_enables_controllers_where_processes_live() {
    let p = parent("cpuset cpu io memory pids\n");
    file(p.path(), "cgroup.procs", "4242\n");
    let b = V2::at(p.path(), &Needs::default()).unwrap();
    assert_eq!(
        fs::read_to_string(p.path().join("cgroup.subtree_control")).unwrap(),
        "",
        "a populated cgroup is left as found"
    );
    let m = b.method();
    assert!(m.peak_memory.starts_with("not measured"), "{m:?}");
}

fn seen() -> Observed {
    Observed {
        writable: true,
        procs: vec![100],
        own_pid: 100,
        own_cgroup: true,
        is_root: false,
        cgroup_type: "domain".into(),
        euid_root: false,
        delegated: true,
        hierarchy_root_writable: false,
        ns_root: false,
        missing: false,
        parent: None,
    }
}

#[test]
fn layout_follows_what_is_safe() {
    let base = Path::new("/sys/fs/cgroup/user.slice/run-1.scope");
    let root = Path::new("/sys/fs/cgroup");
    // Alone in a delegated cgroup: supervisor leaf.
    assert_eq!(decide(base, root, &seen()), Ok(Layout::Supervised));
    // Others in its delegated cgroup: they move into a leaf, for a user; for root the
    // hierarchy root is used instead (nothing is moved).
    let others = Observed {
        procs: vec![100, 7],
        ..seen()
    };
    assert_eq!(
        decide(base, root, &others),
        Ok(Layout::Adopt {
            clear: base.to_path_buf(),
            base: base.to_path_buf()
        })
    );
    // Not delegated to a user who can write there anyway (never happens with systemd): no
    // controllers, nothing moved.
    let undelegated_root = Observed {
        procs: vec![100, 7],
        euid_root: true,
        delegated: false,
        ..seen()
    };
    assert_eq!(decide(base, root, &undelegated_root), Ok(Layout::Unmanaged));
    // A container: tare's cgroup is its cgroup namespace root (the mounted hierarchy's root)
    // and holds the container's first process; root, and the root is writable, yet the
    // processes there are moved into a leaf rather than left to block the controllers.
    let container = Observed {
        procs: vec![1, 100],
        euid_root: true,
        delegated: false,
        hierarchy_root_writable: true,
        ns_root: true,
        ..seen()
    };
    assert_eq!(
        decide(root, root, &container),
        Ok(Layout::Adopt {
            clear: root.to_path_buf(),
            base: root.to_path_buf()
        })
    );
    let root_user = Observed {
        euid_root: true,
        hierarchy_root_writable: true,
        ..others.clone()
    };
    assert_eq!(
        decide(base, root, &root_user),
        Ok(Layout::Beside {
            base: root.to_path_buf()
        })
    );
    // Root alone in a cgroup systemd did not delegate: not tare's to rearrange.
    let undelegated = Observed {
        euid_root: true,
        delegated: false,
        hierarchy_root_writable: true,
        ..seen()
    };
    assert_eq!(
        decide(base, root, &undelegated),
        Ok(Layout::Beside {
            base: root.to_path_buf()
        })
    );
    // A threaded cgroup (an old tare's damage) is never used for domain controllers.
    let threaded = Observed {
        cgroup_type: "domain threaded".into(),
        ..seen()
    };
    assert_eq!(decide(base, root, &threaded), Ok(Layout::Unmanaged));
    // Not writable: one line that says what to run.
    let locked = Observed {
        writable: false,
        ..seen()
    };
    let e = decide(base, root, &locked).unwrap_err();
    assert!(
        e.contains("where-tare-measures.md") && !e.contains('\n'),
        "{e}"
    );
    // TARE_CGROUP_PARENT: beside it, tare not in it.
    let given = Observed {
        own_cgroup: false,
        procs: vec![],
        ..seen()
    };
    assert_eq!(
        decide(base, root, &given),
        Ok(Layout::Beside {
            base: base.to_path_buf()
        })
    );
    // TARE_CGROUP_PARENT below a delegated scope that holds the user's shell: the scope
    // cannot pass controllers down until its processes move into a leaf.
    let scope = base.parent().unwrap().to_path_buf();
    let blocked = Observed {
        missing: true,
        parent: Some(ParentSeen {
            dir: scope.clone(),
            writable: true,
            delegated: true,
            untouchable: false,
        }),
        ..given.clone()
    };
    assert_eq!(
        decide(base, root, &blocked),
        Ok(Layout::Adopt {
            clear: scope.clone(),
            base: base.to_path_buf()
        })
    );
    // Root, below a cgroup nobody delegated: left alone (the warning names the blockers).
    let not_given = Observed {
        euid_root: true,
        parent: Some(ParentSeen {
            delegated: false,
            ..blocked.parent.clone().unwrap()
        }),
        ..blocked.clone()
    };
    assert_eq!(
        decide(base, root, &not_given),
        Ok(Layout::Beside {
            base: base.to_path_buf()
        })
    );
    // The real root of the hierarchy is never rearranged.
    let real_root = Observed {
        parent: Some(ParentSeen {
            untouchable: true,
            ..blocked.parent.clone().unwrap()
        }),
        ..blocked
    };
    assert_eq!(
        decide(base, root, &real_root),
        Ok(Layout::Beside {
            base: base.to_path_buf()
        })
    );
}

#[test]
fn a_parent_that_does_not_pass_controllers_down_is_named_with_its_blockers() {
    // P below a cgroup Q that holds a process (this test's own pid) and passes nothing down.
    let q = parent(
        "cpuset cpu io memory pids
",
    );
    file(
        q.path(),
        "cgroup.procs",
        &format!("{}\n", std::process::id()),
    );
    let p = q.path().join("runs");
    fs::create_dir(&p).unwrap();
    for (n, c) in [
        ("cgroup.procs", ""),
        ("cgroup.type", "domain\n"),
        ("cgroup.controllers", "cpu\n"),
        ("cgroup.subtree_control", ""),
    ] {
        file(&p, n, c);
    }
    let b = V2::at(&p, &Needs::default()).unwrap();
    let m = b.method();
    let w = m
        .warnings
        .iter()
        .find(|w| w.contains("'memory' is not available"))
        .unwrap_or_else(|| panic!("{:?}", m.warnings));
    assert!(
        w.contains(&format!("holds processes {} (", std::process::id()))
            && w.contains(&format!("{}/init/cgroup.procs", q.path().display()))
            && w.contains("echo '+memory' >"),
        "{w}"
    );
}

#[test]
fn missing_memory_controller_is_said_not_guessed() {
    let p = parent("cpu io\n");
    let b = V2::at(p.path(), &Needs::default()).unwrap();
    let m = b.method();
    assert!(
        m.peak_memory.starts_with("not measured"),
        "{}",
        m.peak_memory
    );
    assert!(
        m.warnings
            .iter()
            .any(|w| w.contains("where-tare-measures.md")),
        "{:?}",
        m.warnings
    );
    // A limit that needs the missing controller is refused before any run.
    let err = b
        .create(
            &Limits {
                memory: Some(1 << 20),
                ..Default::default()
            },
            None,
            false,
        )
        .err()
        .unwrap();
    assert!(err.to_string().contains("memory controller"), "{err}");
    // A needed pids controller that is not there fails discovery with the way out (the
    // synthetic run-group directory has no kernel files, so nothing is enabled there).
    let err = V2::at(
        p.path(),
        &Needs {
            pids: true,
            cpuset: false,
        },
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("pids") && err.to_string().contains("where-tare-measures.md"),
        "{err}"
    );
}

#[test]
fn limits_are_written_to_the_run_group() {
    let d = tempfile::tempdir().unwrap();
    file(d.path(), "memory.swap.max", "max\n");
    let limits = Limits {
        memory: Some(512_000_000),
        pids: Some(64),
        cpu: Some(Duration::from_secs(1)),
        wall: None,
    };
    v2::write_limits(d.path(), &limits, Some(&[2, 3])).unwrap();
    let read = |n: &str| fs::read_to_string(d.path().join(n)).unwrap();
    assert_eq!(read("memory.max"), "512000000");
    assert_eq!(
        read("memory.swap.max"),
        "0",
        "the limit covers memory + swap"
    );
    assert_eq!(read("pids.max"), "64");
    assert_eq!(read("cpuset.cpus"), "2,3");
}

#[test]
fn accounting_is_read_from_kernel_files() {
    let d = tempfile::tempdir().unwrap();
    file(d.path(), "cpu.stat", "usage_usec 1500000\nuser_usec 1200000\nsystem_usec 300000\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n");
    file(d.path(), "memory.peak", "314572800\n");
    file(
        d.path(),
        "memory.events",
        "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n",
    );
    let a = v2::read_accounting(d.path()).unwrap();
    assert_eq!(a.user, Duration::from_millis(1200));
    assert_eq!(a.system, Duration::from_millis(300));
    assert_eq!(a.peak_memory, Some(314_572_800));
    assert!(a.oom_killed);

    // Before Linux 5.19 there is no memory.peak: none, never a guess.
    fs::remove_file(d.path().join("memory.peak")).unwrap();
    file(
        d.path(),
        "memory.events",
        "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
    );
    let a = v2::read_accounting(d.path()).unwrap();
    assert_eq!(a.peak_memory, None);
    assert!(!a.oom_killed);

    file(d.path(), "cpu.stat", "usage_usec 5\n");
    assert!(
        v2::read_accounting(d.path()).is_err(),
        "a cpu.stat without user/system is an error"
    );
}

#[test]
fn memory_peak_exists_from_linux_5_19() {
    assert!(!v2::kernel_has_memory_peak("5.15.0-91-generic"));
    assert!(v2::kernel_has_memory_peak("5.19.0"));
    assert!(v2::kernel_has_memory_peak("6.18.44-fc-v509"));
    assert!(!v2::kernel_has_memory_peak("4.19.0"));
    assert!(!v2::kernel_has_memory_peak("garbage"));
}
