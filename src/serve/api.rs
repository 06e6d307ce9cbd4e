//! The JSON API under `/api/v1/` (docs/server.md has each endpoint with a curl example):
//!
//! * `POST results` — a results file (`tare run --export-json`), or `{"sessions": [...]}`,
//!   stored in one transaction (all or nothing); `?commit=H&branch=B` as `history add` has them;
//! * `GET series` (paged, `?metric=&q=&page=`), `GET series/B/M/MC` (trend, change points, alerts);
//! * `GET alerts`, `POST alerts/ID` (`{"status": "acknowledged"}`), `POST check` (detection,
//!   as `tare history check`);
//! * `GET compare?old=A&new=B[&machine=ID]` — the verdicts of `tare compare`.
//!
//! A query parameter an endpoint does not take is refused with 400 naming it (each query struct
//! denies unknown fields; `super::as_json_error` words the error), never ignored. The open
//! alerts are `store::detect::open_alerts`, as every view of the CLI lists them.
//!
//! Errors are `{"error": "one line"}` (also those of a path, query or method the router refuses,
//! made JSON in `super::as_json_error`) with 400 (not JSON), 401 (token), 403 (CSRF), 404, 413
//! (too large), 422 (JSON, but not what was expected) or 500.

use super::{auth, with_reader, with_store, ApiError, App};
use crate::report::history::SeriesView;
use crate::results::model::Session;
use crate::store::detect::{self, Alert, DetectSettings};
use crate::store::git::CommitInfo;
use crate::store::{ingest, judge, load, overview, query, Store};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

type Res = Result<Response, ApiError>;

/// Sessions of an upload body: one results file, or `{"sessions": [...]}`. The body is parsed
/// once and each session taken out of it (no copy); a refused one is described from its text.
pub fn parse_upload(bytes: &[u8]) -> Result<Vec<Session>, ApiError> {
    // `{"benchmarks":[0,0,…` is refused before it is parsed into (many times its size of) values.
    crate::results::input::JsonShape::default()
        .feed(bytes)
        .map_err(|why| {
            ApiError::unprocessable(format!(
                "the body is not tare results: {why}; send a results file written by `tare run --export-json`, or {{\"sessions\": [...]}}"
            ))
        })?;
    let v: Value = serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad(format!(
            "the body is not JSON ({e}): send a results file written by `tare run --export-json`, or {{\"sessions\": [...]}}"
        ))
    })?;
    let (items, many) = match v {
        Value::Object(mut m) if m.contains_key("sessions") => match m.remove("sessions") {
            Some(Value::Array(a)) => (a, true),
            _ => {
                return Err(ApiError::unprocessable(
                    "\"sessions\" must be an array of results (sessions written by `tare run --export-json`)",
                ))
            }
        },
        v => (vec![v], false),
    };
    if items.is_empty() {
        return Err(ApiError::unprocessable(
            "the upload holds no session: send at least one results file",
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let which = if many {
            format!("session {} of the upload", i + 1)
        } else {
            "the upload".to_string()
        };
        if item.get("type").is_some() {
            return Err(ApiError::unprocessable(format!(
                "{which} is a journal line, not results: finish it with `tare recover` and upload the results file"
            )));
        }
        let what = |item: &Value| crate::results::read::what_is(item.to_string().as_bytes());
        let s: Session = match Session::deserialize(&item) {
            Ok(s) => s,
            Err(e) => {
                return Err(ApiError::unprocessable(format!(
                    "{which} is not a tare results file: it is {} ({e}); upload files written by `tare run --export-json` (`tare import` converts other harnesses' files)",
                    what(&item)
                )))
            }
        };
        crate::results::read::check_session(&s)
            .map_err(|e| ApiError::unprocessable(format!("{which}: {e}")))?;
        out.push(s);
    }
    Ok(out)
}

/// The query of an endpoint that takes no parameter: any one is refused (400 naming it).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct NoQuery {}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct UploadQuery {
    commit: Option<String>,
    branch: Option<String>,
}

fn check_rev(what: &str, v: &str) -> Result<(), ApiError> {
    crate::store::git::check_rev(what, v).map_err(ApiError::bad)
}

