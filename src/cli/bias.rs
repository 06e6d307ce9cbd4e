//! `tare bias`: sweep one setup factor (environment size, working-directory path length,
//! argv[0] length, ASLR) over levels with the others held fixed, each level repeated and the
//! levels interleaved in counterbalanced rounds; test whether the factor changes the result
//! (Kruskal–Wallis), report the spread it induces, and — for the factors that move the stack —
//! repeat the sweep with ASLR on (the intervention that breaks the link from the factor to the
//! stack's alignment, seed 002 §7) to see whether the effect disappears.

use crate::conclude::setups::{self, SweepAnalysis};
use crate::error::{exit, usage};
use crate::exec::{self, Executor, Input, Limits, Priority, Sink};
use crate::machine::probe::InterferenceThresholds;
use crate::machine::{self, sysfs::SysRoot};
use crate::method::{self, Observer, Outcome};
use crate::plan::stop::{Cmp, Metric, StopRule};
use crate::plan::{Analysis, BenchmarkPlan, Countermeasures, Order, Plan};
use crate::report::Style;
use crate::results::export::{self, Export, Format};
use crate::results::{Benchmark, LimitsRecord, Session, SCHEMA_VERSION};
use crate::setup::{Factor, Setup};
use crate::units;
use clap::{Args, ValueEnum};
use serde_json::json;
use std::path::PathBuf;

/// Most levels in one sweep.
const MAX_LEVELS: usize = 1000;

#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  tare bias --factor env --levels 0:256:16 --repeat 10 -- ./prog\n  \
                  tare bias --factor argv0 --levels 0,64,128,192 -- ./prog arg\n  tare bias --factor aslr --repeat 20 -- ./prog"
)]
pub struct BiasArgs {
    /// The factor to sweep: env (bytes of TARE_PAD), cwd (characters of the working directory's
    /// path below tare's directory), argv0 (characters of the program path's directory part),
    /// or aslr (off,on).
    #[arg(long, value_name = "FACTOR")]
    factor: String,
    /// Levels: MIN:MAX:STEP or a comma list (aslr: off,on). Default: 0:256:16 (all 16-byte
    /// stack offsets within four cache lines), off,on for aslr.
    #[arg(long, value_name = "LEVELS")]
    levels: Option<String>,
    /// Runs per level (levels interleaved in counterbalanced rounds).
    #[arg(long, value_name = "N", default_value_t = 10)]
    repeat: usize,
    /// Unrecorded-in-statistics runs per level before measuring.
    #[arg(short = 'w', long, value_name = "N", default_value_t = 1)]
    warmup: usize,
    /// The metric compared across levels.
    #[arg(long, value_enum, default_value_t = MetricArg::Wall)]
    metric: MetricArg,
    /// Significance level of the test for an effect.
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05)]
    alpha: f64,
    /// Do not repeat the sweep with ASLR on.
    #[arg(long)]
    no_intervention: bool,
    #[command(flatten)]
    cores: super::opts::CoreArgs,
    /// Seed for the order of levels in each round; recorded. Random by default.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Write every run, the table and the test as JSON (`extra.bias`).
    #[arg(long, value_name = "FILE")]
    export_json: Option<PathBuf>,
    #[command(flatten)]
    style: super::opts::StyleArgs,
    #[command(flatten)]
    backend: super::opts::BackendArgs,
    /// The command, as separate words after `--`.
    #[arg(last = true, value_name = "ARGV", required = true)]
    argv: Vec<String>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum MetricArg {
    /// Wall time.
    Wall,
    /// CPU time (user + system) of the whole tree.
    Cpu,
}

/// One level of the sweep.
#[derive(Debug, Clone, PartialEq)]
struct Level {
    label: String,
    setup: Setup,
}

