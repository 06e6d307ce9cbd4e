//! State a kernel's body changes (it sorts in place): with the per-sample `init` loops 2..N
//! sort sorted data and the time is of that; with the per-loop init of the C and Python clients
//! (`tare_on_each`, `init_each`/`body_each`: untimed, in batches as Criterion's iter_batched)
//! every loop sorts unsorted data, as a plain loop that copies and sorts (both timed) does.
//! Workers: tests/kernels/sort.c (compiled here) and tests/kernels/sort_worker.py.

mod common;
use common::tare;

#[path = "common/skip.rs"]
mod skip;

use serde_json::Value;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Seconds per loop of each kernel, by name (`per_sample/c` ...).
fn measure(program: &str, label: &str) -> Vec<(String, f64)> {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let out = tare()
        .args([
            "kernels",
            program,
            "-n",
            label,
            "-r",
            "3",
            "--stop",
            "runs >= 5",
        ])
        .args(["--seed", "9", "--export-json", j.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    v["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["name"].as_str().unwrap().to_string(),
                b["summary"]["wall_time"]["median"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn check(times: &[(String, f64)], label: &str) {
    let t = |k: &str| {
        times
            .iter()
            .find(|(n, _)| *n == format!("{k}/{label}"))
            .unwrap_or_else(|| panic!("{k}/{label} in {times:?}"))
            .1
    };
    let (sample, each, plain) = (t("per_sample"), t("per_loop"), t("copy_sort"));
    eprintln!("{label}: per-sample init {sample:.3e} s, per-loop init {each:.3e} s, copy and sort {plain:.3e} s");
    // Sorting sorted data is O(n), unsorted O(n²): the per-sample shape reports the former.
    assert!(sample < 0.2 * each, "{label}: {times:?}");
    // The per-loop shape reports the sort of unsorted data, as the plain loop does (whose copy
    // of the data costs little beside the sort).
    let r = each / plain;
    assert!(
        (0.6..1.6).contains(&r),
        "{label}: per-loop / plain = {r:.2}: {times:?}"
    );
}

#[test]
fn a_body_that_sorts_in_place_is_timed_on_unsorted_data_with_per_loop_init() {
    // C: the client's own sources, compiled with the test worker.
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("sort");
    let cc = std::process::Command::new("cc")
        .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(Path::new(ROOT).join("clients/c"))
        .arg("-o")
        .arg(&bin)
        .arg(Path::new(ROOT).join("tests/kernels/sort.c"))
        .arg(Path::new(ROOT).join("clients/c/tare_worker.c"))
        .arg("-lm")
        .output();
    match cc {
        Ok(o) if o.status.success() => check(&measure(bin.to_str().unwrap(), "c"), "c"),
        Ok(o) => panic!("cc failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(_) => skip::skip("a C compiler (cc)", "apt-get install gcc"),
    }
    let py = format!("{ROOT}/tests/kernels/sort_worker.py");
    check(&measure(&py, "python"), "python");
}
