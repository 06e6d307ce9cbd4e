//! The HTML report's section on a head to head inside one process (`tare kernels --baseline`,
//! issue 46): each comparison's line (ratio, interval, verdict, its width), how it was
//! measured, and a plot of every process's ratio with its within-process interval above the
//! verdict's interval over processes, then the processes as a table.
//!
//! Reads `Session.extra.head_to_head` (written by `cli::kernels_pairs`); draws with `svg`.
//! Not for: the benchmarks and comparisons the same session also holds (the summary table and
//! the comparisons list show those as for any session).

use super::svg::{color, esc, Anchor, Canvas, Frame, Scale};
use crate::results::Session;
use serde_json::Value;
use std::fmt::Write as _;

/// The section, or empty where the session is no head to head.
pub(super) fn section(fi: usize, s: &Session) -> String {
    let Some(h) = s.extra.get(crate::results::export::HEAD_TO_HEAD_KEY) else {
        return String::new();
    };
    let Some(comps) = h["comparisons"].as_array() else {
        return String::new();
    };
    let mut out = String::new();
    let baseline = h["baseline"].as_str().unwrap_or("?");
    let _ = write!(
        out,
        r#"<h3 id="f{fi}-h2h">Head to head inside one process</h3><p class="muted">Each kernel against <code>{}</code> in the same processes, their samples alternated in blocks (ABBA); a process's ratio is the median of its paired blocks' ratios (time per loop of the kernel / of the baseline), and the verdict is drawn over processes (Student's t, {}% interval{}).</p>"#,
        esc(baseline),
        level(h["confidence"].as_f64().unwrap_or(0.95)),
        if comps.len() > 1 {
            format!(", adjusted for {} comparisons", comps.len())
        } else {
            String::new()
        }
    );
    for (ci, c) in comps.iter().enumerate() {
        out.push_str(&comparison(fi, ci, baseline, c));
    }
    out
}

