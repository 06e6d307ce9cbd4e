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
}

/// Serving options.
pub struct Options {
    pub listen: String,
    pub read_token_required: bool,
    pub max_body: usize,
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
        .with_state(app)
}

/// Serves until SIGINT or SIGTERM. Prints `listening on http://ADDR` (with the port the
/// system chose for `:0`) on standard error once the socket is bound.
pub fn serve(store: Store, o: Options) -> anyhow::Result<()> {
    let mut secret = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut secret);
    let location = store.location.clone();
    let app = Arc::new(App {
        store: Mutex::new(store),
        read_token_required: o.read_token_required,
        csrf: secret.iter().map(|b| format!("{b:02x}")).collect(),
        max_body: o.max_body,
    });
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
