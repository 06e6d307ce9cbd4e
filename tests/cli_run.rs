//! `tare run` end to end: the real binary, as root, on this machine's real cgroups.

mod common;
#[path = "common/skip.rs"]
mod skip;
use common::escape::{kill_survivors, EscapeGroups};
use common::{is_root, survivors, tare};

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

fn run_ok(args: &[&str]) -> Output {
    let out = tare().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "tare {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `tare run --style STYLE --runs RUNS --export-json JSON -- sh -c SCRIPT`, which must succeed.
fn run_sh(style: &str, runs: u32, json: &Path, script: &str) -> Output {
    run_ok(&[
        "run",
        "--style",
        style,
        "--runs",
        &runs.to_string(),
        "--export-json",
        json.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
    ])
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn runs(doc: &Value, bench: usize) -> Vec<Value> {
    doc["benchmarks"][bench]["runs"].as_array().unwrap().clone()
}

#[test]
fn exact_runs_warmup_and_json_fields() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    run_ok(&[
        "run",
        "--style",
        "none",
        "--runs",
        "5",
        "--warmup",
        "2",
        "--export-json",
        j.to_str().unwrap(),
        "true",
    ]);
    let doc = json(&j);
    assert_eq!(doc["schema_version"], tare::results::SCHEMA_VERSION);
    assert_eq!(doc["complete"], true);
    let rs = runs(&doc, 0);
    assert_eq!(rs.len(), 7);
    assert_eq!(rs.iter().filter(|r| r["warmup"] == true).count(), 2);
    assert_eq!(rs.iter().filter(|r| r["counted"] == true).count(), 5);
    for r in &rs {
        for f in [
            "wall_time",
            "user_time",
            "system_time",
            "cpu_time",
            "start_offset",
        ] {
            assert!(r[f].as_f64().unwrap() >= 0.0, "{f}");
        }
        assert_eq!(r["termination"], "exit");
        assert_eq!(r["exit_code"], 0);
    }
    assert_eq!(doc["benchmarks"][0]["summary"]["wall_time"]["n"], 5);
    assert!(doc["benchmarks"][0]["stop_reason"]
        .as_str()
        .unwrap()
        .contains("runs >= 5"));
    assert!(
        !Path::new(&format!("{}.journal", j.display())).exists(),
        "journal removed at the end"
    );
    // Environment recorded by name only.
    assert!(doc["environment"]["PATH"].is_null());
}

#[test]
fn adaptive_stop_records_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    run_ok(&[
        "run",
        "--style",
        "none",
        "--min-runs",
        "5",
        "--max-runs",
        "40",
        "--precision",
        "50%",
        "--export-json",
        j.to_str().unwrap(),
        "true",
    ]);
    let doc = json(&j);
    let n = doc["benchmarks"][0]["summary"]["wall_time"]["n"]
        .as_u64()
        .unwrap();
    assert!((5..=40).contains(&n));
    let reason = doc["benchmarks"][0]["stop_reason"].as_str().unwrap();
    assert!(
        reason.contains("ci(median) <= 50%") || reason.contains("runs >= 40"),
        "{reason}"
    );
}

#[test]
fn a_decided_comparison_stops_and_an_undecided_one_says_so() {
    // Ten times slower: decided at the strict sequential level (1 − α/500) long before the
    // ratio is known within ±1%, so the default rule ends on it (issue 43: time to an answer).
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    run_ok(&[
        "run",
        "--style",
        "none",
        "--time-budget",
        "60s",
        "--export-json",
        j.to_str().unwrap(),
        "-n",
        "fast",
        "-n",
        "slow",
        "sleep 0.01",
        "sleep 0.1",
    ]);
    let doc = json(&j);
    let reason = doc["benchmarks"][0]["stop_reason"].as_str().unwrap();
    assert!(reason.contains("every ratio decided"), "{reason}");
    assert_eq!(doc["comparisons"][0]["verdict"], "slower");
    // The same command twice under a budget too short to know the ratio within ±0.01%:
    // stopped by the budget, and the reason says what was not settled.
    run_ok(&[
        "run",
        "--style",
        "none",
        "--time-budget",
        "1s",
        "--precision",
        "0.01%",
        "--export-json",
        j.to_str().unwrap(),
        "sleep 0.01",
        "sleep 0.01",
    ]);
    let doc = json(&j);
    let reason = doc["benchmarks"][0]["stop_reason"].as_str().unwrap();
    assert!(reason.contains("time >= 1s"), "{reason}");
    assert!(
        reason.contains("not settled") || reason.contains("every ratio decided"),
        "{reason}"
    );
}

