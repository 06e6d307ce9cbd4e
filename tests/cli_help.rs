//! One CLI: walks every subcommand's `--help` as a user reads it and fails when an option that
//! several commands share is missing from one of them or spelled differently there (another
//! short name, value name or value set), or when an old spelling is shown instead of the
//! canonical one. Old spellings must still parse (hidden aliases).

mod common;
use common::tare;
use std::collections::BTreeMap;

/// One option as `--help` shows it.
#[derive(Debug, Clone, PartialEq)]
struct Opt {
    short: Option<char>,
    values: Vec<String>,
    possible: Option<String>,
}

fn help(path: &[String]) -> String {
    let out = tare()
        .args(path)
        .arg("--help")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(out.status.success(), "tare {path:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands a help text lists (`help` left out).
fn subcommands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("Commands:") {
            inside = true;
            continue;
        }
        if inside {
            if line.is_empty() || !line.starts_with(' ') {
                break;
            }
            // A name at two spaces; descriptions that wrap are indented further.
            if line.starts_with("  ") && !line.starts_with("   ") {
                let name = line.split_whitespace().next().unwrap().to_string();
                if name != "help" {
                    out.push(name);
                }
            }
        }
    }
    out
}

/// The options of a help text, by long name.
fn options(text: &str) -> BTreeMap<String, Opt> {
    let head = regex::Regex::new(r"^  (?:-(\S), |    )--([A-Za-z0-9-]+)((?: <[^>]+>(?:\.\.\.)?)*)")
        .unwrap();
    let value = regex::Regex::new(r"<([^>]+)>").unwrap();
    let mut out: BTreeMap<String, Opt> = BTreeMap::new();
    let mut current: Option<(String, Opt, String)> = None;
    let finish = |c: Option<(String, Opt, String)>, out: &mut BTreeMap<String, Opt>| {
        if let Some((long, mut opt, body)) = c {
            let body = body.split_whitespace().collect::<Vec<_>>().join(" ");
            opt.possible = body
                .split_once("[possible values: ")
                .map(|(_, v)| v.split(']').next().unwrap().to_string());
            out.insert(long, opt);
        }
    };
    let mut in_options = false;
    for line in text.lines() {
        if line.is_empty() {
            finish(current.take(), &mut out);
            continue;
        }
        if !line.starts_with(' ') {
            // A heading: "Options:" (or a named group of options), "Arguments:", "Examples:".
            finish(current.take(), &mut out);
            in_options = line.ends_with("Options:");
            continue;
        }
        if !in_options {
            continue;
        }
        if let Some(c) = head.captures(line) {
            finish(current.take(), &mut out);
            let long = c[2].to_string();
            let values = value
                .captures_iter(c.get(3).map_or("", |m| m.as_str()))
                .map(|v| v[1].to_string())
                .collect();
            let opt = Opt {
                short: c.get(1).map(|m| m.as_str().chars().next().unwrap()),
                values,
                possible: None,
            };
            current = Some((long, opt, line[c.get(0).unwrap().end()..].to_string()));
        } else if line.starts_with("  -") && !line.starts_with("  --") {
            // A short-only option (`-S <SHELL>`): not shared, not checked.
            finish(current.take(), &mut out);
        } else if let Some((_, _, body)) = current.as_mut() {
            body.push(' ');
            body.push_str(line.trim());
        }
    }
    finish(current.take(), &mut out);
    out
}

/// Every (sub)command path with its options, from `tare --help` down.
fn walk() -> BTreeMap<String, BTreeMap<String, Opt>> {
    let mut all = BTreeMap::new();
    let mut todo: Vec<Vec<String>> = subcommands(&help(&[]))
        .into_iter()
        .map(|s| vec![s])
        .collect();
    while let Some(path) = todo.pop() {
        let text = help(&path);
        for sub in subcommands(&text) {
            let mut p = path.clone();
            p.push(sub);
            todo.push(p);
        }
        all.insert(path.join(" "), options(&text));
    }
    all
}

