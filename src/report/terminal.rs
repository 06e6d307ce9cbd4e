//! The summary printed after a session. By default close to hyperfine's density, per benchmark:
//! wall time (median with its 95% CI, range, runs) and CPU time with peak memory, then the
//! warnings, one comparison line per benchmark and how the numbers were measured in one line.
//! `--verbose` adds mean ± σ, CV, quartiles, p5/p95, the runs' accounting and why measuring
//! stopped. Each line has one unit (the one that suits its largest value) and its values three
//! significant digits of the line's first value (the median), so `4.40 ms [4.10 ms … 6.80 ms]`
//! never rounds to `4 ms [4 ms … 7 ms]`.

use crate::results::{
    Benchmark, MeasurementMethod, MethodKind, MetricSummary, Session, Termination,
};
use crate::units::{self, time_scale};
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

pub use crate::results::facts::resolution;

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

/// Significant digits of a line's first value; the line's other values get as many decimals.
const SIGNIFICANT: i32 = 3;

/// Decimals that show `value` (already scaled) with [`SIGNIFICANT`] significant digits.
fn decimals(value: f64) -> usize {
    let mag = if value.abs() > 0.0 && value.is_finite() {
        value.abs().log10().floor() as i32
    } else {
        0
    };
    (SIGNIFICANT - 1 - mag).clamp(0, 9) as usize
}

/// A formatter of times in one unit with the decimals that give `head` three significant digits.
fn line_format(unit: Option<&str>, largest: f64, head: f64) -> impl Fn(f64) -> String {
    let (scale, name) = unit_for(unit, largest);
    let d = decimals(head * scale);
    move |v: f64| {
        if v.is_finite() {
            format!("{:.d$} {name}", v * scale)
        } else {
            "n/a".to_string()
        }
    }
}

/// A peak memory to three digits; 0 is below the counters' resolution (`units::format_peak`).
fn peak3(bytes: f64) -> String {
    if bytes < 1.0 {
        return units::format_peak(bytes, None);
    }
    let (scale, unit) = units::bytes_scale(bytes);
    if unit == "B" {
        return format!("{bytes:.0} B");
    }
    let v = bytes * scale;
    format!("{v:.d$} {unit}", d = decimals(v))
}

/// The default wall-time line: median, its 95% CI, range and runs, in the unit that suits the
/// median (as hyperfine's suits its mean): a slow outlier must not turn `706 ms` on one line
/// into `0.750 s` on the next.
fn time_line(out: &mut String, p: &Paint, m: &MetricSummary, unit: Option<&str>, runs: usize) {
    let f = line_format(unit, m.median, m.median);
    let ci = if m.median_ci_exact {
        format!("[{} … {}]", f(m.median_ci_low), f(m.median_ci_high))
    } else {
        "[too few runs for a 95% CI]".to_string()
    };
    let _ = writeln!(
        out,
        "  {:<14}{}  {}   range {} … {}   {}",
        "wall time",
        p.green(&p.bold(&f(m.median))),
        ci,
        f(m.min),
        f(m.max),
        units::plural(runs, "run")
    );
}

fn time_block(out: &mut String, p: &Paint, label: &str, m: &MetricSummary, unit: Option<&str>) {
    let f = line_format(unit, m.median.max(m.mean), m.median);
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
        f(m.stddev),
        units::format_percent(m.cv)
    );
    // The spread line in one unit that suits its largest value.
    let f = line_format(unit, m.max.max(m.median), m.median);
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

