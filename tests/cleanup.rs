//! Clean-up beyond one process lifetime: what a `kill -9`ed session leaves (its run's
//! processes, its cgroups) is swept by the next tare that starts, and nothing of a live
//! session is touched.

mod common;
#[path = "common/skip.rs"]
mod skip;
use common::{is_root, survivors, tare};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn v1() -> bool {
    is_root() && Path::new("/sys/fs/cgroup/freezer/cgroup.procs").exists()
}

/// tare groups below this process's cgroup in the v1 hierarchies, named with `session`.
fn groups_of(session: &str) -> Vec<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let mut out = Vec::new();
    for ctrl in ["freezer", "cpuacct", "memory"] {
        let path = own
            .lines()
            .find_map(|l| {
                let mut p = l.splitn(3, ':');
                let (_, c, path) = (p.next()?, p.next()?, p.next()?);
                c.split(',').any(|x| x == ctrl).then(|| path.to_string())
            })
            .unwrap_or_else(|| "/".into());
        let dir = Path::new("/sys/fs/cgroup")
            .join(ctrl)
            .join(path.trim_start_matches('/'));
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with(&format!("tare-{session}")) {
                out.push(e.path());
            }
        }
    }
    out
}

/// Held by every test of this file while it runs: any `tare` start sweeps what killed sessions
/// left, so another test's start could sweep the groups the sweep test leaves for its own next
/// start (under load it did: "the sweep is not reported").
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn wait_for(what: impl Fn() -> bool, secs: u64) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if what() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    what()
}

