//! The server answers as the CLI does (issue 42): `POST /api/v1/check` runs `tare history
//! check`'s code (`store::judge`). The same store judged by `tare history check` and by the
//! server raises the same alert; the server takes a commit judged against a baseline branch
//! (from the parent links the store holds: the branch's own commits never count), the
//! thresholds file's rules in its body and every detection parameter, and refuses what it
//! does not take with one JSON error line. `tare serve --webhook` POSTs the alert an upload
//! raises to a listener on 127.0.0.1. "Newest" is the repository's order, not the upload's:
//! commits uploaded out of order (p10, p8, p9) show p10 newest on the API and the compare form.

mod common;
#[path = "serve_support/mod.rs"]
mod serve_support;
mod store_support;

use serve_support::{get, post, Server};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use store_support::*;
use tare::store::git::CommitInfo;
use tare::store::{ingest, Store};

/// Stores commit `i` (`c`) with wall and CPU times scaled by `level` (and a deterministic
/// noise of about 0.5%) in the SQLite store at `path`.
fn add(path: &Path, i: usize, c: &CommitInfo, level: f64) {
    let mut st = Store::open(&path.to_string_lossy()).unwrap();
    let s = session_scaled(&fixture(), i, level * noise(i), level * noise(i + 100));
    ingest::add_session(&mut st.db, &s, Some(c), None).unwrap();
}

/// (benchmark, metric, commit, kind) of each alert of a JSON list, sorted.
fn keys(list: &serde_json::Value) -> Vec<(String, String, String, String)> {
    let mut out: Vec<_> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let s = |k: &str| a[k].as_str().unwrap_or_default().to_string();
            (s("benchmark"), s("metric"), s("commit"), s("kind"))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_server_and_the_cli_raise_the_same_alert() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Two stores filled alike: one checked by the CLI, one by the server.
    for name in ["cli.sqlite", "srv.sqlite"] {
        for i in 0..4 {
            add(&d.join(name), i, &commit(i), if i < 3 { 1.0 } else { 1.2 });
        }
    }
    let o = common::tare_in(
        d,
        &[
            "history",
            "--store",
            "cli.sqlite",
            "check",
            "--metric",
            "cpu_time",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", common::text(&o));
    let o = common::tare_in(d, &["history", "--store", "cli.sqlite", "alerts", "--all"]);
    let cli = common::text(&o);
    let store = d.join("srv.sqlite").to_string_lossy().into_owned();
    let token = serve_support::new_token(&store, "ci");
    let srv = Server::start(&store, &[]);
    let (code, v) = post(&srv.at("/api/v1/check?metric=cpu_time"), Some(&token), b"");
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["exit"], 1, "{v}");
    let got = keys(&v["new_alerts"]);
    assert_eq!(got.len(), 2, "{v}");
    for (b, m, c, k) in &got {
        assert_eq!(
            (m.as_str(), c.as_str(), k.as_str()),
            ("cpu_time", hash(3).as_str(), "regression")
        );
        // The CLI's store holds the same alert: benchmark, metric, commit.
        let short = &hash(3)[..10];
        assert!(
            cli.lines().any(|l| l.contains(b.as_str())
                && l.contains("cpu_time")
                && l.contains(short)
                && l.contains("regression")),
            "{b}: {cli}"
        );
    }
    // The judgment lines are the CLI's.
    let lines = v["judgments"].as_array().unwrap();
    assert_eq!(lines.len(), 2, "{v}");
    assert!(lines.iter().all(|j| j["regression"] == true), "{v}");
    // The same check again raises nothing new; the gate stays red while the alert is new.
    let (_, v) = post(&srv.at("/api/v1/check?metric=cpu_time"), Some(&token), b"");
    assert_eq!(v["new_alerts"].as_array().unwrap().len(), 0, "{v}");
}

#[test]
fn the_server_judges_a_commit_against_a_baseline_branch_with_thresholds() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = d.join("h.sqlite");
    for i in 0..3 {
        add(&path, i, &commit(i), 1.0);
    }
    // Main goes on 50% faster after the branch point (not the branch's baseline); the
    // branch's first commit is 20% slower than main up to the merge base, its second too.
    for i in 3..6 {
        add(&path, i, &commit(i), 0.5);
    }
    let branch = |i: usize, parent: usize| CommitInfo {
        hash: hash(i),
        parents: vec![hash(parent)],
        branch: Some("feature".into()),
        time: Some(1_790_000_000 + 3600 * i as i64),
        subject: Some(format!("branch commit {i}")),
        dirty: false,
    };
    add(&path, 10, &branch(10, 2), 1.2);
    add(&path, 11, &branch(11, 10), 1.2);
    let store = path.to_string_lossy().into_owned();
    let token = serve_support::new_token(&store, "ci");
    let srv = Server::start(&store, &[]);
    let check = |query: &str, body: &[u8]| {
        post(
            &srv.at(&format!("/api/v1/check?{query}")),
            Some(&token),
            body,
        )
    };
    // A 50% threshold for every series: no regression (the body is the thresholds file).
    let rules = b"[[threshold]]\nbenchmark = \"*\"\nmetric = \"*\"\nmin_effect = \"50%\"\n";
    let (code, v) = check(
        &format!(
            "metric=wall_time&commit={}&baseline_branch=main",
            &hash(11)[..12]
        ),
        rules,
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["exit"], 0, "{v}");
    assert_eq!(v["judged"], 2, "{v}");
    assert_eq!(v["regressions"], 0, "{v}");
    let scope = v["scope"].as_str().unwrap();
    assert!(scope.contains(&hash(2)[..10]), "the merge base: {scope}");
    // Without it: the branch's commit is judged against main up to the merge base (commits
    // 0–2), not main's faster commits after it nor the branch's own commit 10.
    let (code, v) = check(
        &format!("metric=wall_time&commit={}&baseline_branch=main", hash(11)),
        b"",
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(
        (v["exit"].as_i64(), v["regressions"].as_i64()),
        (Some(1), Some(2)),
        "{v}"
    );
    let got = keys(&v["new_alerts"]);
    assert!(
        got.iter().all(|k| k.2 == hash(11) && k.3 == "regression"),
        "{v}"
    );
    // Parameters are honoured: at alpha 1e-9 the same step is not significant.
    let (code, v) = check(
        &format!(
            "metric=wall_time&commit={}&baseline_branch=main&alpha=0.000000001",
            hash(11)
        ),
        b"",
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["regressions"], 0, "{v}");
    // What it does not take is refused, one line each.
    for (q, body, word) in [
        ("alpah=0.1", &b""[..], "'alpah'"),
        ("baseline_branch=main", b"", "commit"),
        ("alpha=0.7", b"", "alpha 0.7"),
        ("commit=ffffffffff", b"", "no such commit"),
        (
            &format!("commit={}&baseline_branch=nope", hash(11)) as &str,
            b"",
            "branch nope",
        ),
        (
            "metric=wall_time",
            b"[[threshold]]\nmin_effect = \"x\"\n",
            "min_effect",
        ),
    ] {
        let (code, v) = check(q, body);
        assert!(code == 400 || code == 422, "{q}: {code} {v}");
        let e = v["error"].as_str().unwrap_or_else(|| panic!("{q}: {v}"));
        assert!(e.contains(word) && !e.contains('\n'), "{q}: {e}");
    }
}

/// A listener on 127.0.0.1 that answers 200 to each request and sends its body.
fn listener() -> (String, std::sync::mpsc::Receiver<String>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", l.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            let mut r = BufReader::new(c.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; len];
            let _ = r.read_exact(&mut body);
            let _ =
                c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = tx.send(String::from_utf8_lossy(&body).into_owned());
        }
    });
    (url, rx)
}

