//! Browser test of `tare serve`'s dashboard: a real server on an ephemeral port with 24
//! commits uploaded through the API (a 15% step at commit 16) and alerts raised by `check`,
//! then `tests/browser/run.sh` with `check_serve.js` in Debian's chromium: the series listed,
//! search, a series page with its plot and change point, an alert acknowledged by clicking
//! (and the store says so afterwards), a comparison opened from the form; no console errors,
//! no request leaving the server. Skips like `tests/store_browser.rs` (never in CI).
//!
//! `dashboard_reads_at_a_glance` (issue 42): a 25% step in CPU time only (wall time flat, where
//! it is invisible), a branch beside main, a commit subject made of markup, a series of one
//! commit and one of 200; `check_glance.js` checks that the first page shows each benchmark's
//! alerting metric with its state, that the branch filter narrows the list, and that the
//! series chart reads in fitted units with commits (short hashes, thinned) on its x axis,
//! subjects on hover (escaped), the change point and the alert marked. With
//! `TARE_BROWSER_SCREENSHOT=DIR/serve.png` its four screenshots are kept beside the other
//! test's, as `DIR/serve-glance-{front,series,long,one}.png`.

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

/// The browser run of a test: Ok(stdout), or None when skipped (outside CI).
fn browser(root: &Path, target: &str, shot: &Path, check: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("bash")
        .arg(root.join("tests/browser/run.sh"))
        .arg(target)
        .arg(shot)
        .args(args)
        .env("TARE_BROWSER_CHECK", check)
        .output()
        .expect("bash runs tests/browser/run.sh");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
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
    println!("{stdout}");
    Some(stdout)
}

/// The subject of commit 18: markup that must reach the page as text.
const HOSTILE: &str = "<script>window.__pwned=1</script> & \"quoted\" <b>bold</b> 'x'";

#[test]
fn dashboard_reads_at_a_glance() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let store = store.to_str().unwrap();
    let token = new_token(store, "ci");
    let srv = Server::start(store, &[]);
    let base = fixture();
    let with_git = |mut s: tare::results::model::Session, c: tare::store::git::CommitInfo| {
        s.extra
            .insert("git".into(), serde_json::to_value(c).unwrap());
        serde_json::to_value(s).unwrap()
    };
    let mut sessions = Vec::new();
    // 24 commits of both benchmarks: CPU time 25% higher from commit 16 on, wall time flat;
    // commits 20–23 on the branch feature/fast.
    for i in 0..24 {
        let mut s = session_at(&base, i, noise(i));
        for b in &mut s.benchmarks {
            for r in &mut b.runs {
                r.cpu_time *= if i >= 16 { 1.25 } else { 1.0 } * noise(i + 7);
            }
        }
        let mut c = commit(i);
        if i >= 20 {
            c.branch = Some("feature/fast".into());
        }
        if i == 18 {
            c.subject = Some(HOSTILE.into());
        }
        sessions.push(with_git(s, c));
    }
    // A benchmark measured at one commit, and one at 200.
    let single = |i: usize, name: &str| {
        let mut s = session_at(&base, i, noise(i));
        s.benchmarks.truncate(1);
        s.benchmarks[0].name = name.into();
        s
    };
    sessions.push(with_git(single(500, "one commit"), commit(500)));
    for i in 1000..1200 {
        sessions.push(with_git(single(i, "long history"), commit(i)));
    }
    let (code, v) = post(
        &srv.at("/api/v1/results"),
        Some(&token),
        serde_json::json!({ "sessions": sessions })
            .to_string()
            .as_bytes(),
    );
    assert_eq!(code, 201, "{v}");
    let (code, v) = post(&srv.at("/api/v1/check?metric=all"), Some(&token), b"");
    assert_eq!(code, 200, "{v}");
    // The step is in CPU time only: an alert on cpu_time for each benchmark, none on wall time.
    let (_, alerts) = get(&srv.at("/api/v1/alerts"));
    let metrics: Vec<&str> = alerts["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["metric"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        metrics.iter().filter(|m| **m == "cpu_time").count(),
        base.benchmarks.len(),
        "{alerts}"
    );
    assert!(!metrics.contains(&"wall_time"), "{alerts}");
    // The first page's list, as the API gives it with ?metric=auto.
    let (code, v) = get(&srv.at("/api/v1/series?metric=auto"));
    assert_eq!(code, 200, "{v}");
    let listed: Vec<(String, String)> = v["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["label"].as_str().unwrap().to_string(),
                s["metric"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        listed.contains(&("sleep 0.01".into(), "cpu_time".into()))
            && listed.contains(&("long history".into(), "wall_time".into()))
            && !listed.contains(&("sleep 0.01".into(), "wall_time".into())),
        "{listed:?}"
    );
    let (_, v) = get(&srv.at("/api/v1/series?metric=auto&branch=feature%2Ffast"));
    assert_eq!(v["total"], base.benchmarks.len(), "{v}");
    // Beside the other test's screenshot: `serve.png` → `serve-glance-front.png`, ….
    let shot = std::env::var_os("TARE_BROWSER_SCREENSHOT")
        .map(|p| {
            let p = std::path::PathBuf::from(p).with_extension("");
            let mut s = p.into_os_string();
            s.push("-glance");
            std::path::PathBuf::from(s)
        })
        .unwrap_or_else(|| dir.path().join("glance"));
    let newest = hash(23);
    let long_newest = hash(1199);
    let Some(stdout) = browser(
        root,
        &srv.url,
        &shot,
        "check_glance.js",
        &[
            "--alerting",
            &base.benchmarks.len().to_string(),
            "--listed",
            &listed.len().to_string(),
            "--newest",
            &newest[..7],
            "--long-newest",
            &long_newest[..7],
            "--hostile",
            HOSTILE,
        ],
    ) else {
        return;
    };
    assert!(stdout.contains("screenshot: "), "{stdout}");
}
