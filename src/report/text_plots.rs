//! Compact text plots for terminals (SSH sessions): sparklines of the run sequence and
//! one-line histograms in Unicode blocks (▁▂▃▄▅▆▇█), and the `tare report --terminal` page that
//! puts them under each benchmark of the terminal summary.
//!
//! For: a glance at shape and drift where no browser is at hand. Not for: numbers (those come
//! from `report::terminal`) or anything that needs axes (see `report::html`).

use crate::report::html::data::{self, Metric};
use crate::report::html::table::ratio_text;
use crate::report::terminal;
use crate::results::Session;
use crate::units;
use std::fmt::Write;

const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Level 0–7 of `v` between `lo` and `hi`.
fn level(v: f64, lo: f64, hi: f64) -> usize {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return 3;
    }
    let t = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
    ((t * 7.0).round() as usize).min(7)
}

/// A sparkline of `values` in order, at most `width` characters: longer series are split into
/// `width` consecutive buckets, each shown by its mean. NaN shows as a space; a constant series
/// as a flat middle line; empty input as an empty string.
pub fn sparkline(values: &[f64], width: usize) -> String {
    let width = width.max(1);
    let buckets: Vec<f64> = if values.len() <= width {
        values.to_vec()
    } else {
        (0..width)
            .map(|i| {
                let a = i * values.len() / width;
                let z = ((i + 1) * values.len() / width).max(a + 1);
                let xs: Vec<f64> = values[a..z]
                    .iter()
                    .copied()
                    .filter(|v| v.is_finite())
                    .collect();
                if xs.is_empty() {
                    f64::NAN
                } else {
                    xs.iter().sum::<f64>() / xs.len() as f64
                }
            })
            .collect()
    };
    let finite = buckets.iter().copied().filter(|v| v.is_finite());
    let lo = finite.clone().fold(f64::INFINITY, f64::min);
    let hi = finite.fold(f64::NEG_INFINITY, f64::max);
    buckets
        .iter()
        .map(|&v| {
            if v.is_finite() {
                BLOCKS[level(v, lo, hi)]
            } else {
                ' '
            }
        })
        .collect()
}

/// A one-line histogram: `bins` equal-width bins between the smallest and largest finite
/// value, each a block as tall as its count relative to the fullest bin (empty bins are
/// spaces). Returns the line and the range it covers; `None` without finite values.
pub fn histogram(values: &[f64], bins: usize) -> Option<(String, f64, f64)> {
    let xs: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if xs.is_empty() {
        return None;
    }
    let bins = bins.max(1);
    let mut counts = vec![0usize; bins];
    for &x in &xs {
        let k = if hi > lo {
            (((x - lo) / (hi - lo) * bins as f64) as usize).min(bins - 1)
        } else {
            bins / 2
        };
        counts[k] += 1;
    }
    let max = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let line = counts
        .iter()
        .map(|&c| {
            if c == 0 {
                ' '
            } else {
                BLOCKS[(((c as f64 / max) * 7.0).round() as usize).clamp(0, 7)]
            }
        })
        .collect();
    Some((line, lo, hi))
}

fn range_text(metric: &Metric, lo: f64, hi: f64) -> String {
    let (scale, unit) = metric.scale(hi.abs().max(lo.abs()));
    format!(
        "{} … {}",
        units::format_scaled(lo, scale, unit, None),
        units::format_scaled(hi, scale, unit, None)
    )
}

