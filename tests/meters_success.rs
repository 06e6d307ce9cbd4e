//! The success rate with a binomial CI: Wilson and Clopper–Pearson against statsmodels/scipy
//! values (tests/data/stats/binomial.json, made by scripts/binomial_reference.py), and end to
//! end: a program that fails every third run.

mod common;
use common::tare;

use serde_json::Value;
use tare::stats::binomial::{clopper_pearson, wilson};

#[test]
fn intervals_match_the_reference() {
    let text = std::fs::read_to_string("tests/data/stats/binomial.json").unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() > 100);
    let mut worst = (0.0f64, 0.0f64);
    for c in cases {
        let (k, n, conf) = (
            c["k"].as_u64().unwrap(),
            c["n"].as_u64().unwrap(),
            c["confidence"].as_f64().unwrap(),
        );
        let w = wilson(k, n, conf).unwrap();
        let cp = clopper_pearson(k, n, conf).unwrap();
        let (rw, rc) = (&c["wilson"], &c["clopper_pearson"]);
        for (got, want, slot) in [
            (w.0, rw[0].as_f64().unwrap(), 0),
            (w.1, rw[1].as_f64().unwrap(), 0),
            (cp.0, rc[0].as_f64().unwrap(), 1),
            (cp.1, rc[1].as_f64().unwrap(), 1),
        ] {
            let d = (got - want).abs();
            if slot == 0 {
                worst.0 = worst.0.max(d);
            } else {
                worst.1 = worst.1.max(d);
            }
            assert!(d < 1e-8, "k={k} n={n} conf={conf}: {got} vs {want}");
        }
    }
    eprintln!(
        "largest differences: Wilson {:.1e}, Clopper–Pearson {:.1e}",
        worst.0, worst.1
    );
}

#[test]
fn a_program_failing_every_third_run() {
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("n");
    let j = dir.path().join("r.json");
    let cmd = format!(
        "sh -c 'n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}; test $((n % 3)) -ne 0'",
        c = counter.display()
    );
    let out = tare()
        .args([
            "run", "--style", "basic", "--warmup", "0", "--runs", "21", "-i",
        ])
        .arg("--export-json")
        .arg(&j)
        .arg(&cmd)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("success       14/21"), "{stdout}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let s = &doc["benchmarks"][0]["extra"]["success_rate"];
    assert_eq!(s["successes"], 14);
    assert_eq!(s["runs"], 21);
    let (lo, hi) = wilson(14, 21, 0.95).unwrap();
    assert!((s["ci_low"].as_f64().unwrap() - lo).abs() < 1e-12);
    assert!((s["ci_high"].as_f64().unwrap() - hi).abs() < 1e-12);
    eprintln!("14/21: 95% Wilson CI {lo:.4} … {hi:.4}");
}
