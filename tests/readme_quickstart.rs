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
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Benchmark 1:"),
            "{cmd}"
        );
    }
    assert!(dir.path().join("results.json").exists() && dir.path().join("runs.csv").exists());
}
