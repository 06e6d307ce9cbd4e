//! Browser test of the HTML report: generates a report with `tare report` from the fixture
//! results and runs `tests/browser/run.sh`, which opens it in Debian's chromium (headless, from
//! file://, offline) and checks that the summary table and every plot render, that there are no
//! console errors, that sorting and filtering work, and that the screenshot is not blank.
//!
//! Needs no network: `.ci/services.d/40-browser.sh` installs chromium, node and the npm packages
//! beforehand. Skips (naming that script) when something is missing and `CI` is unset; with `CI`
//! set it must run.

#[path = "common/skip.rs"]
mod skip;
use std::path::Path;
use std::process::Command;

#[test]
fn report_renders_in_chromium() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixtures = root.join("tests/fixtures/results");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let st = Command::new(env!("CARGO_BIN_EXE_tare"))
        .arg("report")
        .arg(fixtures.join("compare.json"))
        .arg(fixtures.join("plain.json"))
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "tare report failed: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    // The plots the fixture must produce, by id (the page must render each).
    let mut expect: Vec<String> = Vec::new();
    for b in 0..3 {
        for k in ["hist", "box", "seq", "precision"] {
            expect.push(format!("f0-b{b}-{k}"));
        }
    }
    for b in 0..2 {
        for k in ["hist", "box", "seq", "precision"] {
            expect.push(format!("f1-b{b}-{k}"));
        }
    }
    expect.extend(
        [
            "f0-b2-setups",
            "f0-forest",
            "f0-paired-0-1",
            "f0-paired-0-2",
        ]
        .map(String::from),
    );
    let shot = std::env::var_os("TARE_BROWSER_SCREENSHOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("report.png"));
    let out = Command::new("bash")
        .arg(root.join("tests/browser/run.sh"))
        .arg(&html)
        .arg(&shot)
        .arg("--expect")
        .arg(expect.join(","))
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