#[test]
fn cpu_of_killed_unwaited_child_is_counted() {
    if !is_root() {
        return skip::skip(
            "root (cgroups)",
            "run the tests as root (sudo -E cargo test)",
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let sign = dir.path().join("sign");
    // The parent blocks on a FIFO (no CPU of its own) until the child's work is done, then
    // kills the child and never waits for it.
    let work = format!(
        "i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done; echo done > {}; sleep 100",
        sign.display()
    );
    let script = format!(
        "rm -f {s}; mkfifo {s}; sh -c '{work}' & c=$!; read x < {s}; kill -9 $c",
        s = sign.display()
    );
    let direct = dir.path().join("d.json");
    run_sh(
        "none",
        3,
        &direct,
        "i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done",
    );
    // The least of three: the same loop's CPU time varies with what runs beside it on a
    // shared VM (one direct run read 0.41 s where the killed child's run read 0.23 s, with
    // the other tests of this file running in parallel).
    let work_cpu = runs(&json(&direct), 0)
        .iter()
        .map(|r| r["cpu_time"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    run_sh("none", 2, &j, &script);
    for r in runs(&json(&j), 0) {
        let cpu = r["cpu_time"].as_f64().unwrap();
        // Not counted, the run would read the parent's few milliseconds (it blocks on the
        // FIFO); counted, about the loop's. This VM runs at one of two speeds 2× apart for
        // seconds at a time, so the loop alone may read twice as much in other runs (a CI run
        // here: 0.385 s least of three direct runs, 0.216 s in the killed child's run).
        assert!(
            cpu >= 0.25 * work_cpu,
            "cpu {cpu} should include the killed child's work {work_cpu}"
        );
    }
}

#[test]
fn peak_memory_of_child_300mb() {
    if !is_root() {
        return skip::skip(
            "root (cgroups)",
            "run the tests as root (sudo -E cargo test)",
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let alloc =
        "python3 -c 'x = bytearray(300 * 1024 * 1024); x[::4096] = b\"a\" * len(x[::4096])'";
    run_sh("none", 2, &j, alloc);
    for r in runs(&json(&j), 0) {
        let peak = r["peak_memory"].as_u64().unwrap();
        assert!(
            (300 * 1024 * 1024..600 * 1024 * 1024).contains(&peak),
            "peak {peak}"
        );
    }
}

#[test]
fn daemonized_grandchild_does_not_survive() {
    if !is_root() {
        return skip::skip(
            "root (cgroups)",
            "run the tests as root (sudo -E cargo test)",
        );
    }
    let marker = "765.432198";
    let script = format!("setsid sh -c 'trap \"\" TERM HUP; sleep {marker}' </dev/null >/dev/null 2>&1 & (sleep {marker} &); exit 0");
    run_ok(&[
        "run", "--style", "none", "--runs", "3", "--", "sh", "-c", &script,
    ]);
    assert!(survivors(marker).is_empty(), "{:?}", survivors(marker));
}

/// Runs a limit test: without --ignore-failure tare exits 3 naming the limit; with it, the runs
/// are recorded with their termination and not counted (and, none counted, tare exits 3).
fn limit_case(limit: &[&str], cmd: &str, termination: &str) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let mut args = vec![
        "run",
        "--style",
        "none",
        "--runs",
        "1",
        "--export-json",
        j.to_str().unwrap(),
    ];
    args.extend_from_slice(limit);
    args.extend_from_slice(&["--", "sh", "-c", cmd]);
    let out = tare().args(&args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("limit"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    let rs = runs(&json(&j), 0);
    assert_eq!(rs[0]["termination"], termination);
    assert_eq!(rs[0]["counted"], false);

    let mut args2 = args.clone();
    args2.insert(1, "--ignore-failure");
    let idx = args2.iter().position(|a| *a == "1").unwrap();
    args2[idx] = "2";
    let out = tare().args(&args2).output().unwrap();
    // Every run was recorded, none counted: a session with no counted run is not a success.
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("no counted run"), "{err}");
    let rs = runs(&json(&j), 0);
    assert!(
        rs.len() >= 2
            && rs
                .iter()
                .all(|r| r["termination"] == termination && r["counted"] == false)
    );
}

#[test]
fn memory_limit_ends_run() {
    if !is_root() {
        return skip::skip(
            "root (cgroups)",
            "run the tests as root (sudo -E cargo test)",
        );
    }
    limit_case(
        &["--memory-limit", "100MB"],
        "python3 -c 'x = bytearray(300 * 1024 * 1024); x[::4096] = b\"a\" * len(x[::4096])'",
        "memory",
    );
}

#[test]
fn cpu_limit_ends_run() {
    if !is_root() {
        return skip::skip(
            "root (cgroups)",
            "run the tests as root (sudo -E cargo test)",
        );
    }
    limit_case(&["--cpu-limit", "0.3"], "while :; do :; done", "cpu");
}

#[test]
fn wall_limit_ends_run() {
    limit_case(&["--wall-limit", "300ms"], "sleep 30", "wall");
}

#[test]
fn pids_limit_ends_run() {
    if !is_root() {
        return skip::skip(
            "root (cgroups)",
            "run the tests as root (sudo -E cargo test)",
        );
    }
    // 20 background sleeps under a limit of 5 tasks: forks fail at the limit (pids.events
    // "max" rises, on cgroup v1 as on v2), so the run is marked `pids`, whatever the shell's
    // exit code.
    limit_case(
        &["--pids-limit", "5"],
        "for i in $(seq 1 20); do sleep 1 & done; wait",
        "pids",
    );
}

/// `--runs N` bounds the attempts too: with --ignore-failure and a command that always hits
/// its limit, a benchmark stops after max(N, 3) runs that do not count, saying why.
#[test]
fn runs_bound_the_attempts_at_a_limit() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let out = tare()
        .args([
            "run",
            "--runs",
            "1",
            "--ignore-failure",
            "--wall-limit",
            "200ms",
            "--export-json",
            j.to_str().unwrap(),
            "--",
            "sleep",
            "30",
        ])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(3), "{text}");
    let doc = json(&j);
    let rs = runs(&doc, 0);
    assert_eq!(rs.len(), 3, "3 attempts for --runs 1, not 20: {text}");
    assert!(rs.iter().all(|r| r["termination"] == "wall"));
    let reason = doc["benchmarks"][0]["stop_reason"].as_str().unwrap();
    assert!(reason.contains("at most 3"), "{reason}");
    assert_eq!(
        text.lines().filter(|l| l.contains("at most 3")).count(),
        1,
        "one line says why it stopped: {text}"
    );
}

#[test]
fn rusage_fallback_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let out = tare()
        .args([
            "run",
            "--style",
            "basic",
            "--runs",
            "2",
            "--backend",
            "rusage",
            "--export-json",
            j.to_str().unwrap(),
            "true",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        err.contains("no cgroup is usable") && err.contains("MISSED"),
        "{err}"
    );
    assert!(stdout.contains("rusage FALLBACK"), "{stdout}");
    let doc = json(&j);
    assert_eq!(doc["method"]["kind"], "rusage");
    assert!(doc["method"]["warnings"][0]
        .as_str()
        .unwrap()
        .contains("MISSED"));
}

#[test]
fn parameters_make_one_benchmark_per_combination() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let c = dir.path().join("r.csv");
    let m = dir.path().join("r.md");
    run_ok(&[
        "run",
        "--style",
        "none",
        "--runs",
        "2",
        "-L",
        "word",
        "a,b",
        "-P",
        "n",
        "1",
        "2",
        "--export-json",
        j.to_str().unwrap(),
        "--export-csv",
        c.to_str().unwrap(),
        "--export-markdown",
        m.to_str().unwrap(),
        "--name",
        "echo {word} {n}",
        "echo {word} {n}",
    ]);
    let doc = json(&j);
    let benches = doc["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), 4);
    assert_eq!(benches[3]["parameters"]["word"], "b");
    assert_eq!(benches[3]["parameters"]["n"], "2");
    assert_eq!(benches[3]["argv"], serde_json::json!(["echo", "b", "2"]));
    let csv = std::fs::read_to_string(&c).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.starts_with("benchmark,command,index,round,warmup,counted,start_offset,wall_time"),
        "{header}"
    );
    assert!(header.ends_with("parameter_n,parameter_word"), "{header}");
    assert_eq!(csv.lines().count(), 1 + 8);
    let md = std::fs::read_to_string(&m).unwrap();
    assert!(md.contains("| `echo b 2` |"), "{md}");
}

/// Bad input: one line, exit 2, and no run happened (the command would create a file).
#[test]
fn bad_input_fails_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let cmd = format!("touch {}", marker.display());
    let cases: Vec<Vec<String>> = vec![
        vec!["no-such-program-xyz".into()],
        vec!["--input".into(), "/nonexistent/in".into(), cmd.clone()],
        vec![
            "-L".into(),
            "n".into(),
            "1,,2".into(),
            format!("{cmd} {{n}}"),
        ],
        vec!["-L".into(), "n".into(), "1,2".into(), cmd.clone()],
        vec!["--memory-limit".into(), "lots".into(), cmd.clone()],
        vec![
            "--export-json".into(),
            "/nonexistent/dir/r.json".into(),
            cmd.clone(),
        ],
        vec!["--stop".into(), "runs >= many".into(), cmd.clone()],
        vec!["--cores".into(), "0,999".into(), cmd.clone()],
        vec![
            "--runs".into(),
            "3".into(),
            "--min-runs".into(),
            "2".into(),
            cmd.clone(),
        ],
        vec![
            "--name".into(),
            "a".into(),
            "--name".into(),
            "b".into(),
            cmd.clone(),
        ],
    ];
    for case in cases {
        let mut args = vec!["run".to_string(), "--style".into(), "none".into()];
        args.extend(case.clone());
        let out = tare().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{case:?}: {err}");
        assert!(!marker.exists(), "{case:?} ran the command");
        let first = err.lines().next().unwrap_or("");
        assert!(
            first.starts_with("tare: error:") || first.starts_with("error:"),
            "{case:?}: {err}"
        );
    }
}

#[test]
fn failing_command_stops_with_exit_3_and_keeps_runs() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let out = tare()
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "3",
            "--export-json",
            j.to_str().unwrap(),
            "false",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--ignore-failure"));
    let doc = json(&j);
    assert_eq!(doc["complete"], false);
    assert_eq!(runs(&doc, 0).len(), 1);
    assert_eq!(runs(&doc, 0)[0]["exit_code"], 1);
}

/// Issue 24: a failed run's error shows its cause — the end of its output file, or, where the
/// output was discarded, how to see it — instead of only "exited with code 2".
#[test]
fn a_failed_run_says_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("out.log");
    let cmd = "ls /nonexistent-tare-test-path";
    let out = tare()
        .args(["run", "--style", "none", "--runs", "3", "--output"])
        .arg(&log)
        .arg(cmd)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "exited with code 2 (its output ends: ls: cannot access '/nonexistent-tare-test-path'"
        ),
        "{err}"
    );
    let out = tare()
        .args(["run", "--style", "none", "--runs", "3", cmd])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("(its output was discarded: --show-output shows it)"),
        "{err}"
    );
}

