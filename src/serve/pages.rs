//! The dashboard: server-rendered HTML with no external request (the SVG trend plots of
//! `report::history` are in the page; its styles and the few lines of script for the alert
//! buttons are served at `/assets/`, as the content policy allows no inline script or style).
//! Every text from the store is escaped. Pages take their state from query parameters, so a
//! URL can be pasted into a review:
//!
//! * `/?q=TEXT&metric=M&branch=B&page=N` — the series with their newest value and alert state
//!   (by default each benchmark's alerting metric, else its wall time), paged; the open
//!   alerts; a form to compare two commits;
//! * `/series/B/M/MC` — one series: the benchmark's other metrics, the trend chart of
//!   `report::history` (fitted unit, commits on the x axis, change points and alerts marked),
//!   its alerts, runs per commit, the machine's record;
//! * `/alerts?status=S` — alerts with acknowledge / dismiss / mark fixed buttons;
//! * `/compare?old=A&new=B[&machine=ID]` — the verdicts of `tare compare` for two commits.
//!
//! The buttons POST to `/api/v1/alerts/ID` with the page's secret in `X-Tare-CSRF` (see
//! `auth`). With `--read-token-required`, `?token=TOKEN` on any page sets the read cookie.

use super::api::{self, CompareQuery, ListQuery};
use super::{auth, with_reader, ApiError, App};
use crate::report::history::{self as view, value, SeriesView, CSS};
use crate::report::html::svg::esc;
use crate::store::{detect, overview, Store};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;
use std::fmt::Write;
use std::sync::Arc;

const PAGE_CSS: &str = r#"
nav a{margin-right:14px}form.inline{display:inline}input,select,button{font:inherit;padding:3px 6px}
button.act{margin:0 2px;cursor:pointer}.pager a{margin:0 4px}pre.machine{background:#f6f8fa;padding:8px;overflow:auto;max-height:320px}
.err{color:#c92a2a;font-weight:700}td.v-slower{color:#c92a2a}td.v-faster{color:#2b8a3e}
a.st-regression{color:#c92a2a;font-weight:700}a.st-improvement{color:#2b8a3e;font-weight:700}
p.metrics a{margin-right:10px}p.metrics a.here{font-weight:700;color:inherit;text-decoration:none}
"#;

const SCRIPT: &str = r#"
document.addEventListener('click', async (ev) => {
  const b = ev.target.closest('button.act');
  if (!b) return;
  const meta = document.querySelector('meta[name="tare-csrf"]');
  const csrf = meta ? meta.content : '';
  const row = b.closest('tr');
  const r = await fetch('/api/v1/alerts/' + b.dataset.id, {
    method: 'POST', credentials: 'same-origin',
    headers: {'Content-Type': 'application/json', 'X-Tare-CSRF': csrf},
    body: JSON.stringify({status: b.dataset.status}),
  });
  const cell = row.querySelector('td.status');
  if (r.ok) {
    const a = (await r.json()).alert;
    cell.textContent = a.status;
    cell.className = 'status s-' + a.status;
    row.querySelector('td.note').textContent = a.note;
  } else {
    let msg = r.status + '';
    try { msg = (await r.json()).error; } catch (e) { /* not JSON */ }
    cell.textContent = 'failed: ' + msg;
    cell.className = 'status err';
  }
});
"#;

/// The page's stylesheet, served at `/assets/tare.css` (the content policy allows no inline
/// style element).
pub async fn css(_: Query<api::NoQuery>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        format!("{CSS}{PAGE_CSS}"),
    )
        .into_response()
}

/// The alert buttons' script, served at `/assets/tare.js` (no inline script either).
pub async fn script(_: Query<api::NoQuery>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        SCRIPT,
    )
        .into_response()
}

/// A page; `csrf` (the alert buttons' secret) only in the pages of a reader who may see them.
fn page(csrf: Option<&str>, title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">{}<link rel=\"icon\" href=\"data:,\"><title>{}</title><link rel=\"stylesheet\" href=\"/assets/tare.css\"></head><body><main><nav><a href=\"/\">series</a><a href=\"/alerts\">alerts</a><a href=\"/compare\">compare</a></nav><h1>{}</h1>{body}<p class=\"muted\">tare {} · <a href=\"/api/v1/series\">JSON</a></p></main><script src=\"/assets/tare.js\"></script></body></html>\n",
        csrf.map(|c| format!("<meta name=\"tare-csrf\" content=\"{}\">", esc(c)))
            .unwrap_or_default(),
        esc(title),
        esc(title),
        env!("CARGO_PKG_VERSION")
    )
}