/// Stores the sessions of an upload in one transaction; what was added.
pub fn store_upload(
    st: &mut Store,
    sessions: &[Session],
    commit: Option<&CommitInfo>,
    branch: Option<&str>,
    source: &str,
) -> Result<Value, ApiError> {
    // A branch alone names the branch of the commits the files recorded.
    let recorded: Vec<Option<CommitInfo>> = sessions
        .iter()
        .map(|s| {
            commit.cloned().or_else(|| {
                ingest::recorded_commit(s).map(|mut c| {
                    if let Some(b) = branch {
                        c.branch = Some(b.to_string());
                    }
                    c
                })
            })
        })
        .collect();
    // Every session is checked before anything is written (the commit of `extra.git` as
    // `?commit=` is).
    for (k, (s, c)) in sessions.iter().zip(&recorded).enumerate() {
        ingest::check(s, c.as_ref()).map_err(|e| {
            ApiError::unprocessable(if sessions.len() > 1 {
                format!("session {} of the upload: {e}", k + 1)
            } else {
                format!("the upload: {e}")
            })
        })?;
    }
    let items: Vec<(&Session, Option<&CommitInfo>, Option<&str>)> = sessions
        .iter()
        .zip(&recorded)
        .map(|(s, c)| (s, c.as_ref(), Some(source)))
        .collect();
    let done = ingest::add_sessions(&mut st.db, &items, &mut ingest::Cache::default())
        .map_err(|e| ApiError::internal(e.context("nothing was stored")))?;
    let added: Vec<i64> = done
        .iter()
        .filter(|a| a.added)
        .map(|a| a.session_id)
        .collect();
    Ok(json!({
        "added": added.len(),
        "already_stored": done.len() - added.len(),
        "runs": done.iter().map(|a| a.runs).sum::<usize>(),
        "session_ids": done.iter().map(|a| a.session_id).collect::<Vec<_>>(),
        "commits": recorded.iter().map(|c| c.as_ref().map(|c| c.hash.clone())).collect::<Vec<_>>(),
    }))
}

/// What a refused request's body is drained of (read and dropped) after the answer.
const DRAIN: usize = 1 << 20;

/// A request refused from its headers: the answer goes out at once; the first [`DRAIN`] bytes
/// of its body are read and dropped behind it (none kept), so that a client that writes its
/// whole body before reading (most do) reads the answer instead of a connection reset under
/// a small body. A larger body is not read further: the connection closes.
fn refused(e: ApiError, body: axum::body::Body) -> ApiError {
    tokio::spawn(async move {
        use axum::body::HttpBody;
        let mut body = std::pin::pin!(body);
        let mut seen = 0;
        while seen < DRAIN {
            match std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
                Some(Ok(f)) => seen += f.data_ref().map_or(0, |d| d.len()),
                _ => break,
            }
        }
    });
    e
}

/// The body of a request, up to `max` bytes (`too_large` past them).
async fn read_body(
    body: axum::body::Body,
    max: usize,
    too_large: impl Fn() -> ApiError,
) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, max).await.map_err(|e| {
        // A body without a declared length that runs past the limit.
        let mut chain = e.to_string();
        if let Some(s) = std::error::Error::source(&e) {
            chain.push_str(&s.to_string());
        }
        if chain.contains("length limit exceeded") {
            too_large()
        } else if chain.contains("--request-timeout") {
            let why = std::error::Error::source(&e)
                .map(|s| s.to_string())
                .filter(|s| s.contains("--request-timeout"))
                .unwrap_or_else(|| e.to_string());
            ApiError::new(StatusCode::REQUEST_TIMEOUT, why)
        } else {
            ApiError::bad(format!("cannot read the body ({e}): send it again"))
        }
    })
}

