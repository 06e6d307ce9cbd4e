//! Isolation for a user who is not root: a user namespace mapping the user's own ids, with
//! the same layout (own PID namespace, read-only /, private /tmp, loopback only). Run here as
//! `nobody` through `runuser`, so it needs root to start and `runuser`; skipped with a message
//! otherwise, or when the kernel refuses unprivileged user namespaces.

mod common;
#[path = "common/skip.rs"]
mod skip;
use std::process::Command;

#[test]
fn isolation_works_for_an_unprivileged_user() {
    let root = std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false);
    if !root || Command::new("runuser").arg("--help").output().is_err() {
        skip::skip(
            "root and runuser",
            "run the tests as root (sudo -E cargo test); apt-get install util-linux",
        );
        return;
    }
    let script = "echo PID=$$; ls /proc | grep -c '^[0-9]' | sed 's/^/PROCS=/'; \
                  if echo x > /var/tmp/tare-nobody-probe 2>/dev/null; then echo VAR=ok; else echo VAR=refused; fi; \
                  echo y > /tmp/p && echo TMP=ok; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sed 's/^/IF=/'";
    let (_bin_dir, bin) = common::tare_for_everyone();
    let o = Command::new("runuser")
        .args(["-u", "nobody", "--", "env", "TARE_BACKEND=rusage"])
        .arg(&bin)
        .args([
            "suite",
            "exec",
            "--isolate",
            "--show-output",
            "--",
            "sh",
            "-c",
            script,
        ])
        .current_dir("/")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() && err.contains("ermission") && !err.starts_with("runuser:") {
        skip::skip(
            "unprivileged user namespaces",
            &format!(
                "sysctl kernel.unprivileged_userns_clone=1 (refused here: {})",
                err.trim()
            ),
        );
        return;
    }
    assert!(o.status.success(), "{out} {err}");
    assert!(out.contains("PID=2\n"), "{out}");
    assert!(out.contains("VAR=refused"), "{out}");
    assert!(out.contains("TMP=ok"), "{out}");
    let ifs: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("IF=")).collect();
    assert_eq!(ifs, ["lo"], "{out}");
    assert!(!std::path::Path::new("/var/tmp/tare-nobody-probe").exists());
}
