//! `tare history add --ratios`: a head to head's ratios as series of their own (issue 46).
//! Each comparison of a `tare kernels --baseline` session whose candidate's runs are processes
//! with their ratio becomes one more benchmark, `KERNEL vs BASELINE` (the candidate's command
//! and parameters), whose runs are the processes, each carrying its ratio under
//! [`crate::store::ingest::RATIO_KEY`]; the store keeps those as metric `ratio` (unit ×, lower
//! is better), so their trend, change points and alerts work as any series'. The benchmark has
//! no time summaries: its runs hold no times.
//!
//! Only where asked: without `--ratios` the kernels' times per loop are stored as any session's.

use crate::results::model::{Benchmark, Session};
use std::collections::BTreeMap;

/// `s` with one ratio benchmark a head to head comparison (unchanged where it has none).
pub(super) fn with_series(mut s: Session) -> Session {
    let mut added = Vec::new();
    for c in &s.comparisons {
        let Some(cand) = s.benchmarks.get(c.candidate) else {
            continue;
        };
        let runs: Vec<_> = cand
            .runs
            .iter()
            .filter_map(|r| {
                let ratio = crate::results::export::process_ratio(r)?;
                let mut run = r.clone();
                (run.wall_time, run.cpu_time, run.user_time, run.system_time) =
                    (0.0, 0.0, 0.0, 0.0);
                run.extra = BTreeMap::from([(
                    crate::store::ingest::RATIO_KEY.to_string(),
                    serde_json::json!(ratio),
                )]);
                Some(run)
            })
            .collect();
        if runs.is_empty() {
            continue;
        }
        added.push(Benchmark {
            name: format!("{} vs {}", c.candidate_name, c.reference_name),
            command: cand.command.clone(),
            argv: cand.argv.clone(),
            parameters: cand.parameters.clone(),
            summary: Default::default(),
            stop_reason: cand.stop_reason.clone(),
            runs,
            diagnostics: Vec::new(),
            extra: BTreeMap::new(),
        });
    }
    s.benchmarks.extend(added);
    s
}
