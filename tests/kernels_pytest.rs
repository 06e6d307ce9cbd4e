//! pytest-benchmark suites under `tare kernels` through `tare native-worker pytest-benchmark
//! TARGET`: tests/kernels/pytest_bench/test_suite.py (needs python3 with pytest-benchmark;
//! .ci/services.d/50-pytest-benchmark.sh installs it), listed, measured, and two copies (and a
//! third with one benchmark slower) compared head to head, each invocation one pytest process
//! that serves every request.

mod common;
use common::tare;
#[path = "common/skip.rs"]
mod skip;

use std::path::Path;

/// The tests of this file measure real kernels: they take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn take_turn() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn have_pytest_benchmark() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import pytest, pytest_benchmark"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn needs_pytest_benchmark() {
    skip::skip(
        "python3 with pytest and pytest-benchmark",
        "run .ci/services.d/50-pytest-benchmark.sh as root",
    );
}

/// The suite copied to `dir/name/test_suite.py`, `test_hash` doing `slower`% more work.
fn suite(dir: &Path, name: &str, slower: u32) -> String {
    let src = include_str!("kernels/pytest_bench/test_suite.py");
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let text = src.replace("SLOWER_HASH = 0", &format!("SLOWER_HASH = {slower}"));
    assert!(slower == 0 || text != src);
    let f = d.join("test_suite.py");
    std::fs::write(&f, text).unwrap();
    format!(
        "{} native-worker pytest-benchmark {}",
        env!("CARGO_BIN_EXE_tare"),
        f.display()
    )
}

#[test]
fn a_pytest_benchmark_suite_listed_and_measured() {
    if !have_pytest_benchmark() {
        return needs_pytest_benchmark();
    }
    let _turn = take_turn();
    let dir = tempfile::tempdir().unwrap();
    let w = suite(dir.path(), "a", 0);
    // Parameters a level of the name; a test without the benchmark fixture is no kernel.
    let out = tare().args(["kernels", &w, "--list"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.starts_with("test_"))
        .collect();
    assert_eq!(
        listed,
        ["test_sum/256", "test_sum/4096", "test_sort", "test_hash"],
        "{stdout}"
    );
    let j = dir.path().join("p.json");
    let (_, v) = common::exported(
        tare()
            .args(["kernels", &w, "-r", "2", "--sample-stop", "runs >= 5"])
            .args(["--sample-time", "2ms", "--seed", "5"])
            .args(["--export-json", j.to_str().unwrap()]),
        &j,
    );
    let benches = v["benchmarks"].as_array().unwrap();
    let names: Vec<&str> = benches
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "test_sum/256/python",
            "test_sum/4096/python",
            "test_sort/python",
            "test_hash/python"
        ]
    );
    for b in benches {
        let k = &b["extra"]["kernel"];
        let loops = k["loops"].as_u64().unwrap();
        assert!(loops > 1, "calibrated: {loops}");
        assert!(
            k["client"].as_str().unwrap().contains("pytest-benchmark "),
            "{k}"
        );
        assert_eq!(b["extra"]["invocations"].as_array().unwrap().len(), 2);
        // pytest-benchmark picks a round's iterations; aimed at N, they land near it.
        let mut own: Vec<u64> = b["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["extra"]["sample"]["loops"].as_u64().unwrap())
            .collect();
        assert!(own.len() >= 10, "{} samples", own.len());
        own.sort();
        let mid = own[own.len() / 2] as f64;
        assert!(
            mid > loops as f64 / 4.0 && mid < loops as f64 * 4.0,
            "{}: samples of {own:?} loops for N = {loops}",
            b["name"]
        );
    }
    // sum over 4096 numbers against 256: per-loop times in that order.
    let med = |i: usize| {
        benches[i]["summary"]["wall_time"]["median"]
            .as_f64()
            .unwrap()
    };
    assert!(med(1) / med(0) > 4.0, "{} / {}", med(1), med(0));
}

/// Two identical copies and a third whose `test_hash` does three times the work, in one
/// session of 12 rounds: no verdict between the identical two, and only `test_hash` slower
/// in the third. (Python processes here differ by 20-40% under load: a large change.)
#[test]
fn copies_of_one_pytest_suite_head_to_head() {
    if !have_pytest_benchmark() {
        return needs_pytest_benchmark();
    }
    let _turn = take_turn();
    let dir = tempfile::tempdir().unwrap();
    let (a, b, slow) = (
        suite(dir.path(), "a", 0),
        suite(dir.path(), "b", 0),
        suite(dir.path(), "slow", 200),
    );
    common::head_to_head([&a, &b, &slow], dir.path(), 4, "test_hash", 1.8..5.0);
    // Each invocation's pytest is gone with it.
    let left = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(&*dir.path().to_string_lossy()))
        .count();
    assert_eq!(left, 0);
}
