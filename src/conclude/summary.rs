//! Summaries of a benchmark's counted runs, per metric, from the pure `stats` functions.

use crate::results::{Benchmark, MetricSummary, Run, Summary};
use crate::stats::{describe, Describe};

fn metric(d: Option<Describe>) -> Option<MetricSummary> {
    d.map(MetricSummary::from)
}

/// The runs that count as samples.
pub fn counted(runs: &[Run]) -> impl Iterator<Item = &Run> {
    runs.iter().filter(|r| r.counted)
}

/// Summary statistics over the counted runs of `bench`.
pub fn summarize(bench: &Benchmark) -> Summary {
    let col =
        |f: fn(&Run) -> Option<f64>| -> Vec<f64> { counted(&bench.runs).filter_map(f).collect() };
    Summary {
        wall_time: metric(describe(&col(|r| Some(r.wall_time)))),
        cpu_time: metric(describe(&col(|r| Some(r.cpu_time)))),
        user_time: metric(describe(&col(|r| Some(r.user_time)))),
        system_time: metric(describe(&col(|r| Some(r.system_time)))),
        peak_memory: metric(describe(&col(|r| r.peak_memory.map(|b| b as f64)))),
    }
}
