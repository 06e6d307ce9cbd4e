//! What a run costs in system calls (issue 47): `strace -f -c` counts every call of tare and
//! the measured `/bin/true` over N and 3N runs; the difference over 2N runs is the per-run
//! cost, whatever the session pays once. Counts, not times: a noisy machine cannot fool it.
//!
//! The budget: per run, at most [`OPENS`] files opened by tare and the command together
//! (`/bin/true`'s dynamic loader opens 2 itself; tare opens the run group's `cgroup.procs`)
//! and at most [`CALLS`] system calls in all (65–70 on this VM in the configurations below,
//! 165 before issue 47 with idle states present). Both on the real machine and on a synthetic
//! tree shaped like this VM with cpuidle states (the VM's current boot has none), pinned and
//! not, and with a fake NVML GPU present.

mod common;
#[path = "common/skip.rs"]
mod skip;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Files opened per run (open, openat, openat2), tare and the command together.
const OPENS: f64 = 4.0;
/// System calls per run, tare and the command together.
const CALLS: f64 = 80.0;
const N: usize = 15;

fn have_strace() -> bool {
    std::process::Command::new("strace")
        .arg("-V")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// `strace -c`'s table: calls per system call.
fn table(path: &Path) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // % time, seconds, usecs/call, calls, [errors,] syscall
        if f.len() >= 5 && f[0].chars().next().is_some_and(|c| c.is_ascii_digit()) {
            let name = f[f.len() - 1];
            if name != "total" {
                if let Ok(calls) = f[3].parse::<u64>() {
                    out.insert(name.to_string(), calls);
                }
            }
        }
    }
    out
}

/// Per-run calls of `tare run ARGS --runs n /bin/true` under strace, from N and 3N runs.
fn per_run(dir: &Path, name: &str, args: &[&str], env: &[(&str, &Path)]) -> BTreeMap<String, f64> {
    let mut tables = Vec::new();
    for n in [N, 3 * N] {
        let out_file = dir.join(format!("{name}-{n}.txt"));
        let bin = std::env::var_os("TARE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_tare").into());
        let mut c = std::process::Command::new("strace");
        c.args(["-f", "-c", "-o"]).arg(&out_file).arg(bin);
        c.args(["run", "--style", "none"]).args(args);
        c.args(["--runs", &n.to_string(), "/bin/true"]);
        c.env("NO_COLOR", "1");
        // cargo's library path would send `/bin/true`'s loader through a dozen directories.
        c.env_remove("LD_LIBRARY_PATH");
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tables.push(table(&out_file));
    }
    let (a, b) = (&tables[0], &tables[1]);
    b.keys()
        .chain(a.keys())
        .map(|k| {
            let d = b.get(k).copied().unwrap_or(0) as f64 - a.get(k).copied().unwrap_or(0) as f64;
            (k.clone(), d / (2 * N) as f64)
        })
        .collect()
}

fn check(name: &str, per: &BTreeMap<String, f64>) {
    let opens: f64 = ["open", "openat", "openat2"]
        .iter()
        .map(|k| per.get(*k).copied().unwrap_or(0.0))
        .sum();
    let calls: f64 = per.values().sum();
    let busiest: Vec<String> = {
        let mut v: Vec<(&String, &f64)> = per.iter().filter(|(_, &c)| c >= 1.0).collect();
        v.sort_by(|x, y| y.1.total_cmp(x.1));
        v.iter().map(|(k, c)| format!("{k} {c:.1}")).collect()
    };
    assert!(
        opens <= OPENS,
        "{name}: {opens:.1} files opened per run (budget {OPENS}): {busiest:?}"
    );
    assert!(
        calls <= CALLS,
        "{name}: {calls:.1} system calls per run (budget {CALLS}): {busiest:?}"
    );
}

fn fake_nvml(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nvml/fake_nvml.c");
    let lib = dir.join("libfake-nvml.so");
    std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
        .then_some(lib)
}

#[test]
fn a_run_opens_a_handful_of_files_and_makes_a_bounded_number_of_calls() {
    if !have_strace() {
        return skip::skip("strace", "apt-get install strace");
    }
    let dir = tempfile::tempdir().unwrap();
    // This machine as it is.
    check("here", &per_run(dir.path(), "here", &[], &[]));
    // A tree shaped like this VM with two idle states per CPU: pinned (its core's idle states
    // are recorded, through files kept open) and not (none are read).
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/vm-2cpu");
    let tree = dir.path().join("tree");
    assert!(std::process::Command::new("cp")
        .arg("-a")
        .arg(&src)
        .arg(&tree)
        .status()
        .unwrap()
        .success());
    let root = [("TARE_SYSROOT", tree.as_path())];
    check(
        "idle states, pinned",
        &per_run(dir.path(), "pinned", &["--cores", "1"], &root),
    );
    check(
        "idle states, unpinned",
        &per_run(dir.path(), "unpinned", &[], &root),
    );
    // A GPU: its clocks and temperature are read each run (no file), its energy counter not.
    match fake_nvml(dir.path()) {
        Some(lib) => check(
            "a GPU",
            &per_run(dir.path(), "gpu", &[], &[("TARE_NVML_LIB", lib.as_path())]),
        ),
        None => skip::skip("a C compiler", "apt-get install gcc"),
    }
}

#[test]
fn the_budget_catches_what_the_probe_used_to_read() {
    // The parser reads strace's table as it prints it, errors column or not.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.txt");
    std::fs::write(
        &f,
        "% time     seconds  usecs/call     calls    errors syscall\n\
         ------ ----------- ----------- --------- --------- ----------------\n\
          40.00    0.000400           2       200        10 openat\n\
          10.00    0.000100           1       100           pread64\n\
         ------ ----------- ----------- --------- --------- ----------------\n\
         100.00    0.001000           3       300        10 total\n",
    )
    .unwrap();
    let t = table(&f);
    assert_eq!(t.get("openat"), Some(&200));
    assert_eq!(t.get("pread64"), Some(&100));
    assert!(!t.contains_key("total"));
    // 22 opens a run (the idle states read file by file, as before issue 47) is over budget.
    let over: BTreeMap<String, f64> = [("openat".to_string(), 22.0)].into_iter().collect();
    let r = std::panic::catch_unwind(|| check("before", &over));
    assert!(r.is_err());
}
