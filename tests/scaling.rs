//! Scaling of parameter scans end to end (issue 30): `tare run` scans of a linear and of a
//! quadratic C program over two decades of size are fitted as O(n) and O(n²), with bootstrap
//! intervals of the exponent (over runs, each a process) that contain 1 and 2; the terminal
//! summary prints one scaling line per scan and the results file keeps the fits of wall and
//! CPU time.
//!
//! Behaviour, not timings: the sizes keep each run between ~0.5 and ~100 ms (process start-up
//! is the constant the fit allows for); 15 interleaved runs per size; medians; a scan that
//! misses is tried again, at most three times.

#[path = "common/skip.rs"]
mod skip;
use std::path::Path;
use std::process::Command;

const PROGRAM: &str = r#"
#include <stdlib.h>
/* work l N F: N*F additions; work q N F: N*N*F additions. */
int main(int argc, char **argv) {
    if (argc < 4) return 2;
    long n = atol(argv[2]), f = atol(argv[3]);
    long reps = argv[1][0] == 'q' ? n * n * f : n * f;
    volatile unsigned long x = 0;
    for (long i = 0; i < reps; i++) x += (unsigned long)i;
    return 0;
}
"#;

fn compile(dir: &Path) -> Option<std::path::PathBuf> {
    let src = dir.join("work.c");
    let exe = dir.join("work");
    std::fs::write(&src, PROGRAM).unwrap();
    match Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => Some(exe),
        _ => None,
    }
}

/// Runs the scan and returns (terminal output, the results file's scans).
fn scan(
    exe: &Path,
    dir: &Path,
    kind: &str,
    sizes: &str,
    factor: u32,
) -> (String, serde_json::Value) {
    let json = dir.join(format!("{kind}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_tare"))
        .args([
            "run", "--style", "basic", "--runs", "15", "--warmup", "1", "-L", "size", sizes,
        ])
        .arg(format!("{} {kind} {{size}} {factor}", exe.display()))
        .arg("--export-json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "tare run failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (stdout, v["extra"]["scaling"].clone())
}

/// Whether a scan's fit is right: `Err` says what is wrong.
fn check(
    stdout: &str,
    scans: &serde_json::Value,
    class: &str,
    big_o: &str,
    k: f64,
) -> Result<(), String> {
    let scans = scans.as_array().expect("extra.scaling is a list of scans");
    assert_eq!(scans.len(), 1, "{scans:?}");
    let s = &scans[0];
    assert_eq!(s["parameter"], "size");
    assert_eq!(s["unit"], "run");
    let fit = &s["fit"];
    let points = fit["points"].as_array().unwrap();
    assert_eq!(points.len(), 6);
    assert!(points.iter().all(|p| p["processes"] == 15), "{points:?}");
    let line = s["line"].as_str().unwrap();
    assert!(
        stdout.lines().any(|l| l == line),
        "the summary prints the scan's line {line:?}:\n{stdout}"
    );
    let cpu_line = s["cpu_line"].as_str().expect("a CPU-time fit for tare run");
    assert!(
        cpu_line.starts_with("scaling in size, CPU time: O("),
        "{cpu_line}"
    );
    println!("{line}\n{cpu_line}");
    if !line.starts_with(&format!("scaling in size: {big_o}, time ∝ n^"))
        || fit["class"]["class"] != class
    {
        return Err(format!("not {big_o}: {line}"));
    }
    let (lo, hi) = (
        fit["exponent_ci"][0].as_f64().unwrap(),
        fit["exponent_ci"][1].as_f64().unwrap(),
    );
    if !(lo <= k && k <= hi) {
        return Err(format!("the interval of k misses {k}: {line}"));
    }
    Ok(())
}

/// Scans until one is fitted right, at most three times: a 95% interval misses 1 time in 20,
/// and a loaded machine (other tests, other users) slows some runs more than others.
fn fitted(exe: &Path, dir: &Path, kind: &str, sizes: &str, class: &str, big_o: &str, k: f64) {
    let mut why = Vec::new();
    for _ in 0..3 {
        let (out, scans) = scan(exe, dir, kind, sizes, 100);
        match check(&out, &scans, class, big_o, k) {
            Ok(()) => return,
            Err(e) => why.push(e),
        }
    }
    panic!("three scans, none fitted right:\n{}", why.join("\n"));
}

#[test]
fn linear_and_quadratic_scans_are_fitted() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = compile(dir.path()) else {
        skip::skip("a C compiler (cc)", "apt-get install gcc");
        return;
    };
    // Two decades of size each; the largest runs ~50-100 ms on a quiet machine.
    let linear = "10000,25000,63000,160000,400000,1000000";
    fitted(&exe, dir.path(), "l", linear, "n", "O(n)", 1.0);
    fitted(
        &exe,
        dir.path(),
        "q",
        "10,25,63,160,400,1000",
        "n^2",
        "O(n²)",
        2.0,
    );
}
