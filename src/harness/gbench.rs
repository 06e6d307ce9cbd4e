//! Google Benchmark's JSON (`--benchmark_out_format=json`): the fields of an entry of
//! `benchmarks[]` that are the library's own, so that every other numeric field is a user
//! counter.

/// Fields of every entry (`iteration` and `aggregate` runs) that are not user counters.
pub const RUN_FIELDS: &[&str] = &[
    "name",
    "family_index",
    "per_family_instance_index",
    "run_name",
    "run_type",
    "repetitions",
    "repetition_index",
    "threads",
    "iterations",
    "real_time",
    "cpu_time",
    "time_unit",
    "aggregate_name",
    "aggregate_unit",
    "error_occurred",
    "error_message",
    "label",
];

/// The rates the library computes from `SetBytesProcessed`/`SetItemsProcessed` (per second of
/// the benchmark's basis: CPU time unless it is timed in real or manual time).
pub const RATES: &[&str] = &["bytes_per_second", "items_per_second"];

/// The fields of a complexity fit's entries (`BM_x_BigO`, `BM_x_RMS`).
pub const COMPLEXITY_FIELDS: &[&str] = &["big_o", "rms", "complexity_n"];

/// Whether `key` is one of `lists`' fields.
pub fn is_field(key: &str, lists: &[&[&str]]) -> bool {
    lists.iter().any(|l| l.contains(&key))
}