/// Medians of the counted runs' counters (`--counters`), one `event value` pair each, and the
/// largest relative spread (max − min over the median) of any event across the runs.
fn counter_medians(b: &Benchmark) -> (Vec<String>, f64) {
    let mut events: Vec<(String, String, Vec<f64>)> = Vec::new();
    let mut exact = false;
    for r in b.runs.iter().filter(|r| r.counted) {
        let Some(list) = r.extra.get("counters").and_then(|v| v.as_array()) else {
            continue;
        };
        exact |= crate::results::facts::backend_of(r) == Some("valgrind");
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
    let mut spread: f64 = 0.0;
    let lines = events
        .into_iter()
        .filter_map(|(ev, unit, xs)| {
            let d = crate::stats::describe(&xs)?;
            if d.median > 0.0 {
                spread = spread.max((d.max - d.min) / d.median);
            }
            let unit = if unit.is_empty() {
                String::new()
            } else {
                format!(" {unit}")
            };
            // Simulated counts repeat to the last digit: all of them are shown.
            let value = if exact {
                units::format_thousands(d.median)
            } else {
                units::format_count(d.median)
            };
            Some(format!("{ev} {value}{unit}"))
        })
        .collect();
    (lines, spread)
}

/// The note of a benchmark whose runs ran under Valgrind: their times are not the command's.
fn under_valgrind(b: &Benchmark) -> bool {
    b.runs
        .iter()
        .any(|r| crate::results::facts::backend_of(r) == Some("valgrind"))
}

/// Renders one benchmark's block.
pub fn benchmark_block(b: &Benchmark, index: usize, color: bool) -> String {
    benchmark_block_in(b, index, color, None)
}

/// [`benchmark_block`] with times in `unit` ("s", "ms", "µs", "ns") when given.
pub fn benchmark_block_in(b: &Benchmark, index: usize, color: bool, unit: Option<&str>) -> String {
    benchmark_block_with(b, index, color, unit, true)
}

/// One benchmark's block: the default lines, or every detail when `verbose`.
pub fn benchmark_block_with(
    b: &Benchmark,
    index: usize,
    color: bool,
    unit: Option<&str>,
    verbose: bool,
) -> String {
    let p = Paint { on: color };
    let counted = b.runs.iter().filter(|r| r.counted).count();
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
        Some(w) if verbose => time_block(&mut out, &p, "wall time", w, unit),
        Some(w) => time_line(&mut out, &p, w, unit, counted),
        None => {
            let _ = writeln!(
                out,
                "  {}",
                p.yellow("no counted runs: nothing to summarize")
            );
        }
    }
    let cpu = match (
        &b.summary.cpu_time,
        &b.summary.user_time,
        &b.summary.system_time,
    ) {
        (Some(c), Some(u), Some(s)) => Some((c, u, s)),
        _ => None,
    };
    let memory = match &b.summary.peak_memory {
        Some(m) if verbose => format!("{} median   (max {})", peak3(m.median), peak3(m.max)),
        Some(m) => peak3(m.median),
        None => p.dim("not measured"),
    };
    match cpu {
        Some((c, u, s)) if verbose => {
            // One unit for the whole line.
            let f = line_format(unit, c.median.max(c.mean), c.median);
            let _ = writeln!(
                out,
                "  {:<14}{} median = {} user + {} system   (mean {})",
                "CPU time",
                f(c.median),
                f(u.median),
                f(s.median),
                f(c.mean),
            );
            let _ = writeln!(out, "  {:<14}{memory}", "peak memory");
        }
        Some((c, u, s)) => {
            let f = line_format(unit, c.median, c.median);
            let _ = writeln!(
                out,
                "  {:<14}{}  (user {} + system {})   peak memory {memory}",
                "CPU time",
                f(c.median),
                f(u.median),
                f(s.median),
            );
        }
        None => {
            let _ = writeln!(out, "  {:<14}{memory}", "peak memory");
        }
    }
    let (meter_lines, meter_warnings) = super::meters::terminal_lines(b);
    for (label, text) in meter_lines {
        let _ = writeln!(out, "  {label:<14}{text}");
    }
    for w in meter_warnings {
        let _ = writeln!(out, "  {} {w}", p.yellow("warning:"));
    }
    let (counters, spread) = counter_medians(b);
    if !counters.is_empty() {
        let how = if counted < 2 {
            "(median)".to_string()
        } else if spread == 0.0 {
            format!("(identical in all {counted} runs)")
        } else {
            format!("(medians; runs differ by up to {:.4}%)", spread * 100.0)
        };
        let _ = writeln!(out, "  {:<14}{} {how}", "counters", counters.join("   "));
    }
    if under_valgrind(b) {
        let _ = writeln!(
            out,
            "  {} the times above are the command's under Valgrind (20–100× its own): compare its counts, or these times only with other runs under Valgrind",
            p.yellow("note:")
        );
    }
    let warm = b.runs.iter().filter(|r| r.warmup).count();
    let mut runs = format!("{counted} counted");
    if warm > 0 {
        let _ = write!(runs, ", {warm} warm-up (excluded)");
    }
    // What the default block shows of the runs' accounting: only what went wrong.
    let plain = runs.len();
    // Runs left out for interference (--exclude-interfered) by their cause, not by how they
    // ended: they did not fail.
    let interfered = |r: &crate::results::Run| {
        r.extra.get("excluded").and_then(|v| v.as_str()) == Some("interfered")
    };
    let excluded = b
        .runs
        .iter()
        .filter(|r| !r.warmup && !r.counted && interfered(r))
        .count();
    if excluded > 0 {
        let _ = write!(
            runs,
            ", {}",
            p.yellow(&format!("{excluded} excluded: interfered"))
        );
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
            .filter(|r| !r.warmup && !r.counted && !interfered(r) && r.termination == t)
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
    if verbose {
        let _ = writeln!(out, "  {:<14}{runs}", "runs");
    } else if runs.len() > plain {
        let _ = writeln!(
            out,
            "  {:<14}{}",
            "runs",
            runs[plain..].trim_start_matches(", ")
        );
    }
    // By default why measuring stopped is said when it was not the usual end: the time budget
    // (the precision asked for was not reached), or runs that failed or counted nothing.
    let unusual =
        b.stop_reason.contains("time >=") || runs.len() > plain || b.summary.wall_time.is_none();
    if !b.stop_reason.is_empty() && (verbose || unusual) {
        let _ = writeln!(out, "  {:<14}{}", "stopped", p.dim(&b.stop_reason));
    }
    for d in b
        .diagnostics
        .iter()
        .filter(|d| verbose || d.changes_a_conclusion())
    {
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
    // `tare run`'s comparisons come from the one process-level model (each run a process):
    // each line names its interval's level, and the verdict is that interval's. Over setups,
    // the mean of per-setup ratios (`--randomize`), with its p.
    let model = if over_setups {
        "mean of per-setup median ratios, 95% bootstrap CI over setups; paired t-test over setups, Holm-adjusted p"
    } else {
        "each run a process; ratio of means, slower or faster only where the CI excludes 1"
    };
    let _ = writeln!(
        out,
        "{} wall time against {} ({model})",
        p.bold("Comparison:"),
        first.reference_name,
    );
    for c in &session.comparisons {
        let words = match c.verdict.as_str() {
            "faster" => p.green(&c.words),
            "slower" => p.yellow(&c.words),
            _ => c.words.clone(),
        };
        if !over_setups {
            let _ = writeln!(out, "  {words}");
            continue;
        }
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
        out.push_str(&benchmark_block_with(
            &session.benchmarks[i],
            i,
            color,
            unit,
            verbose,
        ));
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
    for scan in crate::results::ScanRecord::of(session) {
        out.push_str(&scan.line);
        out.push('\n');
        if let Some(l) = scan.cpu_line.as_ref().filter(|_| verbose) {
            out.push_str(l);
            out.push('\n');
        }
    }
    let notes = session
        .benchmarks
        .iter()
        .flat_map(|b| b.diagnostics.iter().map(move |d| (b.name.as_str(), d)));
    if verbose {
        out.push_str(&method_block(&session.method, color));
    } else {
        // The notes held back ride on the method line, which already points to --verbose:
        // one benchmark stays four lines, as hyperfine's.
        let line = method_line(&session.method, color);
        match crate::results::held_notes_line(notes) {
            Some(held) => out.push_str(&line.replacen(
                "; --verbose for details",
                &format!("; --verbose for details and {held}"),
                1,
            )),
            None => out.push_str(&line),
        }
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
    fn the_default_block_is_dense_with_three_significant_digits() {
        let mut b = Benchmark {
            name: "work".into(),
            command: "work".into(),
            argv: vec!["work".into()],
            parameters: Default::default(),
            summary: Default::default(),
            stop_reason: String::new(),
            runs: Vec::new(),
            diagnostics: Vec::new(),
            extra: Default::default(),
        };
        let mut w = summary(4.4e-3, 4.0e-3, 7.2e-3);
        w.median_ci_low = 4.1e-3;
        w.median_ci_high = 6.8e-3;
        b.summary.wall_time = Some(w);
        let mut c = summary(1.7e-3, 1.6e-3, 1.9e-3);
        c.mean = 2.837e-3;
        b.summary.cpu_time = Some(c.clone());
        b.summary.user_time = Some(summary(1.6e-3, 1.5e-3, 1.8e-3));
        b.summary.system_time = Some(summary(0.1e-3, 0.0, 0.2e-3));
        b.summary.peak_memory = Some(summary(262_144.0, 262_144.0, 270_000.0));
        b.stop_reason = "runs >= 10 (now 10)".into();
        let short = benchmark_block_with(&b, 0, false, None, false);
        let lines: Vec<&str> = short.lines().collect();
        // Header, wall time, CPU time with peak memory: hyperfine's three lines.
        assert_eq!(lines.len(), 3, "{short}");
        assert!(
            lines[1].contains("4.40 ms  [4.10 ms … 6.80 ms]   range 4.00 ms … 7.20 ms"),
            "{short}"
        );
        assert!(
            lines[2].contains("1.70 ms") && lines[2].contains("262 kB"),
            "{short}"
        );
        for l in &lines {
            assert!(units_of(l).len() <= 1, "two units in one line: {l}");
        }
        // --verbose: mean ± σ, the spread, the runs and why measuring stopped.
        let long = benchmark_block_with(&b, 0, false, None, true);
        assert!(long.contains("± σ") && long.contains("quartiles"), "{long}");
        assert!(
            long.contains("stopped") && long.contains("runs >= 10"),
            "{long}"
        );
        assert!(long.contains("mean 2.84 ms"), "{long}");
    }

    #[test]
    fn p_values_and_plurals_read_as_words() {
        assert_eq!(p_equals(0.00001), "p < 0.0001");
        assert_eq!(p_equals(0.265), "p = 0.27");
        assert_eq!(plural(1, "run"), "1 run");
        assert_eq!(plural(2, "benchmark"), "2 benchmarks");
    }
}
