//! Views of the history store: the terminal view of each series (sparkline, the newest
//! commits, change points), a Markdown summary for a pull-request comment, and one
//! self-contained HTML dashboard (trend lines with their intervals, change points marked, each
//! point linked to its row of runs). Reads what the store gives; computes nothing but layout.
//! The open alerts a view lists are the store's (`store::detect::open_alerts`, every metric),
//! given to it, so that every view lists the same ones; each names its own interval
//! ([`alert_ratio`]).

use crate::report::html::svg::{self, color, esc, Anchor, Canvas, Frame, Scale};
use crate::report::text_plots::sparkline;
use crate::store::detect::{Alert, Change, Interfered, Tip};
use crate::store::query::{Point, Series};
use crate::units;
use std::fmt::Write;

/// One series with what the store says about it.
#[derive(Debug, Clone)]
pub struct SeriesView {
    pub series: Series,
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
    pub alerts: Vec<Alert>,
    /// What detection did with the runs flagged as interfered with (`--interfered`).
    pub interfered: Interfered,
}

impl SeriesView {
    /// The alert of the change at `key`, if any.
    fn alert_at(&self, key: &str) -> Option<&Alert> {
        self.alerts.iter().rev().find(|a| a.commit_key == key)
    }
}

/// A value in the metric's unit.
pub fn value(unit: &str, v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    match unit {
        "s" => units::format_time(v, None),
        "B" => units::format_bytes(v, None),
        // A counted event (instructions): every digit, to a tenth (kernels count per loop).
        crate::store::ingest::COUNT_UNIT => units::format_thousands((v * 10.0).round() / 10.0),
        crate::store::ingest::ENERGY_UNIT => format!("{v:.4} J"),
        _ => format!("{v:.4}"),
    }
}

fn ratio_words(c: &Change) -> String {
    format!(
        "{:.3}× (95% CI {:.3}–{:.3})",
        c.ratio.estimate, c.ratio.low, c.ratio.high
    )
}

pub fn date(t: i64) -> String {
    if t <= 0 {
        return "–".into();
    }
    let st = std::time::UNIX_EPOCH + std::time::Duration::from_secs(t as u64);
    humantime::format_rfc3339_seconds(st).to_string()[..10].to_string()
}

/// The judgment of the newest commit in words: "newest commit abc: regression 1.200× (98%
/// interval 1.181–1.219) against the 3 commits before it, p = 0.0004", or what it misses.
pub fn tip_words(t: &Tip) -> String {
    let head = format!("newest commit {}", short(&t.key));
    let Some(j) = &t.judged else {
        return format!(
            "{head}: not judged: {}",
            t.missing.as_deref().unwrap_or("no baseline")
        );
    };
    let verdict = if t.regression {
        "regression".to_string()
    } else if t.significant {
        format!(
            "regression below its alert threshold of {}",
            percent(t.min_effect)
        )
    } else {
        format!("no regression at α = {}", t.alpha)
    };
    format!(
        "{head}: {verdict}: {:.3}× ({:.0}% interval {:.3}–{:.3}) against the {} before it{}, p = {}",
        j.ratio,
        100.0 * j.confidence,
        j.low,
        j.high,
        units::plural(t.baseline, "commit"),
        match &t.cut {
            Some(c) => format!(" (since {c})"),
            None => String::new(),
        },
        units::format_p(t.p_value)
    )
}

/// An alert with its series (None when the series is gone): what the lists of open alerts
/// hold (`store::detect::open_alerts` with `store::overview::with_series`).
pub type Listed = (Alert, Option<Series>);

/// An alert's ratio with its own interval: "1.200× (95% CI 1.180–1.220)", or for one raised by
/// the judgment of the newest commit "1.200× (98% interval 1.181–1.219)".
pub fn alert_ratio(a: &Alert) -> String {
    format!(
        "{:.3}× ({} {:.3}–{:.3})",
        a.ratio,
        a.interval_name(),
        a.ratio_low,
        a.ratio_high
    )
}

/// "benchmark · metric · machine" of an alert's series ("series B/M/MC" when it is gone).
pub fn alert_series(a: &Alert, s: Option<&Series>) -> String {
    match s {
        Some(s) => format!("{} · {} · {}", s.label(), s.metric, s.hostname),
        None => format!("series {}/{}/{}", a.benchmark_id, a.metric_id, a.machine_id),
    }
}

/// One alert on one line, as `tare history alerts`, `show` and `check` print it: "#3 new
/// sleep 0.01 · cpu_time · ci-7: regression at 1a2b3c4d5e 1.200× (95% CI 1.180–1.220), p =
/// 0.005 — note".
pub fn alert_line(a: &Alert, s: Option<&Series>) -> String {
    format!(
        "#{} {} {}: {} at {} {}, p = {}{}",
        a.id,
        a.status,
        alert_series(a, s),
        a.kind,
        short(&a.commit_key),
        alert_ratio(a),
        units::format_p(a.p_value),
        if a.note.is_empty() {
            String::new()
        } else {
            format!(" — {}", a.note)
        }
    )
}

/// The judgment of the newest commit with the alert it raised or matched, as `show`, `check`
/// and the server's series page print it.
pub fn tip_line(t: &Tip, points: &[Point], alerts: &[Alert]) -> String {
    format!(
        "{}{}",
        tip_words(t),
        match t.alert(points, alerts) {
            Some(a) => format!(" — alert #{} {}", a.id, a.status),
            None => String::new(),
        }
    )
}

