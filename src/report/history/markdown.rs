//! The history store's Markdown summary, for a pull-request comment and `tare history check`'s
//! gate: open alerts first, then one line per series, each newest commit judged.
//!
//! Not for: the terminal view (`super`) or the HTML dashboard (`dashboard.rs`).

use super::*;

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

fn md(s: &str) -> String {
    s.replace('|', "\\|")
}