#[test]
fn a_killed_sessions_groups_and_processes_are_swept_by_the_next_start() {
    let _serial = one_at_a_time();
    if !v1() {
        skip::skip(
            "root and cgroup v1",
            "run the tests as root (sudo -E cargo test) on a cgroup v1 machine",
        );
        return;
    }
    let marker = "61.0417";
    let mut child = tare()
        .args(["run", "--style", "none", "--runs", "1", "--"])
        .args([
            "sh",
            "-c",
            &format!("setsid sleep {marker} & exec sleep {marker}"),
        ])
        .spawn()
        .unwrap();
    let pid = child.id();
    assert!(
        wait_for(|| survivors(&format!("sleep {marker}")).len() >= 2, 10),
        "the run did not start"
    );
    // SAFETY-free: kill(1) through std; SIGKILL leaves tare no chance to clean up.
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    let _ = child.wait();
    let session = format!("{pid}.");
    let left = groups_of(&session);
    assert!(!left.is_empty(), "a killed session should leave its groups");
    assert!(!survivors(&format!("sleep {marker}")).is_empty());

    // The next session sweeps them, and is not itself touched by later sweeps.
    let live_marker = "62.0417";
    let mut live = tare()
        .args(["run", "--style", "none", "--runs", "1", "--"])
        .args(["sleep", live_marker])
        .spawn()
        .unwrap();
    assert!(wait_for(
        || !survivors(&format!("sleep {live_marker}")).is_empty(),
        10
    ));
    assert!(
        wait_for(|| survivors(&format!("sleep {marker}")).is_empty(), 5),
        "processes of the killed session survive: {:?}",
        survivors(&format!("sleep {marker}"))
    );
    assert!(
        wait_for(|| groups_of(&session).is_empty(), 5),
        "{:?}",
        groups_of(&session)
    );

    let out = tare()
        .args(["run", "--style", "basic", "--runs", "1", "/bin/true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !survivors(&format!("sleep {live_marker}")).is_empty(),
        "a sweep killed a live session's run"
    );
    let live_pid = live.id();
    live.kill().unwrap();
    let _ = live.wait();
    // The live session's run was left behind by that SIGKILL too; the next start sweeps
    // it and says so.
    assert!(!groups_of(&format!("{live_pid}.")).is_empty());
    let out = tare()
        .args(["run", "--style", "basic", "--runs", "1", "/bin/true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("left by killed tare sessions"),
        "the sweep is not reported: {err}"
    );
    assert!(wait_for(
        || survivors(&format!("sleep {live_marker}")).is_empty(),
        5
    ));
    assert!(wait_for(
        || groups_of(&format!("{live_pid}.")).is_empty(),
        5
    ));
}

#[test]
fn group_names_differ_between_sessions_with_the_same_pid() {
    let _serial = one_at_a_time();
    // Two tare processes in different PID namespaces can both be pid 1..n; the session
    // token keeps their group names apart. Run two sessions as PID 1 of fresh namespaces.
    if !v1()
        || std::process::Command::new("unshare")
            .arg("--help")
            .output()
            .is_err()
    {
        skip::skip(
            "root, cgroup v1 and unshare",
            "run the tests as root (sudo -E cargo test) on a cgroup v1 machine",
        );
        return;
    }
    let run = || {
        std::process::Command::new("unshare")
            .args(["--pid", "--fork", "--mount-proc"])
            .arg(env!("CARGO_BIN_EXE_tare"))
            .args([
                "run", "--style", "none", "--runs", "3", "--", "sleep", "0.3",
            ])
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (run(), run());
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
}

#[test]
fn what_actions_start_does_not_outlive_them() {
    let _serial = one_at_a_time();
    if !v1() {
        skip::skip(
            "root and cgroup v1",
            "run the tests as root (sudo -E cargo test) on a cgroup v1 machine",
        );
        return;
    }
    for (opt, marker) in [
        ("--prepare", "73.11"),
        ("--conclude", "73.12"),
        ("--setup", "73.13"),
        ("--cleanup", "73.14"),
    ] {
        let out = tare()
            .args(["run", "--style", "none", "--runs", "2", opt])
            .arg(format!("setsid sleep {marker} & sleep {marker} & true"))
            .arg("/bin/true")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{opt}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            survivors(&format!("sleep {marker}")).is_empty(),
            "{opt} left {:?}",
            survivors(&format!("sleep {marker}"))
        );
    }
    // Asked for, they live on.
    let out = tare()
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "1",
            "--keep-action-daemons",
        ])
        .args(["--setup", "sleep 73.15 &", "/bin/true"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(survivors("sleep 73.15").len(), 1);
    let _ = std::process::Command::new("pkill")
        .args(["-f", "sleep 73.15"])
        .status();
}

#[test]
fn a_hanging_action_is_stopped_by_its_limit() {
    let _serial = one_at_a_time();
    if !v1() {
        skip::skip(
            "root and cgroup v1",
            "run the tests as root (sudo -E cargo test) on a cgroup v1 machine",
        );
        return;
    }
    let t = Instant::now();
    let out = tare()
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "2",
            "--action-timeout",
            "300ms",
        ])
        .args(["--prepare", "sleep 74.2", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--action-timeout"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(20));
    assert!(survivors("sleep 74.2").is_empty());
}

#[test]
fn a_failing_action_that_floods_stderr_is_reported_in_one_short_line() {
    let _serial = one_at_a_time();
    // 300 MB of NUL bytes on stderr, then the real last line: tare keeps a bounded part of
    // the action's stderr (it read all of it before, 1.2 GB of memory, and printed 300 MB).
    let out = tare()
        .args(["run", "--style", "none", "--runs", "2", "-S", "sh"])
        .args([
            "--prepare",
            "head -c 300000000 /dev/zero >&2; echo; echo LASTLINE >&2; exit 1",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.len() < 2000, "{} bytes of error", err.len());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("(LASTLINE)") && err.contains("exit code 1"),
        "{err}"
    );
}

#[test]
fn a_pids_limit_counts_only_its_own_run() {
    let _serial = one_at_a_time();
    if !v1() {
        skip::skip(
            "root and cgroup v1",
            "run the tests as root (sudo -E cargo test) on a cgroup v1 machine",
        );
        return;
    }
    // Each run leaves three sleepers, killed when it ends; in a reused pids group their
    // unreaped remains made a later run fail with "Cannot fork".
    let out = tare()
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "40",
            "--pids-limit",
            "10",
            "--",
        ])
        .args(["sh", "-c", "sleep 5 & sleep 5 & sleep 5 & sleep 0.01"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
