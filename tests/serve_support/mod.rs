//! Helpers of the server tests: a real `tare serve` process on an ephemeral port (stopped when
//! dropped), tokens made with the CLI, and HTTP requests with ureq.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub fn tare() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tare"))
}

/// A running `tare serve`.
pub struct Server {
    child: Child,
    pub url: String,
    pub store: String,
}

impl Server {
    /// Starts `tare serve --store STORE --listen 127.0.0.1:0 EXTRA…` and waits for its
    /// "listening on" line.
    pub fn start(store: &str, extra: &[&str]) -> Server {
        let mut child = tare()
            .args(["serve", "--store", store, "--listen", "127.0.0.1:0"])
            .args(extra)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("start tare serve");
        let err = child.stderr.take().unwrap();
        let mut lines = BufReader::new(err).lines();
        let mut url = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(rest) = line.split("listening on ").nth(1) {
                url = Some(rest.split_whitespace().next().unwrap().to_string());
                break;
            }
            eprintln!("server: {line}");
        }
        // Keep draining the server's stderr so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Server {
            child,
            url: url.expect("tare serve printed where it listens"),
            store: store.to_string(),
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Makes a token with `tare serve --store STORE token new NAME`.
pub fn new_token(store: &str, name: &str) -> String {
    let o = tare()
        .args(["serve", "--store", store, "token", "new", name])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

pub fn revoke(store: &str, name: &str) {
    let o = tare()
        .args(["serve", "--store", store, "token", "revoke", name])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Status and JSON body of a request (errors with a status are answers too).
pub fn call(req: ureq::Request, body: Option<&[u8]>) -> (u16, serde_json::Value) {
    let r = match body {
        Some(b) => req.send_bytes(b),
        None => req.call(),
    };
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("request failed: {e}"),
    };
    let status = resp.status();
    let text = resp.into_string().unwrap();
    let v = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    (status, v)
}

pub fn post(url: &str, token: Option<&str>, body: &[u8]) -> (u16, serde_json::Value) {
    let mut r = ureq::post(url).set("Content-Type", "application/json");
    if let Some(t) = token {
        r = r.set("Authorization", &format!("Bearer {t}"));
    }
    call(r, Some(body))
}

pub fn get(url: &str) -> (u16, serde_json::Value) {
    call(ureq::get(url), None)
}

/// (commits, machines, sessions, benchmarks, runs) of a store, from `tare history info`.
pub fn counts(store: &str) -> Vec<i64> {
    let o = tare()
        .args(["history", "--store", store, "info"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let after = text.split(": ").last().unwrap().to_string();
    after
        .split(", ")
        .take(5)
        .map(|p| p.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

/// A POST that declares a body of `len` bytes and sends none of it: the server answers on the
/// declared length alone (a body it never reads cannot reset the connection under the answer).
pub fn post_declared(url: &str, token: &str, len: usize) -> u16 {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut c = std::net::TcpStream::connect(host).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    write!(
        c,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
    )
    .unwrap();
    let mut buf = [0u8; 512];
    let n = c.read(&mut buf).unwrap();
    let head = String::from_utf8_lossy(&buf[..n]).to_string();
    head.split_whitespace().nth(1).unwrap().parse().unwrap()
}