#[test]
fn tare_serve_posts_the_alert_an_upload_raises() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = d.join("h.sqlite");
    for i in 0..3 {
        add(&path, i, &commit(i), 1.0);
    }
    let store = path.to_string_lossy().into_owned();
    let token = serve_support::new_token(&store, "ci");
    let (url, rx) = listener();
    let srv = Server::start(&store, &["--webhook", &url]);
    let s = session_scaled(&fixture(), 3, 1.2 * noise(3), 1.0);
    let (code, v) = post(
        &srv.at(&format!("/api/v1/results?commit={}", hash(3))),
        Some(&token),
        &serde_json::to_vec(&s).unwrap(),
    );
    assert_eq!(code, 201, "{v}");
    // The upload is answered; the check after it posts each new alert (wall time: the
    // default metrics), one JSON object each.
    let mut got = Vec::new();
    while let Ok(body) = rx.recv_timeout(std::time::Duration::from_secs(60)) {
        got.push(serde_json::from_str::<serde_json::Value>(&body).unwrap());
        if got.len() == 2 {
            break;
        }
    }
    assert_eq!(got.len(), 2, "{got:?}");
    for a in &got {
        assert_eq!(a["event"], "tare.alert", "{a}");
        assert_eq!(a["commit"], hash(3).as_str(), "{a}");
        assert_eq!(a["metric"], "wall_time", "{a}");
        assert_eq!(a["verdict"], "regression", "{a}");
    }
    // The same alerts are the store's.
    let (_, v) = get(&srv.at("/api/v1/alerts"));
    assert_eq!(v["alerts"].as_array().map(Vec::len), Some(2), "{v}");
}

