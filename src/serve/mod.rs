//! `tare serve`: one process serving a history store to a team — a JSON API under `/api/v1/`
//! (uploads with tokens, series, alerts, comparisons of two commits) and the dashboard pages.
//!
//! * [`auth`] — bearer tokens, the read-token cookie, the page's anti-CSRF secret;
//! * [`api`] — the JSON endpoints;
//! * [`client`] — uploads from `tare history add --server` and `tare run --store URL`;
//! * [`pages`] — the server-rendered dashboard.
//!
//! axum on tokio serves; the store stays synchronous: one connection behind a mutex, used from
//! `spawn_blocking`, so requests that touch the store run one at a time (an upload is one
//! transaction; SQLite allows one writer anyway). Not for: statistics (`conclude`, `store`).

pub mod api;
pub mod auth;
pub mod client;
pub mod pages;

use crate::store::Store;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::sync::{Arc, Mutex};

/// What every request shares.
pub struct App {
    pub store: Mutex<Store>,
    /// Reads need a valid token too (`--read-token-required`).
    pub read_token_required: bool,
    /// The per-process secret the pages send back in `X-Tare-CSRF` with alert actions.
    pub csrf: String,
    /// Largest request body, in bytes.
    pub max_body: usize,
    /// The names a request's `Host` (and a state-changing request's `Origin`) may carry.
    pub hosts: Vec<Allowed>,
}

/// Serving options.
pub struct Options {
    pub listen: String,
    pub read_token_required: bool,
    pub max_body: usize,
    /// `--allowed-host`: names (`NAME` any port, `NAME:PORT` that port) besides the defaults.
    pub allowed_hosts: Vec<String>,
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
/// host without a port is on port 80.
pub fn host_allowed(hosts: &[Allowed], host: &str) -> bool {
    let Some((name, port)) = split_host(host) else {
        return false;
    };
    let port = port.unwrap_or(80);
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
        Some(h) if !host_allowed(&app.hosts, &h) => Some(ApiError::new(
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
        let host = o
            .strip_prefix("http://")
            .or_else(|| o.strip_prefix("https://"))
            .unwrap_or("");
        (changes && !host_allowed(&app.hosts, host)).then(|| {
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

/// Runs `f` on the store in a blocking thread, one request at a time.
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
        .layer(axum::middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// Serves until SIGINT or SIGTERM. Prints `listening on http://ADDR` (with the port the
/// system chose for `:0`) on standard error once the socket is bound.
pub fn serve(store: Store, o: Options) -> anyhow::Result<()> {
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
            read_token_required: o.read_token_required,
            csrf: secret.iter().map(|b| format!("{b:02x}")).collect(),
            max_body: o.max_body,
            hosts: allowed_hosts(&o.listen, addr, &o.allowed_hosts)?,
        });
        eprintln!(
            "tare serve: listening on http://{addr} (store {location}{})",
            if o.read_token_required {
                "; reads need a token"
            } else {
                ""
            }
        );
        axum::serve(listener, router(app))
            .with_graceful_shutdown(async {
                let mut term =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                        .expect("SIGTERM handler");
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            })
            .await?;
        eprintln!("tare serve: stopped");
        Ok(())
    })
}
