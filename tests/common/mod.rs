//! Helpers shared by the end-to-end tests (each test file uses a part of them).
#![allow(dead_code)]

use std::process::Command;

pub mod escape;
pub mod nodes;

/// The built `tare` binary, without colors; `TARE_BIN` names another (a copy of this build
/// where a shared CARGO_TARGET_DIR's `tare` may be replaced by another checkout's build while
/// the tests run).
pub fn tare() -> Command {
    let bin = std::env::var_os("TARE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_tare").into());
    let mut c = Command::new(bin);
    c.env("NO_COLOR", "1");
    c
}

/// Whether the tests run with effective uid 0 (real cgroups and namespaces).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// Processes whose command line contains `marker`, as "pid: cmdline".
pub fn survivors(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let s = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if s.contains(marker) {
                out.push(format!("{}: {s}", e.file_name().to_string_lossy()));
            }
        }
    }
    out
}

/// A copy of the built `tare` that every user can run, in a fresh directory of its own (mode
/// 0755, removed with the returned guard). The checkout — and so `target/` — may sit below a
/// private directory (root's home is 0700 on Debian and Ubuntu), which a test that becomes
/// `nobody` cannot reach; no test may depend on where the checkout is.
pub fn tare_for_everyone() -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("tare-bin.")
        .tempdir_in(std::env::temp_dir())
        .expect("a temporary directory");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod 0755 the binary's directory");
    let bin = dir.path().join("tare");
    std::fs::copy(env!("CARGO_BIN_EXE_tare"), &bin).expect("copy the tare binary");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))
        .expect("chmod 0755 the binary");
    (dir, bin)
}

/// Runs a tare command that writes `--export-json export`, asserts that it succeeded (its
/// stdout and stderr in the message where not), and returns its stdout and the export.
pub fn exported(cmd: &mut Command, export: &std::path::Path) -> (String, serde_json::Value) {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(export)
        .unwrap_or_else(|e| panic!("{}: {e}\n{stdout}", export.display()));
    (stdout, serde_json::from_str(&text).unwrap())
}

/// The α of the head-to-head tests that run an A/A pair (two identical builds) beside a
/// changed one in one `tare kernels` session, and assert no verdict on the pair.
///
/// A test that asserts "no verdict" at α fails α of the time when tare is right: five such
/// tests at 0.01 fail about one CI run in twenty, as two recent CI runs did (a 1.117× xxhash
/// A/A verdict, p 0.0046; a Google Benchmark one). So they ask for 0.001: they still fail when
/// A/A verdicts come far more often than α (a model that pools iterations gives them in most
/// sessions), and the changes they must find (2-3×) had Holm p of 1.3e-4 or less in 9 rounds on
/// this VM idle (with a build beside it once 0.0021: hence 12 rounds). How
/// often A/A verdicts come at α 0.05 is measured over many sessions instead
/// (bench/native_power.sh, docs/native-workers.md).
pub const HEAD_TO_HEAD_ALPHA: &str = "0.001";

/// Rounds of the head-to-head sessions of three programs (a, its copy, the changed one): four
/// whole blocks, so every program runs first, second and third in a round equally often
/// (`method::order`).
pub const HEAD_TO_HEAD_ROUNDS: &str = "12";

/// One head-to-head session of a harness's suite: `workers` are the worker commands of build
/// `a`, an identical copy `b` and a build `slow` whose kernel `changed` does more work, run as
/// one `tare kernels` session of [`HEAD_TO_HEAD_ROUNDS`] rounds at [`HEAD_TO_HEAD_ALPHA`] (seed
/// 26), its export written into `dir`. Asserts what the harness tests share: a comparison per
/// kernel and candidate (`kernels` a build); `changed` called slower in `slow` with its ratio
/// within `ratio`; no verdict anywhere else (the A/A pair above all); and a printed suite line
/// per candidate with one slower benchmark for `slow`, none for `b`, none faster. Returns
/// stdout and the export, for what a harness checks besides.
pub fn head_to_head(
    workers: [&str; 3],
    dir: &std::path::Path,
    kernels: usize,
    changed: &str,
    ratio: std::ops::Range<f64>,
) -> (String, serde_json::Value) {
    let j = dir.join("head-to-head.json");
    let (stdout, v) = exported(
        tare()
            .arg("kernels")
            .args(workers)
            .args(["-n", "a", "-n", "b", "-n", "slow"])
            .args(["--sample-stop", &format!("runs >= {HEAD_TO_HEAD_ROUNDS}")])
            .args(["-r", HEAD_TO_HEAD_ROUNDS])
            .args(["--alpha", HEAD_TO_HEAD_ALPHA, "--seed", "26"])
            .args(["--export-json", j.to_str().unwrap()]),
        &j,
    );
    let cs = v["comparisons"].as_array().unwrap();
    assert_eq!(cs.len(), 2 * kernels, "{cs:?}");
    let slow = format!("{changed}/slow");
    assert!(
        cs.iter().any(|c| c["candidate_name"] == slow.as_str()),
        "no comparison of {slow}: {cs:?}"
    );
    for c in cs {
        let verdict = c["verdict"].as_str().unwrap();
        let cand = c["candidate_name"].as_str().unwrap();
        if cand == slow {
            assert_eq!(verdict, "slower", "{c}\n{stdout}");
            let r = c["ratio"].as_f64().unwrap();
            assert!(ratio.contains(&r), "{cand}: {r} outside {ratio:?}");
        } else {
            assert!(
                verdict != "faster" && verdict != "slower",
                "{cand}: {c}\n{stdout}"
            );
        }
    }
    let suites = v["extra"]["suites"].as_array().unwrap();
    assert_eq!(suites.len(), 2, "{suites:?}");
    for s in suites {
        let line = s["line"].as_str().unwrap();
        assert!(stdout.contains(line), "{line}\n{stdout}");
        assert_eq!(s["benchmarks"], kernels, "{line}");
        assert_eq!(s["faster"], 0, "{line}");
        let slower = if s["candidate"] == "slow" { 1 } else { 0 };
        assert_eq!(s["slower"], slower, "{line}");
        assert!(line.contains("; geometric mean "), "{line}");
    }
    (stdout, v)
}

/// `tare ARGS` run in `dir`, without colours and without a `TARE_STORE` from the environment
/// (the history tests name their store).
pub fn tare_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    tare()
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("TARE_STORE")
        .output()
        .unwrap()
}

/// A command's standard output then its standard error, as text.
pub fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
