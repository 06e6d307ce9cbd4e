//! `tare plan`: from a pilot session measured in several setups, the repetitions per level
//! (setups, runs per setup) that reach a CI width at the least cost (Kalibera & Jones 2013);
//! prints the plan (or JSON) and writes the file `tare run --plan` follows.

use crate::error::{exit, usage};
use crate::method::planning::{self, PlanRequest};
use crate::plan::repetitions::RepetitionPlanFile;
use crate::results::Session;
use crate::units;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    after_help = "Example:\n  tare run --randomize env,aslr,cwd,argv0 --setups 10 --runs 50 --export-json pilot.json ./prog\n  \
                  tare plan --pilot pilot.json --precision 1% --output plan.json\n  tare run --plan plan.json ./prog"
)]
pub struct PlanArgs {
    /// Results of a pilot `tare run --randomize … --setups N` with several runs per setup.
    #[arg(long, value_name = "RESULTS.json")]
    pilot: PathBuf,
    /// Target: the CI of the mean within ± this of the mean.
    #[arg(long, value_name = "PCT", default_value = "1%")]
    precision: String,
    /// Confidence level of the CI.
    #[arg(long, value_name = "LEVEL", default_value_t = 0.95)]
    confidence: f64,
    /// Probability the planned experiment reaches the target (0.5: on average).
    #[arg(long, value_name = "P", default_value_t = 0.8)]
    assurance: f64,
    /// Cost of making one new setup (e.g. 30s for a build); tare's own setups cost ~0.
    #[arg(long, value_name = "DURATION", default_value = "0s")]
    setup_cost: String,
    /// The pilot's benchmark to plan for: name or 1-based position (default: the first).
    #[arg(long, value_name = "NAME|INDEX")]
    benchmark: Option<String>,
    /// Print the plan as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Write the plan file for `tare run --plan`.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Reads a plan file written by `tare plan`.
pub(crate) fn read_plan(path: &std::path::Path) -> anyhow::Result<RepetitionPlanFile> {
    let text = crate::results::input::read_text(path, "--plan: plan file")?;
    let p: RepetitionPlanFile = serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "--plan: {} is not a plan written by tare plan ({e}); make one with tare plan --pilot RESULTS.json --output FILE",
            path.display()
        ))
    })?;
    if p.setups == 0 || p.runs_per_setup == 0 || p.factors.is_empty() {
        return Err(usage(format!(
            "--plan: {} plans no setups or randomizes nothing; make it again with tare plan",
            path.display()
        )));
    }
    Ok(p)
}

/// `tare plan`.
pub fn plan(a: PlanArgs) -> anyhow::Result<i32> {
    let text = crate::results::input::read_text(&a.pilot, "--pilot: results file")?;
    let session: Session = serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "--pilot: {} is not a tare results file ({e}); give the --export-json of a tare run",
            a.pilot.display()
        ))
    })?;
    let precision = units::parse_fraction(&a.precision)
        .map_err(|e| usage(format!("--precision {}: {e}", a.precision)))?;
    if precision.is_nan() || precision <= 0.0 {
        return Err(usage("--precision must be above 0, e.g. 1%"));
    }
    for (v, flag) in [(a.confidence, "--confidence"), (a.assurance, "--assurance")] {
        if !(v > 0.0 && v < 1.0) {
            return Err(usage(format!("{flag} {v} must be between 0 and 1")));
        }
    }
    let zero = a.setup_cost.trim().parse::<f64>() == Ok(0.0)
        || humantime::parse_duration(a.setup_cost.trim()).is_ok_and(|d| d.is_zero());
    let setup_cost = if zero {
        0.0
    } else {
        units::parse_duration(&a.setup_cost)
            .map_err(|e| usage(format!("--setup-cost: {e}")))?
            .as_secs_f64()
    };
    let benchmark = match &a.benchmark {
        None => 0,
        Some(r) => match session.benchmarks.iter().position(|b| &b.name == r) {
            Some(i) => i,
            None => match r.parse::<usize>() {
                Ok(i) if i >= 1 && i <= session.benchmarks.len() => i - 1,
                _ => {
                    return Err(usage(format!(
                        "--benchmark '{r}' names no benchmark of the pilot: give a name or a position from 1 to {}",
                        session.benchmarks.len()
                    )))
                }
            },
        },
    };
    if let Some(p) = &a.output {
        crate::results::fsio::check(p)?;
    }
    let req = PlanRequest {
        benchmark,
        precision,
        confidence: a.confidence,
        assurance: a.assurance,
        setup_cost,
    };
    let kernels = crate::conclude::kernels::is_kernels(&session);
    let (plan, notes) = if kernels {
        planning::plan_kernels_from_pilot(&session, &req).map_err(usage)?
    } else {
        planning::plan_from_pilot(&session, &req).map_err(usage)?
    };
    let json = serde_json::to_string_pretty(&plan)?;
    if let Some(p) = &a.output {
        crate::results::fsio::write(p, format!("{json}\n").as_bytes())?;
    }
    if a.json {
        println!("{json}");
    } else {
        if kernels {
            print!("{}", render_kernels(&plan, &notes));
        } else {
            print!("{}", render(&plan, &notes, a.output.as_ref()));
        }
    }
    Ok(exit::OK)
}

