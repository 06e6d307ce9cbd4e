//! `tare serve`: one process serving a history store to a team — a JSON API under `/api/v1/`
//! (uploads with tokens, series, alerts, comparisons of two commits) and the dashboard pages.
//!
//! * [`auth`] — bearer tokens, the read-token cookie, the page's anti-CSRF secret;
//! * [`api`] — the JSON endpoints;
//! * [`client`] — uploads from `tare history add --server` and `tare run --store URL`;
//! * [`pages`] — the server-rendered dashboard.
//!
//! axum on tokio serves, each connection through hyper's HTTP/1 with a deadline for the request
//! head (hyper's header timeout) and one for the body ([`TimedBody`]), and at most
//! `--max-connections-per-client` connections per client address ([`Slots`]); with `--tls-cert`
//! and `--tls-key` each connection is TLS (rustls with the `ring` provider, [`tls_config`]),
//! its handshake within the head's deadline, under the same limits. The store stays
//! synchronous, used from `spawn_blocking`: one writing connection behind a mutex, so requests
//! that write run one at a time (an upload is one transaction; SQLite allows one writer anyway),
//! and [`READERS`] reading connections beside it, so that reads never wait behind a write
//! (SQLite in WAL mode: a reader sees the last commit while a writer's transaction is open).
//! Not for: statistics (`conclude`, `store`).

pub mod api;
pub mod auth;
pub mod client;
pub mod pages;
pub mod webhook;

use crate::store::Store;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The connections that only read (pages, series, alerts, comparisons) open beside the one that
/// writes.
pub const READERS: usize = 4;

/// `--request-timeout`'s default: the time a client has to send a request's head, and then
/// its body.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// `--max-connections-per-client`'s default.
pub const CONNECTIONS_PER_CLIENT: usize = 32;

/// What every request shares.
pub struct App {
    /// The connection that writes (uploads, `check`, alert actions, token checks of writes).
    pub store: Mutex<Store>,
    /// The connections that read ([`READERS`]; none: reads use `store`).
    pub readers: Vec<Mutex<Store>>,
    /// The reader to try first next.
    pub next_reader: std::sync::atomic::AtomicUsize,
    /// How long a client has for a request's head, and then for its body.
    pub request_timeout: Duration,
    /// Reads need a valid token too (`--read-token-required`).
    pub read_token_required: bool,
    /// The per-process secret the pages send back in `X-Tare-CSRF` with alert actions.
    pub csrf: String,
    /// Largest request body, in bytes.
    pub max_body: usize,
    /// The names a request's `Host` (and a state-changing request's `Origin`) may carry.
    pub hosts: Vec<Allowed>,
    /// The port a `Host` without one means: 443 over TLS, else 80.
    pub default_port: u16,
    /// `--webhook`: where each new alert of a check (and of an upload's) is POSTed.
    pub webhook: Option<String>,
}

/// Serving options.
pub struct Options {
    pub listen: String,
    pub read_token_required: bool,
    pub max_body: usize,
    /// `--allowed-host`: names (`NAME` any port, `NAME:PORT` that port) besides the defaults.
    pub allowed_hosts: Vec<String>,
    /// `--request-timeout`: a request's head must arrive within it, and then its body.
    pub request_timeout: Duration,
    /// `--max-connections-per-client`: connections one client address may hold open at once.
    pub max_connections_per_client: usize,
    /// `--tls-cert` and `--tls-key`, loaded ([`tls_config`]): serve HTTPS only.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// `--webhook URL`: each upload that adds sessions is checked (as `POST /api/v1/check`
    /// with its defaults) and each new alert, of it or of a check, POSTed to URL.
    pub webhook: Option<String>,
}