pub async fn upload(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(q): Query<UploadQuery>,
    body: axum::body::Body,
) -> Res {
    let max = app.max_body;
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the upload is larger than this server takes ({max} bytes, `tare serve --max-upload`): split it into several uploads"),
        )
    };
    // The token is checked from the headers before a byte of the body is read: a request
    // without a live token costs the server no memory for its body (a client that sends
    // `Expect: 100-continue`, as curl does for large bodies, is answered before it sends it).
    // A declared size over the limit is refused before the body is read too.
    let h = headers.clone();
    let who = match with_reader(&app, move |st| auth::write(st, &h)).await {
        Ok(who) => who,
        Err(e) => return Err(refused(e, body)),
    };
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let body = read_body(body, max, too_large).await?;
    let out = with_store(&app, move |st| {
        let sessions = parse_upload(&body)?;
        let commit = match &q.commit {
            Some(h) => {
                check_rev("commit", h)?;
                Some(CommitInfo {
                    hash: h.clone(),
                    branch: q.branch.clone(),
                    ..Default::default()
                })
            }
            None => None,
        };
        if let Some(b) = &q.branch {
            check_rev("branch", b)?;
        }
        let out = store_upload(
            st,
            &sessions,
            commit.as_ref(),
            q.branch.as_deref(),
            &format!("upload by token {who}"),
        )?;
        Ok(out)
    })
    .await?;
    let added = out["added"].as_u64() > Some(0);
    if added {
        if let Some(url) = &app.webhook {
            check_for_webhook(app.clone(), url.clone());
        }
    }
    let status = if added {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(out)).into_response())
}

/// `tare serve --webhook`: after an upload that added sessions, the store is checked as
/// `POST /api/v1/check` does with its defaults, on a thread of its own (the upload is answered
/// first), and each new alert POSTed ([`super::webhook::spawn`]). A failure is logged.
fn check_for_webhook(app: Arc<App>, url: String) {
    let spawned = std::thread::Builder::new()
        .name("tare-upload-check".into())
        .spawn(move || {
            let fresh = {
                let mut st = app.store.lock().unwrap_or_else(|e| e.into_inner());
                let sel = judge::Selection {
                    metric: "default",
                    benchmark: None,
                    settings: DetectSettings::default(),
                    window: WINDOW,
                    thresholds: None,
                };
                match judge::analyse(&mut st, &sel, true, None) {
                    Ok((judged, new)) => judged
                        .iter()
                        .flat_map(|j| {
                            j.alerts
                                .iter()
                                .filter(|a| new.contains(&a.id))
                                .map(|a| (a.clone(), j.series.clone()))
                        })
                        .collect(),
                    Err(e) => {
                        eprintln!("tare serve: warning: the check after an upload failed: {e:#}; no alert was posted to {url}");
                        return;
                    }
                }
            };
            super::webhook::spawn(url, fresh);
        });
    if let Err(e) = spawned {
        eprintln!("tare serve: warning: cannot start the check after an upload ({e})");
    }
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    pub metric: Option<String>,
    pub branch: Option<String>,
    pub q: Option<String>,
    pub page: Option<usize>,
    pub per_page: Option<usize>,
    /// Pages only (it sets the read cookie): the API's [`SeriesListQuery`] has none.
    pub token: Option<String>,
}

/// `GET series`'s query: the first page's without `token` (the API takes its token in the
/// `Authorization` header, so a `?token=` there is refused, not ignored).
#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub struct SeriesListQuery {
    pub metric: Option<String>,
    pub branch: Option<String>,
    pub q: Option<String>,
    pub page: Option<usize>,
    pub per_page: Option<usize>,
}

impl From<SeriesListQuery> for ListQuery {
    fn from(q: SeriesListQuery) -> ListQuery {
        ListQuery {
            metric: q.metric,
            branch: q.branch,
            q: q.q,
            page: q.page,
            per_page: q.per_page,
            token: None,
        }
    }
}

pub const PER_PAGE: usize = 50;

/// The metric a `?metric=` names: one stored in the store (a counted event too), `all`, or
/// (with `default`) `default`, wall time and the counted events as `tare history check` takes
/// them; None: all.
fn metric_of<'a>(st: &mut Store, m: &'a str, default: bool) -> Result<Option<&'a str>, ApiError> {
    let also: &[&str] = if default {
        &["all", "default"]
    } else {
        &["all"]
    };
    match judge::unknown_metric(st, m, also)? {
        None => Ok((m != "all").then_some(m)),
        Some(known) => Err(ApiError::bad(format!(
            "metric '{m}': give one of {}{} or all",
            known.join(", "),
            if default { ", default" } else { ", auto" }
        ))),
    }
}

/// `?metric=auto` (the first page's default): per benchmark and machine the metrics with an
/// open alert, else wall time (`overview::alerting_first`).
pub const AUTO: &str = "auto";

