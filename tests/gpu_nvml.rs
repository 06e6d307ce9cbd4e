//! GPUs through NVML (issues 29, 47), with a fake NVML built from tests/fixtures/nvml/fake_nvml.c
//! (no machine here has an NVIDIA GPU): `tare machine` shows the GPU, every run's environment
//! records its clocks and temperature, the energy counter is read only by the GPU energy meter
//! (`--energy`: per-run energy against power × time, idle power, the counter's period, coarse
//! short runs, comparisons and `compare --metric gpu_energy`). Without the library nothing
//! changes.

mod common;
#[path = "common/skip.rs"]
mod skip;
use common::tare;

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The session's comparison on GPU energy.
fn gpu_comparison(doc: &Value) -> &Value {
    doc["extra"]["energy_comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["quantity"] == "GPU energy (J)")
        .unwrap()
}

/// Runs `c`, which must succeed (its stderr in the message otherwise).
fn ok(c: &mut std::process::Command) -> std::process::Output {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn fake(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nvml/fake_nvml.c");
    let lib = dir.join("libfake-nvml.so");
    let ok = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    ok.then_some(lib)
}

#[test]
fn a_gpu_is_reported_and_each_run_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = fake(dir.path()) else {
        return skip::skip("a C compiler", "apt-get install gcc");
    };
    let out = tare()
        .args(["machine", "--json"])
        .env("TARE_NVML_LIB", &lib)
        .output()
        .unwrap();
    assert!(out.status.success());
    let inv: Value = serde_json::from_slice(&out.stdout).unwrap();
    let g = &inv["facts"]["gpus"][0];
    assert_eq!(g["name"], "Fake GPU 9000", "{}", inv["facts"]["gpus"]);
    assert_eq!(g["sm_clock_mhz"], 1410);
    assert_eq!(g["temperature_c"], 42);
    assert!((g["power_w"].as_f64().unwrap() - 123.456).abs() < 1e-9);
    assert!(inv["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["section"] == "gpu" && i["name"] == "GPU 0 (Fake GPU 9000)"));

    let j = dir.path().join("r.json");
    ok(tare()
        .args(["run", "--style", "none", "--runs", "3", "--export-json"])
        .arg(&j)
        .arg("true")
        .env("TARE_NVML_LIB", &lib));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    for r in doc["benchmarks"][0]["runs"].as_array().unwrap() {
        let g = &r["extra"]["environment"]["gpu"][0];
        assert_eq!(g["name"], "Fake GPU 9000", "{r}");
        assert_eq!(g["sm_clock_mhz_after"], 1410);
        assert!((g["power_w_after"].as_f64().unwrap() - 123.456).abs() < 1e-9);
        // The energy counter (milliseconds a read on a real GPU) is the GPU energy meter's,
        // `--energy`: not read around every run.
        assert!(g.get("energy_j").is_none(), "{g}");
        assert!(r.get("energy").is_none(), "{r}");
    }

    // No library: no GPU section, no field, no error.
    let out = tare()
        .args(["machine", "--json"])
        .env("TARE_NVML_LIB", dir.path().join("absent.so"))
        .output()
        .unwrap();
    let inv: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(inv["facts"]["gpus"], serde_json::json!([]));
}

#[test]
fn tune_locks_application_clocks_and_reset_restores_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = fake(dir.path()) else {
        return skip::skip("a C compiler", "apt-get install gcc");
    };
    let clocks = dir.path().join("clocks");
    let state = dir.path().join("tune-state.json");
    let run = |args: &[&str]| {
        tare()
            .args(args)
            .arg("--state-file")
            .arg(&state)
            .env("TARE_NVML_LIB", &lib)
            .env("FAKE_NVML_STATE", &clocks)
            .output()
            .unwrap()
    };
    let dry = run(&["machine", "tune", "--dry-run"]);
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        text.contains("nvml:gpu0/applications_clocks") && text.contains("2619,1980"),
        "{text}"
    );
    // On this VM the tune is incomplete (no cpufreq), but the GPU step is made and saved.
    let out = run(&["machine", "tune"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        std::fs::read_to_string(&clocks).unwrap().trim(),
        "2619,1980",
        "{text}"
    );
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert!(saved["entries"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["path"] == "nvml:gpu0/applications_clocks" && e["previous"] == "1593,1410\n"));
    let out = run(&["machine", "reset"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&clocks).unwrap().trim(),
        "1593,1410"
    );
    assert!(!state.exists());
}

/// Counter reads the fake logged at each shutdown, summed.
fn energy_reads(log: &Path) -> u64 {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("energy_reads ")?.parse::<u64>().ok())
        .sum()
}

#[test]
fn without_a_gpu_meter_runs_never_read_the_energy_counter() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = fake(dir.path()) else {
        return skip::skip("a C compiler", "apt-get install gcc");
    };
    let reads = |runs: &str| {
        let log = dir.path().join(format!("log-{runs}"));
        ok(tare()
            .args(["run", "--style", "none", "--runs", runs, "true"])
            .env("TARE_NVML_LIB", &lib)
            .env("FAKE_NVML_LOG", &log));
        energy_reads(&log)
    };
    // Whatever the session reads once (the machine's facts), 40 runs read no more than 2.
    let (two, forty) = (reads("2"), reads("40"));
    assert_eq!(
        two, forty,
        "energy counter reads grew with runs: {two} for 2, {forty} for 40"
    );
}

