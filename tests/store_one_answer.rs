//! One answer everywhere (issue 42): every view of a history store lists the same open alerts —
//! `tare history show`, `check` (terminal and its Markdown summary), `alerts`, `report`
//! (Markdown and HTML), and `tare serve`'s `GET /api/v1/alerts` and dashboard — whatever
//! metric the view selects. The store is filled with `tare history add` of synthetic results
//! files (deterministic values, no measuring): a step in wall time at commit 4, one in CPU time
//! at commit 8, and a step in wall time at the newest commit (12) that the judgment of the
//! newest commit raises (its interval is not a 95% CI); one alert is acknowledged (still open).
//! A query parameter the server does not take is refused with 400 naming it.

mod common;
#[path = "serve_support/mod.rs"]
mod serve_support;
mod store_support;

use serde_json::Value;
use serve_support::{get, post, Server};
use std::collections::BTreeSet;
use std::path::Path;
use store_support::*;

use common::tare_in as tare;

use common::text;

fn history(d: &Path, args: &[&str]) -> (Option<i32>, String) {
    let o = tare(d, &[&["history", "--store", "h.sqlite"], args].concat());
    (o.status.code(), text(&o))
}

fn short(i: usize) -> String {
    hash(i)[..10].to_string()
}

/// Commit `i` with wall time stepping up 20% at commit 4 (and 30% more at 12) and CPU time 25%
/// at commit 8, each with a deterministic noise of about 0.5%.
fn add(d: &Path, i: usize) {
    let wall = match i {
        0..=3 => 1.0,
        4..=11 => 1.2,
        _ => 1.56,
    };
    let cpu = if i < 8 { 1.0 } else { 1.25 };
    let s = session_scaled(&fixture(), i, wall * noise(i), cpu * noise(i + 100));
    let name = format!("r{i:02}.json");
    std::fs::write(d.join(&name), serde_json::to_vec(&s).unwrap()).unwrap();
    let (code, t) = history(d, &["add", &name, "--commit", &hash(i)]);
    assert_eq!(code, Some(0), "{t}");
}

/// (id, benchmark, metric, commit) of an alert.
type Key = (i64, String, String, String);

/// The open alerts a text view prints one a line ("#3 new sleep 0.01 · cpu_time · host:
/// regression at 1a2b3c4d5e …").
fn lines_of(t: &str) -> BTreeSet<Key> {
    let mut out = BTreeSet::new();
    for l in t.lines().map(str::trim_start) {
        let Some(rest) = l.strip_prefix('#') else {
            continue;
        };
        let Some((id, rest)) = rest.split_once(' ') else {
            continue;
        };
        let Ok(id) = id.parse::<i64>() else { continue };
        let Some(rest) = rest
            .strip_prefix("new ")
            .or_else(|| rest.strip_prefix("acknowledged "))
        else {
            continue;
        };
        let (series, what) = rest.split_once(": ").unwrap();
        let parts: Vec<&str> = series.split(" · ").collect();
        let commit = what.split(" at ").nth(1).unwrap()[..10].to_string();
        out.insert((id, parts[0].into(), parts[1].into(), commit));
    }
    out
}

/// The open alerts of a Markdown summary's table ("| #3 | sleep 0.01 | cpu_time | host |
/// `1a2b3c4d5e` | …").
fn rows_of(md: &str) -> BTreeSet<Key> {
    md.lines()
        .filter_map(|l| l.strip_prefix("| #"))
        .map(|r| {
            let c: Vec<&str> = r.split(" | ").collect();
            (
                c[0].parse().unwrap(),
                c[1].to_string(),
                c[2].to_string(),
                c[4].trim_matches('`').to_string(),
            )
        })
        .collect()
}

/// The `<tr id="alert-N">` rows of a page, by id.
fn html_rows(page: &str) -> Vec<(i64, String)> {
    page.split("<tr id=\"alert-")
        .skip(1)
        .map(|r| {
            let (id, rest) = r.split_once('"').unwrap();
            (
                id.parse().unwrap(),
                rest.split("</tr>").next().unwrap().to_string(),
            )
        })
        .collect()
}

fn ids(keys: &BTreeSet<Key>) -> BTreeSet<i64> {
    keys.iter().map(|k| k.0).collect()
}

