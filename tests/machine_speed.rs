//! Each CPU's speed (issue 47), end to end on this machine: `tare machine`'s speed section and
//! `--cpus` never refusing for it. Shapes only, never timings: this VM runs in two speeds ~2×
//! apart for seconds at a time, so any timing bound would fail by chance.

mod common;
use common::tare;
use serde_json::Value;

/// CPUs this process may run on (the speed check pins to each of them).
fn allowed_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn machine_prints_a_speed_section_with_a_line_per_cpu() {
    let out = tare()
        .args(["machine", "--speed-time", "300ms"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let section: Vec<&str> = text
        .split("\n\n")
        .find(|s| s.starts_with("speed\n"))
        .unwrap_or_else(|| panic!("no speed section:\n{text}"))
        .lines()
        .collect();
    let summary = section
        .iter()
        .find(|l| l.contains("CPU speed"))
        .unwrap_or_else(|| panic!("{section:?}"));
    let verdict = summary.split_whitespace().next().unwrap();
    assert!(verdict == "ok" || verdict == "warn", "{summary}");
    if verdict == "ok" {
        assert!(
            summary.contains("timed") && summary.contains("apart"),
            "{summary}"
        );
    } else {
        // "CPU 1 varied 1.6× over 0.3 s: <cause>", and the measurement in the advice.
        assert!(
            summary.contains("CPU ") && summary.contains("×"),
            "{summary}"
        );
        assert!(section
            .iter()
            .any(|l| l.contains("→") && l.contains("timed")));
    }
    if allowed_cpus() <= 16 {
        let per_cpu = section
            .iter()
            .filter(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.len() > 3 && w[1] == "CPU" && w[2].parse::<usize>().is_ok()
            })
            .count();
        assert_eq!(per_cpu, allowed_cpus(), "{section:?}");
        assert!(section
            .iter()
            .any(|l| l.contains("a loop") && l.contains("the fastest")));
    }
}

#[test]
fn machine_json_has_each_cpus_speed() {
    let out = tare()
        .args(["machine", "--json", "--speed-time", "200ms"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["facts"]["speed"];
    let cpus = s["cpus"].as_array().expect("facts.speed.cpus");
    assert_eq!(cpus.len(), allowed_cpus());
    for c in cpus {
        assert!(c["typical"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["slower"].as_f64().unwrap() >= 1.0, "{c}");
        assert!(c["visits"].as_u64().unwrap() >= 3, "{c}");
    }
    assert!(cpus.iter().any(|c| c["slower"].as_f64() == Some(1.0)));
    assert!(s["passes"].as_u64().unwrap() >= 3);
    assert!(s["across"].as_f64().unwrap() >= 1.0);
    let items = v["items"].as_array().unwrap();
    assert!(items
        .iter()
        .any(|i| i["section"] == "speed" && i["name"] == "CPU speed"));
    // Skipped on request: no section, no facts.
    let out = tare()
        .args(["machine", "--json", "--speed-time", "0"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["facts"]["speed"].is_null());
    assert!(!v["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["section"] == "speed"));
}

#[test]
fn a_synthetic_sysroot_is_not_timed() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/intel-4c8t");
    let out = tare()
        .args(["machine", "--json"])
        .env("TARE_SYSROOT", &root)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["facts"]["speed"].is_null(), "{}", v["facts"]["speed"]);
}

#[test]
fn cpus_never_refuses_for_speed_and_says_what_it_left_out_in_one_line() {
    if allowed_cpus() < 2 {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let out = tare()
        .args(["run", "--cpus", "1", "--runs", "3", "--export-json"])
        .arg(&j)
        .arg("true")
        .env("TARE_PINNED_DIR", dir.path().join("pinned"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for l in err.lines().filter(|l| l.contains("unsteady at the start")) {
        assert!(l.starts_with("tare: note: "), "{l}");
        assert!(l.contains("CPU "), "{l}");
    }
    let s: Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    assert_eq!(s["benchmarks"][0]["runs"].as_array().unwrap().len(), 3);
}
