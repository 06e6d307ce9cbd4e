//! The success rate of a benchmark whose runs sometimes fail (`--ignore-failure`): successful
//! runs (exit 0, no limit hit, ready when `--ready`) among the measured ones (warm-ups left
//! out), with a 95% Wilson interval. Stored in `Benchmark.extra["success_rate"]`.

use crate::results::{Benchmark, Termination};
use serde_json::{json, Value};

/// Key of the record in `Benchmark.extra`.
pub const EXTRA_KEY: &str = "success_rate";

/// The record, or `None` without measured runs.
pub fn record(b: &Benchmark) -> Option<Value> {
    let runs: Vec<_> = b.runs.iter().filter(|r| !r.warmup).collect();
    let n = runs.len() as u64;
    let k = runs
        .iter()
        .filter(|r| {
            r.termination == Termination::Exit
                && (r.exit_code == Some(0) || r.meters.ready_time.is_some())
                && !r.extra.contains_key("not_ready")
        })
        .count() as u64;
    let (lo, hi) = crate::stats::binomial::wilson(k, n, 0.95)?;
    Some(json!({
        "successes": k,
        "runs": n,
        "rate": k as f64 / n as f64,
        "ci_low": lo,
        "ci_high": hi,
        "confidence": 0.95,
        "method": "wilson",
    }))
}