#[test]
fn newest_is_the_repository_order_not_the_upload_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = d.join("h.sqlite");
    // Uploaded as a shell glob sorts them: p10 before p8 and p9.
    for i in [10, 8, 9] {
        add(&path, i, &commit(i), 1.0 + i as f64 / 100.0);
    }
    let store = path.to_string_lossy().into_owned();
    let srv = Server::start(&store, &[]);
    let (code, v) = get(&srv.at("/api/v1/series?metric=wall_time"));
    assert_eq!(code, 200, "{v}");
    let list = v["series"].as_array().unwrap();
    assert!(!list.is_empty(), "{v}");
    for s in list {
        assert_eq!(s["latest"]["commit"], hash(10).as_str(), "{s}");
    }
    // The compare form picks p10 as new and p9 as old.
    let page = ureq::get(&srv.at("/compare"))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    let selected: Vec<&str> = page
        .split("<option value=\"")
        .skip(1)
        .filter(|o| o.contains("\" selected>"))
        .map(|o| o.split('"').next().unwrap())
        .collect();
    assert_eq!(selected, [hash(9).as_str(), hash(10).as_str()], "{page}");
}

fn git(dir: &Path, args: &[&str], i: usize) -> String {
    let t = 1_790_000_000 + 3600 * i as i64;
    let o = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_DATE", format!("@{t} +0000"))
        .env("GIT_COMMITTER_DATE", format!("@{t} +0000"))
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", common::text(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn check_commit_on_the_cli_and_the_server_give_one_answer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let repo = d.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"], 0);
    let stores = [d.join("cli.sqlite"), d.join("srv.sqlite")];
    // Commits 0–2 on main; a branch from 2 whose commit is 20% slower; main 50% faster after.
    let add_commit = |i: usize, branch: &str, level: f64| {
        git(
            &repo,
            &["commit", "-q", "--allow-empty", "-m", &format!("c{i}")],
            i,
        );
        let h = git(&repo, &["rev-parse", "HEAD"], i);
        let s = session_scaled(&fixture(), i, level * noise(i), level * noise(i + 100));
        let file = d.join(format!("r{i}.json"));
        std::fs::write(&file, serde_json::to_vec(&s).unwrap()).unwrap();
        for st in &stores {
            let o = common::tare_in(
                &repo,
                &[
                    "history",
                    "--store",
                    &st.to_string_lossy(),
                    "add",
                    &file.to_string_lossy(),
                    "--commit",
                    &h,
                    "--branch",
                    branch,
                ],
            );
            assert!(o.status.success(), "{}", common::text(&o));
        }
        h
    };
    for i in 0..3 {
        add_commit(i, "main", 1.0);
    }
    git(&repo, &["checkout", "-q", "-b", "feature"], 3);
    let judged = add_commit(3, "feature", 1.2);
    git(&repo, &["checkout", "-q", "main"], 4);
    add_commit(4, "main", 0.5);
    add_commit(5, "main", 0.5);
    let cli = stores[0].to_string_lossy().into_owned();
    let o = common::tare_in(
        &repo,
        &[
            "history",
            "--store",
            &cli,
            "check",
            "--metric",
            "wall_time",
            "--commit",
            &judged,
            "--baseline-branch",
            "main",
            "--thresholds",
            "none",
        ],
    );
    let t = common::text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("in 2 series: 2 regression(s)"), "{t}");
    let o = common::tare_in(&repo, &["history", "--store", &cli, "alerts"]);
    let alerts = common::text(&o);
    let store = stores[1].to_string_lossy().into_owned();
    let token = serve_support::new_token(&store, "ci");
    let srv = Server::start(&store, &[]);
    let (code, v) = post(
        &srv.at(&format!(
            "/api/v1/check?metric=wall_time&commit={judged}&baseline_branch=main"
        )),
        Some(&token),
        b"",
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(
        (
            v["exit"].as_i64(),
            v["judged"].as_i64(),
            v["regressions"].as_i64()
        ),
        (Some(1), Some(2), Some(2)),
        "{v}"
    );
    let got = keys(&v["new_alerts"]);
    assert_eq!(got.len(), 2, "{v}");
    for (b, m, c, k) in &got {
        assert_eq!((c.as_str(), k.as_str()), (judged.as_str(), "regression"));
        assert!(
            alerts.lines().any(|l| l.contains(&format!("{b} · {m}"))
                && l.contains(&judged[..10])
                && l.contains("regression")),
            "{b} {m}: {alerts}"
        );
    }
    // Each judgment line is the one the CLI printed.
    for j in v["judgments"].as_array().unwrap() {
        let line = j["line"].as_str().unwrap();
        assert!(t.contains(line), "{line}\n{t}");
    }
}