/// The TLS configuration of `--tls-cert CERT --tls-key KEY` (PEM: the certificate chain, the
/// server's first; its private key, PKCS#8, PKCS#1 or SEC1), with rustls's `ring` provider,
/// TLS 1.2 and 1.3, HTTP/1.1 over ALPN. Errors are one line naming the file.
pub fn tls_config(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let what = |p: &std::path::Path, e: &dyn std::fmt::Display, hint: &str| {
        crate::error::usage(format!("{}: {e}; {hint}", p.display()))
    };
    // Read as every input file is (`results::input`): a FIFO, a device or an endless file is
    // refused or bounded, never waited on.
    let cert_pem = crate::results::input::read(cert, "--tls-cert")?;
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            what(
                cert,
                &e,
                "--tls-cert takes a PEM file of the server's certificate (chain)",
            )
        })?;
    if certs.is_empty() {
        return Err(what(
            cert,
            &"no certificate in it",
            "--tls-cert takes a PEM file with a '-----BEGIN CERTIFICATE-----' block",
        ));
    }
    let key_pem = crate::results::input::read(key, "--tls-key")?;
    let key_der = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        what(
            key,
            &e,
            "--tls-key takes the PEM file of the certificate's private key (PKCS#8, PKCS#1 or SEC1)",
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| anyhow::anyhow!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key_der)
        .map_err(|e| {
            crate::error::usage(format!(
                "--tls-cert {} with --tls-key {}: {e}; give the key of that certificate",
                cert.display(),
                key.display()
            ))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// One allowed host: a lower-case name (`[::1]` for an IPv6 address) and its port, if only one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    pub name: String,
    pub port: Option<u16>,
}

/// `NAME`, `NAME:PORT`, `[V6]` or `[V6]:PORT` split in name (lower case) and port; None when the
/// port does not read or the name is empty.
pub fn split_host(h: &str) -> Option<(String, Option<u16>)> {
    let h = h.trim();
    let (name, port) = if h.starts_with('[') {
        let end = h.find(']')?;
        let rest = &h[end + 1..];
        let port = match rest.strip_prefix(':') {
            Some(p) => Some(p.parse().ok()?),
            None if rest.is_empty() => None,
            None => return None,
        };
        (&h[..=end], port)
    } else {
        match h.rsplit_once(':') {
            Some((n, p)) => (n, Some(p.parse().ok()?)),
            None => (h, None),
        }
    };
    if name.is_empty() || name.contains(['/', '@', ' ']) {
        return None;
    }
    Some((name.to_ascii_lowercase(), port))
}

/// The hosts a server listening on `addr` (as given: `listen`) answers to: the address it
/// listens on, localhost, 127.0.0.1 and [::1] with its port, and `extra` (`--allowed-host`).
pub fn allowed_hosts(
    listen: &str,
    addr: std::net::SocketAddr,
    extra: &[String],
) -> anyhow::Result<Vec<Allowed>> {
    let port = Some(addr.port());
    let mut out: Vec<Allowed> = ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .map(|n| Allowed {
            name: n.to_string(),
            port,
        })
        .collect();
    let mut add = |name: String, port: Option<u16>| {
        let a = Allowed { name, port };
        if !out.contains(&a) {
            out.push(a);
        }
    };
    if !addr.ip().is_unspecified() {
        let ip = match addr.ip() {
            std::net::IpAddr::V4(v4) => v4.to_string(),
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        };
        add(ip, port);
    }
    if let Some((name, _)) = split_host(listen) {
        if !matches!(name.as_str(), "0.0.0.0" | "[::]" | "") {
            add(name, port);
        }
    }
    for e in extra {
        let (name, p) = split_host(e).ok_or_else(|| {
            crate::error::usage(format!(
                "--allowed-host {e}: give a host name or address, with a port or without (e.g. bench.example or bench.example:8330)"
            ))
        })?;
        add(name, p);
    }
    Ok(out)
}

/// Whether `host` (a `Host` header's value, or an `Origin`'s host and port) is allowed; a
/// host without a port is on `default_port` (80 for http, 443 for https).
pub fn host_allowed(hosts: &[Allowed], host: &str, default_port: u16) -> bool {
    let Some((name, port)) = split_host(host) else {
        return false;
    };
    let port = port.unwrap_or(default_port);
    hosts
        .iter()
        .any(|a| a.name == name && a.port.is_none_or(|p| p == port))
}

/// The security headers of every answer: no framing, a content policy that lets a page load
/// only what this server serves (scripts and styles from `/assets/`, none inline), no sniffing,
/// no referrer (a page's URL may carry `?token=`).
pub const CSP: &str = "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Checks the `Host` of every request and the `Origin` of state-changing ones, and adds the
/// security headers to every answer.
async fn guard(
    axum::extract::State(app): axum::extract::State<Arc<App>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let host = req
        .headers()
        .get(axum::http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().authority().map(|a| a.to_string()));
    let names = || {
        app.hosts
            .iter()
            .map(|a| match a.port {
                Some(p) => format!("{}:{p}", a.name),
                None => a.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let refused = match host {
        None => Some(ApiError::bad(
            "the request has no Host header: send one (HTTP/1.1 requires it)",
        )),
        Some(h) if !host_allowed(&app.hosts, &h, app.default_port) => Some(ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "Host '{}' is not a name this server answers to ({}): use one of those, or start tare serve with --allowed-host NAME",
                h.chars().take(100).collect::<String>(),
                names()
            ),
        )),
        Some(_) => None,
    };
    let changes = !matches!(
        *req.method(),
        axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS
    );
    let refused = refused.or_else(|| {
        let origin = req.headers().get(axum::http::header::ORIGIN)?;
        let o = origin.to_str().unwrap_or("");
        let (host, port) = match o.strip_prefix("https://") {
            Some(h) => (h, 443),
            None => (o.strip_prefix("http://").unwrap_or(""), 80),
        };
        (changes && !host_allowed(&app.hosts, host, port)).then(|| {
            ApiError::new(
                StatusCode::FORBIDDEN,
                format!(
                    "a request from the page of Origin '{}' may not change anything here: open the dashboard at one of {} (or start tare serve with --allowed-host NAME)",
                    o.chars().take(100).collect::<String>(),
                    names()
                ),
            )
        })
    });
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let mut resp = match refused {
        Some(e) => e.into_response(),
        None => as_json_error(next.run(req).await, &method, &path).await,
    };
    let h = resp.headers_mut();
    for (k, v) in [
        ("x-frame-options", "DENY"),
        ("content-security-policy", CSP),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
    ] {
        h.insert(k, axum::http::HeaderValue::from_static(v));
    }
    resp
}

/// An error answered by the framework rather than a handler (a path or query that does not
/// parse, a method not allowed), as the documented JSON error with one line saying what to do;
/// other answers unchanged.
async fn as_json_error(resp: Response, method: &axum::http::Method, path: &str) -> Response {
    let status = resp.status();
    let kind = resp
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !(status.is_client_error() || status.is_server_error())
        || kind.starts_with("application/json")
        || kind.starts_with("text/html")
    {
        return resp;
    }
    let allow = resp
        .headers()
        .get(axum::http::header::ALLOW)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = axum::body::to_bytes(resp.into_body(), 4096)
        .await
        .map(|b| String::from_utf8_lossy(&b).replace(['\n', '\r'], " "))
        .unwrap_or_default();
    let text = text.trim();
    let path = path.chars().take(200).collect::<String>();
    let message = if status == StatusCode::METHOD_NOT_ALLOWED {
        format!(
            "{method} is not allowed on {path}: use {} (see docs/server.md)",
            allow.as_deref().unwrap_or(
                if path == "/api/v1/results"
                    || path == "/api/v1/check"
                    || path.starts_with("/api/v1/alerts/")
                {
                    "POST"
                } else {
                    "GET"
                }
            )
        )
    } else if let Some(name) = text
        .strip_prefix("Failed to deserialize query string: ")
        .and_then(|r| r.split_once("unknown field `"))
        .and_then(|(_, r)| r.split_once('`'))
    {
        // A parameter the endpoint does not take: refused, never ignored.
        let takes = name
            .1
            .strip_prefix(", expected one of ")
            .or_else(|| name.1.strip_prefix(", expected "))
            .map(|t| format!("it takes {}", t.replace('`', "")))
            .unwrap_or_else(|| "it takes none".into());
        format!(
            "unknown query parameter '{}' on {path}: {takes}{} (see docs/server.md)",
            name.0.chars().take(100).collect::<String>(),
            if name.0 == "token" && path.starts_with("/api/") {
                "; the API takes its token as `Authorization: Bearer TOKEN`"
            } else {
                ""
            }
        )
    } else if text.starts_with("Failed to deserialize query string") {
        format!(
            "the query of {path} does not parse ({}): give its parameters as docs/server.md shows (counts and ids are whole numbers from 1 up)",
            text.trim_start_matches("Failed to deserialize query string: ")
        )
    } else if status == StatusCode::BAD_REQUEST {
        format!(
            "the path {path} does not parse ({text}): a series is /api/v1/series/B/M/MC (or /series/B/M/MC) with the three numbers of its \"id\" in GET /api/v1/series, an alert /api/v1/alerts/ID"
        )
    } else if text.is_empty() {
        format!("{status} for {method} {path}: see docs/server.md for the pages and the API")
    } else {
        format!("{text} ({method} {path}): see docs/server.md for the pages and the API")
    };
    ApiError::new(status, message).into_response()
}

/// A request refused or failed: its status and one line saying why (and what to do).
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }
    pub fn unprocessable(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }
    pub fn internal(e: anyhow::Error) -> ApiError {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{e:#}").replace('\n', " "),
        )
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> ApiError {
        ApiError::internal(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            axum::Json(serde_json::json!({ "error": self.message })),
        )
            .into_response()
    }
}

/// Runs `f` on the writing connection in a blocking thread, one request at a time.
pub async fn with_store<T, F>(app: &Arc<App>, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&mut Store) -> Result<T, ApiError> + Send + 'static,
{
    let app = app.clone();
    tokio::task::spawn_blocking(move || {
        let mut st = app.store.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut st)
    })
    .await
    .map_err(|e| ApiError::internal(anyhow::anyhow!("the request's task failed: {e}")))?
}

