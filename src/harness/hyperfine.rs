//! hyperfine's JSON (`--export-json FILE`): `results[]`, one per command, each with its
//! `command` and every run's `times` (seconds). Imported only: hyperfine times whole commands,
//! which `tare run` measures itself.

use super::{Descriptor, Import, Input};

pub const HARNESS: Descriptor = Descriptor {
    name: "hyperfine",
    aliases: &[],
    tool: "hyperfine",
    import: Some(Import {
        reads: "--export-json",
        detect,
    }),
    drive: None,
};

/// A document whose first `results[]` entry has a `command` and `times`.
pub fn detect(input: &Input) -> bool {
    input
        .json
        .and_then(|v| v.get("results"))
        .and_then(|r| r.as_array())
        .and_then(|r| r.first())
        .is_some_and(|r| r.get("command").is_some() && r.get("times").is_some())
}
