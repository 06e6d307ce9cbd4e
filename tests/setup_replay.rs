//! `tare run --randomize`, `--setups` and `--replay-setup` end to end: the real binary on
//! this machine. A probe script records what each run saw (TARE_PAD size, PWD, argv[0], the
//! ASLR personality flag); the results must record the same, and replaying a setup's seed
//! must reproduce it.

mod common;
#[path = "common/skip.rs"]
mod skip;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn probe() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bias/probe.sh")
}

fn tare(log: &Path, args: &[&str]) -> Output {
    common::tare()
        .env("NO_COLOR", "1")
        .env("PROBE_OUT", log)
        .args(args)
        .output()
        .unwrap()
}

fn ok(log: &Path, args: &[&str]) -> Output {
    let out = tare(log, args);
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

/// (pad size, PWD, argv[0], ASLR off) per probe line.
fn seen(log: &Path) -> Vec<(usize, String, String, bool)> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            let w: Vec<&str> = l.split(' ').collect();
            let persona = u32::from_str_radix(w[3], 16).unwrap();
            (
                w[0].parse().unwrap(),
                w[1].to_string(),
                w[2].to_string(),
                persona & 0x0040000 != 0,
            )
        })
        .collect()
}

fn aslr_possible() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/randomize_va_space")
        .map(|s| s.trim() != "0")
        .unwrap_or(false)
}

/// The setup record of each measured run of benchmark `b`.
fn setups(doc: &Value, b: usize) -> Vec<Value> {
    doc["benchmarks"][b]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["extra"]["setup"].clone())
        .collect()
}

fn check_matches(rec: &Value, line: &(usize, String, String, bool)) {
    assert_eq!(rec["env_pad"].as_u64().unwrap() as usize, line.0, "{rec}");
    assert_eq!(rec["cwd"].as_str().unwrap(), line.1, "{rec}");
    assert_eq!(
        rec["cwd_path_length"].as_u64().unwrap() as usize,
        line.1.len()
    );
    assert_eq!(rec["argv0"].as_str().unwrap(), line.2, "{rec}");
    assert_eq!(
        rec["argv0_path_length"].as_u64().unwrap() as usize,
        line.2.len()
    );
    assert_eq!(!rec["aslr"].as_bool().unwrap(), line.3, "{rec}");
}

#[test]
fn randomized_comparison_records_setups_and_replay_reproduces_them() {
    if !aslr_possible() {
        skip::skip("ASLR enabled", "sysctl kernel.randomize_va_space=2");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("probe.log");
    let j = dir.path().join("r.json");
    let p = probe();
    let p = p.to_str().unwrap();
    ok(
        &log,
        &[
            "run",
            "--style",
            "none",
            "--randomize",
            "env,aslr,cwd,argv0",
            "--runs",
            "6",
            "--seed",
            "9",
            "--export-json",
            j.to_str().unwrap(),
            p,
            "true",
        ],
    );
    let doc = json(&j);
    let (a, b) = (setups(&doc, 0), setups(&doc, 1));
    assert_eq!(a.len(), 6);
    let lines = seen(&log);
    assert_eq!(lines.len(), 6);
    for (rec, line) in a.iter().zip(&lines) {
        check_matches(rec, line);
    }
    // Paired by setup: round k of both commands ran in the same setup.
    let runs = |k: usize| doc["benchmarks"][k]["runs"].as_array().unwrap().clone();
    for (ra, rb) in runs(0).iter().zip(runs(1).iter()) {
        assert_eq!(ra["round"], rb["round"]);
    }
    let by_round = |k: usize| -> std::collections::BTreeMap<u64, u64> {
        runs(k)
            .iter()
            .map(|r| {
                (
                    r["round"].as_u64().unwrap(),
                    r["extra"]["setup"]["seed"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(by_round(0), by_round(1));
    assert_eq!(b.len(), 6);
    let seeds: std::collections::HashSet<u64> =
        a.iter().map(|s| s["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds.len(), 6, "a fresh setup per round");
    assert_eq!(doc["extra"]["comparison_unit"], "setup");
    assert_eq!(doc["extra"]["setups"]["mode"], "fresh");

    // Replay the setup of the fourth run.
    let want = &a[3];
    let seed = want["seed"].as_u64().unwrap().to_string();
    let log2 = dir.path().join("replay.log");
    let j2 = dir.path().join("replay.json");
    ok(
        &log2,
        &[
            "run",
            "--style",
            "none",
            "--replay-setup",
            &seed,
            "--randomize",
            "env,aslr,cwd,argv0",
            "--runs",
            "3",
            "--export-json",
            j2.to_str().unwrap(),
            p,
        ],
    );
    let replayed = setups(&json(&j2), 0);
    let lines = seen(&log2);
    assert_eq!(replayed.len(), 3);
    for (rec, line) in replayed.iter().zip(&lines) {
        check_matches(rec, line);
        for k in [
            "seed",
            "env_pad",
            "aslr",
            "cwd_depth",
            "cwd_length",
            "argv0_length",
            "cwd_path_length",
            "argv0_path_length",
        ] {
            assert_eq!(rec[k], want[k], "{k} differs on replay");
        }
    }
}

#[test]
fn setup_pool_rotates_and_is_analysed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("probe.log");
    let j = dir.path().join("r.json");
    ok(
        &log,
        &[
            "run",
            "--style",
            "none",
            "--randomize",
            "env",
            "--env-pad-range",
            "100:200",
            "--setups",
            "2",
            "--runs",
            "6",
            "--seed",
            "3",
            "--export-json",
            j.to_str().unwrap(),
            probe().to_str().unwrap(),
        ],
    );
    let doc = json(&j);
    let recs = setups(&doc, 0);
    let seeds: Vec<u64> = recs.iter().map(|s| s["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds[0], seeds[2]);
    assert_eq!(seeds[1], seeds[3]);
    assert_ne!(seeds[0], seeds[1]);
    for (rec, line) in recs.iter().zip(seen(&log)) {
        let pad = rec["env_pad"].as_u64().unwrap() as usize;
        assert!((100..=200).contains(&pad));
        assert_eq!(pad, line.0);
        assert!(rec.get("aslr").is_none() && rec.get("cwd").is_none());
    }
    let analysis = &doc["benchmarks"][0]["extra"]["setups"];
    assert_eq!(analysis["setups"].as_array().unwrap().len(), 2);
    assert_eq!(analysis["setups"][0]["runs"], 3);
    assert!(analysis["components"]["var_within"].is_number());
}

#[test]
fn bad_setup_options_are_one_line_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("probe.log");
    for args in [
        &["run", "--randomize", "heap", "true"][..],
        &["run", "--setups", "3", "true"],
        &["run", "--randomize", "env", "--setups", "0", "true"],
        &[
            "run",
            "--randomize",
            "env",
            "--env-pad-range",
            "9:1",
            "true",
        ],
        &[
            "run",
            "--randomize",
            "env",
            "--randomize-every",
            "0",
            "true",
        ],
        &["bias", "--factor", "heap", "--", "true"],
        &[
            "bias", "--factor", "env", "--levels", "0:64:0", "--", "true",
        ],
        &["bias", "--factor", "env", "--repeat", "1", "--", "true"],
    ] {
        let out = tare(&log, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("tare: error: "), "{err}");
        assert!(!log.exists(), "{args:?} ran something");
    }
}
