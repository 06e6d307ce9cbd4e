//! No input crashes tare or is silently accepted (issue 12): the committed corpus of nasty
//! inputs in `tests/data/nasty/` — huge, negative, not-a-number and absurdly nested values,
//! suite files that would write outside `results/`, files that are not what a command reads —
//! each ends with exit 2 and one line saying what is wrong, before any run; never a panic.

mod common;
#[path = "common/skip.rs"]
mod skip;

use common::tare;
use std::path::{Path, PathBuf};
use std::process::Output;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nasty")
}

/// Exit 2, no panic, and tare's own errors on one line.
fn refused(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    if err.starts_with("tare: error:") {
        assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err}");
    } else {
        // clap's own usage errors (a value that looks like a flag).
        assert!(err.starts_with("error:"), "{what}: {err}");
    }
}

#[test]
fn nasty_arguments_are_refused_in_one_line() {
    let text = std::fs::read_to_string(corpus().join("args.jsonl")).unwrap();
    let mut n = 0;
    for line in text.lines() {
        let args: Vec<String> = serde_json::from_str(line).unwrap();
        let mut c = tare();
        c.arg(&args[0]).args(["--style", "none"]).args(&args[1..]);
        let out = c.output().unwrap();
        refused(&out, &line.chars().take(120).collect::<String>());
        n += 1;
    }
    assert!(n >= 30);
}

#[test]
fn nasty_suite_files_are_refused_in_one_line() {
    let mut n = 0;
    for e in std::fs::read_dir(corpus().join("suites"))
        .unwrap()
        .flatten()
    {
        let out = tare()
            .args(["suite", "check"])
            .arg(e.path())
            .output()
            .unwrap();
        refused(&out, &e.path().display().to_string());
        n += 1;
    }
    assert!(n >= 10);
}

#[test]
fn a_suite_never_writes_outside_its_output_directory() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["../../x", "", ".", "..", "a/b", "..x"] {
        let f = dir.path().join("s.toml");
        std::fs::write(
            &f,
            format!(
                "name = {name:?}\n[isolation]\nenabled = false\n[[tool]]\nname = \"t\"\ncommand = \"true {{input}}\"\n[[inputs]]\nname = \"i\"\nfiles = [\"s.toml\"]\n"
            ),
        )
        .unwrap();
        let out = tare()
            .current_dir(dir.path())
            .args(["suite", "run", "-q", "s.toml"])
            .output()
            .unwrap();
        refused(&out, name);
        assert!(!dir.path().join("results").exists(), "{name}");
    }
    assert!(!dir.path().parent().unwrap().join("x").exists());
}

fn results(name: &str) -> PathBuf {
    corpus().join("results").join(name)
}

#[test]
fn compare_and_report_refuse_what_is_not_results_and_say_what_it_is() {
    let good = results("good.json");
    for (file, says) in [
        ("schema-999.json", "schema version 999"),
        ("schema-0.json", "schema version 0"),
        ("negative-times.json", "wall_time -0.15"),
        ("zero-times.json", "wall time of 0 s"),
        ("notjson.txt", "is not JSON"),
        ("binary.bin", "binary data"),
        ("empty.json", "is empty"),
        ("nested.json", "is a JSON array of values"),
        ("a.json.journal", "is a tare journal"),
        ("suite-results.jsonl", "is suite results"),
    ] {
        let bad = results(file);
        for out in [
            tare().arg("compare").arg(&good).arg(&bad).output().unwrap(),
            tare().arg("compare").arg(&bad).arg(&good).output().unwrap(),
            tare().arg("report").arg(&bad).output().unwrap(),
        ] {
            refused(&out, file);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(file) && err.contains(says), "{file}: {err}");
            assert!(
                out.stdout.is_empty(),
                "{file}: nothing printed as if it were fine"
            );
        }
    }
    let ok = tare()
        .arg("compare")
        .arg(&good)
        .arg(&good)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

#[test]
fn table_refuses_what_is_not_suite_results_so_a_ci_gate_cannot_pass_on_the_wrong_file() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("good");
    std::fs::create_dir(&suite).unwrap();
    std::fs::copy(results("suite-results.jsonl"), suite.join("results.jsonl")).unwrap();
    let ok = tare()
        .arg("table")
        .arg(&suite)
        .arg("--dump")
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("results.jsonl"), "").unwrap();
    for (bad, says) in [
        (results("notjson.txt"), "is not JSON"),
        (results("good.json"), "results of `tare run`"),
        (results("binary.bin"), "binary data"),
        (results("a.json.journal"), "tare journal"),
        (empty.clone(), "empty"),
        (dir.path().join("missing"), "cannot read"),
    ] {
        let out = tare()
            .arg("table")
            .arg(&suite)
            .arg(&bad)
            .arg("--dump")
            .output()
            .unwrap();
        refused(&out, &bad.display().to_string());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{}: {err}", bad.display());
    }
}

