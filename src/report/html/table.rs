//! The report's tables: the summary of one session and the side-by-side comparison of several
//! result files, with numbers aligned on the decimal point (seed 003, table 1).
//!
//! For: HTML `<table>` markup that reads well without JavaScript; every numeric cell carries its
//! raw value in `data-v` so the page script can sort. Not for: plots or page layout.

use super::data::{self, Metric};
use super::svg::esc;
use crate::results::{Benchmark, ComparisonRecord, MetricSummary, Session};
use crate::units;
use std::fmt::Write;

/// A number split at its decimal point, as printed in a cell: `"14"` + `".1"`. A value below 1
/// drops its leading zero (`".5"`), as in seed 003's table 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aligned {
    pub int: String,
    pub frac: String,
}

impl Aligned {
    /// The cell's text, e.g. `"14.1"` or `".5"`.
    pub fn text(&self) -> String {
        format!("{}{}", self.int, self.frac)
    }
}

/// Formats `value` (base units) in `scale`/`unit` with the digits its `resolution` supports
/// (see [`units::format_scaled`]), split for alignment.
pub fn aligned(value: f64, scale: f64, unit: &str, resolution: Option<f64>) -> Aligned {
    let s = units::format_scaled(value, scale, unit, resolution);
    let num = s.strip_suffix(unit).unwrap_or(&s).trim_end();
    split_number(num)
}

fn split_number(num: &str) -> Aligned {
    let (int, frac) = match num.find('.') {
        Some(i) => (&num[..i], &num[i..]),
        None => (num, ""),
    };
    let int = if !frac.is_empty() && (int == "0" || int == "-0") {
        int.trim_end_matches('0')
    } else {
        int
    };
    Aligned {
        int: int.to_string(),
        frac: frac.to_string(),
    }
}

/// A column of aligned numbers: collects cells, then renders them padded to a common width.
#[derive(Default)]
struct AlignedColumn {
    int_w: usize,
    frac_w: usize,
}

impl AlignedColumn {
    fn fit(&mut self, a: &Aligned) {
        self.int_w = self.int_w.max(a.int.chars().count());
        self.frac_w = self.frac_w.max(a.frac.chars().count());
    }
    fn span(&self, a: &Aligned) -> String {
        format!(
            r#"<span class="i" style="min-width:{}ch">{}</span><span class="f" style="min-width:{}ch">{}</span>"#,
            self.int_w,
            esc(&a.int),
            self.frac_w,
            esc(&a.frac)
        )
    }
}

/// A cell that is either an aligned number with its raw value, or text.
enum Cell {
    Num(f64, Aligned),
    /// Two aligned numbers: a CI `low – high`, sorted by `low`.
    Range(f64, Aligned, Aligned),
    Text(String, String),
    Empty,
}

