//! Hand-built inline SVG plots for the table page (seed 003 §7.5): a scatter plot of one
//! metric in two columns (log-log, with the diagonal) and quantile plots (cactus) of correct
//! results, plain and score-based.
//!
//! Not for: interactive plots or the full HTML report (another module's job).

use crate::report::html::svg::esc;
use std::fmt::Write;

const W: f64 = 640.0;
const H: f64 = 420.0;
const ML: f64 = 70.0;
const MR: f64 = 20.0;
const MT: f64 = 20.0;
const MB: f64 = 50.0;
const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// A log-10 axis over [lo, hi] (positive), expanded to whole decades.
struct LogAxis {
    lo: f64,
    hi: f64,
}

impl LogAxis {
    fn new(values: impl Iterator<Item = f64>) -> Option<LogAxis> {
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for v in values.filter(|v| *v > 0.0 && v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if hi <= 0.0 {
            return None;
        }
        let lo = 10f64.powf(lo.log10().floor());
        let hi = 10f64.powf(hi.log10().ceil()).max(lo * 10.0);
        Some(LogAxis { lo, hi })
    }
    fn frac(&self, v: f64) -> f64 {
        let v = v.max(self.lo);
        (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
    }
    fn ticks(&self) -> Vec<f64> {
        let mut t = Vec::new();
        let mut v = self.lo;
        while v <= self.hi * 1.0001 {
            t.push(v);
            v *= 10.0;
        }
        t
    }
}

fn tick_label(v: f64) -> String {
    crate::units::format_time(v, Some(v))
}

fn frame(svg: &mut String, title: &str, xlabel: &str, ylabel: &str) {
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11"><title>{}</title><rect x="{ML}" y="{MT}" width="{}" height="{}" fill="none" stroke="#888"/><text x="{}" y="{}" text-anchor="middle">{}</text><text transform="translate(14,{}) rotate(-90)" text-anchor="middle">{}</text>"##,
        esc(title),
        W - ML - MR,
        H - MT - MB,
        ML + (W - ML - MR) / 2.0,
        H - 8.0,
        esc(xlabel),
        MT + (H - MT - MB) / 2.0,
        esc(ylabel)
    );
}

fn y_ticks(svg: &mut String, axis: &LogAxis) {
    for t in axis.ticks() {
        let y = H - MB - axis.frac(t) * (H - MT - MB);
        let _ = write!(
            svg,
            r##"<line x1="{ML}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - MR,
            ML - 4.0,
            y + 4.0,
            tick_label(t)
        );
    }
}

/// Scatter plot of `points` (x, y, both correct) on log-log axes with the diagonal.
pub fn scatter(points: &[(f64, f64, bool)], xlabel: &str, ylabel: &str, metric: &str) -> String {
    let mut svg = String::new();
    let Some(axis) = LogAxis::new(points.iter().flat_map(|p| [p.0, p.1])) else {
        return "<p>No data for a scatter plot.</p>".into();
    };
    frame(
        &mut svg,
        &format!("{metric}: {ylabel} against {xlabel}"),
        &format!("{xlabel} ({metric})"),
        &format!("{ylabel} ({metric})"),
    );
    y_ticks(&mut svg, &axis);
    for t in axis.ticks() {
        let x = ML + axis.frac(t) * (W - ML - MR);
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{}" stroke="#eee"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            H - MB,
            H - MB + 14.0,
            tick_label(t)
        );
    }
    let _ = write!(
        svg,
        r##"<line x1="{ML}" y1="{}" x2="{}" y2="{MT}" stroke="#aaa" stroke-dasharray="4 3"/>"##,
        H - MB,
        W - MR
    );
    for &(x, y, ok) in points {
        let px = ML + axis.frac(x) * (W - ML - MR);
        let py = H - MB - axis.frac(y) * (H - MT - MB);
        let color = if ok { "#2ca02c" } else { "#999" };
        let _ = write!(
            svg,
            r#"<circle cx="{px:.1}" cy="{py:.1}" r="2.5" fill="{color}" fill-opacity="0.7"/>"#
        );
    }
    svg.push_str("</svg>");
    svg
}

/// Quantile plot: one line per series of (x, y) points, y on a log axis, x linear.
/// Used for the plain (x = n-th fastest correct result) and the score-based variant
/// (x = accumulated score, starting at the sum of penalties).
pub fn quantile(series: &[(String, Vec<(f64, f64)>)], xlabel: &str, ylabel: &str) -> String {
    let mut svg = String::new();
    let Some(axis) = LogAxis::new(series.iter().flat_map(|s| s.1.iter().map(|p| p.1))) else {
        return "<p>No correct results to plot.</p>".into();
    };
    let (mut xmin, mut xmax) = (0.0f64, 1.0f64);
    for (_, pts) in series {
        for p in pts {
            xmin = xmin.min(p.0);
            xmax = xmax.max(p.0);
        }
    }
    let xf = |x: f64| ML + (x - xmin) / (xmax - xmin) * (W - ML - MR);
    frame(&mut svg, &format!("{ylabel} by {xlabel}"), xlabel, ylabel);
    y_ticks(&mut svg, &axis);
    let step = nice_step((xmax - xmin) / 6.0);
    let mut t = (xmin / step).ceil() * step;
    while t <= xmax + 1e-9 {
        let x = xf(t);
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{}" stroke="#eee"/><text x="{x:.1}" y="{}" text-anchor="middle">{t}</text>"##,
            H - MB,
            H - MB + 14.0
        );
        t += step;
    }
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", xf(x), H - MB - axis.frac(y) * (H - MT - MB)))
            .collect();
        if !path.is_empty() {
            let _ = write!(
                svg,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/>"#,
                path.join(" ")
            );
        }
        if pts.len() <= 100 {
            for &(x, y) in pts {
                let _ = write!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{color}"/>"#,
                    xf(x),
                    H - MB - axis.frac(y) * (H - MT - MB)
                );
            }
        }
        let ly = MT + 14.0 + 14.0 * i as f64;
        let _ = write!(
            svg,
            r#"<rect x="{}" y="{}" width="10" height="10" fill="{color}"/><text x="{}" y="{ly}">{}</text>"#,
            ML + 8.0,
            ly - 9.0,
            ML + 22.0,
            esc(name)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
        .max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_are_svg_and_handle_empty_data() {
        let s = scatter(&[(0.1, 0.2, true), (1.0, 0.5, false)], "a", "b", "CPU time");
        assert!(s.starts_with("<svg") && s.contains("<circle") && s.ends_with("</svg>"));
        assert!(scatter(&[], "a", "b", "CPU").starts_with("<p>"));
        let q = quantile(
            &[("x<y".into(), vec![(1.0, 0.1), (2.0, 0.3)])],
            "n-th fastest correct result",
            "CPU time",
        );
        assert!(q.contains("<polyline") && q.contains("x&lt;y"));
        assert_eq!(nice_step(3.2), 5.0);
    }
}
