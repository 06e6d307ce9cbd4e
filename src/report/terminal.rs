//! The summary printed after a session: per benchmark, wall time (median with its 95% CI,
//! mean ± σ, range, quartiles), CPU time (user + system), peak memory, runs and why measuring
//! stopped, then how the numbers were measured. Digits follow precision (seed 003 §7.2).

use crate::results::{
    Benchmark, MeasurementMethod, MethodKind, MetricSummary, Session, Termination,
};
use crate::units::{self, format_bytes, format_scaled, time_scale};
use std::fmt::Write;

struct Paint {
    on: bool,
}

impl Paint {
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    fn green(&self, s: &str) -> String {
        self.wrap("32", s)
    }
    fn yellow(&self, s: &str) -> String {
        self.wrap("33", s)
    }
    fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
}

/// Half-width of the median CI when it is a real 95% interval: the value's resolution.
pub fn resolution(m: &MetricSummary) -> Option<f64> {
    let r = (m.median_ci_high - m.median_ci_low) / 2.0;
    (m.median_ci_exact && r > 0.0).then_some(r)
}

/// The unit of a group of times: the session's `--time-unit` if it set one, else the SI
/// prefix that suits `seconds` (the largest, or typical, value of the group).
pub fn unit_for(session_unit: Option<&str>, seconds: f64) -> (f64, &'static str) {
    match session_unit {
        Some("s") => (1.0, "s"),
        Some("ms") => (1e3, "ms"),
        Some("µs") => (1e6, "µs"),
        Some("ns") => (1e9, "ns"),
        _ => time_scale(seconds),
    }
}

fn time_block(out: &mut String, p: &Paint, label: &str, m: &MetricSummary, unit: Option<&str>) {
    let (scale, unit_name) = unit_for(unit, m.median);
    let res = resolution(m);
    let f = |v: f64| format_scaled(v, scale, unit_name, res);
    let ci = if m.median_ci_exact {
        format!("[{} … {}]", f(m.median_ci_low), f(m.median_ci_high))
    } else {
        "[too few runs for a 95% CI]".to_string()
    };
    let _ = writeln!(
        out,
        "  {label:<14}{}  {}   mean {} ± σ {}   CV {}",
        p.green(&p.bold(&f(m.median))),
        ci,
        f(m.mean),
        format_scaled(m.stddev, scale, unit_name, None),
        units::format_percent(m.cv)
    );
    // The spread line in one unit that suits its largest value.
    let (scale, unit_name) = unit_for(unit, m.max.max(m.median));
    let f = |v: f64| format_scaled(v, scale, unit_name, res);
    let _ = writeln!(
        out,
        "  {:<14}{} … {}   quartiles {} … {}   p5 … p95 {} … {}",
        "",
        f(m.min),
        f(m.max),
        f(m.q1),
        f(m.q3),
        f(m.p5),
        f(m.p95)
    );
}

pub use crate::units::plural;

/// Medians of the counted runs' counters (`--counters`), one `event value` pair each.
fn counter_medians(b: &Benchmark) -> Vec<String> {
    let mut events: Vec<(String, String, Vec<f64>)> = Vec::new();
    for r in b.runs.iter().filter(|r| r.counted) {
        let Some(list) = r.extra.get("counters").and_then(|v| v.as_array()) else {
            continue;
        };
        for c in list {
            let (Some(ev), Some(v)) = (c["event"].as_str(), c["value"].as_f64()) else {
                continue;
            };
            let unit = c["unit"].as_str().unwrap_or("").to_string();
            match events.iter_mut().find(|e| e.0 == ev) {
                Some(e) => e.2.push(v),
                None => events.push((ev.to_string(), unit, vec![v])),
            }
        }
    }
    events
        .into_iter()
        .filter_map(|(ev, unit, xs)| {
            let m = crate::stats::describe(&xs)?.median;
            let unit = if unit.is_empty() {
                String::new()
            } else {
                format!(" {unit}")
            };
            Some(format!("{ev} {}{unit}", units::format_count(m)))
        })
        .collect()
}

/// Renders one benchmark's block.
pub fn benchmark_block(b: &Benchmark, index: usize, color: bool) -> String {
    benchmark_block_in(b, index, color, None)
}

