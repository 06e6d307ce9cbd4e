//! `tare kernels --baseline KERNEL PROGRAM…`: the head to head inside one process (issue 46).
//! Pairs every other kernel of a program with the baseline (docs/head-to-head.md), hands them
//! to `method::kernels::head_to_head`, prints one line a comparison and exports the session
//! with the per-process ratios (`head_to_head` in the JSON's `extra`).
//!
//! Which kernels pair: each other kernel with the baseline of the same program; where they
//! share parameters, the baseline's combination whose shared parameters have the kernel's
//! values, else the baseline's first combination (its own parameters at their defaults or as
//! given with -P/-L). No policy of its own.

use crate::conclude::pairs as cp;
use crate::error::{exit, usage, UserError};
use crate::exec::Executor;
use crate::machine::sysfs::SysRoot;
use crate::method::kernels::{self as mk, Discovered, KernelsOutcome, KernelsPlan, Pair};
use crate::report::Style;
use crate::results::MeasurementMethod;
use std::fmt::Write as _;

/// The pairs for `baseline`, or a one-line user error (unknown kernel, no other kernel).
pub(super) fn pairs(
    plan: &KernelsPlan,
    found: &[Discovered],
    baseline: &str,
) -> anyhow::Result<Vec<Pair>> {
    let t = &plan.targets;
    let bases: Vec<usize> = (0..t.len()).filter(|&i| t[i].kernel == baseline).collect();
    if bases.is_empty() {
        let announced = found
            .iter()
            .any(|d| d.hello.kernels.iter().any(|k| k.name == baseline));
        if announced {
            return Err(usage(format!(
                "--baseline '{baseline}' is left out by --filter: let the filter match it too"
            )));
        }
        let mut names: Vec<&str> = found
            .iter()
            .flat_map(|d| d.hello.kernels.iter().map(|k| k.name.as_str()))
            .collect();
        names.dedup();
        return Err(usage(format!(
            "--baseline '{baseline}': no such kernel; the programs announce {} (see tare kernels --list)",
            names.join(", ")
        )));
    }
    let mut out = Vec::new();
    for (o, other) in t.iter().enumerate() {
        if other.kernel == baseline {
            continue;
        }
        let mine: Vec<usize> = bases
            .iter()
            .copied()
            .filter(|&b| t[b].program == other.program)
            .collect();
        let agrees = |b: usize| {
            t[b].params
                .iter()
                .all(|(k, v)| other.params.get(k).is_none_or(|w| w == v))
        };
        if let Some(&b) = mine.iter().find(|&&b| agrees(b)).or(mine.first()) {
            out.push(Pair {
                baseline: b,
                other: o,
            });
        }
    }
    if out.is_empty() {
        return Err(usage(format!(
            "--baseline '{baseline}': the program has no other kernel to compare with it; a head to head inside one process needs two kernels in one program (two builds of one kernel: give both programs without --baseline)"
        )));
    }
    Ok(out)
}

/// What a head to head session needs from `cli::kernels`.
pub(super) struct Context<'a> {
    pub(super) plan: &'a KernelsPlan,
    pub(super) pairs: &'a [Pair],
    pub(super) found: &'a [Discovered],
    pub(super) executor: Executor,
    pub(super) cancel: &'a std::sync::atomic::AtomicBool,
    pub(super) alpha: f64,
    pub(super) baseline: &'a str,
    pub(super) style: Style,
    pub(super) root: &'a SysRoot,
    pub(super) method: MeasurementMethod,
    pub(super) cores: Option<Vec<usize>>,
    pub(super) seed: u64,
    pub(super) machine_warnings: Vec<String>,
    /// `--pair-time`: cpu, wall, or auto (None).
    pub(super) cpu: Option<bool>,
}

/// Each process as it ends, on stderr.
struct Progress {
    quiet: bool,
}

impl mk::KernelsObserver for Progress {
    fn invocation(&mut self, round: usize, program: &mk::Program, error: Option<&str>) {
        if !self.quiet {
            match error {
                None => eprintln!("tare: round {} · {}: done", round + 1, program.label),
                Some(e) => eprintln!("tare: round {} · {}: failed: {e}", round + 1, program.label),
            }
        }
    }
}

