//! JMH's JSON (`-rf json`): an array, one entry per benchmark × mode × parameters, with
//! `benchmark`, the settings and `primaryMetric.rawData[fork][iteration]`. The native worker
//! does not read this file: its driver (`native/TareJmh.java`) runs JMH's `Runner` in the
//! worker's JVM and replies each iteration's score from its `RunResult` on its own channel (docs/native-workers.md
//! says why).

use super::{Descriptor, Drive, Import, Input};

pub const HARNESS: Descriptor = Descriptor {
    name: "jmh",
    aliases: &[],
    tool: "JMH",
    import: Some(Import {
        reads: "-rf json",
        detect,
    }),
    drive: Some(Drive {
        target: "a JMH benchmarks jar",
        args: "options of the JVM (`-Xmx1g`)",
        client: "tare-native-jmh",
        lang: "java",
        python: false,
        bench: false,
    }),
};

/// An array whose first entry has `primaryMetric` and `benchmark`.
pub fn detect(input: &Input) -> bool {
    input
        .json
        .and_then(|v| v.as_array())
        .and_then(|a| a.first())
        .is_some_and(|e| e.get("primaryMetric").is_some() && e.get("benchmark").is_some())
}