/// [`benchmark_block`] with times in `unit` ("s", "ms", "µs", "ns") when given.
pub fn benchmark_block_in(b: &Benchmark, index: usize, color: bool, unit: Option<&str>) -> String {
    let p = Paint { on: color };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {}",
        p.bold(&format!("Benchmark {}:", index + 1)),
        b.name
    );
    if !b.parameters.is_empty() {
        let ps: Vec<String> = b
            .parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(out, "  {:<14}{}", "parameters", ps.join(" "));
    }
    match &b.summary.wall_time {
        Some(w) => time_block(&mut out, &p, "wall time", w, unit),
        None => {
            let _ = writeln!(
                out,
                "  {}",
                p.yellow("no counted runs: nothing to summarize")
            );
        }
    }
    if let (Some(c), Some(u), Some(s)) = (
        &b.summary.cpu_time,
        &b.summary.user_time,
        &b.summary.system_time,
    ) {
        // One unit for the whole line.
        let (scale, name) = unit_for(unit, c.median.max(c.mean));
        let f = |v: f64, r: Option<f64>| format_scaled(v, scale, name, r);
        let _ = writeln!(
            out,
            "  {:<14}{} median = {} user + {} system   (mean {})",
            "CPU time",
            f(c.median, resolution(c)),
            f(u.median, resolution(c)),
            f(s.median, resolution(c)),
            f(c.mean, resolution(c)),
        );
    }
    match &b.summary.peak_memory {
        Some(m) => {
            let _ = writeln!(
                out,
                "  {:<14}{} median   (max {})",
                "peak memory",
                format_bytes(m.median, None),
                format_bytes(m.max, None)
            );
        }
        None => {
            let _ = writeln!(out, "  {:<14}{}", "peak memory", p.dim("not measured"));
        }
    }
    let (meter_lines, meter_warnings) = super::meters::terminal_lines(b);
    for (label, text) in meter_lines {
        let _ = writeln!(out, "  {label:<14}{text}");
    }
    for w in meter_warnings {
        let _ = writeln!(out, "  {} {w}", p.yellow("warning:"));
    }
    let counters = counter_medians(b);
    if !counters.is_empty() {
        let _ = writeln!(
            out,
            "  {:<14}{} (medians)",
            "counters",
            counters.join("   ")
        );
    }
    let counted = b.runs.iter().filter(|r| r.counted).count();
    let warm = b.runs.iter().filter(|r| r.warmup).count();
    let mut runs = format!("{counted} counted");
    if warm > 0 {
        let _ = write!(runs, ", {warm} warm-up (excluded)");
    }
    for t in [
        Termination::Cpu,
        Termination::Wall,
        Termination::Memory,
        Termination::Pids,
        Termination::Signal,
        Termination::Exit,
    ] {
        let n = b
            .runs
            .iter()
            .filter(|r| !r.warmup && !r.counted && r.termination == t)
            .count();
        if n > 0 {
            let what = match t {
                Termination::Exit => "failed (non-zero exit)".to_string(),
                other => format!("hit the {} limit", other.as_str()),
            };
            let what = if t == Termination::Signal {
                "killed by a signal".to_string()
            } else {
                what
            };
            let _ = write!(runs, ", {}", p.yellow(&format!("{n} {what} (excluded)")));
        }
    }
    let escaped = b
        .runs
        .iter()
        .filter(|r| !r.warmup && r.extra.get("escaped") == Some(&serde_json::Value::Bool(true)))
        .count();
    if escaped > 0 {
        let _ = write!(
            runs,
            ", {}",
            p.yellow(&format!(
                "{escaped} left their cgroups (CPU time and peak memory incomplete)"
            ))
        );
    }
    let _ = writeln!(out, "  {:<14}{runs}", "runs");
    if !b.stop_reason.is_empty() {
        let _ = writeln!(out, "  {:<14}{}", "stopped", p.dim(&b.stop_reason));
    }
    for d in &b.diagnostics {
        let _ = writeln!(
            out,
            "  {} {} — {}",
            p.yellow("warning:"),
            d.message,
            d.suggestion
        );
    }
    out
}

/// The comparisons against the reference, one verdict per line.
pub fn comparison_block(session: &Session, color: bool) -> String {
    let p = Paint { on: color };
    let mut out = String::new();
    let Some(first) = session.comparisons.first() else {
        return out;
    };
    let over_setups = session
        .extra
        .get("comparison_unit")
        .and_then(|v| v.as_str())
        == Some("setup");
    let test = if first.test == "welch" {
        "Welch's t-test"
    } else if over_setups {
        "paired t-test over setups"
    } else {
        "Mann–Whitney U"
    };
    let how = if over_setups {
        "mean of per-setup median ratios, 95% bootstrap CI over setups".to_string()
    } else if first.paired {
        "ratio of medians, 95% paired-by-round bootstrap CI".to_string()
    } else {
        "ratio of medians, 95% bootstrap CI".to_string()
    };
    let _ = writeln!(
        out,
        "{} wall time against {} ({how}; {test}, Holm-adjusted p)",
        p.bold("Comparison:"),
        first.reference_name,
    );
    for c in &session.comparisons {
        let words = match c.verdict.as_str() {
            "faster" => p.green(&c.words),
            "slower" => p.yellow(&c.words),
            _ => c.words.clone(),
        };
        let _ = writeln!(out, "  {words}   {}", p_equals(c.p_adjusted));
    }
    out
}

