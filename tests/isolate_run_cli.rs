//! `tare run --isolate`: the isolation options of `tare suite exec` on `tare run`, checked
//! before the first run, and runs that really are isolated (as root; skipped otherwise).

mod common;
use common::tare;
#[path = "common/skip.rs"]
mod skip;

fn root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

#[test]
fn isolation_options_need_isolate_and_result_files_need_a_suite() {
    let o = tare()
        .args(["run", "--writable", "/var/tmp", "--runs", "1", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("add --isolate"), "{err}");
    let o = tare()
        .args([
            "run",
            "--isolate",
            "--result-files",
            "*.out",
            "--runs",
            "1",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--result-files") && err.contains("--writable"),
        "{err}"
    );
}

#[test]
fn tare_run_isolate_runs_every_run_isolated() {
    if !root() {
        skip::skip(
            "root (cgroups)",
            "run the tests as root (sudo -E cargo test)",
        );
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("tare-run-isolate-")
        .tempdir_in("/var/tmp")
        .unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // Each run appends what it sees: PID, host uid of its uid 0, effective capabilities,
    // whether the host's /var/tmp is writable.
    let script = format!(
        "{{ echo PID=$$; awk '{{print \"HOSTUID=\" $2}}' /proc/self/uid_map; grep CapEff /proc/self/status; \
         if touch /var/tmp/tare-run-isolate-probe 2>/dev/null; then echo VARTMP=writable; else echo VARTMP=refused; fi; }} >> {}/seen",
        out.display()
    );
    let o = tare()
        .args(["run", "--isolate", "--writable"])
        .arg(&out)
        .args(["--runs", "3", "--style", "none", "--", "sh", "-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let seen = std::fs::read_to_string(out.join("seen")).unwrap();
    assert_eq!(seen.matches("PID=2\n").count(), 3, "{seen}");
    assert_eq!(
        seen.matches(&format!("HOSTUID={}\n", tare::exec::isolate::TOOL_HOST_ID))
            .count(),
        3,
        "{seen}"
    );
    assert_eq!(
        seen.matches("CapEff:\t0000000000000000\n").count(),
        3,
        "{seen}"
    );
    assert_eq!(seen.matches("VARTMP=refused\n").count(), 3, "{seen}");
    assert!(!std::path::Path::new("/var/tmp/tare-run-isolate-probe").exists());
}
