//! `tare run --build`: variants built before the first run with `{seed}`/`{out}`, rotated
//! over setups, each run's variant recorded and actually the one that ran; replaying a seed
//! runs its variant; a failing build is one line, before any run.

mod common;
#[path = "common/skip.rs"]
mod skip;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn tare(log: &Path, args: &[&str]) -> std::process::Output {
    common::tare()
        .env("NO_COLOR", "1")
        .env("PROBE_OUT", log)
        .args(args)
        .output()
        .unwrap()
}

fn has_cc() -> bool {
    Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn build_variants_rotate_and_are_recorded() {
    if !has_cc() {
        skip::skip("a C compiler (cc)", "apt-get install gcc libc6-dev");
        return;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/variant.c");
    let build = format!("cc -O2 -DVARIANT={{seed}} -o {{out}} {}", src.display());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("variants.log");
    let j = dir.path().join("r.json");
    let out = tare(
        &log,
        &[
            "run",
            "--style",
            "none",
            "--build",
            &build,
            "--build-variants",
            "3",
            "--randomize",
            "env",
            "--runs",
            "6",
            "--seed",
            "4",
            "--export-json",
            j.to_str().unwrap(),
            "{out}",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let recorded: Vec<u64> = doc["benchmarks"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["extra"]["setup"]["build"].as_u64().unwrap())
        .collect();
    assert_eq!(recorded, [1, 2, 3, 1, 2, 3]);
    let ran: Vec<u64> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(ran, recorded);
    assert_eq!(doc["extra"]["builds"].as_array().unwrap().len(), 3);
    assert!(doc["extra"]["builds"][2]["command"]
        .as_str()
        .unwrap()
        .contains("-DVARIANT=3"));

    // Replay the fifth run's setup: variant 2 every time.
    let seed = doc["benchmarks"][0]["runs"][4]["extra"]["setup"]["seed"]
        .as_u64()
        .unwrap()
        .to_string();
    let log2 = dir.path().join("replay.log");
    let out = tare(
        &log2,
        &[
            "run",
            "--style",
            "none",
            "--build",
            &build,
            "--build-variants",
            "3",
            "--randomize",
            "env",
            "--replay-setup",
            &seed,
            "--runs",
            "2",
            "{out}",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&log2).unwrap(), "2\n2\n");
}

#[test]
fn failing_or_unused_builds_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("never.log");
    let out = tare(
        &log,
        &[
            "run",
            "--style",
            "none",
            "--build",
            "exit 7 # {out}",
            "--runs",
            "2",
            "{out}",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--build variant 1 failed"), "{err}");
    let out = tare(&log, &["run", "--build", "make OUT={out}", "true"]);
    assert_eq!(out.status.code(), Some(2));
    let out = tare(&log, &["run", "--build", "make", "{out}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!log.exists());
}
