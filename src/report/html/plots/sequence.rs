//! The run sequence plot: a benchmark's value against run index (warm-up shaded, outliers and
//! excluded runs marked, Tukey fences dashed) with the machine's recorded environment in
//! strips below.
//!
//! For: [`sequence`], drawn with `svg.rs`. Not for: the distribution of the counted runs
//! (`distribution.rs`) or how the precision evolved (`precision.rs`).

use super::{
    capitalize, empty_plot, legend, median_of, title_text, Unit, H, M_BOTTOM, M_LEFT, M_RIGHT,
    M_TOP, W,
};
use crate::report::html::data::{self, Metric, Point, Role};
use crate::report::html::svg::{color, pad_domain, Anchor, Canvas, Frame, Scale};
use crate::results::Benchmark;
use crate::stats;

/// Value against run index: warm-up shaded, outliers and excluded runs marked, Tukey fences
/// dashed; the machine's temperature, other load and interference below when recorded.
pub(super) fn sequence(b: &Benchmark, metric: &Metric, pts: &[Point], unit: Unit) -> Canvas {
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
        &format!("{} by run (in run order)", capitalize(metric.name())),
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
        &format!("{} ({})", metric.name(), unit.unit),
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
            &Metric::CpuTime,
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