/// The series list the first page and `GET series` show: filtered (metric, `auto` too;
/// branch; search), one page of it, and the number of matching series.
pub fn list(st: &mut Store, q: &ListQuery) -> Result<(Vec<overview::Latest>, usize), ApiError> {
    let m = q.metric.as_deref().unwrap_or("wall_time");
    let auto = m == AUTO;
    let metric = if auto { None } else { metric_of(st, m, false)? };
    let branch = q.branch.as_deref().filter(|b| !b.is_empty());
    let all = if auto {
        let open = detect::open_alerts(&mut st.db)?;
        overview::alerting_latest(&mut st.db, branch, &open)?
    } else {
        overview::latest_on(&mut st.db, metric, branch)?
    };
    let needle = q.q.as_deref().unwrap_or("").to_lowercase();
    let matching: Vec<overview::Latest> = all
        .into_iter()
        .filter(|l| {
            needle.is_empty()
                || l.series.label().to_lowercase().contains(&needle)
                || l.series.hostname.to_lowercase().contains(&needle)
                || l.series.command.to_lowercase().contains(&needle)
        })
        .collect();
    let total = matching.len();
    let per = q.per_page.unwrap_or(PER_PAGE).clamp(1, 1000);
    let page = q.page.unwrap_or(1).max(1);
    Ok((
        matching
            .into_iter()
            .skip((page - 1) * per)
            .take(per)
            .collect(),
        total,
    ))
}

