//! `--quiesce` (issue 29): a background `sleep` loop stays stopped while tare measures and runs
//! again after it — after a normal end, and after kill -9 of tare once a tare starts again; a
//! cgroup is frozen and thawed; tare refuses to stop itself.

mod common;
#[path = "common/skip.rs"]
mod skip;
use common::tare;

use std::process::{Child, Command};
use std::time::{Duration, Instant};
use tare::machine::quiesce::state;

/// A sleep loop whose command line carries `mark`, killed when dropped.
struct Loop(Child);

impl Loop {
    fn start(mark: &str) -> Loop {
        Loop(
            Command::new("sh")
                .args(["-c", "while :; do sleep 0.05; done", mark])
                .spawn()
                .unwrap(),
        )
    }
    fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.pid().to_string()])
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn records(dir: &std::path::Path) -> Command {
    let mut c = tare();
    c.env("TARE_QUIESCE_DIR", dir);
    c
}

#[test]
fn a_quiesced_loop_is_stopped_while_measuring_and_runs_after() {
    if !common::is_root() {
        return skip::skip("root", "run the tests as root");
    }
    let dir = tempfile::tempdir().unwrap();
    let mark = format!("tare-quiesce-test-{}", std::process::id());
    let bg = Loop::start(&mark);
    std::thread::sleep(Duration::from_millis(100));
    let j = dir.path().join("r.json");
    let mut t = records(dir.path())
        .args(["run", "--style", "none", "--runs", "3", "--quiesce", &mark])
        .args(["--export-json", j.to_str().unwrap(), "--", "sleep", "0.3"])
        .spawn()
        .unwrap();
    assert!(
        until(Duration::from_secs(10), || state(bg.pid()) == Some('T')),
        "the loop was never stopped"
    );
    assert!(t.wait().unwrap().success());
    assert_ne!(
        state(bg.pid()),
        Some('T'),
        "the loop is still stopped after tare"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let stopped = doc["extra"]["quiesced"]["stopped"].as_array().unwrap();
    assert!(
        stopped.iter().any(|s| s["pid"] == bg.pid()),
        "{}",
        doc["extra"]
    );
    // The record is gone with the session.
    assert_eq!(
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e
                .as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json")
                && !e.as_ref().unwrap().path().ends_with("r.json"))
            .count(),
        0
    );
}

#[test]
fn after_kill_9_the_next_tare_resumes_what_was_stopped() {
    if !common::is_root() {
        return skip::skip("root", "run the tests as root");
    }
    let dir = tempfile::tempdir().unwrap();
    let mark = format!("tare-quiesce-kill-{}", std::process::id());
    let bg = Loop::start(&mark);
    std::thread::sleep(Duration::from_millis(100));
    let mut t = records(dir.path())
        .args(["run", "--style", "none", "--runs", "1", "--quiesce", &mark])
        .args(["--", "sleep", "5"])
        .spawn()
        .unwrap();
    assert!(until(Duration::from_secs(10), || state(bg.pid()) == Some('T')));
    t.kill().unwrap(); // SIGKILL: no exit path of tare's runs
    t.wait().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(state(bg.pid()), Some('T'), "nothing resumed it yet");
    let out = records(dir.path())
        .args(["run", "--runs", "1", "--style", "basic", "true"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("resumed 1 process"), "{err}");
    assert!(until(Duration::from_secs(5), || state(bg.pid()) != Some('T')));
}

#[test]
fn a_cgroup_is_frozen_and_thawed() {
    let freezer = std::path::Path::new("/sys/fs/cgroup/freezer");
    if !common::is_root() || !freezer.join("freezer.state").exists() && !freezer.is_dir() {
        return skip::skip("root and the cgroup v1 freezer", "run as root on cgroup v1");
    }
    let cg = freezer.join(format!("tare-quiesce-{}", std::process::id()));
    std::fs::create_dir_all(&cg).unwrap();
    let bg = Loop::start("tare-quiesce-cgroup");
    std::fs::write(cg.join("cgroup.procs"), bg.pid().to_string()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut t = records(dir.path())
        .args(["run", "--style", "none", "--runs", "2", "--quiesce"])
        .arg(&cg)
        .args(["--", "sleep", "0.3"])
        .spawn()
        .unwrap();
    let st = || std::fs::read_to_string(cg.join("freezer.state")).unwrap();
    assert!(
        until(Duration::from_secs(10), || st().trim() == "FROZEN"),
        "{}",
        st()
    );
    assert!(t.wait().unwrap().success());
    assert_eq!(st().trim(), "THAWED");
    drop(bg);
    let _ = std::fs::remove_dir(&cg);
}

#[test]
fn tare_does_not_stop_itself_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // The test's own process is an ancestor of tare: a pattern that matches only it and tare
    // stops nothing, and says so.
    let out = records(dir.path())
        .args([
            "run",
            "--runs",
            "1",
            "--quiesce",
            "^no-such-process-anywhere$",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no process matches") && err.lines().count() == 1,
        "{err}"
    );
    let me = std::env::current_exe().unwrap();
    let name = me.file_name().unwrap().to_string_lossy().into_owned();
    let out = records(dir.path())
        .args([
            "run",
            "--runs",
            "1",
            "--quiesce",
            &regex::escape(&name[..15.min(name.len())]),
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
