//! Readers of kernel results (`tare kernels`, schema 2) out of the data model: a benchmark's
//! kernel record, its invocations, the raw sample behind a run, whether a session holds
//! kernels, and which benchmarks are the same kernel in different programs.
//!
//! Here, below `conclude`, so that both the kernel conclusions (`conclude::kernels`) and the
//! process-level model (`conclude::levels`) read samples the same way and the arrows run one
//! way: `conclude::kernels` → `conclude::levels` → `results`. Reads; computes nothing.

use super::{
    Benchmark, InvocationRecord, KernelRecord, Run, SampleRecord, Session, INVOCATIONS_KEY,
    KERNEL_KEY, SAMPLE_KEY,
};
use std::collections::BTreeSet;

/// The kernel record of a benchmark (`None` for `tare run` results).
pub fn kernel_record(b: &Benchmark) -> Option<KernelRecord> {
    serde_json::from_value(b.extra.get(KERNEL_KEY)?.clone()).ok()
}

/// The invocations of a kernel benchmark.
pub fn invocations(b: &Benchmark) -> Vec<InvocationRecord> {
    b.extra
        .get(INVOCATIONS_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// Indices of a kernel benchmark's invocations that failed: their samples are not a value of
/// the kernel (a kernel's printed value, its stop rule and its comparisons leave them out).
pub fn failed_invocations(b: &Benchmark) -> BTreeSet<usize> {
    invocations(b)
        .into_iter()
        .filter(|i| i.error.is_some())
        .map(|i| i.index)
        .collect()
}

/// The raw sample behind a run of a kernel benchmark.
pub fn sample_of(r: &Run) -> Option<SampleRecord> {
    serde_json::from_value(r.extra.get(SAMPLE_KEY)?.clone()).ok()
}

/// Whether a session holds kernel results.
pub fn is_kernels(s: &Session) -> bool {
    s.benchmarks
        .iter()
        .any(|b| b.extra.contains_key(KERNEL_KEY))
}

/// Pairs (reference, candidate) of benchmarks that are the same kernel with the same
/// parameters in different programs; the reference is the first such benchmark (the first
/// program that has the kernel).
pub fn pairs(benches: &[Benchmark]) -> Vec<(usize, usize)> {
    let key = |b: &Benchmark| {
        (
            kernel_record(b).map(|k| k.kernel).unwrap_or_default(),
            b.parameters.clone(),
        )
    };
    let mut out = Vec::new();
    for (i, b) in benches.iter().enumerate() {
        if let Some(r) = (0..i).find(|&r| key(&benches[r]) == key(b)) {
            out.push((r, i));
        }
    }
    out
}
