//! The report's plots, each an SVG drawn from stored results: per benchmark a histogram with a
//! density curve, a box plot with every run, the run sequence (with the machine's environment
//! when recorded), the precision evolution and per-setup distributions; per session a forest
//! plot of ratios and paired-round scatter plots.
//!
//! For: choosing what each plot shows and drawing it with `svg.rs`. Not for: page layout,
//! tables, or computing anything a results file already holds (medians, CIs, verdicts).
//!
//! This file: the [`Plot`] record, the shared sizes, display `Unit` and small drawing helpers
//! (title, legend, empty plot, value domain), the precision target, and the plot sets of a
//! benchmark ([`benchmark_plots`]) and a session ([`session_plots`]). One file per kind beside
//! it: `distribution.rs` (histogram, box, per-setup boxes), `sequence.rs`, `precision.rs`,
//! `comparison.rs` (forest, paired rounds), `memory.rs` (the meters' memory timeline).

mod comparison;
mod distribution;
mod memory;
mod precision;
mod sequence;

pub use memory::memory_timeline;

use comparison::{forest, paired};
use distribution::{box_plot, histogram, setups};
use precision::precision;
use sequence::sequence;

use super::data::{self, Metric, Role};
use super::svg::{color, esc, pad_domain, Anchor, Canvas};
use super::table::bench_anchor;
use crate::results::{Benchmark, ComparisonRecord, MetricSummary, Session};
use crate::stats;

/// What a plot shows; its CSS class is `plot-<slug>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlotKind {
    Histogram,
    Box,
    Sequence,
    Precision,
    Setups,
    Forest,
    Paired,
    /// Median against a scanned parameter with the fitted power law (`scaling.rs`).
    Scaling,
}

impl PlotKind {
    pub fn slug(self) -> &'static str {
        match self {
            PlotKind::Histogram => "hist",
            PlotKind::Box => "box",
            PlotKind::Sequence => "seq",
            PlotKind::Precision => "precision",
            PlotKind::Setups => "setups",
            PlotKind::Forest => "forest",
            PlotKind::Paired => "paired",
            PlotKind::Scaling => "scaling",
        }
    }
    pub fn class(self) -> String {
        format!("plot-{}", self.slug())
    }
}

/// One drawn plot.
#[derive(Debug, Clone)]
pub struct Plot {
    /// Unique in the page, e.g. `f0-b1-hist`.
    pub id: String,
    pub kind: PlotKind,
    pub file: usize,
    /// The benchmark, for per-benchmark plots.
    pub bench: Option<usize>,
    /// What it shows, in words (also the SVG's `<title>`).
    pub title: String,
    /// The `<svg>` element, with `xmlns`: valid inline and as a file.
    pub svg: String,
}

const W: f64 = 520.0;
const H: f64 = 262.0;
const M_LEFT: f64 = 62.0;
const M_RIGHT: f64 = 16.0;
const M_TOP: f64 = 46.0;
const M_BOTTOM: f64 = 46.0;
const FONT: f64 = 11.0;

/// Values shown in one display unit: `value * scale` in `unit`.
#[derive(Debug, Clone, Copy)]
struct Unit {
    scale: f64,
    unit: &'static str,
}

impl Unit {
    fn for_values(metric: &Metric, xs: &[f64]) -> Unit {
        let max = xs
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .map(f64::abs)
            .fold(0.0, f64::max);
        let (scale, unit) = metric.scale(max);
        Unit { scale, unit }
    }
    fn v(&self, x: f64) -> f64 {
        x * self.scale
    }
    fn fmt(&self, x: f64, res: Option<f64>) -> String {
        crate::units::format_scaled(x, self.scale, self.unit, res)
    }
}

fn title_text(c: &mut Canvas, title: &str) {
    c.text(M_LEFT, 18.0, title, Anchor::Start, 13.0, color::INK);
}

/// A legend entry at `(x, y)`: a swatch and words. Returns the x after it.
fn legend(c: &mut Canvas, x: f64, y: f64, swatch: &str, words: &str) -> f64 {
    c.rect(x, y - 8.0, 10.0, 10.0, swatch, 1.0);
    c.text(x + 14.0, y + 1.0, words, Anchor::Start, 10.5, color::MUTED);
    x + 22.0 + words.chars().count() as f64 * 5.6
}

fn empty_plot(c: &mut Canvas, why: &str) {
    c.text(
        c.width / 2.0,
        c.height / 2.0,
        why,
        Anchor::Middle,
        12.0,
        color::MUTED,
    );
}

