//! The outside harnesses, one home each (issue 41): a [`Descriptor`] per harness — its name
//! and spellings, how its results file is recognised, whether `tare import` reads it and how
//! `tare native-worker` drives it, its section of the docs — and its format (field lists, line
//! grammars, file layouts), read here once. [`ALL`] is the one list: `results::import` builds
//! its importer table and `--format` values from it, `native` its driver table and the
//! native-worker's help. Each caller keeps what it makes of a format (the importer a
//! `Session`, the native worker protocol samples) and its own errors.
//!
//! Layer: below `results` (which `results::import` is part of), so nothing here uses another
//! module of the crate; paths, bytes and `serde_json` values in, plain data out.

pub mod criterion;
pub mod gbench;
pub mod gotest;
pub mod hyperfine;
pub mod jmh;
pub mod pyperf;
pub mod pytest_benchmark;

use serde_json::Value;
use std::path::Path;

/// One outside harness: what tare knows of it, in one place.
#[derive(Debug)]
pub struct Descriptor {
    /// Its name on the command line (`tare import --format NAME`, `tare native-worker NAME`)
    /// and in records (`extra.import.format`).
    pub name: &'static str,
    /// Other spellings `--format` takes.
    pub aliases: &'static [&'static str],
    /// What `tare import` reads of it, None where it is not imported.
    pub import: Option<Import>,
    /// How `tare native-worker` drives it, None where it is not driven.
    pub drive: Option<Drive>,
    /// The tool's name as people know it. docs/import.md's table has its row (with what
    /// `Import::reads` names), docs/native-workers.md its `tare native-worker NAME` section.
    pub tool: &'static str,
}

/// What `tare import` reads of a harness.
#[derive(Debug)]
pub struct Import {
    /// The file (or directory) it reads, in words: how the harness writes it.
    pub reads: &'static str,
    /// Whether `input` is in this format, by content.
    pub detect: fn(&Input) -> bool,
}

/// How `tare native-worker` drives a harness.
#[derive(Debug)]
pub struct Drive {
    /// What its TARGET is, in words.
    pub target: &'static str,
    /// What its ARGS go to, in words.
    pub args: &'static str,
    /// The worker's `client` and `lang` in its protocol hello.
    pub client: &'static str,
    pub lang: &'static str,
    /// Whether it takes `--python` (it runs a Python interpreter).
    pub python: bool,
    /// Whether it takes `--bench` (a bench target of a Cargo package).
    pub bench: bool,
}

/// Every harness, in the order detection tries them: a directory's format (Criterion) first,
/// the JSON formats by their distinctive keys, text (`go test`) last.
pub const ALL: &[&Descriptor] = &[
    &criterion::HARNESS,
    &hyperfine::HARNESS,
    &gbench::HARNESS,
    &jmh::HARNESS,
    &pytest_benchmark::HARNESS,
    &pyperf::HARNESS,
    &gotest::HARNESS,
];

/// The harness named `name` (its name or an alias, in any case).
pub fn find(name: &str) -> Option<&'static Descriptor> {
    ALL.iter().copied().find(|h| {
        h.name.eq_ignore_ascii_case(name) || h.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    })
}

/// The harnesses `tare import` reads, in detection order.
pub fn imported() -> impl Iterator<Item = &'static Descriptor> {
    ALL.iter().copied().filter(|h| h.import.is_some())
}

/// The harnesses `tare native-worker` drives.
pub fn driven() -> impl Iterator<Item = &'static Descriptor> {
    ALL.iter().copied().filter(|h| h.drive.is_some())
}

/// What a format is recognised from: the path and, for a file, its bytes (and its JSON, if it
/// is JSON).
pub struct Input<'a> {
    pub path: &'a Path,
    /// None for a directory.
    pub bytes: Option<&'a [u8]>,
    /// The file parsed as JSON, when it is JSON.
    pub json: Option<&'a Value>,
}

impl Input<'_> {
    /// The file's bytes as text, when they are UTF-8.
    pub fn text(&self) -> Option<&str> {
        self.bytes.and_then(|b| std::str::from_utf8(b).ok())
    }
}

/// The names of the driven harnesses whose drive says `takes`: `a`, `a and b`, `a, b and c`.
pub fn driven_where(takes: fn(&Drive) -> bool) -> String {
    let names: Vec<&str> = driven()
        .filter(|h| h.drive.as_ref().is_some_and(takes))
        .map(|h| h.name)
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// `NAME (WHAT), NAME (WHAT) or NAME (WHAT)`: each of `harnesses` with its words.
pub fn list<'a>(
    harnesses: impl Iterator<Item = &'a Descriptor>,
    words: impl Fn(&Descriptor) -> &str,
) -> String {
    let items: Vec<String> = harnesses
        .map(|h| format!("{} ({})", h.name, words(h)))
        .collect();
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => items.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found_by_every_spelling() {
        let mut seen = std::collections::HashSet::new();
        for h in ALL {
            for s in std::iter::once(&h.name).chain(h.aliases) {
                assert!(seen.insert(s.to_ascii_lowercase()), "{s} twice");
                assert_eq!(find(s).map(|f| f.name), Some(h.name));
                assert_eq!(find(&s.to_uppercase()).map(|f| f.name), Some(h.name));
            }
            assert!(
                h.import.is_some() || h.drive.is_some(),
                "{} is neither",
                h.name
            );
        }
        assert!(find("csv").is_none());
        let python = driven_where(|d| d.python);
        assert!(
            python.contains("pyperf") && python.contains(" and "),
            "{python}"
        );
        assert!(!driven_where(|d| d.bench).contains("pyperf"));
    }

    #[test]
    fn every_harness_has_its_docs() {
        let import = include_str!("../../docs/import.md");
        let native = include_str!("../../docs/native-workers.md");
        let import = import.split_whitespace().collect::<Vec<_>>().join(" ");
        for h in imported() {
            let item = format!("{} ({})", h.name, h.import.as_ref().map_or("", |i| i.reads));
            assert!(import.contains(&item), "docs/import.md lacks {item}");
        }
        for h in driven() {
            let usage = format!("`tare native-worker {} ", h.name);
            assert!(native.contains(&usage), "{usage}");
        }
    }

    #[test]
    fn lists_read_as_words() {
        let two = list(ALL.iter().copied().take(2), |h| h.tool);
        assert_eq!(
            two,
            format!(
                "{} ({}) or {} ({})",
                ALL[0].name, ALL[0].tool, ALL[1].name, ALL[1].tool
            )
        );
        assert_eq!(list(ALL.iter().copied().take(1), |h| h.name), {
            format!("{0} ({0})", ALL[0].name)
        });
    }
}
