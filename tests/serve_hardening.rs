//! `tare serve` against anyone who can reach it (issue 44), on a real server on an ephemeral
//! port, on SQLite and on PostgreSQL (skipped, saying so, without it): a token-less upload is
//! refused from its headers, before its body is read (the server's peak memory does not grow by
//! the body); a Host not allowed is refused (421), a state-changing request from another Origin
//! too (403); pages carry X-Frame-Options and a content policy, load their script and styles
//! from the server, and the alert buttons' secret only when the reader may read. Benchmarks of
//! one name in one session are stored apart; slow clients are dropped after
//! `--request-timeout` and one address holds at most `--max-connections-per-client`
//! connections; reads never wait behind a write; summaries are recomputed from the runs.

mod serve_support;
mod store_support;

use serve_support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use store_support::*;

fn body(s: &tare::results::model::Session) -> Vec<u8> {
    serde_json::to_vec(s).unwrap()
}

/// A kB value of /proc/PID/status (VmHWM: the peak resident memory).
fn status_kb(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim_start_matches(':').split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{key} in /proc/{pid}/status"))
}

fn host_port(url: &str) -> String {
    url.strip_prefix("http://").unwrap().to_string()
}

/// Sends `POST path` declaring `len` bytes of body, `head` extra header lines; a writer thread
/// sends the body, pausing after `pause_after` bytes until the answer came (or 30 s passed).
/// The status line, and whether the whole body had been sent when the answer came.
fn post_big(url: &str, path: &str, head: &str, len: usize, pause_after: usize) -> (String, bool) {
    let host = host_port(url);
    let mut c = TcpStream::connect(&host).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        c,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{head}Content-Length: {len}\r\n\r\n"
    )
    .unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicBool::new(false));
    let mut w = c.try_clone().unwrap();
    let (s2, a2) = (sent.clone(), answered.clone());
    let writer = std::thread::spawn(move || {
        let chunk = vec![b' '; 64 << 10];
        let mut waited = std::time::Instant::now();
        let mut paused = false;
        while s2.load(Ordering::SeqCst) < len {
            if s2.load(Ordering::SeqCst) >= pause_after && !paused {
                paused = true;
                waited = std::time::Instant::now();
            }
            if paused && !a2.load(Ordering::SeqCst) && waited.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            if paused && a2.load(Ordering::SeqCst) {
                return;
            }
            let n = chunk.len().min(len - s2.load(Ordering::SeqCst));
            if w.write_all(&chunk[..n]).is_err() {
                return; // the server closed the connection
            }
            s2.fetch_add(n, Ordering::SeqCst);
        }
    });
    let mut buf = [0u8; 4096];
    let mut got = Vec::new();
    while !got.windows(2).any(|w| w == b"\r\n") {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let whole = sent.load(Ordering::SeqCst) >= len;
    answered.store(true, Ordering::SeqCst);
    let _ = c.shutdown(std::net::Shutdown::Both);
    writer.join().unwrap();
    let text = String::from_utf8_lossy(&got).to_string();
    (text.lines().next().unwrap_or("").to_string(), whole)
}

fn token_before_body(store: &str) {
    let token = new_token(store, "ci");
    let srv = Server::start(store, &[]);
    let big = 60_000_000;
    // The answer comes while the client has sent 1 MB of its 60 MB: the body is not waited for.
    let (line, whole) = post_big(&srv.url, "/api/v1/results", "", big, 1 << 20);
    assert!(line.contains(" 401 "), "{line}");
    assert!(!whole, "the 401 came only after the whole body was sent");
    // A wrong token likewise; an alert action without a token or the secret too (403).
    let (line, whole) = post_big(
        &srv.url,
        "/api/v1/results",
        "Authorization: Bearer tare_0123\r\n",
        big,
        1 << 20,
    );
    assert!(line.contains(" 401 ") && !whole, "{line}");
    let (line, whole) = post_big(&srv.url, "/api/v1/alerts/1", "", big, 1 << 20);
    assert!(line.contains(" 403 ") && !whole, "{line}");
    // Several token-less 60 MB bodies sent in full: the server's peak memory stays far below
    // one body.
    let pid = srv.pid();
    let before = status_kb(pid, "VmHWM");
    for _ in 0..4 {
        let (line, _) = post_big(&srv.url, "/api/v1/results", "", big, big);
        assert!(line.contains(" 401 "), "{line}");
    }
    let after = status_kb(pid, "VmHWM");
    assert!(
        after < before + 30_000,
        "peak memory grew from {before} kB to {after} kB for refused bodies"
    );
    // The server still takes an upload with its token.
    let s = session_at(&fixture(), 0, 1.0);
    let (code, v) = post(
        &srv.at(&format!("/api/v1/results?commit={}", commit(0).hash)),
        Some(&token),
        &body(&s),
    );
    assert_eq!(code, 201, "{v}");
}

