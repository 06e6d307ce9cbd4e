//! `tare serve` against anyone who can reach it (issue 44), on a real server on an ephemeral
//! port, on SQLite and on PostgreSQL (skipped, saying so, without it): a token-less upload is
//! refused from its headers, before its body is read (the server's peak memory does not grow by
//! the body).

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