fn finite(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

pub async fn series_list(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(q): Query<SeriesListQuery>,
) -> Res {
    let q = ListQuery::from(q);
    let required = app.read_token_required;
    with_reader(&app, move |st| {
        auth::read(st, &headers, required)?;
        let (rows, total) = list(st, &q)?;
        let per = q.per_page.unwrap_or(PER_PAGE).clamp(1, 1000);
        Ok(Json(json!({
            "total": total,
            "page": q.page.unwrap_or(1).max(1),
            "pages": total.div_ceil(per),
            "series": rows.iter().map(|l| {
                let s = &l.series;
                json!({
                    "id": format!("{}/{}/{}", s.benchmark_id, s.metric_id, s.machine_id),
                    "benchmark": s.benchmark,
                    "label": s.label(),
                    "parameters": serde_json::from_str::<Value>(&s.parameters).unwrap_or(Value::Null),
                    "metric": s.metric,
                    "unit": s.unit,
                    "machine": {"id": s.machine_id, "hostname": s.hostname, "fingerprint": s.fingerprint},
                    "latest": {"commit": l.commit, "started_at": l.started_at, "median": finite(l.median), "ci": [finite(l.ci_low), finite(l.ci_high)]},
                    "alerts": {"new": l.alerts[0], "acknowledged": l.alerts[1], "dismissed": l.alerts[2], "fixed": l.alerts[3]},
                })
            }).collect::<Vec<_>>(),
        }))
        .into_response())
    })
    .await
}

/// Commits of the trend looked at, and of change-point detection (as `tare history show`).
pub const WINDOW: usize = detect::WINDOW;

/// One series with its trend (the newest `last` commits), change points and alerts, and the
/// judgment of its newest commit. Detection runs over the newest [`WINDOW`] commits with the
/// default settings, as `tare history show` does, whatever `last` shows of them.
pub fn series_view(
    st: &mut Store,
    ids: (i64, i64, i64),
    last: usize,
) -> Result<(SeriesView, Option<String>), ApiError> {
    let s = overview::series_by_ids(&mut st.db, ids.0, ids.1, ids.2)?.ok_or_else(|| {
        ApiError::not_found(format!(
            "no series {}/{}/{} in the store: pick one from the first page or GET /api/v1/series",
            ids.0, ids.1, ids.2
        ))
    })?;
    let settings = DetectSettings::default();
    let mut points = query::trend(&mut st.db, &s, Some(WINDOW.max(last).max(2)))?;
    let detected = points.len().saturating_sub(WINDOW);
    let changes = detect::changes(&points[detected..], &s, &settings);
    let tip = detect::tip(&points[detected..], &s, &changes, &settings);
    // Indices into the points shown: the newest `last` (detection's indices are into the
    // newest WINDOW).
    let cut = points.len().saturating_sub(last.max(2));
    let shift = |i: usize| (i + detected).saturating_sub(cut);
    let changes = changes
        .into_iter()
        .filter(|c| c.index + detected >= cut)
        .map(|mut c| {
            (c.index, c.from, c.to) = (shift(c.index), shift(c.from), shift(c.to));
            c
        })
        .collect();
    let alerts = detect::series_alerts(&mut st.db, &s)?;
    // The newest commit's line is made before the points are cut (its alert is matched
    // among the points of its baseline).
    let tip = tip.map(|t| crate::report::history::tip_line(&t, &points[detected..], &alerts));
    points.drain(..cut);
    Ok((
        SeriesView {
            series: s,
            points,
            changes,
            alerts,
            interfered: Default::default(),
        },
        tip,
    ))
}

pub fn alert_json(a: &Alert) -> Value {
    json!({
        "id": a.id,
        "series": format!("{}/{}/{}", a.benchmark_id, a.metric_id, a.machine_id),
        "commit": a.commit_key,
        "before": a.before_key,
        "kind": a.kind,
        "ratio": finite(a.ratio),
        "ci": [finite(a.ratio_low), finite(a.ratio_high)],
        "interval": a.interval_name(),
        "p_value": finite(a.p_value),
        "status": a.status,
        "note": a.note,
        "created_at": a.created_at,
        "updated_at": a.updated_at,
    })
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SeriesQuery {
    last: Option<usize>,
}

pub async fn series_one(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path((b, m, mc)): Path<(i64, i64, i64)>,
    Query(q): Query<SeriesQuery>,
) -> Res {
    let required = app.read_token_required;
    with_reader(&app, move |st| {
        auth::read(st, &headers, required)?;
        let (v, tip) = series_view(st, (b, m, mc), q.last.unwrap_or(WINDOW))?;
        let s = &v.series;
        Ok(Json(json!({
            "benchmark": s.benchmark,
            "label": s.label(),
            "command": s.command,
            "metric": s.metric,
            "unit": s.unit,
            "direction": s.direction,
            "machine": {"id": s.machine_id, "hostname": s.hostname, "fingerprint": s.fingerprint},
            "points": v.points.iter().map(|p| json!({
                "key": p.key,
                "commit": p.commit,
                "subject": p.subject,
                "branch": p.branch,
                "dirty": p.dirty,
                "time": p.time,
                "median": finite(p.value),
                "ci": [finite(p.ci_low), finite(p.ci_high)],
                "runs": p.n,
                "sessions": p.sessions.len(),
            })).collect::<Vec<_>>(),
            "changes": v.changes.iter().map(|c| json!({
                "index": c.index,
                "commit": c.after_key,
                "before": c.before_key,
                "kind": c.kind,
                "ratio": finite(c.ratio.estimate),
                "ci": [finite(c.ratio.low), finite(c.ratio.high)],
                "p_value": finite(c.p_value),
                "alerted": c.alerted,
                "machine_change": c.machine_change,
            })).collect::<Vec<_>>(),
            "alerts": v.alerts.iter().map(alert_json).collect::<Vec<_>>(),
            "newest": tip,
        }))
        .into_response())
    })
    .await
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AlertsQuery {
    pub status: Option<String>,
}

/// The statuses a `?status=` names: `open` (default: new and acknowledged), `all`, or one.
pub fn statuses(s: Option<&str>) -> Result<Vec<&'static str>, ApiError> {
    match s.unwrap_or("open") {
        "open" => Ok(detect::OPEN.to_vec()),
        "all" => Ok(vec![]),
        one => detect::STATUSES
            .iter()
            .find(|x| **x == one)
            .map(|x| vec![*x])
            .ok_or_else(|| {
                ApiError::bad(format!(
                    "status '{one}': give open, all, new, acknowledged, dismissed or fixed"
                ))
            }),
    }
}

pub async fn alerts(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(q): Query<AlertsQuery>,
) -> Res {
    let required = app.read_token_required;
    with_reader(&app, move |st| {
        auth::read(st, &headers, required)?;
        let which = statuses(q.status.as_deref())?;
        let list = if which == detect::OPEN {
            detect::open_alerts(&mut st.db)?
        } else {
            detect::alerts(&mut st.db, &which)?
        };
        let list = crate::store::overview::with_series(&mut st.db, list)?;
        Ok(
            Json(json!({"alerts": list.iter().map(|(a, s)| listed_json(a, s.as_ref())).collect::<Vec<_>>()}))
                .into_response(),
        )
    })
    .await
}

/// An alert with its series' benchmark, metric and machine (`GET alerts`).
pub fn listed_json(a: &Alert, s: Option<&query::Series>) -> Value {
    let mut v = alert_json(a);
    if let Some(s) = s {
        v["benchmark"] = json!(s.label());
        v["metric"] = json!(s.metric);
        v["machine"] = json!({"id": s.machine_id, "hostname": s.hostname});
    }
    v
}

/// Largest body of an alert action (a status and a note).
const ACTION_BODY: usize = 64 << 10;

#[derive(Deserialize)]
pub struct AlertAction {
    status: String,
    note: Option<String>,
}

pub async fn alert_action(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    _: Query<NoQuery>,
    body: axum::body::Body,
) -> Res {
    let (required, csrf) = (app.read_token_required, app.csrf.clone());
    // Who asks is checked from the headers before the body is read.
    let h = headers.clone();
    let who = match with_reader(&app, move |st| auth::action(st, &h, required, &csrf)).await {
        Ok(who) => who,
        Err(e) => return Err(refused(e, body)),
    };
    let body = read_body(body, ACTION_BODY, || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("an alert action's body is at most {ACTION_BODY} bytes: send {{\"status\": \"acknowledged\", \"note\": \"why\"}} with a shorter note"),
        )
    })
    .await?;
    with_store(&app, move |st| {
        let a: AlertAction = serde_json::from_slice(&body).map_err(|e| {
            ApiError::unprocessable(format!(
                "give {{\"status\": \"acknowledged\" | \"dismissed\" | \"fixed\" | \"new\", \"note\": \"why\"}} ({e})"
            ))
        })?;
        let status = match a.status.as_str() {
            "ack" | "acknowledge" | "acknowledged" => "acknowledged",
            "dismiss" | "dismissed" => "dismissed",
            "fix" | "fixed" => "fixed",
            "new" | "reopen" => "new",
            other => {
                return Err(ApiError::unprocessable(format!(
                    "status '{other}': give acknowledged, dismissed, fixed or new"
                )))
            }
        };
        let note = a
            .note
            .filter(|n| !n.trim().is_empty())
            .map(|n| format!("{} (by {who})", n.chars().take(500).collect::<String>()))
            .unwrap_or_else(|| format!("{status} by {who}"));
        if !detect::set_status(&mut st.db, id, status, Some(&note), &crate::store::now())? {
            return Err(ApiError::not_found(format!("there is no alert #{id}")));
        }
        let a = detect::alerts(&mut st.db, &[])?
            .into_iter()
            .find(|a| a.id == id);
        Ok(Json(json!({"alert": a.as_ref().map(alert_json)})).into_response())
    })
    .await
}