/// Parses `MIN:MAX:STEP` or a comma list of sizes.
fn sizes(text: &str) -> Result<Vec<usize>, String> {
    let num = |t: &str| -> Result<usize, String> {
        let t = t.trim();
        t.parse::<usize>()
            .or_else(|_| units::parse_bytes(t).map(|v| v as usize))
            .map_err(|_| {
                format!("'{t}' is not a size; write MIN:MAX:STEP (e.g. 0:256:16) or a comma list")
            })
    };
    let parts: Vec<&str> = text.split(':').collect();
    let out: Vec<usize> = match parts.as_slice() {
        [a, b, c] => {
            let (lo, hi, step) = (num(a)?, num(b)?, num(c)?);
            if step == 0 || lo > hi {
                return Err(format!(
                    "'{text}': need MIN ≤ MAX and STEP ≥ 1, e.g. 0:256:16"
                ));
            }
            if (hi - lo) / step + 1 > MAX_LEVELS {
                return Err(format!(
                    "'{text}' gives more than {MAX_LEVELS} levels; use a larger step"
                ));
            }
            (lo..=hi).step_by(step).collect()
        }
        [_] => text.split(',').map(num).collect::<Result<_, _>>()?,
        _ => {
            return Err(format!(
                "'{text}': write MIN:MAX:STEP (e.g. 0:256:16) or a comma list"
            ))
        }
    };
    if out.len() < 2 {
        return Err(format!(
            "'{text}' gives fewer than two levels; give at least two"
        ));
    }
    if out.iter().any(|&v| v > 1 << 17) {
        return Err(format!(
            "'{text}' has a level above 128 KiB, more than the kernel takes in one string; keep levels small"
        ));
    }
    Ok(out)
}

/// The levels of `factor`, each with the other factors held fixed (ASLR off for the factors
/// that move the stack, so that its alignment follows them).
fn levels(factor: Factor, text: Option<&str>) -> Result<Vec<Level>, String> {
    if factor == Factor::Aslr {
        let text = text.unwrap_or("off,on");
        let mut out = Vec::new();
        for (i, w) in text.split(',').enumerate() {
            let on = match w.trim() {
                "on" => true,
                "off" => false,
                other => return Err(format!("aslr level '{other}': write off,on")),
            };
            out.push(Level {
                label: w.trim().to_string(),
                setup: Setup {
                    seed: i as u64,
                    aslr: Some(on),
                    ..Setup::default()
                },
            });
        }
        if out.len() < 2 {
            return Err("aslr needs two levels: off,on".into());
        }
        return Ok(out);
    }
    let values = sizes(text.unwrap_or("0:256:16"))?;
    Ok(values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let mut s = Setup {
                seed: i as u64,
                aslr: Some(false),
                ..Setup::default()
            };
            match factor {
                Factor::Env => s.env_pad = Some(v),
                Factor::Cwd => {
                    s.cwd_length = Some(v.max(1));
                    s.cwd_depth = Some(1);
                }
                Factor::Argv0 => s.argv0_length = Some(v),
                Factor::Aslr => {}
            }
            Level {
                label: v.to_string(),
                setup: s,
            }
        })
        .collect())
}

/// A one-line run counter on a terminal (the sweep may take minutes).
struct Counter {
    show: bool,
    done: usize,
    total: usize,
}

impl Observer for Counter {
    fn run_finished(&mut self, _b: &[Benchmark], _i: usize) -> anyhow::Result<()> {
        self.done += 1;
        if self.show {
            eprint!("\rtare bias: run {} of {}", self.done, self.total);
        }
        Ok(())
    }
    fn finished(&mut self, _b: &[Benchmark], _c: Option<usize>) {
        if self.show {
            eprint!("\r{:40}\r", "");
        }
    }
}

fn metric_values(b: &Benchmark, metric: MetricArg) -> Vec<f64> {
    b.runs
        .iter()
        .filter(|r| r.counted)
        .map(|r| match metric {
            MetricArg::Wall => r.wall_time,
            MetricArg::Cpu => r.cpu_time,
        })
        .collect()
}