/// Runs `f`, which only reads, on a reading connection in a blocking thread: the first one
/// free (else it waits for one), never behind the writing connection (an upload in progress).
pub async fn with_reader<T, F>(app: &Arc<App>, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&mut Store) -> Result<T, ApiError> + Send + 'static,
{
    if app.readers.is_empty() {
        return with_store(app, f).await;
    }
    let app = app.clone();
    tokio::task::spawn_blocking(move || {
        let n = app.readers.len();
        let first = app
            .next_reader
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            % n;
        for k in 0..n {
            match app.readers[(first + k) % n].try_lock() {
                Ok(mut st) => return f(&mut st),
                Err(std::sync::TryLockError::Poisoned(e)) => return f(&mut e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
        }
        let mut st = app.readers[first].lock().unwrap_or_else(|e| e.into_inner());
        f(&mut st)
    })
    .await
    .map_err(|e| ApiError::internal(anyhow::anyhow!("the request's task failed: {e}")))?
}

/// The routes.
pub fn router(app: Arc<App>) -> Router {
    let limit = app.max_body;
    Router::new()
        .route("/", get(pages::index))
        .route("/series/{b}/{m}/{mc}", get(pages::series))
        .route("/alerts", get(pages::alerts))
        .route("/compare", get(pages::compare))
        .route("/assets/tare.css", get(pages::css))
        .route("/assets/tare.js", get(pages::script))
        .route("/api/v1/results", post(api::upload))
        .route("/api/v1/series", get(api::series_list))
        .route("/api/v1/series/{b}/{m}/{mc}", get(api::series_one))
        .route("/api/v1/alerts", get(api::alerts))
        .route("/api/v1/alerts/{id}", post(api::alert_action))
        .route("/api/v1/check", post(api::check))
        .route("/api/v1/token", get(api::whoami))
        .route("/api/v1/compare", get(api::compare))
        .fallback(|| async {
            ApiError::not_found("no such page: see docs/server.md for the API and pages")
        })
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            body_deadline,
        ))
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// A request body that fails ([`BodyTimeout`]) when it has not arrived by its deadline: a
/// client that trickles its body holds the connection no longer than `--request-timeout`.
pub struct TimedBody {
    inner: axum::body::Body,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    after: Duration,
}

/// The error of a body that did not arrive in time; its message names the option.
#[derive(Debug)]
pub struct BodyTimeout(pub Duration);

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the request's body did not arrive within {} s (`tare serve --request-timeout`): send it faster, or ask for a longer timeout",
            self.0.as_secs_f64()
        )
    }
}

