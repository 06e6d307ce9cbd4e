//! The command line a hyperfine user expects: -N, -S, --shell[=SHELL], --command-name,
//! --output null|pipe|inherit|FILE, --time-unit, --sort, --export-asciidoc/-orgmode,
//! --parameter-step-size; options that never swallow the command; a warning for shell syntax
//! without a shell; sizes without a unit refused; help, completions and the man page.

mod common;
#[path = "common/skip.rs"]
mod skip;

use common::tare;
use std::process::Output;

fn run(args: &[&str]) -> Output {
    tare().args(args).output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn ok(args: &[&str]) -> (String, String) {
    let o = run(args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "tare {args:?}: {err}");
    (out, err)
}

fn usage_error(args: &[&str]) -> String {
    let o = run(args);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "tare {args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn shells_never_swallow_the_command() {
    // --shell alone: /bin/sh, and the next word is the command.
    let (out, _) = ok(&[
        "run",
        "--style",
        "basic",
        "--runs",
        "2",
        "--output",
        "inherit",
        "--shell",
        "echo hi | wc -c",
    ]);
    assert_eq!(out.lines().filter(|l| l.trim() == "3").count(), 2, "{out}");
    // -S takes a shell, as in hyperfine.
    let (out, _) = ok(&[
        "run",
        "--style",
        "basic",
        "--runs",
        "2",
        "--output",
        "inherit",
        "-S",
        "bash",
        "echo $((40 + 2))",
    ]);
    assert!(out.contains("42"), "{out}");
    let (out, _) = ok(&[
        "run",
        "--style",
        "basic",
        "--runs",
        "1",
        "--output",
        "inherit",
        "--shell=sh",
        "echo a && echo b",
    ]);
    assert!(out.contains("a\nb"), "{out}");
    // --heat-up's optional value is given with '=' only.
    let (out, _) = ok(&[
        "run",
        "--style",
        "basic",
        "--runs",
        "1",
        "--heat-up",
        "sleep 0.01",
    ]);
    assert!(out.contains("Benchmark 1: sleep 0.01"), "{out}");
    // --shell bash 'cmd' is caught instead of benchmarking bash.
    let err = usage_error(&["run", "--runs", "1", "--shell", "bash", "true"]);
    assert!(
        err.contains("--shell=bash") && err.contains("-S bash"),
        "{err}"
    );
    // -S with the command in its place.
    let err = usage_error(&["run", "-S", "echo hi | wc -c"]);
    assert!(err.contains("-S sh 'echo hi | wc -c'"), "{err}");
}

#[test]
fn no_shell_spellings_and_the_shell_syntax_warning() {
    for flag in [
        &["-N"][..],
        &["--shell=none"][..],
        &["-S", "none"][..],
        &[][..],
    ] {
        let mut args = vec![
            "run", "--style", "basic", "--runs", "1", "--output", "inherit",
        ];
        args.extend_from_slice(flag);
        args.push("echo hi | wc -c");
        let (out, err) = ok(&args);
        assert!(out.contains("hi | wc -c"), "{flag:?}: {out}");
        assert!(
            err.contains("holds shell syntax (|)") && err.contains("-S sh"),
            "{flag:?}: {err}"
        );
    }
    for (cmd, syntax) in [
        ("echo a > f", ">"),
        ("true && true", "&&"),
        ("echo a; echo b", ";"),
        ("echo *", "*"),
        ("echo $HOME", "$"),
    ] {
        let (_, err) = ok(&["run", "--style", "basic", "--runs", "1", cmd]);
        assert!(
            err.contains(&format!("shell syntax ({syntax})")),
            "{cmd}: {err}"
        );
    }
    // Quoted, or run by a shell: no warning.
    for args in [
        &[
            "run",
            "--style",
            "basic",
            "--runs",
            "1",
            "echo 'a|b' \"$x\"",
        ][..],
        &[
            "run",
            "--style",
            "basic",
            "--runs",
            "1",
            "-S",
            "sh",
            "echo a | cat",
        ][..],
    ] {
        let (_, err) = ok(args);
        assert!(!err.contains("shell syntax"), "{args:?}: {err}");
    }
}

#[test]
fn values_mean_what_they_look_like() {
    let err = usage_error(&["run", "--memory-limit", "512", "true"]);
    assert!(err.contains("did you mean 512MB?"), "{err}");
    ok(&[
        "run",
        "--style",
        "none",
        "--runs",
        "1",
        "--memory-limit",
        "512MB",
        "true",
    ]);
    // --output pipe reads the output through a pipe; no file named pipe appears.
    let dir = tempfile::tempdir().unwrap();
    let o = tare()
        .current_dir(dir.path())
        .args([
            "run",
            "--style",
            "none",
            "--runs",
            "3",
            "--output=pipe",
            "seq 100000",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(!dir.path().join("pipe").exists());
    let o = tare()
        .current_dir(dir.path())
        .args(["run", "--runs", "1", "--output=nul", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("./nul"));
    assert!(!dir.path().join("nul").exists());
    ok(&[
        "run",
        "--style",
        "none",
        "--runs",
        "2",
        "--sleep-between",
        "0ms",
        "true",
    ]);
    // --max-runs below the default minimum lowers the minimum.
    let (out, _) = ok(&["run", "--style", "basic", "--max-runs", "3", "true"]);
    assert!(out.contains("3 runs"), "{out}");
    let err = usage_error(&["run", "--min-runs", "5", "--max-runs", "3", "true"]);
    assert!(err.contains("--min-runs (5)"), "{err}");
}

#[test]
fn hyperfine_names_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    let adoc = dir.path().join("t.adoc");
    let org = dir.path().join("t.org");
    let (out, _) = ok(&[
        "run",
        "--style",
        "basic",
        "--runs",
        "5",
        "--command-name",
        "slow",
        "--command-name",
        "fast",
        "--time-unit",
        "millisecond",
        "--sort",
        "mean-time",
        "--export-asciidoc",
        adoc.to_str().unwrap(),
        "--export-orgmode",
        org.to_str().unwrap(),
        "sleep 0.05",
        "true",
    ]);
    // Sorted fastest first; every time in ms.
    let fast = out.find("Benchmark 2: fast").unwrap();
    let slow = out.find("Benchmark 1: slow").unwrap();
    assert!(fast < slow, "{out}");
    for l in out.lines().filter(|l| {
        let l = l.trim_start();
        l.starts_with("wall time")
            || l.starts_with("CPU time")
            || l.starts_with(|c: char| c.is_ascii_digit())
    }) {
        assert!(
            l.contains(" ms") && !l.contains(" µs") && !l.contains(" s "),
            "{l}"
        );
    }
    let a = std::fs::read_to_string(&adoc).unwrap();
    assert!(
        a.contains("|===") && a.contains("|`slow`") && a.contains(" ms"),
        "{a}"
    );
    let o = std::fs::read_to_string(&org).unwrap();
    assert!(o.contains("| =fast= |") && o.contains("|---+"), "{o}");
    // The tables follow --sort too.
    assert!(o.find("=fast=").unwrap() < o.find("=slow=").unwrap(), "{o}");
    assert!(a.find("`fast`").unwrap() < a.find("`slow`").unwrap(), "{a}");
    // -D's hyperfine spelling.
    let (out, _) = ok(&[
        "run",
        "--style",
        "basic",
        "--runs",
        "1",
        "-P",
        "n",
        "1",
        "3",
        "--parameter-step-size",
        "2",
        "sleep 0.00{n}",
    ]);
    assert!(
        out.contains("sleep 0.001") && out.contains("sleep 0.003") && !out.contains("sleep 0.002")
    );
    // The backend is a documented option.
    let (help, _) = ok(&["run", "--help"]);
    assert!(help.contains("--backend <BACKEND>"), "{help}");
    ok(&[
        "run",
        "--style",
        "none",
        "--runs",
        "1",
        "--backend",
        "rusage",
        "true",
    ]);
}

#[test]
fn output_reads_once() {
    let (out, _) = ok(&["run", "--style", "basic", "--runs", "1", "true"]);
    assert!(out.contains("1 run"), "{out}");
    // The method in one line; in full with --verbose.
    let method: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("Measured with"))
        .collect();
    assert_eq!(method.len(), 1, "{out}");
    assert!(method[0].contains("--verbose"), "{out}");
    let (verbose, _) = ok(&[
        "run",
        "--style",
        "basic",
        "--runs",
        "1",
        "--verbose",
        "true",
    ]);
    assert!(verbose.contains("CPU time = "), "{verbose}");
    // One unit per line of CPU time.
    let cpu = out
        .lines()
        .find(|l| l.trim_start().starts_with("CPU time"))
        .unwrap();
    let units: std::collections::BTreeSet<&str> = cpu
        .split_whitespace()
        .filter(|w| ["s", "ms", "µs", "ns"].contains(w))
        .collect();
    assert_eq!(units.len(), 1, "{cpu}");
    // p-values read as `p = 0.0014` or `p < 0.0001`, never `p = <` or `2.65e-1`.
    let (out, _) = ok(&[
        "run",
        "--style",
        "basic",
        "--runs",
        "12",
        "true",
        "sleep 0.02",
    ]);
    // (The comparison line names its interval and procedure, not a p: the verdict is the
    // interval's; a p, where one is printed, reads as below.)
    assert!(out.contains("slower than true"), "{out}");
    assert!(!out.contains("p = <"), "{out}");
    let exponent = out
        .as_bytes()
        .windows(3)
        .any(|w| w[0].is_ascii_digit() && w[1] == b'e' && (w[2] == b'-' || w[2].is_ascii_digit()));
    assert!(!exponent, "{out}");
    assert_eq!(tare::units::p_phrase(1e-9), "p < 0.0001");
    assert_eq!(tare::units::p_phrase(0.265), "p = 0.27");
}

#[test]
fn help_renders_and_completions_and_man_exist() {
    let (help, _) = ok(&["run", "--help"]);
    assert!(help.contains("'seq {count}'"), "{help}");
    assert!(
        help.contains("-N, --no-shell") && help.contains("-S <SHELL>"),
        "{help}"
    );
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let (script, _) = ok(&["completions", shell]);
        assert!(script.contains("tare"), "{shell}");
        assert!(
            script.contains("replay-setup"),
            "{shell}: run's options completed"
        );
    }
    let (page, _) = ok(&["man"]);
    assert!(
        page.starts_with(".ie") || page.contains(".TH tare 1"),
        "{page}"
    );
    let dir = tempfile::tempdir().unwrap();
    ok(&["man", "--dir", dir.path().to_str().unwrap()]);
    let run_page = std::fs::read_to_string(dir.path().join("tare-run.1")).unwrap();
    assert!(run_page.contains(".TH tare-run 1") && run_page.contains("memory\\-limit"));
    let o = run(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o)
        .1
        .contains("possible values: bash, zsh, fish, powershell, elvish"));
}