/// Renders a numeric column's cells with a shared alignment.
fn render_num_cells(cells: &[Cell]) -> Vec<String> {
    let mut a = AlignedColumn::default();
    let mut b = AlignedColumn::default();
    for c in cells {
        match c {
            Cell::Num(_, x) => a.fit(x),
            Cell::Range(_, x, y) => {
                a.fit(x);
                b.fit(y);
            }
            _ => {}
        }
    }
    cells
        .iter()
        .map(|c| match c {
            Cell::Num(v, x) => format!(r#"<td class="num" data-v="{v}">{}</td>"#, a.span(x)),
            Cell::Range(v, x, y) => format!(
                r#"<td class="num ci" data-v="{v}">{}<span class="sep">–</span>{}</td>"#,
                a.span(x),
                b.span(y)
            ),
            Cell::Text(sort, html) => format!(r#"<td data-v="{}">{html}</td>"#, esc(sort)),
            Cell::Empty => r#"<td class="none" data-v="">—</td>"#.to_string(),
        })
        .collect()
}

/// The scale for a column: the one that shows its smallest positive value as ≥ 1.
fn column_scale(metric: &Metric, values: impl Iterator<Item = f64>) -> (f64, &'static str) {
    let min = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    metric.scale(if min.is_finite() { min } else { 0.0 })
}

fn percent_cell(v: Option<f64>) -> Cell {
    match v.filter(|v| v.is_finite()) {
        Some(v) => {
            let s = units::format_percent(v);
            Cell::Num(v, split_number(s.trim_end_matches('%')))
        }
        None => Cell::Empty,
    }
}

fn median_cells(ms: &[Option<&MetricSummary>], scale: f64, unit: &str) -> (Vec<Cell>, Vec<Cell>) {
    let med = ms
        .iter()
        .map(|m| match m {
            Some(m) if m.median.is_finite() => Cell::Num(
                m.median,
                aligned(m.median, scale, unit, data::resolution(m)),
            ),
            _ => Cell::Empty,
        })
        .collect();
    let ci = ms
        .iter()
        .map(|m| match m {
            Some(m) if m.median_ci_exact => {
                let r = data::resolution(m);
                Cell::Range(
                    m.median_ci_low,
                    aligned(m.median_ci_low, scale, unit, r),
                    aligned(m.median_ci_high, scale, unit, r),
                )
            }
            Some(_) => Cell::Text(
                String::new(),
                r#"<span class="muted" title="fewer than 6 runs: no 95% interval">too few runs</span>"#
                    .into(),
            ),
            None => Cell::Empty,
        })
        .collect();
    (med, ci)
}

/// The verdict badge of a comparison: class and short words.
pub fn verdict_badge(c: &ComparisonRecord) -> String {
    let (class, word) = match c.verdict.as_str() {
        "faster" => ("v-faster", "faster"),
        "slower" => ("v-slower", "slower"),
        "equal-within-noise" => ("v-equal", "equal within noise"),
        "no-significant-difference" => ("v-nsd", "no significant difference"),
        other => ("v-nsd", other),
    };
    format!(
        r#"<span class="badge {class}" title="{}">{}</span>"#,
        esc(&c.words),
        esc(word)
    )
}

/// Formats a ratio with three significant digits and a "×".
pub fn ratio_text(r: f64) -> String {
    if !r.is_finite() {
        return "n/a".into();
    }
    let d = if r.abs() >= 100.0 {
        0
    } else if r.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{r:.d$}×")
}

/// Runs cell: counted runs, with warm-up and excluded runs in small print.
fn runs_cell(b: &Benchmark) -> Cell {
    let counted = b.runs.iter().filter(|r| r.counted).count();
    let warm = b.runs.iter().filter(|r| r.warmup).count();
    let excluded = b.runs.iter().filter(|r| !r.warmup && !r.counted).count();
    let mut html = format!("{counted}");
    if warm > 0 {
        let _ = write!(html, r#" <small class="muted">+{warm} warm-up</small>"#);
    }
    if excluded > 0 {
        let _ = write!(html, r#" <small class="warn">+{excluded} excluded</small>"#);
    }
    Cell::Text(
        format!("{counted:08}"),
        format!(r#"<span class="nw">{html}</span>"#),
    )
}

/// The id of a benchmark's section in the page.
pub fn bench_anchor(file: usize, bench: usize) -> String {
    format!("f{file}-b{bench}")
}

/// The summary table of one session, for `metric`.
pub fn summary_table(file: usize, s: &Session, metric: &Metric) -> String {
    let bs = &s.benchmarks;
    let ms: Vec<Option<&MetricSummary>> = bs.iter().map(|b| metric.summary(&b.summary)).collect();
    let (scale, unit) = column_scale(metric, ms.iter().flatten().map(|m| m.median));
    let (med, ci) = median_cells(&ms, scale, unit);
    let rel: Vec<Cell> = ms
        .iter()
        .map(|m| percent_cell(m.and_then(data::relative_ci)))
        .collect();
    let cv: Vec<Cell> = ms.iter().map(|m| percent_cell(m.map(|m| m.cv))).collect();

    // CPU time and peak memory medians when the table is about another metric.
    let extra_metrics: Vec<Metric> = [Metric::CpuTime, Metric::PeakMemory]
        .into_iter()
        .filter(|m| m != metric)
        .collect();
    let mut extra_cols: Vec<(String, Vec<Cell>)> = Vec::new();
    for em in &extra_metrics {
        let ems: Vec<Option<&MetricSummary>> = bs.iter().map(|b| em.summary(&b.summary)).collect();
        if ems.iter().all(|m| m.is_none()) {
            continue;
        }
        let (sc, u) = column_scale(em, ems.iter().flatten().map(|m| m.median));
        let (cells, _) = median_cells(&ems, sc, u);
        let short = if *em == Metric::PeakMemory {
            "memory"
        } else {
            "CPU"
        };
        extra_cols.push((format!("{short} ({u})"), cells));
    }

    let comps: Vec<&ComparisonRecord> = s
        .comparisons
        .iter()
        .filter(|c| c.metric == metric.key())
        .collect();
    let verdict: Vec<Cell> = (0..bs.len())
        .map(|i| {
            if let Some(c) = comps.iter().find(|c| c.candidate == i) {
                let ci = format!(
                    r#"<small class="muted">[{} – {}]</small>"#,
                    ratio_text(c.ratio_ci_low).trim_end_matches('×'),
                    ratio_text(c.ratio_ci_high).trim_end_matches('×')
                );
                Cell::Text(
                    format!("{:020.6}", c.ratio),
                    format!(
                        r#"<span class="nw"><span class="ratio">{}</span> {ci}</span> {}"#,
                        ratio_text(c.ratio),
                        verdict_badge(c)
                    ),
                )
            } else if comps.iter().any(|c| c.reference == i) {
                Cell::Text(
                    format!("{:020.6}", 1.0),
                    r#"<span class="badge v-ref">reference</span>"#.into(),
                )
            } else {
                Cell::Empty
            }
        })
        .collect();

    let med_html = render_num_cells(&med);
    let ci_html = render_num_cells(&ci);
    let rel_html = render_num_cells(&rel);
    let cv_html = render_num_cells(&cv);
    let extra_html: Vec<Vec<String>> = extra_cols
        .iter()
        .map(|(_, c)| render_num_cells(c))
        .collect();
    let verdict_html = render_num_cells(&verdict);

    let mut out = String::new();
    let _ = write!(
        out,
        r#"<table class="summary sortable" id="summary-{file}"><thead><tr>"#
    );
    let mut col = 0usize;
    let mut head = |label: &str, kind: &str, title: &str| {
        let _ = write!(
            out,
            r#"<th data-sort="{kind}" data-col="{col}" title="{}">{}</th>"#,
            esc(title),
            label
        );
        col += 1;
    };
    head("#", "num", "position in the session");
    head(
        "benchmark",
        "text",
        "name (parameters); hover for the command",
    );
    head(
        &format!("median ({})", esc(unit)),
        "num",
        &format!("median {} of the counted runs", metric.name()),
    );
    head(
        &format!("95% CI ({})", esc(unit)),
        "num",
        "distribution-free 95% confidence interval of the median",
    );
    head(
        "± CI (%)",
        "num",
        "half-width of the 95% CI relative to the median",
    );
    head(
        "CV (%)",
        "num",
        "coefficient of variation: standard deviation / mean",
    );
    head(
        "runs",
        "num",
        "counted runs (warm-up and excluded runs in small print)",
    );
    for (label, _) in &extra_cols {
        head(&esc(label), "num", "median of the counted runs");
    }
    head(
        "vs reference",
        "num",
        "ratio of medians to the reference, its 95% CI and the verdict",
    );
    head("stopped", "text", "why measuring stopped");
    head("warnings", "num", "diagnostics about the sample");
    out.push_str("</tr></thead><tbody>");
    for (i, b) in bs.iter().enumerate() {
        let anchor = bench_anchor(file, i);
        let _ = write!(
            out,
            r##"<tr><td class="num" data-v="{i}">{}</td><td class="name" data-v="{}"><a href="#{anchor}" title="{}">{}</a></td>"##,
            i + 1,
            esc(&data::display_name(b)),
            esc(&b.command),
            esc(&data::display_name(b))
        );
        out.push_str(&med_html[i]);
        out.push_str(&ci_html[i]);
        out.push_str(&rel_html[i]);
        out.push_str(&cv_html[i]);
        out.push_str(&render_num_cells(&[runs_cell(b)])[0]);
        for col in &extra_html {
            out.push_str(&col[i]);
        }
        out.push_str(&verdict_html[i]);
        let _ = write!(
            out,
            r#"<td class="stop" data-v="{0}">{0}</td>"#,
            esc(&b.stop_reason)
        );
        let mut warn_kinds: Vec<&str> = b.diagnostics.iter().map(|d| d.kind.as_str()).collect();
        warn_kinds.dedup();
        if warn_kinds.is_empty() {
            out.push_str(r#"<td class="ok" data-v="0">none</td>"#);
        } else {
            let _ = write!(
                out,
                r##"<td class="warn" data-v="{}"><a href="#{anchor}-diag">{}: {}</a></td>"##,
                b.diagnostics.len(),
                b.diagnostics.len(),
                esc(&warn_kinds.join(", "))
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// Several result files side by side: one row per benchmark (matched by name and parameters),
/// one column group per file, each later file's median relative to the first file's.
pub fn files_table(sessions: &[(String, Session)], metric: &Metric) -> String {
    let mut keys: Vec<(String, String)> = Vec::new();
    for (_, s) in sessions {
        for b in &s.benchmarks {
            let k = data::benchmark_key(b);
            if !keys.iter().any(|(kk, _)| *kk == k) {
                keys.push((k, data::display_name(b)));
            }
        }
    }
    let find = |s: &Session, key: &str| -> Option<usize> {
        s.benchmarks
            .iter()
            .position(|b| data::benchmark_key(b) == key)
    };
    let all_medians = sessions.iter().flat_map(|(_, s)| {
        s.benchmarks
            .iter()
            .filter_map(|b| metric.summary(&b.summary).map(|m| m.median))
    });
    let (scale, unit) = column_scale(metric, all_medians);

    // Columns: per file median, ± CI, CV, (ratio to first file).
    let mut columns: Vec<Vec<String>> = Vec::new();
    for (fi, (_, s)) in sessions.iter().enumerate() {
        let ms: Vec<Option<&MetricSummary>> = keys
            .iter()
            .map(|(k, _)| find(s, k).and_then(|i| metric.summary(&s.benchmarks[i].summary)))
            .collect();
        let (med, _) = median_cells(&ms, scale, unit);
        columns.push(render_num_cells(&med));
        let rel: Vec<Cell> = ms
            .iter()
            .map(|m| percent_cell(m.and_then(data::relative_ci)))
            .collect();
        columns.push(render_num_cells(&rel));
        let cv: Vec<Cell> = ms.iter().map(|m| percent_cell(m.map(|m| m.cv))).collect();
        columns.push(render_num_cells(&cv));
        if fi > 0 {
            let base = &sessions[0].1;
            let ratio: Vec<Cell> = keys
                .iter()
                .zip(&ms)
                .map(|((k, _), m)| {
                    let b0 =
                        find(base, k).and_then(|i| metric.summary(&base.benchmarks[i].summary));
                    match (b0, m) {
                        (Some(a), Some(b)) if a.median > 0.0 && b.median.is_finite() => {
                            let r = b.median / a.median;
                            let cls = if r > 1.0 { "slower" } else { "faster" };
                            Cell::Text(
                                format!("{r:020.6}"),
                                format!(r#"<span class="ratio {cls}">{}</span>"#, ratio_text(r)),
                            )
                        }
                        _ => Cell::Empty,
                    }
                })
                .collect();
            columns.push(render_num_cells(&ratio));
        }
    }

    let mut out = String::from(
        r#"<table class="files sortable" id="files-table"><thead><tr><th rowspan="2" data-sort="text" data-col="0">benchmark</th>"#,
    );
    for (fi, (label, _)) in sessions.iter().enumerate() {
        let span = if fi > 0 { 4 } else { 3 };
        let _ = write!(
            out,
            r#"<th colspan="{span}" class="group" data-nosort="1">{}</th>"#,
            esc(label)
        );
    }
    out.push_str("</tr><tr>");
    let mut col = 1usize;
    for fi in 0..sessions.len() {
        let _ = write!(
            out,
            r#"<th data-sort="num" data-col="{}" class="gstart">median ({})</th><th data-sort="num" data-col="{}">± CI (%)</th><th data-sort="num" data-col="{}">CV (%)</th>"#,
            col,
            esc(unit),
            col + 1,
            col + 2
        );
        col += 3;
        if fi > 0 {
            let _ = write!(
                out,
                r#"<th data-sort="num" data-col="{col}" title="median in this file / median in {}">vs first</th>"#,
                esc(&sessions[0].0)
            );
            col += 1;
        }
    }
    out.push_str("</tr></thead><tbody>");
    for (ri, (_, name)) in keys.iter().enumerate() {
        let _ = write!(
            out,
            r#"<tr><td class="name" data-v="{0}">{0}</td>"#,
            esc(name)
        );
        for col in &columns {
            out.push_str(&col[ri]);
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_split_at_the_point() {
        let a = aligned(0.014137, 1e3, "ms", Some(0.0008));
        assert_eq!(
            a,
            Aligned {
                int: "14".into(),
                frac: ".1".into()
            }
        );
        let a = aligned(0.5, 1.0, "s", None);
        assert_eq!(a.text(), ".5000");
        let a = aligned(1234.5, 1.0, "s", None);
        assert_eq!(a.text(), "1234");
        assert_eq!(aligned(f64::NAN, 1.0, "s", None).text(), "n/a");
    }

    #[test]
    fn ratios() {
        assert_eq!(ratio_text(1.1234), "1.12×");
        assert_eq!(ratio_text(12.34), "12.3×");
        assert_eq!(ratio_text(f64::NAN), "n/a");
    }
}
