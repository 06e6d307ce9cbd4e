//! The head to head's session as every export reads it (`tare kernels --baseline`, issue 46):
//! each kernel of the pairs a benchmark whose runs are its processes (time per loop, s: the
//! median of its blocks in that process), each pair's verdict a comparison (metric
//! `cpu_time` or `wall_time`, whichever the ratio is of). So JSON, CSV, Markdown and HTML
//! exports, `tare report` and `tare history add` show them as any benchmark and comparison;
//! what only a head to head has (the per-process ratios, their intervals) stays in
//! `extra.head_to_head` and, a process's ratio, in its run's `extra.head_to_head`.
//!
//! Not for: taking the samples (`method::kernels::pairs`), the verdict
//! (`conclude::pairs`), printing (`cli::kernels_pairs`).

use crate::conclude::pairs::PairVerdict;
use crate::method::kernels::{KernelsPlan, Pair, PairResult};
use crate::results::{Benchmark, ComparisonRecord, Run};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Key of a head to head's run record (`Run.extra`) and of the session's (`Session.extra`).
pub(super) const KEY: &str = crate::results::export::HEAD_TO_HEAD_KEY;

/// The name of target `t` on its line and as a benchmark: the kernel, its program where the
/// plan has several, its parameters where `several` (the kernel runs with more than one
/// combination among the pairs).
fn label(plan: &KernelsPlan, t: usize, several: bool) -> String {
    let t = &plan.targets[t];
    let mut s = String::new();
    if plan.programs.len() > 1 {
        let _ = write!(s, "{}: ", plan.programs[t.program].label);
    }
    s.push_str(&t.kernel);
    if several {
        for (k, v) in &t.params {
            let _ = write!(s, " {k}={v}");
        }
    }
    s
}

/// Whether target `t`'s kernel appears with more than one combination among `targets`.
fn several(plan: &KernelsPlan, targets: &[usize], t: usize) -> bool {
    let u = &plan.targets[t];
    let mut combos: Vec<&BTreeMap<String, String>> = targets
        .iter()
        .map(|&i| &plan.targets[i])
        .filter(|v| v.kernel == u.kernel && v.program == u.program)
        .map(|v| &v.params)
        .collect();
    combos.sort();
    combos.dedup();
    combos.len() > 1
}

/// The name of a pair's kernel on its line (see [`label`]).
pub(super) fn name(plan: &KernelsPlan, pairs: &[Pair], p: &Pair) -> String {
    let others: Vec<usize> = pairs.iter().map(|q| q.other).collect();
    label(plan, p.other, several(plan, &others, p.other))
}

/// The name of a pair's baseline as a benchmark (see [`label`]).
fn baseline_name(plan: &KernelsPlan, pairs: &[Pair], p: &Pair) -> String {
    let bases: Vec<usize> = pairs.iter().map(|q| q.baseline).collect();
    label(plan, p.baseline, several(plan, &bases, p.baseline))
}

/// A process's time per loop as a run: wall time and, where the worker sent it, CPU time (s).
fn run(index: usize, round: usize, offset: f64, wall_ns: f64, cpu_ns: Option<f64>) -> Run {
    let cpu = cpu_ns.map_or(0.0, |c| c * 1e-9);
    Run {
        round: Some(round),
        start_offset: offset,
        ..Run::sample(index, wall_ns * 1e-9, cpu)
    }
}

/// A benchmark of target `t` named `name`, with `runs` summarized.
fn bench(plan: &KernelsPlan, t: usize, name: String, runs: Vec<Run>, stop: String) -> Benchmark {
    let target = &plan.targets[t];
    let p = &plan.programs[target.program];
    let mut b = Benchmark {
        name,
        command: p.command.clone(),
        argv: p.argv.clone(),
        parameters: target.params.clone(),
        summary: Default::default(),
        stop_reason: stop,
        runs,
        diagnostics: Vec::new(),
        extra: BTreeMap::new(),
    };
    b.summary = crate::conclude::summary::summarize(&b);
    if b.runs.iter().all(|r| r.cpu_time == 0.0) {
        b.summary.cpu_time = None;
        b.summary.user_time = None;
        b.summary.system_time = None;
    }
    b
}