#[test]
fn ctrl_c_keeps_completed_runs_and_kills_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let marker = "654.321987";
    let mut child = tare()
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "1000",
            "--export-json",
            j.to_str().unwrap(),
            "--",
            "sh",
            "-c",
        ])
        .arg(format!("sleep 0.05; setsid sleep {marker} & sleep 0.2"))
        .spawn()
        .unwrap();
    // Wait until a few runs are in the journal, then interrupt.
    let journal = dir.path().join("r.json.journal");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        let lines = std::fs::read_to_string(&journal)
            .map(|s| s.lines().count())
            .unwrap_or(0);
        if lines >= 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY-free: use the kill command to send SIGINT.
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let doc = json(&j);
    assert_eq!(doc["complete"], false);
    let n = runs(&doc, 0).len();
    assert!(n >= 2, "completed runs kept: {n}");
    assert!(runs(&doc, 0).iter().all(|r| r["termination"] == "exit"));
    if is_root() {
        assert!(survivors(marker).is_empty(), "{:?}", survivors(marker));
    }
}

#[test]
fn recover_rebuilds_results_from_a_journal() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    run_ok(&[
        "run",
        "--style",
        "none",
        "--runs",
        "3",
        "--export-json",
        j.to_str().unwrap(),
        "true",
    ]);
    // Fake a crash: turn the finished results back into a journal with a torn last line.
    let doc = json(&j);
    let mut header = doc.clone();
    header["benchmarks"][0]["runs"] = serde_json::json!([]);
    header["type"] = "session".into();
    let mut lines = vec![serde_json::to_string(&header).unwrap()];
    for r in runs(&doc, 0) {
        lines.push(
            serde_json::to_string(&serde_json::json!({"type": "run", "benchmark": 0, "run": r}))
                .unwrap(),
        );
    }
    lines.push("{\"type\":\"run\",\"bench".into());
    let journal = dir.path().join("crashed.journal");
    std::fs::write(&journal, lines.join("\n")).unwrap();
    let out = dir.path().join("rec.json");
    run_ok(&[
        "recover",
        journal.to_str().unwrap(),
        "--export-json",
        out.to_str().unwrap(),
    ]);
    let rec = json(&out);
    assert_eq!(rec["complete"], false);
    assert_eq!(runs(&rec, 0).len(), 3);
    assert_eq!(rec["benchmarks"][0]["summary"]["wall_time"]["n"], 3);
}

