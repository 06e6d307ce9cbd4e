//! `--ready` for real: programs that become ready after 0.3 s by each sign tare knows get a
//! time to ready of ≈ 0.3 s (wide margins: the machine is shared), are stopped with their
//! whole group, or run to their end with `--ready-then wait`.

mod common;
use common::{survivors, tare};

use serde_json::Value;
use std::path::Path;

fn run(args: &[&str], json: &Path) -> Value {
    let out = tare()
        .args(["run", "--style", "basic", "--warmup", "0", "--runs", "3"])
        .args(args)
        .arg("--export-json")
        .arg(json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

fn ready_times(doc: &Value) -> Vec<f64> {
    doc["benchmarks"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ready_time"].as_f64().expect("ready_time"))
        .collect()
}

#[test]
fn ready_on_stdout_after_300_ms_then_stopped_with_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let marker = "tare-ready-marker-7731";
    let doc = run(
        &[
            "--ready",
            "stdout:^READY$",
            &format!("sh -c 'sleep 0.3; echo READY; sleep 30 && echo {marker}; true'"),
        ],
        &j,
    );
    for (t, r) in ready_times(&doc)
        .into_iter()
        .zip(doc["benchmarks"][0]["runs"].as_array().unwrap())
    {
        eprintln!("stdout: ready after {t:.4} s, wall {}", r["wall_time"]);
        assert!((0.29..0.8).contains(&t), "ready after {t} s");
        // The run's time is its time to ready less the cgroup join (microseconds on a quiet
        // machine, 13 ms once under a loaded test run: it is subtracted, not bounded).
        let join = r["extra"]["cgroup_join"].as_f64().unwrap_or(0.0);
        assert!(
            (r["wall_time"].as_f64().unwrap() - (t - join)).abs() < 0.01,
            "{r}"
        );
        assert_eq!(r["counted"], true);
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(survivors(marker).is_empty(), "{:?}", survivors(marker));
}

#[test]
fn ready_then_wait_lets_it_finish() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let doc = run(
        &[
            "--ready",
            "stderr:up",
            "--ready-then",
            "wait",
            "sh -c 'sleep 0.3; echo up >&2; sleep 0.4'",
        ],
        &j,
    );
    for r in doc["benchmarks"][0]["runs"].as_array().unwrap() {
        let (t, w) = (
            r["ready_time"].as_f64().unwrap(),
            r["wall_time"].as_f64().unwrap(),
        );
        eprintln!("stderr+wait: ready {t:.4} s, wall {w:.4} s");
        assert!((0.29..0.8).contains(&t), "ready {t}");
        assert!(w >= 0.69 && w > t, "wall {w}");
    }
}

#[test]
fn ready_by_file_and_by_notify_socket() {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("flag");
    let j = dir.path().join("r.json");
    let doc = run(
        &[
            "--ready",
            &format!("file:{}", flag.display()),
            "--conclude",
            &format!("rm -f {}", flag.display()),
            &format!("sh -c 'sleep 0.3; touch {}; sleep 30'", flag.display()),
        ],
        &j,
    );
    for t in ready_times(&doc) {
        eprintln!("file: ready after {t:.4} s");
        assert!((0.29..0.8).contains(&t), "{t}");
    }
    // sd_notify by hand: a datagram "READY=1" to $NOTIFY_SOCKET, sent by python3 if present.
    if std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        let script = "import os,socket,time; time.sleep(0.3); \
             s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); \
             s.sendto(b'STATUS=up\\nREADY=1', os.environ['NOTIFY_SOCKET']); time.sleep(30)";
        let doc = run(
            &["--ready", "notify", &format!("python3 -c \"{script}\"")],
            &j,
        );
        for t in ready_times(&doc) {
            eprintln!("notify: ready after {t:.4} s (python start-up included)");
            assert!((0.29..2.0).contains(&t), "{t}");
        }
    }
}

#[test]
fn never_ready_is_a_failed_run_with_one_line() {
    let out = tare()
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "2",
            "--ready",
            "stdout:READY",
        ])
        .arg("echo nope")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.trim_end().lines().last().unwrap();
    assert!(last.contains("without the --ready sign"), "{err}");
    let bad = tare()
        .args(["run", "--ready", "tcp:80", "true"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).starts_with("tare: error: --ready"));
}