/// Options several commands share, and the commands that must have each, spelled one way.
const SHARED: &[(&str, &[&str])] = &[
    (
        "--style",
        &[
            "run",
            "kernels",
            "suite run",
            "bias",
            "report",
            "compare",
            "recover",
        ],
    ),
    (
        "--quiet",
        &[
            "run",
            "kernels",
            "suite run",
            "bias",
            "report",
            "compare",
            "recover",
        ],
    ),
    (
        "--export-json",
        &[
            "run",
            "kernels",
            "recover",
            "bias",
            "import",
            "history confirm",
            "bisect",
        ],
    ),
    ("--export-csv", &["run", "kernels", "recover", "table"]),
    (
        "--export-markdown",
        &[
            "run",
            "kernels",
            "recover",
            "history report",
            "history check",
        ],
    ),
    ("--export-asciidoc", &["run", "kernels", "recover"]),
    ("--export-orgmode", &["run", "kernels", "recover"]),
    (
        "--export-html",
        &[
            "run",
            "kernels",
            "recover",
            "report",
            "table",
            "history report",
        ],
    ),
    (
        "--store",
        &["run", "kernels", "history", "history add", "history report"],
    ),
    ("--cores", &["run", "kernels", "bias", "suite exec"]),
    ("--cpus", &["run", "kernels", "bias", "suite exec"]),
    (
        "--backend",
        &["run", "kernels", "bias", "suite run", "suite exec"],
    ),
    ("--parameter-list", &["run", "kernels"]),
    ("--parameter-scan", &["run", "kernels"]),
    ("--parameter-step-size", &["run", "kernels"]),
    ("--output", &["run", "kernels"]),
    ("--show-output", &["run", "kernels", "suite exec"]),
    ("--ignore-failure", &["run", "kernels"]),
    ("--reference", &["run", "kernels"]),
    ("--test", &["run", "compare"]),
    ("--alpha", &["run", "kernels", "compare", "bias"]),
    ("--noise-threshold", &["run", "kernels", "compare"]),
    ("--precision", &["run", "kernels", "plan"]),
    ("--time-budget", &["run", "kernels"]),
    ("--stop", &["run", "kernels"]),
    (
        "--warmup",
        &["run", "kernels", "bias", "history confirm", "bisect"],
    ),
    ("--runs", &["run", "history confirm", "bisect"]),
    ("--seed", &["run", "kernels", "bias", "compare"]),
    ("--randomize", &["run", "kernels"]),
    ("--idle", &["run", "kernels", "suite run"]),
    ("--quiesce", &["run", "kernels", "suite run"]),
    ("--energy", &["run", "kernels"]),
    ("--energy-idle", &["run", "kernels"]),
    ("--name", &["run", "kernels"]),
];

/// Long names that mean different things in different commands, each with the reason it stays.
const DIFFERENT: &[(&str, &str)] = &[
    (
        "--output",
        "run/kernels: where the measured command's output goes (hyperfine's --output); plan: the plan file it writes",
    ),
    (
        "--input",
        "run: the file given to every run as standard input (hyperfine's --input); table: which of a suite's inputs to show",
    ),
    (
        "--benchmark",
        "plan: one benchmark of a pilot, by name or position; history: a substring that selects series",
    ),
    (
        "--metric",
        "each command offers the metrics it can show (report: plots; table: suite CPU or wall; bias: the test; history: a stored series name)",
    ),
    (
        "--baseline",
        "kernels: the kernel every other kernel of the program is compared with inside each process; table: the results file --dump compares against",
    ),
    (
        "--build",
        "run: build-time setups with {seed}/{out}; history confirm/bisect: the build of a commit",
    ),
];

/// Old spellings, kept as hidden aliases: never shown, still accepted.
const OLD: &[(&[&str], &str)] = &[
    (&["report", "--html", "x.html", "missing.json"], "--html"),
    (&["table", "--html", "x.html", "missing"], "--html"),
    (&["table", "--csv", "x.csv", "missing"], "--csv"),
    (&["history", "report", "--html", "x.html"], "--html"),
    (&["history", "check", "--markdown", "-"], "--markdown"),
    (&["import", "-o", "x.json", "missing.json"], "-o"),
    (
        &["import", "--output", "x.json", "missing.json"],
        "--output",
    ),
    (
        &[
            "run",
            "--parameter-step",
            "2",
            "-P",
            "n",
            "1",
            "3",
            "--runs",
            "1",
            "--style",
            "none",
            "true {n}",
        ],
        "--parameter-step",
    ),
    (
        &[
            "kernels",
            "--parameter-step",
            "2",
            "--list",
            "missing-worker",
        ],
        "--parameter-step",
    ),
];

