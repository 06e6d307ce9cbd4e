//! Who reaches `tare serve` and how (issue 44), on a real server on an ephemeral port: a
//! read-only token (`token new NAME --read-only`) reads — bearer and the login cookie — and is
//! refused 403 with the documented JSON error for everything that changes the store, on SQLite
//! and on PostgreSQL (skipped, saying so, without it); a tokens table made before scopes is
//! migrated and its tokens keep writing; `--tls-cert`/`--tls-key` serve HTTPS (a certificate
//! made here with rcgen) with the same Host/Origin checks, deadlines and per-client limit, a
//! plain-HTTP client is answered 400 at once, and bad certificate or key files are one-line
//! errors before listening.

mod serve_support;
mod store_support;

use serve_support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};
use store_support::*;

fn body(s: &tare::results::model::Session) -> Vec<u8> {
    serde_json::to_vec(s).unwrap()
}

fn host_port(url: &str) -> String {
    url.split("://").nth(1).unwrap().to_string()
}

/// Splits an HTTP answer into status, lower-cased head and body.
fn parse(got: &[u8]) -> (u16, String, String) {
    let text = String::from_utf8_lossy(got).to_string();
    let (h, b) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = h
        .split_whitespace()
        .nth(1)
        .unwrap_or("0")
        .parse()
        .unwrap_or(0);
    (code, h.to_ascii_lowercase(), b.to_string())
}

fn request(method: &str, path: &str, host: &str, head: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{head}Connection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// A request over a fresh plain connection: status, head and body of the answer.
fn raw(url: &str, method: &str, path: &str, head: &str, body: &[u8]) -> (u16, String, String) {
    let host = host_port(url);
    let mut c = TcpStream::connect(&host).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    c.write_all(&request(method, path, &host, head, body))
        .unwrap();
    let mut got = Vec::new();
    let _ = c.read_to_end(&mut got);
    parse(&got)
}

fn json_error(code: u16, body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("{code}: the answer is not JSON ({e}): {body}"));
    let e = v["error"].as_str().unwrap_or_else(|| panic!("{v}"));
    assert!(!e.is_empty() && !e.contains('\n'), "{e}");
    e.to_string()
}

fn new_read_token(store: &str, name: &str) -> String {
    let o = tare()
        .args([
            "serve",
            "--store",
            store,
            "token",
            "new",
            name,
            "--read-only",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("read-only token"));
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

fn scopes(store: &str) {
    let write = new_token(store, "ci");
    let read = new_read_token(store, "viewer");
    let o = tare()
        .args(["serve", "--store", store, "token", "list"])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(list.contains("ci\twrite\t"), "{list}");
    assert!(list.contains("viewer\tread-only\t"), "{list}");

    let srv = Server::start(store, &["--read-token-required"]);
    let results = srv.at(&format!("/api/v1/results?commit={}", commit(0).hash));
    let s = session_at(&fixture(), 0, 1.0);
    let bearer = |t: &str| format!("Authorization: Bearer {t}\r\n");
    // Reads with the read-only token: bearer, and the login cookie of the pages.
    let (code, _, b) = raw(&srv.url, "GET", "/api/v1/series", &bearer(&read), b"");
    assert_eq!(code, 200, "{b}");
    let (code, head, page) = raw(&srv.url, "GET", &format!("/?token={read}"), "", b"");
    assert_eq!(code, 200, "{page}");
    assert!(head.contains("set-cookie: tare_token="), "{head}");
    let secret = page
        .split("name=\"tare-csrf\" content=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the reader's page carries the secret")
        .to_string();
    let cookie = |t: &str| format!("Cookie: tare_token={t}\r\nX-Tare-CSRF: {secret}\r\n");
    let (code, _, b) = raw(
        &srv.url,
        "GET",
        "/alerts",
        &format!("Cookie: tare_token={read}\r\n"),
        b"",
    );
    assert_eq!(code, 200, "{b}");

    // Everything that writes is refused with it: 403 and one line asking for a write token.
    let refused = [
        ("POST", results.clone(), bearer(&read), body(&s)),
        ("POST", srv.at("/api/v1/check"), bearer(&read), vec![]),
        ("GET", srv.at("/api/v1/token"), bearer(&read), vec![]),
        (
            "POST",
            srv.at("/api/v1/alerts/1"),
            bearer(&read),
            br#"{"status":"acknowledged"}"#.to_vec(),
        ),
        (
            "POST",
            srv.at("/api/v1/alerts/1"),
            cookie(&read),
            br#"{"status":"acknowledged"}"#.to_vec(),
        ),
    ];
    for (method, url, head, b) in &refused {
        let path = &url[srv.url.len()..];
        let (code, _, answer) = raw(&srv.url, method, path, head, b);
        assert_eq!(code, 403, "{method} {path}: {answer}");
        let e = json_error(code, &answer);
        assert!(e.contains("write token") && e.contains("viewer"), "{e}");
    }
    assert_eq!(counts(store)[2], 0, "nothing was stored");
    // The write token passes the same checks: the upload is stored, the alert action gets as
    // far as the alert (there is none: 404), with the bearer and with the cookie and secret.
    let (code, _, b) = raw(
        &srv.url,
        "POST",
        &results[srv.url.len()..],
        &bearer(&write),
        &body(&s),
    );
    assert_eq!(code, 201, "{b}");
    for head in [bearer(&write), cookie(&write)] {
        let (code, _, b) = raw(
            &srv.url,
            "POST",
            "/api/v1/alerts/999",
            &head,
            br#"{"status":"acknowledged"}"#,
        );
        assert_eq!(code, 404, "{head}: {b}");
    }
    let (code, _, b) = raw(&srv.url, "GET", "/api/v1/token", &bearer(&write), b"");
    assert_eq!(code, 200, "{b}");
    // The upload client says so too, before sending anything.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.json");
    std::fs::write(&f, body(&session_at(&fixture(), 1, 1.0))).unwrap();
    let o = tare()
        .args([
            "history", "add", "--server", &srv.url, "--token", &read, "--no-git",
        ])
        .arg(&f)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("write token"), "{err}");
    assert_eq!(counts(store)[2], 1);
}

#[test]
fn scopes_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    scopes(dir.path().join("h.sqlite").to_str().unwrap());
}

