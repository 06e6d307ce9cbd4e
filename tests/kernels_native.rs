//! Native harnesses without a client library under `tare kernels`: Go's `testing.B`, driven by
//! `tare native-worker go DIR` with the iterations fixed by tare (`-test.benchtime=Nx`), on the
//! benchmarks in tests/kernels/gobench (needs `go`; .ci/services.d/45-go.sh installs it); and a
//! pyperf script, tests/kernels/pyperf_bench.py, driven through pyperf's worker mode by
//! `tare native-worker pyperf SCRIPT` (needs python3 with pyperf).

mod common;
use common::tare;
#[path = "common/skip.rs"]
mod skip;

use serde_json::Value;

/// The tests of this file measure real kernels; run at once they were each other's CPU
/// interference (a Go kernel's time varied several-fold beside a pyperf session), so they take
/// turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn take_turn() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn go_benchmarks_measured_with_tares_policy() {
    let _turn = take_turn();
    let pkg = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/gobench");
    let worker = format!("{} native-worker go {pkg}", env!("CARGO_BIN_EXE_tare"));
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("go.json");
    let (_, v) = common::exported(
        tare()
            .args([
                "kernels",
                &worker,
                "-r",
                "2",
                "--sample-stop",
                "runs >= 5",
                "--sample-time",
                "2ms",
            ])
            .args(["--seed", "5", "--export-json", j.to_str().unwrap()]),
        &j,
    );
    let benches = v["benchmarks"].as_array().unwrap();
    let names: Vec<&str> = benches
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    // Sub-benchmarks (b.Run) are kernels of their own, named with their parameter.
    assert_eq!(names, ["Sum/go", "Sum2/go", "Sized/10/go", "Sized/100/go"]);
    for b in benches {
        let loops = b["extra"]["kernel"]["loops"].as_u64().unwrap();
        assert!(loops > 1, "calibrated: {loops}");
        assert_eq!(b["extra"]["invocations"].as_array().unwrap().len(), 2);
        for r in b["runs"].as_array().unwrap() {
            assert_eq!(r["extra"]["sample"]["loops"].as_u64().unwrap(), loops);
        }
    }
    // Go prints MB/s with two decimals: bytes per loop come back to within 1%.
    let b = benches[0]["extra"]["kernel"]["bytes_per_loop"]
        .as_f64()
        .unwrap();
    assert!((b - 8000.0).abs() < 80.0, "bytes per loop {b}");
    // Sum2 adds twice as many numbers per loop as Sum: per-loop times in that order (a time
    // not divided by its own loop count would give ~1). The upper bound is loose: 2 ms samples
    // of a busy CI machine were seen at 5.7×.
    let med = |i: usize| {
        benches[i]["summary"]["wall_time"]["median"]
            .as_f64()
            .unwrap()
    };
    let r = med(1) / med(0);
    assert!(r > 1.2 && r < 20.0, "Sum2/Sum = {r}");
    // Sized/100 sums 10× the numbers of Sized/10: measured apart (a pattern not anchored per
    // level would run both for Sized/10, which fails on the count of result lines).
    let r = med(3) / med(2);
    assert!(r > 3.0, "Sized/100 / Sized/10 = {r}");
    // Outside tare it says how to use it, in one line.
    let out = tare()
        .args(["native-worker", "go", pkg])
        .env_remove("TARE_WORKER_FD")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("runs under tare kernels"));
}