/// `tare bias`.
pub fn bias(a: BiasArgs) -> anyhow::Result<i32> {
    let factor = Factor::parse(&a.factor).map_err(|e| usage(format!("--factor: {e}")))?;
    let lv = levels(factor, a.levels.as_deref()).map_err(|e| usage(format!("--levels: {e}")))?;
    if a.repeat < 2 {
        return Err(usage(
            "--repeat must be at least 2 (the test needs repeated runs per level)",
        ));
    }
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        return Err(usage(format!(
            "--alpha {} must be between 0 and 1, e.g. 0.05",
            a.alpha
        )));
    }
    super::run::check_program(&a.argv[0], None)?;
    super::run::aslr_usable()?;
    let intervene = factor != Factor::Aslr && !a.no_intervention;
    let root = SysRoot::from_env();
    let (chosen, _pinned) = a.cores.resolve(&root, "tare bias")?;
    let cores = chosen.run;
    if let Some(p) = &a.export_json {
        crate::results::fsio::check(p)?;
    }
    let needs = exec::Needs {
        cpuset: cores.is_some(),
        pids: false,
    };
    let backend = a.backend.detect(&needs)?;
    let command_text = shell_words::join(&a.argv);
    let mut plans: Vec<BenchmarkPlan> = Vec::new();
    let passes: &[bool] = if intervene { &[false, true] } else { &[false] };
    for &aslr_on in passes {
        for l in &lv {
            let mut s = l.setup.clone();
            let mut name = format!("{}={}", factor.name(), l.label);
            if aslr_on {
                s.aslr = Some(true);
                s.seed += 1 << 32;
                name.push_str(" aslr=on");
            }
            plans.push(BenchmarkPlan {
                name,
                command: command_text.clone(),
                argv: a.argv.clone(),
                parameters: [(factor.name().to_string(), l.label.clone())].into(),
                setup: None,
                cleanup: None,
                prepare: None,
                conclude: None,
                fixed_setup: Some(s),
            });
        }
    }
    let seed = a.seed.unwrap_or_else(rand::random);
    let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
    let plan = Plan {
        benchmarks: plans,
        warmup: a.warmup,
        stop: StopRule::Cond(Metric::Runs, Cmp::Ge, a.repeat as f64),
        order: Order::Interleaved,
        seed,
        limits: Limits::default(),
        cores: cores.clone(),
        env,
        cwd: None,
        stdin: Input::Null,
        output: Sink::Null,
        ignore_failure: false,
        shell: "/bin/sh".into(),
        actions: Default::default(),
        analysis: Analysis {
            reference: 0,
            welch: false,
            alpha: a.alpha,
            noise: 0.01,
            discard_outliers: false,
            compare: false,
        },
        machine: Countermeasures {
            priority: Priority::Normal,
            thresholds: InterferenceThresholds::default(),
            ..Default::default()
        },
        setups: None,
        counters: None,
        isolation: None,
        meters: Default::default(),
    };
    let style = a.style.style();
    if style != Style::None {
        eprintln!(
            "tare bias: {} levels of {}{} × {} runs{}; levels interleaved in counterbalanced rounds",
            lv.len(),
            factor.name(),
            if factor == Factor::Aslr {
                ""
            } else {
                " (ASLR off)"
            },
            a.repeat,
            if intervene {
                ", and the same levels with ASLR on"
            } else {
                ""
            }
        );
    }
    let mut session = Session {
        schema_version: SCHEMA_VERSION,
        tare_version: env!("CARGO_PKG_VERSION").to_string(),
        invocation: std::env::args().collect(),
        started_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        machine: machine::info::collect_info(&root),
        method: backend.method(),
        cores,
        limits: LimitsRecord::default(),
        environment: Default::default(),
        seed,
        benchmarks: method::empty_benchmarks(&plan),
        comparisons: Vec::new(),
        complete: false,
        extra: Default::default(),
    };
    let cancel = crate::output::install_stop_signals()?;
    let executor = Executor::new(backend);
    let mut counter = Counter {
        show: style.progress() && std::io::IsTerminal::is_terminal(&std::io::stderr()),
        done: 0,
        total: plan.benchmarks.len() * (a.repeat + a.warmup),
    };
    let outcome = method::execute(&plan, &executor, &mut session, &mut counter, &cancel);
    session.complete = matches!(outcome, Outcome::Complete);
    let n = lv.len();
    let groups = |range: std::ops::Range<usize>| -> Vec<(String, Vec<f64>)> {
        range
            .map(|i| {
                (
                    lv[i % n].label.clone(),
                    metric_values(&session.benchmarks[i], a.metric),
                )
            })
            .collect()
    };
    let main = setups::sweep(&groups(0..n), a.alpha);
    let control = if intervene {
        setups::sweep(&groups(n..2 * n), a.alpha)
    } else {
        None
    };
    let conclusion = conclude(factor, main.as_ref(), control.as_ref());
    session.extra.insert(
        "bias".into(),
        json!({
            "factor": factor.name(),
            "metric": match a.metric { MetricArg::Wall => "wall_time", MetricArg::Cpu => "cpu_time" },
            "repeat": a.repeat,
            "held_fixed": if factor == Factor::Aslr { "other factors as tare's own" } else { "aslr off; other factors as tare's own" },
            "sweep": main,
            "intervention": control.as_ref().map(|c| json!({"aslr": "on", "sweep": c})),
            "conclusion": conclusion,
        }),
    );
    if style != Style::None {
        print!(
            "{}",
            table(factor, a.metric, main.as_ref(), control.as_ref())
        );
        println!("{conclusion}");
    }
    if let Some(p) = &a.export_json {
        export::write(
            &Export {
                format: Format::Json,
                path: p.clone(),
            },
            &session,
        )?;
    }
    match outcome {
        Outcome::Complete => Ok(exit::OK),
        Outcome::Interrupted => Err(crate::error::UserError::interrupted().into()),
        Outcome::Failed(e) => Err(e),
    }
}

