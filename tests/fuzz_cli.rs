//! The whole CLI against damaged and hostile input (issue 23): every command that reads a file
//! — compare, report, import, plan --pilot, recover, suite check, table, history add — given
//! random bytes, valid files of every format (tare results, journals, suite files, each
//! importer's fixtures) with bytes flipped, cut or spliced, and random argument lists for every
//! subcommand. For each: no panic, an end within its deadline, and tare's own errors on one
//! line; random bytes are never accepted (exit 0). The cases here are few so `cargo test`
//! stays quick; `scripts/fuzz.sh` runs this file with many more (PROPTEST_CASES).

mod common;

use common::tare;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long any command here may take on a loaded 2-core VM before it counts as a hang.
const DEADLINE: Duration = Duration::from_secs(30);

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// Runs `c` with no standard input, killed at the deadline; None when it hung.
fn run(mut c: Command) -> Option<Output> {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("TARE_INPUT_LIMIT", "8MiB")
        .env_remove("TARE_STORE")
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// No panic, no hang, one-line errors; returns the exit code.
fn sane(c: Command, what: &str) -> Result<i32, TestCaseError> {
    let Some(out) = run(c) else {
        return Err(TestCaseError::fail(format!(
            "{what}: still running after {DEADLINE:?}"
        )));
    };
    let err = String::from_utf8_lossy(&out.stderr);
    prop_assert!(!err.contains("panicked"), "{what}: {err}");
    let code = out.status.code().unwrap_or(-1);
    prop_assert!(code >= 0, "{what}: killed by a signal: {err}");
    prop_assert!(code != 101, "{what}: {err}");
    for line in err.lines().filter(|l| l.starts_with("tare: error:")) {
        prop_assert!(
            err.lines()
                .filter(|l| l.starts_with("tare: error:"))
                .count()
                == 1,
            "{what}: more than one error line: {err}"
        );
        prop_assert!(
            line.len() < 4000,
            "{what}: an error line of {} bytes",
            line.len()
        );
    }
    Ok(code)
}

/// Every reader of a file, given `file` (in `dir`, which holds a good results file too).
fn readers(dir: &Path, file: &Path) -> Vec<(String, Command)> {
    let good = data("nasty/results/good.json");
    let f = file.to_str().unwrap().to_string();
    let mut v: Vec<(String, Vec<String>)> = vec![
        (
            "compare".into(),
            vec!["compare".into(), good.to_str().unwrap().into(), f.clone()],
        ),
        ("report".into(), vec!["report".into(), f.clone()]),
        (
            "import".into(),
            vec![
                "import".into(),
                f.clone(),
                "-o".into(),
                dir.join("i.json").to_str().unwrap().into(),
            ],
        ),
        (
            "plan".into(),
            vec!["plan".into(), "--pilot".into(), f.clone()],
        ),
        (
            "recover".into(),
            vec![
                "recover".into(),
                f.clone(),
                "-o".into(),
                dir.join("r.json").to_str().unwrap().into(),
            ],
        ),
        (
            "suite check".into(),
            vec!["suite".into(), "check".into(), f.clone()],
        ),
        (
            "table".into(),
            vec!["table".into(), f.clone(), "--dump".into()],
        ),
        (
            "history add".into(),
            vec![
                "history".into(),
                "--store".into(),
                dir.join("h.sqlite").to_str().unwrap().into(),
                "add".into(),
                "--no-git".into(),
                f.clone(),
            ],
        ),
    ];
    v.drain(..)
        .map(|(name, args)| {
            let mut c = tare();
            c.args(&args).current_dir(dir);
            (name, c)
        })
        .collect()
}

/// Valid files of every format tare reads, to damage.
fn seeds() -> Vec<Vec<u8>> {
    let mut files = vec![
        data("nasty/results/good.json"),
        data("nasty/results/a.json.journal"),
        data("import/gbench/repetitions.json"),
        data("import/go/bench.txt"),
        data("import/hyperfine/two-commands.json"),
        data("import/jmh/avgt-thrpt.json"),
        data("import/pyperf/suite.json"),
        data("import/pytest-benchmark/bench.json"),
    ];
    if let Ok(rd) = std::fs::read_dir(data("nasty/suites")) {
        files.extend(
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .take(3),
        );
    }
    files
        .into_iter()
        .filter_map(|p| std::fs::read(p).ok())
        .collect()
}

/// A damaged copy of a seed: bytes flipped, a cut, a splice of another seed, a repeat.
fn damaged() -> impl Strategy<Value = Vec<u8>> {
    let n = seeds().len();
    (
        0..n,
        0..n,
        any::<u64>(),
        0usize..4,
        prop::collection::vec(any::<u8>(), 0..8),
    )
        .prop_map(move |(a, b, r, how, junk)| {
            let s = seeds();
            let mut x = s[a].clone();
            let at = (r as usize) % (x.len().max(1));
            match how {
                0 => {
                    let len = x.len().max(1);
                    for (i, j) in junk.iter().enumerate() {
                        if let Some(c) = x.get_mut((at + i * 7) % len) {
                            *c ^= j | 1;
                        }
                    }
                }
                1 => x.truncate(at),
                2 => {
                    let y = &s[b];
                    let from = (r as usize >> 16) % (y.len().max(1));
                    x.truncate(at);
                    x.extend_from_slice(&y[from..]);
                }
                _ => {
                    let part = x[at..].to_vec();
                    for _ in 0..50 {
                        x.extend_from_slice(&part);
                    }
                }
            }
            x
        })
}

/// Words an argument list is made of: every subcommand's options and values, and junk.
fn words() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "--runs",
            "-r",
            "2",
            "--warmup",
            "0",
            "--style",
            "none",
            "basic",
            "full",
            "--export-json",
            "out.json",
            "--export-csv",
            "-",
            "--store",
            "default",
            "--alpha",
            "0.05",
            "1e309",
            "-1",
            "--noise-threshold",
            "5%",
            "--fail-if-slower",
            "nan",
            "--shard",
            "0/0",
            "1/2",
            "--html",
            "--time-budget",
            "1s",
            "--cpus",
            "0",
            "0-999",
            "--output",
            "null",
            "--format",
            "jmh",
            "--dump",
            "--quiet",
            "-q",
            "--help",
            "-P",
            "x",
            "1",
            "3",
            "-L",
            "a,b",
            "--",
            "true",
            "false",
            "''",
            "--isolate",
            "--seed",
            "18446744073709551616",
            "--memory-limit",
            "1k",
            "--wall-limit",
            "0s",
            "--invocations",
            "-i",
            "--filter",
            "(",
            "--parameter",
            "=",
            "--name",
            "\u{202e}",
            "%s%n",
        ])
        .prop_map(String::from),
        "[ -~]{0,12}",
    ]
}

