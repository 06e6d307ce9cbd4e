//! A journal nothing can destroy (issue 12): a session never truncates a journal it did not
//! create, a second session on the same path refuses while the first holds it, and `tare
//! recover` keeps every valid run of a damaged journal.

mod common;

use common::tare;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn runs(doc: &Value) -> usize {
    doc["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["runs"].as_array().unwrap().len())
        .sum()
}

fn lines(p: &Path) -> usize {
    std::fs::read_to_string(p)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn wait_for_lines(p: &Path, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while lines(p) < n {
        assert!(
            Instant::now() < deadline,
            "{} never got {n} lines",
            p.display()
        );
        std::thread::sleep(Duration::from_millis(30));
    }
}

fn long_session(json: &Path) -> Child {
    tare()
        .args(["run", "--style", "none", "--runs", "400", "--export-json"])
        .arg(json)
        .args(["--", "sleep", "0.02"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_journal_survives_kill_9_and_a_new_session_on_the_same_path() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let journal = dir.path().join("r.json.journal");
    let mut first = long_session(&j);
    wait_for_lines(&journal, 6);
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    let before = std::fs::read(&journal).unwrap();
    let kept = before.iter().filter(|&&b| b == b'\n').count() - 1;
    assert!(kept >= 5);

    let out = tare()
        .args(["run", "--style", "none", "--runs", "2", "--export-json"])
        .arg(&j)
        .arg("true")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("tare recover"),
        "says how to keep the runs: {err}"
    );
    assert!(err.contains("--overwrite-journal"), "{err}");
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        before,
        "journal untouched"
    );
    assert!(!j.exists(), "no export written over");

    // recover keeps every run, then the path is free again.
    let rec = tare()
        .arg("recover")
        .arg(&journal)
        .arg("--export-json")
        .arg(&j)
        .output()
        .unwrap();
    assert!(
        rec.status.success(),
        "{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    assert_eq!(runs(&json(&j)), kept);
    assert!(!journal.exists(), "removed once its runs are in the JSON");
    let again = tare()
        .args(["run", "--style", "none", "--runs", "2", "--export-json"])
        .arg(dir.path().join("r.json"))
        .arg("true")
        .output()
        .unwrap();
    assert!(again.status.success());
}

#[test]
fn overwrite_journal_discards_an_old_journal_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let journal = dir.path().join("r.json.journal");
    std::fs::write(&journal, "{\"type\":\"session\"}\n").unwrap();
    let out = tare()
        .args(["run", "--style", "none", "--runs", "2", "--export-json"])
        .arg(&j)
        .args(["--overwrite-journal", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(runs(&json(&j)), 2);
    assert!(!journal.exists());
}

#[test]
fn a_second_session_on_the_same_path_refuses_and_the_first_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let journal = dir.path().join("r.json.journal");
    let mut first = tare()
        .args(["run", "--style", "none", "--runs", "40", "--export-json"])
        .arg(&j)
        .args(["--", "sleep", "0.02"])
        .spawn()
        .unwrap();
    wait_for_lines(&journal, 3);
    for overwrite in [false, true] {
        let mut c = tare();
        c.args(["run", "--style", "none", "--runs", "2", "--export-json"])
            .arg(&j);
        if overwrite {
            c.arg("--overwrite-journal");
        }
        let out = c.arg("true").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("in use by another running tare session"),
            "{err}"
        );
    }
    // Nor can the running session's journal be recovered (and removed) under it.
    let rec = tare().arg("recover").arg(&journal).output().unwrap();
    assert_eq!(rec.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&rec.stderr).contains("still running"));
    assert!(first.wait().unwrap().success());
    let doc = json(&j);
    assert_eq!(runs(&doc), 40);
    assert_eq!(doc["complete"], true);
}

#[test]
fn recover_keeps_every_valid_run_of_a_damaged_journal() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let out = tare()
        .args(["run", "--style", "none", "--runs", "12", "--export-json"])
        .arg(&j)
        .arg("true")
        .output()
        .unwrap();
    assert!(out.status.success());
    // The journal the session wrote, rebuilt from its results.
    let doc = json(&j);
    let mut header = doc.clone();
    header["benchmarks"][0]["runs"] = serde_json::json!([]);
    header["type"] = "session".into();
    let mut lines: Vec<Vec<u8>> = vec![serde_json::to_vec(&header).unwrap()];
    for r in doc["benchmarks"][0]["runs"].as_array().unwrap() {
        lines.push(
            serde_json::to_vec(&serde_json::json!({"type": "run", "benchmark": 0, "run": r}))
                .unwrap(),
        );
    }
    // Three invalid bytes in run 3's line, runs 5 and 6 duplicated, a torn last line.
    let l = &mut lines[3];
    let mid = l.len() / 2;
    l.splice(mid..mid, [0xff, 0xfe, 0xfd]);
    let dup = [lines[5].clone(), lines[6].clone()];
    lines.insert(7, dup[0].clone());
    lines.insert(8, dup[1].clone());
    let torn = lines[1][..20].to_vec();
    lines.push(torn);
    let journal = dir.path().join("damaged.journal");
    std::fs::write(&journal, lines.join(&b'\n')).unwrap();

    // Only CSV: the journal stays (it holds more than the CSV does).
    let csv = dir.path().join("rec.csv");
    let out = tare()
        .arg("recover")
        .arg(&journal)
        .arg("--export-csv")
        .arg(&csv)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(journal.exists());
    assert_eq!(lines_of(&csv), 11);

    let rec = dir.path().join("rec.json");
    let out = tare()
        .arg("recover")
        .arg(&journal)
        .arg("--export-json")
        .arg(&rec)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        runs(&json(&rec)),
        11,
        "12 runs, one damaged, duplicates once"
    );
    assert!(
        err.contains("skipped 4 lines (1 not UTF-8, 1 not a journal line, 2 duplicate)"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!journal.exists());
}

fn lines_of(csv: &Path) -> usize {
    lines(csv) - 1
}