impl std::error::Error for BodyTimeout {}

impl http_body::Body for TimedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        use std::future::Future;
        use std::task::Poll;
        let this = self.get_mut();
        if let Poll::Ready(frame) = std::pin::Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        if this.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(axum::Error::new(BodyTimeout(this.after)))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Gives every request body a deadline: `--request-timeout` from when its head arrived.
async fn body_deadline(
    axum::extract::State(app): axum::extract::State<Arc<App>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use http_body::Body as _;
    let after = app.request_timeout;
    let req = req.map(|inner| {
        if inner.is_end_stream() {
            return inner;
        }
        axum::body::Body::new(TimedBody {
            inner,
            deadline: Box::pin(tokio::time::sleep(after)),
            after,
        })
    });
    next.run(req).await
}

/// The connections each client address holds open, up to `per_client`.
pub struct Slots {
    per_client: usize,
    open: Mutex<std::collections::HashMap<std::net::IpAddr, usize>>,
}

/// One connection of a client address; given back when dropped.
pub struct Slot {
    slots: Arc<Slots>,
    ip: std::net::IpAddr,
}

impl Slots {
    pub fn new(per_client: usize) -> Arc<Slots> {
        Arc::new(Slots {
            per_client,
            open: Mutex::new(Default::default()),
        })
    }