fn subcommand() -> impl Strategy<Value = Vec<&'static str>> {
    prop::sample::select(vec![
        vec!["run"],
        vec!["compare"],
        vec!["report"],
        vec!["import"],
        vec!["plan"],
        vec!["recover"],
        vec!["suite", "check"],
        vec!["table"],
        vec!["history", "show"],
        vec!["kernels"],
        vec!["completions"],
    ])
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(6),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Random bytes: every reader refuses them (never exit 0), without panic or hang.
    #[test]
    fn random_bytes_are_refused_by_every_reader(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("input.json");
        std::fs::write(&f, &bytes).unwrap();
        for (name, c) in readers(dir.path(), &f) {
            let code = sane(c, &name)?;
            // An empty store add of nothing readable, or a table of nothing: never "fine".
            prop_assert!(code != 0, "{} accepted {} random bytes", name, bytes.len());
        }
    }

    /// Damaged files of every format: any exit, but no panic, no hang, one-line errors.
    #[test]
    fn damaged_files_of_every_format_end_cleanly(bytes in damaged()) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("input.json");
        std::fs::write(&f, &bytes).unwrap();
        for (name, c) in readers(dir.path(), &f) {
            sane(c, &name)?;
        }
    }

    /// Random argument lists for every subcommand: no panic, no hang.
    #[test]
    fn random_arguments_end_cleanly(sub in subcommand(), args in prop::collection::vec(words(), 0..8)) {
        let dir = tempfile::tempdir().unwrap();
        let mut c = tare();
        c.args(&sub);
        // Whatever a random list measures stays short: two runs (of true or false).
        if sub == ["run"] {
            c.args(["--runs", "2"]);
        }
        c.args(&args).current_dir(dir.path());
        sane(c, &format!("tare {} {}", sub.join(" "), args.join(" ")))?;
    }
}

/// Special files at the path of every reader: a FIFO nobody writes, a symlink loop, a
/// directory, a character device (a zero device made here, when mknod is allowed): each ends
/// within the deadline with a non-zero exit, no panic.
#[test]
fn special_files_end_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("fifo.json");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let lp = d.join("loop.json");
    std::os::unix::fs::symlink(&lp, &lp).unwrap();
    let sub = d.join("dir.json");
    std::fs::create_dir(&sub).unwrap();
    let mut paths = vec![fifo, lp, sub];
    let zero = d.join("zero.json");
    if Command::new("mknod")
        .arg(&zero)
        .args(["c", "1", "5"])
        .status()
        .is_ok_and(|s| s.success())
    {
        paths.push(zero);
    }
    for p in &paths {
        for (name, c) in readers(d, p) {
            let what = format!("{name} {}", p.display());
            match sane(c, &what) {
                Ok(code) => assert_ne!(code, 0, "{what} exited 0"),
                Err(e) => panic!("{e}"),
            }
        }
    }
}