#[test]
fn token_before_body_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    token_before_body(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn token_before_body_on_postgres() {
    let Some(url) = pg_url() else { return };
    token_before_body(&pg_schema(&url, "serve_tbb"));
}

/// A request over a fresh connection: status, head and body of the answer.
fn raw(url: &str, method: &str, path: &str, head: &str, body: &[u8]) -> (u16, String, String) {
    let mut c = TcpStream::connect(host_port(url)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        c,
        "{method} {path} HTTP/1.1\r\n{head}Connection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    c.write_all(body).unwrap();
    let mut got = Vec::new();
    let _ = c.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got).to_string();
    let (h, b) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = h.split_whitespace().nth(1).unwrap_or("0").parse().unwrap();
    (code, h.to_ascii_lowercase(), b.to_string())
}

fn json_error(code: u16, body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("{code}: the answer is not JSON ({e}): {body}"));
    let e = v["error"].as_str().unwrap_or_else(|| panic!("{v}"));
    assert!(!e.is_empty() && !e.contains('\n'), "{e}");
    e.to_string()
}

fn host_and_origin(store: &str) {
    let token = new_token(store, "ci");
    let srv = Server::start(store, &["--allowed-host", "bench.example"]);
    let port = srv.url.rsplit(':').next().unwrap().to_string();
    let s = session_at(&fixture(), 0, 1.0);
    let up = format!("/api/v1/results?commit={}", commit(0).hash);
    // Another name (a DNS-rebinding page) is refused with the documented JSON error, for a
    // read as for a write; the defaults and --allowed-host (any port) are served.
    for host in ["evil.example", &format!("evil.example:{port}"), "127.0.0.2"] {
        let (code, _, b) = raw(
            &srv.url,
            "GET",
            "/api/v1/series",
            &format!("Host: {host}\r\n"),
            b"",
        );
        assert_eq!(code, 421, "{host}: {b}");
        assert!(json_error(code, &b).contains("--allowed-host"), "{b}");
        let (code, _, b) = raw(&srv.url, "GET", "/", &format!("Host: {host}\r\n"), b"");
        assert_eq!(code, 421, "{host}: {b}");
    }
    let (code, _, b) = raw(&srv.url, "GET", "/api/v1/series", "", b"");
    assert_eq!(code, 400, "no Host: {b}");
    json_error(code, &b);
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LOCALHOST:{port}"),
        format!("[::1]:{port}"),
        "bench.example".to_string(),
        "bench.example:8330".to_string(),
    ] {
        let (code, _, b) = raw(
            &srv.url,
            "GET",
            "/api/v1/series",
            &format!("Host: {host}\r\n"),
            b"",
        );
        assert_eq!(code, 200, "{host}: {b}");
    }
    let (code, _, b) = raw(&srv.url, "GET", "/", "Host: localhost:1\r\n", b"");
    assert_eq!(code, 421, "localhost on another port: {b}");
    // A write from another Origin is refused even with a valid token; from the server's own
    // origin (or without one: curl, CI) it is taken.
    let host = format!("Host: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n");
    for origin in [
        "http://evil.example",
        "null",
        &format!("http://evil.example:{port}"),
    ] {
        let (code, _, b) = raw(
            &srv.url,
            "POST",
            &up,
            &format!("{host}Origin: {origin}\r\n"),
            &body(&s),
        );
        assert_eq!(code, 403, "{origin}: {b}");
        assert!(json_error(code, &b).contains("Origin"), "{b}");
    }
    assert_eq!(counts(store)[2], 0, "nothing stored from another origin");
    let (code, _, b) = raw(
        &srv.url,
        "POST",
        &up,
        &format!("{host}Origin: http://127.0.0.1:{port}\r\n"),
        &body(&s),
    );
    assert_eq!(code, 201, "{b}");
    // The pages: no framing, a content policy, script and styles from the server, the secret.
    let (code, head, page) = raw(
        &srv.url,
        "GET",
        "/",
        &format!("Host: 127.0.0.1:{port}\r\n"),
        b"",
    );
    assert_eq!(code, 200, "{page}");
    assert!(head.contains("x-frame-options: deny"), "{head}");
    assert!(
        head.contains("content-security-policy: default-src 'self'"),
        "{head}"
    );
    assert!(head.contains("frame-ancestors 'none'"), "{head}");
    assert!(
        !page.contains("<style") && !page.contains("<script>"),
        "inline script or style: {page}"
    );
    assert!(page.contains("<script src=\"/assets/tare.js\">"), "{page}");
    assert!(page.contains("name=\"tare-csrf\""), "{page}");
    for (path, kind) in [
        ("/assets/tare.js", "javascript"),
        ("/assets/tare.css", "text/css"),
    ] {
        let (code, head, b) = raw(
            &srv.url,
            "GET",
            path,
            &format!("Host: 127.0.0.1:{port}\r\n"),
            b"",
        );
        assert_eq!(code, 200, "{path}");
        assert!(head.contains(kind) && !b.is_empty(), "{path}: {head}");
    }
    // An alert action with the page's secret from another origin: 403.
    let secret = page
        .split("name=\"tare-csrf\" content=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    let (code, _, b) = raw(
        &srv.url,
        "POST",
        "/api/v1/alerts/1",
        &format!(
            "Host: 127.0.0.1:{port}\r\nX-Tare-CSRF: {secret}\r\nOrigin: http://evil.example\r\n"
        ),
        br#"{"status":"acknowledged"}"#,
    );
    assert_eq!(code, 403, "{b}");
    let (code, _, b) = raw(
        &srv.url,
        "POST",
        "/api/v1/alerts/1",
        &format!("Host: 127.0.0.1:{port}\r\nX-Tare-CSRF: {secret}\r\nOrigin: http://127.0.0.1:{port}\r\n"),
        br#"{"status":"acknowledged"}"#,
    );
    assert_eq!(
        code, 404,
        "no alert 1 yet, but the action was let through: {b}"
    );
}