/// `p = 0.27` or `p < 0.0001`.
pub fn p_equals(p: f64) -> String {
    units::p_phrase(p)
}

/// How the numbers were measured, in one line (the full method is in `method_block` and in
/// the exports).
pub fn method_line(m: &MeasurementMethod, color: bool) -> String {
    let p = Paint { on: color };
    let what = match m.kind {
        MethodKind::CgroupV1 => "cgroup v1 (CPU time and peak memory of the whole process tree)",
        MethodKind::CgroupV2 => "cgroup v2 (CPU time and peak memory of the whole process tree)",
        MethodKind::Rusage => "rusage FALLBACK (children never waited for are missed)",
        MethodKind::Imported => "another harness (imported with `tare import`)",
        MethodKind::Unknown => "an unknown method (recovered from a damaged journal)",
    };
    format!("{} {what}; --verbose for details\n", p.dim("Measured with"))
}

/// How the numbers were measured, with any caveat in yellow.
pub fn method_block(m: &MeasurementMethod, color: bool) -> String {
    let p = Paint { on: color };
    let mut out = String::new();
    let name = match m.kind {
        MethodKind::CgroupV1 => "cgroup v1",
        MethodKind::CgroupV2 => "cgroup v2",
        MethodKind::Rusage => "rusage FALLBACK",
        MethodKind::Imported => "another harness (imported)",
        MethodKind::Unknown => "unknown method",
    };
    let _ = writeln!(
        out,
        "{} {name}: CPU time = {}; peak memory = {}.",
        p.bold("Measured with"),
        m.cpu_time,
        m.peak_memory
    );
    for w in &m.warnings {
        let _ = writeln!(out, "{} {w}", p.yellow("warning:"));
    }
    out
}

/// The whole summary of a session, with the full measurement method.
pub fn summary(session: &Session, color: bool) -> String {
    summary_with(session, color, true)
}

pub use crate::results::export::display_order;

/// The whole summary; the measurement method in full when `verbose`, else in one line.
pub fn summary_with(session: &Session, color: bool, verbose: bool) -> String {
    let unit = session.extra.get("time_unit").and_then(|v| v.as_str());
    let mut out = String::new();
    for i in display_order(session) {
        out.push_str(&benchmark_block_in(&session.benchmarks[i], i, color, unit));
        out.push('\n');
    }
    if !session.comparisons.is_empty() {
        out.push_str(&comparison_block(session, color));
        out.push('\n');
    }
    for line in super::meters::session_lines(session) {
        out.push_str(&line);
        out.push('\n');
    }
    if verbose {
        out.push_str(&method_block(&session.method, color));
    } else {
        out.push_str(&method_line(&session.method, color));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(median: f64, min: f64, max: f64) -> MetricSummary {
        MetricSummary {
            n: 50,
            median,
            median_ci_low: median * 0.99,
            median_ci_high: median * 1.01,
            median_ci_exact: true,
            mean: median,
            stddev: median * 0.1,
            cv: 0.1,
            min,
            max,
            q1: median * 0.95,
            q3: median * 1.05,
            iqr: median * 0.1,
            p5: min,
            p95: max * 0.9,
        }
    }

    /// The units each line of a block uses.
    fn units_of(line: &str) -> std::collections::BTreeSet<&str> {
        line.split_whitespace()
            .filter(|w| ["s", "ms", "µs", "ns"].contains(w))
            .collect()
    }

    #[test]
    fn one_unit_per_line_that_suits_its_numbers() {
        // A 553 µs median with a 118 ms maximum: the spread line in ms, not "118038 µs".
        let mut out = String::new();
        let p = Paint { on: false };
        time_block(
            &mut out,
            &p,
            "wall time",
            &summary(553e-6, 540e-6, 0.118038),
            None,
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            units_of(lines[0]).into_iter().collect::<Vec<_>>(),
            ["µs"],
            "{out}"
        );
        assert_eq!(
            units_of(lines[1]).into_iter().collect::<Vec<_>>(),
            ["ms"],
            "{out}"
        );
        assert!(lines[1].contains("118.0"), "{out}");
        // --time-unit wins everywhere.
        let mut out = String::new();
        time_block(
            &mut out,
            &p,
            "wall time",
            &summary(553e-6, 540e-6, 0.118038),
            Some("ms"),
        );
        for l in out.lines() {
            assert_eq!(units_of(l).into_iter().collect::<Vec<_>>(), ["ms"], "{out}");
        }
    }

    #[test]
    fn p_values_and_plurals_read_as_words() {
        assert_eq!(p_equals(0.00001), "p < 0.0001");
        assert_eq!(p_equals(0.265), "p = 0.27");
        assert_eq!(plural(1, "run"), "1 run");
        assert_eq!(plural(2, "benchmark"), "2 benchmarks");
    }
}
