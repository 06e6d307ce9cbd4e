//! Results people reuse (issue 30): `tare compare` as Markdown and JSON with a geometric mean,
//! and tare's runs in hyperfine's JSON shape, checked against a real hyperfine's export.

mod common;
#[path = "common/skip.rs"]
mod skip;
use common::tare;

use serde_json::Value;
use std::path::Path;

fn session(dir: &Path, file: &str, a: &str, b: &str) {
    let out = tare()
        .args([
            "run", "--style", "none", "--runs", "8", "-n", "a", "-n", "b",
        ])
        .args(["--export-json", dir.join(file).to_str().unwrap(), a, b])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn compare_writes_markdown_and_json_with_a_geometric_mean() {
    let dir = tempfile::tempdir().unwrap();
    // a takes five times as long, b stays: the geometric mean of the two ratios is about √5,
    // a change no load on a shared machine hides.
    session(dir.path(), "old.json", "sleep 0.01", "sleep 0.02");
    session(dir.path(), "new.json", "sleep 0.05", "sleep 0.02");
    let md = dir.path().join("cmp.md");
    let js = dir.path().join("cmp.json");
    let out = tare()
        .arg("compare")
        .args([dir.path().join("old.json"), dir.path().join("new.json")])
        .args(["--fail-if-slower", "10%", "--export-markdown"])
        .arg(&md)
        .arg("--export-json")
        .arg(&js)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The gate fails on a (5× slower), and the files are written all the same.
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("geometric mean: +"), "{stdout}");
    let m = std::fs::read_to_string(&md).unwrap();
    assert!(
        m.starts_with("| benchmark | old | new | change | 97.5% CI | p (adj.) | verdict |"),
        "{m}"
    );
    assert!(
        m.lines()
            .any(|l| l.starts_with("| a |") && l.contains("**slower**")),
        "{m}"
    );
    assert!(m.lines().any(|l| l.starts_with("| b |")), "{m}");
    assert!(
        m.contains("**geometric mean: +") && m.contains("model:"),
        "{m}"
    );
    let j: Value = serde_json::from_str(&std::fs::read_to_string(&js).unwrap()).unwrap();
    assert_eq!(j["regression"], true, "{j}");
    let rows = j["comparisons"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{j}");
    let a = rows.iter().find(|r| r["benchmark"] == "a").unwrap();
    assert_eq!(a["verdict"], "slower", "{a}");
    assert_eq!(a["regression"], true, "{a}");
    let g = j["geometric_mean"]["ratio"].as_f64().unwrap();
    let expected = (a["ratio"].as_f64().unwrap()
        * rows.iter().find(|r| r["benchmark"] == "b").unwrap()["ratio"]
            .as_f64()
            .unwrap())
    .sqrt();
    assert!((g - expected).abs() < 1e-9 * expected, "{g} vs {expected}");
    assert!(g > 1.4 && g < 3.5, "{j}");
    assert_eq!(j["geometric_mean"]["benchmarks"], 2);
    assert_eq!(j["geometric_mean"]["ci"].as_array().unwrap().len(), 2);
}

/// The JSON type of every field of hyperfine's `results[]` entries.
fn shape(doc: &Value) -> Vec<(String, &'static str)> {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let mut out: Vec<(String, &'static str)> = doc["results"][0]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), kind(v)))
        .collect();
    out.sort();
    out
}

#[test]
fn the_hyperfine_shaped_json_is_what_hyperfine_writes() {
    if std::process::Command::new("hyperfine")
        .arg("--version")
        .output()
        .is_err()
    {
        return skip::skip("hyperfine", "apt-get install hyperfine");
    }
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("tare.json");
    let theirs = dir.path().join("hyperfine.json");
    let out = tare()
        .args(["run", "--style", "none", "--runs", "5", "-L", "n", "1,2"])
        .arg("--export-json-hyperfine")
        .arg(&ours)
        .arg("sleep 0.00{n}")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = std::process::Command::new("hyperfine")
        .args(["-N", "--runs", "3", "--style", "none", "-L", "n", "1,2"])
        .arg("--export-json")
        .arg(&theirs)
        .arg("sleep 0.00{n}")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read =
        |p: &Path| -> Value { serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
    let (t, h) = (read(&ours), read(&theirs));
    // Same top level, same fields with the same JSON types, same commands and parameters.
    assert_eq!(
        t.as_object().unwrap().keys().collect::<Vec<_>>(),
        h.as_object().unwrap().keys().collect::<Vec<_>>()
    );
    assert_eq!(shape(&t), shape(&h), "tare: {t}\nhyperfine: {h}");
    for i in 0..2 {
        assert_eq!(t["results"][i]["command"], h["results"][i]["command"]);
        assert_eq!(t["results"][i]["parameters"], h["results"][i]["parameters"]);
        assert_eq!(t["results"][i]["times"].as_array().unwrap().len(), 5);
        assert_eq!(
            t["results"][i]["exit_codes"],
            serde_json::json!([0, 0, 0, 0, 0])
        );
        let times: Vec<f64> = serde_json::from_value(t["results"][i]["times"].clone()).unwrap();
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        let m = t["results"][i]["mean"].as_f64().unwrap();
        assert!((m - mean).abs() < 1e-12, "{m} vs {mean}");
    }
    // tare reads it back as hyperfine's: the same times.
    let back = dir.path().join("back.json");
    let out = tare()
        .arg("import")
        .arg(&ours)
        .arg("--export-json")
        .arg(&back)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b = read(&back);
    assert_eq!(b["benchmarks"].as_array().unwrap().len(), 2, "{b}");
    let walls: Vec<f64> = b["benchmarks"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["wall_time"].as_f64().unwrap())
        .collect();
    let times: Vec<f64> = serde_json::from_value(t["results"][0]["times"].clone()).unwrap();
    assert_eq!(walls, times);
}

#[test]
fn hyperfines_remaining_spellings_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    // --min-benchmarking-time: the precision rule holds only after that much measuring.
    let out = tare()
        .args([
            "run",
            "--style",
            "nocolor",
            "--min-benchmarking-time",
            "300ms",
        ])
        .args([
            "--precision",
            "50%",
            "--export-json",
            j.to_str().unwrap(),
            "true",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let rule = doc["extra"]["stop_rule"].as_str().unwrap();
    assert!(rule.contains("time >= 0.3"), "{rule}");
    let last = doc["benchmarks"][0]["runs"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let spent = last["start_offset"].as_f64().unwrap() + last["wall_time"].as_f64().unwrap();
    // The rule's clock runs from the first measured run to the stop check, which follows the
    // last run's bookkeeping: the last run's end may fall a few ms short of 0.3 s (0.2994 once
    // under load). Stopping at the 10-run minimum would end near 0.01 s.
    assert!(spent >= 0.25, "stopped after {spent} s: {rule}");
    for style in ["color", "nocolor", "auto"] {
        let out = tare()
            .args(["run", "--style", style, "--runs", "2", "true"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "--style {style}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("wall time"));
    }
}