#[test]
fn interleaved_comparison_is_paired_by_round_and_exported() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let m = dir.path().join("r.md");
    let out = run_ok(&[
        "run",
        "--style",
        "basic",
        "--runs",
        "12",
        "--seed",
        "7",
        "--export-json",
        j.to_str().unwrap(),
        "--export-markdown",
        m.to_str().unwrap(),
        "-n",
        "fast",
        "-n",
        "slow",
        "true",
        "sleep 0.05",
    ]);
    let doc = json(&j);
    assert_eq!(doc["seed"], 7);
    assert_eq!(doc["extra"]["order"], "interleaved");
    // Every round has both benchmarks, each once.
    for b in 0..2 {
        let rounds: Vec<u64> = runs(&doc, b)
            .iter()
            .map(|r| r["round"].as_u64().unwrap())
            .collect();
        assert_eq!(rounds, (0..12).collect::<Vec<_>>());
    }
    let c = &doc["comparisons"][0];
    assert_eq!(c["reference_name"], "fast");
    assert_eq!(c["candidate_name"], "slow");
    assert_eq!(c["paired"], true);
    assert_eq!(c["verdict"], "slower");
    assert!(c["ratio_ci_low"].as_f64().unwrap() > 1.0);
    assert!(c["words"].as_str().unwrap().starts_with("slow is "));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Comparison:"));
    assert!(std::fs::read_to_string(&m)
        .unwrap()
        .contains("| `slow` | `fast` |"));
}

