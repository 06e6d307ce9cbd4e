//! The summary printed after a session: per benchmark, wall time (median with its 95% CI,
//! mean ± σ, range, quartiles), CPU time (user + system), peak memory, runs and why measuring
//! stopped, then how the numbers were measured. Digits follow precision (seed 003 §7.2).

use crate::results::{
    Benchmark, MeasurementMethod, MethodKind, MetricSummary, Session, Termination,
};
use crate::units::{self, format_bytes, format_scaled, format_time, time_scale};
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

fn time_block(out: &mut String, p: &Paint, label: &str, m: &MetricSummary) {
    let (scale, unit) = time_scale(m.median);
    let res = resolution(m);
    let f = |v: f64| format_scaled(v, scale, unit, res);
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
        format_scaled(m.stddev, scale, unit, None),
        units::format_percent(m.cv)
    );
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

/// Renders one benchmark's block.
pub fn benchmark_block(b: &Benchmark, index: usize, color: bool) -> String {
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
        Some(w) => time_block(&mut out, &p, "wall time", w),
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
        let _ = writeln!(
            out,
            "  {:<14}{} median = {} user + {} system   (mean {})",
            "CPU time",
            format_time(c.median, resolution(c)),
            format_time(u.median, None),
            format_time(s.median, None),
            format_time(c.mean, None),
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
        let _ = writeln!(out, "  {words}   p = {}", units::format_p(c.p_adjusted));
    }
    out
}

/// How the numbers were measured, with any caveat in yellow.
pub fn method_block(m: &MeasurementMethod, color: bool) -> String {
    let p = Paint { on: color };
    let mut out = String::new();
    let name = match m.kind {
        MethodKind::CgroupV1 => "cgroup v1",
        MethodKind::CgroupV2 => "cgroup v2",
        MethodKind::Rusage => "rusage FALLBACK",
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

/// The whole summary of a session.
pub fn summary(session: &Session, color: bool) -> String {
    let mut out = String::new();
    for (i, b) in session.benchmarks.iter().enumerate() {
        out.push_str(&benchmark_block(b, i, color));
        out.push('\n');
    }
    if !session.comparisons.is_empty() {
        out.push_str(&comparison_block(session, color));
        out.push('\n');
    }
    out.push_str(&method_block(&session.method, color));
    out
}