/// A page's answer: HTML, or the error as a small page with its status (without the secret).
fn answer(app: &App, r: Result<(String, String, Option<String>), ApiError>) -> Response {
    match r {
        Ok((title, body, cookie)) => {
            let mut resp = Html(page(Some(&app.csrf), &title, &body)).into_response();
            if let Some(c) = cookie.and_then(|c| c.parse().ok()) {
                resp.headers_mut().insert(header::SET_COOKIE, c);
            }
            resp
        }
        Err(e) => (
            e.status,
            Html(page(
                None,
                &format!("{}", e.status),
                &format!("<p class=\"err\">{}</p>", esc(&e.message)),
            )),
        )
            .into_response(),
    }
}

/// Reads allowed for a page; the cookie to set when `?token=` carried a valid token.
fn page_auth(
    st: &mut Store,
    h: &HeaderMap,
    required: bool,
    token: Option<&str>,
) -> Result<Option<String>, ApiError> {
    if let (true, Some(t)) = (required, token) {
        return auth::login_cookie(st, t).map(Some);
    }
    auth::read(st, h, required).map(|_| None)
}

fn alerts_rows(o: &mut String, alerts: &[(detect::Alert, String)]) {
    o.push_str("<table id=\"alerts\"><thead><tr><th>#</th><th>series</th><th>change at</th><th>ratio (interval)</th><th>p</th><th>status</th><th>note</th><th>actions</th></tr></thead><tbody>");
    if alerts.is_empty() {
        o.push_str("<tr><td colspan=\"8\" class=\"muted\">no alerts</td></tr>");
    }
    for (a, label) in alerts {
        let _ = write!(
            o,
            "<tr id=\"alert-{}\"><td>{}</td><td><a href=\"/series/{}/{}/{}\">{}</a></td><td><code>{}</code></td><td class=\"num\">{} {}</td><td class=\"num\">{}</td><td class=\"status s-{}\">{}</td><td class=\"note\">{}</td><td>",
            a.id,
            a.id,
            a.benchmark_id,
            a.metric_id,
            a.machine_id,
            esc(label),
            esc(&a.commit_key.chars().take(10).collect::<String>()),
            esc(&view::alert_ratio(a)),
            esc(&a.kind),
            esc(&crate::units::format_p(a.p_value)),
            esc(&a.status),
            esc(&a.status),
            esc(&a.note)
        );
        for (status, words) in [
            ("acknowledged", "Acknowledge"),
            ("dismissed", "Dismiss"),
            ("fixed", "Mark fixed"),
        ] {
            let _ = write!(
                o,
                "<button class=\"act\" data-id=\"{}\" data-status=\"{status}\">{words}</button>",
                a.id
            );
        }
        o.push_str("</td></tr>");
    }
    o.push_str("</tbody></table>");
}

/// Alerts with the label of their series; the open ones (`statuses` is `detect::OPEN`) are
/// `detect::open_alerts`, as every view lists them.
fn labelled(st: &mut Store, statuses: &[&str]) -> Result<Vec<(detect::Alert, String)>, ApiError> {
    let list = if statuses == detect::OPEN {
        detect::open_alerts(&mut st.db)?
    } else {
        detect::alerts(&mut st.db, statuses)?
    };
    Ok(crate::store::overview::with_series(&mut st.db, list)?
        .into_iter()
        .map(|(a, s)| {
            let label = view::alert_series(&a, s.as_ref());
            (a, label)
        })
        .collect())
}

