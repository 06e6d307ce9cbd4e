//! What an invocation got, as results records: each sample a `Run` (seconds per loop, the raw
//! sample in `Run.extra["sample"]`, its counts), each invocation an `InvocationRecord`, the
//! kernel's checks in its `KernelRecord`; and the benchmark's state across invocations updated
//! from it. Also what a finished session did not measure, read from its records.
//!
//! Not for: reading records back for conclusions (`results::kernels`, `conclude::kernels`)
//! or taking the samples (`invoke.rs`).

use super::counts::{COUNT_METHOD_KEY, REGION_METHOD};
use super::{invocations, kernel_record, KernelsPlan, State, Taken};
use crate::exec::worker::Sample;
use crate::results::{
    Benchmark, InvocationRecord, KernelRecord, Run, SampleRecord, INVOCATIONS_KEY, KERNEL_KEY,
    SAMPLE_KEY,
};
use crate::stats;
use std::collections::BTreeMap;
use std::time::Instant;

/// The first thing a session asked for and did not measure, in one line that names its
/// benchmark: a kernel that failed (its reason), one with no counted sample, or (with
/// `--ignore-failure`) an invocation that failed. `None` when everything was measured.
pub fn unmeasured(benches: &[Benchmark]) -> Option<String> {
    benches.iter().find_map(|b| {
        if let Some(why) = b.stop_reason.strip_prefix("failed: ") {
            return Some(format!("{}: {why}", b.name));
        }
        if let Some(why) = uncounted(std::slice::from_ref(b)) {
            return Some(why);
        }
        invocations(b).into_iter().find_map(|i| {
            i.error
                .map(|e| format!("{}: invocation {} failed: {e}", b.name, i.index + 1))
        })
    })
}

/// The first benchmark without a single counted sample, in one line: its failure where it
/// failed, else that every sample was excluded.
pub fn uncounted(benches: &[Benchmark]) -> Option<String> {
    let b = benches.iter().find(|b| !b.runs.iter().any(|r| r.counted))?;
    Some(match b.stop_reason.strip_prefix("failed: ") {
        Some(why) => format!("{}: {why}", b.name),
        None => format!(
            "{}: no counted sample: every sample was excluded (see the notes above); raise --sample-time, lower --warmup, or check that the body is not optimized away",
            b.name
        ),
    })
}

/// Appends what one invocation got to the benchmarks and updates their state.
#[allow(clippy::too_many_arguments)]
pub(super) fn record(
    plan: &KernelsPlan,
    benches: &mut [Benchmark],
    state: &mut [State],
    taken: &[Taken],
    mine: &[usize],
    round: usize,
    m: Option<&crate::exec::Measurement>,
    // The process's failure, and the benchmarks it is pinned on.
    failure: Option<(&str, &[usize])>,
    (setup, meters, environment): (
        Option<String>,
        BTreeMap<String, f64>,
        Option<serde_json::Value>,
    ),
    t0: Instant,
) {
    for &i in mine {
        let got = taken.iter().find(|t| t.target == i);
        let error = failure.and_then(|(e, blamed)| blamed.contains(&i).then_some(e));
        if got.is_none() && error.is_none() && failure.is_some() {
            // The process failed before this kernel's turn: not measured in it, tried again
            // in the next round.
            continue;
        }
        let b = &mut benches[i];
        let mut invs = invocations(b);
        let index = invs.len();
        let mut counted = Vec::new();
        let mut n = 0;
        if let Some(got) = got {
            let mut rec = kernel_record(b).unwrap_or_default();
            take_checks(&mut rec, &mut state[i], got);
            for (pos, (s, why)) in got.samples.iter().enumerate() {
                if rec.bytes_per_loop.is_none() {
                    rec.bytes_per_loop = s.bytes.map(|x| x as f64 / s.loops as f64);
                }
                if rec.items_per_loop.is_none() {
                    rec.items_per_loop = s.items.map(|x| x as f64 / s.loops as f64);
                }
                let run = sample_run(b.runs.len(), index, pos, s, why, got, t0);
                if why.is_none() {
                    counted.push(run.wall_time);
                }
                b.runs.push(run);
                n += 1;
            }
            b.extra
                .insert(KERNEL_KEY.to_string(), serde_json::json!(rec));
            state[i].seconds += got.seconds;
        }
        let median = stats::median(&stats::sorted_without_nan(&counted));
        let mean =
            (!counted.is_empty()).then(|| counted.iter().sum::<f64>() / counted.len() as f64);
        let own_error = got.and_then(|g| g.error.clone());
        if let (Some(m), None, None) = (mean, &own_error, error) {
            state[i].values.push(m);
        }
        if own_error.is_some() && !plan.ignore_failure {
            state[i]
                .failed
                .get_or_insert(own_error.clone().unwrap_or_default());
        }
        invs.push(InvocationRecord {
            index,
            round,
            wall_time: m.map_or(0.0, |m| m.wall.as_secs_f64()),
            cpu_time: m.map_or(0.0, |m| m.cpu().as_secs_f64()),
            peak_memory: m.and_then(|m| m.peak_memory),
            samples: n,
            counted: counted.len(),
            median,
            mean,
            steady_from: got.map_or(0, |g| g.steady_from),
            error: own_error.or_else(|| error.map(str::to_string)),
            setup: setup.clone(),
            meters: meters.clone(),
            environment: environment.clone(),
        });
        b.extra
            .insert(INVOCATIONS_KEY.to_string(), serde_json::json!(invs));
    }
}

