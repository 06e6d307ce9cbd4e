//! pyperf's JSON (format version 1.0: a suite or one benchmark): `metadata` common to all and
//! `benchmarks[]`, each with its own `metadata` and `runs[]` (one per worker process) with
//! theirs; a run's metadata overrides its benchmark's, which overrides the common. A value is
//! the time of one inner iteration, in the benchmark's `unit`.

use super::{Descriptor, Drive, Import, Input};
use serde_json::{Map, Value};

pub const HARNESS: Descriptor = Descriptor {
    name: "pyperf",
    aliases: &[],
    tool: "pyperf",
    import: Some(Import {
        reads: "-o",
        detect,
    }),
    drive: Some(Drive {
        target: "a pyperf script",
        args: "the script",
        client: "tare-native-pyperf",
        lang: "python",
        python: true,
        bench: false,
    }),
};

/// A document with a `version` whose `benchmarks[]` all have `runs`.
pub fn detect(input: &Input) -> bool {
    input.json.is_some_and(|v| {
        v.get("version").is_some()
            && v.get("benchmarks")
                .and_then(|b| b.as_array())
                .is_some_and(|b| b.iter().all(|e| e.get("runs").is_some()))
    })
}

/// The `metadata` object of a document, benchmark or run (empty where it has none).
pub fn metadata(v: &Value) -> Map<String, Value> {
    v.get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The outer loops each value timed, as `meta` (merged metadata) declares them; `None` where
/// it does not (the importer then takes 1, the worker refuses the run).
pub fn loops(meta: &Map<String, Value>) -> Option<u64> {
    meta.get("loops").and_then(Value::as_u64)
}

/// The inner loops of each outer loop (`timeit`'s `duplicate`, `inner_loops=`): 1 where none.
pub fn inner_loops(meta: &Map<String, Value>) -> u64 {
    meta.get("inner_loops")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1)
}

/// The unit of the values that `meta` (merged metadata) declares: `second` where none.
pub fn unit(meta: &Map<String, Value>) -> &str {
    meta.get("unit").and_then(Value::as_str).unwrap_or("second")
}