/// Runs the session, prints, exports; the exit status.
pub(super) fn run(c: Context, exports: &super::opts::ExportArgs) -> anyhow::Result<i32> {
    let plan = c.plan;
    let confidence = cp::level(c.alpha, c.pairs.len());
    let mut observer = Progress {
        quiet: c.style == Style::None,
    };
    let started = std::time::Instant::now();
    let (results, outcome) = mk::head_to_head(
        plan,
        c.pairs,
        confidence,
        c.cpu,
        &c.executor,
        c.found,
        &mut observer,
        c.cancel,
    );
    let seconds = started.elapsed().as_secs_f64();
    drop(c.executor);
    let (level, adjusted) = crate::conclude::levels::level_words(confidence, c.pairs.len());
    let mut out = String::new();
    let mut records = Vec::new();
    for r in &results {
        let n = super::kernels_pairs_results::name(plan, c.pairs, &r.pair);
        let loops = r.loops.unwrap_or([0, 0]);
        match (&r.failed, &r.verdict) {
            (Some(e), _) => {
                let _ = writeln!(out, "{n} vs {}: failed: {e}", c.baseline);
            }
            (None, Some(v)) => {
                let _ = writeln!(
                    out,
                    "{}  (±{:.2}%)",
                    cp::line(&n, c.baseline, v),
                    100.0 * cp::half_width(v)
                );
            }
            (None, None) => {
                let _ = writeln!(
                    out,
                    "{n} vs {}: no verdict: {} processes (a verdict needs {})",
                    c.baseline,
                    r.processes.len(),
                    cp::MIN_PROCESSES
                );
            }
        }
        let switch =
            r.processes.iter().map(|p| p.switch_ms).sum::<f64>() / r.processes.len().max(1) as f64;
        let _ = writeln!(
            out,
            "  {} time per loop; {level}{adjusted}, Student's t over {} processes of {} pairs of blocks (N={} vs {} loops, {}+1 vs {}+1 samples a block, switch {:.2} ms); {}",
            if r.cpu == Some(true) { "CPU" } else { "wall" },
            r.processes.len(),
            mk::PAIRS,
            loops[1],
            loops[0],
            r.block[1],
            r.block[0],
            switch,
            r.stop_reason
        );
        let t = &plan.targets[r.pair.other];
        let line = r.verdict.as_ref().map(|v| cp::line(&n, c.baseline, v));
        records.push(serde_json::json!({
            "kernel": t.kernel,
            "baseline": c.baseline,
            "implementation": plan.programs[t.program].label,
            "params": t.params,
            "baseline_params": plan.targets[r.pair.baseline].params,
            "loops": loops[1],
            "baseline_loops": loops[0],
            "samples_per_block": r.block[1],
            "baseline_samples_per_block": r.block[0],
            "pairs_per_process": mk::PAIRS,
            "time": if r.cpu == Some(true) { "cpu" } else { "wall" },
            "switch_ms_at_calibration": r.switch_ns / 1e6,
            "verdict": r.verdict,
            "line": line,
            "name": n,
            "stop_reason": r.stop_reason,
            "failed": r.failed,
            "processes": r.processes,
        }));
    }
    let _ = writeln!(
        out,
        "{} in {:.1} s; the ratio is time per loop of the kernel / of '{}', each process's the median of its paired blocks' ratios",
        crate::units::plural(results.len(), "comparison"),
        seconds,
        c.baseline
    );
    if c.style != Style::None {
        print!("{out}");
    }
    let (benchmarks, comparisons) = super::kernels_pairs_results::parts(plan, c.pairs, &results);
    let mut session =
        super::kernels_record::session_record(c.root, c.method, c.cores, c.seed, benchmarks);
    session.comparisons = comparisons;
    let failed = results.iter().find_map(|r| r.failed.clone());
    session.complete = matches!(outcome, KernelsOutcome::Complete) && failed.is_none();
    session.extra.insert(
        crate::machine::extra_keys::SESSION_WARNINGS.into(),
        serde_json::json!(c.machine_warnings),
    );
    session.extra.insert(
        super::kernels_pairs_results::KEY.into(),
        serde_json::json!({
            "baseline": c.baseline,
            "confidence": confidence,
            "alpha": c.alpha,
            "seconds": seconds,
            "comparisons": records,
        }),
    );
    session.extra.insert(
        "kernels".into(),
        serde_json::json!(plan
            .programs
            .iter()
            .zip(c.found)
            .map(|(p, d)| serde_json::json!({
                "implementation": p.label, "command": p.command, "client": d.hello.client,
                "version": d.hello.version, "lang": d.hello.lang,
            }))
            .collect::<Vec<_>>()),
    );
    let failures = crate::results::logger::log_all(&exports.loggers(), &session, None);
    match outcome {
        KernelsOutcome::Interrupted => return Err(UserError::interrupted().into()),
        KernelsOutcome::Failed(e) => return Err(UserError::run_failed(e).into()),
        KernelsOutcome::Complete => {}
    }
    if !failures.is_empty() {
        return Err(UserError::run_failed(failures.join("; ")).into());
    }
    if let Some(e) = failed {
        return Err(UserError::run_failed(e).into());
    }
    Ok(exit::OK)
}
