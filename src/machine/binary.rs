//! Is the program being measured a debug build? Detected only where the binary says so
//! itself — never guessed from its name: GCC records its command line in each compilation
//! unit's DWARF producer string (`-grecord-gcc-switches`, on by default), so a C/C++/Fortran
//! binary with debug info tells whether it was compiled with `-O0` (or no `-O` at all, GCC's
//! default) or `-Og`; a Rust binary under Cargo's `target/debug/` is an unoptimized build.
//! Interpreted programs (a `#!` script, Python without `-O`) are not "debug builds" and are
//! not flagged. Binaries without debug info say nothing, and nothing is said about them.

use object::{Object, ObjectSection};
use std::path::Path;

/// Largest amount of one section that is scanned for producer strings.
const SCAN_LIMIT: u64 = 64 << 20;

/// The sections where a DWARF producer string can be: `.debug_str` (DW_FORM_strp, the usual
/// form) and `.debug_info` (DW_FORM_string, inline). Only these are read, on demand through a
/// read cache, so a large binary costs its section headers and its string table, not its size.
const PRODUCER_SECTIONS: [&str; 2] = [".debug_str", ".debug_info"];

/// Why `path` looks like an unoptimized build, or `None` when it does not or cannot tell.
pub fn unoptimized_build(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let cache = object::ReadCache::new(file);
    let elf = object::File::parse(&cache).ok()?;
    if elf.format() != object::BinaryFormat::Elf {
        return None;
    }
    if path
        .components()
        .collect::<Vec<_>>()
        .windows(2)
        .any(|w| w[0].as_os_str() == "target" && w[1].as_os_str() == "debug")
    {
        return Some("a Cargo debug build (target/debug): build with --release".into());
    }
    let mut producers: Vec<String> = Vec::new();
    for name in PRODUCER_SECTIONS {
        let Some(section) = elf.section_by_name(name) else {
            continue;
        };
        // Compressed sections (SHF_COMPRESSED) are skipped: their bytes say nothing as they are.
        let Ok(object::CompressedFileRange { format, .. }) = section.compressed_file_range() else {
            continue;
        };
        if format != object::CompressionFormat::None || section.size() > SCAN_LIMIT {
            continue;
        }
        let Ok(bytes) = section.data() else { continue };
        for p in producer_strings(bytes) {
            if !producers.contains(&p) {
                producers.push(p);
            }
        }
    }
    let unoptimized: Vec<&String> = producers
        .iter()
        .filter(|p| optimization_level(p).is_none_or_debug())
        .collect();
    if unoptimized.is_empty() {
        return None;
    }
    Some(format!(
        "{} of {} compilation units were compiled without optimization (DWARF producer \"{}\"): measure an optimized build",
        unoptimized.len(),
        producers.len(),
        unoptimized[0]
    ))
}

/// NUL-terminated strings that are GCC DWARF producers ("GNU C17 12.2.0 -mtune=generic … -O2").
pub fn producer_strings(bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for start in memchr_iter(bytes, b"GNU ") {
        if start > 0 && bytes[start - 1] != 0 {
            continue;
        }
        let end = bytes[start..]
            .iter()
            .position(|&b| b == 0)
            .map_or(bytes.len(), |e| start + e);
        let Ok(s) = std::str::from_utf8(&bytes[start..end]) else {
            continue;
        };
        let lang = s.split_whitespace().nth(1).unwrap_or("");
        let is_producer =
            (lang.starts_with('C') || lang.starts_with("Fortran") || lang.starts_with("Go"))
                && s.split_whitespace()
                    .nth(2)
                    .is_some_and(|v| v.chars().next().is_some_and(|c| c.is_ascii_digit()));
        if is_producer && !out.iter().any(|p| p == s) {
            out.push(s.to_string());
        }
    }
    out
}

/// The optimization level a producer string records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptLevel {
    /// No `-O` flag (GCC's default is -O0) or `-O0`.
    None,
    /// `-Og`: optimized for debugging.
    Debug,
    /// `-O1` and above, `-Os`, `-Oz`, `-Ofast`, `-O`.
    Optimized,
}

impl OptLevel {
    fn is_none_or_debug(self) -> bool {
        self != OptLevel::Optimized
    }
}

/// The last `-O…` flag of a producer string wins, as on the compiler's command line.
pub fn optimization_level(producer: &str) -> OptLevel {
    let mut level = OptLevel::None;
    for w in producer.split_whitespace() {
        if let Some(rest) = w.strip_prefix("-O") {
            level = match rest {
                "0" => OptLevel::None,
                "g" => OptLevel::Debug,
                _ => OptLevel::Optimized,
            };
        }
    }
    level
}

fn memchr_iter<'a>(hay: &'a [u8], needle: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    hay.windows(needle.len())
        .enumerate()
        .filter(move |(_, w)| *w == needle)
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels() {
        assert_eq!(
            optimization_level("GNU C17 12.2.0 -mtune=generic -march=x86-64 -g"),
            OptLevel::None
        );
        assert_eq!(optimization_level("GNU C17 12.2.0 -g -O0"), OptLevel::None);
        assert_eq!(optimization_level("GNU C17 12.2.0 -g -Og"), OptLevel::Debug);
        assert_eq!(
            optimization_level("GNU C17 12.2.0 -O2 -g"),
            OptLevel::Optimized
        );
        assert_eq!(
            optimization_level("GNU C++17 12.2.0 -O0 -O3"),
            OptLevel::Optimized
        );
    }

    #[test]
    fn producers_are_found_between_nuls() {
        let bytes = b"\x00junk\x00GNU C17 12.2.0 -O2\x00xGNU C17 bogus\x00GNU Make\x00";
        assert_eq!(
            producer_strings(bytes),
            vec!["GNU C17 12.2.0 -O2".to_string()]
        );
    }
}
