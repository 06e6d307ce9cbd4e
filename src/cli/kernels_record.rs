//! The session record both `tare kernels` engines start from (programs' kernels in
//! `cli::kernels`, `--baseline` pairs in `cli::kernels_pairs`).
//!
//! Not for: what either engine adds to it (their files).

use crate::machine;
use crate::machine::sysfs::SysRoot;
use crate::results::{LimitsRecord, MeasurementMethod, Session, SCHEMA_VERSION};
use std::collections::BTreeMap;

/// The session record of a `tare kernels` session (either engine: programs' kernels or
/// `--baseline` pairs), started now, with no limits (kernels have none of a run's) and not
/// yet complete.
pub(super) fn session_record(
    root: &SysRoot,
    method: MeasurementMethod,
    cores: Option<Vec<usize>>,
    seed: u64,
    benchmarks: Vec<crate::results::Benchmark>,
) -> Session {
    Session {
        schema_version: SCHEMA_VERSION,
        tare_version: env!("CARGO_PKG_VERSION").to_string(),
        invocation: std::env::args().collect(),
        started_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        machine: machine::info::collect_info(root),
        method,
        cores,
        limits: LimitsRecord {
            cpu_time: None,
            wall_time: None,
            memory: None,
            pids: None,
        },
        environment: BTreeMap::new(),
        seed,
        benchmarks,
        comparisons: Vec::new(),
        complete: false,
        extra: BTreeMap::new(),
    }
}