/// The open alerts under a heading, one a line (every metric: not only the series shown).
pub fn open_alerts_text(open: &[Listed]) -> String {
    let mut o = String::new();
    if open.is_empty() {
        o.push_str("no open alerts\n");
    } else {
        let _ = writeln!(o, "open alerts ({}, every metric):", open.len());
        for (a, s) in open {
            let _ = writeln!(o, "  {}", alert_line(a, s.as_ref()));
        }
    }
    o
}

/// The terminal view: per series a sparkline, the newest `rows` points and the change points.
pub fn terminal(views: &[SeriesView], rows: usize, color: bool) -> String {
    terminal_with_tips(views, &[], rows, color)
}

/// [`terminal`] with each series' newest commit judged (`tips[i]` of `views[i]`; none when
/// `tips` is shorter).
pub fn terminal_with_tips(
    views: &[SeriesView],
    tips: &[Option<Tip>],
    rows: usize,
    color: bool,
) -> String {
    let (red, green, dim, off) = if color {
        ("\x1b[31m", "\x1b[32m", "\x1b[2m", "\x1b[0m")
    } else {
        ("", "", "", "")
    };
    let mut o = String::new();
    if views.is_empty() {
        o.push_str("the store holds no series yet: add results with `tare run --store` or `tare history add FILE`\n");
    }
    for (vi, v) in views.iter().enumerate() {
        let s = &v.series;
        let _ = writeln!(
            o,
            "{} · {} · {} ({}) · {}",
            s.label(),
            s.metric,
            s.hostname,
            &s.fingerprint[..8.min(s.fingerprint.len())],
            units::plural(v.points.len(), "commit")
        );
        let values: Vec<f64> = v.points.iter().map(|p| p.value).collect();
        let first = values.first().copied().unwrap_or(f64::NAN);
        let last = values.last().copied().unwrap_or(f64::NAN);
        let _ = writeln!(
            o,
            "  {}   {} → {}",
            sparkline(&values, 60),
            value(&s.unit, first),
            value(&s.unit, last)
        );
        let _ = writeln!(
            o,
            "  {dim}{:<12} {:<10} {:>12}  {:<25} {:>5}{off}",
            "commit", "date", "median", "95% CI", "runs"
        );
        let start = v.points.len().saturating_sub(rows);
        for (i, p) in v.points.iter().enumerate().skip(start) {
            let mark = match v.changes.iter().find(|c| c.index == i) {
                Some(c) if c.kind == "regression" => format!(" {red}◆ {}{off}", ratio_words(c)),
                Some(c) => format!(" {green}◆ {}{off}", ratio_words(c)),
                None => String::new(),
            };
            let _ = writeln!(
                o,
                "  {:<12} {:<10} {:>12}  {:<25} {:>5}{}{}{}",
                format!("{}{}", p.short(), if p.dirty { "+" } else { "" }),
                date(p.time),
                value(&s.unit, p.value),
                format!(
                    "{} – {}",
                    value(&s.unit, p.ci_low),
                    value(&s.unit, p.ci_high)
                ),
                p.n,
                if p.multimodal() { " (multimodal)" } else { "" },
                point_interfered(p, v.interfered),
                mark
            );
        }
        if v.changes.is_empty() {
            let _ = writeln!(o, "  no change point");
        }
        if let Some(Some(t)) = tips.get(vi) {
            let _ = writeln!(
                o,
                "  {}{}{}",
                if t.regression { red } else { "" },
                tip_line(t, &v.points, &v.alerts),
                if t.regression { off } else { "" }
            );
        }
        if let Some(line) = left_out_words(v) {
            let _ = writeln!(o, "  {line}");
        }
        for c in v.changes.iter().filter(|c| c.machine_change.is_some()) {
            let _ = writeln!(
                o,
                "  new segment at {} (after {}): {}; level {} — detection starts again, not alarmed",
                short(&c.after_key),
                short(&c.before_key),
                c.machine_change.as_deref().unwrap_or(""),
                ratio_words(c)
            );
        }
        for c in v.changes.iter().filter(|c| c.machine_change.is_none()) {
            let alert = v.alert_at(&c.after_key);
            let _ = writeln!(
                o,
                "  change at {} (after {}): {} {}, p = {}{}{}",
                short(&c.after_key),
                short(&c.before_key),
                c.kind,
                ratio_words(c),
                units::format_p(c.p_value),
                match alert {
                    Some(a) => format!(" — alert #{} {}", a.id, a.status),
                    None if !c.alerted => " — below the alert threshold".into(),
                    None => " — no alert yet (`tare history check` raises it)".into(),
                },
                match (&c.machine_change, alert) {
                    (Some(m), _) => format!(" — machine changed: {m}"),
                    (None, Some(a)) if !a.note.is_empty() => format!(" — {}", a.note),
                    _ => String::new(),
                }
            );
        }
        o.push('\n');
    }
    o
}

fn short(key: &str) -> String {
    key.chars().take(10).collect()
}

