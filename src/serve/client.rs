//! The client side of `tare serve`, for `tare history add --server URL` and `tare run --store
//! URL`: sessions sent to `POST /api/v1/results` (blocking, ureq; over `https://` with rustls,
//! the server's certificate checked against `SSL_CERT_FILE` or the system's CA bundle), each
//! with the commit the
//! caller resolved from git here (the server has no repository) in its `extra.git`, as `tare
//! run --store` records it in results files. Sessions go in batches (one request and one
//! transaction each) of at most [`BATCH_BYTES`] of JSON.

use crate::results::model::Session;
use crate::store::git::CommitInfo;
use anyhow::{anyhow, bail, Result};

/// Largest batch of one request (the server takes 64 MiB by default).
pub const BATCH_BYTES: usize = 16 << 20;

/// Whether a `--store` value names a server.
pub fn is_url(spec: &str) -> bool {
    spec.starts_with("http://") || spec.starts_with("https://")
}

/// What the server said it stored.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Uploaded {
    pub added: u64,
    pub already_stored: u64,
    pub runs: u64,
}

/// A server and the token to write to it.
#[derive(Debug, Clone)]
pub struct Server {
    pub url: String,
    pub token: String,
}

/// The system's bundle of CA certificates on Debian and Ubuntu (and Arch), read when
/// `SSL_CERT_FILE` is not set.
const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The CA certificates an `https://` server's certificate is checked against: those in
/// `SSL_CERT_FILE` where it is set (a team's own CA, or a self-signed server's certificate, as
/// curl's `--cacert`), else the system's bundle, else ureq's built-in roots (None).
fn tls_config() -> Result<Option<std::sync::Arc<rustls::ClientConfig>>> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let given = std::env::var_os("SSL_CERT_FILE").filter(|v| !v.is_empty());
    let file = match &given {
        Some(f) => std::path::PathBuf::from(f),
        None if std::path::Path::new(SYSTEM_CA_BUNDLE).is_file() => SYSTEM_CA_BUNDLE.into(),
        None => return Ok(None),
    };
    let what = if given.is_some() {
        format!("SSL_CERT_FILE {}", file.display())
    } else {
        file.display().to_string()
    };
    let pem = crate::results::input::read(&file, "the CA certificates")?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow!("{what}: cannot read CA certificates ({e}); give a PEM file"))?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        bail!("{what}: no CA certificate in it; give a PEM file of certificates");
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| anyhow!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Some(std::sync::Arc::new(config)))
}

/// A ureq agent for requests to `url` with these timeouts (connect, whole request); for an
/// `https://` URL it checks the server against [`tls_config`]'s CA certificates.
pub fn agent_for(
    url: &str,
    connect: std::time::Duration,
    whole: std::time::Duration,
) -> Result<ureq::Agent> {
    let mut b = ureq::AgentBuilder::new()
        .timeout_connect(connect)
        .timeout(whole);
    if url.starts_with("https://") {
        if let Some(c) = tls_config()? {
            b = b.tls_config(c);
        }
    }
    Ok(b.build())
}

fn agent(url: &str) -> Result<ureq::Agent> {
    use std::time::Duration;
    agent_for(url, Duration::from_secs(10), Duration::from_secs(600))
}

impl Server {
    /// The server at `url` (TARE_SERVER when None) with `token` (TARE_TOKEN when None).
    pub fn from(url: Option<&str>, token: Option<&str>) -> Result<Server> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let url = url
            .map(String::from)
            .or_else(|| env("TARE_SERVER"))
            .ok_or_else(|| anyhow!("no server: give --server URL or set TARE_SERVER"))?;
        if !is_url(&url) {
            bail!("server '{url}': give its URL, e.g. http://bench.example:8330");
        }
        let token = token.map(String::from).or_else(|| env("TARE_TOKEN")).ok_or_else(|| {
            anyhow!("no token for {url}: give --token TOKEN or set TARE_TOKEN (the server's admin makes one with `tare serve --store STORE token new NAME`)")
        })?;
        Ok(Server {
            url: url.trim_end_matches('/').to_string(),
            token,
        })
    }

    fn error_of(&self, e: ureq::Error) -> anyhow::Error {
        match e {
            ureq::Error::Status(code, r) => {
                let text = r.into_string().unwrap_or_default();
                let msg = serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .and_then(|v| v["error"].as_str().map(String::from))
                    .unwrap_or_else(|| text.chars().take(200).collect());
                anyhow!("the server {} refused ({code}): {msg}", self.url)
            }
            other if other.to_string().contains("certificate") => anyhow!(
                "the server {} is not trusted ({other}): give its CA certificate (or its own, when self-signed) in SSL_CERT_FILE",
                self.url
            ),
            other => anyhow!(
                "cannot reach the server {} ({other}): is `tare serve` running there?",
                self.url
            ),
        }
    }

    /// Checks that the server answers and takes the token for writing (before a run).
    pub fn check(&self) -> Result<()> {
        agent(&self.url)?
            .get(&format!("{}/api/v1/token", self.url))
            .set("Authorization", &format!("Bearer {}", self.token))
            .call()
            .map(|_| ())
            .map_err(|e| self.error_of(e))
    }

    /// Sends one batch of sessions (one transaction on the server).
    fn send(&self, batch: &[serde_json::Value]) -> Result<Uploaded> {
        let body = serde_json::json!({ "sessions": batch }).to_string();
        let r = agent(&self.url)?
            .post(&format!("{}/api/v1/results", self.url))
            .set("Authorization", &format!("Bearer {}", self.token))
            .set("Content-Type", "application/json")
            .send_string(&body)
            .map_err(|e| self.error_of(e))?;
        let v: serde_json::Value = r.into_json()?;
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        Ok(Uploaded {
            added: n("added"),
            already_stored: n("already_stored"),
            runs: n("runs"),
        })
    }

    /// Uploads sessions, each with its commit (put in `extra.git`), in batches. On a failure,
    /// says how many were stored before it.
    pub fn upload(&self, sessions: Vec<(Session, Option<CommitInfo>)>) -> Result<Uploaded> {
        // The token first: a server refuses a body with a bad token without reading it, and
        // a client still sending a large body might see the connection closed, not the 401.
        self.check()?;
        let mut total = Uploaded::default();
        let mut batch: Vec<serde_json::Value> = Vec::new();
        let mut size = 0;
        let n = sessions.len();
        let mut sent = 0;
        for (k, (mut s, c)) in sessions.into_iter().enumerate() {
            if let Some(c) = c {
                s.extra.insert("git".into(), serde_json::to_value(c)?);
            }
            let v = serde_json::to_value(&s)?;
            size += v.to_string().len();
            batch.push(v);
            if size >= BATCH_BYTES || k + 1 == n {
                let u = self.send(&batch).map_err(|e| {
                    if sent > 0 {
                        anyhow!("{e:#} (the first {sent} sessions were stored; run the same command again: stored sessions are skipped)")
                    } else {
                        e
                    }
                })?;
                sent += batch.len();
                total.added += u.added;
                total.already_stored += u.already_stored;
                total.runs += u.runs;
                batch.clear();
                size = 0;
            }
        }
        Ok(total)
    }
}
