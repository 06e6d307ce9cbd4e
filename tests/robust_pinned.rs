//! Concurrent tare sessions see each other's pinned cores (issue 12): a second `suite run`
//! avoids the cores a live one holds, or warns that it shares them; never both on one core
//! without a word. The registry is a test-made directory (`TARE_PINNED_DIR`), so sessions of
//! other tests or people on this machine do not change the outcome.

mod common;
#[path = "common/skip.rs"]
mod skip;

use common::{is_root, tare};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;

fn suite(dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("in")).unwrap();
    for i in 0..3 {
        std::fs::write(dir.join(format!("in/{i}.txt")), "x").unwrap();
    }
    let f = dir.join("s.toml");
    std::fs::write(
        &f,
        "name = \"pin\"\n[isolation]\nenabled = false\n[[tool]]\nname = \"t\"\ncommand = \"sh -c 'sleep 0.6' {input}\"\n[[inputs]]\nname = \"i\"\nfiles = [\"in/*.txt\"]\n",
    )
    .unwrap();
    f
}

fn cores_used(out: &Path) -> BTreeSet<u64> {
    std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .flat_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["cores"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_u64().unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_second_suite_avoids_the_cores_of_a_live_one_or_says_it_shares_them() {
    if !is_root() {
        skip::skip(
            "root (cgroups)",
            "run the tests as root (sudo -E cargo test)",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry");
    let f = suite(dir.path());
    let first = tare()
        .env("TARE_PINNED_DIR", &registry)
        .args(["suite", "run", "-q", "--output-dir"])
        .arg(dir.path().join("a"))
        .arg(&f)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first has registered its cores.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_dir(&registry)
        .map(|rd| {
            rd.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".cores"))
        })
        .unwrap_or(false)
    {
        assert!(std::time::Instant::now() < deadline, "never registered");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let second = tare()
        .env("TARE_PINNED_DIR", &registry)
        .args(["suite", "run", "--output-dir"])
        .arg(dir.path().join("b"))
        .arg(&f)
        .output()
        .unwrap();
    let first = first.wait_with_output().unwrap();
    assert!(first.status.success());
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{err}");
    let (a, b) = (
        cores_used(&dir.path().join("a")),
        cores_used(&dir.path().join("b")),
    );
    if a.is_disjoint(&b) {
        assert!(
            err.contains("avoiding cores pinned by other tare sessions"),
            "{err}"
        );
    } else {
        assert!(
            err.contains("runs share cores with other tare sessions"),
            "{err}"
        );
    }
    // Both gone: the registry is empty again.
    let left: Vec<_> = std::fs::read_dir(&registry)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cores"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
