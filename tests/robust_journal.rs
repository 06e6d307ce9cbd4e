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
        // Refused at the export's own lock (results/fsio) before the journal's is reached.
        assert!(err.contains("another running tare session"), "{err}");
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

/// A real journal of a session killed with -9 after `n` lines: (journal bytes as lines, the
/// directory it is in).
fn killed_journal(n: usize) -> (tempfile::TempDir, Vec<Vec<u8>>) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let journal = dir.path().join("r.json.journal");
    let mut s = long_session(&j);
    wait_for_lines(&journal, n);
    s.kill().unwrap();
    s.wait().unwrap();
    let bytes = std::fs::read(&journal).unwrap();
    std::fs::remove_file(&journal).unwrap();
    // Whole lines only (the last may be torn by the kill).
    let lines: Vec<Vec<u8>> = bytes
        .split(|&b| b == b'\n')
        .filter(|l| serde_json::from_slice::<Value>(l).is_ok())
        .map(|l| l.to_vec())
        .collect();
    (dir, lines)
}

fn recover_to(journal: &Path, json: &Path) -> (Option<i32>, String) {
    let out = tare()
        .arg("recover")
        .arg(journal)
        .arg("--export-json")
        .arg(json)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn damage(line: &[u8], after: &str) -> Vec<u8> {
    let at = line
        .windows(after.len())
        .position(|w| w == after.as_bytes())
        .unwrap_or_else(|| panic!("no {after} in the header"))
        + after.len();
    let mut l = line.to_vec();
    l[at] = 0xff;
    l
}

#[test]
fn recover_keeps_the_runs_of_a_journal_whose_header_is_damaged() {
    let (dir, lines) = killed_journal(11);
    let n = lines.len() - 1;
    assert!(n >= 10);
    let original: Value = serde_json::from_slice(&lines[0]).unwrap();
    for (case, after, name_kept) in [
        ("settings", "\"started_at\":", true),
        ("benchmarks", "\"benchmarks\":[{\"name\":", false),
    ] {
        let mut damaged = lines.clone();
        damaged[0] = damage(&lines[0], after);
        let journal = dir.path().join(format!("{case}.journal"));
        std::fs::write(&journal, damaged.join(&b'\n')).unwrap();
        let rec = dir.path().join(format!("{case}.json"));
        let (code, err) = recover_to(&journal, &rec);
        assert_eq!(code, Some(0), "{case}: {err}");
        assert!(err.contains("session header was damaged"), "{case}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        let doc = json(&rec);
        assert_eq!(runs(&doc), n, "{case}: every run line is kept");
        let name = doc["benchmarks"][0]["name"].as_str().unwrap();
        if name_kept {
            assert_eq!(name, original["benchmarks"][0]["name"], "{case}");
            assert_eq!(doc["method"], original["method"], "{case}");
        } else {
            assert!(name.contains("name lost"), "{case}: {name}");
            assert_eq!(doc["method"], original["method"], "{case}");
        }
    }
}

#[test]
fn recover_drops_runs_with_impossible_values_and_says_how_many() {
    let (dir, mut lines) = killed_journal(8);
    let n = lines.len() - 1;
    for (i, field, v) in [(2, "wall_time", -5.0), (3, "user_time", -0.001)] {
        let mut l: Value = serde_json::from_slice(&lines[i]).unwrap();
        l["run"][field] = v.into();
        lines[i] = serde_json::to_vec(&l).unwrap();
    }
    let journal = dir.path().join("bad.journal");
    std::fs::write(&journal, lines.join(&b'\n')).unwrap();
    let rec = dir.path().join("bad.json");
    let (code, err) = recover_to(&journal, &rec);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("skipped 2 lines (2 run with impossible values)"),
        "{err}"
    );
    let doc = json(&rec);
    assert_eq!(runs(&doc), n - 2);
    // What recover wrote, compare reads (it refuses negative times).
    let out = tare()
        .args(["compare", "--style", "none"])
        .arg(&rec)
        .arg(&rec)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!e.contains("no measurement gives"), "{e}");
}

#[test]
fn a_journal_path_holding_a_link_a_fifo_or_a_foreign_file_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let run = |json: &Path, overwrite: bool| {
        let mut c = tare();
        c.args(["run", "--style", "none", "--runs", "2", "--export-json"])
            .arg(json);
        if overwrite {
            c.arg("--overwrite-journal");
        }
        let out = c.arg("true").output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // A link, even the user's own, with or without --overwrite-journal.
    let a = dir.path().join("a.json");
    std::os::unix::fs::symlink(&victim, dir.path().join("a.json.journal")).unwrap();
    for overwrite in [false, true] {
        let (code, err) = run(&a, overwrite);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("is a symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(!a.exists());
    }
    // A FIFO: refused at once (not opened and waited on), and stays a FIFO.
    let b = dir.path().join("b.json");
    let fifo = dir.path().join("b.json.journal");
    common::nodes::mkfifo(&fifo);
    let (code, err) = run(&b, true);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("a FIFO, not a journal"), "{err}");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    // A file that is not a journal is not emptied, even with --overwrite-journal.
    let d = dir.path().join("d.json");
    std::fs::write(dir.path().join("d.json.journal"), "precious\n").unwrap();
    let (code, err) = run(&d, true);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is not a tare journal"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("d.json.journal")).unwrap(),
        "precious\n"
    );
}

/// The review's attack on a shared directory: a journal made beforehand by another user (to
/// forge runs or hold the lock), or one hard-linked to a victim file, is refused before a byte
/// is written, and the victim keeps its content.
#[test]
fn a_journal_of_another_user_or_with_another_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = |json: &Path| {
        let out = tare()
            .args(["run", "--style", "none", "--runs", "2", "--export-json"])
            .arg(json)
            .arg("true")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "").unwrap();
    let a = dir.path().join("a.json");
    std::fs::hard_link(&victim, dir.path().join("a.json.journal")).unwrap();
    let (code, err) = run(&a);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("hard links"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let b = dir.path().join("b.json");
        let j = dir.path().join("b.json.journal");
        std::fs::write(&j, "").unwrap();
        std::os::unix::fs::chown(&j, Some(65534), Some(65534)).unwrap();
        let (code, err) = run(&b);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("belongs to uid 65534"), "{err}");
        assert_eq!(std::fs::read_to_string(&j).unwrap(), "");
    }
}
