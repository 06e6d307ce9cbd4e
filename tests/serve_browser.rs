//! Browser test of `tare serve`'s dashboard: a real server on an ephemeral port with 24
//! commits uploaded through the API (a 15% step at commit 16) and alerts raised by `check`,
//! then `tests/browser/run.sh` with `check_serve.js` in Debian's chromium: the series listed,
//! search, a series page with its plot and change point, an alert acknowledged by clicking
//! (and the store says so afterwards), a comparison opened from the form; no console errors,
//! no request leaving the server. Skips like `tests/store_browser.rs` (never in CI).

mod serve_support;
mod store_support;

use serve_support::*;
use std::path::Path;
use std::process::Command;
use store_support::*;

#[test]
fn dashboard_in_chromium() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let store = store.to_str().unwrap();
    let token = new_token(store, "ci");
    let srv = Server::start(store, &[]);
    let base = fixture();
    let sessions: Vec<serde_json::Value> = (0..24)
        .map(|i| {
            let mut s = session_at(&base, i, if i >= 16 { 1.15 } else { 1.0 } * noise(i));
            s.extra
                .insert("git".into(), serde_json::to_value(commit(i)).unwrap());
            serde_json::to_value(s).unwrap()
        })
        .collect();
    let (code, v) = post(
        &srv.at("/api/v1/results"),
        Some(&token),
        serde_json::json!({ "sessions": sessions })
            .to_string()
            .as_bytes(),
    );
    assert_eq!(code, 201, "{v}");
    let (code, v) = post(&srv.at("/api/v1/check"), Some(&token), b"");
    assert_eq!(code, 200, "{v}");
    let nb = base.benchmarks.len();
    assert_eq!(v["new_alerts"].as_array().unwrap().len(), nb, "{v}");
    let shot = std::env::var_os("TARE_BROWSER_SCREENSHOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("serve.png"));
    let out = Command::new("bash")
        .arg(root.join("tests/browser/run.sh"))
        .arg(&srv.url)
        .arg(&shot)
        .args(["--series", &nb.to_string(), "--benchmarks", &nb.to_string()])
        .env("TARE_BROWSER_CHECK", "check_serve.js")
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
    // The click went to the store.
    let id = stdout
        .lines()
        .find_map(|l| l.strip_prefix("acknowledged alert "))
        .expect("the page acknowledged an alert");
    let o = tare()
        .args(["history", "--store", store, "alerts"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!("#{id} acknowledged")),
        "the store does not say alert {id} is acknowledged:\n{text}"
    );
}
