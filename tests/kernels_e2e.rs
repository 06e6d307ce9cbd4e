//! The blur kernel of all seven client libraries under one `tare kernels` session
//! (examples/kernels/blur/<lang>/, each built by its `build.sh`, which prints the worker's
//! command with `--print-command`): kernels matched across languages, invocations × samples,
//! verdicts against the C reference, the HTML report, and `m.checksum` agreeing across
//! languages. Then the checks with workers made to fail: a kernel optimized away flagged by
//! the linearity check (the fake worker's `vanished`), and a real worker past the per-sample
//! limit, a crashing, a hanging and a garbage-writing worker: one line each, nothing left.
//!
//! Needs every example directory (the client libraries are merged before CI runs this): a
//! missing one fails with a message that names it.

mod common;
use common::tare;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const LANGS: [&str; 7] = ["c", "cpp", "python", "rust", "go", "java", "js"];
const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/fake_worker.py");

fn example(lang: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("examples/kernels/blur/{lang}"))
}

/// The worker command of one example, built first.
fn command(lang: &str) -> String {
    let dir = example(lang);
    let build = dir.join("build.sh");
    assert!(
        build.is_file(),
        "examples/kernels/blur/{lang}/build.sh is missing: the {lang} client and its blur example must be merged before this test (see docs/protocol.md, 'Where things live')"
    );
    let out = Command::new(&build)
        .arg("--print-command")
        .current_dir(&dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", build.display()));
    assert!(
        out.status.success(),
        "{} --print-command failed ({}): {}",
        build.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let cmd = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = cmd.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        lines.len(),
        1,
        "{} --print-command must print one line, printed: {cmd:?}",
        build.display()
    );
    lines[0].trim().to_string()
}

#[test]
fn blur_in_seven_languages_head_to_head() {
    let commands: Vec<String> = LANGS.iter().map(|l| command(l)).collect();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("blur.json");
    let h = dir.path().join("blur.html");
    let out = tare()
        .arg("kernels")
        .args(&commands)
        .args([
            "--filter", "^blur$", "-L", "size", "64", "-L", "radius", "3",
        ])
        .args([
            "--invocations",
            "2",
            "--sample-stop",
            "runs >= 5",
            "--sample-time",
            "2ms",
        ])
        .args([
            "--seed",
            "11",
            "--start-timeout",
            "120s",
            "--worker-timeout",
            "30s",
        ])
        .args([
            "--export-json",
            j.to_str().unwrap(),
            "--export-html",
            h.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(v["schema_version"], 2);
    let benches = v["benchmarks"].as_array().unwrap();
    let names: Vec<&str> = benches
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    let want: Vec<String> = LANGS.iter().map(|l| format!("blur/{l}")).collect();
    assert_eq!(
        names, want,
        "one benchmark per language, C first (the reference)"
    );
    let mut checksums = Vec::new();
    for b in benches {
        assert_eq!(b["parameters"]["size"], "64");
        assert_eq!(b["parameters"]["radius"], "3");
        let invs = b["extra"]["invocations"].as_array().unwrap();
        assert_eq!(invs.len(), 2, "{}", b["name"]);
        assert!(invs
            .iter()
            .all(|i| i["error"].is_null() && i["counted"].as_u64().unwrap() >= 5));
        let k = &b["extra"]["kernel"];
        assert!(k["loops"].as_u64().unwrap() >= 1);
        assert_eq!(
            k["bytes_per_loop"].as_f64(),
            Some(64.0 * 64.0 * 8.0),
            "{}",
            b["name"]
        );
        let runs = b["runs"].as_array().unwrap();
        let last = runs.last().unwrap();
        let c = last["extra"]["sample"]["metrics"]["checksum"]
            .as_f64()
            .unwrap_or_else(|| panic!("{}: no m.checksum", b["name"]));
        checksums.push(c);
        let kinds: Vec<&str> = b["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["kind"].as_str().unwrap())
            .collect();
        assert!(
            !kinds.contains(&"metric-disagrees"),
            "{}: {kinds:?}",
            b["name"]
        );
        assert!(
            !kinds.contains(&"unresolved-samples"),
            "{}: {kinds:?}",
            b["name"]
        );
    }
    for (l, c) in LANGS.iter().zip(&checksums) {
        assert!(
            (c - checksums[0]).abs() <= 1e-9 * checksums[0].abs(),
            "{l}: checksum {c} against C's {}",
            checksums[0]
        );
    }
    let reference = std::fs::read_to_string(example("").join("CHECKSUMS")).unwrap_or_default();
    if let Some(line) = reference
        .lines()
        .find(|l| l.contains("64") && l.contains('3'))
    {
        eprintln!("CHECKSUMS: {line}; measured {}", checksums[0]);
    }
    let comps = v["comparisons"].as_array().unwrap();
    assert_eq!(comps.len(), 6, "each language against C");
    for c in comps {
        assert_eq!(c["reference"], 0);
        assert!(!c["verdict"].as_str().unwrap().is_empty());
    }
    assert!(
        stdout.contains("checksum agrees across implementations"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&h).unwrap();
    for l in LANGS {
        assert!(
            html.contains(&format!("blur/{l}")),
            "HTML report lacks blur/{l}"
        );
    }
    assert!(html.contains("<svg"));
}

/// A worker whose loop was optimized away (the fake worker's `vanished`: its timed region
/// ignores `loops`) fails calibration with one line naming it (exit 3), beside a real C
/// worker's empty kernel, whose do-not-optimize helper keeps the loop: measured.
#[test]
fn an_optimized_away_kernel_is_flagged() {
    let c = command("c");
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("k.json");
    let out = tare()
        .args(["kernels", &c, FAKE, "-n", "c", "-n", "fake"])
        .args([
            "--filter",
            "^(empty|vanished)$",
            "-r",
            "1",
            "--sample-stop",
            "runs >= 5",
        ])
        .args(["--sample-time", "2ms", "--export-json", j.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(
        stderr.contains("tare: error: vanished/fake: no counted sample: calibration stopped at"),
        "{stderr}"
    );
    assert!(
        !stdout.contains("empty/c: time does not grow") && !stdout.contains("empty/c: invocation"),
        "the C client's empty kernel keeps its loop: {stdout}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(v["complete"], false);
    let empty_c = &v["benchmarks"][0];
    assert_eq!(empty_c["name"], "empty/c");
    assert!(empty_c["runs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["counted"] == true));
}

/// Processes whose environment holds `KERNELS_E2E_MARK=<mark>` (tare passes its environment
/// on to the workers, so this finds them and their children, and nothing else).
fn marked(mark: &str) -> Vec<String> {
    let want = format!("KERNELS_E2E_MARK={mark}");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(env) = std::fs::read(e.path().join("environ")) {
            if env.split(|&b| b == 0).any(|v| v == want.as_bytes()) {
                out.push(e.file_name().to_string_lossy().into_owned());
            }
        }
    }
    out
}

fn one_line_failure(args: &[&str], env: &[(&str, &str)], marker: &str) -> String {
    let mut cmd = tare();
    cmd.arg("kernels")
        .args(args)
        .env("KERNELS_E2E_MARK", marker);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("tare: error:"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    let left = marked(marker);
    assert!(left.is_empty(), "{args:?} left processes: {left:?}");
    lines[0].to_string()
}

#[test]
fn failing_workers_give_one_line_and_leave_nothing() {
    // A real worker whose samples take longer than the per-sample limit.
    let c = command("c");
    let e = one_line_failure(
        &[
            &c,
            "--filter",
            "^blur$",
            "-L",
            "size",
            "3000",
            "--worker-timeout",
            "20ms",
        ],
        &[],
        "real-timeout",
    );
    assert!(e.contains("did not answer within 0.020 s"), "{e}");
    for (mode, want) in [
        ("crash-run,child", "it exited with status 3"),
        ("hang-setup,child", "did not answer within 1.000 s"),
        ("garbage", "worker broke the protocol"),
    ] {
        let e = one_line_failure(
            &[FAKE, "--filter", "spin", "--worker-timeout", "1s"],
            &[("FAKE_MODE", mode), ("FAKE_CHILD_SLEEP", "319.5")],
            mode,
        );
        assert!(e.contains(want), "{mode}: {e}");
    }
}
