//! The README's command blocks beyond the quickstart run as written, in a scratch directory,
//! with only its placeholders filled in: `./a`, `./b`, `./prog` (programs of your own) become
//! `true` and `/bin/true`, `SEED` a seed recorded in the pilot, and `before.json`/`after.json`
//! /`old.json`/`new.json` are made first. Lines that need a build system (`--build`) or a
//! suite's tools are covered by `tests/setup_build.rs` and `tests/suite_example.rs`.

mod common;

use std::path::Path;
use std::process::Command;

/// The lines of the first `sh` block after `heading`.
fn block(heading: &str) -> Vec<String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme.split(heading).nth(1).expect(heading);
    let body = section
        .split("```sh")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    body.lines()
        .map(|l| l.split("  #").next().unwrap().trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn sh(dir: &Path, cmd: &str) -> std::process::Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_tare"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn fill(line: &str, seed: &str) -> String {
    line.replace("./a ./b", "true /bin/true")
        .replace("./a", "true")
        .replace("./prog", "true")
        .replace("SEED", seed)
}

fn aslr_possible() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/randomize_va_space").is_ok_and(|s| s.trim() != "0")
}

#[test]
fn reports_and_comparisons_as_written() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["before.json", "after.json", "old.json", "new.json"] {
        let out = sh(dir.path(), &format!("tare run --style none --runs 10 -n gz --export-json {name} 'gzip -1 -c /etc/services'"));
        assert!(out.status.success());
    }
    for line in block("## Reports") {
        let out = sh(dir.path(), &line);
        assert!(
            out.status.success(),
            "`{line}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(dir.path().join("report.html").exists() && dir.path().join("cmp.html").exists());
    assert!(std::fs::read_dir(dir.path().join("plots")).unwrap().count() > 0);
    for line in block("## Comparing commands")
        .into_iter()
        .filter(|l| l.starts_with("tare compare"))
    {
        let out = sh(dir.path(), &line);
        // 0: no regression beyond 5%; 1: one (the same command twice rarely is).
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "`{line}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("old median") && stdout.contains("gz"),
            "{stdout}"
        );
    }
}

#[test]
fn setups_block_as_written() {
    if !aslr_possible() {
        eprintln!("skipped: ASLR is off here, and the block randomizes it");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut seed = String::new();
    for line in block("## Setups and measurement bias") {
        if line.contains("--build") {
            continue;
        }
        let line = fill(&line, &seed);
        let out = sh(dir.path(), &line);
        assert!(
            out.status.success(),
            "`{line}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if line.contains("pilot.json ") && seed.is_empty() {
            let doc: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(dir.path().join("pilot.json")).unwrap(),
            )
            .unwrap();
            seed = doc["benchmarks"][0]["runs"][7]["extra"]["setup"]["seed"]
                .as_u64()
                .unwrap()
                .to_string();
        }
    }
    assert!(dir.path().join("plan.json").exists());
}

/// The History block, in a git repository made for it (a tag `v1.2`, `data.txt`, a results
/// file in `old-results/`). `confirm` and `bisect` need a build system and a real slowdown:
/// they are covered by `tests/store_bisect.rs`; `check` may exit 1 (a new alert) by design.
#[test]
fn history_block_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for cmd in [
        "git init -q",
        "git -c user.name=t -c user.email=t@example.org commit -q --allow-empty -m first",
        "git tag v1.2",
        "seq 2000 | sort -R > data.txt",
        "mkdir old-results",
        "tare run --style none --runs 10 -n sort --export-json old-results/a.json 'sort -n data.txt'",
    ] {
        let out = sh(d, cmd);
        assert!(out.status.success(), "`{cmd}`: {}", String::from_utf8_lossy(&out.stderr));
    }
    let mut ran = 0;
    for line in block("## History") {
        if line.contains(" confirm ") || line.starts_with("tare bisect") {
            continue;
        }
        let out = sh(d, &line);
        let ok = if line.starts_with("tare history check") {
            matches!(out.status.code(), Some(0 | 1))
        } else {
            out.status.success()
        };
        assert!(ok, "`{line}`: {}", String::from_utf8_lossy(&out.stderr));
        ran += 1;
    }
    assert!(ran >= 6, "the block has {ran} runnable lines");
    assert!(d.join(".tare/history.sqlite").exists());
    assert!(d.join("history.html").exists() && d.join("summary.md").exists());
    let out = sh(d, "tare history info");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2 sessions"), "{text}");
}