#[test]
fn shared_options_are_everywhere_and_spelled_one_way() {
    let all = walk();
    assert!(all.len() >= 20, "too few commands found: {:?}", all.keys());
    let mut problems = Vec::new();
    for (long, commands) in SHARED {
        let name = long.trim_start_matches("--");
        for c in *commands {
            match all.get(*c) {
                None => problems.push(format!("no command `tare {c}`")),
                Some(opts) if !opts.contains_key(name) => {
                    problems.push(format!("`tare {c}` has no {long}"))
                }
                _ => {}
            }
        }
    }
    // Every long name shown by several commands: one short name, one value name, one value set.
    let mut by_name: BTreeMap<&str, Vec<(&str, &Opt)>> = BTreeMap::new();
    for (c, opts) in &all {
        for (long, o) in opts {
            if long != "help" && long != "version" {
                by_name.entry(long).or_default().push((c, o));
            }
        }
    }
    for (long, uses) in &by_name {
        if DIFFERENT
            .iter()
            .any(|(d, _)| d.trim_start_matches("--") == *long)
        {
            continue;
        }
        let (c0, o0) = uses[0];
        for (c, o) in &uses[1..] {
            if o.short != o0.short || o.values != o0.values || o.possible != o0.possible {
                problems.push(format!(
                    "--{long}: `tare {c0}` shows {o0:?} but `tare {c}` shows {o:?}"
                ));
            }
        }
    }
    // Old spellings are not shown.
    for (c, opts) in &all {
        for old in ["html", "csv", "markdown", "parameter-step", "quiet-mode"] {
            if opts.contains_key(old) {
                problems.push(format!("`tare {c}` shows the old spelling --{old}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn old_spellings_still_parse() {
    let dir = tempfile::tempdir().unwrap();
    for (args, old) in OLD {
        let out = tare().current_dir(dir.path()).args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("unexpected argument") && !err.contains("unrecognized"),
            "{old} no longer parses in tare {args:?}: {err}"
        );
    }
}

#[test]
fn kernels_old_dash_i_count_says_what_to_write() {
    let out = tare()
        .args(["kernels", "-i", "5", "./worker"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("-r 5") && err.contains("--ignore-failure") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn quiet_prints_nothing_on_stdout() {
    let out = tare()
        .args(["run", "-q", "--runs", "2", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn one_benchmark_reads_in_a_few_lines() {
    // hyperfine prints 4 lines for one command; tare's default is as dense: the header, wall
    // time (median, CI, range, runs), CPU time with peak memory, the method; warnings apart.
    let out = tare()
        .args(["run", "--style", "basic", "--runs", "5", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("warning:"))
        .collect();
    assert!(lines.len() <= 4, "{text}");
    assert!(
        lines[1].contains("wall time") && lines[1].contains("5 runs"),
        "{text}"
    );
}

/// A mistyped subcommand gets "a similar subcommand exists", at the top level as below it,
/// also where clap's own similarity finds nothing (swapped letters in a short name; issue 43).
#[test]
fn mistyped_subcommands_are_suggested() {
    for (args, near) in [
        (&["rnu"][..], "'run'"),
        (&["kernles"][..], "'kernels'"),
        (&["history", "shwo"][..], "'show'"),
    ] {
        let out = tare().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("a similar subcommand exists: {near}")),
            "{args:?}: {err}"
        );
    }
    let out = tare().arg("xyzzy").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("similar"), "{err}");
}

#[test]
fn harness_lists_come_from_the_harness_table() {
    let import = help(&["import".to_string()]);
    let native = help(&["native-worker".to_string()]);
    let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let (import, native) = (flat(&import), flat(&native));
    for h in tare::harness::ALL {
        if let Some(i) = &h.import {
            let item = format!("{} ({})", h.name, i.reads);
            assert!(
                import.contains(&item),
                "import --help lacks {item}: {import}"
            );
        }
        if let Some(d) = &h.drive {
            let item = format!("{} ({})", h.name, d.target);
            assert!(
                native.contains(&item),
                "native-worker --help lacks {item}: {native}"
            );
        }
    }
    // A spelling the table gives parses; one it does not is refused with the table's names.
    let out = tare()
        .args(["import", "--format", "google-benchmark", "/nonexistent"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot import /nonexistent"), "{err}");
    let out = tare()
        .args(["import", "--format", "csv", "/nonexistent"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("pyperf"), "{err}");
}
