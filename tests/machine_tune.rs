//! `tune` then `reset` on copies of the synthetic trees: byte-exact restore, precise reports of
//! what could not be done.

use std::fs;
use std::path::Path;
use tare::machine::tune::{
    apply, plan_tune, render_plan, render_report, render_reset, reset, FailKind,
};
use tare::machine::SysRoot;

/// Copies a fixture tree (symlinks kept as symlinks) into a fresh temporary directory.
fn copy_fixture(name: &str) -> tempfile::TempDir {
    fn copy(from: &Path, to: &Path) {
        fs::create_dir_all(to).unwrap();
        for e in fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let (src, dst) = (e.path(), to.join(e.file_name()));
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                std::os::unix::fs::symlink(fs::read_link(&src).unwrap(), &dst).unwrap();
            } else if ft.is_dir() {
                copy(&src, &dst);
            } else {
                fs::copy(&src, &dst).unwrap();
            }
        }
    }
    let d = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sysfs")
        .join(name);
    copy(&src, d.path());
    d
}

/// Every regular file under `dir` with its exact bytes, by relative path.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in fs::read_dir(d).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                walk(base, &e.path(), out);
            } else if ft.is_file() {
                let rel = e.path().strip_prefix(base).unwrap().display().to_string();
                out.push((rel, fs::read(e.path()).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn read(root: &SysRoot, p: &str) -> String {
    root.read_string(p).unwrap()
}

#[test]
fn intel_tune_then_reset_is_byte_exact() {
    let tree = copy_fixture("intel-4c8t");
    let state_dir = tempfile::tempdir().unwrap();
    let state = state_dir.path().join("var/lib/tare/tune-state.json");
    let root = SysRoot::new(tree.path());
    let before = snapshot(tree.path());

    let plan = plan_tune(&root);
    eprintln!("{}", render_plan(&plan));
    // no_turbo first, then one governor per policy, then the two deep idle states of each CPU
    assert_eq!(plan.steps.len(), 9 + 16);
    assert!(plan.steps[9..]
        .iter()
        .all(|s| s.path.ends_with("/disable") && s.value == "1"));
    assert_eq!(
        plan.steps[0].path,
        "/sys/devices/system/cpu/intel_pstate/no_turbo"
    );
    assert!(plan.not_possible.is_empty(), "{:?}", plan.not_possible);
    assert!(plan.left_alone.iter().any(|l| l.starts_with("ASLR")));

    let rep = apply(&root, &plan, &state).unwrap();
    eprintln!("{}", render_report(&rep));
    assert!(rep.complete, "{rep:?}");
    assert_eq!(rep.changed.len(), 9 + 16);
    assert_eq!(
        read(&root, "/sys/devices/system/cpu/cpu3/cpuidle/state3/disable"),
        "1"
    );
    assert_eq!(
        read(&root, "/sys/devices/system/cpu/cpu3/cpuidle/state1/disable"),
        "0",
        "C1 (1 µs) is left enabled"
    );
    assert_eq!(
        read(&root, "/sys/devices/system/cpu/intel_pstate/no_turbo"),
        "1"
    );
    assert_eq!(
        read(
            &root,
            "/sys/devices/system/cpu/cpu5/cpufreq/scaling_governor"
        ),
        "performance"
    );
    assert!(state.exists());
    let saved: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(saved["entries"][0]["previous"], "0\n");

    // A second tune must not overwrite the saved originals.
    let err = apply(&root, &plan_tune(&root), &state).unwrap_err();
    assert!(err.to_string().contains("tare machine reset"), "{err}");

    // Now nothing left to do.
    let again = plan_tune(&root);
    assert!(again.steps.is_empty(), "{:?}", again.steps);

    let rr = reset(&root, &state).unwrap();
    eprintln!("{}", render_reset(&rr));
    assert!(rr.failed.is_empty(), "{rr:?}");
    assert!(rr.state_file_removed);
    assert!(!state.exists());
    assert_eq!(
        rr.restored[0].path,
        "/sys/devices/system/cpu/cpu7/cpuidle/state3/disable"
    ); // reverse order
    assert_eq!(snapshot(tree.path()), before);

    let rr = reset(&root, &state).unwrap();
    assert!(rr.note.unwrap().starts_with("nothing to reset"));
}

#[test]
fn acpi_and_amd_turbo_controls() {
    for (name, turbo_files) in [("xeon-2s", 1usize), ("amd-pstate", 8)] {
        let tree = copy_fixture(name);
        let state = tree.path().join("state.json");
        let root = SysRoot::new(tree.path());
        let before = snapshot(tree.path());
        let plan = plan_tune(&root);
        let turbo: Vec<_> = plan
            .steps
            .iter()
            .filter(|s| s.path.ends_with("boost"))
            .collect();
        assert_eq!(turbo.len(), turbo_files, "{name}: {:?}", plan.steps);
        assert!(turbo.iter().all(|s| s.value == "0"));
        let rep = apply(&root, &plan, &state).unwrap();
        assert!(rep.complete, "{name}: {rep:?}");
        reset(&root, &state).unwrap();
        let after: Vec<_> = snapshot(tree.path())
            .into_iter()
            .filter(|(p, _)| p != "state.json")
            .collect();
        assert_eq!(after, before, "{name}");
    }
}

#[test]
fn no_performance_governor_pins_min_to_max() {
    let tree = copy_fixture("arm-biglittle");
    let root = SysRoot::new(tree.path());
    // A driver without the performance governor.
    for p in ["policy0", "policy4"] {
        fs::write(
            tree.path().join(format!(
                "sys/devices/system/cpu/cpufreq/{p}/scaling_available_governors"
            )),
            "ondemand userspace powersave schedutil\n",
        )
        .unwrap();
    }
    let before = snapshot(tree.path());
    let plan = plan_tune(&root);
    eprintln!("{}", render_plan(&plan));
    assert_eq!(plan.steps.len(), 2);
    assert!(plan.steps[0].path.ends_with("policy0/scaling_min_freq"));
    assert_eq!(plan.steps[0].value, "1416000");
    assert!(plan.not_possible.is_empty(), "{:?}", plan.not_possible); // cpufreq-dt has no boost
    let state = tree.path().join("s.json");
    let rep = apply(&root, &plan, &state).unwrap();
    assert!(rep.complete);
    assert_eq!(
        read(
            &root,
            "/sys/devices/system/cpu/cpu5/cpufreq/scaling_min_freq"
        ),
        "1800000"
    );
    reset(&root, &state).unwrap();
    assert_eq!(snapshot(tree.path()), before);
}

#[test]
fn vm_without_cpufreq_is_incomplete_and_says_why() {
    let tree = copy_fixture("vm-2cpu");
    let root = SysRoot::new(tree.path());
    let state = tree.path().join("nested/dir/state.json");
    let plan = plan_tune(&root);
    assert!(plan.steps.is_empty());
    assert_eq!(
        plan.not_possible,
        vec![
            "frequency: no cpufreq (no /sys/devices/system/cpu/cpu0/cpufreq); the governor and frequency cannot be fixed".to_string(),
            "turbo/boost: no cpufreq, no control to turn it off".to_string(),
        ]
    );
    let rep = apply(&root, &plan, &state).unwrap();
    eprintln!("{}", render_report(&rep));
    assert!(!rep.complete);
    assert!(rep.state_file.is_none());
    assert!(!state.exists());
    assert!(render_report(&rep).contains("INCOMPLETE"));

    // The real machine (no cpufreq here) plans the same way, and tune changes nothing.
    if !SysRoot::host().exists("/sys/devices/system/cpu/cpu0/cpufreq") {
        let p = plan_tune(&SysRoot::host());
        assert!(p.steps.is_empty());
        assert_eq!(p.not_possible.len(), 2);
    }
}

#[test]
fn failed_writes_are_reported_and_not_saved() {
    let tree = copy_fixture("intel-4c8t");
    let root = SysRoot::new(tree.path());
    let plan = plan_tune(&root);
    // The driver vanished between plan and apply for one policy; another file is a directory
    // (write error).
    fs::remove_file(
        tree.path()
            .join("sys/devices/system/cpu/cpufreq/policy3/scaling_governor"),
    )
    .unwrap();
    let p2 = tree
        .path()
        .join("sys/devices/system/cpu/cpufreq/policy2/scaling_governor");
    fs::remove_file(&p2).unwrap();
    fs::create_dir(&p2).unwrap();
    let state = tree.path().join("s.json");
    let rep = apply(&root, &plan, &state).unwrap();
    eprintln!("{}", render_report(&rep));
    assert!(!rep.complete);
    assert_eq!(rep.failed.len(), 2, "{:?}", rep.failed);
    assert!(rep
        .failed
        .iter()
        .any(|f| f.kind == FailKind::Missing && f.path.contains("policy3")));
    assert!(rep.failed.iter().any(|f| f.path.contains("policy2")));
    // 9 frequency steps less the 2 that failed, and the 16 idle-state steps.
    assert_eq!(rep.changed.len(), 7 + 16);
    let saved: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(saved["entries"].as_array().unwrap().len(), 7 + 16);
    let rr = reset(&root, &state).unwrap();
    assert!(rr.failed.is_empty());
    assert_eq!(
        read(&root, "/sys/devices/system/cpu/intel_pstate/no_turbo"),
        "0"
    );
}

#[test]
fn unwritable_state_file_aborts_before_any_change() {
    let tree = copy_fixture("intel-4c8t");
    let root = SysRoot::new(tree.path());
    let before = snapshot(tree.path());
    // The state file's directory cannot be created: its parent is a regular file.
    let blocker = tempfile::NamedTempFile::new().unwrap();
    let state = blocker.path().join("tare/tune-state.json");
    let err = apply(&root, &plan_tune(&root), &state).unwrap_err();
    assert!(
        format!("{err:#}").contains("tune aborted before changing anything"),
        "{err:#}"
    );
    assert_eq!(snapshot(tree.path()), before);
}

#[test]
fn reset_refuses_a_state_file_of_another_root() {
    let tree = copy_fixture("xeon-2s");
    let other = copy_fixture("xeon-2s");
    let state = tree.path().join("s.json");
    let root = SysRoot::new(tree.path());
    apply(&root, &plan_tune(&root), &state).unwrap();
    let err = reset(&SysRoot::new(other.path()), &state).unwrap_err();
    assert!(err.to_string().contains("was saved for root"), "{err}");
    assert!(state.exists());
    assert!(reset(&root, &state).unwrap().state_file_removed);
}