/// A point's runs flagged as interfered with and what detection did with them, e.g.
/// " (3 interfered: left out)", " (all 30 interfered: kept)"; empty when none.
fn point_interfered(p: &Point, policy: Interfered) -> String {
    if p.interfered == 0 {
        return String::new();
    }
    let whole = !p.detect_value.is_finite();
    let what = match (policy, whole) {
        (Interfered::Keep, _) => "counted",
        (Interfered::Flag, false) | (Interfered::Drop, false) => "left out",
        (Interfered::Flag, true) => "kept",
        (Interfered::Drop, true) => "commit left out",
    };
    format!(
        " ({}{} interfered: {what})",
        if whole { "all " } else { "" },
        p.interfered
    )
}

/// One line on the runs flagged as interfered with in a series and what detection did with
/// them under its `--interfered` policy, when there were any: "detection left out N runs
/// flagged as interfered with (in K commits); M commits whose every run was flagged kept with
/// them: A, B (--interfered flag)".
pub fn left_out_words(v: &SeriesView) -> Option<String> {
    let i = crate::store::detect::interference(&v.points, v.interfered);
    if i.runs == 0 {
        return None;
    }
    let in_points = |pred: &dyn Fn(&Point) -> bool| {
        v.points
            .iter()
            .filter(|p| p.interfered > 0 && pred(p))
            .count()
    };
    let names = |idx: &[usize]| {
        let mut n: Vec<String> = idx.iter().take(5).map(|&k| v.points[k].short()).collect();
        if idx.len() > 5 {
            n.push(format!("{} more", idx.len() - 5));
        }
        n.join(", ")
    };
    let mut line = match v.interfered {
        Interfered::Keep => format!(
            "{} flagged as interfered with (in {}) counted like the others",
            units::plural(i.runs as usize, "run"),
            units::plural(in_points(&|_| true), "commit")
        ),
        _ if i.left_out == 0 => String::new(),
        _ => format!(
            "detection left out {} flagged as interfered with (in {})",
            units::plural(i.left_out as usize, "run"),
            units::plural(in_points(&|p| v.interfered.leaves_out(p)), "commit")
        ),
    };
    if !i.whole.is_empty() {
        if !line.is_empty() {
            line.push_str("; ");
        }
        let _ = write!(
            line,
            "{} whose every run was flagged {}: {}",
            units::plural(i.whole.len(), "commit"),
            match v.interfered {
                Interfered::Drop => "left out",
                _ => "kept with them",
            },
            names(&i.whole)
        );
    }
    let _ = write!(line, " (--interfered {})", v.interfered.name());
    Some(line)
}

/// The open alerts of `views` (for a view without the store's list).
fn open_of(views: &[SeriesView]) -> Vec<Listed> {
    views
        .iter()
        .flat_map(|v| {
            v.alerts
                .iter()
                .filter(|a| crate::store::detect::OPEN.contains(&a.status.as_str()))
                .map(|a| (a.clone(), Some(v.series.clone())))
        })
        .collect()
}

/// A Markdown summary for a pull-request comment: open alerts first, then one line per series.
pub fn markdown(views: &[SeriesView], new_ids: &[i64]) -> String {
    markdown_with_tips(views, &[], &open_of(views), new_ids)
}

/// [`markdown`] with each series' newest commit judged (`tips[i]` of `views[i]`): the
/// regressions at the newest commit first, and a column of the judgment per series. `open`:
/// the store's open alerts (`store::detect::open_alerts`), every one listed, of any metric.
pub fn markdown_with_tips(
    views: &[SeriesView],
    tips: &[Option<Tip>],
    open: &[Listed],
    new_ids: &[i64],
) -> String {
    markdown_of_check(views, tips, open, new_ids, None)
}

