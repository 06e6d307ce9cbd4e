//! The result-file collector against a hostile tool, as root, through real isolated suite
//! runs (issue 23): a tool that plants a set-user-ID copy of bash, one that links a folder
//! holding a host secret into its work directory, and one that leaves a sparse 1 GiB file, a
//! big file and a big log. `TARE_COLLECTOR_BIN` runs them with another tare binary (how the
//! "before" column of docs/isolation.md was taken). Skipped (with a message) when not root.

#[path = "common/skip.rs"]
mod skip;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

fn tare() -> PathBuf {
    std::env::var_os("TARE_COLLECTOR_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tare")))
}

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("collector-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("in")).unwrap();
    std::fs::write(d.join("in/a.txt"), "a").unwrap();
    d
}

/// Runs a one-tool suite whose command is `sh -c SCRIPT`, with `extra` TOML appended; returns
/// the output directory and the one record.
fn suite(
    d: &Path,
    script: &str,
    extra: &str,
    env: &[(&str, &str)],
) -> (PathBuf, serde_json::Value) {
    std::fs::write(
        d.join("s.toml"),
        format!(
            "[[tool]]\nname = \"t\"\ncommand = \"sh -c '{script}'\"\n[[inputs]]\nname = \"x\"\nfiles = [\"in/*.txt\"]\n{extra}\n"
        ),
    )
    .unwrap();
    let out = d.join("out");
    let mut cmd = Command::new(tare());
    cmd.args(["suite", "run", "-q", "--output-dir"])
        .arg(&out)
        .arg(d.join("s.toml"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let rec: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    (out, rec)
}

/// Every file below `dir` (not following links), relative.
fn tree(dir: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let mut v = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                v.push((e.path().strip_prefix(dir).unwrap().to_path_buf(), m));
            }
        }
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn a_set_user_id_copy_of_bash_comes_out_without_set_id_bits_and_owned_by_the_sudo_user() {
    if !root() {
        skip::skip(
            "root (namespaces)",
            "run the tests as root (sudo -E cargo test)",
        );
        return;
    }
    let d = dir("suid");
    let (out, rec) = suite(
        &d,
        "cp /bin/bash out.suid; chmod 4755 out.suid; cp /bin/true out.sgid; chmod 2755 out.sgid",
        "[isolation]\nresult_files = [\"out.*\"]",
        &[("SUDO_UID", "65534"), ("SUDO_GID", "65534")],
    );
    let files = tree(&out.join("files"));
    eprintln!(
        "modes: {:?}",
        files
            .iter()
            .map(|(p, m)| format!("{} {:o} uid {}", p.display(), m.mode(), m.uid()))
            .collect::<Vec<_>>()
    );
    assert_eq!(files.len(), 2, "{rec}");
    for (p, m) in &files {
        assert!(m.is_file(), "{}", p.display());
        assert_eq!(m.mode() & 0o7000, 0, "{} keeps a set-ID bit", p.display());
        assert_eq!(m.mode() & 0o022, 0, "{} writable by others", p.display());
        assert_eq!((m.uid(), m.gid()), (65534, 65534), "{}", p.display());
    }
    let bash = std::fs::read("/bin/bash").unwrap();
    let copy = out.join("files").join(&files[1].0);
    assert_eq!(std::fs::read(&copy).unwrap(), bash, "copied whole");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_symlinked_folder_does_not_take_the_collector_out_of_the_work_directory() {
    if !root() {
        skip::skip(
            "root (namespaces)",
            "run the tests as root (sudo -E cargo test)",
        );
        return;
    }
    let d = dir("link");
    // A root-only folder outside the sandbox, holding a secret.
    let secret = d.join("secret");
    std::fs::create_dir(&secret).unwrap();
    std::fs::write(secret.join("shadow"), "TOP SECRET").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(
        secret.join("shadow"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let (out, rec) = suite(
        &d,
        &format!(
            "ln -s {0} etcdir; ln -s {0}/shadow shadow.out; echo mine > own.out",
            secret.display()
        ),
        "[isolation]\nresult_files = [\"*/*\", \"*.out\"]",
        &[],
    );
    let files = tree(&out.join("files"));
    let names: Vec<_> = files.iter().map(|(p, _)| p.clone()).collect();
    eprintln!("collected: {names:?}; record: {rec}");
    for (p, m) in &files {
        assert!(m.is_file(), "{} is not a regular file", p.display());
        let text = std::fs::read_to_string(out.join("files").join(p)).unwrap_or_default();
        assert!(
            !text.contains("TOP SECRET"),
            "{} holds the secret",
            p.display()
        );
    }
    assert_eq!(names.len(), 1, "only own.out: {names:?}");
    assert!(names[0].ends_with("own.out"));
    let withheld: Vec<&str> = rec["withheld"]
        .as_array()
        .expect("withheld recorded")
        .iter()
        .map(|w| w["file"].as_str().unwrap())
        .collect();
    assert_eq!(withheld, vec!["etcdir", "shadow.out"], "{rec}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sparse_big_files_and_logs_are_capped_per_run_and_the_cap_is_recorded() {
    if !root() {
        skip::skip(
            "root (namespaces)",
            "run the tests as root (sudo -E cargo test)",
        );
        return;
    }
    let d = dir("big");
    let (out, rec) = suite(
        &d,
        "truncate -s 1G sparse.out; head -c 3000000 /dev/zero > big.out; echo small > small.out; head -c 2500000 /dev/zero | tr x x; echo",
        "[limits]\noutput = \"1MB\"\n[isolation]\nresult_files = [\"*.out\"]",
        &[],
    );
    let files = tree(&out.join("files"));
    let total_blocks: u64 = files.iter().map(|(_, m)| m.blocks() * 512).sum();
    let names: Vec<String> = files
        .iter()
        .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    eprintln!("kept {names:?}, {total_blocks} bytes on disk; record {rec}");
    assert_eq!(names, vec!["small.out", "sparse.out"], "{rec}");
    let sparse = &files
        .iter()
        .find(|(p, _)| p.ends_with("sparse.out"))
        .unwrap()
        .1;
    assert_eq!(sparse.len(), 1 << 30, "apparent size kept");
    assert!(total_blocks < 1_000_000, "{total_blocks} bytes on disk");
    let log = std::fs::metadata(out.join(rec["log"].as_str().unwrap())).unwrap();
    assert!(log.len() <= 1_000_000, "log {} bytes", log.len());
    let withheld = rec["withheld"].as_array().expect("withheld recorded");
    assert!(
        withheld
            .iter()
            .any(|w| w["file"] == "big.out"
                && w["reason"].as_str().unwrap().contains("output limit")),
        "{rec}"
    );
    assert!(
        withheld
            .iter()
            .any(|w| w["file"].as_str().unwrap().starts_with("logs/")),
        "{rec}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn tare_run_isolate_writable_clears_set_id_bits_the_command_left_and_keeps_older_ones() {
    if !root() {
        skip::skip(
            "root (namespaces)",
            "run the tests as root (sudo -E cargo test)",
        );
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("tare-collector-writable-")
        .tempdir_in("/var/tmp")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let w = dir.path().join("w");
    std::fs::create_dir(&w).unwrap();
    // The user's own set-ID program, there before the run: left alone.
    std::fs::write(w.join("mine"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(w.join("mine"), std::fs::Permissions::from_mode(0o4755)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let script = format!(
        "mkdir -p {0}/d; cp /bin/bash {0}/d/out.suid; chmod 4755 {0}/d/out.suid; cp /bin/true {0}/out.sgid; chmod 2755 {0}/out.sgid",
        w.display()
    );
    let o = Command::new(tare())
        .args(["run", "--isolate", "--writable"])
        .arg(&w)
        .args(["--runs", "1", "--style", "none", "--", "sh", "-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mode = |p: &str| std::fs::metadata(w.join(p)).unwrap().mode() & 0o7777;
    let (suid, sgid, mine) = (mode("d/out.suid"), mode("out.sgid"), mode("mine"));
    eprintln!("modes after: d/out.suid {suid:o}, out.sgid {sgid:o}, mine {mine:o}");
    assert_eq!(suid, 0o755, "set-user-ID bash left: {suid:o}");
    assert_eq!(sgid, 0o755, "set-group-ID file left: {sgid:o}");
    assert_eq!(mine, 0o4755, "the user's older set-ID file was changed");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("out.suid") && err.contains("cleared"), "{err}");
}