/// The shared horizontal value domain of a benchmark's distribution plots (display units).
fn value_domain(xs: &[f64], m: Option<&MetricSummary>, unit: Unit) -> (f64, f64) {
    let mut lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if let Some(m) = m {
        for v in [m.median_ci_low, m.median_ci_high] {
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    pad_domain(unit.v(lo), unit.v(hi), 0.06)
}

fn median_of(xs: &[f64]) -> Option<f64> {
    stats::median(&stats::sorted_without_nan(xs))
}

fn short(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn capitalize(s: &str) -> String {
    let mut ch = s.chars();
    match ch.next() {
        Some(f) => f.to_uppercase().collect::<String>() + ch.as_str(),
        None => String::new(),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let t: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{t}…")
    }
}

/// A p-value for people: "p = 0.21", "p = 0.004" or "p < 0.001".
pub fn p_text(p: f64) -> String {
    if !p.is_finite() {
        "p = n/a".into()
    } else if p < 0.001 {
        "p < 0.001".into()
    } else if p < 0.01 {
        format!("p = {p:.3}")
    } else {
        format!("p = {p:.2}")
    }
}

/// The relative precision target of a stop rule such as `runs >= 10 and ci(median) < 2%`
/// (`Session.extra["stop_rule"]`); tare's default 1% when the rule names none.
pub fn precision_target(stop_rule: Option<&str>) -> f64 {
    let parse = |rule: &str| -> Option<f64> {
        let rest = &rule[rule.find("ci(median)")? + "ci(median)".len()..];
        let rest = rest
            .trim_start()
            .strip_prefix("<=")
            .or_else(|| rest.trim_start().strip_prefix('<'))?;
        let rest = rest.trim_start();
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let v: f64 = rest[..end].parse().ok()?;
        let v = if rest[end..].trim_start().starts_with('%') {
            v / 100.0
        } else {
            v
        };
        (v > 0.0 && v < 1.0).then_some(v)
    };
    stop_rule.and_then(parse).unwrap_or(0.01)
}

/// The precision target of a session, from its recorded stop rule.
pub fn session_target(s: &Session) -> f64 {
    precision_target(s.extra.get("stop_rule").and_then(|v| v.as_str()))
}

/// The plots of one benchmark; `target` is the relative precision target (0.01 for ±1%).
pub fn benchmark_plots(
    file: usize,
    bi: usize,
    b: &Benchmark,
    metric: &Metric,
    target: f64,
) -> Vec<Plot> {
    let pts = data::points(b, metric);
    let xs: Vec<f64> = pts
        .iter()
        .filter(|p| p.role == Role::Counted)
        .map(|p| p.value)
        .collect();
    let all: Vec<f64> = pts.iter().map(|p| p.value).collect();
    let unit = Unit::for_values(metric, if xs.is_empty() { &all } else { &xs });
    let dom = value_domain(&xs, metric.summary(&b.summary), unit);
    let name = data::display_name(b);
    let base = bench_anchor(file, bi);
    let mut out = Vec::new();
    let mut push = |kind: PlotKind, what: &str, c: Canvas| {
        let id = format!("{base}-{}", kind.slug());
        let title = format!("{what}: {name}");
        let svg = c.finish(&id, &kind.class(), &title);
        out.push(Plot {
            id,
            kind,
            file,
            bench: Some(bi),
            title,
            svg,
        });
    };
    push(
        PlotKind::Histogram,
        "Histogram with density",
        histogram(b, metric, &xs, unit, dom),
    );
    push(
        PlotKind::Box,
        "Box plot",
        box_plot(b, metric, &xs, unit, dom),
    );
    push(
        PlotKind::Sequence,
        "Run sequence",
        sequence(b, metric, &pts, unit),
    );
    push(
        PlotKind::Precision,
        "Precision evolution",
        precision(metric, &xs, target),
    );
    let groups = data::by_setup(b, metric);
    if !groups.is_empty() {
        push(
            PlotKind::Setups,
            "Per-setup distributions",
            setups(metric, &groups),
        );
    }
    out
}

/// The plots of a session's comparisons: one forest plot, and a paired scatter per comparison
/// with interleaved rounds.
pub fn session_plots(file: usize, s: &Session, metric: &Metric) -> Vec<Plot> {
    let comps: Vec<&ComparisonRecord> = s
        .comparisons
        .iter()
        .filter(|c| c.metric == metric.key())
        .collect();
    let mut out = Vec::new();
    if comps.is_empty() {
        return out;
    }
    let id = format!("f{file}-forest");
    let title = format!("Forest plot of {} ratios", metric.name());
    out.push(Plot {
        svg: forest(s, &comps).finish(&id, &PlotKind::Forest.class(), &title),
        id,
        kind: PlotKind::Forest,
        file,
        bench: None,
        title,
    });
    for k in comps {
        let (Some(r), Some(cand)) = (s.benchmarks.get(k.reference), s.benchmarks.get(k.candidate))
        else {
            continue;
        };
        let pairs = data::paired_rounds(r, cand, metric);
        if pairs.len() < 2 {
            continue;
        }
        let id = format!("f{file}-paired-{}-{}", k.reference, k.candidate);
        let title = format!(
            "Paired rounds: {} vs {}",
            k.candidate_name, k.reference_name
        );
        out.push(Plot {
            svg: paired(s, k, metric, &pairs).finish(&id, &PlotKind::Paired.class(), &title),
            id,
            kind: PlotKind::Paired,
            file,
            bench: Some(k.candidate),
            title,
        });
    }
    out
}

/// Escaped, for use in markup around plots.
pub fn plot_title_html(p: &Plot) -> String {
    esc(&p.title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_target_from_the_stop_rule() {
        assert_eq!(
            precision_target(Some("runs >= 20 and ci(median) < 2%")),
            0.02
        );
        assert_eq!(precision_target(Some("ci(median) <= 0.005")), 0.005);
        assert_eq!(precision_target(Some("runs >= 30")), 0.01);
        assert_eq!(precision_target(None), 0.01);
        assert_eq!(precision_target(Some("ci(median) < 150%")), 0.01);
    }
}
