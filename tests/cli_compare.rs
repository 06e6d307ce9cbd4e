//! `tare compare`: verdicts and exit codes on saved results with known distributions.

mod common;
use common::tare;

use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A real results file as template (so every field is what tare writes).
fn template(dir: &Path) -> Value {
    let p = dir.join("t.json");
    let out = tare()
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "2",
            "-n",
            "bench",
            "--export-json",
            p.to_str().unwrap(),
            "true",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Writes a results file whose 40 wall times are lognormal around `median` with 1% spread.
fn results(dir: &Path, name: &str, tpl: &Value, median: f64, seed: u64) -> PathBuf {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut doc = tpl.clone();
    let run = doc["benchmarks"][0]["runs"][0].clone();
    let runs: Vec<Value> = (0..40)
        .map(|i| {
            // Box–Muller normal draw.
            let (u1, u2): (f64, f64) = (rng.gen::<f64>().max(1e-12), rng.gen());
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            let mut r = run.clone();
            r["index"] = i.into();
            r["wall_time"] = (median * (0.01 * z).exp()).into();
            r
        })
        .collect();
    doc["benchmarks"][0]["runs"] = Value::Array(runs);
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(&doc).unwrap()).unwrap();
    p
}

fn compare(old: &Path, new: &Path, extra: &[&str]) -> (i32, String) {
    let out = tare()
        .arg("compare")
        .arg(old)
        .arg(new)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn exit_codes_follow_the_verdict_and_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let tpl = template(dir.path());
    let base = results(dir.path(), "base.json", &tpl, 0.100, 1);
    let same = results(dir.path(), "same.json", &tpl, 0.100, 2);
    let slow20 = results(dir.path(), "slow20.json", &tpl, 0.120, 3);
    let slow3 = results(dir.path(), "slow3.json", &tpl, 0.103, 4);
    let fast = results(dir.path(), "fast.json", &tpl, 0.080, 5);

    let (code, out) = compare(&base, &same, &["--fail-if-slower", "5%"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("slower:"), "{out}");

    let (code, out) = compare(&base, &slow20, &["--fail-if-slower", "5%"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("× slower") && out.contains("+20."), "{out}");

    // Significantly slower, but by less than the threshold.
    let (code, out) = compare(&base, &slow3, &["--fail-if-slower", "10%"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("slower"), "{out}");

    // Without a threshold a regression is reported but does not fail.
    let (code, _) = compare(&base, &slow20, &[]);
    assert_eq!(code, 0);

    let (code, out) = compare(&base, &fast, &["--fail-if-slower", "5%"]);
    assert_eq!(code, 0);
    assert!(out.contains("faster"), "{out}");
}

#[test]
fn bad_input_is_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let tpl = template(dir.path());
    let base = results(dir.path(), "base.json", &tpl, 0.1, 1);
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{not json").unwrap();
    let (code, out) = compare(&base, &junk, &[]);
    assert_eq!(code, 2);
    assert!(out.contains("is not a tare results file"), "{out}");
    let (code, out) = compare(&base, &dir.path().join("missing.json"), &[]);
    assert_eq!(code, 2, "{out}");
    let mut other = tpl.clone();
    other["benchmarks"][0]["name"] = "something else".into();
    let o = dir.path().join("other.json");
    std::fs::write(&o, serde_json::to_string(&other).unwrap()).unwrap();
    let (code, out) = compare(&base, &o, &[]);
    assert_eq!(code, 2);
    assert!(out.contains("matches"), "{out}");
}
