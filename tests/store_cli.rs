//! `tare run --store` and `tare history …` as a user runs them: in a real git repository made
//! in a temporary directory, on SQLite and on the PostgreSQL test server. Checks what is
//! stored (commits from git, every run), the views, the CI gate's exit codes (1 on a new
//! regression alert, 0 once it is known), alert lifecycle commands, rebuild from files, and
//! one-line errors.

mod common;
mod store_support;

use std::path::Path;
use std::process::{Command, Output};
use store_support::*;

use common::tare_in as tare;

fn tare_env(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    common::tare()
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("TARE_STORE")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

use common::text;

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(st.status.success(), "git {args:?}: {}", text(&st));
}

#[test]
fn run_store_reads_the_commit_from_git_and_keeps_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q"]);
    std::fs::write(d.join("f"), "1").unwrap();
    git(d, &["add", "f"]);
    git(d, &["commit", "-qm", "first"]);
    for (i, name) in ["a.json", "b.json"].iter().enumerate() {
        let o = tare(
            d,
            &[
                "run",
                "--store",
                "default",
                "--style",
                "none",
                "--runs",
                "4",
                "-n",
                "true",
                "--export-json",
                name,
                "true",
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("stored 4 runs"), "{}", text(&o));
        if i == 0 {
            std::fs::write(d.join("f"), "2").unwrap();
            git(d, &["commit", "-qam", "second"]);
        }
    }
    // The default store is .tare/history.sqlite in the repository.
    assert!(d.join(".tare/history.sqlite").exists());
    let o = tare(d, &["history", "info"]);
    assert!(
        text(&o).contains("2 commits, 1 machines, 2 sessions, 1 benchmarks, 8 runs"),
        "{}",
        text(&o)
    );
    let o = tare(d, &["history", "show"]);
    let t = text(&o);
    assert!(
        o.status.success() && t.contains("true · wall_time") && t.contains("2 commits"),
        "{t}"
    );
    // The results file records the commit: a rebuild from the files gives the same store.
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("a.json")).unwrap()).unwrap();
    assert_eq!(json["extra"]["git"]["subject"], "first");
    let o = tare(
        d,
        &[
            "history",
            "--store",
            "other.sqlite",
            "rebuild",
            "a.json",
            "b.json",
            "--no-git",
        ],
    );
    assert!(
        o.status.success() && text(&o).contains("rebuilt from 2 sessions (8 runs)"),
        "{}",
        text(&o)
    );
    let o = tare(d, &["history", "--store", "other.sqlite", "info"]);
    assert!(text(&o).contains("2 commits"), "{}", text(&o));
    // Adding again changes nothing.
    let o = tare(d, &["history", "--store", "other.sqlite", "add", "a.json"]);
    assert!(
        text(&o).contains("added 0 sessions (0 runs); 1 already stored"),
        "{}",
        text(&o)
    );
}

/// Writes a series of results files: 24 commits, the wall time 15% higher from commit 16.
fn series_files(dir: &Path) -> Vec<String> {
    let base = fixture();
    (0..24)
        .map(|i| {
            let s = session_at(&base, i, if i >= 16 { 1.15 } else { 1.0 } * noise(i));
            let name = format!("r{i:02}.json");
            std::fs::write(dir.join(&name), serde_json::to_vec(&s).unwrap()).unwrap();
            name
        })
        .collect()
}