#[test]
fn host_and_origin_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    host_and_origin(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn host_and_origin_on_postgres() {
    let Some(url) = pg_url() else { return };
    host_and_origin(&pg_schema(&url, "serve_host"));
}

/// With --read-token-required, the 401 page does not carry the alert buttons' secret; the page
/// of a reader with a token does.
#[test]
fn secret_only_for_readers() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let store = store.to_str().unwrap();
    let token = new_token(store, "reader");
    let srv = Server::start(store, &["--read-token-required"]);
    let host = format!("Host: {}\r\n", host_port(&srv.url));
    let (code, head, page) = raw(&srv.url, "GET", "/", &host, b"");
    assert_eq!(code, 401, "{page}");
    assert!(
        !page.contains("tare-csrf"),
        "the 401 page carries the secret: {page}"
    );
    assert!(head.contains("x-frame-options: deny"), "{head}");
    let (code, _, page) = raw(&srv.url, "GET", &format!("/?token={token}"), &host, b"");
    assert_eq!(code, 200, "{page}");
    assert!(page.contains("name=\"tare-csrf\" content=\""), "{page}");
}

/// Paths and queries that do not parse, and methods not allowed, answer the documented JSON
/// error with one line saying what to do, as the handlers' own errors do.
#[test]
fn errors_are_json() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let srv = Server::start(store.to_str().unwrap(), &[]);
    let host = format!("Host: {}\r\n", host_port(&srv.url));
    for (method, path, code, words) in [
        ("GET", "/api/v1/series/a/b/c", 400, "B/M/MC"),
        ("GET", "/series/a/b/c", 400, "B/M/MC"),
        ("POST", "/api/v1/alerts/x", 400, "alerts/ID"),
        ("GET", "/api/v1/series/1/1/1?last=-1", 400, "last"),
        ("GET", "/api/v1/series?page=abc", 400, "page"),
        ("GET", "/?per_page=-5", 400, "per_page"),
        ("GET", "/api/v1/results", 405, "POST"),
        ("DELETE", "/api/v1/series", 405, "GET"),
        ("PUT", "/api/v1/alerts/1", 405, "POST"),
        ("GET", "/api/v1/no-such-thing", 404, "docs/server.md"),
        ("GET", "/api/v1/series?metric=bogus", 400, "wall_time"),
    ] {
        let (got, head, b) = raw(&srv.url, method, path, &host, b"");
        assert_eq!(got, code, "{method} {path}: {b}");
        assert!(head.contains("application/json"), "{method} {path}: {head}");
        let e = json_error(got, &b);
        assert!(e.contains(words), "{method} {path}: {e}");
    }
}

