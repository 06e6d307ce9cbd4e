//! Facts read out of a session's record, the one way exports (`results::export`), conclusions
//! (`conclude`) and reports (`report`) all read them: which backend counted a run, the
//! optional meters' per-run values and medians, a summary's resolution. Reads the model only;
//! never prints, never measures.

use super::model::{Benchmark, MetricSummary, Run, RunIo, Session};
use crate::stats;

/// Key of the backend that counted a run (`perf` or `valgrind`) in `Run.extra`.
pub const BACKEND_KEY: &str = "counters_backend";

/// The backend of a run's counters, if it has any.
pub fn backend_of(r: &Run) -> Option<&str> {
    match r.extra.get(BACKEND_KEY).and_then(|v| v.as_str()) {
        Some(b) => Some(b),
        // Runs counted before there was a choice were counted by perf.
        None => r.extra.contains_key("counters").then_some("perf"),
    }
}

/// Half-width of a summary's median CI when it is a real 95% interval: the value's resolution.
pub fn resolution(m: &MetricSummary) -> Option<f64> {
    let r = (m.median_ci_high - m.median_ci_low) / 2.0;
    (m.median_ci_exact && r > 0.0).then_some(r)
}

/// The run's GPU energy, summed over its GPUs (joules), and whether any GPU's reading was
/// coarse (the run shorter than a few of the counter's update periods); `None` when no GPU
/// energy was measured. (`conclude::levels::gpu_joules` reads the same; a unit test of
/// `conclude` holds the two together until levels re-exports this one.)
pub fn gpu_joules(r: &Run) -> Option<(f64, bool)> {
    let gpus = r.meters.energy.as_ref()?.get("gpus")?.as_array()?;
    let joules: Vec<f64> = gpus.iter().filter_map(|g| g["joules"].as_f64()).collect();
    (!joules.is_empty()).then(|| {
        (
            joules.iter().sum(),
            gpus.iter().any(|g| g["coarse"] == true),
        )
    })
}

/// The run's recorded package energy: the sum of its `package-N` domains (`psys` without
/// them), joules, whether or not it was attributed to the run.
pub fn recorded_package_joules(r: &Run) -> Option<f64> {
    let domains = r.meters.energy.as_ref()?["domains"].as_array()?.clone();
    let sum = |pred: &dyn Fn(&str) -> bool| -> Option<f64> {
        let xs: Vec<f64> = domains
            .iter()
            .filter(|d| d["name"].as_str().is_some_and(pred))
            .filter_map(|d| d["joules"].as_f64())
            .collect();
        (!xs.is_empty()).then(|| xs.iter().sum())
    };
    sum(&|n| n.starts_with("package-")).or_else(|| sum(&|n| n == "psys"))
}

/// The per-run values a CSV gets, one column each, in this order, when any run has them.
const IO_COLUMNS: [&str; 12] = [
    "io_block_read_bytes",
    "io_block_write_bytes",
    "io_block_read_ops",
    "io_block_write_ops",
    "io_syscall_read_bytes",
    "io_syscall_write_bytes",
    "io_syscall_reads",
    "io_syscall_writes",
    "io_storage_read_bytes",
    "io_storage_write_bytes",
    "io_dirty_left_bytes",
    "io_block_source",
];

fn io_field(io: &RunIo, col: &str) -> Option<String> {
    let v = match col {
        "io_block_read_bytes" => io.block_read_bytes,
        "io_block_write_bytes" => io.block_write_bytes,
        "io_block_read_ops" => io.block_read_ops,
        "io_block_write_ops" => io.block_write_ops,
        "io_syscall_read_bytes" => io.syscall_read_bytes,
        "io_syscall_write_bytes" => io.syscall_write_bytes,
        "io_syscall_reads" => io.syscall_reads,
        "io_syscall_writes" => io.syscall_writes,
        "io_storage_read_bytes" => io.storage_read_bytes,
        "io_storage_write_bytes" => io.storage_write_bytes,
        "io_dirty_left_bytes" => io.dirty_left_bytes,
        "io_block_source" => return io.block_source.clone(),
        _ => None,
    };
    v.map(|x| x.to_string())
}

