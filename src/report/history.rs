//! Views of the history store: the terminal view of each series (sparkline, the newest
//! commits, change points), a Markdown summary for a pull-request comment, and one
//! self-contained HTML dashboard (trend lines with their intervals, change points marked, each
//! point linked to its row of runs). Reads what the store gives; computes nothing but layout.
//! The open alerts a view lists are the store's (`store::detect::open_alerts`, every metric),
//! given to it, so that every view lists the same ones; each names its own interval
//! ([`alert_ratio`]).
//!
//! This file: the terminal view and the words every view shares; the Markdown summary is in
//! `history/markdown.rs`, the dashboard and its trend chart in `history/dashboard.rs`.

use crate::report::html::svg::{self, color, esc, Anchor, Canvas, Frame, Scale};
use crate::report::text_plots::sparkline;
use crate::store::detect::{Alert, Change, Interfered, Tip};
use crate::store::query::{Point, Series};
use crate::units;
use std::fmt::Write;

mod dashboard;
mod markdown;
pub use dashboard::*;
pub use markdown::*;

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

/// A share as a percentage: 0.05 → "5%".
fn percent(x: f64) -> String {
    format!("{}%", (x * 1e4).round() / 1e2)
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
