//! A native harness without a client library under `tare kernels`: Go's `testing.B`, driven by
//! `tare native-worker go DIR` with the iterations fixed by tare (`-test.benchtime=Nx`), on the
//! benchmarks in tests/kernels/gobench (needs `go`; .ci/services.d/45-go.sh installs it).

mod common;
use common::tare;

use serde_json::Value;

#[test]
fn go_benchmarks_measured_with_tares_policy() {
    let pkg = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/gobench");
    let worker = format!("{} native-worker go {pkg}", env!("CARGO_BIN_EXE_tare"));
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("go.json");
    let out = tare()
        .args([
            "kernels",
            &worker,
            "-i",
            "2",
            "--stop",
            "runs >= 5",
            "--sample-time",
            "2ms",
        ])
        .args(["--seed", "5", "--export-json", j.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let benches = v["benchmarks"].as_array().unwrap();
    let names: Vec<&str> = benches
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Sum/go", "Sum2/go"]);
    for b in benches {
        let loops = b["extra"]["kernel"]["loops"].as_u64().unwrap();
        assert!(loops > 1, "calibrated: {loops}");
        assert_eq!(b["extra"]["invocations"].as_array().unwrap().len(), 2);
        for r in b["runs"].as_array().unwrap() {
            assert_eq!(r["extra"]["sample"]["loops"].as_u64().unwrap(), loops);
        }
    }
    // Go prints MB/s with two decimals: bytes per loop come back to within 1%.
    let b = benches[0]["extra"]["kernel"]["bytes_per_loop"]
        .as_f64()
        .unwrap();
    assert!((b - 8000.0).abs() < 80.0, "bytes per loop {b}");
    // Sum2 adds twice as many numbers per loop as Sum.
    let med = |i: usize| {
        benches[i]["summary"]["wall_time"]["median"]
            .as_f64()
            .unwrap()
    };
    let r = med(1) / med(0);
    assert!(r > 1.2 && r < 5.0, "Sum2/Sum = {r}");
    // Outside tare it says how to use it, in one line.
    let out = tare()
        .args(["native-worker", "go", pkg])
        .env_remove("TARE_WORKER_FD")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("runs under tare kernels"));
}
