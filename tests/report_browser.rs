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
    if let Some(stdout) = check(&html, &shot, &["--expect".into(), expect.join(",")]) {
        println!("{stdout}");
    }
}

/// A parameter scan (`tare run -L n ...` of an awk loop) gets a scaling plot that renders:
/// medians left to right, growing, the fitted line across the plot (issue 30).
#[test]
fn scaling_plot_renders_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("scan.json");
    let html = dir.path().join("scan.html");
    let st = Command::new(env!("CARGO_BIN_EXE_tare"))
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "5",
            "-L",
            "n",
            "20000,80000,320000",
        ])
        .arg("awk 'BEGIN{for(i=0;i<{n};i++)s+=i}'")
        .arg("--export-json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "tare run failed: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    let st = Command::new(env!("CARGO_BIN_EXE_tare"))
        .arg("report")
        .arg(&json)
        .arg("--export-html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(r#"class="scaling-line">scaling in n: "#),
        "no scaling line"
    );
    let shot = dir.path().join("scan.png");
    let args = [
        "--expect".into(),
        "f0-scaling-0".into(),
        "--scaling".into(),
        "1".into(),
    ];
    if let Some(stdout) = check(&html, &shot, &args) {
        assert!(
            stdout.contains("scaling plot f0-scaling-0: fitted line spans"),
            "{stdout}"
        );
        println!("{stdout}");
    }
}

/// Runs tests/browser/run.sh on a report; its output, or None when it skipped (not in CI).
fn check(html: &Path, shot: &Path, args: &[String]) -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join("tests/browser/run.sh"))
        .arg(html)
        .arg(shot)
        .args(args)
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
        return None;
    }
    assert!(
        out.status.success(),
        "browser test failed:\n{stdout}\n{stderr}"
    );
    Some(stdout.into_owned())
}
