//! The example suite (`examples/suite/compressors.toml`) run for real with `--parallel 2`:
//! every run classified as expected (the negative control wrong, the rest correct), result
//! files collected, a table built; `--resume` skips finished runs; too many parallel runs are
//! refused. Needs root (cgroups, namespaces) and the Debian packages gzip, xz-utils and
//! diffutils (installed here when missing); skipped with a message otherwise.

mod common;
use common::tare;
#[path = "common/skip.rs"]
mod skip;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Installs the packages the suite needs when a command is missing; false when impossible.
fn ensure_tools() -> bool {
    if ["gzip", "xz", "cmp"].iter().all(|c| have(c)) {
        return true;
    }
    let ok = Command::new("sh")
        .args([
            "-c",
            "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gzip xz-utils diffutils",
        ])
        .status()
        .is_ok_and(|s| s.success());
    ok && ["gzip", "xz", "cmp"].iter().all(|c| have(c))
}

fn suite_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/suite/compressors.toml")
}

fn out_dir(name: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("suite-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn records(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn example_suite_runs_in_parallel_and_classifies_correctly() {
    if !root() {
        skip::skip(
            "root (cgroups, namespaces)",
            "run the tests as root (sudo -E cargo test)",
        );
        return;
    }
    if !ensure_tools() {
        skip::skip(
            "gzip, xz-utils and diffutils",
            "apt-get install gzip xz-utils diffutils",
        );
        return;
    }
    let out = out_dir("example");
    let st = tare()
        .args(["suite", "run"])
        .arg(suite_file())
        .args(["--parallel", "2", "-q", "--output-dir"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success(), "{st:?}");
    let recs = records(&out);
    assert_eq!(
        recs.len(),
        40,
        "5 tool configurations × 4 inputs × 2 repetitions"
    );
    let mut by_cat: BTreeMap<(String, String, String), String> = BTreeMap::new();
    let mut slots = std::collections::BTreeSet::new();
    for r in &recs {
        let key = (
            r["tool"].as_str().unwrap().to_string(),
            r["input"].as_str().unwrap().to_string(),
            r["category"].as_str().unwrap().to_string(),
        );
        by_cat.insert(key, r["status"].as_str().unwrap().to_string());
        slots.insert(r["cores"].to_string());
        assert!(r["isolated"].as_bool().unwrap());
        assert!(r["cpu_time"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["peak_memory"].as_u64().unwrap() > 0, "{r}");
        assert!(out.join(r["log"].as_str().unwrap()).is_file());
    }
    for r in &recs {
        let tool = r["tool"].as_str().unwrap();
        let input = r["input"].as_str().unwrap();
        let (status, cat) = (
            r["status"].as_str().unwrap(),
            r["category"].as_str().unwrap(),
        );
        if tool == "gzip-truncated" && input != "inputs/tiny.txt" {
            assert_eq!((status, cat), ("corrupt", "wrong"), "{r}");
            assert_eq!(r["score"].as_f64(), Some(-16.0));
        } else {
            assert_eq!((status, cat), ("ok", "correct"), "{r}");
            assert_eq!(r["score"].as_f64(), Some(2.0));
        }
        let files: Vec<&str> = r["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert_eq!(files.len(), 1, "one result file (out.*) per run: {r}");
    }
    assert_eq!(slots.len(), 2, "runs were spread over two slots: {slots:?}");
    assert!(
        !out.join("work").exists(),
        "scratch directories are removed"
    );

    // --resume with everything done runs nothing and keeps the records.
    let st = tare()
        .args(["suite", "run"])
        .arg(suite_file())
        .args(["-q", "--resume", "--output-dir"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(records(&out).len(), 40);
    // Without --resume an existing output directory is refused.
    let o = tare()
        .args(["suite", "run"])
        .arg(suite_file())
        .args(["-q", "--output-dir"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--resume"));

    // The table: HTML and CSV written, dump counts match.
    let html = out.join("table.html");
    let o = tare()
        .arg("table")
        .arg(&out)
        .arg("--html")
        .arg(&html)
        .args(["--csv", "-", "--dump"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("STATS gzip-truncated/default: correct 1, wrong 3; score -46"),
        "{stdout}"
    );
    assert!(
        stdout.contains("STATS xz/l6: correct 4; score 8"),
        "{stdout}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("class=\"wrong\">corrupt"));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn too_many_parallel_runs_are_refused() {
    let topo_cores = std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.matches("processor").count())
        .unwrap_or(1);
    let o = tare()
        .args(["suite", "check"])
        .arg(suite_file())
        .args(["--parallel", &(topo_cores + 1).to_string()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("runs never share one") && err.lines().count() == 1,
        "{err}"
    );
}
