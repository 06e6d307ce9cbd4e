//! The scaling plot of a parameter scan: the median wall time per parameter value with its 95%
//! interval, on log–log axes, and the fitted power law `a + c·n^k` (`results::ScanRecord`,
//! computed by `conclude::scaling`). Draws only what the results file holds.

use super::plots::{Plot, PlotKind};
use super::svg::{color, Anchor, Canvas};
use crate::results::{ScanRecord, Session};

const W: f64 = 560.0;
const H: f64 = 300.0;
const LEFT: f64 = 74.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 48.0;

/// 1, 2, 5 × 10^j inside `[lo, hi]`; only the powers of ten when they are enough.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let pick = |ms: &[f64]| -> Vec<f64> {
        (a..=b)
            .flat_map(|e| ms.iter().map(move |m| m * 10f64.powi(e)))
            .filter(|v| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9))
            .collect()
    };
    let decades = pick(&[1.0]);
    if decades.len() >= 3 {
        decades
    } else {
        let t = pick(&[1.0, 2.0, 5.0]);
        if t.len() >= 2 {
            t
        } else {
            vec![lo, hi]
        }
    }
}

/// `lo..hi` widened by `margin` of its span on a log scale.
fn pad(lo: f64, hi: f64, margin: f64) -> (f64, f64) {
    let (l, h) = (lo.ln(), hi.ln());
    let span = if h > l { h - l } else { 1.0 };
    ((l - margin * span).exp(), (h + margin * span).exp())
}

fn map(v: f64, (d0, d1): (f64, f64), (r0, r1): (f64, f64)) -> f64 {
    let t = ((v.ln() - d0.ln()) / (d1.ln() - d0.ln())).clamp(-0.05, 1.05);
    r0 + if t.is_finite() { t } else { 0.0 } * (r1 - r0)
}