    /// A slot for a connection from `ip`, or None when it holds `per_client` already.
    pub fn take(self: &Arc<Slots>, ip: std::net::IpAddr) -> Option<Slot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(ip).or_insert(0);
        if *n >= self.per_client {
            return None;
        }
        *n += 1;
        Some(Slot {
            slots: self.clone(),
            ip,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Answers a connection over its client's limit 429 (JSON, `Connection: close`) without
/// reading a request, and closes it ([`answer_and_close`]).
async fn too_many<S>(mut tcp: S, limit: usize)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let error = format!("this client address holds {limit} connections to the server already, the most one may (`tare serve --max-connections-per-client`): close some, or wait for them to finish");
    answer_and_close(
        &mut tcp,
        "429 Too Many Requests",
        "retry-after: 1\r\nx-content-type-options: nosniff\r\n",
        &error,
    )
    .await;
}

/// Writes one plain-HTTP answer with `{"error": error}` as its JSON body and `Connection:
/// close`, reads and drops what the client sent for up to a second (closing a socket with
/// unread data would reset the connection under the answer), and closes it. `headers` are
/// extra header lines, each ending in CRLF.
async fn answer_and_close<S>(tcp: &mut S, status: &str, headers: &str, error: &str)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = serde_json::json!({ "error": error }).to_string();
    let answer = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        tcp.write_all(answer.as_bytes()).await?;
        tcp.shutdown().await?;
        let mut buf = [0u8; 4096];
        let mut seen = 0;
        while seen < 64 << 10 {
            match tcp.read(&mut buf).await? {
                0 => break,
                n => seen += n,
            }
        }
        std::io::Result::Ok(())
    })
    .await;
}

/// Whether a connection to a TLS port begins with a TLS handshake record (0x16); a client
/// that speaks plain HTTP there is answered 400 in plain HTTP and closed (never left waiting
/// for a handshake). None: nothing arrived within `timeout`.
async fn starts_tls(tcp: &mut tokio::net::TcpStream, timeout: Duration) -> Option<bool> {
    let mut first = [0u8; 1];
    let n = tokio::time::timeout(timeout, tcp.peek(&mut first))
        .await
        .ok()?
        .ok()?;
    if n == 1 && first[0] == 0x16 {
        return Some(true);
    }
    let error = "this server speaks HTTPS (tare serve --tls-cert): use an https:// URL";
    answer_and_close(tcp, "400 Bad Request", "", error).await;
    Some(false)
}

/// The TLS session of a new connection, its handshake within `timeout`; None (the connection
/// closed) when it speaks plain HTTP, or its handshake fails or is late.
async fn handshake(
    mut tcp: tokio::net::TcpStream,
    tls: &tokio_rustls::TlsAcceptor,
    timeout: Duration,
) -> Option<tokio_rustls::server::TlsStream<tokio::net::TcpStream>> {
    let deadline = tokio::time::Instant::now() + timeout;
    if !starts_tls(&mut tcp, timeout).await? {
        return None;
    }
    tokio::time::timeout_at(deadline, tls.accept(tcp))
        .await
        .ok()?
        .ok()
}

