//! `--memory-sample` for real: a program that allocates (and touches) 40 MiB four times, a
//! quarter second apart, shows the four steps in its memory timeline; the HTML report plots
//! it. `--memory-high` is refused on cgroup v1, in one line saying why.

mod common;
#[path = "common/skip.rs"]
mod skip;
use common::tare;

use serde_json::Value;

const STEP: f64 = (40u64 << 20) as f64;

#[test]
fn steps_of_allocation_show_in_the_timeline() {
    if std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_err()
    {
        skip::skip("python3", "apt-get install python3");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let html = dir.path().join("r.html");
    let prog = "import time\na = []\nfor i in range(4):\n    a.append(bytearray(40 << 20))\n    time.sleep(0.25)\n";
    let script = dir.path().join("steps.py");
    std::fs::write(&script, prog).unwrap();
    let out = tare()
        .args(["run", "--style", "basic", "--warmup", "0", "--runs", "2"])
        .args(["--memory-sample", "10ms", "--export-json"])
        .arg(&j)
        .arg("--export-html")
        .arg(&html)
        .arg(format!("python3 {}", script.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("memory/time"), "{stdout}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    for r in doc["benchmarks"][0]["runs"].as_array().unwrap() {
        let tl: Vec<(f64, f64)> = r["memory_timeline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
            .collect();
        assert!(tl.len() > 30, "{} samples", tl.len());
        // The interpreter itself: the charge shortly before the first allocation finishes.
        let peak = tl.iter().map(|p| p.1).fold(0.0, f64::max);
        let base = peak - 4.0 * STEP;
        let mut seen = Vec::new();
        for k in 1..=4 {
            let level = base + k as f64 * STEP;
            let first = tl
                .iter()
                .find(|p| (p.1 - level).abs() < 0.25 * STEP)
                .map(|p| p.0);
            seen.push(first);
        }
        eprintln!(
            "timeline: {} samples, base {:.1} MB, steps first seen at {:?} s",
            tl.len(),
            base / 1e6,
            seen
        );
        let times: Vec<f64> = seen
            .iter()
            .map(|s| s.expect("every step is seen"))
            .collect();
        assert!(
            times.windows(2).all(|w| w[1] - w[0] > 0.1),
            "steps a quarter second apart: {times:?}"
        );
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("plot-memory"), "no memory plot in the report");
}

#[test]
fn memory_high_is_refused_on_cgroup_v1_in_one_line() {
    let v1 = std::fs::read_to_string("/proc/self/mounts").is_ok_and(|m| {
        m.lines()
            .any(|l| l.contains(" cgroup ") && l.contains("memory"))
    });
    if !v1 || !common::is_root() {
        skip::skip(
            "root and cgroup v1",
            "run the tests as root (sudo -E cargo test) on a cgroup v1 machine",
        );
        return;
    }
    let out = tare()
        .args(["run", "--runs", "1", "--memory-high", "100M", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.trim_end().lines().last().unwrap();
    assert!(
        last.starts_with("tare: error: --memory-high needs cgroup v2"),
        "{err}"
    );
}
