//! `tare import` on bad input: missing, empty, compressed, truncated, damaged or
//! wrong-format files give one line naming the file and what is wrong — never a panic — and
//! whatever imports is a session tare's readers accept. Truncations at every position of
//! small fixtures, then property tests that damage the fixtures' bytes and JSON values.

mod common;

use proptest::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use tare::results::import::{load, Format};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/import")
        .join(rel)
}

const FILES: &[(&str, &str)] = &[
    ("hyperfine/two-commands.json", "hyperfine"),
    ("gbench/repetitions.json", "gbench"),
    ("jmh/avgt-thrpt.json", "jmh"),
    ("jmh/sample.json", "jmh"),
    ("go/bench.txt", "go"),
    ("pytest-benchmark/bench.json", "pytest-benchmark"),
    ("pyperf/suite.json", "pyperf"),
    (
        "criterion/criterion/vec_sum/64/new/sample.json",
        "criterion",
    ),
];

/// Loads `bytes` written to a scratch file; on error checks the message is one line naming
/// the file; on success checks the session is one tare reads.
fn check(dir: &Path, name: &str, bytes: &[u8], format: Option<&str>) -> Result<(), String> {
    let format = format.map(|f| f.parse::<Format>().unwrap());
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    match load(&path, format) {
        Ok(s) => {
            tare::results::read::check_session(&s)
                .map_err(|e| format!("accepted but unreadable: {e}"))?;
            let json = serde_json::to_string(&s).unwrap();
            serde_json::from_str::<tare::results::Session>(&json).unwrap();
            Ok(())
        }
        Err(e) => {
            let msg = format!("{e:#}");
            assert!(!msg.contains('\n'), "more than one line: {msg}");
            assert!(
                msg.contains(&path.display().to_string()),
                "does not name the file: {msg}"
            );
            assert!(msg.starts_with("cannot import"), "{msg}");
            Err(msg)
        }
    }
}

#[test]
fn missing_empty_compressed_and_unknown_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.json");
    let e = format!("{:#}", load(&missing, None).unwrap_err());
    assert!(e.contains("nope.json") && e.contains("No such file"), "{e}");

    let e = check(dir.path(), "empty.json", b"", None).unwrap_err();
    assert!(
        e.contains("an empty file that no importer recognises") && e.contains("--format"),
        "{e}"
    );
    let e = check(dir.path(), "x.json.gz", &[0x1f, 0x8b, 8, 0, 0, 0], None).unwrap_err();
    assert!(e.contains("gunzip"), "{e}");
    let e = check(dir.path(), "other.json", br#"{"a": 1}"#, None).unwrap_err();
    assert!(e.contains("JSON that no importer recognises"), "{e}");
    let e = check(dir.path(), "notes.txt", b"hello\nworld\n", None).unwrap_err();
    assert!(e.contains("text that no importer recognises"), "{e}");
    // tare's own results need no import, and the message says so.
    let ours = tare::results::import::load(&fixture("pyperf/suite.json"), None).unwrap();
    let ours = serde_json::to_vec(&ours).unwrap();
    let e = check(dir.path(), "ours.json", &ours, None).unwrap_err();
    assert!(
        e.contains("tare's own results, which need no import"),
        "{e}"
    );
    let e = format!("{:#}", load(dir.path(), None).unwrap_err());
    assert!(e.contains("directory without Criterion data"), "{e}");
}

#[test]
fn the_wrong_format_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let hf = std::fs::read(fixture("hyperfine/two-commands.json")).unwrap();
    let e = check(dir.path(), "hf.json", &hf, Some("jmh")).unwrap_err();
    assert!(e.contains("as jmh: not a JSON array of JMH results"), "{e}");
    let e = check(dir.path(), "hf.json", &hf, Some("go")).unwrap_err();
    assert!(e.contains("as go: no benchmark result lines"), "{e}");
    let e = check(dir.path(), "hf.json", &hf, Some("gbench")).unwrap_err();
    assert!(e.contains("as gbench: no \"context\" object"), "{e}");
    let e = check(dir.path(), "hf.json", &hf, Some("criterion")).unwrap_err();
    assert!(
        e.contains("as criterion: no Criterion benchmark data"),
        "{e}"
    );
    let go = std::fs::read(fixture("go/bench.txt")).unwrap();
    let e = check(dir.path(), "go.txt", &go, Some("pyperf")).unwrap_err();
    assert!(e.contains("as pyperf: not JSON"), "{e}");
}

