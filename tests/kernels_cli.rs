//! `tare kernels` end to end with the fake Python worker (tests/kernels/fake_worker.py):
//! listing, matching kernels across programs, invocations × samples in the results (schema 2),
//! verdicts, exports, the HTML report, `tare report`/`tare compare` on kernel results, the
//! checks (linearity, unresolved samples, a JIT's warm-up), and failing workers: one line,
//! exit 3, nothing left running.

mod common;
use common::tare;

use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/fake_worker.py");
/// Short stop rules so a test takes seconds.
const QUICK: [&str; 6] = [
    "--sample-stop",
    "runs >= 6",
    "--sample-time",
    "1ms",
    "--seed",
    "7",
];

fn json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn lists_kernels_and_parameters() {
    let out = tare().args(["kernels", "--list", FAKE]).output().unwrap();
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(
        s.contains("fake-python 0.1, python; clock resolution"),
        "{s}"
    );
    assert!(s.contains("  spin n=200  — the spin kernel"), "{s}");
    let out = tare()
        .args(["kernels", "--list", "--filter", "^sp", FAKE])
        .output()
        .unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("spin") && !s.contains("empty"), "{s}");
}

#[test]
fn compares_implementations_head_to_head() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let h = dir.path().join("k.html");
    let c = dir.path().join("k.csv");
    let out = tare()
        .args(["kernels", FAKE, &format!("python3 {FAKE}")])
        .args(["-n", "first", "-n", "second", "--filter", "spin|empty"])
        .args(["-L", "n", "50,100", "--invocations", "2"])
        .args(QUICK)
        .args(["--export-json", j.to_str().unwrap()])
        .args(["--export-html", h.to_str().unwrap()])
        .args(["--export-csv", c.to_str().unwrap()])
        .env("COLUMNS", "72")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A table: a header, one line per kernel and parameters, no wider than COLUMNS; a verdict
    // withheld at 2 processes a side says so in its cell, its full reason once below.
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("kernel "))
        .take_while(|l| !l.starts_with("values:"))
        .collect();
    assert_eq!(table.len(), 4, "{stdout}");
    for w in ["first", "second", "change", "CI", "verdict"] {
        assert!(table[0].contains(w), "{stdout}");
    }
    assert!(table.iter().all(|l| l.chars().count() <= 72), "{stdout}");
    // Too wide for 72 with the reasons in their cells: "?", the reason below.
    assert!(table[1].ends_with("  ?"), "{stdout}");
    assert!(
        stdout.contains(
            "\n? inconclusive: 2 invocations (a verdict needs at least 5 processes a side"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("spin n=50") && stdout.contains("spin n=100"),
        "{stdout}"
    );
    assert!(
        stdout.contains("checksum agrees across implementations: 1225"),
        "{stdout}"
    );
    let v = json(&j);
    assert_eq!(v["schema_version"], 2);
    let benches = v["benchmarks"].as_array().unwrap();
    let names: Vec<&str> = benches
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "spin/first",
            "spin/second",
            "spin/first",
            "spin/second",
            "empty/first",
            "empty/second"
        ]
    );
    for b in benches {
        let invs = b["extra"]["invocations"].as_array().unwrap();
        assert_eq!(invs.len(), 2, "{}", b["name"]);
        for (i, inv) in invs.iter().enumerate() {
            assert_eq!(inv["index"], i);
            assert!(inv["counted"].as_u64().unwrap() >= 6);
            assert!(inv["cpu_time"].as_f64().unwrap() > 0.0, "cgroup CPU time");
            assert!(inv["error"].is_null());
        }
        let k = &b["extra"]["kernel"];
        let loops = k["loops"].as_u64().unwrap();
        assert!(loops >= 1);
        assert!(k["clock_resolution_ns"].as_f64().unwrap() > 0.0);
        let l = k["linearity"].as_f64().unwrap();
        assert!(l > 1.2 && l < 4.0, "linearity {l}");
        // The ratio is the median of N/2N pairs, with its interval and how many pairs.
        let pairs = k["linearity_pairs"].as_u64().unwrap();
        assert!((6..=64).contains(&pairs), "{pairs} pairs");
        let ci = k["linearity_ci"].as_array().unwrap();
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        assert!(lo <= l && l <= hi, "linearity {l} outside [{lo}, {hi}]");
        let runs = b["runs"].as_array().unwrap();
        for r in runs {
            let s = &r["extra"]["sample"];
            // Its first process runs the loops it calibrated; later ones the loops the two
            // programs of the kernel share (the larger, `method::kernels::share_loops`).
            let own = s["loops"].as_u64().unwrap();
            if s["invocation"] == 0 {
                assert!(own <= loops, "{own} > {loops}");
            } else {
                assert_eq!(own, loops);
            }
            let per = s["ns"].as_f64().unwrap() / own as f64 * 1e-9;
            assert!((r["wall_time"].as_f64().unwrap() - per).abs() <= 1e-12 * per.max(1.0));
            assert!(s["ns"].as_f64().unwrap() >= 1e6 * 0.5, "samples ≈ ≥ 1 ms");
        }
        assert!(b["summary"]["wall_time"]["median"].as_f64().unwrap() > 0.0);
    }
    // n=100 costs about twice n=50 per loop (a loop of n additions).
    let med = |i: usize| {
        benches[i]["summary"]["wall_time"]["median"]
            .as_f64()
            .unwrap()
    };
    let r = med(2) / med(0);
    assert!(r > 1.1 && r < 5.0, "n=100 vs n=50: {r}");
    // Each implementation against the first, per kernel and parameters.
    let comps = v["comparisons"].as_array().unwrap();
    let pairs: Vec<(u64, u64)> = comps
        .iter()
        .map(|c| {
            (
                c["reference"].as_u64().unwrap(),
                c["candidate"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(pairs, [(0, 1), (2, 3), (4, 5)]);
    for c in comps {
        assert!(!c["verdict"].as_str().unwrap().is_empty());
    }
    let html = std::fs::read_to_string(&h).unwrap();
    assert!(
        html.contains("<svg") && html.contains("spin/second"),
        "HTML report"
    );
    assert!(std::fs::read_to_string(&c).unwrap().lines().count() > 24);
    // tare report and tare compare read kernel results.
    let out = tare()
        .args(["report", j.to_str().unwrap(), "--html"])
        .arg(dir.path().join("r.html"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = tare()
        .args(["compare", j.to_str().unwrap(), j.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("spin/second"));
}

/// What cannot be measured is never silent: a kernel optimized away (the fake's `vanished`:
/// its timed region ignores the loops) stops calibration early instead of at 2^40 loops, one
/// whose samples the clock cannot resolve (`fades`: ns=0 after calibration) has no counted
/// sample; either ends the session with exit 3, one line naming the kernel and what to do, and
/// `complete: false`; the other kernels are measured all the same (a JIT's warm-up excluded).
#[test]
fn flags_what_cannot_be_measured() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let out = tare()
        .args(["kernels", FAKE, "--filter", "vanished|jit|fades", "-r", "3"])
        .args([
            "--steady-state",
            "on",
            "--sample-stop",
            "runs >= 25",
            "--sample-time",
            "1ms",
        ])
        .args([
            "--warmup",
            "0",
            "--verbose",
            "--export-json",
            j.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("tare: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0]
            .starts_with("tare: error: vanished/python: no counted sample: calibration stopped at")
            && errors[0].contains("optimized away")
            && errors[0].contains("do-not-optimize"),
        "{stderr}"
    );
    assert!(
        stdout.contains("fades/python: invocation 1 failed: no counted sample: all")
            && stdout.contains("shorter than the worker's clock can resolve"),
        "{stdout}"
    );
    assert!(
        stdout.contains("jit/python: warm-up before a steady state excluded"),
        "{stdout}"
    );
    let v = json(&j);
    assert_eq!(v["complete"], false, "a kernel failed");
    let vanished = &v["benchmarks"][0];
    assert_eq!(vanished["name"], "vanished/python");
    assert!(vanished["stop_reason"]
        .as_str()
        .unwrap()
        .starts_with("failed: no counted sample"));
    // Calibration gave up at 2^20..2^30 loops, not at 2^40.
    let reason = vanished["stop_reason"].as_str().unwrap();
    let loops: u64 = reason
        .split("stopped at ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{reason}"));
    assert!((1 << 20..=1 << 30).contains(&loops), "{reason}");
    // One invocation, not one per round: a failed kernel is not tried again.
    assert_eq!(
        vanished["extra"]["invocations"].as_array().unwrap().len(),
        1
    );
    let jit = &v["benchmarks"][1];
    assert_eq!(jit["name"], "jit/python");
    assert_eq!(jit["extra"]["invocations"].as_array().unwrap().len(), 3);
    let kinds: Vec<&str> = jit["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"steady-state"), "{kinds:?}");
    let excluded = jit["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["extra"]["sample"]["excluded"] == "steady-state")
        .count();
    assert!(excluded >= 5, "{excluded}");
    let fades = &v["benchmarks"][2];
    assert_eq!(fades["name"], "fades/python");
    assert!(fades["runs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| !r["counted"].as_bool().unwrap()));
}

const SLOW: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/slow_worker.py");

/// Long kernels on the real Python client (tests/kernels/slow_worker.py), scaled down: what tare
/// asks itself never runs into `--worker-timeout`, which is meant for one reply. A loop of
/// 400 ms against a 10 ms sample (as 5 s against the default 5 ms ... many times over) is
/// sampled one loop at a time with no linearity check (its 2N samples of 800 ms ran past the
/// 0.5 s limit and the error blamed the worker) and no more calibration than one loop; a loop
/// of 200 ms against a 150 ms sample gets its linearity check, 2N = 400 ms, past a 0.3 s limit.
#[test]
fn long_kernels_fit_the_worker_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let run = |args: &[&str]| {
        let out = tare()
            .args([
                "kernels",
                SLOW,
                "--seed",
                "3",
                "--verbose",
                "--export-json",
                j.to_str().unwrap(),
            ])
            .args(args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{args:?}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (stdout, json(&j))
    };
    let (stdout, v) = run(&[
        "--filter",
        "^sleep$",
        "-L",
        "ms",
        "400",
        "--sample-time",
        "10ms",
        "--worker-timeout",
        "0.5s",
        "-r",
        "2",
        "--sample-stop",
        "runs >= 3",
    ]);
    assert!(
        stdout.contains("sleep/python: linearity not checked: one loop took"),
        "{stdout}"
    );
    let b = &v["benchmarks"][0];
    let k = &b["extra"]["kernel"];
    assert_eq!(k["loops"], 1);
    assert!(
        k["linearity"].is_null() && k["linearity_skipped"].is_string(),
        "{k}"
    );
    let invs = b["extra"]["invocations"].as_array().unwrap();
    assert_eq!(invs.len(), 2);
    for inv in invs {
        // 3 counted samples and 1 warm-up: in the first invocation calibration's one loop is
        // the warm-up; nothing else was asked (before: 3 calibration loops, 18+ for the
        // linearity check, then the warm-up).
        assert_eq!(
            (inv["samples"].as_u64(), inv["counted"].as_u64()),
            (Some(4), Some(3)),
            "{inv}"
        );
        // The counts above say nothing else was asked; the wall time only that no 18 loops
        // of 0.4 s went unrecorded (start-up of Python under a loaded machine: seconds).
        let wall = inv["wall_time"].as_f64().unwrap();
        assert!(
            wall < 4.0 * 0.4 + 5.0,
            "an invocation of 4 loops of 0.4 s took {wall} s"
        );
    }
    let (_, v) = run(&[
        "--filter",
        "^spin$",
        "-L",
        "ms",
        "200",
        "--sample-time",
        "150ms",
        "--worker-timeout",
        "0.3s",
        "-r",
        "1",
        "--sample-stop",
        "runs >= 2",
    ]);
    let k = &v["benchmarks"][0]["extra"]["kernel"];
    assert_eq!(k["loops"], 1);
    assert!(k["linearity_pairs"].as_u64().unwrap() >= 6, "{k}");
}

/// The machine as `tare run` checks it: the start-of-session warnings (load above the cores,
/// steal, ...) recorded, and per invocation what other work did on the worker's cores. Two
/// busy loops of our own make the machine busy for sure: invocations interfered with, said
/// in a note naming the kernel.
#[test]
fn a_busy_machine_is_recorded_and_said() {
    let hogs: Vec<std::process::Child> = (0..2)
        .map(|_| {
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .unwrap()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let out = tare()
        .args([
            "kernels",
            FAKE,
            "--filter",
            "^spin$",
            "-r",
            "2",
            "--verbose",
        ])
        .args(QUICK)
        .args(["--export-json", j.to_str().unwrap()])
        .output();
    for mut h in hogs {
        let _ = h.kill();
        let _ = h.wait();
    }
    let out = out.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&j);
    assert!(v["extra"]["machine_warnings"].is_array(), "{}", v["extra"]);
    let invs = v["benchmarks"][0]["extra"]["invocations"]
        .as_array()
        .unwrap();
    assert_eq!(invs.len(), 2);
    for inv in invs {
        let env = &inv["environment"];
        assert!(env["other_cpu_time"].as_f64().is_some(), "{inv}");
        assert!(env["window"].as_f64().unwrap() >= inv["wall_time"].as_f64().unwrap() * 0.99);
    }
    assert!(
        invs.iter().any(|i| i["environment"]["interfered"] == true),
        "two busy loops on the machine: {invs:?}"
    );
    assert!(
        stdout.contains("spin/python:")
            && stdout.contains("invocations were interfered with (the machine was busy)"),
        "{stdout}"
    );
}

/// A worker that dies in its second kernel (the fake's `crash-second`) fails that kernel only:
/// the one it finished before in the same process keeps its samples and its invocation, and
/// the one line names the kernel that was running.
#[test]
fn a_dead_worker_fails_only_the_kernel_it_was_running() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let run = |extra: &[&str]| {
        let out = tare()
            .args(["kernels", FAKE, "--filter", "^(spin|empty)$", "-r", "2"])
            .args(QUICK)
            .args(["--export-json", j.to_str().unwrap()])
            .args(extra)
            .env("FAKE_MODE", "crash-second")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(3), "{err}");
        let v = json(&j);
        // Round 1: one kernel finished, then the process died in the other.
        let firsts: Vec<(String, Value)> = v["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["name"].as_str().unwrap().to_string(),
                    b["extra"]["invocations"][0].clone(),
                )
            })
            .collect();
        let crashed: Vec<&(String, Value)> = firsts
            .iter()
            .filter(|(_, i)| i["error"].is_string())
            .collect();
        assert_eq!(crashed.len(), 1, "{firsts:?}");
        let (finished, inv) = firsts.iter().find(|(_, i)| i["error"].is_null()).unwrap();
        assert!(inv["counted"].as_u64().unwrap() >= 6, "{finished}: {inv}");
        (err, v, crashed[0].0.clone(), finished.clone())
    };
    let (err, v, crashed, _) = run(&[]);
    let kernel = crashed.split('/').next().unwrap();
    assert!(
        err.contains(&format!("exited with status 3 (kernel '{kernel}', program")),
        "{err}"
    );
    assert_eq!(v["complete"], false);
    // Going on after failures: the finished kernel is measured in both rounds; the one that
    // crashed has no counted sample, which ends the session with exit 3 and its name.
    let (err, v, crashed, finished) = run(&["-i"]);
    let b = v["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == finished.as_str())
        .unwrap();
    let invs = b["extra"]["invocations"].as_array().unwrap();
    assert!(invs.iter().all(|i| i["error"].is_null()), "{invs:?}");
    assert!(
        err.contains(&format!(
            "tare: error: {crashed}: worker closed the connection"
        )),
        "{err}"
    );
}

/// An implementation that reports no checksum where another does: said in one line, not
/// dropped from the cross-language check in silence.
#[test]
fn a_missing_checksum_is_said() {
    let out = tare()
        .args([
            "kernels",
            FAKE,
            &format!("env FAKE_NO_CHECKSUM=1 python3 {FAKE}"),
        ])
        .args([
            "-n", "with", "-n", "without", "--filter", "^spin$", "-r", "1",
        ])
        .args(QUICK)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("reports no checksum"))
        .collect();
    assert_eq!(
        lines,
        ["tare: note: spin/without: reports no checksum where spin/with reports 19900: whether they compute the same thing is not checked"],
        "{stdout}"
    );
    assert!(!stdout.contains("checksum agrees"), "{stdout}");
}

fn fails(mode: &str, extra: &[&str]) -> (String, Duration) {
    let t = Instant::now();
    let out = tare()
        .args(["kernels", FAKE, "--filter", "spin", "-r", "2"])
        .args(QUICK)
        .args(extra)
        .env("FAKE_MODE", mode)
        .env("FAKE_CHILD_SLEEP", "318.75")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(3), "{mode}: {err}");
    let last: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("tare: error:"))
        .collect();
    assert_eq!(last.len(), 1, "{mode}: {err}");
    assert!(
        common::survivors("318.75").is_empty(),
        "{mode}: a process was left"
    );
    (last[0].to_string(), t.elapsed())
}

#[test]
fn failing_workers_give_one_line_and_leave_nothing() {
    let (e, _) = fails("crash-run,child", &[]);
    assert!(e.contains("worker closed the connection"), "{e}");
    assert!(e.contains("it exited with status 3"), "{e}");
    let (e, took) = fails("hang-setup,child", &["--worker-timeout", "1s"]);
    assert!(e.contains("did not answer within 1.000 s"), "{e}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    let (e, _) = fails("garbage", &[]);
    assert!(
        e.contains("worker broke the protocol: 'Segmentation fault"),
        "{e}"
    );
    let (e, _) = fails("version2", &[]);
    assert!(
        e.contains("worker speaks protocol 2; this tare speaks protocol 1"),
        "{e}"
    );
}

#[test]
fn user_errors_are_one_line_before_any_measurement() {
    let cases: [(&[&str], &str); 4] = [
        (&["-L", "size", "1,2"], "parameter 'size' is not declared"),
        (
            &["--filter", "nomatch"],
            "no kernel matches --filter 'nomatch'",
        ),
        (&["--sample-time", "soon"], "--sample-time 'soon'"),
        (&["--sample-stop", "runs >="], "--sample-stop 'runs >='"),
    ];
    for (args, want) in cases {
        let out = tare().args(["kernels", FAKE]).args(args).output().unwrap();
        // (a note that tare waits for the listing, on a slow machine, is progress, not an error)
        let err: String = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| !l.starts_with("tare: waiting for"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(want) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    let out = tare()
        .args(["kernels", "/nonexistent/worker"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run '/nonexistent/worker'"));
}

/// A failing kernel (its setup raises) is the worker's own error: recorded, one line.
#[test]
fn a_kernel_that_fails_in_the_worker() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let out = tare()
        .args(["kernels", FAKE, "--filter", "failing|empty", "-r", "1"])
        .args(QUICK)
        .args(["--export-json", j.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("failing/python: setup of 'failing' failed in the worker: setup of failing raised ValueError: on purpose"),
        "{err}"
    );
    // The kernel beside it was measured; the session is not complete.
    let v = json(&j);
    assert_eq!(v["complete"], false);
    assert_eq!(v["benchmarks"][0]["name"], "empty/python");
    assert!(v["benchmarks"][0]["runs"].as_array().unwrap().len() > 1);
}

/// Results of schema version 1 (tare run, before the invocation level) still read.
#[test]
fn reads_schema_one_results() {
    let old = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/results/schema1-run.json"
    );
    assert_eq!(json(Path::new(old))["schema_version"], 1);
    let dir = tempfile::tempdir().unwrap();
    let out = tare()
        .args(["report", old, "--html"])
        .arg(dir.path().join("r.html"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = tare().args(["compare", old, old]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `--randomize`: each invocation (process) gets its own setup, recorded with it; `tare plan`
/// plans invocations × samples per invocation from such a pilot (Kalibera & Jones).
#[test]
fn randomized_invocations_and_a_plan_over_levels() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("pilot.json");
    let out = tare()
        .args([
            "kernels",
            FAKE,
            "--filter",
            "^spin$",
            "-r",
            "4",
            "--randomize",
            "env,cwd,argv0",
        ])
        .args(QUICK)
        .args(["--export-json", j.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&j);
    let invs = v["benchmarks"][0]["extra"]["invocations"]
        .as_array()
        .unwrap();
    let setups: Vec<&str> = invs.iter().map(|i| i["setup"].as_str().unwrap()).collect();
    assert_eq!(setups.len(), 4);
    assert!(setups
        .iter()
        .all(|s| s.contains("env=") && s.contains("cwd=") && s.contains("argv0=")));
    let distinct: std::collections::BTreeSet<&&str> = setups.iter().collect();
    assert!(distinct.len() >= 3, "{setups:?}");
    let out = tare()
        .args(["plan", "--pilot", j.to_str().unwrap(), "--precision", "5%"])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{s}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(s.contains("pilot: 'spin/python', 4 invocations × "), "{s}");
    assert!(s.contains("invocation ") && s.contains("iteration "), "{s}");
    assert!(s.contains("run it: tare kernels --invocations "), "{s}");
}

/// Actions at each stage run where they should (a shell action logs its stage, benchmark and
/// program), a meter reads a file around each invocation, and a failing action stops the
/// session with one line naming it and its stage.
#[test]
fn actions_and_meters_at_their_stages() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let counter = dir.path().join("counter");
    std::fs::write(&counter, "41\n").unwrap();
    let j = dir.path().join("k.json");
    let shell = |stage: &str| {
        format!(
            "{stage}:shell:echo $TARE_STAGE $TARE_BENCHMARK $TARE_PROGRAM $TARE_ROUND >> {}",
            log.display()
        )
    };
    let out = tare()
        .args([
            "kernels",
            FAKE,
            "--filter",
            "^(spin|empty)$",
            "-r",
            "2",
            "--warmup",
            "0",
        ])
        .args([
            "--sample-stop",
            "runs >= 3",
            "--sample-time",
            "1ms",
            "--seed",
            "3",
        ])
        .args(["--action", &shell("before-invocation")])
        .args(["--action", &shell("after-benchmark")])
        .args(["--action", &shell("before-repetition")])
        .args(["--action", "after-invocation:sleep:1ms"])
        .args(["--meter", &format!("count={}", counter.display())])
        .args(["--export-json", j.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let count = |prefix: &str| lines.iter().filter(|l| l.starts_with(prefix)).count();
    assert_eq!(count("before-invocation python "), 2, "{text}");
    assert_eq!(count("after-benchmark spin/python python"), 2, "{text}");
    assert_eq!(count("after-benchmark empty/python python"), 2, "{text}");
    // One request per sample when repetition actions exist: 3 samples × 2 kernels × 2.
    assert_eq!(count("before-repetition "), 12, "{text}");
    let v = json(&j);
    let inv = &v["benchmarks"][0]["extra"]["invocations"][0];
    assert_eq!(inv["meters"]["count.end"], 41.0);
    assert_eq!(inv["meters"]["count.delta"], 0.0);
    let out = tare()
        .args(["kernels", FAKE, "--filter", "^spin$", "-r", "1"])
        .args(QUICK)
        .args(["--action", "after-benchmark:shell:exit 5"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let e: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("tare: error:"))
        .collect();
    assert_eq!(e.len(), 1, "{err}");
    assert!(
        e[0].contains("shell 'exit 5' failed at after-benchmark"),
        "{err}"
    );
}

/// A session of the fake worker's `levels` kernel in two programs, the second `1.04×` the
/// first, each process at a level of (0.9, 1.0, 1.1) in turn; the second program's levels
/// `offset` steps later. Its stdout and export.
fn levels_session(offset: usize, invocations: usize) -> (String, Value) {
    levels_run("1.04", offset, invocations, 20)
}

/// [`levels_session`] with the second program `scale`× the first and `samples` a process.
fn levels_run(scale: &str, offset: usize, invocations: usize, samples: usize) -> (String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let prog = |name: &str, scale: &str| {
        format!(
            "env FAKE_LEVEL_FILE={} FAKE_SCALE={scale} python3 {FAKE}",
            dir.path().join(name).display()
        )
    };
    std::fs::write(dir.path().join("b"), offset.to_string()).unwrap();
    common::exported(
        tare()
            .args(["kernels", &prog("a", "1"), &prog("b", scale)])
            .args(["-n", "first", "-n", "second", "--filter", "^levels$"])
            .args(["--invocations", &invocations.to_string()])
            .args(["--sample-stop", &format!("runs >= {samples}")])
            .args(["--sample-time", "1ms", "--seed", "7", "--verbose"])
            .args(["--export-json", j.to_str().unwrap()]),
        &j,
    )
}

/// Samples of one process are not independent: a 4% difference that pooled samples would call
/// significant, while every process sits at its own level (0.9, 1.0, 1.1), does not hold across
/// processes. The verdict, the printed interval and the JSON's interval are the process-level
/// model's (one per invocation's median), so the interval on the line includes 1 beside
/// "no-significant-difference", with the reason on the line.
#[test]
fn a_verdict_must_hold_across_invocations() {
    // Each program's processes cycle through the levels; the second's one step later, so its
    // process of a round does not share the first's level (processes at their own levels, not
    // a level the whole round shares: that, pairing by round would cancel).
    let (stdout, v) = levels_session(1, 5);
    let c = &v["comparisons"][0];
    let words = c["words"].as_str().unwrap();
    assert_eq!(c["verdict"], "no-significant-difference", "{words}");
    assert!(
        words.contains("includes 1") && words.contains("5 vs 5 processes, paired over 5 rounds"),
        "{words}"
    );
    // The p-value is the process-level test's: the paired t on the per-round ratios of the
    // per-process means, the test the interval is of.
    assert_eq!(c["test"], "paired t on log per-round ratios", "{c}");
    assert_eq!(c["paired"], true, "{c}");
    let (lo, hi) = (
        c["ratio_ci_low"].as_f64().unwrap(),
        c["ratio_ci_high"].as_f64().unwrap(),
    );
    assert!(
        lo <= 1.0 && 1.0 <= hi,
        "the interval behind the verdict: {c}"
    );
    // The line prints that interval and the reason.
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("second "))
        .unwrap();
    assert!(
        line.contains(&format!("[{lo:.3}, {hi:.3}] no-significant-difference (CI")),
        "{stdout}"
    );
    assert_eq!(
        v["extra"]["comparison_unit"],
        "invocation, paired by round where both sides have 3 or more rounds (geometric mean of per-round ratios of per-invocation means); otherwise unpaired (ratio of means of per-invocation means)"
    );
}

/// Processes of one round pair: where the level each process sits at is the round's (the
/// machine's state, shared by the programs of the round), the per-round ratios cancel it, and a
/// 4% difference present in every round is a verdict, with the interval on the line (issue
/// 26). Unpaired, the levels (0.9, 1.0, 1.1) swamp it, as the test above shows.
#[test]
fn a_level_the_whole_round_shares_cancels() {
    let (stdout, v) = levels_session(0, 6);
    let c = &v["comparisons"][0];
    assert_eq!(c["verdict"], "slower", "{c}\n{stdout}");
    assert_eq!(c["paired"], true, "{c}");
    let (lo, hi) = (
        c["ratio_ci_low"].as_f64().unwrap(),
        c["ratio_ci_high"].as_f64().unwrap(),
    );
    assert!(1.0 < lo && lo <= 1.04 && (1.04..1.1).contains(&hi), "{c}");
    assert!(
        c["words"]
            .as_str()
            .unwrap()
            .contains("paired over 6 rounds"),
        "{c}"
    );
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("second "))
        .unwrap();
    assert!(
        line.contains(&format!("[{lo:.3}, {hi:.3}] slower")),
        "{stdout}"
    );
}

/// The programs of one kernel calibrate alone in their first process, at whatever speed the
/// machine had then; from the next round on they run the same loops per sample (the larger),
/// so that a cost each sample carries (a harness's bookkeeping between rounds) weighs alike on
/// both sides. Programs more than 4× apart keep their own loops.
#[test]
fn programs_of_one_kernel_run_the_same_loops_after_the_first_round() {
    let session = |scale: &str| -> Vec<(Vec<u64>, u64)> {
        let (_, v) = levels_run(scale, 0, 3, 5);
        // Per program: the loops of its counted samples in each process, and the kernel's.
        v["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                let mut per: Vec<u64> = vec![0; 3];
                for r in b["runs"].as_array().unwrap() {
                    let s = &r["extra"]["sample"];
                    if r["warmup"] != true {
                        per[s["invocation"].as_u64().unwrap() as usize] =
                            s["loops"].as_u64().unwrap();
                    }
                }
                (per, b["extra"]["kernel"]["loops"].as_u64().unwrap())
            })
            .collect()
    };
    // 2.5× slower: calibrated apart, then the fast one's loops on both.
    let s = session("2.5");
    let ((fast, fast_k), (slow, slow_k)) = (&s[0], &s[1]);
    assert!(fast[0] > slow[0] * 2, "calibrated alone: {fast:?} {slow:?}");
    assert_eq!(fast[1..], slow[1..], "{fast:?} {slow:?}");
    assert_eq!(slow[1], fast[0], "{fast:?} {slow:?}");
    assert_eq!((fast_k, slow_k), (&fast[0], &fast[0]));
    // 10× slower: each keeps its own.
    let s = session("10");
    let ((fast, _), (slow, _)) = (&s[0], &s[1]);
    assert!(fast[0] > slow[0] * 4, "{fast:?} {slow:?}");
    assert_eq!(fast[2], fast[0], "{fast:?}");
    assert_eq!(slow[2], slow[0], "{slow:?}");
}

/// Invocations adapt when no count is given: at least 5 processes, more while the processes'
/// interval is wider than --precision, bounded by --max-invocations and --time-budget; a kernel
/// that stops unsettled says "inconclusive" with how far it is. `-i` still fixes the count.
#[test]
fn invocations_adapt_to_the_spread_of_processes() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let j = dir.path().join(format!("{name}.json"));
        let out = tare()
            .args([
                "kernels",
                &format!(
                    "env FAKE_LEVEL_FILE={} python3 {FAKE}",
                    dir.path().join(name).display()
                ),
            ])
            .args(["--filter", "^levels$", "--sample-stop", "runs >= 3"])
            .args(["--sample-time", "1ms", "--seed", "3"])
            .args(["--export-json", j.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{extra:?}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v = json(&j);
        let b = &v["benchmarks"][0];
        let n = b["extra"]["invocations"].as_array().unwrap().len();
        (n, b["stop_reason"].as_str().unwrap().to_string(), stdout)
    };
    // Processes at 0.9, 1.0 and 1.1 µs: ±5% is not reached in 7 processes.
    let (n, why, stdout) = run("a", &["--max-invocations", "7", "--verbose"]);
    assert_eq!(n, 7, "{why}");
    assert!(
        why.starts_with("inconclusive: processes differ by")
            && why.contains("more invocations would settle it to ±5.0%")
            && why.contains("--max-invocations 7 reached"),
        "{why}"
    );
    assert!(
        stdout.contains("levels/python: inconclusive: processes differ by"),
        "{stdout}"
    );
    // "±" says what it is: the interval over the processes.
    assert!(
        stdout.contains("(95% CI of the mean over 7 processes; next session "),
        "{stdout}"
    );
    // A precision the spread allows: the fewest processes, 5, and no "inconclusive".
    let (n, why, stdout) = run("b", &["--precision", "40%"]);
    assert_eq!(n, 5, "{why}");
    assert!(why.starts_with("invocations: ±"), "{why}");
    assert!(!stdout.contains("inconclusive"), "{stdout}");
    // The time budget bounds them, settled or not.
    let (n, why, _) = run("c", &["--time-budget", "1ms"]);
    assert_eq!(n, 1, "{why}");
    assert!(
        why.contains("--time-budget") && why.starts_with("inconclusive: 1 invocations"),
        "{why}"
    );
    // A count given is kept.
    let (n, _, _) = run("d", &["-r", "2"]);
    assert_eq!(n, 2);
    // Bad values are one line each.
    for (flag, value) in [("--precision", "0"), ("--time-budget", "soon")] {
        let out = tare()
            .args(["kernels", FAKE, flag, value])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.lines().count() == 1 && err.contains(flag), "{err}");
    }
}

/// The time budget holds against a slow round: no round is started that would end past it at
/// the pace of the slowest so far (rounds after the first take 4 s here, the first well under
/// 1 s; an average over the rounds, the first included, started a third and ended past 8 s),
/// and the stop reason says so.
#[test]
fn a_round_that_would_pass_the_time_budget_is_not_started() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let script = dir.path().join("worker.sh");
    // Invocation 0 is discovery, 1 the first round; from 2 on each sleeps 4 s before hello.
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nn=$(cat {c} 2>/dev/null || echo 0)\necho $((n + 1)) > {c}\n\
             [ \"$n\" -ge 2 ] && sleep 4\nexec env FAKE_LEVEL_FILE={l} python3 {FAKE}\n",
            c = count.display(),
            l = dir.path().join("levels").display()
        ),
    )
    .unwrap();
    let j = dir.path().join("b.json");
    let out = tare()
        .args(["kernels", &format!("sh {}", script.display())])
        .args(["--filter", "^levels$", "--sample-stop", "runs >= 3"])
        .args(["--sample-time", "1ms", "--seed", "3", "--time-budget", "8s"])
        .args(["--export-json", j.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&j);
    let b = &v["benchmarks"][0];
    let why = b["stop_reason"].as_str().unwrap();
    assert_eq!(
        b["extra"]["invocations"].as_array().unwrap().len(),
        2,
        "{why}"
    );
    assert!(
        why.starts_with("inconclusive: 2 invocations")
            && why.contains(
                "--time-budget 8s a benchmark reached (8s for 1 benchmark): another round (~"
            )
            && why.contains("the slowest so far) would end at"),
        "{why}"
    );
}

/// With fewer than 5 processes a side there is no verdict, however clear the samples: a kernel
/// twice as slow is "inconclusive: 2 invocations" on the line, and found at 5.
#[test]
fn no_verdict_from_fewer_than_five_invocations() {
    let dir = tempfile::tempdir().unwrap();
    let prog = |name: &str, scale: &str| {
        format!(
            "env FAKE_LEVEL_FILE={} FAKE_SCALE={scale} python3 {FAKE}",
            dir.path().join(name).display()
        )
    };
    let run = |tag: &str, i: &str| {
        let j = dir.path().join(format!("{tag}.json"));
        let out = tare()
            .args([
                "kernels",
                &prog(&format!("{tag}a"), "1"),
                &prog(&format!("{tag}b"), "2"),
            ])
            .args(["-n", "one", "-n", "two", "--filter", "^levels$", "-r", i])
            .args([
                "--sample-stop",
                "runs >= 5",
                "--sample-time",
                "1ms",
                "--seed",
                "2",
            ])
            .args(["--export-json", j.to_str().unwrap()])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (json(&j)["comparisons"][0].clone(), stdout)
    };
    let (c, stdout) = run("few", "2");
    assert_eq!(c["verdict"], "no-significant-difference", "{c}");
    let words = c["words"].as_str().unwrap();
    assert!(words.contains("inconclusive: 2 invocations"), "{words}");
    // The reason is in the verdict's cell, in full once below the table.
    let line = stdout.lines().find(|l| l.starts_with("levels ")).unwrap();
    assert!(line.ends_with("? 2 invocations"), "{stdout}");
    assert!(
        stdout.contains("\n? inconclusive: 2 invocations (a verdict needs"),
        "{stdout}"
    );
    let (c, _) = run("enough", "5");
    assert_eq!(c["verdict"], "slower", "{c}");
}

/// Issue 43: a program that is no worker (it exits before its 'hello') is told so in one line,
/// with what to run instead, not "worker closed the connection".
#[test]
fn a_program_that_is_no_worker_is_told_what_a_worker_is() {
    let out = tare().args(["kernels", "/bin/true"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "tare: error: program '/bin/true': it exited with status 0 without speaking tare's worker protocol (no 'hello')"
        ),
        "{err}"
    );
    for what in [
        "tare client library",
        "tare native-worker HARNESS TARGET",
        "docs/protocol.md",
    ] {
        assert!(err.contains(what), "{what}: {err}");
    }
    assert!(!err.contains("closed the connection"), "{err}");
}

/// Issue 24: a worker that dies at start says why: the last lines of its stderr (here
/// Python's ModuleNotFoundError), not only "exited with status 1".
#[test]
fn a_worker_that_dies_at_start_shows_its_stderr() {
    let out = tare()
        .args(["kernels", "python3 -c 'import tare_no_such_module'"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("it exited with status 1"), "{err}");
    assert!(
        err.contains("(its stderr ends: ")
            && err.contains("ModuleNotFoundError: No module named 'tare_no_such_module'"),
        "{err}"
    );
}

/// `--loops N` (JMH's single-shot mode with a batch of N): every request the worker gets is
/// for exactly N loops (no calibration, no 2N linearity samples), the results record N as
/// fixed, the summary says so; `--loops 0` and `--loops` with `--sample-time` are usage errors.
#[test]
fn fixed_loops_run_exactly_n_loops_a_sample() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let log = dir.path().join("loops.log");
    let out = tare()
        .args([
            "kernels", FAKE, "--filter", "^spin$", "--loops", "7", "-r", "2",
        ])
        .args(["--sample-stop", "runs >= 4", "--seed", "5", "--export-json"])
        .arg(&j)
        .env("FAKE_LOOPS_LOG", &log)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("N=7 fixed"), "{stdout}");
    let asked: Vec<u64> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert!(asked.len() >= 2, "{asked:?}");
    assert!(asked.iter().all(|&n| n == 7), "requests: {asked:?}");
    let v = json(&j);
    let b = &v["benchmarks"][0];
    let k = &b["extra"]["kernel"];
    assert_eq!(k["loops"], 7);
    assert_eq!(k["loops_fixed"], true);
    assert!(k["linearity"].is_null());
    assert!(k["linearity_skipped"]
        .as_str()
        .unwrap()
        .contains("--loops 7"));
    for r in b["runs"].as_array().unwrap() {
        assert_eq!(r["extra"]["sample"]["loops"], 7);
    }
    for (args, what) in [
        (&["--loops", "0"][..], "--loops 0"),
        (
            &["--loops", "3", "--sample-time", "1ms"][..],
            "--sample-time",
        ),
    ] {
        let out = tare().args(["kernels", FAKE]).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(what), "{args:?}: {err}");
    }
}

/// Three programs over six rounds: every program runs first, second and third in a round twice
/// (counterbalanced rounds, `method::order`), whatever the seed; a shuffle alone left program 0
/// ahead of program 1 in 8 of 10 rounds with seed 26 (the Google Benchmark head-to-head test).
#[test]
fn programs_take_every_position_of_a_round_equally_often() {
    for seed in ["26", "5"] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let out = tare()
            .args(["kernels", FAKE, FAKE, FAKE, "-n", "x", "-n", "y", "-n", "z"])
            .args([
                "--filter",
                "^empty$",
                "-r",
                "6",
                "--sample-stop",
                "runs >= 6",
            ])
            .args(["--sample-time", "1ms", "--seed", seed, "-q"])
            .args([
                "--action",
                &format!(
                    "before-invocation:shell:echo $TARE_ROUND $TARE_PROGRAM >> {}",
                    log.display()
                ),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&log).unwrap();
        // Lines come in the order the invocations started: position = index within a round.
        let mut at: std::collections::BTreeMap<(String, usize), usize> = Default::default();
        let mut position: std::collections::BTreeMap<String, usize> = Default::default();
        for line in text.lines() {
            let (round, program) = line.split_once(' ').unwrap();
            let p = position.entry(round.to_string()).or_insert(0);
            *at.entry((program.to_string(), *p)).or_insert(0) += 1;
            *p += 1;
        }
        assert_eq!(position.len(), 6, "{text}");
        assert_eq!(at.len(), 9, "{text}");
        assert!(at.values().all(|&n| n == 2), "seed {seed}: {at:?}\n{text}");
    }
}

/// Notes that change no verdict (here none is drawn: outliers, a trend over the samples,
/// interference, processes that differ) are counted in one line naming their kinds; --verbose
/// prints each; the JSON export keeps all.
/// Which such notes a session gets is the data's (40 samples of a Python loop nearly always
/// have outliers); the line must match the export either way.
#[test]
fn notes_that_change_no_conclusion_are_one_line_unless_verbose() {
    let dir = tempfile::tempdir().unwrap();
    let run = |verbose: bool| {
        let j = dir.path().join(format!("n{verbose}.json"));
        let mut c = tare();
        c.args(["kernels", FAKE, &format!("python3 {FAKE}")])
            .args(["-n", "a", "-n", "b", "--filter", "^spin$", "-r", "2"])
            .args(["--sample-stop", "runs >= 40", "--sample-time", "1ms"])
            .args(["--export-json", j.to_str().unwrap()]);
        if verbose {
            c.arg("--verbose");
        }
        let out = c.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{stdout}");
        let notes: Vec<(String, String)> = json(&j)["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|b| b["diagnostics"].as_array().cloned().unwrap_or_default())
            .map(|d| {
                (
                    d["kind"].as_str().unwrap().to_string(),
                    d["message"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        (stdout, notes)
    };
    // With 2 processes a side there is no verdict for a note to change: each is held (counted
    // by kind in one line) but those saying the values may not be the kernel's at all.
    const ALWAYS: [&str; 4] = [
        "checksum-missing",
        "metric-disagrees",
        "linearity",
        "unresolved-samples",
    ];
    for verbose in [false, true] {
        let (stdout, notes) = run(verbose);
        let held: Vec<&str> = notes
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| !ALWAYS.contains(k))
            .collect();
        let line = stdout.lines().find(|l| l.contains("--verbose shows them"));
        if verbose {
            assert!(line.is_none(), "{stdout}");
        } else if !held.is_empty() {
            let line = line.unwrap_or_else(|| panic!("{stdout}"));
            for k in &held {
                assert!(line.contains(k), "{k}: {line}");
            }
        }
        for (k, m) in &notes {
            // Each note's text: on the terminal where shown, not where held.
            let head: String = m.chars().take(40).collect();
            let shown = verbose || ALWAYS.contains(&k.as_str());
            assert_eq!(stdout.contains(&head), shown, "{k}: {head}\n{stdout}");
        }
    }
}