/// The meter columns (`io_*`, `cache_*`, `ready_time`, `background`, `energy_*`) for the
/// meters some run of the session has.
pub fn meter_columns(session: &Session) -> Vec<&'static str> {
    let runs = || session.benchmarks.iter().flat_map(|b| &b.runs);
    let mut cols = Vec::new();
    if runs().any(|r| r.meters.io.is_some()) {
        cols.extend(IO_COLUMNS);
    }
    if runs().any(|r| r.meters.cache.is_some()) {
        cols.extend([
            "cache_state",
            "cache_how",
            "cache_resident_bytes",
            "cache_file_bytes",
        ]);
    }
    if runs().any(|r| r.meters.ready_time.is_some()) {
        cols.push("ready_time");
    }
    if runs().any(|r| r.meters.background.is_some()) {
        cols.push("background");
    }
    if runs().any(|r| r.meters.energy.is_some()) {
        cols.extend(["energy_package_joules", "energy_attributed"]);
    }
    if runs().any(|r| gpu_joules(r).is_some()) {
        cols.extend(["energy_gpu_joules", "energy_gpu_coarse"]);
    }
    cols
}

/// One run's value in a meter column ("" when the run has none).
pub fn meter_value(r: &Run, col: &str) -> String {
    let m = &r.meters;
    let v = match col {
        c if c.starts_with("io_") => m.io.as_ref().and_then(|io| io_field(io, c)),
        "cache_state" => m.cache.as_ref().map(|c| c.state.clone()),
        "cache_how" => m.cache.as_ref().map(|c| c.how.clone()),
        "cache_resident_bytes" => m.cache.as_ref().map(|c| c.resident_bytes.to_string()),
        "cache_file_bytes" => m.cache.as_ref().map(|c| c.file_bytes.to_string()),
        "ready_time" => m.ready_time.map(|t| t.to_string()),
        "background" => m.background.map(|b| b.to_string()),
        "energy_package_joules" => recorded_package_joules(r).map(|j| j.to_string()),
        "energy_gpu_joules" => gpu_joules(r).map(|(j, _)| j.to_string()),
        "energy_gpu_coarse" => gpu_joules(r).map(|(_, c)| c.to_string()),
        "energy_attributed" => m
            .energy
            .as_ref()
            .and_then(|e| e["attributed"].as_bool())
            .map(|b| b.to_string()),
        _ => None,
    };
    v.unwrap_or_default()
}

/// The median over the benchmark's counted runs of a per-run value (runs without one left out).
pub fn median_of(b: &Benchmark, f: impl Fn(&Run) -> Option<f64>) -> Option<f64> {
    let mut xs: Vec<f64> = b.runs.iter().filter(|r| r.counted).filter_map(f).collect();
    xs.sort_by(f64::total_cmp);
    stats::median(&xs)
}

/// Medians over the counted runs of the I/O meter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IoMedians {
    pub block_read: Option<f64>,
    pub block_write: Option<f64>,
    pub block_read_ops: Option<f64>,
    pub block_write_ops: Option<f64>,
    pub syscall_read: Option<f64>,
    pub syscall_write: Option<f64>,
    pub dirty_left_max: Option<f64>,
}

pub fn io_medians(b: &Benchmark) -> Option<IoMedians> {
    if !b.runs.iter().any(|r| r.counted && r.meters.io.is_some()) {
        return None;
    }
    let m = |f: fn(&RunIo) -> Option<u64>| {
        median_of(b, |r| r.meters.io.as_deref().and_then(f).map(|v| v as f64))
    };
    let dirty_left_max = b
        .runs
        .iter()
        .filter(|r| r.counted)
        .filter_map(|r| r.meters.io.as_ref()?.dirty_left_bytes)
        .max()
        .map(|v| v as f64);
    Some(IoMedians {
        block_read: m(|io| io.block_read_bytes),
        block_write: m(|io| io.block_write_bytes),
        block_read_ops: m(|io| io.block_read_ops),
        block_write_ops: m(|io| io.block_write_ops),
        syscall_read: m(|io| io.syscall_read_bytes),
        syscall_write: m(|io| io.syscall_write_bytes),
        dirty_left_max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_io_column_reads_a_field() {
        assert_eq!(IO_COLUMNS.len(), 12);
        let io = RunIo {
            block_source: Some("cgroup".into()),
            ..Default::default()
        };
        assert_eq!(io_field(&io, "io_block_source").as_deref(), Some("cgroup"));
        assert_eq!(io_field(&io, "io_block_read_bytes"), None);
    }
}