/// A directory holding a `go` that runs `before` (shell) and then the real `go`, and the PATH
/// that puts it first; None without go.
fn go_wrapper(dir: &std::path::Path, before: &str) -> Option<String> {
    let real_go = std::process::Command::new("sh")
        .args(["-c", "command -v go"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())?;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let wrapper = bin.join("go");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\n{before}\nexec {real_go} \"$@\"\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    Some(format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    ))
}

/// The test binary is built once per session, not once per invocation: `go` (a logging
/// wrapper first on PATH) runs `test -c` once for discovery and three invocations, and the
/// results record the Go version that built it.
#[test]
fn go_test_binary_is_built_once_per_session() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("go.log");
    let Some(path) = go_wrapper(dir.path(), &format!("echo \"$*\" >> {}", log.display())) else {
        skip::skip("go", "run .ci/services.d/45-go.sh as root");
        return;
    };
    let _turn = take_turn();
    let pkg = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/gobench");
    let worker = format!("{} native-worker go {pkg}", env!("CARGO_BIN_EXE_tare"));
    let j = dir.path().join("go.json");
    let out = tare()
        .args(["kernels", &worker, "-r", "3", "--sample-stop", "runs >= 3"])
        .args(["--filter", "^Sum$", "--sample-time", "1ms", "--seed", "2"])
        .args(["--export-json", j.to_str().unwrap()])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    let builds = calls.lines().filter(|l| l.starts_with("test -c")).count();
    assert_eq!(builds, 1, "go was run as:\n{calls}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let b = &v["benchmarks"][0];
    assert_eq!(b["extra"]["invocations"].as_array().unwrap().len(), 3);
    let client = b["extra"]["kernel"]["client"].as_str().unwrap();
    assert!(client.contains("(go1."), "{client}");
}

/// The pyperf test script, copied to `dir` so the processes it starts can be told apart from
/// those of other tests by their command line.
fn pyperf_script(dir: &std::path::Path) -> String {
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kernels/pyperf_bench.py");
    let dst = dir.join("pyperf_bench.py");
    std::fs::copy(src, &dst).unwrap();
    dst.to_str().unwrap().to_string()
}

/// Processes whose command line mentions `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains(needle) {
                found.push(c);
            }
        }
    }
    found
}

#[test]
fn pyperf_benchmarks_measured_with_tares_policy() {
    let _turn = take_turn();
    let dir = tempfile::tempdir().unwrap();
    let script = pyperf_script(dir.path());
    let worker = format!(
        "{} native-worker pyperf {script}",
        env!("CARGO_BIN_EXE_tare")
    );
    let j = dir.path().join("py.json");
    let (_, v) = common::exported(
        tare()
            .args(["kernels", &worker, "-r", "2", "--sample-stop", "runs >= 5"])
            .args(["--sample-time", "2ms", "--seed", "5"])
            .args(["--export-json", j.to_str().unwrap()])
            .env_remove("TARE_TEST_PYPERF_RAISE"),
        &j,
    );
    let benches = v["benchmarks"].as_array().unwrap();
    let names: Vec<&str> = benches
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    // pyperf's "sum2 x" is not a protocol name: its space becomes '_'.
    assert_eq!(names, ["sum/python", "sum2_x/python"]);
    for b in benches {
        let loops = b["extra"]["kernel"]["loops"].as_u64().unwrap();
        assert!(loops > 1, "calibrated: {loops}");
        assert_eq!(b["extra"]["invocations"].as_array().unwrap().len(), 2);
        let runs = b["runs"].as_array().unwrap();
        assert!(runs.len() >= 5, "{} samples", runs.len());
        for r in runs {
            assert_eq!(r["extra"]["sample"]["loops"].as_u64().unwrap(), loops);
        }
    }
    // sum2 x adds twice as many numbers per loop as sum (and skips a call). Compared by each
    // kernel's fastest sample, not its median: this VM's speed modes (about 2× apart) can hold
    // one kernel's two processes in the slow mode and the other's in the fast one, and the
    // ratio of medians once read 0.89 under a load of 4.5; the fastest of ten samples is in
    // the fast mode for both. It read 1.20 once with the other tests of this file running
    // beside it: the bound tells the two kernels apart (swapped, the ratio would be below 1),
    // it does not hold tare to the ratio.
    let fastest = |i: usize| {
        benches[i]["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["counted"].as_bool() == Some(true))
            .filter_map(|r| r["wall_time"].as_f64())
            .fold(f64::INFINITY, f64::min)
    };
    let r = fastest(1) / fastest(0);
    assert!(r > 1.1 && r < 6.0, "sum2_x/sum = {r}");
    assert!(processes_with(&script).is_empty());
}

#[test]
fn pyperf_script_that_raises_is_one_line_and_leaves_nothing() {
    let _turn = take_turn();
    let dir = tempfile::tempdir().unwrap();
    let script = pyperf_script(dir.path());
    let worker = format!(
        "{} native-worker pyperf {script}",
        env!("CARGO_BIN_EXE_tare")
    );
    let kernels = |raise: &str| {
        tare()
            .args(["kernels", &worker, "-r", "1", "--sample-stop", "runs >= 3"])
            .args(["--sample-time", "1ms"])
            .env("TARE_TEST_PYPERF_RAISE", raise)
            .output()
            .unwrap()
    };
    // Fails before any benchmark: tare cannot even list the kernels.
    let out = kernels("start");
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    // (a note that tare is waiting for the listing may precede it: progress, not an error)
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("tare: waiting for"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("tare: error: "), "{err}");
    assert!(
        lines[0].contains("ValueError: this script fails on purpose"),
        "{err}"
    );
    // Fails in a `run` (after discovery): that kernel fails with the reason, the other is
    // measured.
    let out = kernels("run");
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("tare: error: sum/python:")
            && last.contains("RuntimeError: sum fails on purpose on call 2"),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("sum2_x"), "{stdout}");
    assert!(processes_with(&script).is_empty());
}

