//! CPU idle states (issue 29): `tare machine` lists them, `--idle shallow` holds the real
//! /dev/cpu_dma_latency at 0 µs while tare measures and the kernel drops the request when tare
//! exits — kill -9 included — and the results record it. The machine tests of other shapes
//! (intel_idle's C-states) read the synthetic trees in tests/fixtures/sysfs.

mod common;
#[path = "common/skip.rs"]
mod skip;
use common::tare;

use std::path::Path;
use std::time::{Duration, Instant};

const DEV: &str = "/dev/cpu_dma_latency";

/// The device is one for the machine: its tests run one at a time.
static DEVICE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn latency() -> i64 {
    tare::machine::idle::read_dma_latency(Path::new(DEV)).unwrap()
}

fn usable() -> bool {
    if !common::is_root() || !Path::new(DEV).exists() {
        skip::skip(
            "root and /dev/cpu_dma_latency",
            "run as root on a kernel with CONFIG_PM",
        );
        return false;
    }
    true
}

/// Waits up to `limit` for the device to read `want`.
fn reaches(want: i64, limit: Duration) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if latency() == want {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn shallow_holds_the_request_for_the_session_and_releases_it() {
    let _one = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    if !usable() {
        return;
    }
    let before = latency();
    assert_ne!(before, 0, "another process holds a 0 µs request already");
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let mut child = tare()
        .args(["run", "--idle", "shallow", "--style", "none", "--runs", "2"])
        .args(["--export-json", j.to_str().unwrap(), "--", "sleep", "0.5"])
        .spawn()
        .unwrap();
    assert!(
        reaches(0, Duration::from_secs(10)),
        "never 0 while measuring"
    );
    assert!(child.wait().unwrap().success());
    assert_eq!(latency(), before, "the request outlived tare");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(
        doc["extra"]["idle"]["states"], "shallow",
        "{}",
        doc["extra"]
    );
    assert_eq!(doc["extra"]["idle"]["cpu_dma_latency_us"], 0);
    assert_eq!(doc["extra"]["idle"]["previous_us"], before);
}

#[test]
fn a_killed_tare_leaves_no_request_behind() {
    let _one = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    if !usable() {
        return;
    }
    let before = latency();
    let mut child = tare()
        .args(["run", "--idle", "shallow", "--style", "none", "--runs", "1"])
        .args(["--", "sleep", "2"])
        .spawn()
        .unwrap();
    assert!(
        reaches(0, Duration::from_secs(10)),
        "never 0 while measuring"
    );
    child.kill().unwrap(); // SIGKILL: no exit path of tare's runs
    child.wait().unwrap();
    assert!(
        reaches(before, Duration::from_secs(5)),
        "still {} after kill -9",
        latency()
    );
}

#[test]
fn the_machine_report_lists_the_idle_states_here() {
    let out = tare().args(["machine", "--json"]).output().unwrap();
    assert!(out.status.success());
    let inv: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let here = Path::new("/sys/devices/system/cpu/cpu0/cpuidle/state0/name");
    if here.exists() {
        let name = std::fs::read_to_string(here).unwrap();
        let cpus = inv["facts"]["idle"]["cpus"].as_array().unwrap();
        assert!(!cpus.is_empty(), "{}", inv["facts"]["idle"]);
        assert_eq!(cpus[0]["states"][0]["name"], name.trim());
        assert!(inv["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["section"] == "idle"
                && i["name"].as_str().unwrap().starts_with("idle states")));
    }
    // A laptop's intel_idle states from the synthetic tree: the deep ones are named.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/intel-4c8t");
    let out = tare()
        .args(["machine", "--json"])
        .env("TARE_SYSROOT", &fixture)
        .output()
        .unwrap();
    let inv: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let item = inv["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["section"] == "idle")
        .unwrap()
        .clone();
    assert_eq!(item["verdict"], "warn", "{item}");
    assert!(
        item["name"]
            .as_str()
            .unwrap()
            .contains("CPU 0-7, intel_idle"),
        "{item}"
    );
    let advice = item["advice"].as_str().unwrap();
    assert!(
        advice.contains("C2_ACPI, C3_ACPI") && advice.contains("--idle shallow"),
        "{advice}"
    );
}

#[test]
fn a_pinned_run_records_the_idle_states_its_cores_entered() {
    use tare::machine::probe::{InterferenceThresholds, RunProbe};
    use tare::machine::sysfs::SysRoot;
    // A copy of the VM-shaped tree whose counters the test moves between the two snapshots.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/vm-2cpu");
    let dir = tempfile::tempdir().unwrap();
    let copy = std::process::Command::new("cp")
        .arg("-a")
        .arg(&src)
        .arg(dir.path().join("t"))
        .status()
        .unwrap();
    assert!(copy.success());
    let root = SysRoot::new(dir.path().join("t"));
    let mut probe = RunProbe::new(&root, &[1], true, InterferenceThresholds::default());
    let start = probe.start();
    let state = dir
        .path()
        .join("t/sys/devices/system/cpu/cpu1/cpuidle/state1");
    let bump = |file: &str, by: u64| {
        let p = state.join(file);
        let v: u64 = std::fs::read_to_string(&p).unwrap().trim().parse().unwrap();
        std::fs::write(&p, format!("{}\n", v + by)).unwrap();
    };
    bump("usage", 5);
    bump("time", 1234);
    let env = probe.finish(start, 0.0, 0.01);
    assert_eq!(env.idle.len(), 1, "{:?}", env.idle);
    let d = &env.idle["haltpoll idle"];
    assert_eq!((d.entries, d.time_us), (5, 1234));
    // Not pinned: nothing is read, nothing recorded.
    let mut all = RunProbe::new(&root, &[], false, InterferenceThresholds::default());
    let s = all.start();
    assert!(all.finish(s, 0.0, 0.01).idle.is_empty());
    // Every CPU watched for an unpinned run: their idle states are not the run's, not read.
    let mut unpinned = RunProbe::new(&root, &[0, 1], false, InterferenceThresholds::default());
    let s = unpinned.start();
    bump("usage", 5);
    assert!(unpinned.finish(s, 0.0, 0.01).idle.is_empty());
}

#[test]
fn a_suite_holds_the_request_for_all_its_runs_and_records_it() {
    let _one = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
    if !usable() {
        return;
    }
    let before = latency();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("in")).unwrap();
    std::fs::write(dir.path().join("in/a.txt"), "x").unwrap();
    let f = dir.path().join("s.toml");
    std::fs::write(
        &f,
        "name = \"idle\"\n[isolation]\nenabled = false\n[[tool]]\nname = \"t\"\ncommand = \"sh -c 'sleep 0.5' {input}\"\n[[inputs]]\nname = \"i\"\nfiles = [\"in/*.txt\"]\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let mut child = tare()
        .args(["suite", "run", "-q", "--idle", "shallow", "--output-dir"])
        .arg(&out_dir)
        .arg(&f)
        .spawn()
        .unwrap();
    assert!(
        reaches(0, Duration::from_secs(10)),
        "never 0 while the suite ran"
    );
    assert!(child.wait().unwrap().success());
    assert_eq!(latency(), before);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("suite.json")).unwrap())
            .unwrap();
    assert_eq!(meta["idle"]["states"], "shallow", "{meta}");
}
