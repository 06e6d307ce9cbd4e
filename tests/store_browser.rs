//! Browser test of the history dashboard: a store with two series and a 15% step at one
//! commit, `tare history report --html`, then `tests/browser/run.sh` with
//! `check_history.js` in Debian's chromium (headless, file://, offline): alerts table, both
//! trend plots, both change points marked, a point's link leads to its row of runs, no console
//! errors, no external request, a screenshot that is not blank.
//!
//! Needs no network: `.ci/services.d/40-browser.sh` installs chromium, node and the npm packages
//! beforehand. Skips (naming that script) when something is missing and `CI` is unset; with `CI`
//! set it must run.

mod store_support;
use store_support::skip;

use std::path::Path;
use std::process::Command;
use store_support::*;

#[test]
fn dashboard_renders_in_chromium() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let store = d.join("h.sqlite");
    let base = fixture();
    for i in 0..24 {
        let s = session_at(&base, i, if i >= 16 { 1.15 } else { 1.0 } * noise(i));
        let f = d.join(format!("r{i:02}.json"));
        std::fs::write(&f, serde_json::to_vec(&s).unwrap()).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_tare"))
            .args(["history", "--store"])
            .arg(&store)
            .arg("add")
            .arg(&f)
            .args(["--commit", &commit(i).hash])
            .current_dir(d)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // `check` raises the alerts (exit 1: new regressions); the dashboard shows them.
    let o = Command::new(env!("CARGO_BIN_EXE_tare"))
        .args(["history", "--store"])
        .arg(&store)
        .arg("check")
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let html = d.join("history.html");
    let o = Command::new(env!("CARGO_BIN_EXE_tare"))
        .args(["history", "--store"])
        .arg(&store)
        .args(["report", "--html"])
        .arg(&html)
        .current_dir(d)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let shot = std::env::var_os("TARE_BROWSER_SCREENSHOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| d.join("history.png"));
    let out = Command::new("bash")
        .arg(root.join("tests/browser/run.sh"))
        .arg(&html)
        .arg(&shot)
        .args(["--plots", "2", "--changes", "2"])
        .env("TARE_BROWSER_CHECK", "check_history.js")
        .output()
        .expect("bash runs tests/browser/run.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let in_ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
    if out.status.code() == Some(77) {
        assert!(
            !in_ci,
            "browser test skipped in CI, where it must run:\n{stdout}{stderr}"
        );
        let line = stdout.trim();
        skip::skip(
            "chromium, node and tests/browser/node_modules",
            line.strip_prefix("SKIP: ").unwrap_or(line),
        );
        return;
    }
    assert!(
        out.status.success(),
        "browser test failed:\n{stdout}\n{stderr}"
    );
    println!("{stdout}");
}