/// Commit prefixes are literal and case-sensitive; every commit (`?commit=`, `extra.git`) and
/// start time is checked before anything is stored.
fn commits(store: &str) {
    let token = new_token(store, "ci");
    let srv = Server::start(store, &[]);
    let results = srv.at("/api/v1/results");
    let base = fixture();
    for i in 0..2 {
        let mut s = session_at(&base, i, 1.0);
        s.extra
            .insert("git".into(), serde_json::to_value(commit(i)).unwrap());
        assert_eq!(post(&results, Some(&token), &body(&s)).0, 201);
    }
    let (h0, h1) = (commit(0).hash, commit(1).hash);
    let cmp = |old: &str| get(&srv.at(&format!("/api/v1/compare?old={old}&new={h1}")));
    let (code, v) = cmp(&h0[..8]);
    assert_eq!(code, 200, "{v}");
    let wild = format!("{}_{}", &h0[..3], &h0[4..8]);
    let upper = h0[..8].to_uppercase();
    assert_ne!(upper, h0[..8], "the fixture's hash has letters");
    for prefix in [
        wild.as_str(),
        upper.as_str(),
        "____",
        &format!("{}%", &h0[..4]),
    ] {
        let (code, v) = cmp(prefix);
        assert!(code == 422 || code == 400, "{prefix}: {v}");
        assert!(v["error"].as_str().unwrap().contains("commit"), "{v}");
    }
    let before = counts(store);
    // A bad commit in extra.git, as in ?commit=, and a start time that is not one: refused,
    // nothing stored.
    for (k, hash) in ["abc def", "x\ny", &"a".repeat(300)].iter().enumerate() {
        let mut s = session_at(&base, 10 + k, 1.0);
        let mut c = commit(10 + k);
        c.hash = hash.to_string();
        s.extra
            .insert("git".into(), serde_json::to_value(c).unwrap());
        let (code, v) = post(&results, Some(&token), &body(&s));
        assert_eq!(code, 422, "{hash}: {v}");
        assert!(v["error"].as_str().unwrap().contains("commit '"), "{v}");
    }
    let s = session_at(&base, 20, 1.0);
    let (code, v) = post(
        &format!("{results}?commit=abc%20def"),
        Some(&token),
        &body(&s),
    );
    assert_eq!(code, 400, "{v}");
    let mut s = session_at(&base, 21, 1.0);
    s.started_at = "yesterday".into();
    let (code, v) = post(&results, Some(&token), &body(&s));
    assert_eq!(code, 422, "{v}");
    assert!(v["error"].as_str().unwrap().contains("started_at"), "{v}");
    assert_eq!(counts(store), before, "nothing stored");
    // `history add` of such a file: exit 2 with the same line, locally and to the server.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.json");
    std::fs::write(&f, body(&s)).unwrap();
    for args in [
        vec!["history", "--store", store, "add", "--no-git"],
        vec![
            "history", "add", "--server", &srv.url, "--token", &token, "--no-git",
        ],
    ] {
        let o = tare()
            .args(&args)
            .arg(&f)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("started_at 'yesterday' is not a time"),
            "{err}"
        );
    }
    assert_eq!(counts(store), before, "nothing stored");
}

