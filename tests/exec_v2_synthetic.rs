//! cgroup v2 file handling against a synthetic cgroupfs tree. This machine's unified hierarchy
//! has no memory/pids/cpuset controllers (they are bound to v1), so limits, `memory.peak` and
//! `memory.events` are verified only here; CPU time and kill are tested for real in
//! `exec_backend.rs`.

use std::fs;
use std::path::Path;
use std::time::Duration;
use tare::exec::cgroup::v2::{self, V2};
use tare::exec::{Backend, Limits, Needs};

fn file(dir: &Path, name: &str, content: &str) {
    fs::write(dir.join(name), content).unwrap();
}

/// A delegated parent as the kernel shows it: controllers available, none enabled yet.
fn parent(controllers: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    file(d.path(), "cgroup.procs", "");
    file(d.path(), "cgroup.controllers", controllers);
    file(d.path(), "cgroup.subtree_control", "");
    d
}

#[test]
fn enables_controllers_it_needs() {
    let p = parent("cpuset cpu io memory hugetlb pids rdma misc\n");
    let b = V2::at(
        p.path(),
        &Needs {
            pids: true,
            cpuset: true,
        },
    )
    .unwrap();
    // The kernel file takes one "+ctrl" per write; the synthetic file keeps the last one.
    assert!(fs::read_to_string(p.path().join("cgroup.subtree_control"))
        .unwrap()
        .starts_with('+'));
    let m = b.method();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    assert!(m.peak_memory.contains("memory.peak"), "{}", m.peak_memory);
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
        m.warnings.iter().any(|w| w.contains("Delegate=yes")),
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
        )
        .err()
        .unwrap();
    assert!(err.to_string().contains("memory controller"), "{err}");
    // A needed pids controller that is not there fails discovery with the way out.
    let err = V2::at(
        p.path(),
        &Needs {
            pids: true,
            cpuset: false,
        },
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("pids") && err.to_string().contains("Delegate=yes"),
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
