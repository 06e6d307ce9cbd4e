//! `tare table` on synthetic results: regression counts and exit code of `--dump` against a
//! baseline, the diff and category filters, CSV numbers, repetitions summarized, one-line
//! errors. No root needed.

mod common;

use common::tare;
use std::path::{Path, PathBuf};
use tare::suite::classify::Category;
use tare::suite::record::{RunRecord, Writer};

fn rec(tool: &str, input: &str, rep: usize, status: &str, cat: Category, cpu: f64) -> RunRecord {
    RunRecord {
        key: format!("{tool}/c/set/{input}#{rep}"),
        suite: "s".into(),
        tool: tool.into(),
        config: "c".into(),
        input_set: "set".into(),
        input: input.into(),
        rep,
        expected: Some("ok".into()),
        status: status.into(),
        category: cat,
        score: match cat {
            Category::Correct => 2.0,
            Category::Wrong => -32.0,
            _ => 0.0,
        },
        wall_time: cpu * 1.1,
        cpu_time: cpu,
        user_time: cpu,
        system_time: 0.0,
        peak_memory: Some(1_000_000),
        exit_code: Some(0),
        signal: None,
        termination: "exit".into(),
        cores: vec![0],
        log: String::new(),
        files: vec![],
        withheld: vec![],
        isolated: true,
        method: "cgroup-v1".into(),
        orphans_killed: 0,
        finished_at: 0.0,
    }
}

fn write(path: &Path, recs: &[RunRecord]) {
    let _ = std::fs::remove_file(path);
    let mut w = Writer::append(path).unwrap();
    for r in recs {
        w.write(r).unwrap();
    }
}

fn tmp(name: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("table-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn dump_counts_regressions_against_a_baseline() {
    let d = tmp("dump");
    let base = d.join("base.jsonl");
    let cur = d.join("cur.jsonl");
    use Category::*;
    write(
        &base,
        &[
            rec("a", "1", 0, "ok", Correct, 0.1),
            rec("a", "2", 0, "ok", Correct, 0.2),
            rec("a", "3", 0, "timeout", Timeout, 1.0),
            rec("b", "1", 0, "ok", Correct, 0.1),
        ],
    );
    write(
        &cur,
        &[
            rec("a", "1", 0, "ok", Correct, 0.1),
            rec("a", "2", 0, "timeout", Timeout, 1.0),
            rec("a", "3", 0, "ok", Correct, 0.3),
            rec("b", "1", 0, "bad", Wrong, 0.1),
        ],
    );
    let o = tare()
        .arg("table")
        .arg(&cur)
        .arg("--dump")
        .arg("--baseline")
        .arg(&base)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("REGRESSIONS a/c against base: 1 (correct→timeout 1); fixed 1; status changed 2 of 3 compared"), "{out}");
    assert!(
        out.contains("REGRESSIONS b/c against base: 1 (correct→wrong 1)"),
        "{out}"
    );
    assert!(out.contains("REGRESSIONS total 2"), "{out}");
    assert!(
        out.contains("STATS a/c: correct 2, timeout 1; score 4"),
        "{out}"
    );
    // Against itself: no regressions, exit 0.
    let o = tare()
        .arg("table")
        .arg(&base)
        .arg(&base)
        .arg("--dump")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("REGRESSIONS total 0"));
}

#[test]
fn repetitions_filters_and_csv() {
    let d = tmp("csv");
    let f = d.join("r.jsonl");
    use Category::*;
    write(
        &f,
        &[
            rec("a", "1", 0, "ok", Correct, 0.1),
            rec("a", "1", 1, "ok", Correct, 0.3),
            rec("a", "1", 2, "timeout", Timeout, 0.2),
            rec("b", "1", 0, "ok", Correct, 0.1),
            rec("a", "2", 0, "ok", Correct, 0.1),
            rec("b", "2", 0, "bad", Wrong, 0.1),
        ],
    );
    let o = tare()
        .arg("table")
        .arg(&f)
        .args(["--csv", "-"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let csv = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    // Input 1 of a: majority status ok, median CPU 0.2 s of 3 repetitions.
    assert!(
        lines[1].starts_with("set,1,ok,ok,correct,1.333333333,0.2,"),
        "{csv}"
    );
    assert!(lines[1].contains(",3,"), "{csv}");
    let o = tare()
        .arg("table")
        .arg(&f)
        .args(["--csv", "-", "--diff"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().count(),
        2,
        "only input 2 differs"
    );
    let o = tare()
        .arg("table")
        .arg(&f)
        .args(["--csv", "-", "--category", "wrong", "--columns", "^b/"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&o.stdout);
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(!csv.contains("a/c"), "{csv}");
    let html = d.join("t.html");
    let o = tare()
        .arg("table")
        .arg(&f)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("(2/3)"),
        "repetitions that disagree are shown"
    );
    assert_eq!(
        page.matches("<svg").count(),
        3,
        "scatter, quantile, score-based quantile"
    );
}

#[test]
fn errors_are_one_line() {
    let o = tare()
        .args(["table", "/nonexistent/results", "--dump"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    let o = tare().args(["table", "x"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--export-html"));
    let o = tare()
        .args(["table", "x", "--dump", "--category", "nope"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// Issue 22: the regression gate never passes on nothing — a column with nothing in common
/// with the baseline, or baseline runs missing now, exit 2 with the reason unless
/// `--allow-missing`.
#[test]
fn the_gate_does_not_pass_on_missing_runs() {
    let d = tmp("missing");
    let base = d.join("base.jsonl");
    let cur = d.join("cur.jsonl");
    let other = d.join("other.jsonl");
    use Category::*;
    write(
        &base,
        &[
            rec("a", "1", 0, "ok", Correct, 0.1),
            rec("a", "2", 0, "ok", Correct, 0.2),
        ],
    );
    // Input 2 (correct in the baseline) did not run now.
    write(&cur, &[rec("a", "1", 0, "ok", Correct, 0.1)]);
    // Another input set altogether: nothing in common.
    write(&other, &[rec("a", "9", 0, "ok", Correct, 0.1)]);
    let dump = |cur: &Path, extra: &[&str]| {
        let o = tare()
            .arg("table")
            .arg(cur)
            .arg("--dump")
            .arg("--baseline")
            .arg(&base)
            .args(extra)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = dump(&cur, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("1 runs of the baseline") && err.contains("--allow-missing"),
        "{err}"
    );
    let (code, err) = dump(&other, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no run in common"), "{err}");
    let (code, err) = dump(&cur, &["--allow-missing"]);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_run_recorded_twice_is_refused_in_one_line() {
    let d = tmp("dups");
    let f = d.join("results.jsonl");
    use Category::*;
    write(
        &f,
        &[
            rec("a", "1", 0, "ok", Correct, 0.1),
            rec("a", "2", 0, "ok", Correct, 0.2),
            rec("a", "1", 0, "ok", Correct, 0.1),
        ],
    );
    let o = tare().arg("table").arg(&d).arg("--dump").output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("recorded more than once"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