/// [`markdown_with_tips`] of `tare history check --commit`: `scope` is the sentence saying
/// which commit was judged against what (its first line), and the judged commit is "this
/// commit". Says in words whether the commit is a regression, is none in the series judged,
/// or what is missing where it was not judged: a gate's summary never passes in silence.
pub fn markdown_of_check(
    views: &[SeriesView],
    tips: &[Option<Tip>],
    open: &[Listed],
    new_ids: &[i64],
    scope: Option<&str>,
) -> String {
    let mut o = String::from("## tare history\n\n");
    let subject = match scope {
        Some(line) => {
            let _ = writeln!(o, "{line}\n");
            "This commit"
        }
        None => "The newest commit",
    };
    let tip_of = |i: usize| tips.get(i).and_then(|t| t.as_ref());
    let regressed: Vec<(&SeriesView, &Tip)> = views
        .iter()
        .enumerate()
        .filter_map(|(i, v)| tip_of(i).filter(|t| t.regression).map(|t| (v, t)))
        .collect();
    if !tips.is_empty() {
        let judged = tips.iter().flatten().filter(|t| t.judged.is_some()).count();
        let below: Vec<String> = views
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let t = tip_of(i).filter(|t| t.significant && !t.regression)?;
                let j = t.judged.as_ref()?;
                Some(format!(
                    "- {} · {} · {}: {:.3}× ({:.0}% interval {:.3}–{:.3}), below its threshold of {}",
                    md(&v.series.label()),
                    v.series.metric,
                    md(&v.series.hostname),
                    j.ratio,
                    100.0 * j.confidence,
                    j.low,
                    j.high,
                    percent(t.min_effect)
                ))
            })
            .collect();
        if regressed.is_empty() && judged > 0 {
            let _ = writeln!(
                o,
                "**No regression**: {} is within its baseline{} in the {judged} series judged.\n",
                subject.to_lowercase(),
                if below.is_empty() {
                    ""
                } else {
                    " or below its threshold"
                }
            );
        }
        if !below.is_empty() {
            let _ = writeln!(
                o,
                "Slower, but below the series' alert threshold (not alerts) in {} series:\n",
                below.len()
            );
            for l in below {
                let _ = writeln!(o, "{l}");
            }
            o.push('\n');
        }
        let missing: Vec<String> = views
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let t = tip_of(i).filter(|t| t.judged.is_none())?;
                Some(format!(
                    "- {} · {} · {}: {}",
                    md(&v.series.label()),
                    v.series.metric,
                    md(&v.series.hostname),
                    md(t.missing.as_deref().unwrap_or("no baseline"))
                ))
            })
            .collect();
        if !missing.is_empty() {
            let _ = writeln!(
                o,
                "**{subject} is not judged in {} series** (too little history, not a pass):\n",
                missing.len()
            );
            for l in missing {
                let _ = writeln!(o, "{l}");
            }
            o.push('\n');
        }
    }
    if !regressed.is_empty() {
        let _ = writeln!(
            o,
            "**{subject} is a regression in {} series.**\n",
            regressed.len()
        );
        o.push_str("| benchmark | metric | machine | commit | ratio (interval) | baseline | p |\n");
        o.push_str("|---|---|---|---|---|---|---|\n");
        for (v, t) in &regressed {
            let Some(j) = &t.judged else { continue };
            let _ = writeln!(
                o,
                "| {} | {} | {} | `{}` | {:.3}× ({:.0}% interval {:.3}–{:.3}) regression | {} | {} |",
                md(&v.series.label()),
                v.series.metric,
                md(&v.series.hostname),
                short(&t.key),
                j.ratio,
                100.0 * j.confidence,
                j.low,
                j.high,
                units::plural(t.baseline, "commit"),
                units::format_p(t.p_value)
            );
        }
        o.push('\n');
    }
    if open.is_empty() {
        o.push_str("No open alerts.\n\n");
    } else {
        let _ = writeln!(
            o,
            "**{} open alert(s)**, {} new in this check.\n",
            open.len(),
            new_ids.len()
        );
        o.push_str(
            "| alert | benchmark | metric | machine | change at | ratio (interval) | p | status |\n",
        );
        o.push_str("|---|---|---|---|---|---|---|---|\n");
        for (a, s) in open {
            let (label, metric, host) = match s {
                Some(s) => (s.label(), s.metric.clone(), s.hostname.clone()),
                None => (alert_series(a, None), "–".into(), "–".into()),
            };
            let _ = writeln!(
                o,
                "| #{} | {} | {} | {} | `{}` | {} {} | {} | {}{} |",
                a.id,
                md(&label),
                md(&metric),
                md(&host),
                short(&a.commit_key),
                alert_ratio(a),
                a.kind,
                units::format_p(a.p_value),
                a.status,
                if new_ids.contains(&a.id) { " 🆕" } else { "" }
            );
        }
        o.push('\n');
    }
    let mut notes = Vec::new();
    for v in views {
        if let Some(line) = left_out_words(v) {
            notes.push(format!(
                "{} · {} · {}: {line}",
                md(&v.series.label()),
                v.series.metric,
                md(&v.series.hostname)
            ));
        }
    }
    if !notes.is_empty() {
        for n in notes {
            let _ = writeln!(o, "- {n}");
        }
        o.push('\n');
    }
    let with_tips = !tips.is_empty();
    o.push_str("| benchmark | metric | machine | commits | latest | trend |");
    o.push_str(if with_tips {
        " newest vs before |\n|---|---|---|---|---|---|---|\n"
    } else {
        "\n|---|---|---|---|---|---|\n"
    });
    for (i, v) in views.iter().enumerate() {
        let values: Vec<f64> = v.points.iter().map(|p| p.value).collect();
        let _ = write!(
            o,
            "| {} | {} | {} | {} | {} | `{}` |",
            md(&v.series.label()),
            v.series.metric,
            md(&v.series.hostname),
            v.points.len(),
            value(&v.series.unit, values.last().copied().unwrap_or(f64::NAN)),
            sparkline(&values, 30)
        );
        if with_tips {
            let cell = match tip_of(i) {
                Some(t) => match &t.judged {
                    Some(j) => format!(
                        "{:.3}× ({:.3}–{:.3}){}",
                        j.ratio,
                        j.low,
                        j.high,
                        if t.regression {
                            " **regression**"
                        } else if t.significant {
                            " below threshold"
                        } else {
                            ""
                        }
                    ),
                    None => md(t.missing.as_deref().unwrap_or("–")),
                },
                None => "–".into(),
            };
            let _ = write!(o, " {cell} |");
        }
        o.push('\n');
    }
    o
}

/// A share as a percentage: 0.05 → "5%".
fn percent(x: f64) -> String {
    format!("{}%", (x * 1e4).round() / 1e2)
}

fn md(s: &str) -> String {
    s.replace('|', "\\|")
}

