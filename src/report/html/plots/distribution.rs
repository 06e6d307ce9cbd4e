//! The distribution plots of a benchmark: the histogram with its density curve, the box plot
//! with every run, and one box per randomized setup; the bins, bandwidth and Tukey boxes they
//! derive for presentation.
//!
//! For: [`histogram`], [`box_plot`] and [`setups`], drawn with `svg.rs`. Not for: plots over
//! the run order (`sequence.rs`, `precision.rs`) or across benchmarks (`comparison.rs`).

use super::{
    capitalize, empty_plot, legend, median_of, short, title_text, truncate, Unit, FONT, H,
    M_BOTTOM, M_LEFT, M_RIGHT, M_TOP, W,
};
use crate::report::html::data::Metric;
use crate::report::html::svg::{color, pad_domain, Anchor, Canvas, Frame, Scale};
use crate::results::Benchmark;
use crate::stats;

/// Deterministic jitter in [-0.5, 0.5) from an index.
fn jitter(i: usize) -> f64 {
    let h = (i as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(17);
    (h % 10_000) as f64 / 10_000.0 - 0.5
}

/// Histogram of the counted runs with a Gaussian KDE, the median and its CI marked.
pub(super) fn histogram(
    b: &Benchmark,
    metric: &Metric,
    xs: &[f64],
    unit: Unit,
    dom: (f64, f64),
) -> Canvas {
    let mut c = Canvas::new(W, H);
    title_text(&mut c, &format!("Distribution of {}", metric.name()));
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
            &format!("{} ({})", metric.name(), unit.unit),
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
        &format!("{} ({})", metric.name(), unit.unit),
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
pub(super) fn box_plot(
    b: &Benchmark,
    metric: &Metric,
    xs: &[f64],
    unit: Unit,
    dom: (f64, f64),
) -> Canvas {
    let h = 164.0;
    let mut c = Canvas::new(W, h);
    title_text(
        &mut c,
        &format!("Box plot of {} (whiskers at 1.5 IQR)", metric.name()),
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
        &format!("{} ({})", metric.name(), unit.unit),
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

/// Per-setup distributions of a randomized-setup benchmark: one box per setup.
pub(super) fn setups(metric: &Metric, groups: &[(String, Vec<f64>)]) -> Canvas {
    let row = 22.0;
    let left = 110.0;
    let h = M_TOP + M_BOTTOM + row * groups.len() as f64;
    let mut c = Canvas::new(W, h);
    title_text(
        &mut c,
        &format!("{} per randomized setup", capitalize(metric.name())),
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
        &format!("{} ({})", metric.name(), unit.unit),
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