#[test]
fn damaged_values_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut hf: Value =
        serde_json::from_slice(&std::fs::read(fixture("hyperfine/two-commands.json")).unwrap())
            .unwrap();
    hf["results"][1]["times"][3] = Value::from(-1.0);
    let e = check(dir.path(), "hf.json", hf.to_string().as_bytes(), None).unwrap_err();
    assert!(
        e.contains("results[1].times[3] is -1.0, not a time in seconds"),
        "{e}"
    );

    let mut gb: Value =
        serde_json::from_slice(&std::fs::read(fixture("gbench/repetitions.json")).unwrap())
            .unwrap();
    gb["benchmarks"][0]["time_unit"] = Value::from("fortnights");
    let e = check(dir.path(), "gb.json", gb.to_string().as_bytes(), None).unwrap_err();
    assert!(
        e.contains("benchmarks[0]: unknown time_unit \"fortnights\""),
        "{e}"
    );

    let mut jmh: Value =
        serde_json::from_slice(&std::fs::read(fixture("jmh/avgt-thrpt.json")).unwrap()).unwrap();
    jmh[0]["primaryMetric"]["rawData"][1][2] = Value::from("fast");
    let e = check(dir.path(), "jmh.json", jmh.to_string().as_bytes(), None).unwrap_err();
    assert!(
        e.contains("[0].primaryMetric.rawData[1][2] is \"fast\", not a score"),
        "{e}"
    );

    let e = check(dir.path(), "go.txt", b"BenchmarkX-2 100 12 ns/op 5\n", None).unwrap_err();
    assert!(
        e.contains("line 1: 'BenchmarkX-2 100 12 ns/op 5' has a value without a unit"),
        "{e}"
    );

    // A time of 0 (below a timer's resolution) is kept, not counted, and said.
    let ok = b"BenchmarkX-2 1000000000 0 ns/op\nBenchmarkX-2 1000000000 0.3 ns/op\n";
    check(dir.path(), "zero.txt", ok, None).unwrap();
    let s = load(&dir.path().join("zero.txt"), None).unwrap();
    assert_eq!(s.benchmarks[0].runs.iter().filter(|r| r.counted).count(), 1);
    assert!(s.extra["import"]["not_mapped"]
        .to_string()
        .contains("1 samples of 0 s"));

    // Criterion: iters and times of different lengths.
    let crit = dir.path().join("c/g/b/new");
    std::fs::create_dir_all(&crit).unwrap();
    std::fs::write(
        crit.join("sample.json"),
        br#"{"sampling_mode":"Flat","iters":[1,2],"times":[5]}"#,
    )
    .unwrap();
    let e = format!("{:#}", load(&dir.path().join("c"), None).unwrap_err());
    assert!(
        e.contains("2 iters but 1 times") && !e.contains('\n'),
        "{e}"
    );
}

#[test]
fn truncated_at_every_position() {
    let dir = tempfile::tempdir().unwrap();
    for (rel, format) in FILES {
        let bytes = std::fs::read(fixture(rel)).unwrap();
        let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
        // Every position of small files; about 300 positions of larger ones.
        let step = (bytes.len() / 300).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            let _ = check(dir.path(), name, &bytes[..cut], None);
            let _ = check(dir.path(), name, &bytes[..cut], Some(*format));
        }
    }
}

#[test]
fn the_cli_says_it_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("empty.json"), b"").unwrap();
    for args in [
        vec!["import", "missing.json"],
        vec!["import", "empty.json"],
        vec!["import", "--format", "csv", "empty.json"],
    ] {
        let out = common::tare()
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("tare: error:") || stderr.starts_with("error:"),
            "{args:?}: {stderr}"
        );
        if !args.contains(&"csv") {
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
        }
    }
    // An output path that cannot be written fails before reading anything.
    let out = common::tare()
        .args(["import", "empty.json", "-o", "/nonexistent/dir/out.json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/dir/out.json"));
}

/// A JSON value to put somewhere in a fixture.
fn junk_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "\\PC{0,12}".prop_map(Value::from),
        Just(Value::Array(vec![])),
        Just(serde_json::json!({})),
        Just(serde_json::json!([[1, 2], [3]])),
        Just(Value::from(-1.0)),
        Just(Value::from(0)),
        Just(Value::from(1e308)),
    ]
}

/// Every location (JSON pointer) in a document.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                pointers(x, p, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(x, p, out);
            }
        }
        _ => {}
    }
}

proptest! {

    /// A value anywhere in a JSON fixture replaced by junk: an import or a one-line error.
    #[test]
    fn damaged_json_never_panics(file in 0usize..7, pick in any::<prop::sample::Index>(), junk in junk_value(), force in any::<bool>()) {
        let (rel, format) = FILES[file];
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read(fixture(rel)).unwrap();
        let Ok(mut doc) = serde_json::from_slice::<Value>(&text) else { return Ok(()) };
        let mut all = Vec::new();
        pointers(&doc, String::new(), &mut all);
        let p = &all[pick.index(all.len())];
        *doc.pointer_mut(p).unwrap() = junk;
        let r = check(dir.path(), "f.json", doc.to_string().as_bytes(), force.then_some(format));
        if let Err(e) = r {
            prop_assert!(!e.contains("accepted but unreadable"), "{}", e);
        }
    }

    /// Bytes flipped, dropped or inserted anywhere in any fixture.
    #[test]
    fn damaged_bytes_never_panic(file in 0usize..FILES.len(), edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6)) {
        let (rel, format) = FILES[file];
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = std::fs::read(fixture(rel)).unwrap();
        for (at, b, kind) in edits {
            if bytes.is_empty() { break }
            let i = at.index(bytes.len());
            match kind {
                0 => bytes[i] = b,
                1 => { bytes.remove(i); }
                _ => bytes.insert(i, b),
            }
        }
        for f in [None, Some(format)] {
            if let Err(e) = check(dir.path(), "f.data", &bytes, f) {
                prop_assert!(!e.contains("accepted but unreadable"), "{}", e);
            }
        }
    }
}
