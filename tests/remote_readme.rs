//! The user guide's "Shards and Slurm" and "Remote hosts" command blocks (docs/guide/) run as written, in a
//! scratch directory that links `examples/` from the repository. The Slurm lines need a
//! cluster (skipped without one, a failure under CI=true, as in `tests/slurm_suite.rs`); the
//! remote lines run against the sshd in a network namespace of `tests/remote_ssh.rs`, with
//! `bench@quiet-box` replaced by that server (and its ssh config and the tare under test) and
//! `/srv/tare` by the scratch directory.

mod remote_support;
use remote_support::skip;

use remote_support::sshd::Sshd;
use remote_support::*;
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
    let bin = Path::new(env!("CARGO_BIN_EXE_tare")).parent().unwrap();
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn scratch_with_examples(name: &str) -> std::path::PathBuf {
    let d = scratch(name);
    std::os::unix::fs::symlink(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"),
        d.join("examples"),
    )
    .unwrap();
    d
}

fn slurm_ready() -> bool {
    let ok = have("sbatch")
        && Command::new("sinfo")
            .args(["-h", "-o", "%T"])
            .output()
            .is_ok_and(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .any(|l| ["idle", "mixed", "allocated"].contains(&l.trim()))
            });
    assert!(ok || !ci(), "CI=true but no Slurm cluster answers sinfo");
    ok
}

#[test]
fn shards_and_slurm_block_as_written() {
    if !suite_possible() {
        return;
    }
    let dir = scratch_with_examples("readme-shards");
    let slurm = slurm_ready();
    for line in block("shards.md") {
        if !slurm && (line.contains("--slurm") || line.contains("on-slurm")) {
            skip::skip(
                "a Slurm cluster",
                &format!("run .ci/services.d/30-slurm.sh as root (for `{line}`)"),
            );
            continue;
        }
        let o = sh(&dir, &line);
        assert!(o.status.success(), "`{line}`: {}", stderr(&o));
    }
    let csv = std::fs::read_to_string(dir.join("sharded.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "four inputs and the header: {csv}");
    if slurm {
        let on = std::fs::read_to_string(dir.join("on-slurm.csv")).unwrap();
        // Same rows and statuses; times differ.
        let statuses = |t: &str| -> Vec<String> {
            t.lines()
                .map(|l| l.split(',').take(4).collect::<Vec<_>>().join(","))
                .collect()
        };
        assert_eq!(statuses(&on), statuses(&csv));
    }
}

#[test]
fn remote_hosts_block_as_written() {
    if !Sshd::possible() || !suite_possible() {
        return;
    }
    let s = Sshd::start();
    let dir = scratch_with_examples("readme-remote");
    let host = format!(
        "tare-remote {} --remote-tare {}",
        s.ssh_option(),
        env!("CARGO_BIN_EXE_tare")
    );
    for line in block("remote-hosts.md") {
        let line = line
            .replace("bench@quiet-box", &host)
            .replace("/srv/tare", &dir.to_string_lossy());
        let o = sh(&dir, &line);
        assert!(o.status.success(), "`{line}`: {}", stderr(&o));
    }
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("remote.json")).unwrap()).unwrap();
    assert_eq!(doc["extra"]["remote"]["host"], "tare-remote");
    assert_eq!(categories(&dir.join("results/remote")).len(), 40);
}
