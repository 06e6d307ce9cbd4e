//! Reading results back (`tare compare`, `tare report`): one function that refuses anything
//! that is not a results file this tare understands, in one line saying what the file is and
//! what was expected — not JSON, a journal, suite results, a schema version it does not know,
//! times that cannot have been measured (negative, not finite, a counted run of 0 s).

use super::model::{Session, SCHEMA_VERSION};
use crate::error::usage;
use std::path::Path;

const EXPECTED: &str = "give a results file written by `tare run --export-json FILE`";

/// What a file that is not a results file looks like, in a few words.
pub fn what_is(bytes: &[u8]) -> String {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return "binary data, not JSON".into();
    };
    if text.trim().is_empty() {
        return "empty".into();
    }
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let first_json = serde_json::from_str::<serde_json::Value>(first).ok();
    if let Some(v) = &first_json {
        if v.get("type").and_then(|t| t.as_str()) == Some("session") {
            return "a tare journal (rebuild results from it with `tare recover` first)".into();
        }
        if v.get("key").is_some() && v.get("tool").is_some() && v.get("category").is_some() {
            return "suite results (results.jsonl of `tare suite run`; read them with `tare table`)"
                .into();
        }
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) if v.get("benchmarks").is_some() && v.get("schema_version").is_some() => {
            "tare results that do not fit this tare's schema".into()
        }
        Ok(v) if v.get("setups").is_some() || v.get("runs_per_setup").is_some() => {
            "a plan from `tare plan --output`".into()
        }
        _ if super::import::recognise(bytes).is_some() => format!(
            "{} results, not tare's: convert them first with `tare import FILE -o results.json`",
            super::import::recognise(bytes).map_or("", |f| f.name())
        ),
        Ok(_) => "JSON, but not tare results".into(),
        Err(_) if first_json.is_some() => "JSON lines, not tare results".into(),
        Err(_) => "not JSON".into(),
    }
}

/// Checks what a results file claims: a schema version this tare reads, and times that can
/// have been measured. Returns one line on failure.
pub fn check_session(s: &Session) -> Result<(), String> {
    if s.schema_version == 0 || s.schema_version > SCHEMA_VERSION {
        return Err(format!(
            "results schema version {} (this tare reads 1 to {SCHEMA_VERSION}){}",
            s.schema_version,
            if s.schema_version > SCHEMA_VERSION {
                "; it was written by a newer tare: upgrade tare"
            } else {
                ""
            }
        ));
    }
    for b in &s.benchmarks {
        for r in &b.runs {
            if let Some(e) = impossible(r) {
                return Err(format!("run {} of '{}' has {e}", r.index, b.name));
            }
        }
    }
    Ok(())
}

/// What no measurement gives in a run (a negative or non-finite time, a counted run of 0 s),
/// in words, or `None` for a run that can have been measured.
pub fn impossible(r: &super::model::Run) -> Option<String> {
    for (what, v) in [
        ("wall_time", r.wall_time),
        ("cpu_time", r.cpu_time),
        ("user_time", r.user_time),
        ("system_time", r.system_time),
        ("start_offset", r.start_offset),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Some(format!(
                "{what} {v}, which no measurement gives (the file was changed or damaged)"
            ));
        }
    }
    if r.counted && r.wall_time == 0.0 {
        return Some(
            "a wall time of 0 s while counted, which no measurement gives (the file was changed or damaged)"
                .into(),
        );
    }
    None
}

/// Reads one results file; every failure is one line naming the file, what it is and what
/// was expected (exit 2).
pub fn load_session(path: &Path) -> anyhow::Result<Session> {
    // Garbage is refused from its first block, in the words used for a whole file.
    let head_check = |head: &[u8]| match super::input::json_document_head(head)
        .or_else(|| super::input::binary_head(head))
    {
        Some(why) => Err(usage(format!(
            "{} is not a tare results file: it is {why}; {EXPECTED}",
            path.display()
        ))),
        None => Ok(()),
    };
    let bytes = super::input::read_checked(path, "results file", head_check).map_err(|e| {
        if e.to_string().contains(EXPECTED) {
            e
        } else {
            usage(format!("{e:#} ({EXPECTED})"))
        }
    })?;
    // A journal's header line parses as a session too: tell them apart by its "type".
    let session: Session = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .filter(|v| v.get("type").is_none())
        .and_then(|v| serde_json::from_value(v).ok())
        .ok_or_else(|| {
            usage(format!(
                "{} is not a tare results file: it is {}; {EXPECTED}",
                path.display(),
                what_is(&bytes)
            ))
        })?;
    check_session(&session).map_err(|e| usage(format!("{}: {e}; {EXPECTED}", path.display())))?;
    Ok(session)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_tare_import_for_another_harness_file() {
        let hyperfine = br#"{"results":[{"command":"true","mean":0.001,"times":[0.001,0.001]}]}"#;
        let w = what_is(hyperfine);
        assert!(w.starts_with("hyperfine results, not tare's"), "{w}");
        assert!(w.contains("`tare import FILE -o results.json`"), "{w}");
        let go = b"goos: linux\ngoarch: amd64\nBenchmarkX-2   1000   1234 ns/op\nPASS\n";
        assert!(what_is(go).starts_with("go results"), "{}", what_is(go));
        assert_eq!(what_is(b"{\"a\":1}"), "JSON, but not tare results");
    }

    #[test]
    fn says_what_a_file_is() {
        assert_eq!(what_is(b"\xff\xfe"), "binary data, not JSON");
        assert_eq!(what_is(b"hello"), "not JSON");
        assert_eq!(what_is(b"  \n"), "empty");
        assert!(what_is(b"{\"type\":\"session\"}\n{\"type\":\"run\"}").contains("journal"));
        assert!(
            what_is(b"{\"key\":\"k\",\"tool\":\"t\",\"category\":\"correct\"}\n")
                .contains("suite results")
        );
        assert_eq!(what_is(b"[1,2]"), "JSON, but not tare results");
    }
}
