//! The report's plots, each an SVG drawn from stored results: per benchmark a histogram with a
//! density curve, a box plot with every run, the run sequence (with the machine's environment
//! when recorded), the precision evolution and per-setup distributions; per session a forest
//! plot of ratios and paired-round scatter plots.
//!
//! For: choosing what each plot shows and drawing it with `svg.rs`. Not for: page layout,
//! tables, or computing anything a results file already holds (medians, CIs, verdicts).

use super::data::{self, Metric, Point, Role};
use super::svg::{color, esc, pad_domain, Anchor, Canvas, Frame, Scale};
use super::table::{bench_anchor, ratio_text};
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
    fn for_values(metric: Metric, xs: &[f64]) -> Unit {
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

/// Deterministic jitter in [-0.5, 0.5) from an index.
fn jitter(i: usize) -> f64 {
    let h = (i as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(17);
    (h % 10_000) as f64 / 10_000.0 - 0.5
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

/// Histogram of the counted runs with a Gaussian KDE, the median and its CI marked.
fn histogram(b: &Benchmark, metric: Metric, xs: &[f64], unit: Unit, dom: (f64, f64)) -> Canvas {
    let mut c = Canvas::new(W, H);
    title_text(&mut c, &format!("Distribution of {}", metric.label()));
    let frame_of = |ymax: f64| Frame {
        left: M_LEFT,
        top: M_TOP,
        width: W - M_LEFT - M_RIGHT,
        height: H - M_TOP - M_BOTTOM,
        x: Scale::linear(dom, (M_LEFT, W - M_RIGHT)),
        y: Scale::counts((0.0, ymax), (H - M_BOTTOM, M_TOP)),
    };
    if xs.is_empty() {
        frame_of(1.0).axes(
            &mut c,
            &format!("{} ({})", metric.label(), unit.unit),
            "runs",
            true,
        );
        empty_plot(&mut c, "no counted runs");
        return c;
    }
    let vs: Vec<f64> = xs.iter().map(|&x| unit.v(x)).collect();
    let (lo, hi) = (
        vs.iter().copied().fold(f64::INFINITY, f64::min),
        vs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let bins = bin_count(&vs);
    let width = if hi > lo {
        (hi - lo) / bins as f64
    } else {
        0.0
    };
    let mut counts = vec![0usize; bins];
    for &v in &vs {
        let k = if width > 0.0 {
            (((v - lo) / width) as usize).min(bins - 1)
        } else {
            bins / 2
        };
        counts[k] += 1;
    }
    let kde: Option<(Vec<f64>, Vec<f64>)> = bandwidth(&vs).and_then(|h| {
        let grid: Vec<f64> = (0..=160)
            .map(|i| dom.0 + (dom.1 - dom.0) * i as f64 / 160.0)
            .collect();
        let d = stats::gaussian_kde(&vs, h, &grid)?;
        // Scale the density to counts per bin so it overlays the bars.
        let per_bin = if width > 0.0 { width } else { h };
        let f = vs.len() as f64 * per_bin;
        Some((grid, d.into_iter().map(|y| y * f).collect()))
    });
    let max_count = counts.iter().copied().max().unwrap_or(1) as f64;
    let max_kde = kde
        .as_ref()
        .map(|(_, d)| d.iter().copied().fold(0.0, f64::max))
        .unwrap_or(0.0);
    let f = frame_of((max_count.max(max_kde) * 1.12).max(1.0));
    let summary = metric.summary(&b.summary);
    // CI band and median under the bars.
    if let Some(m) = summary.filter(|m| m.median_ci_exact) {
        let (x0, x1) = (
            f.x.map(unit.v(m.median_ci_low)),
            f.x.map(unit.v(m.median_ci_high)),
        );
        c.rect(x0, f.top, (x1 - x0).max(1.0), f.height, color::BAND, 0.35);
    }
    f.axes(
        &mut c,
        &format!("{} ({})", metric.label(), unit.unit),
        "runs",
        true,
    );
    for (k, &n) in counts.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let (a, z) = if width > 0.0 {
            (lo + width * k as f64, lo + width * (k + 1) as f64)
        } else {
            let d = (dom.1 - dom.0) / 40.0;
            (lo - d, lo + d)
        };
        let (x0, x1) = (f.x.map(a), f.x.map(z));
        let y = f.y.map(n as f64);
        c.titled(
            &format!("{n} runs in {} … {} {}", short(a), short(z), unit.unit),
            |c| {
                c.rect_outline(
                    x0 + 0.5,
                    y,
                    (x1 - x0 - 1.0).max(0.5),
                    f.bottom() - y,
                    color::PRIMARY_LIGHT,
                    color::PRIMARY,
                )
            },
        );
    }
    if let Some((grid, d)) = &kde {
        let pts: Vec<(f64, f64)> = grid
            .iter()
            .zip(d)
            .map(|(&g, &y)| (f.x.map(g), f.y.map(y)))
            .collect();
        c.polyline(&pts, color::INK, 1.6);
    }
    let med = summary.map(|m| m.median).or_else(|| median_of(xs));
    if let Some(med) = med {
        let x = f.x.map(unit.v(med));
        c.line(x, f.top, x, f.bottom(), color::ACCENT, 2.0);
    }
    let mut lx = M_LEFT;
    lx = legend(&mut c, lx, 34.0, color::PRIMARY_LIGHT, "runs");
    lx = legend(&mut c, lx, 34.0, color::ACCENT, "median");
    if summary.is_some_and(|m| m.median_ci_exact) {
        lx = legend(&mut c, lx, 34.0, color::BAND, "95% CI");
    }
    if kde.is_some() {
        legend(&mut c, lx, 34.0, color::INK, "KDE");
    }
    c
}

/// Number of histogram bins: Freedman–Diaconis width (2·IQR·n^(−1/3)), so a few far outliers
/// do not squash the bulk into one bar; between 5 and 60 bins.
fn bin_count(vs: &[f64]) -> usize {
    let s = stats::sorted_without_nan(vs);
    let (Some(lo), Some(hi)) = (s.first(), s.last()) else {
        return 5;
    };
    let iqr = match (stats::quantile(&s, 0.25), stats::quantile(&s, 0.75)) {
        (Some(a), Some(b)) => b - a,
        _ => 0.0,
    };
    let w = 2.0 * iqr * (s.len() as f64).powf(-1.0 / 3.0);
    let by_fd = if w > 0.0 { ((hi - lo) / w).ceil() } else { 0.0 };
    let by_sqrt = (s.len() as f64).sqrt().ceil();
    let k = if by_fd.is_finite() && by_fd > 0.0 {
        by_fd
    } else {
        by_sqrt
    };
    (k as usize).clamp(5, 60)
}

/// Kernel bandwidth of the density curve: Silverman's rule of thumb with the robust spread
/// `min(σ, IQR/1.34)` (so outliers do not blur the bulk), falling back to
/// [`stats::silverman_bandwidth`] when the IQR is zero.
fn bandwidth(vs: &[f64]) -> Option<f64> {
    let h = stats::silverman_bandwidth(vs)?;
    let s = stats::sorted_without_nan(vs);
    let iqr = stats::quantile(&s, 0.75)? - stats::quantile(&s, 0.25)?;
    let n = s.len() as f64;
    let mean = s.iter().sum::<f64>() / n;
    let sd = (s.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)).sqrt();
    let robust = 0.9 * sd.min(iqr / 1.34) * n.powf(-0.2);
    Some(if robust > 0.0 && robust.is_finite() {
        robust
    } else {
        h
    })
}

fn short(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Five numbers of a box: whiskers at the furthest values within Tukey's 1.5·IQR fences.
struct BoxStats {
    q1: f64,
    median: f64,
    q3: f64,
    low: f64,
    high: f64,
}

fn box_stats(xs: &[f64]) -> Option<BoxStats> {
    let s = stats::sorted_without_nan(xs);
    let q1 = stats::quantile(&s, 0.25)?;
    let q3 = stats::quantile(&s, 0.75)?;
    let median = stats::median(&s)?;
    let iqr = q3 - q1;
    let (lf, hf) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
    let low = s.iter().copied().find(|&v| v >= lf).unwrap_or(q1);
    let high = s.iter().rev().copied().find(|&v| v <= hf).unwrap_or(q3);
    Some(BoxStats {
        q1,
        median,
        q3,
        low,
        high,
    })
}

/// Draws a horizontal box with its points at vertical centre `cy` (display units).
fn draw_box(c: &mut Canvas, x: &Scale, vs: &[f64], cy: f64, half: f64, fill: &str, stroke: &str) {
    let Some(bs) = box_stats(vs) else { return };
    let (l, h) = (x.map(bs.low), x.map(bs.high));
    c.line(l, cy, x.map(bs.q1), cy, stroke, 1.2);
    c.line(x.map(bs.q3), cy, h, cy, stroke, 1.2);
    c.line(l, cy - half / 2.0, l, cy + half / 2.0, stroke, 1.2);
    c.line(h, cy - half / 2.0, h, cy + half / 2.0, stroke, 1.2);
    let (x0, x1) = (x.map(bs.q1), x.map(bs.q3));
    c.rect_outline(x0, cy - half, (x1 - x0).max(1.0), 2.0 * half, fill, stroke);
    let m = x.map(bs.median);
    c.line(m, cy - half, m, cy + half, color::ACCENT, 2.2);
    let iqr = bs.q3 - bs.q1;
    for (i, &v) in vs.iter().enumerate() {
        let outlier = v < bs.q1 - 1.5 * iqr || v > bs.q3 + 1.5 * iqr;
        let y = cy + jitter(i) * half * 1.6;
        if outlier {
            c.triangle(x.map(v), y, 3.6, color::ACCENT);
        } else {
            c.circle(x.map(v), y, 2.0, color::INK, 0.45);
        }
    }
}

/// Box plot of the counted runs with every run as a point, the median CI as a band.
fn box_plot(b: &Benchmark, metric: Metric, xs: &[f64], unit: Unit, dom: (f64, f64)) -> Canvas {
    let h = 164.0;
    let mut c = Canvas::new(W, h);
    title_text(
        &mut c,
        &format!("Box plot of {} (whiskers at 1.5 IQR)", metric.label()),
    );
    let f = Frame {
        left: M_LEFT,
        top: M_TOP,
        width: W - M_LEFT - M_RIGHT,
        height: h - M_TOP - M_BOTTOM,
        x: Scale::linear(dom, (M_LEFT, W - M_RIGHT)),
        y: Scale::linear((0.0, 1.0), (h - M_BOTTOM, M_TOP)),
    };
    if let Some(m) = metric.summary(&b.summary).filter(|m| m.median_ci_exact) {
        let (x0, x1) = (
            f.x.map(unit.v(m.median_ci_low)),
            f.x.map(unit.v(m.median_ci_high)),
        );
        c.rect(x0, f.top, (x1 - x0).max(1.0), f.height, color::BAND, 0.35);
    }
    f.axes(
        &mut c,
        &format!("{} ({})", metric.label(), unit.unit),
        "",
        false,
    );
    if xs.is_empty() {
        empty_plot(&mut c, "no counted runs");
        return c;
    }
    let vs: Vec<f64> = xs.iter().map(|&x| unit.v(x)).collect();
    draw_box(
        &mut c,
        &f.x,
        &vs,
        f.top + f.height / 2.0,
        f.height * 0.3,
        "#eef4fb",
        color::PRIMARY,
    );
    c
}

/// Value against run index: warm-up shaded, outliers and excluded runs marked, Tukey fences
/// dashed; the machine's temperature, other load and interference below when recorded.
fn sequence(b: &Benchmark, metric: Metric, pts: &[Point], unit: Unit) -> Canvas {
    let env = data::environment(b);
    let has_temp = env.iter().any(|e| e.temp_before_c.is_some());
    let has_other = env.iter().any(|e| e.other_cpu_time.is_some());
    let has_freq = env.iter().any(|e| e.freq_mhz.is_some());
    let interfered: Vec<usize> = env
        .iter()
        .filter(|e| e.interfered)
        .map(|e| e.index)
        .collect();
    let strip = 58.0;
    let gap = 12.0;
    let main_h = H - M_TOP - M_BOTTOM;
    let n_strips = has_temp as usize + has_freq as usize + has_other as usize;
    let total_h = H + n_strips as f64 * (strip + gap);
    let mut c = Canvas::new(W, total_h);
    title_text(
        &mut c,
        &format!("{} by run (in run order)", capitalize(metric.label())),
    );
    let max_index = pts
        .iter()
        .map(|p| p.index)
        .max()
        .unwrap_or(0)
        .max(env.iter().map(|e| e.index).max().unwrap_or(0));
    let xdom = pad_domain(0.0, max_index.max(1) as f64, 0.03);
    let counted: Vec<f64> = pts
        .iter()
        .filter(|p| p.role == Role::Counted)
        .map(|p| unit.v(p.value))
        .collect();
    let all: Vec<f64> = pts.iter().map(|p| unit.v(p.value)).collect();
    let basis = if counted.is_empty() { &all } else { &counted };
    let mut lo = basis.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = basis.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo { hi - lo } else { hi.abs() * 0.1 };
    for v in &all {
        lo = lo.min(v.max(lo - span));
        hi = hi.max(v.min(hi + span));
    }
    let frame = Frame {
        left: M_LEFT,
        top: M_TOP,
        width: W - M_LEFT - M_RIGHT,
        height: main_h,
        x: Scale::linear(xdom, (M_LEFT, W - M_RIGHT)),
        y: Scale::linear(pad_domain(lo, hi, 0.08), (M_TOP + main_h, M_TOP)),
    };
    // Warm-up region.
    let warm_max = pts
        .iter()
        .filter(|p| p.role == Role::Warmup)
        .map(|p| p.index)
        .max();
    if let Some(wm) = warm_max {
        let x1 = frame.x.map(wm as f64 + 0.5);
        c.rect(
            frame.left,
            frame.top,
            x1 - frame.left,
            frame.height,
            color::WARMUP,
            0.18,
        );
        c.text(
            frame.left + 4.0,
            frame.top + 12.0,
            "warm-up",
            Anchor::Start,
            10.0,
            color::MUTED,
        );
    }
    let x_title = if n_strips == 0 { "run index" } else { "" };
    frame.axes_with(
        &mut c,
        x_title,
        &format!("{} ({})", metric.label(), unit.unit),
        true,
        n_strips == 0,
    );
    if pts.is_empty() {
        empty_plot(&mut c, "no runs");
        return c;
    }
    // Tukey fences over the counted runs.
    let counted_pts: Vec<&Point> = pts.iter().filter(|p| p.role == Role::Counted).collect();
    let out = stats::tukey_outliers(&counted);
    let mut outlier_idx: Vec<usize> = Vec::new();
    if let Some(o) = &out {
        for fence in [o.q1 - 1.5 * o.iqr, o.q3 + 1.5 * o.iqr] {
            if fence >= frame.y.d0 && fence <= frame.y.d1 && o.iqr > 0.0 {
                let y = frame.y.map(fence);
                c.dashed(frame.left, y, frame.right(), y, color::BAND, 1.0);
            }
        }
        outlier_idx = o
            .indices
            .iter()
            .map(|(i, _)| counted_pts[*i].index)
            .collect();
    }
    if let Some(med) = median_of(&counted) {
        let y = frame.y.map(med);
        c.dashed(frame.left, y, frame.right(), y, color::ACCENT, 1.2);
    }
    // A thin line through the counted runs shows the order.
    let line: Vec<(f64, f64)> = counted_pts
        .iter()
        .map(|p| (frame.x.map(p.index as f64), frame.y.map(unit.v(p.value))))
        .collect();
    c.polyline(&line, color::PRIMARY_LIGHT, 1.0);
    let outlier_idx: std::collections::HashSet<usize> = outlier_idx.into_iter().collect();
    let interfered_set: std::collections::HashSet<usize> = interfered.iter().copied().collect();
    // Hover titles on every point only while the file stays small.
    let tips = pts.len() <= 2000;
    for p in pts {
        let (x, y) = (frame.x.map(p.index as f64), frame.y.map(unit.v(p.value)));
        let draw = |c: &mut Canvas| match p.role {
            Role::Warmup => c.ring(x, y, 2.6, color::WARMUP),
            Role::Excluded => c.cross(x, y, 3.5, color::WARN),
            Role::Counted if outlier_idx.contains(&p.index) => c.triangle(x, y, 4.0, color::ACCENT),
            Role::Counted => c.circle(x, y, 2.4, color::PRIMARY, 0.9),
        };
        if tips {
            let tip = format!("run {}: {}", p.index, unit.fmt(p.value, None));
            c.titled(&tip, draw);
        } else {
            draw(&mut c);
        }
        if interfered_set.contains(&p.index) {
            c.ring(x, y, 5.5, color::WARN);
        }
    }
    let mut lx = M_LEFT;
    lx = legend(&mut c, lx, 34.0, color::PRIMARY, "counted");
    lx = legend(&mut c, lx, 34.0, color::ACCENT, "outlier / median");
    lx = legend(&mut c, lx, 34.0, color::BAND, "fences");
    if !interfered.is_empty() || pts.iter().any(|p| p.role == Role::Excluded) {
        legend(&mut c, lx, 34.0, color::WARN, "interfered / excluded");
    }
    // Environment strips share the x axis.
    let mut top = frame.bottom() + gap;
    let mut strip_frame =
        |c: &mut Canvas, label: &str, series: Vec<(f64, f64)>, bars: bool, last: bool| {
            let ys: Vec<f64> = series.iter().map(|p| p.1).collect();
            let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let ydom = if bars {
                pad_domain(0.0, hi.max(0.0), 0.05)
            } else {
                pad_domain(lo, hi, 0.1)
            };
            let f = Frame {
                left: M_LEFT,
                top,
                width: W - M_LEFT - M_RIGHT,
                height: strip,
                x: frame.x,
                y: Scale::linear(ydom, (top + strip, top)),
            };
            f.axes_with(c, if last { "run index" } else { "" }, "", true, last);
            c.text(
                f.left + 4.0,
                f.top + 10.0,
                label,
                Anchor::Start,
                10.0,
                color::MUTED,
            );
            if bars {
                for (x, y) in &series {
                    let px = f.x.map(*x);
                    let py = f.y.map(*y);
                    c.line(px, f.bottom(), px, py, color::MUTED, 2.0);
                }
            } else {
                let pts: Vec<(f64, f64)> = series
                    .iter()
                    .map(|(x, y)| (f.x.map(*x), f.y.map(*y)))
                    .collect();
                c.polyline(&pts, color::ACCENT, 1.4);
            }
            for i in &interfered {
                let px = f.x.map(*i as f64);
                c.line(px, f.bottom() - 5.0, px, f.bottom(), color::WARN, 2.0);
            }
            top += strip + gap;
        };
    if has_temp {
        let s: Vec<(f64, f64)> = env
            .iter()
            .filter_map(|e| Some((e.index as f64, e.temp_before_c?)))
            .collect();
        strip_frame(
            &mut c,
            "temperature before run (°C)",
            s,
            false,
            !has_other && !has_freq,
        );
    }
    if has_freq {
        let s: Vec<(f64, f64)> = env
            .iter()
            .filter_map(|e| Some((e.index as f64, e.freq_mhz?)))
            .collect();
        strip_frame(
            &mut c,
            "CPU frequency before run (MHz)",
            s,
            false,
            !has_other,
        );
    }
    if has_other {
        let ou = Unit::for_values(
            Metric::CpuTime,
            &env.iter()
                .filter_map(|e| e.other_cpu_time)
                .collect::<Vec<_>>(),
        );
        let s: Vec<(f64, f64)> = env
            .iter()
            .filter_map(|e| Some((e.index as f64, ou.v(e.other_cpu_time?))))
            .collect();
        strip_frame(
            &mut c,
            &format!("CPU time of other processes ({})", ou.unit),
            s,
            true,
            true,
        );
    }
    c
}

fn capitalize(s: &str) -> String {
    let mut ch = s.chars();
    match ch.next() {
        Some(f) => f.to_uppercase().collect::<String>() + ch.as_str(),
        None => String::new(),
    }
}

/// Running median and interquartile range as counted runs accumulate, relative to the final
/// median (seed 000, fig. 16): where the lines settle, more runs stop paying.
fn precision(metric: Metric, xs: &[f64], target: f64) -> Canvas {
    let mut c = Canvas::new(W, H);
    title_text(&mut c, "Precision as runs accumulate");
    let n = xs.len();
    let final_med = median_of(xs).filter(|m| *m != 0.0 && m.is_finite());
    let Some(final_med) = final_med.filter(|_| n >= 2) else {
        let f = Frame {
            left: M_LEFT,
            top: M_TOP,
            width: W - M_LEFT - M_RIGHT,
            height: H - M_TOP - M_BOTTOM,
            x: Scale::linear((1.0, 2.0), (M_LEFT, W - M_RIGHT)),
            y: Scale::linear((-1.0, 1.0), (H - M_BOTTOM, M_TOP)),
        };
        f.axes(
            &mut c,
            "counted runs",
            "difference from final median (%)",
            true,
        );
        empty_plot(&mut c, "needs at least two counted runs");
        return c;
    };
    // Evaluate at up to ~240 run counts.
    let step = (n / 240).max(1);
    let mut sorted: Vec<f64> = Vec::with_capacity(n);
    let mut rows: Vec<(f64, f64, f64, f64)> = Vec::new();
    for (k, &x) in xs.iter().enumerate() {
        if x.is_nan() {
            continue;
        }
        let at = sorted.partition_point(|v| *v < x);
        sorted.insert(at, x);
        let count = k + 1;
        if count % step == 0 || count == n {
            let q = |p: f64| stats::quantile(&sorted, p).map(|v| (v / final_med - 1.0) * 100.0);
            if let (Some(a), Some(m), Some(z)) = (q(0.25), q(0.5), q(0.75)) {
                rows.push((count as f64, a, m, z));
            }
        }
    }
    let lo = rows.iter().map(|r| r.1).fold(0.0, f64::min);
    let hi = rows.iter().map(|r| r.3).fold(0.0, f64::max);
    let f = Frame {
        left: M_LEFT,
        top: M_TOP,
        width: W - M_LEFT - M_RIGHT,
        height: H - M_TOP - M_BOTTOM,
        x: Scale::linear((1.0, n as f64), (M_LEFT, W - M_RIGHT)),
        y: Scale::linear(pad_domain(lo, hi, 0.08), (H - M_BOTTOM, M_TOP)),
    };
    // ± precision target guide when it is in view.
    for g in [-target * 100.0, target * 100.0] {
        if g > f.y.d0 && g < f.y.d1 {
            let y = f.y.map(g);
            c.dashed(f.left, y, f.right(), y, color::GOOD, 1.0);
        }
    }
    f.axes(
        &mut c,
        "counted runs",
        "difference from final median (%)",
        true,
    );
    let mut band: Vec<(f64, f64)> = rows.iter().map(|r| (f.x.map(r.0), f.y.map(r.3))).collect();
    band.extend(rows.iter().rev().map(|r| (f.x.map(r.0), f.y.map(r.1))));
    c.polygon(&band, color::PRIMARY_LIGHT, 0.55);
    let y0 = f.y.map(0.0);
    c.line(f.left, y0, f.right(), y0, color::AXIS, 1.0);
    let med: Vec<(f64, f64)> = rows.iter().map(|r| (f.x.map(r.0), f.y.map(r.2))).collect();
    c.polyline(&med, color::PRIMARY, 2.0);
    let mut lx = M_LEFT;
    lx = legend(&mut c, lx, 34.0, color::PRIMARY, "running median");
    lx = legend(&mut c, lx, 34.0, color::PRIMARY_LIGHT, "IQR");
    let pct = format!("±{}% target", short(target * 100.0));
    legend(&mut c, lx, 34.0, color::GOOD, &pct);
    let _ = metric;
    c
}

/// Per-setup distributions of a randomized-setup benchmark: one box per setup.
fn setups(metric: Metric, groups: &[(String, Vec<f64>)]) -> Canvas {
    let row = 22.0;
    let left = 110.0;
    let h = M_TOP + M_BOTTOM + row * groups.len() as f64;
    let mut c = Canvas::new(W, h);
    title_text(
        &mut c,
        &format!("{} per randomized setup", capitalize(metric.label())),
    );
    let all: Vec<f64> = groups.iter().flat_map(|g| g.1.iter().copied()).collect();
    let unit = Unit::for_values(metric, &all);
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let f = Frame {
        left,
        top: M_TOP,
        width: W - left - M_RIGHT,
        height: row * groups.len() as f64,
        x: Scale::linear(
            pad_domain(unit.v(lo), unit.v(hi), 0.05),
            (left, W - M_RIGHT),
        ),
        y: Scale::linear(
            (0.0, groups.len() as f64),
            (M_TOP, M_TOP + row * groups.len() as f64),
        ),
    };
    f.axes(
        &mut c,
        &format!("{} ({})", metric.label(), unit.unit),
        "",
        false,
    );
    for (i, (name, vs)) in groups.iter().enumerate() {
        let cy = f.y.map(i as f64 + 0.5);
        let label = format!("setup {}", truncate(name, 14));
        c.text(left - 8.0, cy + 4.0, &label, Anchor::End, FONT, color::INK);
        let vs: Vec<f64> = vs.iter().map(|&v| unit.v(v)).collect();
        let col = color::SERIES[i % color::SERIES.len()];
        draw_box(&mut c, &f.x, &vs, cy, row * 0.3, "#ffffff", col);
    }
    c
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let t: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{t}…")
    }
}

/// Forest plot: each candidate/reference ratio with its CI on a log axis, 1 marked, ±1% noise
/// band shaded.
fn forest(s: &Session, comps: &[&ComparisonRecord]) -> Canvas {
    let width = 900.0;
    let left = 250.0;
    let right = 280.0;
    let row = 34.0;
    let h = 34.0 + M_BOTTOM + row * comps.len() as f64 + 8.0;
    let mut c = Canvas::new(width, h);
    const TOP: f64 = 34.0;
    let metric_label = comps
        .first()
        .and_then(|c| Metric::from_key(&c.metric))
        .map(|m| m.label())
        .unwrap_or("value");
    c.text(
        16.0,
        18.0,
        &format!("Ratios of median {metric_label} to the reference (log scale; below 1 = faster)"),
        Anchor::Start,
        13.0,
        color::INK,
    );
    let mut lo: f64 = 0.99;
    let mut hi: f64 = 1.01;
    for k in comps {
        for v in [k.ratio, k.ratio_ci_low, k.ratio_ci_high] {
            if v.is_finite() && v > 0.0 {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    let pad = (hi / lo).ln() * 0.08;
    let (lo, hi) = (lo / pad.exp(), hi * pad.exp());
    let f = Frame {
        left,
        top: TOP,
        width: width - left - right,
        height: row * comps.len() as f64 + 8.0,
        x: Scale::log((lo, hi), (left, width - right)),
        y: Scale::linear(
            (0.0, comps.len() as f64),
            (TOP + 4.0, TOP + 4.0 + row * comps.len() as f64),
        ),
    };
    let (b0, b1) = (f.x.map(0.99), f.x.map(1.01));
    c.rect(b0, f.top, (b1 - b0).max(1.0), f.height, color::GOOD, 0.12);
    f.axes(&mut c, "candidate / reference (× , 95% CI)", "", false);
    let one = f.x.map(1.0);
    c.line(one, f.top, one, f.bottom(), color::INK, 1.2);
    for (i, k) in comps.iter().enumerate() {
        let cy = f.y.map(i as f64 + 0.5);
        let name = s
            .benchmarks
            .get(k.candidate)
            .map(data::display_name)
            .unwrap_or_else(|| k.candidate_name.clone());
        let refname = s
            .benchmarks
            .get(k.reference)
            .map(data::display_name)
            .unwrap_or_else(|| k.reference_name.clone());
        c.text(
            left - 10.0,
            cy - 1.0,
            &truncate(&name, 34),
            Anchor::End,
            12.0,
            color::INK,
        );
        c.text(
            left - 10.0,
            cy + 11.0,
            &format!("vs {}", truncate(&refname, 31)),
            Anchor::End,
            10.0,
            color::MUTED,
        );
        let col = match k.verdict.as_str() {
            "faster" => color::GOOD,
            "slower" => color::WARN,
            _ => color::MUTED,
        };
        c.titled(&k.words, |c| {
            let (x0, x1) = (f.x.map(k.ratio_ci_low), f.x.map(k.ratio_ci_high));
            c.line(x0, cy, x1, cy, col, 2.2);
            c.line(x0, cy - 5.0, x0, cy + 5.0, col, 1.6);
            c.line(x1, cy - 5.0, x1, cy + 5.0, col, 1.6);
            let x = f.x.map(k.ratio);
            c.rect(x - 4.5, cy - 4.5, 9.0, 9.0, col, 1.0);
        });
        let verdict = k.verdict.replace('-', " ");
        c.text(
            width - right + 12.0,
            cy - 1.0,
            &format!(
                "{} [{} – {}]",
                ratio_text(k.ratio),
                ratio_text(k.ratio_ci_low),
                ratio_text(k.ratio_ci_high)
            ),
            Anchor::Start,
            11.5,
            color::INK,
        );
        c.text(
            width - right + 12.0,
            cy + 11.0,
            &format!("{verdict}, {} (Holm)", p_text(k.p_adjusted)),
            Anchor::Start,
            10.0,
            col,
        );
    }
    c
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

/// Paired rounds: each point is one round, reference on x and candidate on y; the diagonal is
/// "equal", the dashed line the median ratio.
fn paired(s: &Session, k: &ComparisonRecord, metric: Metric, pairs: &[(f64, f64)]) -> Canvas {
    let size = 340.0;
    let mut c = Canvas::new(size + 40.0, size);
    let all: Vec<f64> = pairs.iter().flat_map(|p| [p.0, p.1]).collect();
    let unit = Unit::for_values(metric, &all);
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let dom = pad_domain(unit.v(lo), unit.v(hi), 0.06);
    let left = 66.0;
    let f = Frame {
        left,
        top: M_TOP,
        width: size - left - 4.0,
        height: size - M_TOP - M_BOTTOM,
        x: Scale::linear(dom, (left, size - 4.0)),
        y: Scale::linear(dom, (size - M_BOTTOM, M_TOP)),
    };
    let cand = s
        .benchmarks
        .get(k.candidate)
        .map(|b| b.name.as_str())
        .unwrap_or(&k.candidate_name);
    let refn = s
        .benchmarks
        .get(k.reference)
        .map(|b| b.name.as_str())
        .unwrap_or(&k.reference_name);
    c.text(
        16.0,
        18.0,
        &format!(
            "Paired rounds: {} vs {}",
            truncate(cand, 20),
            truncate(refn, 20)
        ),
        Anchor::Start,
        13.0,
        color::INK,
    );
    f.axes(
        &mut c,
        &format!(
            "{} ({}) of {}",
            truncate(refn, 24),
            unit.unit,
            metric.label()
        ),
        &format!("{} ({})", truncate(cand, 24), unit.unit),
        true,
    );
    let (a, z) = (f.x.map(dom.0), f.x.map(dom.1));
    c.line(a, f.y.map(dom.0), z, f.y.map(dom.1), color::AXIS, 1.0);
    if k.ratio.is_finite() && k.ratio > 0.0 {
        c.dashed(
            a,
            f.y.map(dom.0 * k.ratio),
            z,
            f.y.map(dom.1 * k.ratio),
            color::ACCENT,
            1.2,
        );
    }
    for (i, (x, y)) in pairs.iter().enumerate() {
        let _ = i;
        c.circle(
            f.x.map(unit.v(*x)),
            f.y.map(unit.v(*y)),
            2.8,
            color::PRIMARY,
            0.7,
        );
    }
    c.text(
        size - 10.0,
        size - M_BOTTOM - 8.0,
        &format!("{} rounds", pairs.len()),
        Anchor::End,
        10.0,
        color::MUTED,
    );
    c
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
    metric: Metric,
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
pub fn session_plots(file: usize, s: &Session, metric: Metric) -> Vec<Plot> {
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
    let title = format!("Forest plot of {} ratios", metric.label());
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

/// The memory timelines of a benchmark's runs (`--memory-sample`): bytes of the run group over
/// seconds since spawn, one line per run (counted runs in colour, the others grey), or `None`
/// when no run has one. Drawn for the meters block (`report::meters`), not the plot grid.
pub fn memory_timeline(b: &Benchmark, id: &str) -> Option<String> {
    let lines: Vec<(bool, &Vec<[f64; 2]>)> = b
        .runs
        .iter()
        .filter_map(|r| Some((r.counted, r.meters.memory_timeline.as_ref()?)))
        .filter(|(_, t)| !t.is_empty())
        .collect();
    if lines.is_empty() {
        return None;
    }
    let t_max = lines
        .iter()
        .flat_map(|(_, t)| t.iter().map(|p| p[0]))
        .fold(0.0, f64::max);
    let b_max = lines
        .iter()
        .flat_map(|(_, t)| t.iter().map(|p| p[1]))
        .fold(0.0, f64::max);
    let (scale, unit) = crate::units::bytes_scale(b_max.max(1.0));
    let mut c = Canvas::new(W, H);
    title_text(&mut c, "Memory of the run group over time");
    let frame = Frame {
        left: M_LEFT,
        top: M_TOP,
        width: W - M_LEFT - M_RIGHT,
        height: H - M_TOP - M_BOTTOM,
        x: Scale::linear((0.0, t_max.max(1e-3)), (M_LEFT, W - M_RIGHT)),
        y: Scale::linear(
            (0.0, (b_max * scale).max(1e-9) * 1.05),
            (H - M_BOTTOM, M_TOP),
        ),
    };
    frame.axes(
        &mut c,
        "seconds since spawn",
        &format!("memory ({unit})"),
        true,
    );
    for (i, (counted, t)) in lines.iter().enumerate() {
        let pts: Vec<(f64, f64)> = t
            .iter()
            .map(|p| (frame.x.map(p[0]), frame.y.map(p[1] * scale)))
            .collect();
        let stroke = if *counted {
            color::SERIES[i % color::SERIES.len()]
        } else {
            color::WARMUP
        };
        c.polyline(&pts, stroke, 1.5);
    }
    Some(c.finish(id, "plot-memory", "Memory of the run group over time"))
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

    #[test]
    fn jitter_is_bounded() {
        for i in 0..1000 {
            let j = jitter(i);
            assert!((-0.5..0.5).contains(&j));
        }
    }

    #[test]
    fn box_stats_of_one_value() {
        let b = box_stats(&[3.0]).unwrap();
        assert_eq!(
            (b.low, b.q1, b.median, b.q3, b.high),
            (3.0, 3.0, 3.0, 3.0, 3.0)
        );
        assert!(box_stats(&[]).is_none());
    }

    #[test]
    fn precision_handles_tiny_samples() {
        assert!(precision(Metric::WallTime, &[], 0.01)
            .finish("x", "y", "z")
            .contains("needs at least two"));
        assert!(precision(Metric::WallTime, &[0.0, 0.0], 0.01)
            .finish("x", "y", "z")
            .contains("needs"));
        let s = precision(Metric::WallTime, &[1.0, 2.0, 3.0], 0.01).finish("x", "y", "z");
        assert!(s.contains("<path"));
    }
}