#[test]
fn scopes_on_postgres() {
    let Some(url) = pg_url() else { return };
    scopes(&pg_schema(&url, "serve_scope"));
}

const OLD_TABLE: &str = "CREATE TABLE tokens (name TEXT PRIMARY KEY, hash TEXT NOT NULL, created_at TEXT NOT NULL, revoked_at TEXT, last_used TEXT)";

/// A store whose tokens table was made before scopes: the server adds the column, the old
/// token keeps writing, a read-only one made after reads only.
fn old_tokens(store: &str, make_old: impl FnOnce(&str)) {
    let old = format!("tare_{}", "ab".repeat(32));
    make_old(&format!(
        "INSERT INTO tokens (name, hash, created_at) VALUES ('old-ci', '{}', '2026-01-01T00:00:00Z')",
        tare::store::tokens::hash(&old)
    ));
    let srv = Server::start(store, &[]);
    let read = new_read_token(store, "viewer");
    let s = session_at(&fixture(), 0, 1.0);
    let results = srv.at(&format!("/api/v1/results?commit={}", commit(0).hash));
    let (code, v) = post(&results, Some(&read), &body(&s));
    assert_eq!(code, 403, "{v}");
    let (code, v) = post(&results, Some(&old), &body(&s));
    assert_eq!(code, 201, "{v}");
    let o = tare()
        .args(["serve", "--store", store, "token", "list"])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(list.contains("old-ci\twrite\t"), "{list}");
}

#[test]
fn old_tokens_keep_writing_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    old_tokens(store.to_str().unwrap(), |insert| {
        let c = rusqlite::Connection::open(&store).unwrap();
        c.execute_batch(&format!("{OLD_TABLE}; {insert}")).unwrap();
    });
}

#[test]
fn old_tokens_keep_writing_on_postgres() {
    let Some(url) = pg_url() else { return };
    let store = pg_schema(&url, "serve_oldtok");
    old_tokens(&store, |insert| {
        let mut c = postgres::Client::connect(&store, postgres::NoTls).unwrap();
        c.batch_execute(&format!("{OLD_TABLE}; {insert}")).unwrap();
    });
}

/// A client that trusts `ca` (PEM) alone.
fn tls_client(ca: &str) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// A TLS connection to the server, checked against its certificate for `localhost`.
fn tls_connect(
    url: &str,
    cfg: &Arc<rustls::ClientConfig>,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let tcp = TcpStream::connect(host_port(url)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let conn = rustls::ClientConnection::new(cfg.clone(), "localhost".try_into().unwrap()).unwrap();
    rustls::StreamOwned::new(conn, tcp)
}

/// A request over a fresh TLS connection: status, head and body of the answer.
fn https(
    url: &str,
    cfg: &Arc<rustls::ClientConfig>,
    method: &str,
    path: &str,
    head: &str,
    body: &[u8],
) -> (u16, String, String) {
    let mut s = tls_connect(url, cfg);
    let host = host_port(url);
    s.write_all(&request(method, path, &host, head, body))
        .unwrap();
    let mut got = Vec::new();
    // The server may close without close_notify after the answer: what arrived counts.
    let _ = s.read_to_end(&mut got);
    parse(&got)
}

/// Reads until the peer closes (or `limit` passes): how long that took.
fn closed_within(c: &mut TcpStream, limit: Duration) -> Duration {
    let t = Instant::now();
    c.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return t.elapsed(),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return t.elapsed()
            }
            Err(_) => return t.elapsed(),
        }
    }
}