fn paint(color: bool, code: &str, s: &str) -> String {
    if color {
        format!("\x1b[{code}m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

/// The terminal report of one session: each benchmark's summary block with its run-sequence
/// sparkline and histogram (its diagnostics come with the block), the comparisons, each
/// parameter scan's scaling (`scaling_plot`), then the measurement method.
pub fn session_report(s: &Session, color: bool) -> String {
    let metric = &Metric::WallTime;
    let mut out = String::new();
    for (i, b) in s.benchmarks.iter().enumerate() {
        out.push_str(&terminal::benchmark_block(b, i, color));
        let xs = data::counted(b, metric);
        if xs.len() >= 2 {
            let _ = writeln!(
                out,
                "  {:<14}{}  {}",
                "run sequence",
                paint(color, "36", &sparkline(&xs, 60)),
                paint(color, "2", &format!("{} counted runs in order", xs.len()))
            );
            // Rice's rule: 2·n^(1/3) bins, between 6 and 30.
            let bins = ((2.0 * (xs.len() as f64).cbrt()).ceil() as usize).clamp(6, 30);
            if let Some((h, lo, hi)) = histogram(&xs, bins) {
                let _ = writeln!(
                    out,
                    "  {:<14}{}  {}",
                    "histogram",
                    paint(color, "36", &h),
                    paint(color, "2", &range_text(metric, lo, hi))
                );
            }
        }
        // Diagnostics are already part of `terminal::benchmark_block`.
        out.push('\n');
    }
    // A head to head inside one process (`tare kernels --baseline`) compares each pair on its
    // own time (CPU or wall): all of them are shown.
    let h2h = s
        .extra
        .contains_key(crate::results::export::HEAD_TO_HEAD_KEY);
    let comps: Vec<_> = s
        .comparisons
        .iter()
        .filter(|c| c.metric == metric.key() || h2h)
        .collect();
    if !comps.is_empty() {
        let _ = writeln!(out, "{}", paint(color, "1", "Comparisons:"));
        for c in comps {
            let _ = writeln!(out, "  {}", c.words);
        }
        out.push('\n');
    }
    for scan in crate::results::ScanRecord::of(s) {
        out.push_str(&scaling_plot(&scan, color));
        out.push('\n');
    }
    out.push_str(&terminal::method_block(&s.method, color));
    out
}

/// A parameter scan as text: its line, then one row per value — the median, the fitted value
/// and a bar whose length is the median on a log scale (so a power law climbs evenly).
pub fn scaling_plot(scan: &crate::results::ScanRecord, color: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", paint(color, "1", &scan.line));
    let f = &scan.fit;
    let logs: Vec<f64> = f.points.iter().map(|p| p.median.ln()).collect();
    let (lo, hi) = logs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    let w = f
        .points
        .iter()
        .map(|p| format!("{}", p.n).len())
        .chain([scan.parameter.chars().count()])
        .max()
        .unwrap_or(6);
    let _ = writeln!(
        out,
        "  {:>w$}  {:>10}  {:>10}  {}",
        scan.parameter,
        "median",
        "fit",
        paint(color, "2", "median, log scale")
    );
    for (p, l) in f.points.iter().zip(&logs) {
        let t = if hi > lo { (l - lo) / (hi - lo) } else { 0.0 };
        let bar = "█".repeat(1 + (t * 39.0).round() as usize);
        let fit = f.power.constant + f.power.coefficient * p.n.powf(f.power.exponent);
        let n = format!("{}", p.n);
        let _ = writeln!(
            out,
            "  {n:>w$}  {:>10}  {:>10}  {}",
            units::format_time(p.median, None),
            units::format_time(fit, None),
            paint(color, "36", &bar)
        );
    }
    out
}

/// The terminal report of several labelled sessions: each in turn, then (for two or more) the
/// medians side by side with each file's ratio to the first.
pub fn report(sessions: &[(String, Session)], color: bool) -> String {
    let metric = &Metric::WallTime;
    let mut out = String::new();
    for (label, s) in sessions {
        if sessions.len() > 1 {
            let _ = writeln!(out, "{}\n", paint(color, "1;4", &format!("== {label} ==")));
        }
        out.push_str(&session_report(s, color));
        out.push('\n');
    }
    if sessions.len() > 1 {
        let _ = writeln!(
            out,
            "{}",
            paint(
                color,
                "1",
                "Side by side (median wall time; ratio to the first file):"
            )
        );
        let mut keys: Vec<(String, String)> = Vec::new();
        for (_, s) in sessions {
            for b in &s.benchmarks {
                let k = data::benchmark_key(b);
                if !keys.iter().any(|(kk, _)| *kk == k) {
                    keys.push((k, data::display_name(b)));
                }
            }
        }
        let name_w = keys
            .iter()
            .map(|(_, n)| n.chars().count())
            .max()
            .unwrap_or(9)
            .clamp(9, 40);
        let _ = write!(out, "  {:<name_w$}", "benchmark");
        for (label, _) in sessions {
            let l: String = label.chars().take(22).collect();
            let _ = write!(out, "  {l:>22}");
        }
        out.push('\n');
        for (k, name) in &keys {
            let n: String = name.chars().take(name_w).collect();
            let _ = write!(out, "  {n:<name_w$}");
            let mut first: Option<f64> = None;
            for (fi, (_, s)) in sessions.iter().enumerate() {
                let m = s
                    .benchmarks
                    .iter()
                    .find(|b| data::benchmark_key(b) == *k)
                    .and_then(|b| metric.summary(&b.summary));
                let cell = match m {
                    Some(m) => {
                        let mut c = units::format_time(m.median, data::resolution(m));
                        if fi == 0 {
                            first = Some(m.median);
                        } else if let Some(f) = first.filter(|f| *f > 0.0) {
                            c = format!("{c} ({})", ratio_text(m.median / f));
                        }
                        c
                    }
                    None => "—".into(),
                };
                let _ = write!(out, "  {cell:>22}");
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_shapes() {
        assert_eq!(
            sparkline(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], 60),
            "▁▂▃▄▅▆▇█"
        );
        assert_eq!(sparkline(&[2.0, 2.0, 2.0], 60), "▄▄▄");
        assert_eq!(sparkline(&[], 60), "");
        assert_eq!(sparkline(&[1.0, f64::NAN, 3.0], 60), "▁ █");
        assert_eq!(sparkline(&[0.0; 1000], 10).chars().count(), 10);
        let s = sparkline(&(0..1000).map(|i| i as f64).collect::<Vec<_>>(), 8);
        assert_eq!(s, "▁▂▃▄▅▆▇█");
    }

    #[test]
    fn histogram_shapes() {
        let (h, lo, hi) = histogram(&[1.0, 1.0, 1.0, 1.0, 2.0, 3.0, 3.0], 3).unwrap();
        assert_eq!(h, "█▃▅");
        assert_eq!((lo, hi), (1.0, 3.0));
        assert!(histogram(&[f64::NAN], 5).is_none());
        assert_eq!(histogram(&[5.0], 5).unwrap().0, "  █  ");
        assert_eq!(histogram(&[1.0, 9.0], 3).unwrap().0, "█ █");
    }
}
