//! Calibration after a JIT's warm-up: for a worker whose language has a JIT (`lang=java`,
//! `js`), tare samples at the calibrated N until the samples stop getting faster, then takes N
//! again from their pace, so the steady state's samples are not shorter than `--sample-time`.
//! The Java client with tests/kernels/JitWorker.java (compiled here): `sum` (C2 compiles it)
//! and `warming` (10× the work for its first 150 ms after setup: code a JIT compiles after
//! calibration timed the interpreter). Before: `warming` had 21 of 51 samples at 0.5× the
//! sample time or more (median 0.12×); after: 53 of 53 (median 1.2×).

mod common;
use common::tare;

#[path = "common/skip.rs"]
mod skip;

use serde_json::Value;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn a_jit_workers_samples_are_as_long_as_the_sample_time_asks() {
    let dir = tempfile::tempdir().unwrap();
    let classes = dir.path().join("classes");
    let mut javac = Command::new("javac");
    javac.arg("-d").arg(&classes);
    for f in
        std::fs::read_dir(format!("{ROOT}/clients/java/src/main/java/dev/tare/worker")).unwrap()
    {
        javac.arg(f.unwrap().path());
    }
    javac.arg(format!("{ROOT}/tests/kernels/JitWorker.java"));
    match javac.output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!("javac failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(_) => return skip::skip("a JDK (javac)", "apt-get install openjdk-17-jdk-headless"),
    }
    let j = dir.path().join("k.json");
    let out = tare()
        .args([
            "kernels",
            &format!("java -cp {} JitWorker", classes.display()),
        ])
        .args([
            "-r",
            "2",
            "--seed",
            "6",
            "--export-json",
            j.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    for b in v["benchmarks"].as_array().unwrap() {
        let target = b["extra"]["kernel"]["min_sample_ns"].as_f64().unwrap();
        let ns: Vec<f64> = b["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["counted"] == true)
            .map(|r| r["extra"]["sample"]["ns"].as_f64().unwrap())
            .collect();
        let long = ns.iter().filter(|&&x| x >= 0.5 * target).count();
        eprintln!(
            "{}: {long} of {} samples >= 0.5x the sample time",
            b["name"],
            ns.len()
        );
        assert!(!ns.is_empty(), "{}", b["name"]);
        assert!(
            long as f64 >= 0.8 * ns.len() as f64,
            "{}: only {long} of {} counted samples are 0.5x the sample time ({target} ns) or more: {ns:?}",
            b["name"],
            ns.len()
        );
        // Neither kernel leaves state for later loops (the JIT's faster code is not state).
        let kinds: Vec<&str> = b["diagnostics"]
            .as_array()
            .map(|d| d.iter().filter_map(|x| x["kind"].as_str()).collect())
            .unwrap_or_default();
        assert!(!kinds.contains(&"first-loop"), "{}: {kinds:?}", b["name"]);
    }
}