#[test]
fn tls() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let store = store.to_str().unwrap();
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.key_pair.serialize_pem()).unwrap();
    let other = dir.path().join("other-key.pem");
    std::fs::write(&other, rcgen::KeyPair::generate().unwrap().serialize_pem()).unwrap();
    let (c, k, o) = (
        cert.to_str().unwrap(),
        key.to_str().unwrap(),
        other.to_str().unwrap(),
    );

    // Bad files: one line, exit 2, before listening.
    for (cert, key, names) in [
        ("/nonexistent/cert.pem", k, "/nonexistent/cert.pem"),
        (c, "/nonexistent/key.pem", "/nonexistent/key.pem"),
        (k, k, k),
        (c, c, c),
        (c, o, o),
    ] {
        let out = tare()
            .args(["serve", "--store", store, "--listen", "127.0.0.1:0"])
            .args(["--tls-cert", cert, "--tls-key", key])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cert} {key}: {err}");
        assert!(err.contains(names) && !err.contains("listening"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let out = tare()
        .args(["serve", "--store", store, "--tls-cert", c])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "--tls-cert without --tls-key");

    let token = new_token(store, "ci");
    let srv = Server::start(
        store,
        &[
            "--tls-cert",
            c,
            "--tls-key",
            k,
            "--request-timeout",
            "4s",
            "--max-connections-per-client",
            "3",
        ],
    );
    assert!(srv.url.starts_with("https://"), "{}", srv.url);
    let cfg = tls_client(&ck.cert.pem());
    let auth = format!("Authorization: Bearer {token}\r\n");
    let s = session_at(&fixture(), 0, 1.0);
    let path = format!("/api/v1/results?commit={}", commit(0).hash);
    let (code, _, b) = https(&srv.url, &cfg, "POST", &path, &auth, &body(&s));
    assert_eq!(code, 201, "{b}");
    let (code, head, b) = https(&srv.url, &cfg, "GET", "/", "", b"");
    assert_eq!(code, 200, "{b}");
    assert!(head.contains("x-frame-options: deny"), "{head}");
    let (code, _, b) = https(&srv.url, &cfg, "GET", "/api/v1/series", "", b"");
    assert_eq!(code, 200, "{b}");
    let v: serde_json::Value = serde_json::from_str(&b).unwrap();
    assert!(v["total"].as_u64().unwrap() > 0, "{b}");

    // tare's own client uploads over HTTPS, trusting the CA in SSL_CERT_FILE; without it the
    // self-signed certificate is refused and nothing is stored.
    let f = dir.path().join("r.json");
    std::fs::write(&f, body(&session_at(&fixture(), 1, 1.0))).unwrap();
    let add = |ca: Option<&str>| {
        let mut cmd = tare();
        cmd.args(["history", "add", "--server", &srv.url, "--token", &token])
            .arg(&f)
            .args(["--commit", &commit(1).hash]);
        match ca {
            Some(ca) => cmd.env("SSL_CERT_FILE", ca),
            None => cmd.env_remove("SSL_CERT_FILE"),
        };
        cmd.output().unwrap()
    };
    let o = add(None);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    let o = add(Some(c));
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{out}{err}");
    assert!(
        format!("{out}{err}").contains("added 1 session"),
        "{out}{err}"
    );

    // Host and Origin as over plain HTTP.
    let mut s = tls_connect(&srv.url, &cfg);
    s.write_all(&request("GET", "/", "attacker.example", "", b""))
        .unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert_eq!(parse(&got).0, 421);
    let origin = format!("{auth}Origin: https://attacker.example\r\n");
    let (code, _, b) = https(&srv.url, &cfg, "POST", "/api/v1/check", &origin, b"");
    assert_eq!(code, 403, "{b}");
    let origin = format!("{auth}Origin: https://{}\r\n", host_port(&srv.url));
    let (code, _, b) = https(&srv.url, &cfg, "POST", "/api/v1/check", &origin, b"");
    assert_eq!(code, 200, "{b}");

    // A plain-HTTP client is answered 400 at once (not left waiting for a handshake).
    let t = Instant::now();
    let (code, _, b) = raw(&srv.url, "GET", "/", "", b"");
    assert_eq!(code, 400, "{b}");
    assert!(json_error(code, &b).contains("https://"), "{b}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());

    // A client that sends nothing, or half a handshake, is closed after --request-timeout.
    let mut silent = TcpStream::connect(host_port(&srv.url)).unwrap();
    let mut half = TcpStream::connect(host_port(&srv.url)).unwrap();
    half.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00]).unwrap();
    for c in [&mut silent, &mut half] {
        let took = closed_within(c, Duration::from_secs(30));
        assert!(took < Duration::from_secs(20), "held {took:?}");
    }

    // Three connections held (handshakes begun): a fourth is answered 429 over TLS.
    let held: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut c = TcpStream::connect(host_port(&srv.url)).unwrap();
            c.write_all(&[0x16]).unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let (code, head, b) = https(&srv.url, &cfg, "GET", "/", "", b"");
    assert_eq!(code, 429, "{head}{b}");
    drop(held);
    // The slots come back: requests are served again.
    let t = Instant::now();
    loop {
        let (code, _, _) = https(&srv.url, &cfg, "GET", "/api/v1/series", "", b"");
        if code == 200 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "still {code}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
