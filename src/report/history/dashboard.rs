//! The history store's HTML dashboard and its one trend chart (`trend_svg`: fitted unit from
//! `units::Fitted`, commits on the x axis, change points and alerts marked), which `tare
//! serve`'s series page draws too.
//!
//! Not for: the terminal view (`super`) or the Markdown summary (`markdown.rs`).

use super::*;

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