fn gate_flow(d: &Path, store: &str) {
    let files = series_files(d);
    for (i, f) in files.iter().enumerate() {
        let hash = commit(i).hash;
        let o = tare(
            d,
            &[
                "history", "--store", store, "add", f, "--commit", &hash, "--branch", "main",
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
    }
    // The CI gate: exit 1 on new regression alerts, naming them.
    let o = tare(
        d,
        &[
            "history",
            "--store",
            store,
            "check",
            "--markdown",
            "summary.md",
        ],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("new alert #1") && t.contains("regression"),
        "{t}"
    );
    let md = std::fs::read_to_string(d.join("summary.md")).unwrap();
    assert!(
        md.contains("| #1 | sleep 0.01 | wall_time") && md.contains("🆕"),
        "{md}"
    );
    // Known now: exit 0.
    let o = tare(d, &["history", "--store", store, "check"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = tare(d, &["history", "--store", store, "alerts"]);
    let t = text(&o);
    assert!(
        t.contains("#1 new sleep 0.01") && t.contains("#2 new sleep 0.012"),
        "{t}"
    );
    let o = tare(
        d,
        &[
            "history", "--store", store, "alert", "1", "ack", "--note", "known",
        ],
    );
    assert!(
        o.status.success() && text(&o).contains("alert #1 is acknowledged"),
        "{}",
        text(&o)
    );
    let o = tare(d, &["history", "--store", store, "alert", "2", "dismissed"]);
    assert!(o.status.success());
    let o = tare(d, &["history", "--store", store, "alerts"]);
    assert!(
        text(&o).contains("#1 acknowledged") && !text(&o).contains("#2"),
        "{}",
        text(&o)
    );
    let o = tare(d, &["history", "--store", store, "alert", "77", "fixed"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).starts_with("tare: error: there is no alert #77"),
        "{}",
        text(&o)
    );
    let o = tare(d, &["history", "--store", store, "alert", "1", "closed"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // The views.
    let o = tare(
        d,
        &[
            "history", "--store", store, "show", "--last", "5", "-b", "0.012",
        ],
    );
    let t = text(&o);
    assert!(
        t.contains("sleep 0.012 · wall_time") && !t.lines().any(|l| l.starts_with("sleep 0.01 ·")),
        "{t}"
    );
    // Every open alert is listed all the same, of the series not shown too.
    assert!(
        t.contains("open alerts (1, every metric):\n  #1 acknowledged sleep 0.01 · wall_time"),
        "{t}"
    );
    assert!(
        t.contains("change at") && t.contains("regression") && t.contains("alert #2 dismissed"),
        "{t}"
    );
    let o = tare(
        d,
        &[
            "history",
            "--store",
            store,
            "report",
            "--html",
            "h.html",
            "--markdown",
            "-",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(d.join("h.html")).unwrap();
    assert!(
        html.contains("id=\"trend-0\"") && html.contains("class=\"cp\""),
        "no trend or change point"
    );
    assert!(
        html.contains("href=\"#p-0-16\""),
        "the change point links to its commit's row"
    );
    assert!(
        html.contains("/r16.json"),
        "commits link to their results files"
    );
    assert!(
        !html.contains("https://") && !html.contains("<script src"),
        "external resource"
    );
}

#[test]
fn check_gates_on_new_alerts_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    gate_flow(dir.path(), "h.sqlite");
}

#[test]
fn check_gates_on_new_alerts_postgresql() {
    let Some(base) = pg_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    gate_flow(dir.path(), &pg_schema(&base, "cli_gate"));
}

#[test]
fn errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("bad.json"), "{}").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["history", "--store", "s.sqlite", "add", "bad.json"],
            "bad.json is not a tare results file",
        ),
        (
            vec!["history", "--store", "s.sqlite", "add", "missing.json"],
            "cannot read results file missing.json",
        ),
        (
            vec![
                "history",
                "--store",
                "postgresql://nobody:pw@127.0.0.1:1/none",
                "info",
            ],
            "cannot connect to the PostgreSQL store postgresql://nobody:***@127.0.0.1:1/none",
        ),
        (
            vec![
                "history", "--store", "s.sqlite", "show", "--metric", "speed",
            ],
            "--metric speed: give one of",
        ),
        (
            vec!["history", "--store", "s.sqlite", "report"],
            "say what to write",
        ),
        (
            vec![
                "run",
                "--store=postgresql://nobody:pw@127.0.0.1:1/none",
                "--runs",
                "2",
                "true",
            ],
            "cannot connect to the PostgreSQL store",
        ),
    ];
    for (args, want) in cases {
        let o = tare(d, &args);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("tare: error: ") && err.contains(want),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    // A file that is not SQLite.
    std::fs::write(
        d.join("not.sqlite"),
        "hello, this is text and not a database file at all......",
    )
    .unwrap();
    let o = tare(d, &["history", "--store", "not.sqlite", "info"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not.sqlite"), "{}", text(&o));
    // A store path that is a FIFO, a device (made here, as root), a directory or a link to a
    // FIFO: refused in one line naming what it is, nothing read from it or written into it.
    for cmd in ["mkfifo fifo", "mknod null c 1 3"] {
        let st = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(d)
            .status()
            .unwrap();
        assert!(st.success(), "{cmd}");
    }
    std::fs::create_dir(d.join("adir")).unwrap();
    std::os::unix::fs::symlink(d.join("fifo"), d.join("tofifo")).unwrap();
    for (store, kind) in [
        ("fifo", "a FIFO"),
        ("null", "a character device"),
        ("adir", "a directory"),
        ("tofifo", "a FIFO"),
    ] {
        for args in [
            vec!["history", "--store", store, "info"],
            vec!["serve", "--store", store, "--listen", "127.0.0.1:0"],
        ] {
            let o = tare(d, &args);
            let err = String::from_utf8_lossy(&o.stderr).to_string();
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.starts_with("tare: error: ")
                    && err.contains(&format!("the store {store} is {kind}")),
                "{args:?}: {err}"
            );
            assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        }
    }
    assert!(!d.join("fifo-wal").exists() && !d.join("adir").join("x").exists());
}

/// Issue 24: `--store` takes its value as every option does (`--store PATH`; it once swallowed
/// nothing and ran the path as the command), and `--store=~/x` means $HOME/x (the shell does
/// not expand `~` after `=`; tare once made a directory named `~`).
#[test]
fn store_takes_a_value_and_expands_home() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = d.join("home");
    std::fs::create_dir(&home).unwrap();
    let store = d.join("h.sqlite");
    let o = tare(
        d,
        &[
            "run",
            "--store",
            store.to_str().unwrap(),
            "--style",
            "none",
            "--runs",
            "3",
            "true",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(store.is_file(), "no store at {}", store.display());
    let o = tare_env(
        d,
        &[("HOME", home.to_str().unwrap())],
        &[
            "run",
            "--store=~/x.sqlite",
            "--style",
            "none",
            "--runs",
            "3",
            "true",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(home.join("x.sqlite").is_file());
    assert!(!d.join("~").exists(), "a directory named ~ was made");
    let o = tare(d, &["history", "--store", "~nobody/x.sqlite", "info"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is not expanded here"), "{err}");
    assert!(!d.join("~nobody").exists());
}
