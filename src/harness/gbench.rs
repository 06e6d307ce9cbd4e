//! Google Benchmark's JSON (`--benchmark_out_format=json`): the fields of an entry of
//! `benchmarks[]` that are the library's own, so that every other numeric field is a user
//! counter.

use super::{Descriptor, Drive, Import, Input};
use serde_json::Value;

pub const HARNESS: Descriptor = Descriptor {
    name: "gbench",
    aliases: &["google-benchmark"],
    tool: "Google Benchmark",
    import: Some(Import {
        reads: "--benchmark_out_format=json",
        detect,
    }),
    drive: Some(Drive {
        target: "a Google Benchmark binary",
        args: "the binary",
        client: "tare-native-gbench",
        lang: "cpp",
        python: false,
        bench: false,
    }),
};

/// A document with a `context` object whose `benchmarks[]` entries all have `run_name` or
/// `iterations`.
pub fn detect(input: &Input) -> bool {
    input.json.is_some_and(|v| {
        v.get("context").is_some_and(|c| c.is_object())
            && v.get("benchmarks")
                .and_then(|b| b.as_array())
                .is_some_and(|b| {
                    b.iter()
                        .all(|e| e.get("run_name").is_some() || e.get("iterations").is_some())
                })
    })
}

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

/// An entry's `time_unit`: `ns` where it has none.
pub fn time_unit(entry: &Value) -> &str {
    entry
        .get("time_unit")
        .and_then(Value::as_str)
        .unwrap_or("ns")
}

/// An entry's `run_type`: `iteration` (a repetition's run) or `aggregate`; `iteration` where
/// it has none (versions before 1.5).
pub fn run_type(entry: &Value) -> &str {
    entry
        .get("run_type")
        .and_then(Value::as_str)
        .unwrap_or("iteration")
}

/// Where the entry says `error_occurred`, its `error_message` (null where it has none).
pub fn error(entry: &Value) -> Option<&Value> {
    static NONE: Value = Value::Null;
    (entry.get("error_occurred").and_then(Value::as_bool) == Some(true))
        .then(|| entry.get("error_message").unwrap_or(&NONE))
}

/// Whether `key` is one of `lists`' fields.
pub fn is_field(key: &str, lists: &[&[&str]]) -> bool {
    lists.iter().any(|l| l.contains(&key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_fields_and_their_defaults() {
        let e: Value = serde_json::from_str(
            r#"{"run_type":"aggregate","time_unit":"us","error_occurred":true,"error_message":"x"}"#,
        )
        .unwrap();
        assert_eq!((run_type(&e), time_unit(&e)), ("aggregate", "us"));
        assert_eq!(error(&e), Some(&Value::from("x")));
        let bare: Value = serde_json::from_str(r#"{"error_occurred":false}"#).unwrap();
        assert_eq!((run_type(&bare), time_unit(&bare)), ("iteration", "ns"));
        assert_eq!(error(&bare), None);
        let silent: Value = serde_json::from_str(r#"{"error_occurred":true}"#).unwrap();
        assert_eq!(error(&silent), Some(&Value::Null));
    }
}