#[test]
fn sequential_order_runs_one_after_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    run_ok(&[
        "run",
        "--style",
        "none",
        "--order",
        "sequential",
        "--runs",
        "3",
        "--export-json",
        j.to_str().unwrap(),
        "true",
        "sleep 0.01",
    ]);
    let doc = json(&j);
    let last_a = runs(&doc, 0).last().unwrap()["start_offset"]
        .as_f64()
        .unwrap();
    let first_b = runs(&doc, 1)[0]["start_offset"].as_f64().unwrap();
    assert!(last_a < first_b);
    assert!(runs(&doc, 0)[0]["round"].is_null());
    assert_eq!(doc["comparisons"][0]["paired"], false);
}

#[test]
fn unprivileged_user_falls_back_loudly() {
    if !is_root() || Command::new("runuser").arg("--help").output().is_err() {
        return skip::skip(
            "root and runuser",
            "run the tests as root (sudo -E cargo test); apt-get install util-linux",
        );
    }
    let (_bin_dir, bin) = common::tare_for_everyone();
    let out = Command::new("runuser")
        .args(["-u", "nobody", "--"])
        .arg(&bin)
        .args(["run", "--style", "basic", "--runs", "2", "true"])
        .current_dir("/")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("no cgroup is usable"), "{err}");
    // The fix named fits where the tests run (issue 32): systemd-run on a systemd host, the
    // container flags in a container (this CI machine has /.dockerenv and no systemd).
    assert!(
        err.contains("systemd-run --user --scope -p Delegate=yes")
            || err.contains("--cgroupns=private"),
        "says how to get a delegated cgroup: {err}"
    );
    assert!(err.contains("docs/where-tare-measures.md"), "{err}");
}