#[test]
fn commits_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    commits(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn commits_on_postgres() {
    let Some(url) = pg_url() else { return };
    commits(&pg_schema(&url, "serve_commits"));
}

/// Texts longer than the documented limits are refused: 422 naming the field and the limit;
/// `history add` exits 2 with the same line. Nothing is stored.
fn lengths(store: &str) {
    let token = new_token(store, "ci");
    let srv = Server::start(store, &[]);
    let results = srv.at("/api/v1/results");
    let base = fixture();
    let dir = tempfile::tempdir().unwrap();
    type Change = Box<dyn Fn(&mut tare::results::model::Session)>;
    let cases: Vec<(&str, Change)> = vec![
        (
            "benchmark name",
            Box::new(|s| s.benchmarks[0].name = "n".repeat(5000)),
        ),
        (
            "command",
            Box::new(|s| s.benchmarks[0].command = "c".repeat(4097)),
        ),
        (
            "host name",
            Box::new(|s| s.machine.hostname = "h".repeat(256)),
        ),
    ];
    for (k, (field, change)) in cases.iter().enumerate() {
        let mut s = session_at(&base, 30 + k, 1.0);
        change(&mut s);
        let (code, v) = post(&results, Some(&token), &body(&s));
        assert_eq!(code, 422, "{field}: {v}");
        let e = v["error"].as_str().unwrap().to_string();
        let limit = if *field == "host name" { "255" } else { "4096" };
        assert!(e.contains(field) && e.contains(limit), "{e}");
        let f = dir.path().join(format!("long{k}.json"));
        std::fs::write(&f, body(&s)).unwrap();
        let o = tare()
            .args(["history", "--store", store, "add", "--no-git"])
            .arg(&f)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        let line = e.strip_prefix("the upload: ").unwrap_or(&e);
        assert!(err.contains(line), "{err} / {e}");
    }
    assert_eq!(counts(store)[2], 0, "nothing stored");
    // At the limit: stored.
    let mut s = session_at(&base, 40, 1.0);
    s.machine.hostname = "h".repeat(255);
    assert_eq!(post(&results, Some(&token), &body(&s)).0, 201);
}

#[test]
fn lengths_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    lengths(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn lengths_on_postgres() {
    let Some(url) = pg_url() else { return };
    lengths(&pg_schema(&url, "serve_len"));
}

/// Two benchmarks of one name in one session (two identical commands in hyperfine's JSON, or
/// a results file of an older tare) are stored apart, the second as `NAME (2)`, instead of a
/// 500 on the store's unique keys; `tare run true true` names them apart itself.
fn same_names(store: &str) {
    let token = new_token(store, "ci");
    let srv = Server::start(store, &[]);
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for k in 0..2 {
        let f = dir.path().join(format!("x{k}.json"));
        let o = tare()
            .args(["run", "-r", "2", "true", "true", "--export-json"])
            .arg(&f)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
        let names: Vec<&str> = v["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["true", "true (2)"], "tare run names them apart");
        files.push((f, v));
    }
    // The first file as an older tare wrote it: both benchmarks named `true`.
    let (f0, mut v0) = files[0].clone();
    v0["benchmarks"][1]["name"] = "true".into();
    std::fs::write(&f0, serde_json::to_vec(&v0).unwrap()).unwrap();
    let runs: usize = files
        .iter()
        .map(|(_, v)| {
            v["benchmarks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["runs"].as_array().unwrap().len())
                .sum::<usize>()
        })
        .sum();
    // To the server with `history add --server`, and the same bytes with a POST.
    let o = tare()
        .args([
            "history", "add", "--server", &srv.url, "--token", &token, "--no-git",
        ])
        .arg(&f0)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (code, v) = post(
        &srv.at("/api/v1/results"),
        Some(&token),
        &std::fs::read(&files[1].0).unwrap(),
    );
    assert_eq!(code, 201, "{v}");
    let c = counts(store);
    assert_eq!((c[2], c[3], c[4]), (2, 2, runs as i64), "{c:?}");
    let (code, v) = get(&srv.at("/api/v1/series"));
    assert_eq!(code, 200, "{v}");
    let mut names: Vec<&str> = v["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["benchmark"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["true", "true (2)"], "{v}");
}

#[test]
fn same_names_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    same_names(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn same_names_on_postgres() {
    let Some(url) = pg_url() else { return };
    same_names(&pg_schema(&url, "serve_names"));
}

/// Reads the answer on `c` until the connection closes (or 10 s pass): the status (0 when it
/// closed without one) and how long it took.
fn answer_or_close(c: &mut TcpStream) -> (u16, String, Duration) {
    let t = std::time::Instant::now();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    let _ = c.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got).to_string();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|x| x.1).unwrap_or("");
    (code, body.to_string(), t.elapsed())
}

/// A client that sends nothing, or trickles its head or body, is dropped after
/// `--request-timeout`; one address holds at most `--max-connections-per-client` connections
/// (more: 429), and the server answers others while slow clients hold theirs.
fn slow_clients(store: &str) {
    let token = new_token(store, "ci");
    let srv = Server::start(
        store,
        &[
            "--request-timeout",
            "1s",
            "--max-connections-per-client",
            "3",
        ],
    );
    let host = host_port(&srv.url);
    let series = srv.at("/api/v1/series");
    // Three idle connections take this address's three; a fourth is answered 429 and closed.
    let t = std::time::Instant::now();
    let mut idle: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(&host).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut extra = TcpStream::connect(&host).unwrap();
    let (code, b, _) = answer_or_close(&mut extra);
    assert_eq!(code, 429, "{b}");
    assert!(
        json_error(code, &b).contains("--max-connections-per-client"),
        "{b}"
    );
    // The idle ones are closed after the timeout (1 s), without an answer.
    for c in &mut idle {
        let (code, b, _) = answer_or_close(c);
        assert_eq!(code, 0, "an idle connection got an answer: {b}");
    }
    let waited = t.elapsed();
    assert!(
        waited < Duration::from_secs(5),
        "idle connections held for {waited:?}"
    );
    // Then a normal request is served.
    let (code, v) = get(&series);
    assert_eq!(code, 200, "{v}");
    // A slowloris trickles its head a byte per 100 ms: the server answers another request
    // meanwhile, and drops the slow one at the timeout.
    let mut slow = TcpStream::connect(&host).unwrap();
    let mut w = slow.try_clone().unwrap();
    let head = format!("GET /api/v1/series HTTP/1.1\r\nHost: {host}\r\nX-Pad: ");
    let trickler = std::thread::spawn(move || {
        let t = std::time::Instant::now();
        for b in head.bytes().chain(std::iter::repeat(b'a')).take(200) {
            if w.write_all(&[b]).is_err() {
                return Some(t.elapsed());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    });
    std::thread::sleep(Duration::from_millis(300));
    let t = std::time::Instant::now();
    let (code, v) = get(&series);
    assert_eq!(code, 200, "{v}");
    assert!(
        t.elapsed() < Duration::from_millis(900),
        "a request beside a slowloris took {:?}",
        t.elapsed()
    );
    let (code, b, took) = answer_or_close(&mut slow);
    assert!(code == 0 || code == 408, "{code}: {b}");
    assert!(took < Duration::from_secs(4), "the slowloris held {took:?}");
    let cut = trickler.join().unwrap();
    assert!(
        cut.is_some_and(|d| d < Duration::from_secs(6)),
        "the slowloris was never cut: {cut:?}"
    );
    // A body trickled past the timeout: 408 naming the option, nothing stored.
    let mut c = TcpStream::connect(&host).unwrap();
    write!(
        c,
        "POST /api/v1/results HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{"
    )
    .unwrap();
    let mut w = c.try_clone().unwrap();
    let trickler = std::thread::spawn(move || {
        for _ in 0..100 {
            if w.write_all(b" ").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let (code, b, took) = answer_or_close(&mut c);
    assert_eq!(code, 408, "{b}");
    assert!(json_error(code, &b).contains("--request-timeout"), "{b}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    trickler.join().unwrap();
    assert_eq!(counts(store)[2], 0, "nothing stored");
    // An upload in time is stored.
    let s = session_at(&fixture(), 0, 1.0);
    let (code, v) = post(&srv.at("/api/v1/results"), Some(&token), &body(&s));
    assert_eq!(code, 201, "{v}");
}

#[test]
fn slow_clients_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    slow_clients(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn slow_clients_on_postgres() {
    let Some(url) = pg_url() else { return };
    slow_clients(&pg_schema(&url, "serve_slow"));
}

/// Reads never wait behind a write: while another connection holds the store's write lock
/// (an upload stuck behind it), the pages, the series and a token check are answered at once;
/// the upload is stored when the lock is released.
fn reads_beside_writes(store: &str) {
    let token = new_token(store, "ci");
    let srv = Server::start(store, &[]);
    let results = srv.at("/api/v1/results");
    let (code, v) = post(
        &results,
        Some(&token),
        &body(&session_at(&fixture(), 0, 1.0)),
    );
    assert_eq!(code, 201, "{v}");
    let mut held = tare::store::Store::open(store).unwrap();
    held.db.begin_write().unwrap();
    if store.starts_with("postgres") {
        held.db
            .batch("LOCK TABLE sessions IN EXCLUSIVE MODE")
            .unwrap();
    }
    let done = Arc::new(AtomicBool::new(false));
    let (r2, d2, t2) = (results.clone(), done.clone(), token.clone());
    let upload = std::thread::spawn(move || {
        let out = post(&r2, Some(&t2), &body(&session_at(&fixture(), 1, 1.1)));
        d2.store(true, Ordering::SeqCst);
        out
    });
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        !done.load(Ordering::SeqCst),
        "the upload did not wait for the write lock"
    );
    for path in ["/api/v1/series", "/", "/alerts", "/series/1/1/1"] {
        let t = std::time::Instant::now();
        let (code, v) = call(ureq::get(&srv.at(path)), None);
        assert_eq!(code, 200, "{path}: {v}");
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "{path} waited {:?} behind the write",
            t.elapsed()
        );
    }
    let t = std::time::Instant::now();
    let (code, v) = call(
        ureq::get(&srv.at("/api/v1/token")).set("Authorization", &format!("Bearer {token}")),
        None,
    );
    assert_eq!(code, 200, "{v}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(
        !done.load(Ordering::SeqCst),
        "the upload went through the lock"
    );
    held.db.batch("COMMIT").unwrap();
    let (code, v) = upload.join().unwrap();
    assert_eq!(code, 201, "{v}");
    assert_eq!(counts(store)[2], 2);
}

#[test]
fn reads_beside_writes_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    reads_beside_writes(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn reads_beside_writes_on_postgres() {
    let Some(url) = pg_url() else { return };
    reads_beside_writes(&pg_schema(&url, "serve_rw"));
}

/// Summaries are recomputed from the runs at ingest, never taken from the file; a run whose
/// time is negative is refused with 422 naming the field (`history add` exits 2 with the same
/// line), and nothing is stored.
fn summaries_from_runs(store: &str) {
    let token = new_token(store, "ci");
    let srv = Server::start(store, &[]);
    let results = srv.at("/api/v1/results");
    let mut s = session_at(&fixture(), 0, 1.0);
    let b = &mut s.benchmarks[0];
    let truth = tare::conclude::summary::summarize(b)
        .wall_time
        .unwrap()
        .median;
    let lie = b.summary.wall_time.as_mut().unwrap();
    lie.median = 1e6;
    lie.median_ci_low = 1e6;
    lie.median_ci_high = 1e6;
    let name = b.name.clone();
    let (code, v) = post(&results, Some(&token), &body(&s));
    assert_eq!(code, 201, "{v}");
    let (code, v) = get(&srv.at("/api/v1/series?metric=wall_time"));
    assert_eq!(code, 200, "{v}");
    let stored = v["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["benchmark"] == name.as_str())
        .unwrap_or_else(|| panic!("{name} in {v}"))["latest"]["median"]
        .as_f64()
        .unwrap();
    assert!(
        (stored - truth).abs() <= 1e-9 * truth.abs(),
        "stored median {stored}, the runs' {truth}"
    );
    let before = counts(store);
    let dir = tempfile::tempdir().unwrap();
    for (k, field) in ["wall_time", "user_time", "start_offset"]
        .iter()
        .enumerate()
    {
        let mut s = session_at(&fixture(), 1 + k, 1.0);
        let r = &mut s.benchmarks[0].runs[1];
        match *field {
            "wall_time" => r.wall_time = -0.5,
            "user_time" => r.user_time = -1e-3,
            _ => r.start_offset = -1.0,
        }
        let (code, v) = post(&results, Some(&token), &body(&s));
        assert_eq!(code, 422, "{field}: {v}");
        let e = v["error"].as_str().unwrap().to_string();
        assert!(e.contains(field) && e.contains("run 1"), "{e}");
        let f = dir.path().join(format!("neg{k}.json"));
        std::fs::write(&f, body(&s)).unwrap();
        let o = tare()
            .args([
                "history", "add", "--server", &srv.url, "--token", &token, "--no-git",
            ])
            .arg(&f)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(field), "{err}");
    }
    assert_eq!(counts(store), before, "nothing stored");
}

#[test]
fn summaries_from_runs_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    summaries_from_runs(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn summaries_from_runs_on_postgres() {
    let Some(url) = pg_url() else { return };
    summaries_from_runs(&pg_schema(&url, "serve_sums"));
}