/// Serves one connection with HTTP/1 (keep-alive), its request heads within `timeout` each,
/// until it closes or the server stops (then gracefully: the request in progress finishes).
async fn connection<S>(
    tcp: S,
    slot: Slot,
    router: Router,
    timeout: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let _slot = slot;
    let io = hyper_util::rt::TokioIo::new(tcp);
    let svc = hyper_util::service::TowerToHyperService::new(router);
    let mut b = hyper::server::conn::http1::Builder::new();
    b.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(timeout)
        .keep_alive(true);
    let conn = b.serve_connection(io, svc);
    let mut conn = std::pin::pin!(conn);
    let mut stopping = false;
    loop {
        tokio::select! {
            _ = conn.as_mut() => break,
            r = stop.changed(), if !stopping => {
                stopping = true;
                if r.is_ok() {
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// Serves until SIGINT or SIGTERM. Prints `listening on http://ADDR` (with the port the
/// system chose for `:0`) on standard error once the socket is bound. `readers`: connections
/// to the same store that only read (see [`READERS`]).
pub fn serve(store: Store, readers: Vec<Store>, o: Options) -> anyhow::Result<()> {
    let mut secret = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut secret);
    let location = store.location.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&o.listen).await.map_err(|e| {
            crate::error::usage(format!(
                "--listen {}: cannot listen there ({e}); give a free HOST:PORT, e.g. 127.0.0.1:8330",
                o.listen
            ))
        })?;
        let addr = listener.local_addr()?;
        let app = Arc::new(App {
            store: Mutex::new(store),
            readers: readers.into_iter().map(Mutex::new).collect(),
            next_reader: Default::default(),
            request_timeout: o.request_timeout,
            read_token_required: o.read_token_required,
            csrf: secret.iter().map(|b| format!("{b:02x}")).collect(),
            max_body: o.max_body,
            hosts: allowed_hosts(&o.listen, addr, &o.allowed_hosts)?,
            default_port: if o.tls.is_some() { 443 } else { 80 },
            webhook: o.webhook.clone(),
        });
        let tls = o.tls.clone().map(tokio_rustls::TlsAcceptor::from);
        eprintln!(
            "tare serve: listening on {}://{addr} (store {location}{})",
            if tls.is_some() { "https" } else { "http" },
            if o.read_token_required {
                "; reads need a token"
            } else {
                ""
            }
        );
        let router = router(app);
        let slots = Slots::new(o.max_connections_per_client.max(1));
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| anyhow::anyhow!("cannot handle SIGTERM: {e}"))?;
        loop {
            let (tcp, peer) = tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
                r = listener.accept() => match r {
                    Ok(x) => x,
                    Err(_) => {
                        // Out of file descriptors, or a connection reset before it was
                        // accepted: wait a moment and go on.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let _ = tcp.set_nodelay(true);
            let (limit, timeout) = (o.max_connections_per_client, o.request_timeout);
            match (slots.take(peer.ip()), tls.clone()) {
                (Some(slot), None) => {
                    tokio::spawn(connection(tcp, slot, router.clone(), timeout, stop_rx.clone()));
                }
                (None, None) => {
                    tokio::spawn(too_many(tcp, limit));
                }
                (Some(slot), Some(tls)) => {
                    let (router, stop) = (router.clone(), stop_rx.clone());
                    tokio::spawn(async move {
                        // The slot is held from the first byte: handshakes count too.
                        if let Some(s) = handshake(tcp, &tls, timeout).await {
                            connection(s, slot, router, timeout, stop).await;
                        }
                    });
                }
                (None, Some(tls)) => {
                    // The 429 goes over TLS, its handshake within a second.
                    tokio::spawn(async move {
                        if let Some(s) = handshake(tcp, &tls, Duration::from_secs(1)).await {
                            too_many(s, limit).await;
                        }
                    });
                }
            }
        }
        drop(listener);
        drop(stop_rx);
        let _ = stop_tx.send(true);
        // The requests in progress finish; idle connections close at once.
        let _ = tokio::time::timeout(o.request_timeout, stop_tx.closed()).await;
        eprintln!("tare serve: stopped");
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_per_address_and_given_back() {
        let slots = Slots::new(2);
        let (a, b): (std::net::IpAddr, std::net::IpAddr) =
            ("127.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let one = slots.take(a).unwrap();
        let two = slots.take(a).unwrap();
        assert!(slots.take(a).is_none(), "a third connection of one address");
        let other = slots.take(b);
        assert!(other.is_some(), "another address has its own");
        drop(one);
        let three = slots.take(a);
        assert!(three.is_some(), "a slot given back is taken again");
        drop((two, three, other));
        assert!(slots.open.lock().unwrap().is_empty());
    }
}