/// `POST check`'s query: `tare history check`'s options by the same names (`min_effect`,
/// `tip_baseline`, `baseline_branch`, …). A parameter it does not take is refused (400), never
/// ignored; the body, when not empty, is the thresholds file's text (`.tare/thresholds.toml`).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CheckQuery {
    metric: Option<String>,
    benchmark: Option<String>,
    alpha: Option<f64>,
    permutations: Option<usize>,
    min_size: Option<usize>,
    min_effect: Option<String>,
    window: Option<usize>,
    tip_baseline: Option<usize>,
    interfered: Option<String>,
    commit: Option<String>,
    baseline_branch: Option<String>,
}

/// Largest thresholds file `POST check` takes.
const THRESHOLDS_MAX: usize = 1 << 20;

/// `tare history check` over the store, through its code (`store::judge`): change points
/// found, alerts brought up to date, the newest commit (or `commit`, against
/// `baseline_branch`'s history from the parent links the store holds) judged; the new alerts,
/// the verdict (`exit`: the CLI's exit code) and each series' judgment that the CLI prints.
/// New alerts go to `tare serve --webhook`.
pub async fn check(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(q): Query<CheckQuery>,
    body: axum::body::Body,
) -> Res {
    let h = headers.clone();
    if let Err(e) = with_reader(&app, move |st| auth::write(st, &h)).await {
        return Err(refused(e, body));
    }
    let body = read_body(body, THRESHOLDS_MAX, || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the thresholds file is larger than {THRESHOLDS_MAX} bytes"),
        )
    })
    .await?;
    let webhook = app.webhook.clone();
    let (out, fresh) = with_store(&app, move |st| {
        auth::write(st, &headers)?;
        let d = judge::Params::default();
        let params = judge::Params {
            alpha: q.alpha.unwrap_or(d.alpha),
            permutations: q.permutations.unwrap_or(d.permutations),
            min_size: q.min_size.unwrap_or(d.min_size),
            min_effect: q.min_effect.clone().unwrap_or(d.min_effect),
            window: q.window.unwrap_or(d.window),
            tip_baseline: q.tip_baseline.unwrap_or(d.tip_baseline),
            interfered: q.interfered.clone().unwrap_or(d.interfered),
        };
        let settings = params.settings("").map_err(ApiError::bad)?;
        let thresholds = if body.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            let text = std::str::from_utf8(&body).map_err(|_| {
                ApiError::bad("the body: not UTF-8 text; send the thresholds file (TOML)")
            })?;
            Some(
                crate::store::thresholds::Thresholds::parse(
                    std::path::Path::new("the thresholds of the body"),
                    text,
                )
                .map_err(ApiError::unprocessable)?,
            )
        };
        // The series `tare history check` takes by default: wall time and the counted events.
        let metric = q.metric.clone().unwrap_or_else(|| "default".into());
        if let Some(e) = judge::metric_error(st, &metric, "metric")? {
            return Err(ApiError::bad(e));
        }
        let scope = match (&q.commit, &q.baseline_branch) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err(ApiError::bad(
                    "baseline_branch without commit: name the commit judged (commit=HASH)",
                ))
            }
            (Some(c), b) => {
                check_rev("commit", c)?;
                let b = b.as_deref().unwrap_or("main");
                check_rev("baseline_branch", b)?;
                Some(judge::Scope::from_store(st, c, b)?.map_err(ApiError::unprocessable)?)
            }
        };
        let sel = judge::Selection {
            metric: &metric,
            benchmark: q.benchmark.as_deref(),
            settings,
            window: params.window,
            thresholds: thresholds.as_ref(),
        };
        let (judged, new) = judge::analyse(st, &sel, true, scope.as_ref())?;
        let seen: Vec<judge::Seen> = judged.iter().map(judge::Judged::seen).collect();
        let v = judge::verdict(&seen, &new, scope.as_ref());
        let mut fresh = Vec::new();
        let mut new_alerts = Vec::new();
        for j in &judged {
            for a in j.alerts.iter().filter(|a| new.contains(&a.id)) {
                new_alerts.push(listed_json(a, Some(&j.series)));
                fresh.push((a.clone(), j.series.clone()));
            }
        }
        let said: Vec<Value> = v
            .said
            .iter()
            .filter_map(|&i| {
                let j = &judged[i];
                let t = j.tip.as_ref()?;
                Some(json!({
                    "benchmark": j.series.label(),
                    "metric": j.series.metric,
                    "machine": j.series.hostname,
                    "commit": t.key,
                    "regression": t.regression,
                    "line": crate::report::history::tip_line(t, &j.points, &j.alerts),
                }))
            })
            .collect();
        let out = json!({
            "new_alerts": new_alerts,
            "scope": scope.as_ref().map(|sc| sc.words(false)),
            "judged": v.judged,
            "regressions": v.failing,
            "accepted": v.accepted,
            "judgments": said,
            "exit": v.code,
        });
        Ok((out, fresh))
    })
    .await?;
    if let Some(url) = webhook {
        super::webhook::spawn(url, fresh);
    }
    Ok(Json(out).into_response())
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub struct CompareQuery {
    pub old: Option<String>,
    pub new: Option<String>,
    pub machine: Option<i64>,
    pub metric: Option<String>,
    pub token: Option<String>,
}