fn table(
    factor: Factor,
    metric: MetricArg,
    main: Option<&SweepAnalysis>,
    control: Option<&SweepAnalysis>,
) -> String {
    let Some(m) = main else {
        return "not enough runs to compare the levels\n".into();
    };
    let fmt = |v: f64| units::format_time(v, None);
    let what = match metric {
        MetricArg::Wall => "wall time",
        MetricArg::Cpu => "CPU time",
    };
    let mut out = String::new();
    let head_main = if factor == Factor::Aslr {
        format!("median {what}")
    } else {
        format!("median {what}, ASLR off")
    };
    out.push_str(&format!(
        "{:<8} {:>5}  {:>26} {:>8}",
        factor.name(),
        "runs",
        head_main,
        "×"
    ));
    if control.is_some() {
        out.push_str(&format!("  {:>26} {:>8}", "ASLR on", "×"));
    }
    out.push('\n');
    for (i, l) in m.levels.iter().enumerate() {
        out.push_str(&format!(
            "{:<8} {:>5}  {:>26} {:>8.3}",
            l.level,
            l.runs,
            fmt(l.median),
            l.relative
        ));
        if let Some(c) = control.and_then(|c| c.levels.get(i)) {
            out.push_str(&format!("  {:>26} {:>8.3}", fmt(c.median), c.relative));
        }
        out.push('\n');
    }
    out
}

fn describe(s: &SweepAnalysis) -> String {
    format!(
        "Kruskal–Wallis H = {:.1}, {}; level medians span {:.3}× ({} slowest, {} fastest)",
        s.h,
        units::p_phrase(s.p_value),
        s.spread,
        s.slowest_level,
        s.fastest_level
    )
}

/// The verdict in words.
fn conclude(
    factor: Factor,
    main: Option<&SweepAnalysis>,
    control: Option<&SweepAnalysis>,
) -> String {
    let Some(m) = main else {
        return "no verdict: too few counted runs per level".into();
    };
    let mut s = if m.significant {
        format!(
            "{} has a significant effect (α = {}): {}",
            factor.name(),
            m.alpha,
            describe(m)
        )
    } else {
        format!(
            "no significant effect of {} (α = {}): {}",
            factor.name(),
            m.alpha,
            describe(m)
        )
    };
    if let Some(c) = control {
        s.push_str(&format!(
            "\nwith ASLR on (stack start randomized, which breaks the link from {} to stack alignment): {}",
            factor.name(),
            describe(c)
        ));
        s.push_str(match (m.significant, c.significant) {
            (true, false) => "\nthe effect disappears under the intervention: it acts through the alignment of the stack",
            (true, true) => "\nthe effect persists under the intervention: it does not act (only) through stack alignment",
            (false, true) => "\nan effect appears only with ASLR on: look for another cause (noise, drift)",
            (false, false) => "",
        });
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_levels() {
        assert_eq!(sizes("0:64:16").unwrap(), vec![0, 16, 32, 48, 64]);
        assert_eq!(sizes("8,1KiB").unwrap(), vec![8, 1024]);
        assert!(sizes("0:64:0").is_err());
        assert!(sizes("64:0:16").is_err());
        assert!(sizes("5").is_err());
        assert!(sizes("0:1000000:1").is_err());
        assert!(sizes("a:b").is_err());
        let l = levels(Factor::Aslr, None).unwrap();
        assert_eq!(l[0].setup.aslr, Some(false));
        assert!(levels(Factor::Aslr, Some("off,maybe")).is_err());
        let l = levels(Factor::Cwd, Some("0,300")).unwrap();
        assert_eq!(l[0].setup.cwd_length, Some(1));
        assert_eq!(l[1].setup.aslr, Some(false));
    }
}