pub const CSS: &str = r#"
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2328}
main{max-width:1200px;margin:0 auto;padding:20px 28px 48px}
h1{font-size:22px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #d8dee4;padding-bottom:4px}
table{border-collapse:collapse;margin:6px 0;font-variant-numeric:tabular-nums}
th,td{padding:4px 8px;border-bottom:1px solid #d8dee4;text-align:left}th{background:#f6f8fa;font-size:12.5px}
td.num{text-align:right;white-space:nowrap}.muted{color:#656d76}
.s-new{color:#c92a2a;font-weight:700}.s-acknowledged{color:#e67700}.s-fixed{color:#2b8a3e}.s-dismissed{color:#656d76}
svg.plot{width:100%;height:auto;max-width:1000px;border:1px solid #eef0f2;border-radius:6px}
svg.plot-trend a.col:hover rect.hit{fill-opacity:.08}svg.plot-trend a.col:hover circle{stroke:#1f2328;stroke-width:1.5}
tr:target{background:#fff3bf}details{margin:4px 0 12px}code{font-size:12.5px}
"#;

/// The HTML dashboard: one self-contained page. `open`: the store's open alerts
/// (`store::detect::open_alerts`), every one listed, of any metric; the closed alerts of the
/// series shown follow them.
pub fn html(views: &[SeriesView], title: &str, open: &[Listed], new_ids: &[i64]) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{CSS}</style></head><body><main><h1>{}</h1>",
        esc(title),
        esc(title)
    );
    let _ = write!(
        o,
        "<p class=\"muted\">{} series · generated {} by tare {}</p>",
        views.len(),
        esc(&crate::store::now()),
        env!("CARGO_PKG_VERSION")
    );
    // Alerts.
    o.push_str("<h2>Alerts</h2><table id=\"alerts\"><thead><tr><th>#</th><th>benchmark</th><th>metric</th><th>machine</th><th>change at</th><th>ratio (interval)</th><th>p</th><th>status</th><th>note</th></tr></thead><tbody>");
    let closed = views.iter().flat_map(|v| {
        v.alerts
            .iter()
            .filter(|a| !crate::store::detect::OPEN.contains(&a.status.as_str()))
            .map(|a| (a.clone(), Some(v.series.clone())))
    });
    let rows: Vec<Listed> = open.iter().cloned().chain(closed).collect();
    let mut any = false;
    for (a, s) in &rows {
        any = true;
        // The series' section and the point's row, when the series is shown.
        let shown = views.iter().enumerate().find(|(_, v)| {
            (
                v.series.benchmark_id,
                v.series.metric_id,
                v.series.machine_id,
            ) == (a.benchmark_id, a.metric_id, a.machine_id)
        });
        let (series_cell, commit_cell) = match shown {
            Some((k, v)) => (
                format!("<a href=\"#series-{k}\">{}</a>", esc(&v.series.label())),
                format!(
                    "<a href=\"#p-{k}-{}\"><code>{}</code></a>",
                    v.points
                        .iter()
                        .position(|p| p.key == a.commit_key)
                        .map(|i| i.to_string())
                        .unwrap_or_default(),
                    esc(&short(&a.commit_key))
                ),
            ),
            None => (
                esc(&s.as_ref().map(|s| s.label()).unwrap_or_default()),
                format!("<code>{}</code>", esc(&short(&a.commit_key))),
            ),
        };
        let _ = write!(
                o,
                "<tr id=\"alert-{}\"><td>{}</td><td>{series_cell}</td><td>{}</td><td>{}</td><td>{commit_cell}</td><td class=\"num\">{} {}</td><td class=\"num\">{}</td><td class=\"s-{}\">{}{}</td><td>{}</td></tr>",
                a.id,
                a.id,
                esc(&s.as_ref().map(|s| s.metric.clone()).unwrap_or_default()),
                esc(&s.as_ref().map(|s| s.hostname.clone()).unwrap_or_default()),
                esc(&alert_ratio(a)),
                esc(&a.kind),
                esc(&units::format_p(a.p_value)),
                esc(&a.status),
                esc(&a.status),
                if new_ids.contains(&a.id) { " (new in this check)" } else { "" },
                esc(&a.note)
            );
    }
    if !any {
        o.push_str("<tr><td colspan=\"9\" class=\"muted\">no alerts</td></tr>");
    }
    o.push_str("</tbody></table>");
    for (k, v) in views.iter().enumerate() {
        let s = &v.series;
        let _ = write!(
            o,
            "<section id=\"series-{k}\"><h2>{} · {} · {} <span class=\"muted\">({})</span></h2><p class=\"muted\"><code>{}</code> · {}</p>",
            esc(&s.label()),
            esc(&s.metric),
            esc(&s.hostname),
            esc(&s.fingerprint),
            esc(&s.command),
            esc(&units::plural(v.points.len(), "commit"))
        );
        o.push_str(&trend_svg(v, k));
        if let Some(line) = left_out_words(v) {
            let _ = write!(o, "<p class=\"muted\">{}</p>", esc(&line));
        }
        for c in &v.changes {
            let _ = write!(
                o,
                "<p class=\"cp-note\">◆ change at <a href=\"#p-{k}-{}\"><code>{}</code></a>: {} {}, p = {}{}</p>",
                c.index,
                esc(&short(&c.after_key)),
                esc(&c.kind),
                esc(&ratio_words(c)),
                esc(&units::format_p(c.p_value)),
                esc(&c
                    .machine_change
                    .as_ref()
                    .map(|m| format!(" — machine changed: {m} (annotated, not alarmed)"))
                    .unwrap_or_default())
            );
        }
        let _ = write!(
            o,
            "<details><summary>{} and their runs</summary><table class=\"points\"><thead><tr><th>commit</th><th>subject</th><th>date</th><th>median</th><th>95% CI</th><th>runs</th><th>sessions (results files)</th></tr></thead><tbody>",
            esc(&units::plural(v.points.len(), "commit"))
        );
        for (i, p) in v.points.iter().enumerate() {
            let sessions: Vec<String> = p
                .sessions
                .iter()
                .map(|x| match &x.source {
                    Some(src) => format!(
                        "<a href=\"{}\">{}</a>",
                        esc(src),
                        esc(&format!("{} ({})", x.started_at, value(&s.unit, x.median)))
                    ),
                    None => esc(&format!("{} ({})", x.started_at, value(&s.unit, x.median))),
                })
                .collect();
            let _ = write!(
                o,
                "<tr id=\"p-{k}-{i}\"><td><code>{}</code>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{} – {}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                esc(&p.short()),
                if p.dirty { " (dirty)" } else { "" },
                esc(p.subject.as_deref().unwrap_or("")),
                esc(&date(p.time)),
                esc(&value(&s.unit, p.value)),
                esc(&value(&s.unit, p.ci_low)),
                esc(&value(&s.unit, p.ci_high)),
                p.n,
                sessions.join("<br>")
            );
        }
        o.push_str("</tbody></table></details></section>");
    }
    o.push_str("</main></body></html>\n");
    o
}

/// The display unit of a series' chart: fitted to the largest value and interval bound shown,
/// so that the axis, the tooltips and the labels on the chart all read in it.
pub fn fitted(v: &SeriesView) -> units::Fitted {
    let m = v
        .points
        .iter()
        .flat_map(|p| [p.value, p.ci_low, p.ci_high])
        .filter(|x| x.is_finite())
        .map(f64::abs)
        .fold(0.0, f64::max);
    units::Fitted::new(&v.series.unit, m)
}

/// A commit's label on a chart's x axis: the hash's first 7 characters (`+` for a dirty work
/// tree), or `s12` for session 12 stored without a commit.
pub fn axis_label(p: &Point) -> String {
    match &p.commit {
        Some(h) => format!(
            "{}{}",
            h.chars().take(7).collect::<String>(),
            if p.dirty { "+" } else { "" }
        ),
        None => p.key.replace("session:", "s"),
    }
}

/// The indices of the points whose commit is written under the x axis: at most `room` of
/// them, evenly spaced, the newest always among them.
pub fn labelled(n: usize, room: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let step = n.div_ceil(room.max(1));
    (0..n)
        .filter(|i| (n - 1 - i).is_multiple_of(step))
        .collect()
}

/// What a commit's column of a chart says on hover: the commit, its date, branch and subject,
/// the value with its interval and runs, and the change point and alert at it.
fn commit_title(v: &SeriesView, i: usize, f: &units::Fitted) -> String {
    let p = &v.points[i];
    let half = (p.ci_high - p.ci_low).abs() / 2.0;
    let res = Some(half).filter(|h| h.is_finite() && *h > 0.0);
    let mut t = format!(
        "{}{} · {}{}",
        p.commit.as_deref().unwrap_or(&p.key),
        if p.dirty { " (dirty)" } else { "" },
        date(p.time),
        p.branch
            .as_deref()
            .map(|b| format!(" · {b}"))
            .unwrap_or_default()
    );
    if let Some(s) = p.subject.as_deref().filter(|s| !s.is_empty()) {
        let _ = write!(t, "\n{}", s.chars().take(200).collect::<String>());
    }
    let _ = write!(
        t,
        "\n{} (95% CI {} – {}), {}",
        f.format(p.value, res),
        f.format(p.ci_low, res),
        f.format(p.ci_high, res),
        units::plural(p.n as usize, "run")
    );
    for c in v.changes.iter().filter(|c| c.index == i) {
        let _ = write!(
            t,
            "\n◆ change point: {} {}{}",
            c.kind,
            ratio_words(c),
            c.machine_change
                .as_ref()
                .map(|m| format!(" — machine changed: {m}"))
                .unwrap_or_default()
        );
    }
    if let Some(a) = v.alert_at(&p.key) {
        let _ = write!(
            t,
            "\n▲ alert #{} {} {}: {}",
            a.id,
            a.kind,
            alert_ratio(a),
            a.status
        );
    }
    t
}

/// The trend of one series: median per commit with its interval as a band, in one unit fitted
/// to the values ([`fitted`]); commits on the x axis in the store's order (short hashes,
/// thinned to fit; each commit's column shows its hash, date, subject and value on hover and
/// links to its row); change points as dashed lines; each alert of the series marked at its
/// commit with its state (filled while open, hollow once dismissed or fixed).
pub fn trend_svg(v: &SeriesView, k: usize) -> String {
    let (w, h) = (960.0, 320.0);
    let mut c = Canvas::new(w, h);
    let n = v.points.len().max(1);
    let f = fitted(v);
    let lo = v
        .points
        .iter()
        .map(|p| p.ci_low.min(p.value))
        .filter(|x| x.is_finite())
        .fold(f64::INFINITY, f64::min);
    let hi = v
        .points
        .iter()
        .map(|p| p.ci_high.max(p.value))
        .filter(|x| x.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() && hi.is_finite() {
        svg::pad_domain(lo * f.scale, hi * f.scale, 0.08)
    } else {
        (0.0, 1.0)
    };
    let (left, right, top, bottom) = (74.0, 34.0, 34.0, 46.0);
    let frame = Frame {
        left,
        top,
        width: w - left - right,
        height: h - top - bottom,
        x: Scale::linear((-0.5, n as f64 - 0.5), (left, w - right)),
        y: Scale::linear((lo, hi), (h - bottom, top)),
    };
    let y = |x: f64| frame.y.map(x * f.scale);
    let room = (frame.width / 64.0).floor().max(1.0) as usize;
    let ticks: Vec<(f64, String, String)> = labelled(v.points.len(), room)
        .into_iter()
        .map(|i| (i as f64, axis_label(&v.points[i]), commit_title(v, i, &f)))
        .collect();
    let y_title = match f.name() {
        "" => v.series.metric.clone(),
        u => format!("{} ({u})", v.series.metric),
    };
    frame.axes_labelled(
        &mut c,
        &ticks,
        &format!(
            "{} (oldest → newest; hover a commit for its subject)",
            units::plural(v.points.len(), "commit")
        ),
        &y_title,
    );
    // Legend, above the plot.
    let mut lx = left;
    for (swatch, words) in [
        (color::PRIMARY, "median"),
        (color::PRIMARY_LIGHT, "95% CI"),
        (color::WARN, "change point / open alert"),
    ] {
        c.rect(lx, 9.0, 10.0, 10.0, swatch, 1.0);
        c.text(lx + 14.0, 18.0, words, Anchor::Start, 10.5, color::MUTED);
        lx += 24.0 + words.chars().count() as f64 * 5.8;
    }
    let band: Vec<(f64, f64)> = v
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| (frame.x.map(i as f64), y(p.ci_high)))
        .chain(
            v.points
                .iter()
                .enumerate()
                .rev()
                .map(|(i, p)| (frame.x.map(i as f64), y(p.ci_low))),
        )
        .collect();
    if v.points.len() > 1 {
        c.polygon(&band, color::PRIMARY_LIGHT, 0.5);
    } else if let Some(p) = v.points.first() {
        // One commit: its interval as a whisker.
        let x = frame.x.map(0.0);
        c.line(x, y(p.ci_low), x, y(p.ci_high), color::PRIMARY_LIGHT, 3.0);
    }
    let line: Vec<(f64, f64)> = v
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| (frame.x.map(i as f64), y(p.value)))
        .collect();
    c.polyline(&line, color::PRIMARY, 1.5);
    for ch in &v.changes {
        let x = frame.x.map(ch.index as f64 - 0.5);
        let stroke = if ch.machine_change.is_some() {
            color::MUTED
        } else if ch.kind == "regression" {
            color::WARN
        } else {
            color::GOOD
        };
        c.raw(&format!(
            "<g class=\"cp\" data-commit=\"{}\"><title>{}</title>",
            esc(&ch.after_key),
            esc(&format!(
                "change at {}: {} {}",
                short(&ch.after_key),
                ch.kind,
                ratio_words(ch)
            ))
        ));
        c.dashed(x, frame.top, x, frame.bottom(), stroke, 1.5);
        c.text(
            x + 3.0,
            frame.bottom() - 4.0,
            &format!("{:.3}×", ch.ratio.estimate),
            Anchor::Start,
            10.5,
            stroke,
        );
        c.raw("</g>");
    }
    let col = frame.width / n as f64;
    let r = (col * 0.35).clamp(1.5, 3.2);
    for (i, p) in v.points.iter().enumerate() {
        let (x, py) = (frame.x.map(i as f64), y(p.value));
        c.raw(&format!(
            "<a class=\"col\" href=\"#p-{k}-{i}\" data-commit=\"{}\">",
            esc(&p.key)
        ));
        c.titled(&commit_title(v, i, &f), |c| {
            c.raw(&format!(
                "<rect class=\"hit\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" fill-opacity=\"0\"/>",
                svg::n(x - col / 2.0),
                svg::n(frame.top),
                svg::n(col),
                svg::n(frame.height),
                color::PRIMARY
            ));
            c.circle(x, py, r, color::PRIMARY, 1.0);
        });
        c.raw("</a>");
    }
    // Alerts at their commits: the newest alert of each commit, with its state.
    for (i, p) in v.points.iter().enumerate() {
        let Some(a) = v.alert_at(&p.key) else {
            continue;
        };
        let open = crate::store::detect::OPEN.contains(&a.status.as_str());
        let hue = match (open, a.kind.as_str()) {
            (false, _) => color::MUTED,
            (true, "regression") => color::WARN,
            (true, _) => color::GOOD,
        };
        let (x, py) = (frame.x.map(i as f64), y(p.value));
        let up = a.kind == "regression";
        let (ty, d) = (frame.top + 2.0, 5.5);
        let tri = if up {
            format!(
                "M{} {}L{} {}L{} {}Z",
                svg::n(x),
                svg::n(ty - d + 5.5),
                svg::n(x + d),
                svg::n(ty + 5.5 + d * 0.8),
                svg::n(x - d),
                svg::n(ty + 5.5 + d * 0.8)
            )
        } else {
            format!(
                "M{} {}L{} {}L{} {}Z",
                svg::n(x),
                svg::n(ty + 5.5 + d),
                svg::n(x + d),
                svg::n(ty + 5.5 - d * 0.8),
                svg::n(x - d),
                svg::n(ty + 5.5 - d * 0.8)
            )
        };
        c.raw(&format!(
            "<g class=\"alert-mark\" data-alert=\"{}\" data-status=\"{}\" data-kind=\"{}\"><title>{}</title>",
            a.id,
            esc(&a.status),
            esc(&a.kind),
            esc(&format!(
                "alert #{} at {}: {} {}, {} — {}{}",
                a.id,
                short(&a.commit_key),
                a.kind,
                alert_ratio(a),
                units::p_phrase(a.p_value),
                a.status,
                if a.note.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", a.note)
                }
            ))
        ));
        c.ring(x, py, r + 3.0, hue);
        c.line(x, ty + 12.0, x, py - r - 3.0, hue, 0.8);
        c.raw(&format!(
            "<path d=\"{tri}\" fill=\"{}\" stroke=\"{hue}\" stroke-width=\"1.2\"/>",
            if open { hue } else { "#ffffff" }
        ));
        let anchor = if x > frame.right() - 90.0 {
            Anchor::End
        } else {
            Anchor::Start
        };
        let tx = if anchor == Anchor::End {
            x - 8.0
        } else {
            x + 8.0
        };
        c.text(
            tx,
            ty + 10.0,
            &format!("#{} {}", a.id, a.status),
            anchor,
            10.5,
            hue,
        );
        c.raw("</g>");
    }
    c.finish(
        &format!("trend-{k}"),
        "plot-trend",
        &format!(
            "{} {} over commits, in {}",
            v.series.label(),
            v.series.metric,
            match f.name() {
                "" => "counts",
                u => u,
            }
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(i: usize) -> String {
        format!("{:07x}{:033x}", 0xabc0000 + i * 0x1111, i)
    }

    fn view(n: usize, unit: &str, base: f64) -> SeriesView {
        let points = (0..n)
            .map(|i| Point {
                key: hash(i),
                commit: Some(hash(i)),
                subject: Some(if i == 1 {
                    "<script>x()</script> & \"q\"".into()
                } else {
                    format!("commit {i}")
                }),
                branch: Some("main".into()),
                dirty: false,
                time: 1_790_000_000 + i as i64,
                value: base * (1.0 + 0.001 * i as f64),
                ci_low: base * 0.98,
                ci_high: base * 1.02,
                n: 10,
                detect_value: base,
                interfered: 0,
                sessions: Vec::new(),
            })
            .collect();
        SeriesView {
            series: Series {
                benchmark_id: 1,
                metric_id: 2,
                machine_id: 3,
                benchmark: "b".into(),
                parameters: "{}".into(),
                command: "b".into(),
                metric: "cpu_time".into(),
                unit: unit.into(),
                direction: "lower".into(),
                fingerprint: "f".into(),
                hostname: "h".into(),
            },
            points,
            changes: Vec::new(),
            alerts: Vec::new(),
            interfered: Interfered::default(),
        }
    }

    #[test]
    fn labels_are_thinned_with_the_newest_kept() {
        assert_eq!(labelled(0, 13), Vec::<usize>::new());
        assert_eq!(labelled(1, 13), [0]);
        assert_eq!(labelled(5, 13), [0, 1, 2, 3, 4]);
        let l = labelled(200, 13);
        assert!(l.len() <= 13 && l.len() >= 10, "{l:?}");
        assert_eq!(l.last(), Some(&199));
    }

    #[test]
    fn the_chart_reads_in_one_fitted_unit_with_commits_escaped() {
        let svg = trend_svg(&view(24, "s", 0.0405), 0);
        assert!(svg.contains(">cpu_time (ms)</text>"), "{svg}");
        // The tooltip in the axis unit; the subject escaped; the x axis names commits.
        assert!(svg.contains("\n40.5 ms (95% CI 39.7 ms – 41.3 ms), 10 runs"));
        assert!(svg.contains("&lt;script&gt;x()&lt;/script&gt; &amp; &quot;q&quot;"));
        assert!(!svg.contains("<script>"));
        assert!(svg.contains(&format!(">{}</text>", &hash(23)[..7])));
        assert!(
            !svg.contains(&format!(">{}</text>", &hash(22)[..7])),
            "thinned"
        );
        assert!(!svg.contains(">0.0400<"), "no seconds on the axis");
        // Counts in millions, bytes in MB; one commit draws.
        let c = trend_svg(&view(3, "count", 8.0e7), 0);
        assert!(c.contains(">cpu_time (millions)</text>"), "{c}");
        let b = trend_svg(&view(1, "B", 3.0e6), 0);
        assert!(
            b.contains(">cpu_time (MB)</text>") && b.contains("<circle"),
            "{b}"
        );
    }
}