/// A run's process that double-forks, starts its own session and moves itself into groups of
/// its own in every hierarchy tare uses is not killed with the run's groups; tare is its
/// subreaper, so it comes to tare when its parent exits and is killed at the run's end, the run
/// marked escaped with `orphans_killed`. Before: it survived the session, nothing said.
#[test]
fn an_orphan_that_left_the_runs_cgroups_is_killed_at_the_runs_end() {
    if !is_root() {
        return skip::skip(
            "root (cgroups)",
            "run the tests as root (sudo -E cargo test)",
        );
    }
    let Some(groups) = EscapeGroups::make("tare-test-escape") else {
        return skip::skip("cgroup v1 cpuacct and memory", "no v1 cpuacct/memory here");
    };
    let marker = format!("302.{}", std::process::id());
    let moves = groups.moves();
    let script = format!("(setsid sh -c '{moves}exec sleep {marker}' &); sleep 0.3");
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let out = run_sh("none", 2, &j, &script);
    let left = kill_survivors(&format!("sleep {marker}"));
    drop(groups);
    assert!(left.is_empty(), "survivors after tare exited: {left:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("were killed at the run's end"), "{err}");
    for r in runs(&json(&j), 0) {
        assert_eq!(r["extra"]["escaped"], true, "{r}");
        assert_eq!(r["extra"]["orphans_killed"], 1, "{r}");
    }
}

/// A root command that writes itself into the root cgroup leaves the run's groups: the run is
/// marked escaped with its CPU and memory flagged incomplete, and one warning line says so.
#[test]
fn escaped_run_is_marked_and_warned() {
    if !is_root() {
        return skip::skip(
            "root (cgroups)",
            "run the tests as root (sudo -E cargo test)",
        );
    }
    let root = "/sys/fs/cgroup/cpuacct/cgroup.procs";
    if !Path::new(root).exists() {
        return skip::skip("cgroup v1 cpuacct", "no /sys/fs/cgroup/cpuacct here");
    }
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let script = format!("echo $$ > {root}; i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done");
    let out = run_sh("basic", 2, &j, &script);
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("2 left their cgroups (CPU time and peak memory incomplete)"),
        "the summary says so: {summary}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("left its cgroups"))
            .count(),
        1,
        "one warning line: {err}"
    );
    let rs = runs(&json(&j), 0);
    assert_eq!(rs.len(), 2);
    for r in &rs {
        assert_eq!(r["extra"]["escaped"], true, "{r}");
        let incomplete = r["extra"]["incomplete"].as_array().unwrap();
        assert!(incomplete.iter().any(|v| v == "cpu_time"), "{r}");
        assert!(incomplete.iter().any(|v| v == "peak_memory"), "{r}");
    }
}

