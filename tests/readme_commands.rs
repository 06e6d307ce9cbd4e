//! The user guide's command blocks (docs/guide/, the README's sections before they moved) run as written, in a scratch directory,
//! with only its placeholders filled in: `./a`, `./b`, `./prog` (programs of your own) become
//! `true` and `/bin/true`, `SEED` a seed recorded in the pilot, and `before.json`/`after.json`
//! /`old.json`/`new.json` are made first; the import block's inputs are copies of the committed
//! fixtures in `tests/data/import/`. Lines that need a build system (`--build`) or a
//! suite's tools are covered by `tests/setup_build.rs` and `tests/suite_example.rs`.

mod common;
#[path = "common/skip.rs"]
mod skip;

use std::path::Path;
use std::process::Command;

/// The lines of the first `sh` block of the guide's chapter `page` (docs/guide/PAGE, the
/// sections the README held before it moved them to the guide).
fn block(page: &str) -> Vec<String> {
    let path = format!("{}/docs/guide/{page}", env!("CARGO_MANIFEST_DIR"));
    let section = std::fs::read_to_string(&path).expect(&path);
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
    // The compare block's sides of several files: directories and copies of the two.
    for (side, from) in [("old", "old.json"), ("new", "new.json")] {
        std::fs::create_dir(dir.path().join(side)).unwrap();
        for k in 1..=2 {
            let f = dir.path().join(from);
            std::fs::copy(&f, dir.path().join(side).join(format!("{k}.json"))).unwrap();
            let flat = format!("{}{k}.json", if side == "old" { "a" } else { "b" });
            std::fs::copy(&f, dir.path().join(flat)).unwrap();
        }
    }
    for line in block("reports.md") {
        let out = sh(dir.path(), &line);
        assert!(
            out.status.success(),
            "`{line}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(dir.path().join("report.html").exists() && dir.path().join("cmp.html").exists());
    assert!(std::fs::read_dir(dir.path().join("plots")).unwrap().count() > 0);
    for line in block("comparing.md")
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
            stdout.contains("old mean") && stdout.contains("gz"),
            "{stdout}"
        );
    }
}

#[test]
fn setups_block_as_written() {
    if !aslr_possible() {
        skip::skip("ASLR enabled", "sysctl kernel.randomize_va_space=2");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut seed = String::new();
    for line in block("setups.md") {
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

/// The import block runs on the committed fixtures made by the real tools
/// (`tests/data/import/`): two `go test -bench` outputs and Criterion's data directory.
#[test]
fn import_block_as_written() {
    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                copy_dir(&e.path(), &to.join(e.file_name()));
            } else {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(data.join("go/bench.txt"), dir.path().join("bench-old.txt")).unwrap();
    std::fs::copy(
        data.join("go/bench-again.txt"),
        dir.path().join("bench-new.txt"),
    )
    .unwrap();
    copy_dir(
        &data.join("criterion/criterion"),
        &dir.path().join("target/criterion"),
    );
    let lines = block("importing.md");
    assert!(lines.len() >= 4, "{lines:?}");
    for line in lines {
        let out = sh(dir.path(), &line);
        let ok = if line.starts_with("tare compare") {
            // 0: no regression beyond 5%; 1: one (two runs of the same code may differ).
            matches!(out.status.code(), Some(0 | 1))
        } else {
            out.status.success()
        };
        assert!(ok, "`{line}`: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(dir.path().join("criterion.html").exists());
}

/// The cross-language kernels line runs as written from the repository root (where its
/// `examples/kernels/blur/<lang>/build.sh` paths are), its HTML report going to a scratch
/// directory. Needs the seven merged examples: a missing one fails naming it.
#[test]
fn kernels_block_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    for lang in ["c", "cpp", "python", "rust", "go", "java", "js"] {
        let build = root.join(format!("examples/kernels/blur/{lang}/build.sh"));
        assert!(
            build.is_file(),
            "{} is missing: the guide's kernels line needs every client's blur example merged",
            build.display()
        );
    }
    let html = dir.path().join("blur.html");
    for line in block("kernels.md") {
        let line = line.replace("blur.html", html.to_str().unwrap());
        let out = sh(root, &line);
        assert!(
            out.status.success(),
            "`{line}`: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("size=64"), "{stdout}");
    }
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .contains("blur/java"));
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
    for line in block("history.md") {
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
