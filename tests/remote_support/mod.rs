//! Helpers shared by the shard, Slurm and remote-host tests: the binary, the example suite,
//! scratch directories, reading result records.
#![allow(dead_code)]

#[path = "../common/skip.rs"]
pub mod skip;
pub mod sshd;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn tare() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tare"));
    c.env("NO_COLOR", "1");
    c
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

pub fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// True when CI runs (a missing service is then a failure, not a skip).
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Whether the example suite can run here: root and its tools (installed when missing).
pub fn suite_possible() -> bool {
    if !is_root() {
        skip::skip(
            "root (cgroups, namespaces)",
            "run the tests as root (sudo -E cargo test)",
        );
        return false;
    }
    if !["gzip", "xz", "cmp"].iter().all(|c| have(c)) {
        let _ = Command::new("sh")
            .args(["-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gzip xz-utils diffutils"])
            .status();
    }
    let ok = ["gzip", "xz", "cmp"].iter().all(|c| have(c));
    if !ok {
        skip::skip(
            "gzip, xz-utils and diffutils",
            "apt-get install gzip xz-utils diffutils",
        );
    }
    ok
}

pub fn suite_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/suite/compressors.toml")
}

/// A fresh scratch directory below the target directory (not /tmp: the isolated runs have a
/// private /tmp, and Slurm tasks must see it).
pub fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("remote-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run key → category of every record in a suite output directory's results.jsonl.
pub fn categories(dir: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(dir.join("results.jsonl")).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["key"].as_str().unwrap().to_string(),
                v["category"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The table's classifications as CSV cells: (set, input, column) → (status, category),
/// from `tare table PATHS --csv -`.
pub fn table_classes(paths: &[&Path]) -> BTreeMap<(String, String, String), (String, String)> {
    let out = tare()
        .arg("table")
        .args(paths)
        .args(["--csv", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tare table: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let headers = rdr.headers().unwrap().clone();
    let mut map = BTreeMap::new();
    for rec in rdr.records() {
        let rec = rec.unwrap();
        for (i, h) in headers.iter().enumerate() {
            if let Some(col) = h.strip_suffix(" status") {
                let cat = headers
                    .iter()
                    .position(|x| x == format!("{col} category"))
                    .map(|j| rec[j].to_string())
                    .unwrap_or_default();
                map.insert(
                    (rec[0].to_string(), rec[1].to_string(), col.to_string()),
                    (rec[i].to_string(), cat),
                );
            }
        }
    }
    map
}

pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