/// Percentages: a bare number is refused with what to write; --interference-threshold takes
/// 100% (no run is flagged), which is a sensible "never" (issue 43).
#[test]
fn interference_threshold_takes_a_percentage_up_to_100() {
    let out = tare()
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "2",
            "--interference-threshold",
            "5",
            "true",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "--interference-threshold 5: write a percentage such as 5%, or a fraction such as 0.05"
        ),
        "{err}"
    );
    let out = tare()
        .args(["run", "--style", "none", "--precision", "3", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--precision 3: write a percentage such as 3%, or a fraction such as 0.03"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = tare()
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "2",
            "--interference-threshold",
            "100%",
            "--export-json",
            json.to_str().unwrap(),
            "true",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = tare()
        .args([
            "run",
            "--style",
            "none",
            "--interference-threshold",
            "101%",
            "true",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("at most 100%"), "{err}");
}

/// Runs excluded for interference (--exclude-interfered) are labelled by their cause, not as
/// failed: a busy loop on the run's only core interferes with every run (issue 43). With no
/// run counted the session still exits 3 (README: no run of a command was counted), saying
/// that none failed.
#[test]
fn excluded_runs_are_labelled_interfered_not_failed() {
    if Command::new("taskset").arg("-V").output().is_err() {
        return skip::skip("taskset", "apt-get install util-linux");
    }
    let mut spin = Command::new("taskset")
        .args(["-c", "0", "sh", "-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let out = tare()
        .args([
            "run",
            "--style",
            "basic",
            "--cores",
            "0",
            "--exclude-interfered",
            "--runs",
            "2",
            "sleep 0.3",
        ])
        .output()
        .unwrap();
    let _ = spin.kill();
    let _ = spin.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("non-zero exit"), "{text}");
    assert!(!text.contains("hit a limit or failed"), "{text}");
    assert_ne!(
        out.status.code(),
        Some(0),
        "a busy loop on the run's only core was not seen as interference: {text}{err}"
    );
    assert!(text.contains("excluded: interfered"), "{text}");
    assert!(text.contains("were excluded as interfered with"), "{text}");
    assert_eq!(out.status.code(), Some(3), "{err}");
    let last = err.lines().last().unwrap_or("");
    assert!(
        last.contains("every run was excluded as interfered with") && last.contains("none failed"),
        "{err}"
    );
}

/// Issue 43: the verdict and the interval printed beside it come from one procedure. `-r 3`
/// of a 10 ms against a 20 ms sleep (the reproduction): interleaved, the rounds pair (t on
/// the per-round log ratios); in sequence, 3 vs 3 runs are too few for the rank test and
/// Welch's t on logs draws both. Either way the interval excludes 1 exactly when the line
/// says slower, and the line names the interval's level; no warning says the test can never
/// reach significance.
#[test]
fn three_runs_a_side_get_a_verdict_their_interval_agrees_with() {
    let dir = tempfile::tempdir().unwrap();
    for (order, how) in [
        ("interleaved", "paired t over 3 rounds"),
        ("sequential", "Welch's t on logs: 3 vs 3 runs"),
    ] {
        let j = dir.path().join(format!("{order}.json"));
        let out = run_ok(&[
            "run",
            "--style",
            "basic",
            "-r",
            "3",
            "--order",
            order,
            "--export-json",
            j.to_str().unwrap(),
            "-n",
            "fast",
            "-n",
            "slow",
            "sleep 0.01",
            "sleep 0.02",
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let doc = json(&j);
        let c = &doc["comparisons"][0];
        let (lo, hi) = (
            c["ratio_ci_low"].as_f64().unwrap(),
            c["ratio_ci_high"].as_f64().unwrap(),
        );
        let words = c["words"].as_str().unwrap();
        let verdict = c["verdict"].as_str().unwrap();
        assert!(stdout.contains(words), "{stdout}");
        assert!(words.contains("95% CI") && words.contains(how), "{words}");
        assert_eq!(c["confidence"], 0.95, "{c}");
        // 20 ms is never faster than 10 ms; under load the interval may be wide.
        assert_ne!(verdict, "faster", "{words}");
        assert_eq!(lo > 1.0 || hi < 1.0, verdict == "slower", "{words}");
        if verdict == "slower" {
            assert!(words.starts_with("slow is ") && lo > 1.0, "{words}");
        } else {
            assert!(words.contains("includes 1"), "{words}");
        }
        assert!(!stdout.contains("can never reach significance"), "{stdout}");
    }
}