/// What calibration and the checks found in an invocation (`got`), into the kernel's record
/// and its state: its loops, the linearity check or why it was skipped, the first-loop check,
/// the slowest time per loop seen.
fn take_checks(rec: &mut KernelRecord, state: &mut State, got: &Taken) {
    if let Some(l) = got.loops {
        rec.loops = l;
        state.loops = Some(l);
    }
    if let Some(l) = got.linearity {
        rec.linearity = Some(l.ratio);
        rec.linearity_ci = Some([l.ci.0, l.ci.1]);
        rec.linearity_pairs = Some(l.pairs);
        state.linearity_done = true;
    }
    if let Some(why) = &got.linearity_skipped {
        rec.linearity_skipped = Some(why.clone());
        state.linearity_done = true;
    }
    if got.first_loop.is_some() {
        rec.first_loop_ns = got.first_loop;
    }
    state.loop_ns = got.loop_ns;
}

/// One sample (`s`, excluded for `why` where it is), the `pos`-th of invocation `invocation`,
/// as the benchmark's run number `index`: seconds per loop, the raw sample and its counts in
/// `Run.extra`.
fn sample_run(
    index: usize,
    invocation: usize,
    pos: usize,
    s: &Sample,
    why: &Option<String>,
    got: &Taken,
    t0: Instant,
) -> Run {
    let per = |ns: u64| ns as f64 / s.loops as f64 * 1e-9;
    let wall = per(s.ns);
    let cpu = s.cpu_ns.map(per).unwrap_or(0.0);
    let sample = SampleRecord {
        invocation,
        position: pos,
        loops: s.loops,
        ns: s.ns,
        cpu_ns: s.cpu_ns,
        bytes: s.bytes,
        items: s.items,
        metrics: s.metrics.clone(),
        excluded: why.clone(),
    };
    let mut extra = BTreeMap::new();
    extra.insert(SAMPLE_KEY.to_string(), serde_json::json!(sample));
    if let Some(Some(counts)) = got.counts.get(pos) {
        extra.insert(
            crate::method::counters::RUN_KEY.to_string(),
            serde_json::json!(counts),
        );
        extra.insert(
            crate::method::counters::BACKEND_KEY.to_string(),
            serde_json::json!("valgrind"),
        );
        extra.insert(
            COUNT_METHOD_KEY.to_string(),
            serde_json::json!(got.count_method.unwrap_or(REGION_METHOD)),
        );
    }
    Run {
        warmup: why.is_some(),
        start_offset: t0.elapsed().as_secs_f64(),
        counted: why.is_none(),
        extra,
        ..Run::sample(index, wall, cpu)
    }
}