/// The benchmarks (each baseline once, then each pair's kernel) and the comparisons (one a
/// pair with a verdict; p adjusted by Bonferroni over the `results.len()` comparisons, the
/// level the verdict's interval is at).
pub(super) fn parts(
    plan: &KernelsPlan,
    pairs: &[Pair],
    results: &[PairResult],
) -> (Vec<Benchmark>, Vec<ComparisonRecord>) {
    // The baselines: each target once, a run a round, the median over its pairs in that round
    // (each pair measures the baseline in its own blocks).
    let mut bases: Vec<usize> = Vec::new();
    for r in results {
        if !bases.contains(&r.pair.baseline) {
            bases.push(r.pair.baseline);
        }
    }
    let mut benches = Vec::new();
    for &b in &bases {
        let mine: Vec<&PairResult> = results.iter().filter(|r| r.pair.baseline == b).collect();
        let mut rounds: Vec<usize> = mine
            .iter()
            .flat_map(|r| r.processes.iter().map(|p| p.round))
            .collect();
        rounds.sort_unstable();
        rounds.dedup();
        let mut offset = 0.0;
        let runs: Vec<Run> = rounds
            .iter()
            .enumerate()
            .map(|(i, &round)| {
                let ps: Vec<_> = mine
                    .iter()
                    .flat_map(|r| r.processes.iter().filter(|p| p.round == round))
                    .collect();
                let walls: Vec<f64> = ps.iter().map(|p| p.ns_per_loop[0]).collect();
                let cpus: Option<Vec<f64>> =
                    ps.iter().map(|p| p.cpu_ns_per_loop.map(|c| c[0])).collect();
                let median = |xs: &[f64]| {
                    crate::stats::median(&crate::stats::sorted_without_nan(xs)).unwrap_or(f64::NAN)
                };
                let r = run(i, round, offset, median(&walls), cpus.map(|c| median(&c)));
                offset += ps.iter().map(|p| p.seconds).sum::<f64>();
                r
            })
            .collect();
        let first = mine[0].pair;
        let stop = format!(
            "the baseline of {}",
            crate::units::plural(mine.len(), "comparison")
        );
        benches.push(bench(
            plan,
            b,
            baseline_name(plan, pairs, &first),
            runs,
            stop,
        ));
    }
    let mut comparisons = Vec::new();
    for r in results {
        let mut offset = 0.0;
        let runs: Vec<Run> = r
            .processes
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut x = run(
                    i,
                    p.round,
                    offset,
                    p.ns_per_loop[1],
                    p.cpu_ns_per_loop.map(|c| c[1]),
                );
                offset += p.seconds;
                x.extra.insert(
                    KEY.into(),
                    serde_json::json!({
                        "ratio": p.ratio,
                        "ratio_ci_low": p.ratio_ci_low,
                        "ratio_ci_high": p.ratio_ci_high,
                        "time": p.time,
                    }),
                );
                x
            })
            .collect();
        let candidate = benches.len();
        let reference = bases
            .iter()
            .position(|&b| b == r.pair.baseline)
            .unwrap_or(0);
        let name = name(plan, pairs, &r.pair);
        benches.push(bench(
            plan,
            r.pair.other,
            name.clone(),
            runs,
            r.stop_reason.clone(),
        ));
        if let Some(v) = &r.verdict {
            let reference_name = benches[reference].name.clone();
            comparisons.push(comparison(
                v,
                r.cpu == Some(true),
                (reference, reference_name),
                (candidate, name),
                results.len(),
            ));
        }
    }
    (benches, comparisons)
}

/// A pair's verdict as a comparison record.
fn comparison(
    v: &PairVerdict,
    cpu: bool,
    (reference, reference_name): (usize, String),
    (candidate, candidate_name): (usize, String),
    m: usize,
) -> ComparisonRecord {
    let words = crate::conclude::pairs::line(&candidate_name, &reference_name, v);
    ComparisonRecord {
        metric: if cpu { "cpu_time" } else { "wall_time" }.into(),
        reference,
        candidate,
        reference_name,
        candidate_name,
        ratio: v.ratio,
        ratio_ci_low: v.low,
        ratio_ci_high: v.high,
        confidence: v.confidence,
        paired: true,
        // Student's t over the processes' paired log ratios (`conclude::pairs`).
        test: "student-t".into(),
        p_value: v.p_value,
        p_adjusted: (v.p_value * m.max(1) as f64).min(1.0),
        verdict: v.verdict.replace(' ', "-"),
        words,
    }
}
