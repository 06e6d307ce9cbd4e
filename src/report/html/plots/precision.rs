//! The precision evolution plot: the running median and interquartile range as counted runs
//! accumulate, relative to the final median, against the stop rule's precision target.
//!
//! For: [`precision`], drawn with `svg.rs`. Not for: the target's parsing from the stop rule
//! (`precision_target`, in `mod.rs`) or the run sequence itself (`sequence.rs`).

use super::{
    empty_plot, legend, median_of, short, title_text, H, M_BOTTOM, M_LEFT, M_RIGHT, M_TOP, W,
};
use crate::report::html::data::Metric;
use crate::report::html::svg::{color, pad_domain, Canvas, Frame, Scale};
use crate::stats;

/// Running median and interquartile range as counted runs accumulate, relative to the final
/// median (seed 000, fig. 16): where the lines settle, more runs stop paying.
pub(super) fn precision(metric: &Metric, xs: &[f64], target: f64) -> Canvas {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_handles_tiny_samples() {
        assert!(precision(&Metric::WallTime, &[], 0.01)
            .finish("x", "y", "z")
            .contains("needs at least two"));
        assert!(precision(&Metric::WallTime, &[0.0, 0.0], 0.01)
            .finish("x", "y", "z")
            .contains("needs"));
        let s = precision(&Metric::WallTime, &[1.0, 2.0, 3.0], 0.01).finish("x", "y", "z");
        assert!(s.contains("<path"));
    }
}
