//! `--counters`: the `perf stat -x,` parser on a CSV recorded on this VM (hardware events
//! `<not supported>`) and on a synthetic one in the same layout (a machine with a PMU, marked
//! as such in the file); end to end, the not-supported path on this machine and real counts
//! of software events.

mod common;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use tare::method::counters::{check_supported, parse_perf_csv};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/bias")
            .join(name),
    )
    .unwrap()
}

fn events(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn parses_the_recorded_vm_output() {
    let v = parse_perf_csv(&fixture("perf_stat_vm.csv"));
    let names: Vec<&str> = v.iter().map(|c| c.event.as_str()).collect();
    assert_eq!(
        names,
        [
            "cycles",
            "instructions",
            "task-clock",
            "context-switches",
            "page-faults",
            "branch-misses"
        ]
    );
    assert_eq!(v[0].status, "not-supported");
    assert_eq!(v[0].value, None);
    assert_eq!(v[2].status, "counted");
    assert_eq!(v[2].value, Some(2.28));
    assert_eq!(v[2].unit, "msec");
    assert_eq!(v[4].value, Some(63.0));
    let err = check_supported(&v, &events(&["cycles", "task-clock"])).unwrap_err();
    assert!(
        err.starts_with("cycles, instructions, branch-misses are not supported"),
        "{err}"
    );
    assert!(!err.contains('\n'));
    let soft: Vec<_> = v.into_iter().filter(|c| c.status == "counted").collect();
    assert!(check_supported(&soft, &events(&["task-clock", "page-faults"])).is_ok());
    assert!(check_supported(&soft, &events(&["task-clock", "cycles"]))
        .unwrap_err()
        .contains("did not report cycles"));
}

#[test]
fn parses_the_synthetic_pmu_output() {
    let v = parse_perf_csv(&fixture("perf_stat_pmu.csv"));
    assert_eq!(v.len(), 5);
    assert_eq!(v[0].value, Some(2281231.0));
    assert_eq!(v[1].event, "instructions");
    assert_eq!(v[1].value, Some(3650012.0));
    assert_eq!(v[3].status, "not-counted");
    assert_eq!(v[4].event, "L1-dcache-load-misses:u");
    assert_eq!(v[4].running, Some(50.0));
    assert!(check_supported(
        &v,
        &events(&["cycles", "instructions", "L1-dcache-load-misses"])
    )
    .is_ok());
}

fn tare(args: &[&str]) -> std::process::Output {
    common::tare()
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap()
}

fn perf_available() -> bool {
    Command::new("perf")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn hardware_counters_are_refused_here_and_software_events_are_recorded() {
    if !perf_available() {
        let out = tare(&["run", "--counters", "cycles", "true"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("needs perf"));
        return;
    }
    // Does this machine count cycles at all? Ask perf directly.
    let probe = Command::new("perf")
        .args(["stat", "-x,", "-e", "cycles", "--", "true"])
        .output()
        .unwrap();
    let has_pmu = !String::from_utf8_lossy(&probe.stderr).contains("<not supported>");
    let out = tare(&[
        "run",
        "--style",
        "none",
        "--runs",
        "2",
        "--counters",
        "cycles,instructions",
        "true",
    ]);
    if has_pmu {
        assert!(out.status.success());
    } else {
        assert_eq!(
            out.status.code(),
            Some(2),
            "VM without PMU: refused before any run"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("not supported on this machine"), "{err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("c.json");
    let out = tare(&[
        "run",
        "--style",
        "none",
        "--runs",
        "3",
        "--counters",
        "task-clock,page-faults",
        "--export-json",
        j.to_str().unwrap(),
        "true",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(
        doc["extra"]["counters"]["events"],
        serde_json::json!(["task-clock", "page-faults"])
    );
    for r in doc["benchmarks"][0]["runs"].as_array().unwrap() {
        let c = r["extra"]["counters"].as_array().unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0]["event"], "task-clock");
        assert_eq!(c[0]["status"], "counted");
        assert!(c[1]["value"].as_f64().unwrap() > 0.0, "page faults of true");
    }
    let out = tare(&["run", "--counters", "no-such-event", "true"]);
    assert_eq!(out.status.code(), Some(2));
}
