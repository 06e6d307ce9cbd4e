//! The server's JSON API, against a real `tare serve` process on an ephemeral port, on SQLite
//! and on PostgreSQL (the server of `.ci/services.d/20-postgresql.sh`; skipped, saying so,
//! without it): uploads with and without valid tokens, a revoked token, garbage and oversize
//! bodies (nothing stored), concurrent uploads (each session stored once), alerts raised by
//! `check` and acknowledged through the API, and a comparison of two commits that gives the
//! verdicts `tare compare` gives for the same files.

mod serve_support;
mod store_support;

use serve_support::*;
use store_support::*;

fn body(s: &tare::results::model::Session) -> Vec<u8> {
    serde_json::to_vec(s).unwrap()
}

fn api(store: &str) {
    let token = new_token(store, "ci");
    let other = new_token(store, "laptop");
    let srv = Server::start(store, &["--max-upload", "4MB"]);
    let results = srv.at("/api/v1/results");
    let base = fixture();
    let s0 = session_at(&base, 0, 1.0);
    // No token, a wrong one: 401 with a one-line JSON error, nothing stored.
    let (code, v) = post(&results, None, &body(&s0));
    assert_eq!(code, 401, "{v}");
    assert!(v["error"].as_str().unwrap().contains("Bearer"), "{v}");
    let (code, v) = post(&results, Some("tare_0123"), &body(&s0));
    assert_eq!(code, 401, "{v}");
    assert_eq!(counts(store)[2], 0, "nothing stored without a valid token");
    // A valid token: stored with the commit given; the same session again is not stored twice.
    let c0 = commit(0).hash;
    let (code, v) = post(
        &format!("{results}?commit={c0}&branch=main"),
        Some(&token),
        &body(&s0),
    );
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["added"], 1, "{v}");
    assert!(v["runs"].as_u64().unwrap() > 10, "{v}");
    let (code, v) = post(&format!("{results}?commit={c0}"), Some(&token), &body(&s0));
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["already_stored"], 1, "{v}");
    let before = counts(store);
    assert_eq!(before[2], 1);
    // Garbage, JSON that is not results, and an upload of two where the second is bad: 400 /
    // 422 with a clear message, and nothing stored (one transaction).
    let (code, v) = post(&results, Some(&token), b"not json at all");
    assert_eq!(code, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("not JSON"), "{v}");
    let (code, v) = post(
        &results,
        Some(&token),
        br#"{"results":[{"command":"x","mean":1.0,"times":[1.0]}]}"#,
    );
    assert_eq!(code, 422, "{v}");
    assert!(v["error"].as_str().unwrap().contains("hyperfine"), "{v}");
    let s1 = session_at(&base, 1, 1.0);
    let mixed = serde_json::json!({"sessions": [s1, {"schema_version": 1}]});
    let (code, v) = post(&results, Some(&token), mixed.to_string().as_bytes());
    assert_eq!(code, 422, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("session 2 of the upload"),
        "{v}"
    );
    // Too large for --max-upload 4MB: 413.
    assert_eq!(post_declared(&results, &token, 5_000_000), 413);
    assert_eq!(counts(store), before, "refused uploads stored nothing");
    // A revoked token is refused at once (the server reads tokens from the store); another
    // token still works.
    revoke(store, "ci");
    let (code, v) = post(
        &format!("{results}?commit={}", commit(1).hash),
        Some(&token),
        &body(&s1),
    );
    assert_eq!(code, 401, "{v}");
    assert!(v["error"].as_str().unwrap().contains("revoked"), "{v}");
    // 23 more commits with a 15% step at commit 16, in one upload of many sessions.
    let many: Vec<serde_json::Value> = (1..24)
        .map(|i| {
            let mut s = session_at(&base, i, if i >= 16 { 1.15 } else { 1.0 } * noise(i));
            s.extra
                .insert("git".into(), serde_json::to_value(commit(i)).unwrap());
            serde_json::to_value(s).unwrap()
        })
        .collect();
    let (code, v) = post(
        &results,
        Some(&other),
        serde_json::json!({"sessions": many}).to_string().as_bytes(),
    );
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["added"], 23, "{v}");
    assert_eq!(counts(store)[0], 24, "24 commits");
    // Series: every benchmark of the fixture, with its newest value at the newest commit.
    let (code, v) = get(&srv.at("/api/v1/series?metric=wall_time"));
    assert_eq!(code, 200, "{v}");
    let nb = base.benchmarks.len() as u64;
    assert_eq!(v["total"], nb, "{v}");
    assert_eq!(v["series"][0]["latest"]["commit"], commit(23).hash, "{v}");
    let (code, v) = get(&srv.at("/api/v1/series?q=no-such-benchmark"));
    assert_eq!((code, v["total"].as_u64()), (200, Some(0)));
    let (code, v) = get(&srv.at("/api/v1/series?metric=bogus"));
    assert_eq!(code, 400, "{v}");
    // Check: the step raises one regression alert per series; reads are open.
    let (code, v) = post(&srv.at("/api/v1/check"), None, b"");
    assert_eq!(code, 401, "{v}");
    let (code, v) = post(&srv.at("/api/v1/check"), Some(&other), b"");
    assert_eq!(code, 200, "{v}");
    let new = v["new_alerts"].as_array().unwrap().clone();
    assert_eq!(new.len() as u64, nb, "{v}");
    assert!(new.iter().all(|a| a["kind"] == "regression"), "{v}");
    let id = new[0]["id"].as_i64().unwrap();
    let series = new[0]["series"].as_str().unwrap().to_string();
    let (code, v) = get(&srv.at(&format!("/api/v1/series/{series}")));
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["points"].as_array().unwrap().len(), 24);
    let ch = v["changes"].as_array().unwrap();
    assert!(
        ch.iter()
            .any(|c| c["commit"] == commit(16).hash && c["alerted"] == true),
        "{v}"
    );
    // An alert action needs a token or the page's secret; with a token it is stored.
    let action = srv.at(&format!("/api/v1/alerts/{id}"));
    let (code, v) = post(&action, None, br#"{"status":"acknowledged"}"#);
    assert_eq!(code, 403, "{v}");
    let (code, v) = post(&action, Some(&other), br#"{"status":"bogus"}"#);
    assert_eq!(code, 422, "{v}");
    let (code, v) = post(
        &action,
        Some(&other),
        br#"{"status":"acknowledged","note":"seen"}"#,
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["alert"]["status"], "acknowledged", "{v}");
    let o = tare()
        .args(["history", "--store", store, "alerts"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(&format!("#{id} acknowledged")), "{text}");
    let (code, v) = get(&srv.at("/api/v1/alerts?status=acknowledged"));
    assert_eq!(code, 200);
    assert_eq!(v["alerts"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(get(&srv.at("/api/v1/alerts/99999")).0, 405);
    // Two commits compared: the verdicts `tare compare` gives for the same two files.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&a, body(&session_at(&base, 2, noise(2)))).unwrap();
    std::fs::write(&b, body(&session_at(&base, 20, 1.15 * noise(20)))).unwrap();
    let cj = dir.path().join("c.json");
    let o = tare()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .arg("--export-json")
        .arg(&cj)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want: serde_json::Value = serde_json::from_slice(&std::fs::read(&cj).unwrap()).unwrap();
    let (code, v) = get(&srv.at(&format!(
        "/api/v1/compare?old={}&new={}",
        &commit(2).hash[..12],
        commit(20).hash
    )));
    assert_eq!(code, 200, "{v}");
    let rows = |v: &serde_json::Value| -> Vec<(String, String, String)> {
        v["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["benchmark"].as_str().unwrap().to_string(),
                    c["words"].to_string(),
                    format!("{:.6}", c["ratio"].as_f64().unwrap()),
                )
            })
            .collect()
    };
    assert_eq!(rows(&v), rows(&want), "server {v}\ncompare {want}");
    // One session a side: the step of 15% is seen, but the model does not call it (as the
    // command line does not).
    assert!(rows(&v).iter().all(|r| r.2.starts_with("1.1499")), "{v}");
    let (code, v) = get(&srv.at("/api/v1/compare?old=ffffffffff&new=abc"));
    assert_eq!(code, 422, "{v}");
}

#[test]
fn api_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    api(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn api_on_postgres() {
    let Some(url) = pg_url() else { return };
    api(&pg_schema(&url, "serve_api"));
}

fn concurrent(store: &str) {
    let token = new_token(store, "ci");
    let srv = Server::start(store, &[]);
    let base = fixture();
    // 8 clients at once, each uploading 4 sessions, two of which every client uploads: 4 × 2
    // own + 2 shared distinct sessions, each stored once.
    let url = srv.at("/api/v1/results");
    let handles: Vec<_> = (0..8)
        .map(|c| {
            let (url, token, base) = (url.clone(), token.clone(), base.clone());
            std::thread::spawn(move || {
                let mut codes = Vec::new();
                for k in [100 + 2 * c, 101 + 2 * c, 0, 1] {
                    let mut s = session_at(&base, k, 1.0);
                    s.extra
                        .insert("git".into(), serde_json::to_value(commit(k)).unwrap());
                    codes.push(post(&url, Some(&token), &body(&s)).0);
                }
                codes
            })
        })
        .collect();
    let codes: Vec<u16> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert!(codes.iter().all(|c| *c == 201 || *c == 200), "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == 201).count(), 18, "{codes:?}");
    let c = counts(store);
    assert_eq!(c[2], 18, "18 distinct sessions stored once each: {c:?}");
    assert_eq!(c[0], 18, "{c:?}");
    let runs_per = base
        .benchmarks
        .iter()
        .map(|b| b.runs.len() as i64)
        .sum::<i64>();
    assert_eq!(c[4], 18 * runs_per, "{c:?}");
}

#[test]
fn concurrent_uploads_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    concurrent(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn concurrent_uploads_on_postgres() {
    let Some(url) = pg_url() else { return };
    concurrent(&pg_schema(&url, "serve_conc"));
}

#[test]
fn reads_can_require_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let store = store.to_str().unwrap();
    let token = new_token(store, "reader");
    let srv = Server::start(store, &["--read-token-required"]);
    let (code, v) = get(&srv.at("/api/v1/series"));
    assert_eq!(code, 401, "{v}");
    let r = ureq::get(&srv.at("/api/v1/series")).set("Authorization", &format!("Bearer {token}"));
    let (code, v) = call(r, None);
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["total"], 0);
    let (code, _) = get(&srv.at("/api/v1/nothing-here"));
    assert_eq!(code, 404);
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let st = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(st.status.success(), "git {args:?}");
}

fn out(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `tare history add --server` and `tare run --store URL` store on the server what `history
/// add --store` and `run --store` would store locally.
#[test]
fn history_add_and_run_upload_to_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let store = d.join("h.sqlite");
    let store = store.to_str().unwrap();
    let token = new_token(store, "ci");
    let srv = Server::start(store, &[]);
    let base = fixture();
    let files: Vec<std::path::PathBuf> = (0..3)
        .map(|i| {
            let f = d.join(format!("r{i}.json"));
            std::fs::write(&f, body(&session_at(&base, i, 1.0))).unwrap();
            f
        })
        .collect();
    // --server and --token, the commit given.
    let o = tare()
        .args(["history", "add", "--server", &srv.url, "--token", &token])
        .args(&files[..2])
        .args(["--commit", &commit(0).hash, "--branch", "main"])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out(&o));
    assert!(out(&o).contains("added 2 sessions"), "{}", out(&o));
    // Again: nothing new.
    let o = tare()
        .args(["history", "add", "--server", &srv.url, "--token", &token])
        .args(&files[..2])
        .args(["--commit", &commit(0).hash])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(out(&o).contains("2 already stored"), "{}", out(&o));
    // TARE_SERVER and TARE_TOKEN, no --store.
    let o = tare()
        .args(["history", "add"])
        .arg(&files[2])
        .args(["--commit", &commit(1).hash])
        .env("TARE_SERVER", &srv.url)
        .env("TARE_TOKEN", &token)
        .current_dir(d)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out(&o));
    assert_eq!(&counts(store)[..3], &[2, 1, 3]);
    // A wrong token: one line, exit non-zero, nothing stored.
    let o = tare()
        .args([
            "history",
            "add",
            "--server",
            &srv.url,
            "--token",
            "tare_wrong",
        ])
        .arg(&files[2])
        .args(["--commit", &commit(2).hash])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(out(&o).contains("refused (401)"), "{}", out(&o));
    // --store and --server together are refused.
    let o = tare()
        .args(["history", "--store", store, "add", "--server", &srv.url])
        .arg(&files[2])
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    // The commands that read a store itself say that a URL is a server.
    let o = tare()
        .args(["history", "--store", &srv.url, "show"])
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(out(&o).contains("is a server"), "{}", out(&o));
    // `tare run --store URL` in a git repository: the session with its commit.
    let repo = d.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("f"), "1").unwrap();
    git(&repo, &["add", "f"]);
    git(&repo, &["commit", "-qm", "first"]);
    let run = |token: &str| {
        tare()
            .args([
                "run", "--store", &srv.url, "--style", "none", "--runs", "4", "-n", "true", "true",
            ])
            .env("TARE_TOKEN", token)
            .current_dir(&repo)
            .output()
            .unwrap()
    };
    let o = run(&token);
    assert!(o.status.success(), "{}", out(&o));
    assert!(out(&o).contains("stored 4 runs on http://"), "{}", out(&o));
    let c = counts(store);
    assert_eq!((c[0], c[2]), (3, 4), "{c:?}");
    // A second session at the next commit: the two compared on the server.
    let first = String::from_utf8(
        std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&repo)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    std::fs::write(repo.join("f"), "2").unwrap();
    git(&repo, &["commit", "-qam", "second"]);
    let o = run(&token);
    assert!(o.status.success(), "{}", out(&o));
    let (code, v) = get(&srv.at(&format!("/api/v1/compare?old={}&new=HEAD", first.trim())));
    assert_eq!(code, 422, "HEAD is not a stored commit: {v}");
    let second = String::from_utf8(
        std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&repo)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let (code, v) = get(&srv.at(&format!(
        "/api/v1/compare?old={}&new={}",
        first.trim(),
        second.trim()
    )));
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["comparisons"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["comparisons"][0]["benchmark"], "true", "{v}");
    // A wrong token stops `tare run` before its first run.
    let o = run("tare_wrong");
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(out(&o).contains("refused (401)"), "{}", out(&o));
    assert_eq!(counts(store)[2], 5);
}