#[test]
fn every_view_lists_the_same_open_alerts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..13 {
        add(d, i);
    }
    let (code, t) = history(d, &["check", "--metric", "all"]);
    assert_eq!(code, Some(1), "{t}");

    // The reference: the store's open alerts as the server's API gives them.
    let store = d.join("h.sqlite").to_string_lossy().into_owned();
    let srv = Server::start(&store, &[]);
    let (code, v) = get(&srv.at("/api/v1/alerts"));
    assert_eq!(code, 200, "{v}");
    let api: Vec<Value> = v["alerts"].as_array().unwrap().clone();
    let key = |a: &Value| -> Key {
        (
            a["id"].as_i64().unwrap(),
            a["benchmark"].as_str().unwrap().into(),
            a["metric"].as_str().unwrap().into(),
            a["commit"].as_str().unwrap()[..10].into(),
        )
    };
    let find = |metric: &str, commit: usize| {
        api.iter()
            .find(|a| {
                a["benchmark"] == "sleep 0.01"
                    && a["metric"] == metric
                    && a["commit"].as_str().unwrap().starts_with(&short(commit))
            })
            .unwrap_or_else(|| panic!("no {metric} alert at commit {commit}: {v}"))
            .clone()
    };
    let wall = find("wall_time", 4);
    let cpu = find("cpu_time", 8);
    let newest = find("wall_time", 12);
    assert_eq!(wall["interval"], "95% CI", "{wall}");
    assert_eq!(cpu["interval"], "95% CI", "{cpu}");
    assert_eq!(newest["interval"], "98% interval", "{newest}");
    // One acknowledged: open still.
    let wall_id = wall["id"].as_i64().unwrap();
    let (code, t) = history(d, &["alert", &wall_id.to_string(), "acknowledged"]);
    assert_eq!(code, Some(0), "{t}");
    let (code, v) = get(&srv.at("/api/v1/alerts"));
    assert_eq!(code, 200, "{v}");
    let api: Vec<Value> = v["alerts"].as_array().unwrap().clone();
    let reference: BTreeSet<Key> = api.iter().map(key).collect();
    assert!(
        api.iter()
            .any(|a| a["id"] == wall_id && a["status"] == "acknowledged"),
        "{v}"
    );
    assert!(
        api.iter()
            .all(|a| a["status"] == "new" || a["status"] == "acknowledged"),
        "{v}"
    );
    assert!(reference.len() >= 3, "{reference:?}");

    // `history alerts`.
    let (code, t) = history(d, &["alerts"]);
    assert_eq!(code, Some(0), "{t}");
    assert_eq!(lines_of(&t), reference, "history alerts:\n{t}");
    // `history show`, wall time only by default: every open alert all the same.
    let (code, t) = history(d, &["show"]);
    assert_eq!(code, Some(0), "{t}");
    assert_eq!(lines_of(&t), reference, "history show:\n{t}");
    // `history check` (wall time by default) and its summary: the CPU-time alerts too.
    let (code, t) = history(d, &["check", "--export-markdown", "summary.md"]);
    assert_eq!(code, Some(0), "{t}");
    assert_eq!(lines_of(&t), reference, "history check:\n{t}");
    let md = std::fs::read_to_string(d.join("summary.md")).unwrap();
    assert!(!md.contains("No open alerts"), "{md}");
    assert_eq!(rows_of(&md), reference, "check's summary:\n{md}");
    assert!(
        md.contains(&format!("**{} open alert(s)**", reference.len())),
        "{md}"
    );
    // The summary names each alert's own interval.
    let row = md
        .lines()
        .find(|l| l.starts_with(&format!("| #{} |", newest["id"])))
        .unwrap();
    assert!(row.contains("98% interval"), "{row}");
    // Checking only CPU time leaves the wall-time alerts listed.
    let (code, t) = history(
        d,
        &[
            "check",
            "--metric",
            "cpu_time",
            "--export-markdown",
            "cpu.md",
        ],
    );
    assert_eq!(code, Some(0), "{t}");
    let md = std::fs::read_to_string(d.join("cpu.md")).unwrap();
    assert_eq!(rows_of(&md), reference, "check --metric cpu_time:\n{md}");
    // `history report`: Markdown and HTML.
    let (code, t) = history(
        d,
        &[
            "report",
            "--export-markdown",
            "report.md",
            "--export-html",
            "report.html",
        ],
    );
    assert_eq!(code, Some(0), "{t}");
    let md = std::fs::read_to_string(d.join("report.md")).unwrap();
    assert_eq!(rows_of(&md), reference, "report Markdown:\n{md}");
    let html = std::fs::read_to_string(d.join("report.html")).unwrap();
    assert!(
        !html.contains("ratio (95% CI)"),
        "the header names no one interval"
    );
    let rows = html_rows(&html);
    assert_eq!(
        rows.iter().map(|r| r.0).collect::<BTreeSet<_>>(),
        ids(&reference),
        "report HTML"
    );
    for (id, b, m, c) in &reference {
        let row = &rows.iter().find(|r| r.0 == *id).unwrap().1;
        assert!(
            row.contains(b.as_str())
                && row.contains(&format!("<td>{m}</td>"))
                && row.contains(c.as_str()),
            "{row}"
        );
    }

    // The dashboard's first page (wall time by default) lists every open alert, each row with
    // its own interval.
    let (code, page) = get(&srv.at("/"));
    assert_eq!(code, 200);
    let page = page.as_str().unwrap().to_string();
    assert!(!page.contains("ratio (95% CI)"), "{page}");
    let open = page.split("<h2>Open alerts</h2>").nth(1).unwrap();
    let rows = html_rows(open);
    assert_eq!(
        rows.iter().map(|r| r.0).collect::<BTreeSet<_>>(),
        ids(&reference),
        "dashboard"
    );
    for (id, b, m, c) in &reference {
        let row = &rows.iter().find(|r| r.0 == *id).unwrap().1;
        assert!(
            row.contains(&format!("{b} · {m} · ")) && row.contains(c.as_str()),
            "{row}"
        );
        let interval = &api.iter().find(|a| a["id"] == *id).unwrap()["interval"];
        assert!(row.contains(interval.as_str().unwrap()), "{row}");
    }
    let row = &rows.iter().find(|r| r.0 == newest["id"]).unwrap().1;
    assert!(row.contains("98% interval"), "{row}");
    // The series page says what `history show` says of the newest commit.
    let series = newest["series"].as_str().unwrap();
    let (code, page) = get(&srv.at(&format!("/series/{series}")));
    assert_eq!(code, 200);
    let page = page.as_str().unwrap().to_string();
    let line = page
        .split("<p class=\"tip-note\" id=\"newest\">")
        .nth(1)
        .and_then(|r| r.split("</p>").next())
        .unwrap_or_else(|| panic!("no newest-commit line: {page}"));
    assert!(
        line.starts_with(&format!("newest commit {}: regression", short(12)))
            && line.contains(&format!("— alert #{} new", newest["id"])),
        "{line}"
    );
    let line = line
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    let (_, shown) = history(d, &["show"]);
    assert!(shown.contains(&line), "{line}\n{shown}");
    // And its API.
    let (code, v) = get(&srv.at(&format!("/api/v1/series/{series}")));
    assert_eq!(code, 200);
    assert_eq!(v["newest"].as_str(), Some(line.as_str()), "{v}");
}

