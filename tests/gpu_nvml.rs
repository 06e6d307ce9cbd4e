//! GPUs through NVML (issue 29), with a fake NVML built from tests/fixtures/nvml/fake_nvml.c
//! (no machine here has an NVIDIA GPU): `tare machine` shows the GPU, and every run's
//! environment records its clocks, temperature and the energy it used. Without the library
//! nothing changes.

mod common;
#[path = "common/skip.rs"]
mod skip;
use common::tare;

use serde_json::Value;
use std::path::{Path, PathBuf};

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
    let out = tare()
        .args(["run", "--style", "none", "--runs", "3", "--export-json"])
        .arg(&j)
        .arg("true")
        .env("TARE_NVML_LIB", &lib)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    for r in doc["benchmarks"][0]["runs"].as_array().unwrap() {
        let g = &r["extra"]["environment"]["gpu"][0];
        assert_eq!(g["name"], "Fake GPU 9000", "{r}");
        assert_eq!(g["sm_clock_mhz_after"], 1410);
        // The fake counter grows by 1 J a reading: each run used energy, in joules.
        assert!(g["energy_j"].as_f64().unwrap() >= 1.0, "{g}");
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
