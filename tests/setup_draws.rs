//! Every setup factor through every entry point, for hundreds of draws: `run --randomize`,
//! `--setups`, `--replay-setup`, `bias --factor`, `plan` and `run --plan`. A draw of the
//! working directory with depth 1 once failed in two sessions of five; here every draw must
//! succeed, and a replay must reproduce exactly the recorded factors.

mod common;

use common::tare;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn aslr_possible() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/randomize_va_space")
        .map(|s| s.trim() != "0")
        .unwrap_or(false)
}

/// `all` where ASLR can be a factor here, the others otherwise.
fn all_factors() -> &'static str {
    if aslr_possible() {
        "env,aslr,cwd,argv0"
    } else {
        "env,cwd,argv0"
    }
}

fn ok(args: &[&str]) -> Output {
    let out = tare().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "tare {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn setups(doc: &Value) -> Vec<Value> {
    doc["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["runs"].as_array().unwrap().clone())
        .map(|r| r["extra"]["setup"].clone())
        .collect()
}

#[test]
fn fresh_setups_for_hundreds_of_draws() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    ok(&[
        "run",
        "--style",
        "none",
        "--randomize",
        all_factors(),
        "--runs",
        "300",
        "--export-json",
        j.to_str().unwrap(),
        "true",
    ]);
    let recs = setups(&json(&j));
    assert_eq!(recs.len(), 300);
    let depths: std::collections::BTreeSet<u64> = recs
        .iter()
        .map(|r| r["cwd_depth"].as_u64().unwrap())
        .collect();
    assert!(depths.contains(&1), "depth 1 drawn: {depths:?}");
    for r in &recs {
        assert!(r["cwd"].is_string() && r["argv0"].is_string(), "{r}");
    }
}

#[test]
fn setup_pool_like_the_readme() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 0..8 {
        let j = dir.path().join(format!("r{seed}.json"));
        ok(&[
            "run",
            "--style",
            "none",
            "--randomize",
            all_factors(),
            "--setups",
            "10",
            "--runs",
            "10",
            "--seed",
            &seed.to_string(),
            "--export-json",
            j.to_str().unwrap(),
            "true",
            "/bin/true",
        ]);
        let seeds: std::collections::BTreeSet<u64> = setups(&json(&j))
            .iter()
            .map(|r| r["seed"].as_u64().unwrap())
            .collect();
        assert_eq!(seeds.len(), 10);
    }
}

#[test]
fn bias_sweeps_every_size_factor() {
    let dir = tempfile::tempdir().unwrap();
    for (factor, key) in [
        ("cwd", "cwd_length"),
        ("env", "env_pad"),
        ("argv0", "argv0_length"),
    ] {
        let j = dir.path().join(format!("{factor}.json"));
        ok(&[
            "bias",
            "--style",
            "none",
            "--factor",
            factor,
            "--levels",
            "0:300:3",
            "--repeat",
            "2",
            "--warmup",
            "0",
            "--no-intervention",
            "--export-json",
            j.to_str().unwrap(),
            "--",
            "true",
        ]);
        // Every level of 0, 3, …, 300 swept, twice, each run made at its level.
        let doc = json(&j);
        let benches = doc["benchmarks"].as_array().unwrap();
        assert_eq!(benches.len(), 101, "{factor}");
        for (i, b) in benches.iter().enumerate() {
            let level = 3 * i as u64;
            assert_eq!(b["name"], format!("{factor}={level}"), "{factor}");
            let runs: Vec<&Value> = b["runs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["counted"] == true)
                .collect();
            assert_eq!(runs.len(), 2, "{factor}={level}");
            // A directory's name has one character at least: level 0 of cwd is 1.
            let made = if factor == "cwd" { level.max(1) } else { level };
            for r in runs {
                assert_eq!(r["extra"]["setup"][key], made, "{factor}: {r}");
            }
        }
        let bias = &doc["extra"]["bias"];
        assert_eq!(bias["factor"], factor, "{bias}");
        assert!(
            bias["conclusion"]
                .as_str()
                .is_some_and(|c| c.contains(factor)),
            "{bias}"
        );
    }
}

#[test]
fn plan_from_a_pilot_then_run_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let pilot = dir.path().join("pilot.json");
    let plan = dir.path().join("plan.json");
    let out = dir.path().join("planned.json");
    for attempt in 0..2 {
        ok(&[
            "run",
            "--style",
            "none",
            "--randomize",
            all_factors(),
            "--setups",
            "10",
            "--runs",
            "50",
            "--seed",
            &attempt.to_string(),
            "--export-json",
            pilot.to_str().unwrap(),
            "true",
        ]);
        ok(&[
            "plan",
            "--pilot",
            pilot.to_str().unwrap(),
            "--precision",
            "5%",
            "--output",
            plan.to_str().unwrap(),
        ]);
        ok(&[
            "run",
            "--style",
            "none",
            "--plan",
            plan.to_str().unwrap(),
            "--export-json",
            out.to_str().unwrap(),
            "true",
        ]);
        let p = json(&plan);
        let recs = setups(&json(&out));
        let total = p["setups"].as_u64().unwrap() * p["runs_per_setup"].as_u64().unwrap();
        assert_eq!(recs.len() as u64, total);
    }
}

#[test]
fn replay_reproduces_exactly_the_recorded_factors() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let factors = if aslr_possible() { "env,aslr" } else { "env" };
    ok(&[
        "run",
        "--style",
        "none",
        "--randomize",
        factors,
        "--runs",
        "5",
        "--export-json",
        j.to_str().unwrap(),
        "true",
    ]);
    let want = setups(&json(&j))[2].clone();
    let seed = want["seed"].as_u64().unwrap().to_string();

    // A bare seed does not say which factors it was drawn with: refused, with what to do.
    let out = tare()
        .args(["run", "--style", "none", "--replay-setup", &seed, "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--randomize") && err.contains("RESULTS.json:SEED"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    // From the results file: the recorded factors, nothing more.
    let r2 = dir.path().join("replay.json");
    let from = format!("{}:{seed}", j.display());
    ok(&[
        "run",
        "--style",
        "none",
        "--replay-setup",
        &from,
        "--runs",
        "3",
        "--export-json",
        r2.to_str().unwrap(),
        "true",
    ]);
    let same = |rec: &Value| {
        let strip = |v: &Value| {
            let mut v = v.clone();
            v.as_object_mut().unwrap().remove("block");
            v
        };
        assert_eq!(
            strip(rec),
            strip(&want),
            "replayed setup differs from the recorded one"
        );
    };
    for rec in setups(&json(&r2)) {
        same(&rec);
        assert!(rec.get("cwd").is_none() && rec.get("argv0_length").is_none());
    }
    // With the same --randomize, a bare seed replays the same setup.
    let r3 = dir.path().join("replay3.json");
    ok(&[
        "run",
        "--style",
        "none",
        "--replay-setup",
        &seed,
        "--randomize",
        factors,
        "--runs",
        "2",
        "--export-json",
        r3.to_str().unwrap(),
        "true",
    ]);
    for rec in setups(&json(&r3)) {
        same(&rec);
    }
    // A seed the file never used is refused.
    let out = tare()
        .args([
            "run",
            "--style",
            "none",
            "--replay-setup",
            &format!("{}:12345", j.display()),
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run in"));
}
