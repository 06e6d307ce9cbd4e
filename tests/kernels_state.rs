//! State a kernel's body changes (it sorts in place): with the per-sample `init` loops 2..N
//! sort sorted data and the time is of that, which tare's first-loop check says ("state from
//! earlier loops" is one of the two causes its note names); with the per-loop init of every client (C `tare_on_each`, C++
//! `.each`, Rust `Kernel::each`, Go `InitEach`/`RunEach`, Java `.each`, JS `input`/`each`,
//! Python `init_each`/`body_each`: untimed, in batches as Criterion's iter_batched) every loop
//! sorts unsorted data, as a plain loop that copies and sorts (both timed) does, and nothing is
//! said. Workers: tests/kernels/sort.c, tests/kernels/sort/* and tests/kernels/sort_worker.py
//! (built here), clients/rust/examples/sort.rs. A first loop dear in every sample that is
//! start-up (tests/kernels/gostartup, through `tare native-worker go`) is a note, not that.

mod common;
use common::tare;

#[path = "common/skip.rs"]
mod skip;

use serde_json::Value;
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Per kernel (`per_sample/c` ...): seconds per loop (the fastest sample's: this VM runs at
/// one of two speeds, 2x apart, and a median may fall in either) and its diagnostics' kinds.
fn measure(program: &str, label: &str) -> Vec<(String, f64, Vec<String>)> {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let out = tare()
        .args([
            "kernels",
            program,
            "-n",
            label,
            "-r",
            "5",
            "--sample-stop",
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
            let kinds = b["diagnostics"]
                .as_array()
                .map(|d| {
                    d.iter()
                        .map(|x| x["kind"].as_str().unwrap_or("").to_string())
                        .collect()
                })
                .unwrap_or_default();
            (
                b["name"].as_str().unwrap().to_string(),
                b["summary"]["wall_time"]["min"].as_f64().unwrap(),
                kinds,
            )
        })
        .collect()
}

fn check(times: &[(String, f64, Vec<String>)], label: &str) {
    let t = |k: &str| {
        times
            .iter()
            .find(|(n, _, _)| *n == format!("{k}/{label}"))
            .unwrap_or_else(|| panic!("{k}/{label} in {times:?}"))
    };
    let (sample, each, plain) = (t("per_sample"), t("per_loop"), t("copy_sort"));
    eprintln!(
        "{label}: per-sample init {:.3e} s, per-loop init {:.3e} s, copy and sort {:.3e} s",
        sample.1, each.1, plain.1
    );
    // Sorting sorted data is O(n), unsorted O(n²): the per-sample shape reports the former,
    // and its first-loop note says the time may be too low; the others get no such note.
    assert!(sample.1 < 0.2 * each.1, "{label}: {times:?}");
    assert!(
        sample.2.iter().any(|k| k == "first-loop"),
        "{label}: per_sample without a first-loop note: {times:?}"
    );
    for k in [each, plain] {
        assert!(!k.2.iter().any(|k| k == "first-loop"), "{label}: {times:?}");
    }
    // The per-loop shape reports the sort of unsorted data, as the plain loop does (whose copy
    // of the data costs little beside the sort). Within a factor of 2.5 either way: this VM
    // runs at one of two speeds 2x apart for seconds at a time, and a kernel's fastest sample
    // over five processes was once taken at the slow one (per-loop / plain 0.498, 1 in 10
    // runs here); the wrong shape, sorted data, is 300x off.
    let r = each.1 / plain.1;
    assert!(
        (0.4..2.5).contains(&r),
        "{label}: per-loop / plain = {r:.2}: {times:?}"
    );
}

/// Runs a build step; None (the test skips that language) where the tool is missing.
fn built(cmd: &mut Command, tool: &str, how: &str) -> Option<()> {
    match cmd.output() {
        Ok(o) if o.status.success() => Some(()),
        Ok(o) => panic!(
            "{cmd:?} failed: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(_) => {
            skip::skip(tool, how);
            None
        }
    }
}

#[test]
fn a_body_that_sorts_in_place_is_timed_on_unsorted_data_with_per_loop_init() {
    let root = Path::new(ROOT);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // C: the client's own sources, compiled with the test worker.
    let bin = d.join("sort");
    if built(
        Command::new("cc")
            .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(root.join("clients/c"))
            .arg("-o")
            .arg(&bin)
            .arg(root.join("tests/kernels/sort.c"))
            .arg(root.join("clients/c/tare_worker.c"))
            .arg("-lm"),
        "a C compiler (cc)",
        "apt-get install gcc",
    )
    .is_some()
    {
        check(&measure(bin.to_str().unwrap(), "c"), "c");
    }
    // C++: the header over the C client.
    let obj = d.join("tare_worker.o");
    let cpp = d.join("sortcpp");
    if built(
        Command::new("cc")
            .args(["-std=c11", "-O2", "-c", "-o"])
            .arg(&obj)
            .arg(root.join("clients/c/tare_worker.c")),
        "a C compiler (cc)",
        "apt-get install gcc",
    )
    .and_then(|_| {
        built(
            Command::new("c++")
                .args(["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-I"])
                .arg(root.join("clients/c"))
                .arg("-I")
                .arg(root.join("clients/cpp"))
                .arg("-o")
                .arg(&cpp)
                .arg(root.join("tests/kernels/sort/sort.cpp"))
                .arg(&obj)
                .arg("-lm"),
            "a C++ compiler (c++)",
            "apt-get install g++",
        )
    })
    .is_some()
    {
        check(&measure(cpp.to_str().unwrap(), "cpp"), "cpp");
    }
    // Rust: an example of the client crate, in its own target directory.
    if built(
        Command::new("cargo")
            .args([
                "build",
                "--release",
                "--quiet",
                "--example",
                "sort",
                "--manifest-path",
            ])
            .arg(root.join("clients/rust/Cargo.toml"))
            .env("CARGO_TARGET_DIR", root.join("clients/rust/target")),
        "cargo",
        "install Rust (rustup)",
    )
    .is_some()
    {
        let exe = root.join("clients/rust/target/release/examples/sort");
        check(&measure(exe.to_str().unwrap(), "rust"), "rust");
    }
    // Go: a module with a replace to the client.
    let go = d.join("sortgo");
    if built(
        Command::new("go")
            .args(["build", "-o"])
            .arg(&go)
            .arg(".")
            .current_dir(root.join("tests/kernels/sort/go"))
            .env("GOFLAGS", "-mod=mod"),
        "Go (go)",
        "apt-get install golang-go",
    )
    .is_some()
    {
        check(&measure(go.to_str().unwrap(), "go"), "go");
    }
    // Java: the client's sources and the worker compiled together.
    let classes = d.join("classes");
    let mut javac = Command::new("javac");
    javac.arg("-d").arg(&classes);
    for f in std::fs::read_dir(root.join("clients/java/src/main/java/dev/tare/worker")).unwrap() {
        javac.arg(f.unwrap().path());
    }
    javac.arg(root.join("tests/kernels/sort/SortWorker.java"));
    if built(
        &mut javac,
        "a JDK (javac)",
        "apt-get install openjdk-17-jdk-headless",
    )
    .is_some()
    {
        let cmd = format!("java -cp {} SortWorker", classes.display());
        check(&measure(&cmd, "java"), "java");
    }
    // JavaScript: the worker imports the client by its path.
    if built(
        Command::new("node").arg("--version"),
        "Node.js (node)",
        "apt-get install nodejs",
    )
    .is_some()
    {
        let cmd = format!("node {ROOT}/tests/kernels/sort/sort.mjs");
        check(&measure(&cmd, "js"), "js");
    }
    let py = format!("{ROOT}/tests/kernels/sort_worker.py");
    check(&measure(&py, "python"), "python");
}

/// A first loop dear in every fresh sample that is start-up (a Go suite's setup timed once a
/// sample; b.RunParallel's goroutines, fastjson's shape) is not called state that carries
/// over: no "first-loop" warning, and where the screen fires, a "first-loop-start-up" note whose
/// advice is in Go's terms, not tare's client calls. Kinds only, never timings.
#[test]
fn a_start_up_every_sample_pays_is_not_called_carried_state() {
    if Command::new("go").arg("version").output().is_err() {
        skip::skip("Go (go)", "apt-get install golang-go");
        return;
    }
    let pkg = format!("{ROOT}/tests/kernels/gostartup");
    let worker = format!("{} native-worker go {pkg}", env!("CARGO_BIN_EXE_tare"));
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let out = tare()
        .args(["kernels", &worker, "-r", "2", "--sample-stop", "runs >= 5"])
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
    let benchmarks = v["benchmarks"].as_array().unwrap();
    assert_eq!(benchmarks.len(), 2, "{v}");
    for b in benchmarks {
        let diags = b["diagnostics"].as_array().cloned().unwrap_or_default();
        let kind = |k: &str| diags.iter().find(|d| d["kind"] == k);
        assert!(kind("first-loop").is_none(), "{}: {diags:?}", b["name"]);
        if let Some(d) = kind("first-loop-start-up") {
            let advice = d["suggestion"].as_str().unwrap();
            assert!(advice.contains("b.StopTimer"), "{advice}");
            assert!(!advice.contains("InitEach"), "{advice}");
        }
    }
    // Setup of twenty loops' work timed once a sample: the screen fires on it.
    let startup = benchmarks
        .iter()
        .find(|b| b["name"].as_str().unwrap().starts_with("Startup"))
        .unwrap();
    assert!(
        startup["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["kind"] == "first-loop-start-up"),
        "{startup}"
    );
}