#[test]
fn compare_spells_the_test_like_run() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    for p in [&a, &b] {
        ok(&[
            "run",
            "--style",
            "none",
            "--runs",
            "5",
            "-n",
            "gz",
            "--export-json",
            p.to_str().unwrap(),
            "true",
        ]);
    }
    let (out, _) = ok(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--test",
        "welch",
    ]);
    assert!(out.contains("gz"), "{out}");
    // Same names on both sides: the sentence says which is old and which is new.
    assert!(!out.contains("than gz ") && !out.contains("gz/gz"), "{out}");
}

#[test]
fn counters_on_the_terminal_and_in_the_csv() {
    let probe = run(&[
        "run",
        "--style",
        "none",
        "--runs",
        "1",
        "--counters",
        "task-clock,page-faults",
        "true",
    ]);
    if !probe.status.success() {
        skip::skip(
            "perf software events",
            &format!(
                "sysctl kernel.perf_event_paranoid=1 ({})",
                text(&probe).1.trim()
            ),
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("runs.csv");
    let (out, _) = ok(&[
        "run",
        "--style",
        "basic",
        "--runs",
        "3",
        "--counters",
        "task-clock,page-faults",
        "--export-csv",
        csv.to_str().unwrap(),
        "true",
    ]);
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("counters"))
        .expect(&out);
    assert!(
        line.contains("task-clock") && line.contains("page-faults"),
        "{line}"
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "counter_page-faults")
        .expect("counter column");
    for row in lines {
        let v: f64 = row.split(',').nth(col).unwrap().parse().unwrap();
        assert!(v > 0.0, "{row}");
    }
}

#[test]
fn every_stop_rule_has_a_cap_unless_removed() {
    // An unreachable --stop rule ends at --max-runs.
    let (out, _) = ok(&[
        "run",
        "--style",
        "basic",
        "--max-runs",
        "25",
        "--stop",
        "ci(median) < 0.0001%",
        "--verbose",
        "true",
    ]);
    assert!(
        out.contains("25 counted") && out.contains("runs >= 25"),
        "{out}"
    );
    // ... or at the time budget.
    let (out, _) = ok(&[
        "run",
        "--style",
        "basic",
        "--time-budget",
        "300ms",
        "--stop",
        "runs >= 100000",
        "sleep 0.01",
    ]);
    assert!(
        out.contains("time >= 300ms") || out.contains("time >= 0.3"),
        "{out}"
    );
    // --no-cap lets the rule alone decide (here it holds at 12 runs).
    let (out, _) = ok(&[
        "run",
        "--style",
        "basic",
        "--max-runs",
        "5",
        "--no-cap",
        "--stop",
        "runs >= 12",
        "true",
    ]);
    assert!(out.contains("12 runs"), "{out}");
    let o = run(&["run", "--no-cap", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--stop <RULE>"));
}