/// A level in percent, as few digits as it needs: 95, 97.5, 99.975.
fn level(confidence: f64) -> String {
    let s = format!("{:.3}", 100.0 * confidence);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn badge(verdict: &str) -> String {
    let class = match verdict {
        "slower" => "v-slower",
        "faster" => "v-faster",
        _ => "v-nsd",
    };
    format!(r#"<span class="badge {class}">{}</span>"#, esc(verdict))
}

fn comparison(fi: usize, ci: usize, baseline: &str, c: &Value) -> String {
    let mut out = String::new();
    let name = c["name"]
        .as_str()
        .or(c["kernel"].as_str())
        .unwrap_or("?")
        .to_string();
    let v = &c["verdict"];
    let (low, high) = (v["low"].as_f64(), v["high"].as_f64());
    let line = c["line"].as_str().map(String::from);
    let _ = write!(out, r#"<div class="h2h" id="f{fi}-h2h-{ci}"><p>"#);
    match (line, low, high) {
        (Some(l), Some(lo), Some(hi)) => {
            let _ = write!(
                out,
                r#"{} <b>{}</b> <span class="muted">(±{:.2}%)</span>"#,
                badge(v["verdict"].as_str().unwrap_or("")),
                esc(&l),
                100.0 * ((hi / lo).sqrt() - 1.0)
            );
        }
        _ => {
            let why = c["failed"]
                .as_str()
                .map(|e| format!("failed: {e}"))
                .unwrap_or_else(|| "no verdict".into());
            let _ = write!(
                out,
                r#"<b>{} vs {}</b>: {}"#,
                esc(&name),
                esc(baseline),
                esc(&why)
            );
        }
    }
    let procs = c["processes"].as_array().cloned().unwrap_or_default();
    let _ = write!(
        out,
        r#"<br><span class="muted">{} time per loop; {} processes of {} pairs of blocks; N={} vs {} loops a sample; {}</span></p>"#,
        if c["time"] == "cpu" { "CPU" } else { "wall" },
        procs.len(),
        c["pairs_per_process"].as_u64().unwrap_or(0),
        c["loops"].as_u64().unwrap_or(0),
        c["baseline_loops"].as_u64().unwrap_or(0),
        esc(c["stop_reason"].as_str().unwrap_or(""))
    );
    if !procs.is_empty() {
        out.push_str(&plot(fi, ci, &name, baseline, &procs, v));
        out.push_str(&table(&procs));
    }
    out.push_str("</div>");
    out
}

/// Each process's ratio with its within-process interval, a row each, and the verdict's
/// interval over processes below them; log scale, 1 marked.
fn plot(fi: usize, ci: usize, name: &str, baseline: &str, procs: &[Value], v: &Value) -> String {
    let row = 14.0;
    let (left, right, top) = (120.0, 30.0, 34.0);
    let width = 720.0;
    let rows = procs.len() as f64 + 1.5;
    let height = top + row * rows + 46.0;
    let f = |p: &Value, k: &str| p[k].as_f64().filter(|x| x.is_finite() && *x > 0.0);
    let mut lo: f64 = 1.0;
    let mut hi: f64 = 1.0;
    for p in procs.iter().chain(std::iter::once(v)) {
        for k in ["ratio", "ratio_ci_low", "ratio_ci_high", "low", "high"] {
            if let Some(x) = f(p, k) {
                lo = lo.min(x);
                hi = hi.max(x);
            }
        }
    }
    let pad = ((hi / lo).ln() * 0.08).max(0.002);
    let (lo, hi) = (lo / pad.exp(), hi * pad.exp());
    let frame = Frame {
        left,
        top,
        width: width - left - right,
        height: row * rows,
        x: Scale::log((lo, hi), (left, width - right)),
        y: Scale::linear((0.0, rows), (top, top + row * rows)),
    };
    let mut c = Canvas::new(width, height);
    c.text(
        16.0,
        18.0,
        &format!("{name} / {baseline}: each process's ratio (95% within the process) and the verdict's interval over processes"),
        Anchor::Start,
        12.5,
        color::INK,
    );
    frame.axes(
        &mut c,
        "time per loop of the kernel / of the baseline (×)",
        "",
        false,
    );
    let one = frame.x.map(1.0);
    c.line(one, frame.top, one, frame.bottom(), color::INK, 1.2);
    for (i, p) in procs.iter().enumerate() {
        let cy = frame.y.map(i as f64 + 0.5);
        let (Some(r), Some(a), Some(b)) =
            (f(p, "ratio"), f(p, "ratio_ci_low"), f(p, "ratio_ci_high"))
        else {
            continue;
        };
        let title = format!(
            "process {} (round {}): {r:.4}× [{a:.4}, {b:.4}], {} time, {} first",
            i + 1,
            p["round"].as_u64().unwrap_or(0) + 1,
            p["time"].as_str().unwrap_or("?"),
            if p["baseline_first"] == true {
                "baseline"
            } else {
                "kernel"
            }
        );
        c.titled(&title, |c| {
            c.line(
                frame.x.map(a),
                cy,
                frame.x.map(b),
                cy,
                color::PRIMARY_LIGHT,
                2.0,
            );
            c.circle(frame.x.map(r), cy, 3.0, color::PRIMARY, 1.0);
        });
        c.text(
            left - 8.0,
            cy + 4.0,
            &format!("#{}", i + 1),
            Anchor::End,
            10.0,
            color::MUTED,
        );
    }
    if let (Some(r), Some(a), Some(b)) = (f(v, "ratio"), f(v, "low"), f(v, "high")) {
        let cy = frame.y.map(procs.len() as f64 + 0.9);
        let (xa, xb) = (frame.x.map(a), frame.x.map(b));
        c.rect(xa, cy - 5.0, (xb - xa).max(1.0), 10.0, color::ACCENT, 0.25);
        c.line(xa, cy, xb, cy, color::ACCENT, 2.0);
        c.circle(frame.x.map(r), cy, 4.0, color::ACCENT, 1.0);
        c.dashed(
            frame.x.map(r),
            frame.top,
            frame.x.map(r),
            frame.bottom(),
            color::ACCENT,
            1.0,
        );
        c.text(
            left - 8.0,
            cy + 4.0,
            "verdict",
            Anchor::End,
            10.5,
            color::ACCENT,
        );
    }
    c.finish(
        &format!("f{fi}-h2h-{ci}-plot"),
        "h2h",
        &format!("{name} against {baseline}, process by process"),
    )
}

/// The processes: round, who started, ratio and its interval, which time, switch.
fn table(procs: &[Value]) -> String {
    let mut out = String::from(
        r#"<details><summary>Processes</summary><div class="scroll"><table class="summary"><thead><tr><th>#</th><th>Round</th><th>First</th><th>Ratio</th><th>95% within the process</th><th>Time</th><th>Switch (ms)</th></tr></thead><tbody>"#,
    );
    for (i, p) in procs.iter().enumerate() {
        let g = |k: &str| p[k].as_f64().unwrap_or(f64::NAN);
        let _ = write!(
            out,
            r#"<tr><td>{}</td><td>{}</td><td>{}</td><td class="num">{:.4}×</td><td class="num">{:.4} … {:.4}</td><td>{}</td><td class="num">{:.2}</td></tr>"#,
            i + 1,
            p["round"].as_u64().unwrap_or(0) + 1,
            if p["baseline_first"] == true {
                "baseline"
            } else {
                "kernel"
            },
            g("ratio"),
            g("ratio_ci_low"),
            g("ratio_ci_high"),
            esc(p["time"].as_str().unwrap_or("?")),
            g("switch_ms")
        );
    }
    out.push_str("</tbody></table></div></details>");
    out
}
