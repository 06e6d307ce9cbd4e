//! The HTML report and its SVG plots, generated from stored results (never from a live run).
//!
//! For: one self-contained HTML file (inline CSS, SVG and a little script; no network; works
//! from `file://`; readable with JavaScript off) and each plot as a standalone SVG file.
//! Not for: measuring, computing statistics a results file already holds, or terminal output.
//!
//! Modules: [`svg`] draws; [`data`] reads numbers out of results; [`plots`] decides what each
//! plot shows; `scaling` draws the log–log plot of each parameter scan; [`table`] builds the
//! tables; `page` assembles the page.

pub mod data;
mod head_to_head;
mod page;
pub mod plots;
mod scaling;
pub mod svg;
pub mod table;

pub use data::Metric;
pub use plots::{Plot, PlotKind};

use crate::results::Session;

/// The report of one or more labelled sessions (a label is typically the results file's
/// name), about wall time. Several sessions are also compared side by side.
pub fn render_html(sessions: &[(String, Session)]) -> String {
    render_html_for(sessions, &Metric::WallTime)
}

/// The report about a chosen metric.
pub fn render_html_for(sessions: &[(String, Session)], metric: &Metric) -> String {
    page::page(sessions, metric)
}

/// Every plot of the report, in page order.
pub fn all_plots(sessions: &[(String, Session)], metric: &Metric) -> Vec<Plot> {
    let mut all = Vec::new();
    for (fi, (_, s)) in sessions.iter().enumerate() {
        all.extend(plots::session_plots(fi, s, metric));
        all.extend(scaling::plots(fi, s, metric));
        for (bi, b) in s.benchmarks.iter().enumerate() {
            all.extend(plots::benchmark_plots(
                fi,
                bi,
                b,
                metric,
                plots::session_target(s),
            ));
        }
    }
    all
}

/// Every plot as a standalone SVG document: (file name, contents). File names are unique and
/// safe: `<file>-<benchmark number>-<benchmark>-<kind>.svg`, e.g. `a-1-sleep-0-01-hist.svg`.
pub fn svg_files(sessions: &[(String, Session)], metric: &Metric) -> Vec<(String, String)> {
    all_plots(sessions, metric)
        .into_iter()
        .map(|p| {
            let (label, s) = &sessions[p.file];
            let stem = label.rsplit('/').next().unwrap_or(label);
            let stem = stem.strip_suffix(".json").unwrap_or(stem);
            let mut name = slug(stem);
            match (p.kind, p.bench) {
                (PlotKind::Paired, _) | (PlotKind::Forest, _) | (PlotKind::Scaling, _) => {
                    name.push('-');
                    name.push_str(&slug(&p.id));
                }
                (_, Some(bi)) => {
                    let bname = s.benchmarks.get(bi).map(|b| b.name.as_str()).unwrap_or("");
                    name.push_str(&format!("-{}-{}-{}", bi + 1, slug(bname), p.kind.slug()));
                }
                (_, None) => {
                    name.push('-');
                    name.push_str(p.kind.slug());
                }
            }
            let doc = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}\n", p.svg);
            (format!("{name}.svg"), doc)
        })
        .collect()
}

/// Lower-case ASCII letters, digits and single dashes, at most 40 characters; never empty.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 40 {
            break;
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "x".into()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::slug;

    #[test]
    fn slugs_are_safe() {
        assert_eq!(slug("sleep 0.01"), "sleep-0-01");
        assert_eq!(slug("../../etc/<passwd>"), "etc-passwd");
        assert_eq!(slug("«»"), "x");
    }
}