fn number(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

fn draw(r: &ScanRecord) -> Canvas {
    let mut c = Canvas::new(W, H);
    let f = &r.fit;
    c.text(
        LEFT,
        18.0,
        &format!("Wall time against {} (log–log)", r.parameter),
        Anchor::Start,
        13.0,
        color::INK,
    );
    let xs: Vec<f64> = f.points.iter().map(|p| p.n).collect();
    let mut ys: Vec<f64> = Vec::new();
    for p in &f.points {
        ys.push(p.median);
        if let Some((lo, hi)) = p.ci {
            ys.extend([lo, hi]);
        }
    }
    let ys: Vec<f64> = ys
        .into_iter()
        .filter(|v| *v > 0.0 && v.is_finite())
        .collect();
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let xd = pad(min(&xs), max(&xs), 0.05);
    let yd = pad(min(&ys), max(&ys), 0.08);
    let xr = (LEFT, W - RIGHT);
    let yr = (H - BOTTOM, TOP);
    for v in log_ticks(xd.0, xd.1) {
        let px = map(v, xd, xr);
        c.line(px, TOP, px, H - BOTTOM, color::GRID, 1.0);
        c.text(
            px,
            H - BOTTOM + 16.0,
            &number(v),
            Anchor::Middle,
            11.0,
            color::MUTED,
        );
    }
    for v in log_ticks(yd.0, yd.1) {
        let py = map(v, yd, yr);
        c.line(LEFT, py, W - RIGHT, py, color::GRID, 1.0);
        let (scale, unit) = crate::units::time_scale(v);
        let label = format!("{} {unit}", number(v * scale));
        c.text(
            LEFT - 6.0,
            py + 4.0,
            &label,
            Anchor::End,
            11.0,
            color::MUTED,
        );
    }
    c.line(LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM, color::AXIS, 1.0);
    c.line(LEFT, TOP, LEFT, H - BOTTOM, color::AXIS, 1.0);
    c.text(
        (LEFT + W - RIGHT) / 2.0,
        H - 10.0,
        &r.parameter,
        Anchor::Middle,
        11.0,
        color::MUTED,
    );
    c.vtext(
        12.0,
        (TOP + H - BOTTOM) / 2.0,
        "median wall time",
        11.0,
        color::MUTED,
    );
    // The fitted power law.
    let p = f.power;
    let curve: Vec<(f64, f64)> = (0..=60)
        .map(|i| {
            let n = (xd.0.ln() + (xd.1.ln() - xd.0.ln()) * i as f64 / 60.0).exp();
            let t = p.constant + p.coefficient * n.powf(p.exponent);
            (
                map(n, xd, xr),
                if t > 0.0 { map(t, yd, yr) } else { f64::NAN },
            )
        })
        .collect();
    c.raw(r#"<g class="scaling-fit">"#);
    c.polyline(&curve, color::ACCENT, 1.5);
    c.raw("</g>");
    // Medians with their intervals.
    for pt in &f.points {
        let px = map(pt.n, xd, xr);
        let words = format!(
            "{} = {}: median {} over {} {}s{}",
            r.parameter,
            number(pt.n),
            crate::units::format_time(pt.median, None),
            pt.processes,
            r.unit,
            pt.ci
                .map(|(lo, hi)| format!(
                    ", 95% CI {} – {}",
                    crate::units::format_time(lo, None),
                    crate::units::format_time(hi, None)
                ))
                .unwrap_or_default()
        );
        c.titled(&words, |c| {
            if let Some((lo, hi)) = pt.ci {
                let (a, b) = (map(lo, yd, yr), map(hi, yd, yr));
                c.line(px, a, px, b, color::PRIMARY, 1.5);
                c.line(px - 4.0, a, px + 4.0, a, color::PRIMARY, 1.5);
                c.line(px - 4.0, b, px + 4.0, b, color::PRIMARY, 1.5);
            }
            c.raw(r#"<g class="scaling-point">"#);
            c.circle(px, map(pt.median, yd, yr), 3.5, color::PRIMARY, 1.0);
            c.raw("</g>");
        });
    }
    // Legend: the line people read.
    let fit_words = match f.exponent_ci {
        Some((lo, hi)) => format!(
            "{}, time ∝ n^{:.2} [{lo:.2}, {hi:.2}]",
            f.class.class.big_o(),
            p.exponent
        ),
        None => format!("{}, time ∝ n^{:.2}", f.class.class.big_o(), p.exponent),
    };
    c.rect(LEFT, 30.0, 10.0, 3.0, color::ACCENT, 1.0);
    c.text(
        LEFT + 14.0,
        35.0,
        &fit_words,
        Anchor::Start,
        10.5,
        color::MUTED,
    );
    c.circle(W - RIGHT - 150.0, 32.0, 3.5, color::PRIMARY, 1.0);
    c.text(
        W - RIGHT - 143.0,
        35.0,
        "median, 95% CI",
        Anchor::Start,
        10.5,
        color::MUTED,
    );
    c
}

/// One scaling plot per scan of the session; none for a metric other than wall time (the fit
/// is of wall time).
pub fn plots(file: usize, s: &Session, metric: &super::Metric) -> Vec<Plot> {
    if *metric != super::Metric::WallTime {
        return Vec::new();
    }
    ScanRecord::of(s)
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.fit.points.is_empty())
        .map(|(i, r)| {
            let id = format!("f{file}-scaling-{i}");
            let title = format!("Scaling of {} in {}", r.label, r.parameter);
            Plot {
                svg: draw(r).finish(&id, &PlotKind::Scaling.class(), &title),
                id,
                kind: PlotKind::Scaling,
                file,
                bench: None,
                title,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::log_ticks;

    #[test]
    fn ticks_on_log_axes() {
        assert_eq!(log_ticks(0.5, 2000.0), [1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(log_ticks(3.0, 30.0), [5.0, 10.0, 20.0]);
        assert!(log_ticks(0.0, 1.0).is_empty());
    }
}