fn run_json(dir: &Path, lib: &Path, name: &str, args: &[&str]) -> Value {
    let j = dir.join(format!("{name}.json"));
    let out = ok(tare()
        .args(["run", "--energy", "--energy-idle", "0.3s", "--export-json"])
        .arg(&j)
        .args(args)
        .env("TARE_NVML_LIB", lib)
        .env("FAKE_NVML_BUSY", dir.join("busy")));
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    doc["_stdout"] = Value::String(String::from_utf8_lossy(&out.stdout).into_owned());
    doc
}

#[test]
fn gpu_energy_is_a_meter_compared_and_gated_like_time() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = fake(dir.path()) else {
        return skip::skip("a C compiler", "apt-get install gcc");
    };
    let busy = format!(
        "sh -c 'touch {0}; sleep 0.3; rm -f {0}'",
        dir.path().join("busy").display()
    );
    let doc = run_json(
        dir.path(),
        &lib,
        "ab",
        &[
            "--style",
            "basic",
            "--runs",
            "6",
            "-n",
            "idle",
            "-n",
            "busy",
            "sleep 0.3",
            &busy,
        ],
    );
    // The counter's period (the fake's 20 ms) and the idle power, measured before the runs.
    let g = &doc["extra"]["energy"]["gpus"][0];
    let period = g["update_period_s"].as_f64().unwrap();
    assert!((0.012..0.05).contains(&period), "{g}");
    let idle = g["idle_watts"].as_f64().unwrap();
    assert!((idle - 123.456).abs() < 25.0, "{g}");
    // Each command's energy per run is its power × its time: the median run within 20% (each
    // end of a run is known to a period's worth, and a sampler thread slowed by other load
    // moves some energy between neighbouring runs); the energy above idle follows exactly.
    for (b, watts) in [(0, 123.456), (1, 400.0)] {
        let mut off = Vec::new();
        for r in doc["benchmarks"][b]["runs"].as_array().unwrap() {
            let e = &r["energy"]["gpus"][0];
            let (j, wall) = (
                e["joules"].as_f64().unwrap(),
                r["wall_time"].as_f64().unwrap(),
            );
            off.push(j / (watts * wall));
            assert!(e.get("coarse").is_none(), "{e}");
            let dynamic = e["dynamic_joules"].as_f64().unwrap();
            assert!((dynamic - (j - idle * wall)).abs() < 1e-6, "{e}");
        }
        off.sort_by(f64::total_cmp);
        let median = off[off.len() / 2];
        assert!(
            (median - 1.0).abs() < 0.2,
            "{b}: energy / (power × time) {off:?}"
        );
    }
    // The summary shows it, and the busy command uses ~3.2× the idle one's energy.
    let out = doc["_stdout"].as_str().unwrap();
    assert!(
        out.contains("GPU 0 (Fake GPU 9000)") && out.contains("above idle"),
        "{out}"
    );
    let c = gpu_comparison(&doc);
    assert!(c["ratio_ci_low"].as_f64().unwrap() > 2.0, "{c}");
    assert!(
        out.contains("uses") && out.contains("the GPU energy of idle"),
        "{out}"
    );

    // Gated like time: `compare --metric gpu_energy` fails on the busy side.
    let side = |name: &str, cmd: &str| {
        let d = run_json(
            dir.path(),
            &lib,
            name,
            &["--style", "none", "--runs", "6", "-n", "x", cmd],
        );
        let p = dir.path().join(format!("{name}.json"));
        assert!(d["benchmarks"][0]["runs"].as_array().unwrap().len() >= 6);
        p
    };
    let (old, new) = (side("old", "sleep 0.3"), side("new", &busy));
    let out = tare()
        .args([
            "compare",
            "--metric",
            "gpu_energy",
            "--fail-if-slower",
            "5%",
        ])
        .arg(&old)
        .arg(&new)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("GPU energy"), "{text}");
    // Wall time did not change: no verdict there.
    let out = tare()
        .args(["compare"])
        .arg(&old)
        .arg(&new)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // The history keeps GPU energy as a series of its own, in joules.
    let db = dir.path().join("h.sqlite");
    for (file, commit) in [(&old, "aaaa1111"), (&new, "bbbb2222")] {
        ok(tare()
            .args(["history", "--store"])
            .arg(&db)
            .args(["add", "--commit", commit])
            .arg(file)
            .current_dir(dir.path()));
    }
    let out = tare()
        .args(["history", "--store"])
        .arg(&db)
        .args(["show", "-m", "gpu_energy"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("gpu_energy") && text.contains(" J"), "{text}");
}

#[test]
fn runs_shorter_than_the_counter_are_coarse_and_get_no_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = fake(dir.path()) else {
        return skip::skip("a C compiler", "apt-get install gcc");
    };
    let doc = run_json(
        dir.path(),
        &lib,
        "short",
        &[
            "--style",
            "basic",
            "--runs",
            "5",
            "-n",
            "a",
            "-n",
            "b",
            "true",
            "sleep 0.01",
        ],
    );
    for b in doc["benchmarks"].as_array().unwrap() {
        for r in b["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["counted"] == true)
        {
            assert_eq!(r["energy"]["gpus"][0]["coarse"], true, "{r}");
        }
    }
    let c = gpu_comparison(&doc);
    assert!(
        c["withheld"].as_str().unwrap().contains("update periods"),
        "{c}"
    );
    assert!(c.get("ratio").is_none(), "{c}");
    let out = doc["_stdout"].as_str().unwrap();
    assert!(out.contains("no verdict on GPU energy"), "{out}");
    // And the gate refuses to judge on it, saying why.
    let p = dir.path().join("short.json");
    let out = tare()
        .args(["compare", "--metric", "gpu_energy", "--allow-missing"])
        .arg(&p)
        .arg(&p)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("too coarse"), "{err}");
}
