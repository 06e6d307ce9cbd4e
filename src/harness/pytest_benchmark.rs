//! pytest-benchmark's JSON (`--benchmark-json FILE`, or `--benchmark-save` with
//! `--benchmark-save-data`): `machine_info`, `benchmarks[]` each with its `stats`, whose
//! `iterations` is the iterations of a round and `data` each round's time per iteration
//! (seconds). The native worker's plugin replies a benchmark's `stats` with the same two
//! fields, read by their names here.

use super::{Descriptor, Drive, Import, Input};

pub const HARNESS: Descriptor = Descriptor {
    name: "pytest-benchmark",
    aliases: &[],
    tool: "pytest-benchmark",
    import: Some(Import {
        reads: "--benchmark-json",
        detect,
    }),
    drive: Some(Drive {
        target: "a test file or directory",
        args: "pytest",
        client: "tare-native-pytest-benchmark",
        lang: "python",
        python: true,
        bench: false,
    }),
};

/// A benchmark's `stats`: the iterations of each round.
pub const ITERATIONS: &str = "iterations";
/// A benchmark's `stats`: each round's seconds per iteration.
pub const DATA: &str = "data";

/// A document with `machine_info` whose `benchmarks[]` all have `stats`.
pub fn detect(input: &Input) -> bool {
    input.json.is_some_and(|v| {
        v.get("machine_info").is_some()
            && v.get("benchmarks")
                .and_then(|b| b.as_array())
                .is_some_and(|b| b.iter().all(|e| e.get("stats").is_some()))
    })
}