#[test]
fn a_session_without_a_counted_run_does_not_exit_0() {
    let out = tare()
        .args([
            "run",
            "--style",
            "none",
            "-i",
            "--runs",
            "3",
            "--wall-limit",
            "0.05",
            "--",
            "sleep",
            "5",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("no counted run"), "{err}");
}

/// A character device like /dev/zero, made in a temporary directory.
fn zero_device(dir: &Path) -> Option<PathBuf> {
    if !common::is_root() {
        return None;
    }
    let p = dir.join("zero");
    common::nodes::mknod_char(&p, 1, 5).ok().map(|()| p)
}

fn results_file(dir: &Path) -> PathBuf {
    let r = dir.join("r.json");
    let out = tare()
        .args(["run", "--style", "none", "--runs", "3", "--export-json"])
        .arg(&r)
        .arg("true")
        .output()
        .unwrap();
    assert!(out.status.success());
    r
}

#[test]
fn an_endless_device_is_refused_at_the_input_limit_by_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let Some(zero) = zero_device(dir.path()) else {
        return skip::skip("root", "mknod needs CAP_MKNOD; run the tests as root");
    };
    let r = results_file(dir.path());
    let z = zero.to_str().unwrap();
    let rs = r.to_str().unwrap();
    let od = dir.path().join("out");
    let od = od.to_str().unwrap();
    for args in [
        vec!["compare", z, rs],
        vec!["compare", rs, z],
        vec!["import", z],
        vec!["report", z],
        vec!["plan", "--pilot", z],
        vec!["recover", z],
        vec!["suite", "run", "--output-dir", od, z],
        vec!["suite", "check", z],
    ] {
        let out = tare()
            .env("TARE_INPUT_LIMIT", "4MiB")
            .args(&args)
            .output()
            .unwrap();
        refused(&out, &args.join(" "));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(z), "{args:?}: {err}");
    }
    // The limit itself: a results file above it is refused before it is read, below it read.
    let out = tare()
        .env("TARE_INPUT_LIMIT", "100B")
        .args(["compare", rs, rs])
        .output()
        .unwrap();
    refused(&out, "compare over the limit");
    assert!(String::from_utf8_lossy(&out.stderr).contains("TARE_INPUT_LIMIT"));
}

#[test]
fn an_endless_fifo_is_refused_at_the_input_limit() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("endless");
    common::nodes::mkfifo(&fifo);
    // An endless writer: stops when the reader goes away (EPIPE; Rust ignores SIGPIPE).
    let writer = {
        let p = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            let chunk = vec![b'{'; 1 << 16];
            let mut sent = 0u64;
            while f.write_all(&chunk).is_ok() {
                sent += chunk.len() as u64;
            }
            sent
        })
    };
    let out = tare()
        .env("TARE_INPUT_LIMIT", "8MiB")
        .arg("import")
        .arg(&fifo)
        .output()
        .unwrap();
    refused(&out, "import of an endless FIFO");
    let sent = writer.join().unwrap();
    assert!(
        sent <= 16 << 20,
        "tare read {sent} bytes past its 8 MiB limit"
    );
}

/// At the default limit (1 GiB), garbage is refused from its first block rather than read to
/// the limit: a sparse 1 GiB file (all NUL bytes), and an endless `[0,0,0,…` on a FIFO, of
/// which tare reads no more than a few MB.
#[test]
fn garbage_is_refused_from_its_first_block_at_the_default_limit() {
    let dir = tempfile::tempdir().unwrap();
    let sparse = dir.path().join("sparse.json");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    for cmd in ["compare", "import", "report"] {
        let mut c = tare();
        c.env_remove("TARE_INPUT_LIMIT").arg(cmd).arg(&sparse);
        if cmd == "compare" {
            c.arg(&sparse);
        }
        let out = c.output().unwrap();
        refused(&out, cmd);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("is binary data, not text (a NUL byte at offset 0)"),
            "{cmd}: {err}"
        );
    }
    for cmd in ["import", "compare"] {
        let fifo = dir.path().join(format!("zeros-{cmd}"));
        common::nodes::mkfifo(&fifo);
        let writer = {
            let p = fifo.clone();
            std::thread::spawn(move || {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
                let mut sent = 0u64;
                let chunk = "0,".repeat(1 << 15);
                if f.write_all(b"[").is_ok() {
                    while f.write_all(chunk.as_bytes()).is_ok() {
                        sent += chunk.len() as u64;
                    }
                }
                sent
            })
        };
        let mut c = tare();
        c.env_remove("TARE_INPUT_LIMIT").arg(cmd).arg(&fifo);
        if cmd == "compare" {
            c.arg(&fifo);
        }
        let out = c.output().unwrap();
        refused(&out, cmd);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&fifo.display().to_string()) && err.contains("is a JSON array of values"),
            "{cmd}: {err}"
        );
        let sent = writer.join().unwrap();
        assert!(sent <= 4 << 20, "{cmd}: tare read {sent} bytes of garbage");
    }
}
