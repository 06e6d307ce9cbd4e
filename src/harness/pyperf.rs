//! pyperf's JSON (format version 1.0: a suite or one benchmark): `metadata` common to all and
//! `benchmarks[]`, each with its own `metadata` and `runs[]` (one per worker process) with
//! theirs; a run's metadata overrides its benchmark's, which overrides the common. A value is
//! the time of one inner iteration, in the benchmark's `unit`.

use serde_json::{Map, Value};

/// The `metadata` object of a document, benchmark or run (empty where it has none).
pub fn metadata(v: &Value) -> Map<String, Value> {
    v.get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The unit of the values that `meta` (merged metadata) declares: `second` where none.
pub fn unit(meta: &Map<String, Value>) -> &str {
    meta.get("unit").and_then(Value::as_str).unwrap_or("second")
}