#[test]
fn a_parameter_the_server_does_not_take_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..3 {
        add(d, i);
    }
    let store = d.join("h.sqlite").to_string_lossy().into_owned();
    let token = serve_support::new_token(&store, "ci");
    let srv = Server::start(&store, &[]);
    for path in [
        "/api/v1/alerts?state=open",
        "/api/v1/series?metric=all&limit=5",
        "/api/v1/series/1/1/1?last=5&window=10",
        "/api/v1/compare?old=a&new=b&threshold=2",
        "/api/v1/token?verbose=1",
        "/?metrics=all",
        "/alerts?status=all&sort=id",
        "/series/1/1/1?zoom=2",
        "/compare?base=a",
    ] {
        let (code, v) = get(&srv.at(path));
        assert_eq!(code, 400, "{path}: {v}");
        let e = v["error"].as_str().unwrap_or_else(|| panic!("{path}: {v}"));
        let name = path.rsplit('&').next().unwrap();
        let name = name.rsplit('?').next().unwrap().split('=').next().unwrap();
        assert!(
            e.contains(&format!("unknown query parameter '{name}'")) && !e.contains('\n'),
            "{path}: {e}"
        );
    }
    // The API takes its token in the header, not in the URL (the pages take ?token=).
    let (code, v) = get(&srv.at("/api/v1/series?token=x"));
    assert_eq!(code, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("'token'"), "{v}");
    // POSTs too, before anything is done.
    let (code, v) = post(&srv.at("/api/v1/check?metrc=all"), Some(&token), b"");
    assert_eq!(code, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("'metrc'"), "{v}");
    let (code, v) = post(
        &srv.at("/api/v1/results?commit=abc&tag=x"),
        Some(&token),
        b"{}",
    );
    assert_eq!(code, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("'tag'"), "{v}");
    // What they take is still taken.
    for path in [
        "/api/v1/alerts?status=all",
        "/api/v1/series?metric=all&page=1&per_page=5",
        "/api/v1/series/1/1/1?last=5",
        "/?metric=all&q=sleep&page=1",
        "/alerts?status=open",
    ] {
        let (code, v) = get(&srv.at(path));
        assert_eq!(code, 200, "{path}: {v}");
    }
    let (code, v) = post(&srv.at("/api/v1/check?metric=all"), Some(&token), b"");
    assert_eq!(code, 200, "{v}");
}