/// The words of one kind of plan: `tare run` setups × runs, or `tare kernels` invocations ×
/// samples.
struct Words {
    outer: &'static str,
    inner: &'static str,
    outer_level: &'static str,
    per: &'static str,
    per_loop: &'static str,
    /// Widths of the level and planned columns.
    widths: (usize, usize),
}

const RUN_WORDS: Words = Words {
    outer: "setups",
    inner: "runs",
    outer_level: "setup",
    per: "per setup",
    per_loop: "",
    widths: (7, 12),
};

const KERNEL_WORDS: Words = Words {
    outer: "invocations",
    inner: "samples",
    outer_level: "invocation",
    per: "per invocation",
    per_loop: " per loop",
    widths: (10, 22),
};

/// The pilot, the levels' table, the plan and the notes, in the words of `w`.
fn render_common(p: &RepetitionPlanFile, notes: &[String], w: &Words) -> String {
    let t = |v: f64| units::format_time(v, None);
    let pct = |v: f64| units::format_percent(v);
    let (lw, pw) = w.widths;
    let mut s = format!(
        "pilot: '{}', {} {} × {} {}, mean {}{}\n",
        p.benchmark,
        p.pilot_setups,
        w.outer,
        p.pilot_runs_per_setup,
        w.inner,
        t(p.pilot_mean),
        w.per_loop
    );
    s.push_str(&format!(
        "{:<lw$} {:>16} {:>9} {:>14} {:>pw$}\n",
        "level", "σ (corrected)", "of mean", "cost each", "planned"
    ));
    for l in p.levels.iter().rev() {
        let sd = l.variance.max(0.0).sqrt();
        let planned = if l.level == w.outer_level {
            format!("{} {}", l.repetitions, w.outer)
        } else {
            format!("{} {}", l.repetitions, w.per)
        };
        s.push_str(&format!(
            "{:<lw$} {:>16} {:>9} {:>14} {:>pw$}\n",
            l.level,
            t(sd),
            pct(sd / p.pilot_mean),
            t(l.cost),
            planned
        ));
    }
    s.push_str(&format!(
        "plan: {} {} × {} {} = {} {}, about {}; {}% CI of the mean within ±{} (target ±{}, reached with probability ≈ {})\n",
        p.setups,
        w.outer,
        p.runs_per_setup,
        w.inner,
        p.setups * p.runs_per_setup,
        w.inner,
        t(p.predicted_cost),
        (p.confidence * 100.0).round(),
        pct(p.predicted_halfwidth),
        pct(p.precision),
        pct(p.assurance)
    ));
    for n in notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

fn render(p: &RepetitionPlanFile, notes: &[String], out: Option<&PathBuf>) -> String {
    let mut s = render_common(p, notes, &RUN_WORDS);
    match out {
        Some(f) => s.push_str(&format!("run it: tare run --plan {} COMMAND\n", f.display())),
        None => s.push_str(&format!(
            "run it: tare run --randomize {} --setups {} --runs {} COMMAND (or save with --output and use --plan)\n",
            p.factors.iter().map(|f| f.name()).collect::<Vec<_>>().join(","),
            p.setups,
            p.setups * p.runs_per_setup
        )),
    }
    s
}

/// The plan for kernel results: invocations × samples per invocation.
fn render_kernels(p: &RepetitionPlanFile, notes: &[String]) -> String {
    let mut s = render_common(p, notes, &KERNEL_WORDS);
    s.push_str(&format!(
        "run it: tare kernels --invocations {} --stop 'runs >= {}' PROGRAM...\n",
        p.setups, p.runs_per_setup
    ));
    s
}
