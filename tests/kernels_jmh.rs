//! JMH suites under `tare kernels` through `tare native-worker jmh JAR`: tests/kernels/jmh
//! (JMH 1.37 from Maven Central), built by .ci/services.d/51-jmh.sh into
//! /var/cache/tare-ci/jmh (its path in /run/tare-ci/jmh.path), listed with its `@Param` values,
//! measured with exactly tare's loops (single-shot batches in the worker's JVM), and two builds
//! (and a third with one benchmark slower) compared head to head.

mod common;
use common::tare;
#[path = "common/skip.rs"]
mod skip;

use std::path::PathBuf;

/// The tests of this file measure real kernels: they take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn take_turn() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The directory 51-jmh.sh built into; None (the test skips) when it has not run.
fn built() -> Option<PathBuf> {
    let dir = std::fs::read_to_string("/run/tare-ci/jmh.path").ok()?;
    let dir = PathBuf::from(dir.trim());
    (dir.join("a.jar").is_file() && dir.join("slow.jar").is_file()).then_some(dir)
}

fn needs_jmh() {
    skip::skip(
        "the JMH test suite built (/run/tare-ci/jmh.path)",
        "run .ci/services.d/51-jmh.sh as root (needs Maven Central once)",
    );
}

fn worker(jar: &std::path::Path) -> String {
    format!(
        "{} native-worker jmh {}",
        env!("CARGO_BIN_EXE_tare"),
        jar.display()
    )
}

#[test]
fn a_jmh_suite_listed_and_measured() {
    let Some(cache) = built() else {
        return needs_jmh();
    };
    let _turn = take_turn();
    let w = worker(&cache.join("a.jar"));
    // One kernel per benchmark; a @Param is a tare parameter listing JMH's values.
    let out = tare().args(["kernels", &w, "--list"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Vec<String> = stdout
        .lines()
        .map(|l| l.split("  — ").next().unwrap().trim().to_string())
        .filter(|w| w.starts_with("SuiteBench."))
        .collect();
    assert_eq!(
        listed,
        [
            "SuiteBench.hash",
            "SuiteBench.sort",
            "SuiteBench.sum size=256,4096"
        ],
        "{stdout}"
    );
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("j.json");
    let (_, v) = common::exported(
        tare()
            .args(["kernels", &w, "-r", "2", "--sample-stop", "runs >= 10"])
            .args(["--sample-time", "2ms", "--seed", "5"])
            .args(["--export-json", j.to_str().unwrap()]),
        &j,
    );
    let benches = v["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), 4);
    for b in benches {
        let k = &b["extra"]["kernel"];
        let loops = k["loops"].as_u64().unwrap();
        assert!(loops > 1, "calibrated: {loops}");
        assert!(k["client"].as_str().unwrap().contains("JMH"), "{k}");
        assert_eq!(b["extra"]["invocations"].as_array().unwrap().len(), 2);
        // A batch of exactly N calls a sample.
        for r in b["runs"].as_array().unwrap() {
            assert_eq!(r["extra"]["sample"]["loops"].as_u64().unwrap(), loops);
        }
    }
    let med = |i: usize| {
        benches[i]["summary"]["wall_time"]["median"]
            .as_f64()
            .unwrap()
    };
    // Every @Param value measured by default, as JMH does, each a benchmark with its value.
    assert_eq!(benches[2]["parameters"]["size"], "256");
    assert_eq!(benches[3]["parameters"]["size"], "4096");
    assert!(med(3) / med(2) > 3.0, "{} / {}", med(3), med(2));
    // Values the @Param does not list are JMH's to take (its `-p size=...`).
    let j = d.path().join("l.json");
    let (_, v) = common::exported(
        tare()
            .args(["kernels", &w, "--filter", "sum", "-L", "size", "64,16384"])
            .args([
                "-r",
                "1",
                "--sample-stop",
                "runs >= 5",
                "--sample-time",
                "2ms",
            ])
            .args(["--export-json", j.to_str().unwrap()]),
        &j,
    );
    let benches = v["benchmarks"].as_array().unwrap();
    let sizes: Vec<&str> = benches
        .iter()
        .map(|b| b["parameters"]["size"].as_str().unwrap())
        .collect();
    assert_eq!(sizes, ["64", "16384"]);
    let med = |i: usize| {
        benches[i]["summary"]["wall_time"]["median"]
            .as_f64()
            .unwrap()
    };
    assert!(med(1) / med(0) > 20.0, "{} / {}", med(1), med(0));
}

/// Two identical jars and a third whose `hash` does twice the work, in one session: no verdict
/// between the identical two, and only `hash` slower in the third.
#[test]
fn builds_of_one_jmh_suite_head_to_head() {
    let Some(cache) = built() else {
        return needs_jmh();
    };
    let d = tempfile::tempdir().unwrap();
    let (a, b, slow) = (
        d.path().join("a.jar"),
        d.path().join("b.jar"),
        d.path().join("slow.jar"),
    );
    std::fs::copy(cache.join("a.jar"), &a).unwrap();
    std::fs::copy(cache.join("a.jar"), &b).unwrap();
    std::fs::copy(cache.join("slow.jar"), &slow).unwrap();
    let _turn = take_turn();
    common::head_to_head(
        [&worker(&a), &worker(&b), &worker(&slow)],
        d.path(),
        4,
        "SuiteBench.hash",
        1.4..3.0,
    );
}
