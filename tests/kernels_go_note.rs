//! A `tare kernels` session over Go `testing.B` benchmarks (`tare native-worker go`) says once
//! how its b.N differs from `go test -bench`'s default mode (tare's calibrated N through
//! `-test.benchtime=Nx`: short `b.RunParallel` bodies read higher than `go test`'s 1 s b.N,
//! docs/native-workers.md), with the N it used; a session without Go benchmarks does not. And
//! a Go benchmark's linearity note names the cost each sample pays, in testing.B's terms.
//! Needs `go` (.ci/services.d/45-go.sh installs it) and python3 (the fake worker).

mod common;
use common::tare;
#[path = "common/skip.rs"]
mod skip;

const GO_NOTE: &str = "tare: go: b.N = tare's N (";
const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/fake_worker.py");

fn has_go() -> bool {
    std::process::Command::new("sh")
        .args(["-c", "command -v go"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Standard output and error of `tare kernels ARGS` (with a JSON export), and the export.
fn session(args: &[&str]) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let out = tare()
        .arg("kernels")
        .args(args)
        .args(["--seed", "5", "--export-json", j.to_str().unwrap()])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    let v = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    (text, v)
}

#[test]
fn a_go_session_says_how_its_b_n_differs_from_go_tests_once() {
    if !has_go() {
        skip::skip("go", "run .ci/services.d/45-go.sh as root");
        return;
    }
    let pkg = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/gobench");
    let worker = format!("{} native-worker go {pkg}", env!("CARGO_BIN_EXE_tare"));
    let common = [
        "-r",
        "2",
        "--sample-stop",
        "runs >= 5",
        "--sample-time",
        "2ms",
    ];
    for verbose in [false, true] {
        let mut args = vec![worker.as_str()];
        args.extend(common);
        if verbose {
            args.push("--verbose");
        }
        let (text, v) = session(&args);
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with(GO_NOTE)).collect();
        // Once a session, not once a benchmark (the session has four).
        assert_eq!(lines.len(), 1, "{text}");
        let line = lines[0];
        assert!(line.contains("-test.benchtime=Nx"), "{line}");
        assert!(line.contains("b.RunParallel"), "{line}");
        assert!(line.contains("docs/native-workers.md"), "{line}");
        assert!(line.chars().count() <= 200, "{line}");
        // The N it names are the session's: the smallest and the largest calibrated loops.
        let loops: Vec<u64> = v["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["extra"]["kernel"]["loops"].as_u64().unwrap())
            .collect();
        assert_eq!(loops.len(), 4, "{text}");
        let named = line[GO_NOTE.len()..].split(',').next().unwrap();
        let (lo, hi) = (loops.iter().min().unwrap(), loops.iter().max().unwrap());
        let small = |n: u64| n < 10_000;
        if small(*lo) {
            assert!(named.starts_with(&lo.to_string()), "{named} vs {loops:?}");
        }
        if small(*hi) {
            assert!(named.ends_with(&hi.to_string()), "{named} vs {loops:?}");
        }
        assert_eq!(named.contains('–'), lo != hi, "{named} vs {loops:?}");
    }
}

#[test]
fn a_session_without_go_benchmarks_does_not() {
    let (text, v) = session(&[
        FAKE,
        "--filter",
        "^spin",
        "-r",
        "2",
        "--sample-stop",
        "runs >= 5",
        "--sample-time",
        "1ms",
        "--verbose",
    ]);
    assert!(
        !v["benchmarks"].as_array().unwrap().is_empty(),
        "measured nothing: {text}"
    );
    assert!(!text.contains("tare: go:"), "{text}");
    assert!(!text.contains("-test.benchtime"), "{text}");
}

/// A Go benchmark whose set-up is timed once a sample (tests/kernels/gostartup `Startup`: 20
/// loops' worth before its loop), at samples of one or two loops: time does not grow with the
/// loops, and the note says so in the suite's terms — a cost each sample pays, advice with
/// `--sample-time` and testing.B's calls — never tare's client calls or a body optimized away.
#[test]
fn a_go_suites_linearity_note_names_the_cost_each_sample_pays() {
    if !has_go() {
        skip::skip("go", "run .ci/services.d/45-go.sh as root");
        return;
    }
    let pkg = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/gostartup");
    let worker = format!("{} native-worker go {pkg}", env!("CARGO_BIN_EXE_tare"));
    let (text, v) = session(&[
        &worker,
        "--filter",
        "^Startup$",
        "-r",
        "2",
        "--sample-stop",
        "runs >= 5",
        "--sample-time",
        "200us",
    ]);
    let b = &v["benchmarks"][0];
    let d = b["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "linearity")
        .unwrap_or_else(|| {
            panic!(
                "no linearity note at N = {}: {text}",
                b["extra"]["kernel"]["loops"]
            )
        });
    let (message, suggestion) = (
        d["message"].as_str().unwrap(),
        d["suggestion"].as_str().unwrap(),
    );
    assert!(message.contains("a cost each sample pays"), "{message}");
    assert!(!message.contains("optimized away"), "{message}");
    assert!(!message.contains("sorts in place"), "{message}");
    assert!(suggestion.contains("--sample-time"), "{suggestion}");
    assert!(suggestion.contains("b.StopTimer()"), "{suggestion}");
    assert!(!suggestion.contains("InitEach"), "{suggestion}");
    // Said in full on the terminal (a linearity note always is).
    assert!(
        text.contains("Startup/go: time does not grow with the loops"),
        "{text}"
    );
}
