//! The verdict column of `tare kernels`' table (issue 43): a comparison whose test was drawn and
//! whose interval includes 1 is a verdict, `~`, with nothing withheld below the table; only a
//! comparison no verdict could be drawn for (fewer than 5 processes a side) is `? REASON`, the
//! reason in full once below. Worker: the fake worker's `levels` kernel
//! (tests/kernels/fake_worker.py), every process at its own level (0.9, 1.0, 1.1 in turn), so
//! two identical programs differ between processes and not between programs.

mod common;
use common::tare;

use serde_json::Value;

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/fake_worker.py");

/// Standard output and the export of an A/A session of `levels` over `invocations` processes.
fn session(invocations: usize) -> (String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let prog = |name: &str| {
        format!(
            "env FAKE_LEVEL_FILE={} python3 {FAKE}",
            dir.path().join(name).display()
        )
    };
    // The second program's processes one level later than the first's of the same round.
    std::fs::write(dir.path().join("b"), "1").unwrap();
    common::exported(
        tare()
            .args(["kernels", &prog("a"), &prog("b")])
            .args(["-n", "first", "-n", "second", "--filter", "^levels$"])
            .args(["--invocations", &invocations.to_string()])
            .args(["--sample-stop", "runs >= 10", "--sample-time", "1ms"])
            .args(["--seed", "7", "--export-json", j.to_str().unwrap()])
            .env("COLUMNS", "200"),
        &j,
    )
}

fn table_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("levels"))
        .unwrap_or_else(|| panic!("no table line for levels: {stdout}"))
}

#[test]
fn an_interval_that_includes_1_is_a_verdict_not_a_withheld_one() {
    let (stdout, v) = session(5);
    let c = &v["comparisons"][0];
    let words = c["words"].as_str().unwrap();
    assert_eq!(c["verdict"], "no-significant-difference", "{words}");
    let (lo, hi) = (
        c["ratio_ci_low"].as_f64().unwrap(),
        c["ratio_ci_high"].as_f64().unwrap(),
    );
    assert!(lo <= 1.0 && 1.0 <= hi, "{c}");
    // The words keep the reason, and do not call the verdict withheld.
    assert!(
        words.contains("no significant difference: CI") && words.contains("includes 1"),
        "{words}"
    );
    assert!(!words.contains("withheld"), "{words}");
    let line = table_line(&stdout);
    assert!(line.trim_end().ends_with('~'), "{stdout}");
    assert!(!stdout.lines().any(|l| l.starts_with("? ")), "{stdout}");
}

#[test]
fn too_few_processes_is_withheld_with_its_reason_once() {
    let (stdout, v) = session(2);
    let c = &v["comparisons"][0];
    let words = c["words"].as_str().unwrap();
    assert_eq!(c["verdict"], "no-significant-difference", "{words}");
    assert!(
        words.contains(" — withheld: inconclusive: 2 invocations"),
        "{words}"
    );
    let line = table_line(&stdout);
    assert!(line.trim_end().ends_with("? 2 invocations"), "{stdout}");
    let below: Vec<&str> = stdout.lines().filter(|l| l.starts_with("? ")).collect();
    assert_eq!(below.len(), 1, "{stdout}");
    assert!(below[0].contains("at least 5 processes a side"), "{stdout}");
}