/// A real suite nobody here wrote: github.com/cespare/xxhash/v2 v2.3.0, whose benchmarks are
/// all sub-benchmarks (`Sum64/4B`), fetched by .ci/services.d/45-go.sh. Listing shows each
/// sub-benchmark (and says it is waiting while the test binary builds); measuring one works.
#[test]
fn a_real_go_suite_with_sub_benchmarks() {
    let Some(dir) = std::fs::read_to_string("/run/tare-ci/go-xxhash.path")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|d| std::path::Path::new(d).join("bench_test.go").is_file())
    else {
        skip::skip(
            "the xxhash Go module (/run/tare-ci/go-xxhash.path)",
            "run .ci/services.d/45-go.sh as root (needs the Go proxy)",
        );
        return;
    };
    let _turn = take_turn();
    let worker = format!("{} native-worker go {dir}", env!("CARGO_BIN_EXE_tare"));
    // A build from Go's warm cache can take under the second after which tare says it is
    // waiting: this `go` takes 2 s more, as a cold build would.
    let slow = tempfile::tempdir().unwrap();
    let path = go_wrapper(slow.path(), "sleep 2").unwrap();
    let out = tare()
        .args(["kernels", &worker, "--list"])
        .env("PATH", &path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    for k in [
        "Sum64/4B",
        "Sum64/10MB",
        "Sum64String/100B",
        "DigestBytes/4KB",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{k} "))),
            "{k} not listed:\n{stdout}"
        );
    }
    // Building the test binary takes seconds: the user is told tare is waiting.
    assert!(stderr.contains("waiting for"), "{stderr}");
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("xx.json");
    let (_, v) = common::exported(
        tare()
            .args([
                "kernels",
                &worker,
                "--filter",
                "^Sum64/(4B|100B)$",
                "-r",
                "2",
            ])
            .args([
                "--sample-stop",
                "runs >= 3",
                "--sample-time",
                "2ms",
                "--seed",
                "3",
            ])
            .args(["--export-json", j.to_str().unwrap()]),
        &j,
    );
    let b = v["benchmarks"].as_array().unwrap();
    let names: Vec<&str> = b.iter().map(|b| b["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Sum64/4B/go", "Sum64/100B/go"]);
    // SetBytes(len) per loop: 4 and 100 bytes come back through MB/s to within 2%.
    for (b, bytes) in b.iter().zip([4.0, 100.0]) {
        let got = b["extra"]["kernel"]["bytes_per_loop"].as_f64().unwrap();
        assert!((got - bytes).abs() < 0.02 * bytes, "{}: {got}", b["name"]);
    }
}

