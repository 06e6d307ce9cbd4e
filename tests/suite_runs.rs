//! Suite runs with generated definitions: limits become timeout / out-of-memory results,
//! a missing program an error result, and Ctrl-C keeps every finished run for `--resume`.
//! Needs root (cgroups, namespaces); skipped with a message otherwise.

mod common;
#[path = "common/skip.rs"]
mod skip;
use common::escape::{kill_survivors, EscapeGroups};
use common::is_root;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn dir(name: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("suite-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("in")).unwrap();
    d
}

/// `tare suite run -q --output-dir DIR/out DIR/s.toml`.
fn suite_run(d: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tare"));
    c.args(["suite", "run", "-q", "--output-dir"])
        .arg(d.join("out"))
        .arg(d.join("s.toml"));
    c
}

fn records(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn limits_and_failures_are_classified() {
    if !is_root() {
        skip::skip(
            "root (cgroups, namespaces)",
            "run the tests as root (sudo -E cargo test)",
        );
        return;
    }
    let d = dir("limits");
    std::fs::write(d.join("in/a.txt"), "a").unwrap();
    std::fs::write(
        d.join("s.toml"),
        r#"
[limits]
cpu = "0.5s"
wall = "5s"
memory = "40MB"
[[tool]]
name = "spin"
command = "sh -c 'while :; do :; done'"
[[tool]]
name = "hog"
command = "sh -c 'head -c 200000000 /dev/zero | tail -c 150000000 > /dev/null'"
[[tool]]
name = "missing"
command = "/nonexistent/tool {input}"
[[tool]]
name = "crash"
command = "sh -c 'kill -SEGV $$'"
[[inputs]]
name = "x"
files = ["in/*.txt"]
expected = "ok"
"#,
    )
    .unwrap();
    let out = d.join("out");
    let st = suite_run(&d).status().unwrap();
    assert!(st.success());
    let recs = records(&out);
    let get = |tool: &str| {
        let r = recs.iter().find(|r| r["tool"] == tool).unwrap();
        (
            r["status"].as_str().unwrap().to_string(),
            r["category"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(get("spin"), ("timeout".into(), "timeout".into()));
    assert_eq!(get("hog"), ("out of memory".into(), "out-of-memory".into()));
    assert_eq!(get("missing"), ("error (not run)".into(), "error".into()));
    assert_eq!(get("crash"), ("error (signal 11)".into(), "error".into()));
    let spin = recs.iter().find(|r| r["tool"] == "spin").unwrap();
    assert!(spin["cpu_time"].as_f64().unwrap() >= 0.5, "{spin}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn interrupt_keeps_finished_runs_and_resume_completes() {
    if !is_root() {
        skip::skip(
            "root (cgroups, namespaces)",
            "run the tests as root (sudo -E cargo test)",
        );
        return;
    }
    let d = dir("resume");
    for i in 0..8 {
        std::fs::write(d.join(format!("in/{i}.txt")), "x").unwrap();
    }
    std::fs::write(
        d.join("s.toml"),
        r#"
[[tool]]
name = "slow"
command = "sh -c 'sleep 0.25; echo done'"
[[inputs]]
name = "x"
files = ["in/*.txt"]
expected = "done"
[[classify]]
result = "done"
output = "^done$"
"#,
    )
    .unwrap();
    let out = d.join("out");
    let child = suite_run(&d).stderr(Stdio::piped()).spawn().unwrap();
    // Wait until at least two runs are recorded, then press Ctrl-C.
    let t0 = Instant::now();
    while records(&out).len() < 2 && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("--resume"));
    let kept = records(&out).len();
    assert!((2..8).contains(&kept), "{kept} runs kept");
    let st = Command::new(env!("CARGO_BIN_EXE_tare"))
        .args(["suite", "run", "-q", "--resume", "--output-dir"])
        .arg(&out)
        .arg(d.join("s.toml"))
        .status()
        .unwrap();
    assert!(st.success());
    let recs = records(&out);
    let mut keys: Vec<&str> = recs.iter().map(|r| r["key"].as_str().unwrap()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 8, "every run exactly once");
    assert_eq!(recs.len(), 8);
    assert!(recs.iter().all(|r| r["category"] == "correct"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn suite_below_tmp_sees_its_inputs_under_isolation() {
    if !is_root() {
        skip::skip(
            "root (cgroups, namespaces)",
            "run the tests as root (sudo -E cargo test)",
        );
        return;
    }
    let d = tempfile::tempdir().unwrap(); // the host /tmp, private in isolated runs
    std::fs::create_dir(d.path().join("in")).unwrap();
    std::fs::write(d.path().join("in/a.txt"), "hello").unwrap();
    std::fs::write(
        d.path().join("s.toml"),
        r#"
[[tool]]
name = "cat"
command = "cat {input}"
[[inputs]]
name = "x"
files = ["in/*.txt"]
expected = "hello"
[[classify]]
result = "hello"
output = "^hello"
"#,
    )
    .unwrap();
    let out = d.path().join("out");
    let st = suite_run(d.path()).status().unwrap();
    assert!(st.success());
    let recs = records(&out);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["category"], "correct", "{}", recs[0]);
}

#[test]
fn a_second_writer_of_an_output_directory_is_refused_at_once() {
    if !is_root() {
        skip::skip(
            "root (cgroups, namespaces)",
            "run the tests as root (sudo -E cargo test)",
        );
        return;
    }
    let d = dir("writer");
    for i in 0..3 {
        std::fs::write(d.join(format!("in/{i}.txt")), "a").unwrap();
    }
    std::fs::write(
        d.join("s.toml"),
        r#"
[[tool]]
name = "slow"
command = "sleep 1"
[[inputs]]
name = "x"
files = ["in/*.txt"]
"#,
    )
    .unwrap();
    let out = d.join("out");
    let run = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_tare"));
        c.args(["suite", "run", "-q", "--resume", "--output-dir"])
            .arg(&out)
            .arg(d.join("s.toml"));
        c
    };
    let first = run().stderr(Stdio::piped()).spawn().unwrap();
    let t0 = Instant::now();
    while !out.join(".tare-writer.lock").exists() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let second = run().output().unwrap();
    let first = first.wait_with_output().unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(second.status.code(), Some(2));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("another tare session"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(records(&out).len(), 3, "each run once");
    // Once the first has ended, resuming is allowed (and finds nothing to do).
    let again = run().output().unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(records(&out).len(), 3);
    let _ = std::fs::remove_dir_all(&d);
}

/// The bytes under `dir` (a run's logs), 0 when it is not there yet.
fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn a_tool_writing_without_end_never_has_more_than_the_output_limit_on_disk() {
    if !is_root() {
        skip::skip(
            "root (cgroups, namespaces)",
            "run the tests as root (sudo -E cargo test)",
        );
        return;
    }
    for isolated in [false, true] {
        let d = dir(&format!("endless-{isolated}"));
        std::fs::write(d.join("in/a.txt"), "a").unwrap();
        std::fs::write(
            d.join("s.toml"),
            format!(
                r#"
[limits]
wall = "3s"
output = "1MB"
[isolation]
enabled = {isolated}
[[tool]]
name = "endless"
command = "sh -c 'echo FIRST; exec yes'"
[[inputs]]
name = "x"
files = ["in/*.txt"]
"#
            ),
        )
        .unwrap();
        let out = d.join("out");
        let mut child = suite_run(&d).spawn().unwrap();
        // Watched while the run writes: `yes` alone writes far more than 1 MB in 3 s.
        let mut most = 0;
        let t0 = Instant::now();
        let status = loop {
            most = most.max(bytes_under(&out.join("logs")));
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(t0.elapsed() < Duration::from_secs(120), "the suite hangs");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "isolated {isolated}");
        assert!(
            most <= 1_000_000,
            "isolated {isolated}: {most} bytes of log on disk"
        );
        let recs = records(&out);
        let rec = &recs[0];
        let log = std::fs::read(out.join(rec["log"].as_str().unwrap())).unwrap();
        assert!(log.len() <= 1_000_000, "{}", log.len());
        let text = String::from_utf8_lossy(&log);
        assert!(text.starts_with("FIRST\ny\n"), "{}", &text[..20]);
        assert!(text.contains("bytes of output left out here"), "no note");
        assert!(text.ends_with("y\n"), "the last part is kept");
        assert_eq!(rec["status"], "timeout", "{rec}");
        let withheld = rec["withheld"].as_array().expect("withheld recorded");
        assert!(
            withheld.iter().any(|w| w["file"] == rec["log"]
                && w["reason"]
                    .as_str()
                    .unwrap()
                    .contains("over the output limit")),
            "{rec}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[test]
fn a_suite_tools_orphan_that_left_its_cgroups_is_killed_and_recorded() {
    if !is_root() {
        skip::skip(
            "root (cgroups)",
            "run the tests as root (sudo -E cargo test)",
        );
        return;
    }
    let Some(groups) = EscapeGroups::make("tare-test-suite-escape") else {
        skip::skip("cgroup v1 cpuacct and memory", "no v1 cpuacct/memory here");
        return;
    };
    let marker = format!("303.{}", std::process::id());
    let moves = groups.moves();
    let d = dir("escape");
    std::fs::write(d.join("in/a.txt"), "a").unwrap();
    std::fs::write(
        d.join("s.toml"),
        format!(
            r#"
[isolation]
enabled = false
[[tool]]
name = "escapes"
command = '''sh -c "(setsid sh -c '{moves}exec sleep {marker}' &); sleep 0.3"'''
[[inputs]]
name = "x"
files = ["in/*.txt"]
"#
        ),
    )
    .unwrap();
    let out = d.join("out");
    let st = suite_run(&d).status().unwrap();
    let left = kill_survivors(&format!("sleep {marker}"));
    drop(groups);
    assert!(st.success());
    assert!(left.is_empty(), "survivors after tare exited: {left:?}");
    let recs = records(&out);
    assert_eq!(recs[0]["orphans_killed"], 1, "{}", recs[0]);
    let _ = std::fs::remove_dir_all(&d);
}
