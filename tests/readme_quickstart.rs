//! The README's quickstart works as written: every command of its first `sh` block runs with
//! the built binary as `tare`, in a fresh directory, and succeeds.

use std::process::Command;

fn quickstart_commands() -> Vec<String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme
        .split("## Quickstart")
        .nth(1)
        .expect("README has a Quickstart section");
    let block = section
        .split("```sh")
        .nth(1)
        .expect("Quickstart has an sh block");
    let block = block.split("```").next().unwrap();
    block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

#[test]
fn quickstart_commands_succeed() {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_tare"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dir = tempfile::tempdir().unwrap();
    let commands = quickstart_commands();
    assert!(commands.len() >= 3, "{commands:?}");
    for cmd in commands {
        assert!(
            cmd.starts_with("tare "),
            "quickstart lines are tare commands: {cmd}"
        );
        let out = Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "`{cmd}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // What the README says each prints.
        let stdout = String::from_utf8_lossy(&out.stdout);
        for part in [
            "Benchmark 1:",
            "wall time",
            "CPU time",
            "user ",
            "peak memory",
            " runs",
        ] {
            assert!(
                stdout.contains(part),
                "`{cmd}` printed no '{part}': {stdout}"
            );
        }
        if cmd.contains("gzip -1") {
            // Labelled by what tells the commands apart, as the README shows.
            assert!(
                (stdout.contains("gzip -9 is") && stdout.contains("than gzip -1 (95% CI"))
                    || stdout.contains("(gzip -9/gzip -1 95% CI"),
                "{stdout}"
            );
            // The verdict is the interval's (issue 43): the words say which side of 1 it lies.
            assert!(
                stdout.contains("× slower than")
                    || stdout.contains("× faster than")
                    || stdout.contains("includes 1")
                    || stdout.contains("equal within noise")
                    || stdout.contains("below the noise threshold"),
                "{stdout}"
            );
        }
    }
    assert!(dir.path().join("results.json").exists() && dir.path().join("runs.csv").exists());
}

/// Every flag on the tare side of the guide's hyperfine table (docs/guide/running.md) is one
/// `tare run` takes.
#[test]
fn hyperfine_table_flags_exist() {
    let running = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/guide/running.md"
    ))
    .unwrap();
    let table = running
        .split("Coming from hyperfine?")
        .nth(1)
        .expect("docs/guide/running.md has the hyperfine table")
        .split("\n\n")
        .nth(1)
        .unwrap();
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_tare"))
        .args(["run", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let mut checked = 0;
    for row in table.lines().skip(2) {
        let cells: Vec<&str> = row.split(" | ").collect();
        for flag in cells[0]
            .split(['`', ' ', '/', ','])
            .filter(|w| w.starts_with("--") || (w.len() == 2 && w.starts_with('-')))
        {
            if cells[1].starts_with("same") {
                let flag = flag.split('=').next().unwrap();
                assert!(
                    help.contains(flag),
                    "hyperfine's {flag} is not in tare run --help"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "{checked}");
}