/// `--python` names the interpreter of a pyperf script, and the results record it; one that
/// cannot import pyperf is a one-line error naming it.
#[test]
fn pyperf_interpreter_is_named_and_recorded() {
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys, pyperf; print(sys.executable)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let Some(python) = python else {
        skip::skip("python3 with pyperf", "run .ci/services.d/47-pyperf.sh");
        return;
    };
    let _turn = take_turn();
    let dir = tempfile::tempdir().unwrap();
    let script = pyperf_script(dir.path());
    let worker = format!(
        "{} native-worker pyperf --python {python} {script}",
        env!("CARGO_BIN_EXE_tare")
    );
    let j = dir.path().join("py.json");
    let out = tare()
        .args(["kernels", &worker, "-r", "1", "--sample-stop", "runs >= 3"])
        .args(["--filter", "^sum$", "--sample-time", "1ms"])
        .args(["--export-json", j.to_str().unwrap()])
        .env_remove("TARE_TEST_PYPERF_RAISE")
        .env("PATH", "/nonexistent") // not python3 from PATH: the one named
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let client = v["benchmarks"][0]["extra"]["kernel"]["client"]
        .as_str()
        .unwrap();
    assert!(
        client.contains(&format!("python {python} 3.")) && client.contains("pyperf "),
        "{client}"
    );
    // An interpreter without pyperf: one line that names it and says what to do.
    let venvless = dir.path().join("python-without-pyperf");
    std::fs::write(
        &venvless,
        "#!/bin/sh\nexec python3 -S -I -c 'import pyperf' \"$@\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&venvless, std::fs::Permissions::from_mode(0o755)).unwrap();
    let worker = format!(
        "{} native-worker pyperf --python {} {script}",
        env!("CARGO_BIN_EXE_tare"),
        venvless.display()
    );
    let out = tare()
        .args(["kernels", &worker, "-r", "1", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot import pyperf") && err.contains(&venvless.display().to_string()),
        "{err}"
    );
}

/// A real suite against itself (issue 34): xxhash's `Sum64/4B` given twice, adaptive
/// invocations bounded by a 30 s budget. No "faster"/"slower" at α 0.1%: a model that pooled
/// samples gave verdicts in most sessions here; the process-level model's A/A p-values on this
/// VM (16 sessions, by hand) fell under 0.01 once and under 0.05 three times (more than the
/// 0.8 that 5% would give: here a side can lean one way through a whole session, 10 of 11
/// rounds, as pytest-benchmark's in docs/native-workers.md), and at α 1% the test failed a CI
/// run (1.117×, p 0.0046). The interval on the line agrees with its
/// words, and each side's line says what its "±" is and where the next session is expected.
#[test]
fn a_real_suite_against_itself_gets_no_verdict() {
    let Some(dir) = std::fs::read_to_string("/run/tare-ci/go-xxhash.path")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|d| std::path::Path::new(d).join("bench_test.go").is_file())
    else {
        skip::skip(
            "the xxhash Go module (/run/tare-ci/go-xxhash.path)",
            "run .ci/services.d/45-go.sh as root (needs the Go proxy)",
        );
        return;
    };
    let _turn = take_turn();
    let worker = format!("{} native-worker go {dir}", env!("CARGO_BIN_EXE_tare"));
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("aa.json");
    let started = std::time::Instant::now();
    let out = tare()
        .args(["kernels", &worker, &worker, "-n", "a", "-n", "b"])
        .args(["--filter", "^Sum64/4B$", "--time-budget", "30s"])
        .args(["--alpha", "0.001", "--seed", "34", "--verbose"])
        .args(["--export-json", j.to_str().unwrap()])
        .output()
        .unwrap();
    let took = started.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The budget bounds the session (a round is not started that would end past it; the
    // build and discovery come before).
    assert!(took < 120.0, "{took} s");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    let c = &v["comparisons"][0];
    let verdict = c["verdict"].as_str().unwrap();
    assert!(
        verdict != "faster" && verdict != "slower",
        "A/A verdict: {c}\n{stdout}"
    );
    let (lo, hi) = (
        c["ratio_ci_low"].as_f64().unwrap(),
        c["ratio_ci_high"].as_f64().unwrap(),
    );
    let words = c["words"].as_str().unwrap();
    if verdict == "no-significant-difference" {
        assert!(
            (lo <= 1.0 && 1.0 <= hi) || words.contains("Holm p") || words.contains("invocations"),
            "{words}"
        );
    }
    for side in ["a", "b"] {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{side} ")))
            .unwrap_or_else(|| panic!("no line for {side}:\n{stdout}"));
        assert!(
            line.contains("(95% CI of the mean over ")
                && (line.contains("; next session ± ") || line.contains(", widened from ± ")),
            "{line}"
        );
    }
    let invs = v["benchmarks"][0]["extra"]["invocations"]
        .as_array()
        .unwrap()
        .len();
    assert!(invs >= 2, "{invs} invocations in 30 s");
}
