//! The plots of a session's comparisons: the forest plot of every candidate/reference ratio
//! with its CI, and the paired-round scatter of one comparison.
//!
//! For: [`forest`] and [`paired`], drawn with `svg.rs` from the stored comparison records. Not
//! for: computing ratios, CIs or verdicts (the results hold them) or the per-benchmark plots.

use super::{p_text, truncate, Unit, M_BOTTOM, M_TOP};
use crate::report::html::data::{self, Metric};
use crate::report::html::svg::{color, pad_domain, Anchor, Canvas, Frame, Scale};
use crate::report::html::table::ratio_text;
use crate::results::{ComparisonRecord, Session};

/// Forest plot: each candidate/reference ratio with its CI on a log axis, 1 marked, ±1% noise
/// band shaded.
pub(super) fn forest(s: &Session, comps: &[&ComparisonRecord]) -> Canvas {
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
        .map(|m| m.name().to_string())
        .unwrap_or_else(|| "value".to_string());
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
            &format!("{verdict}, {} (adjusted)", p_text(k.p_adjusted)),
            Anchor::Start,
            10.0,
            col,
        );
    }
    c
}

/// Paired rounds: each point is one round, reference on x and candidate on y; the diagonal is
/// "equal", the dashed line the median ratio.
pub(super) fn paired(
    s: &Session,
    k: &ComparisonRecord,
    metric: &Metric,
    pairs: &[(f64, f64)],
) -> Canvas {
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
            metric.name()
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