/// `GET compare`'s query: the page's without `token` (see [`SeriesListQuery`]).
#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub struct ApiCompareQuery {
    pub old: Option<String>,
    pub new: Option<String>,
    pub machine: Option<i64>,
    pub metric: Option<String>,
}

impl From<ApiCompareQuery> for CompareQuery {
    fn from(q: ApiCompareQuery) -> CompareQuery {
        CompareQuery {
            old: q.old,
            new: q.new,
            machine: q.machine,
            metric: q.metric,
            token: None,
        }
    }
}

/// What comparing two stored commits gives: the `tare compare --export-json` object, with the
/// commits and machine.
pub fn comparison(st: &mut Store, q: &CompareQuery) -> Result<Value, ApiError> {
    let (Some(old), Some(new)) = (q.old.as_deref(), q.new.as_deref()) else {
        return Err(ApiError::bad(
            "give both commits: ?old=HASH&new=HASH (a hash or its first characters)",
        ));
    };
    let old = load::resolve_commit(&mut st.db, old)
        .map_err(|e| ApiError::unprocessable(format!("old: {e:#}")))?;
    let new = load::resolve_commit(&mut st.db, new)
        .map_err(|e| ApiError::unprocessable(format!("new: {e:#}")))?;
    let machine = match q.machine {
        Some(m) => m,
        None => {
            let a = overview::machines_at(&mut st.db, &old)?;
            let b = overview::machines_at(&mut st.db, &new)?;
            let both: Vec<&(i64, String)> =
                a.iter().filter(|x| b.iter().any(|y| y.0 == x.0)).collect();
            match both.as_slice() {
                [one] => one.0,
                [] => {
                    return Err(ApiError::unprocessable(
                        "the two commits were not measured on one machine: a comparison needs the same machine on both sides",
                    ))
                }
                many => {
                    return Err(ApiError::unprocessable(format!(
                        "both commits were measured on several machines: add &machine=ID ({})",
                        many.iter().map(|(id, h)| format!("{id} = {h}")).collect::<Vec<_>>().join(", ")
                    )))
                }
            }
        }
    };
    let side = |st: &mut Store, hash: &str| -> Result<crate::conclude::sides::Side, ApiError> {
        Ok(crate::conclude::sides::Side {
            label: format!("commit {}", &hash[..10.min(hash.len())]),
            sessions: load::sessions_at(&mut st.db, hash, Some(machine))?,
        })
    };
    let (a, b) = (side(st, &old)?, side(st, &new)?);
    for (s, h) in [(&a, &old), (&b, &new)] {
        if s.sessions.is_empty() {
            return Err(ApiError::unprocessable(format!(
                "commit {h} has no clean session on machine {machine}"
            )));
        }
    }
    let metric = q.metric.clone().unwrap_or_else(|| "time".into());
    let settings = load::compare_settings();
    let cn = crate::conclude::sides::compare(&a, &b, &metric, &settings, true)
        .map_err(|e| ApiError::unprocessable(format!("{e:#}")))?;
    let rows = crate::report::comparison::rows(&cn, None);
    let cx = crate::report::comparison::Context {
        model: &cn.model,
        sessions: &cn.session_lines,
        geomean: cn.geomean,
        fail_if_slower: None,
        alpha: settings.alpha,
        missing: &cn.missing,
        metric: &metric,
        count: cn.is_count,
    };
    let mut v = crate::report::comparison::json(&rows, &cx);
    v["old"] = json!(old);
    v["new"] = json!(new);
    v["machine"] = json!(machine);
    v["missing"] = json!(cn.missing);
    v["notes"] = json!(cn.notes);
    v["verdicts"] = json!(cn
        .records
        .iter()
        .map(|c| c.words.clone())
        .collect::<Vec<_>>());
    Ok(v)
}

pub async fn compare(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(q): Query<ApiCompareQuery>,
) -> Res {
    let q = CompareQuery::from(q);
    let required = app.read_token_required;
    with_reader(&app, move |st| {
        auth::read(st, &headers, required)?;
        Ok(Json(comparison(st, &q)?).into_response())
    })
    .await
}

/// The name of the request's write token: a client checks its token before a run.
pub async fn whoami(State(app): State<Arc<App>>, headers: HeaderMap, _: Query<NoQuery>) -> Res {
    with_reader(&app, move |st| {
        let name = auth::write(st, &headers)?;
        Ok(Json(json!({ "token": name })).into_response())
    })
    .await
}
