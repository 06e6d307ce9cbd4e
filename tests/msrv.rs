//! `rust-version` in Cargo.toml is true to the lockfile (issue 24): it is at least the
//! `rust-version` every locked dependency declares, so a user on the stated Rust can build.
//! (clippy's `incompatible_msrv` lint, run with `-D warnings` by the test command, checks
//! tare's own use of the standard library against the same number.)

use std::process::Command;

/// `1.88` and `1.88.0` are one version: three parts, missing ones 0.
fn version(s: &str) -> Vec<u64> {
    let mut v: Vec<u64> = s.split('.').map(|p| p.parse().unwrap_or(0)).collect();
    v.resize(3, 0);
    v
}

#[test]
fn rust_version_covers_every_locked_dependency() {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ours = env!("CARGO_PKG_RUST_VERSION");
    assert!(!ours.is_empty(), "Cargo.toml states no rust-version");
    let mut newer = Vec::new();
    for p in meta["packages"].as_array().unwrap() {
        if let Some(rv) = p["rust_version"].as_str() {
            if version(rv) > version(ours) {
                newer.push(format!("{} {} needs Rust {rv}", p["name"], p["version"]));
            }
        }
    }
    assert!(
        newer.is_empty(),
        "Cargo.toml says rust-version = {ours}, but {}: raise it (and the README's line)",
        newer.join(", ")
    );
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(
        readme.contains(&format!("≥ {ours}")),
        "the README does not state Rust ≥ {ours}"
    );
}
