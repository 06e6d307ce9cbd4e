//! Criterion.rs suites under `tare kernels` through `tare native-worker criterion TARGET`:
//! tests/kernels/criterion (criterion 0.5 from crates.io), built by
//! .ci/services.d/49-criterion.sh into /var/cache/tare-ci/criterion (its path in
//! /run/tare-ci/criterion.path): the package built and listed by the worker (offline, from that
//! target directory), measured, and two builds (and a third with one benchmark slower) compared
//! head to head.

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

/// The directory 49-criterion.sh built into; None (the test skips) when it has not run.
fn built() -> Option<PathBuf> {
    let dir = std::fs::read_to_string("/run/tare-ci/criterion.path").ok()?;
    let dir = PathBuf::from(dir.trim());
    (dir.join("suite-a").is_file() && dir.join("suite-slow").is_file()).then_some(dir)
}

fn needs_criterion() {
    skip::skip(
        "the Criterion.rs test suite built (/run/tare-ci/criterion.path)",
        "run .ci/services.d/49-criterion.sh as root (needs crates.io once)",
    );
}

fn worker(target: &str) -> String {
    format!(
        "{} native-worker criterion {target}",
        env!("CARGO_BIN_EXE_tare")
    )
}

#[test]
fn a_criterion_suite_built_listed_and_measured() {
    let Some(cache) = built() else {
        return needs_criterion();
    };
    let _turn = take_turn();
    // The package directory: the worker builds it (cargo bench --no-run, offline, into the
    // target directory 49-criterion.sh filled) and lists its ids.
    let pkg = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/criterion");
    let w = format!("{} --bench suite", worker(pkg));
    let target = cache.join("target");
    let env = [
        ("CARGO_TARGET_DIR", target.to_str().unwrap()),
        ("CARGO_NET_OFFLINE", "true"),
    ];
    let out = tare()
        .args(["kernels", &w, "--list"])
        .envs(env)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for k in ["sum/256", "sum/4096", "sort", "hash"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{k} "))),
            "{k} not listed:\n{stdout}"
        );
    }
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("c.json");
    let (_, v) = common::exported(
        tare()
            .args(["kernels", &w, "-r", "2", "--sample-stop", "runs >= 5"])
            .args(["--sample-time", "2ms", "--seed", "5"])
            .args(["--export-json", j.to_str().unwrap()])
            .envs(env),
        &j,
    );
    let benches = v["benchmarks"].as_array().unwrap();
    let names: Vec<&str> = benches
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["sum/256/rust", "sum/4096/rust", "sort/rust", "hash/rust"]
    );
    for b in benches {
        let k = &b["extra"]["kernel"];
        let loops = k["loops"].as_u64().unwrap();
        assert!(loops > 1, "calibrated: {loops}");
        assert!(
            k["client"].as_str().unwrap().contains("Criterion.rs"),
            "{k}"
        );
        assert_eq!(b["extra"]["invocations"].as_array().unwrap().len(), 2);
        // Criterion's linear sampling: samples of d, 2d, ... iterations, their mean aimed at
        // tare's N; each read by its own count.
        let own: Vec<u64> = b["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["extra"]["sample"]["loops"].as_u64().unwrap())
            .collect();
        assert!(own.len() >= 10, "{} samples", own.len());
        assert!(own.windows(2).any(|w| w[0] != w[1]), "{own:?}");
        let mean = own.iter().sum::<u64>() as f64 / own.len() as f64;
        assert!(
            mean > loops as f64 / 4.0 && mean < loops as f64 * 4.0,
            "{}: samples of {own:?} loops for N = {loops}",
            b["name"]
        );
    }
    // Throughput::Bytes(8 × 256) per iteration.
    let bytes = benches[0]["extra"]["kernel"]["bytes_per_loop"]
        .as_f64()
        .unwrap();
    assert_eq!(bytes, 2048.0);
    let med = |i: usize| {
        benches[i]["summary"]["wall_time"]["median"]
            .as_f64()
            .unwrap()
    };
    assert!(med(1) / med(0) > 3.0, "{} / {}", med(1), med(0));
}

/// Two identical builds and a third whose `hash` does three times the work, in one session of
/// 12 rounds: no verdict between the identical two, and only `hash` slower in the third (a
/// large change: this 2-core VM's processes differ by 20-40% under load, and at load 5 twice
/// the work came out 1.66× [1.23, 2.29] with Holm's p 0.033 over 8 comparisons: withheld).
#[test]
fn builds_of_one_criterion_suite_head_to_head() {
    let Some(cache) = built() else {
        return needs_criterion();
    };
    let d = tempfile::tempdir().unwrap();
    let (a, b, slow) = (
        d.path().join("a"),
        d.path().join("b"),
        d.path().join("slow"),
    );
    std::fs::copy(cache.join("suite-a"), &a).unwrap();
    std::fs::copy(cache.join("suite-a"), &b).unwrap();
    std::fs::copy(cache.join("suite-slow"), &slow).unwrap();
    let _turn = take_turn();
    let w = |p: &PathBuf| worker(p.to_str().unwrap());
    common::head_to_head([&w(&a), &w(&b), &w(&slow)], d.path(), 4, "hash", 1.8..5.0);
}