fn url_escape(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

fn compare_form(o: &mut String, st: &mut Store, q: &CompareQuery) -> Result<(), ApiError> {
    let commits = overview::recent_commits(&mut st.db, 200)?;
    o.push_str("<form id=\"compare-form\" action=\"/compare\" method=\"get\">");
    for (name, chosen, default) in [
        ("old", q.old.as_deref(), commits.get(1)),
        ("new", q.new.as_deref(), commits.first()),
    ] {
        let _ = write!(o, "<label>{name} <select name=\"{name}\">");
        for (h, subject, t) in &commits {
            let sel = match chosen {
                Some(c) => h.starts_with(c),
                None => default.is_some_and(|d| &d.0 == h),
            };
            let _ = write!(
                o,
                "<option value=\"{}\"{}>{} {} {}</option>",
                esc(h),
                if sel { " selected" } else { "" },
                esc(&h.chars().take(10).collect::<String>()),
                esc(&view::date(*t)),
                esc(&subject.chars().take(60).collect::<String>())
            );
        }
        o.push_str("</select></label> ");
    }
    o.push_str("<button type=\"submit\">Compare</button></form>");
    Ok(())
}

/// A series' alert state in the list: its open alerts (regressions first, then the newest),
/// or "none" with the closed ones counted.
fn state_cell(l: &overview::Latest, open: &[(detect::Alert, String)]) -> (String, String) {
    let key = (
        l.series.benchmark_id,
        l.series.metric_id,
        l.series.machine_id,
    );
    let mut mine: Vec<&detect::Alert> = open
        .iter()
        .map(|(a, _)| a)
        .filter(|a| (a.benchmark_id, a.metric_id, a.machine_id) == key)
        .collect();
    // Regressions first, the newest of each kind first.
    mine.sort_by_key(|a| (a.kind != "regression", std::cmp::Reverse(a.id)));
    let closed = l.alerts[2] + l.alerts[3];
    let Some(a) = mine.first() else {
        let more = if closed > 0 {
            format!(" <span class=\"muted\">({closed} closed)</span>")
        } else {
            String::new()
        };
        return (
            "none".into(),
            format!("<span class=\"muted\">none</span>{more}"),
        );
    };
    let state = if a.kind == "regression" {
        "regression"
    } else {
        "improvement"
    };
    (
        state.into(),
        format!(
            "<a class=\"state st-{state}\" href=\"/series/{}/{}/{}\">open {state} {} at <code>{}</code></a> <span class=\"s-{}\">#{} {}</span>{}",
            a.benchmark_id,
            a.metric_id,
            a.machine_id,
            esc(&format!("{:.3}×", a.ratio)),
            esc(&a.commit_key.chars().take(7).collect::<String>()),
            esc(&a.status),
            a.id,
            esc(&a.status),
            if mine.len() > 1 {
                format!(" <span class=\"muted\">+{} more</span>", mine.len() - 1)
            } else {
                String::new()
            }
        ),
    )
}

pub async fn index(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> Response {
    let a2 = app.clone();
    let r = with_reader(&app, move |st| {
        let cookie = page_auth(st, &headers, a2.read_token_required, q.token.as_deref())?;
        // By default each benchmark's alerting metric, else its wall time.
        let mut q = q;
        let metric = q.metric.get_or_insert_with(|| api::AUTO.into()).clone();
        let branch = q.branch.clone().unwrap_or_default();
        let (rows, total) = api::list(st, &q)?;
        let per = q.per_page.unwrap_or(api::PER_PAGE).clamp(1, 1000);
        let page_no = q.page.unwrap_or(1).max(1);
        let pages = total.div_ceil(per).max(1);
        let needle = q.q.clone().unwrap_or_default();
        let open = labelled(st, detect::OPEN)?;
        let mut o = String::new();
        let _ = write!(
            o,
            "<form id=\"search\" method=\"get\" action=\"/\"><input type=\"search\" name=\"q\" placeholder=\"benchmark, machine or command\" value=\"{}\"> <label>metric <select name=\"metric\">",
            esc(&needle)
        );
        let _ = write!(
            o,
            "<option value=\"{}\"{}>alerting, else wall_time</option>",
            api::AUTO,
            if metric == api::AUTO { " selected" } else { "" }
        );
        for m in crate::store::ingest::METRICS.iter().chain(&["all"]) {
            let _ = write!(
                o,
                "<option{}>{m}</option>",
                if *m == metric { " selected" } else { "" }
            );
        }
        o.push_str("</select></label> <label>branch <select name=\"branch\"><option value=\"\">every branch</option>");
        for b in overview::branches(&mut st.db)? {
            let _ = write!(
                o,
                "<option value=\"{}\"{}>{}</option>",
                esc(&b),
                if b == branch { " selected" } else { "" },
                esc(&b)
            );
        }
        let _ = write!(
            o,
            "</select></label> <button type=\"submit\">Filter</button></form><p class=\"muted\" id=\"count\">{total} series{} · page {page_no} of {pages}</p>",
            if branch.is_empty() {
                String::new()
            } else {
                format!(" with values on {}", esc(&branch))
            }
        );
        o.push_str("<table id=\"series\"><thead><tr><th>benchmark</th><th>metric</th><th>machine</th><th>newest value (95% CI)</th><th>at commit</th><th>alert state</th></tr></thead><tbody>");
        if rows.is_empty() {
            o.push_str("<tr><td colspan=\"6\" class=\"muted\">no series: upload results (`tare history add --server URL FILE`)</td></tr>");
        }
        for l in &rows {
            let s = &l.series;
            let (state, cell) = state_cell(l, &open);
            let _ = write!(
                o,
                "<tr class=\"series\" data-state=\"{state}\" data-metric=\"{}\"><td><a href=\"/series/{}/{}/{}\">{}</a></td><td>{}</td><td>{}</td><td class=\"num\">{} ({} – {})</td><td><code>{}</code></td><td class=\"state\">{cell}</td></tr>",
                esc(&s.metric),
                s.benchmark_id,
                s.metric_id,
                s.machine_id,
                esc(&s.label()),
                esc(&s.metric),
                esc(&s.hostname),
                esc(&value(&s.unit, l.median)),
                esc(&value(&s.unit, l.ci_low)),
                esc(&value(&s.unit, l.ci_high)),
                esc(&l.commit.as_deref().unwrap_or("–").chars().take(10).collect::<String>()),
            );
        }
        o.push_str("</tbody></table><p class=\"pager\">");
        for p in 1..=pages.min(200) {
            if p == page_no {
                let _ = write!(o, "<b>{p}</b> ");
            } else {
                let _ = write!(
                    o,
                    "<a href=\"/?q={}&amp;metric={}&amp;branch={}&amp;page={p}\">{p}</a>",
                    esc(&url_escape(&needle)),
                    esc(&url_escape(&metric)),
                    esc(&url_escape(&branch))
                );
            }
        }
        o.push_str("</p><h2>Open alerts</h2>");
        alerts_rows(&mut o, &open);
        o.push_str("<h2>Compare two commits</h2>");
        compare_form(&mut o, st, &CompareQuery::default())?;
        Ok(("tare · history".to_string(), o, cookie))
    })
    .await;
    answer(&app, r)
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SeriesQuery {
    last: Option<usize>,
    token: Option<String>,
}

pub async fn series(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path((b, m, mc)): Path<(i64, i64, i64)>,
    Query(q): Query<SeriesQuery>,
) -> Response {
    let a2 = app.clone();
    let r = with_reader(&app, move |st| {
        let cookie = page_auth(st, &headers, a2.read_token_required, q.token.as_deref())?;
        let (v, newest): (SeriesView, Option<String>) =
            api::series_view(st, (b, m, mc), q.last.unwrap_or(api::WINDOW))?;
        let s = &v.series;
        let mut o = String::new();
        let _ = write!(
            o,
            "<p class=\"muted\"><code>{}</code> · {} · {} ({}) · {}</p>",
            esc(&s.command),
            esc(&s.metric),
            esc(&s.hostname),
            esc(&s.fingerprint),
            esc(&crate::units::plural(v.points.len(), "commit"))
        );
        // The benchmark's other metrics on this machine, each with its alert state.
        let open = detect::open_alerts(&mut st.db)?;
        let _ = write!(o, "<p class=\"metrics\">metrics:");
        for l in overview::benchmark_on(&mut st.db, s.benchmark_id, s.machine_id)? {
            let m = &l.series;
            let kinds: Vec<&str> = open
                .iter()
                .filter(|a| {
                    (a.benchmark_id, a.metric_id, a.machine_id)
                        == (m.benchmark_id, m.metric_id, m.machine_id)
                })
                .map(|a| a.kind.as_str())
                .collect();
            let state = if kinds.contains(&"regression") {
                " <span class=\"s-new\">(open regression)</span>"
            } else if kinds.is_empty() {
                ""
            } else {
                " <span class=\"s-fixed\">(open improvement)</span>"
            };
            let _ = write!(
                o,
                " <a{} href=\"/series/{}/{}/{}\">{}</a>{state}",
                if m.metric_id == s.metric_id { " class=\"here\"" } else { "" },
                m.benchmark_id,
                m.metric_id,
                m.machine_id,
                esc(&m.metric)
            );
        }
        o.push_str("</p>");
        o.push_str(&view::trend_svg(&v, 0));
        // The judgment of the newest commit, as `tare history show` prints it.
        if let Some(line) = &newest {
            let _ = write!(o, "<p class=\"tip-note\" id=\"newest\">{}</p>", esc(line));
        }
        for c in &v.changes {
            let _ = write!(
                o,
                "<p class=\"cp-note\">◆ change at <a href=\"#p-0-{}\"><code>{}</code></a>: {} {:.3}× (95% CI {:.3}–{:.3}), p = {}{}</p>",
                c.index,
                esc(&c.after_key.chars().take(10).collect::<String>()),
                esc(&c.kind),
                c.ratio.estimate,
                c.ratio.low,
                c.ratio.high,
                esc(&crate::units::format_p(c.p_value)),
                esc(&c.machine_change.as_ref().map(|m| format!(" — machine changed: {m} (annotated, not alarmed)")).unwrap_or_default())
            );
        }
        o.push_str("<h2>Alerts</h2>");
        let label = format!("{} · {} · {}", s.label(), s.metric, s.hostname);
        let list: Vec<(detect::Alert, String)> = v.alerts.iter().map(|a| (a.clone(), label.clone())).collect();
        alerts_rows(&mut o, &list);
        o.push_str("<h2>Runs per commit</h2><table class=\"points\"><thead><tr><th>commit</th><th>subject</th><th>date</th><th>median</th><th>95% CI</th><th>runs</th><th>sessions</th><th></th></tr></thead><tbody>");
        for (i, p) in v.points.iter().enumerate().rev() {
            let prev = i.checked_sub(1).and_then(|k| v.points[k].commit.clone());
            let _ = write!(
                o,
                "<tr id=\"p-0-{i}\"><td><code>{}</code>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{} – {}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
                esc(&p.short()),
                if p.dirty { " (dirty)" } else { "" },
                esc(p.subject.as_deref().unwrap_or("")),
                esc(&view::date(p.time)),
                esc(&value(&s.unit, p.value)),
                esc(&value(&s.unit, p.ci_low)),
                esc(&value(&s.unit, p.ci_high)),
                p.n,
                esc(&p.sessions.iter().map(|x| x.started_at.clone()).collect::<Vec<_>>().join(", ")),
                match (&prev, &p.commit) {
                    (Some(a), Some(b)) if !p.dirty => format!(
                        "<a class=\"cmp\" href=\"/compare?old={}&amp;new={}&amp;machine={}\">vs previous</a>",
                        esc(&url_escape(a)),
                        esc(&url_escape(b)),
                        s.machine_id
                    ),
                    _ => String::new(),
                }
            );
        }
        o.push_str("</tbody></table><h2>Machine</h2>");
        if let Some((fp, host, inventory)) = overview::machine(&mut st.db, s.machine_id)? {
            let pretty = serde_json::from_str::<serde_json::Value>(&inventory)
                .ok()
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .unwrap_or(inventory);
            let _ = write!(
                o,
                "<p>{} <code>{}</code></p><pre class=\"machine\">{}</pre>",
                esc(&host),
                esc(&fp),
                esc(&pretty)
            );
        }
        Ok((label, o, cookie))
    })
    .await;
    answer(&app, r)
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AlertsPageQuery {
    status: Option<String>,
    token: Option<String>,
}

pub async fn alerts(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(q): Query<AlertsPageQuery>,
) -> Response {
    let a2 = app.clone();
    let r = with_reader(&app, move |st| {
        let cookie = page_auth(st, &headers, a2.read_token_required, q.token.as_deref())?;
        let which = api::statuses(q.status.as_deref())?;
        let mut o = String::from("<p>");
        for s in ["open", "all", "new", "acknowledged", "dismissed", "fixed"] {
            let _ = write!(o, "<a href=\"/alerts?status={s}\">{s}</a> ");
        }
        o.push_str("</p>");
        let list = labelled(st, &which)?;
        alerts_rows(&mut o, &list);
        Ok((
            format!("alerts · {}", q.status.as_deref().unwrap_or("open")),
            o,
            cookie,
        ))
    })
    .await;
    answer(&app, r)
}

pub async fn compare(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(q): Query<CompareQuery>,
) -> Response {
    let a2 = app.clone();
    let r = with_reader(&app, move |st| {
        let cookie = page_auth(st, &headers, a2.read_token_required, q.token.as_deref())?;
        let mut o = String::new();
        compare_form(&mut o, st, &q)?;
        if q.old.is_none() || q.new.is_none() {
            return Ok(("compare two commits".to_string(), o, cookie));
        }
        let v = match api::comparison(st, &q) {
            Ok(v) => v,
            Err(e) if e.status != StatusCode::INTERNAL_SERVER_ERROR => {
                let _ = write!(o, "<p class=\"err\" id=\"compare-error\">{}</p>", esc(&e.message));
                return Ok(("compare two commits".to_string(), o, cookie));
            }
            Err(e) => return Err(e),
        };
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        let count = v["metric"].as_str() != Some("time");
        let fmt = |x: &serde_json::Value| match x.as_f64() {
            Some(x) if count => crate::units::format_count(x),
            Some(x) => crate::units::format_time(x, None),
            None => "–".into(),
        };
        let _ = write!(
            o,
            "<p>old <code>{}</code> → new <code>{}</code> on machine {}</p><p class=\"muted\">model: {}</p>",
            esc(&s("old")),
            esc(&s("new")),
            v["machine"],
            esc(&s("model"))
        );
        for line in v["sessions"].as_array().into_iter().flatten() {
            let _ = write!(o, "<p class=\"muted\">sessions: {}</p>", esc(line.as_str().unwrap_or("")));
        }
        o.push_str("<table id=\"comparison\"><thead><tr><th>benchmark</th><th>old mean</th><th>new mean</th><th>change</th><th>CI (level in the verdict)</th><th>p (adj.)</th><th>verdict</th></tr></thead><tbody>");
        for c in v["comparisons"].as_array().into_iter().flatten() {
            let ratio = c["ratio"].as_f64().unwrap_or(f64::NAN);
            let ci = c["ci"]
                .as_array()
                .map(|a| {
                    format!(
                        "{:+.2}% … {:+.2}%",
                        (a[0].as_f64().unwrap_or(f64::NAN) - 1.0) * 100.0,
                        (a[1].as_f64().unwrap_or(f64::NAN) - 1.0) * 100.0
                    )
                })
                .unwrap_or_else(|| "—".into());
            let verdict = c["verdict"].as_str().unwrap_or("");
            let _ = write!(
                o,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:+.2}%</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"verdict v-{}\">{}</td></tr>",
                esc(c["benchmark"].as_str().unwrap_or("")),
                esc(&fmt(&c["old_mean"])),
                esc(&fmt(&c["new_mean"])),
                (ratio - 1.0) * 100.0,
                esc(&ci),
                esc(&c["p_adjusted"].as_f64().map(crate::units::format_p).unwrap_or_else(|| "—".into())),
                esc(verdict),
                esc(c["words"].as_str().unwrap_or(""))
            );
        }
        o.push_str("</tbody></table>");
        if let Some(g) = v["geometric_mean"].as_object() {
            let _ = write!(
                o,
                "<p>geometric mean of the ratios: {:.3}×</p>",
                g.get("ratio").and_then(|r| r.as_f64()).unwrap_or(f64::NAN)
            );
        }
        for m in v["missing"].as_array().into_iter().flatten() {
            let _ = write!(o, "<p class=\"muted\">not compared: {}</p>", esc(m.as_str().unwrap_or("")));
        }
        Ok(("compare two commits".to_string(), o, cookie))
    })
    .await;
    answer(&app, r)
}
